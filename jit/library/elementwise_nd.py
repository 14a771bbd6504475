"""The loop templates of `jit.library.elementwise` for arrays of 3 dimensions
(`np.expand_dims(x, 1) - np.expand_dims(y, 0)`, the first line of a pairwise kernel),
generated from one recipe instead of written out by hand.

Each template is the nest of `NDIM` loops over the result, with numpy's broadcasting:
operands are aligned on their last axes, and an axis of length 1 against a longer one
is read at index 0 (its index times a 0/1 step, as the 2-D templates do).  Lengths
are checked by `broadcast_length` in axis order, so a mismatch raises numpy's
ValueError.  Generated here, for float arrays (other float dtypes by `of_dtype`):

  * `a OP b` (+ - * / **) of two arrays of ranks (3, 3), (3, 2), (2, 3), (3, 1), (1, 3),
    and of a 3-D array and a number; `-a` and the ufuncs of one argument;
  * `unbcast(dy, x)`: a 3-D cotangent summed back to x's shape (of rank 1 to 3);
  * the pullback of `array ** number`.
The entries that use them (`jit.library.operators`, `ufuncs`, `jit.pullback.cotangents`)
declare `ndim_max=NDIM`; other arrays of 3 or more dimensions stay numpy's.
"""
from __future__ import annotations

import math

import numpy as np

from jit.library.elementwise import (_SYMBOLS, _UFUNCS, BINARY_IMPLS, D_POW_AS, FULL_SUMS,
                                     NEG_IMPLS, UFUNC_IMPLS, UNBCAST_WIDE, _binary_source,
                                     _pairwise, make)
from jit.library.python_impls import NAMESPACE

NDIM = 3
NAMESPACE.setdefault("math", math)
NAMESPACE.setdefault("_pairwise", _pairwise)
_PAIRS = ((3, 3), (3, 2), (2, 3), (3, 1), (1, 3))


def _index(name: str, rank: int, nd: int, step: bool) -> str:
    """`a[i1 * sa1, i2 * sa2]`: operand `name` of rank `rank` in an nd-D loop nest."""
    axes = range(nd - rank, nd)
    return f"{name}[" + ", ".join(f"i{d} * s{name}{d}" if step else f"i{d}" for d in axes) + "]"


def _row(name: str, rank: int, nd: int, step: bool) -> tuple:
    """(the statement taking operand `name`'s row for the innermost loop, or "" for a
    1-D operand, which is its own row; its element in that loop).  Reading through a
    1-D row lets LLVM vectorise the innermost loop as it does the 1-D templates
    (and call the vector math numpy's own loops agree with)."""
    last = f"i{nd - 1} * s{name}{nd - 1}" if step else f"i{nd - 1}"
    if rank == 1:
        return "", f"{name}[{last}]"
    axes = range(nd - rank, nd - 1)
    lead = ", ".join(f"i{d} * s{name}{d}" if step else f"i{d}" for d in axes)
    return f"r{name} = {name}[{lead}]", f"r{name}[{last}]"


def _nest(nd: int, body: str, pad: str = "    ", rows: tuple = ()) -> str:
    """The loops over the result's axes, `body` innermost, the statements `rows`
    just outside the innermost loop."""
    lines = [f"{pad}{'    ' * d}for i{d} in range(n{d}):" for d in range(nd)]
    inner = f"{pad}{'    ' * (nd - 1)}"
    lines[nd - 1:nd - 1] = [inner + r for r in rows if r]
    return "\n".join(lines + [f"{pad}{'    ' * nd}{body}"]) + "\n"


def _out_row(nd: int) -> tuple:
    return _row("out", nd, nd, False)


def _dims(name: str, rank: int, nd: int) -> str:
    names = ", ".join(f"{name}{d}" for d in range(nd - rank, nd))
    return f"    {names}{',' if rank == 1 else ''} = {name}.shape\n"


def binary_pair_source(name: str, ra: int, rb: int) -> str:
    """`out = a OP b` for arrays of ranks ra and rb (OP left as `{op}`)."""
    nd = max(ra, rb)
    src = f"def {name}(a, b):\n" + _dims("a", ra, nd) + _dims("b", rb, nd)
    for d in range(nd):
        have = [x for x, r in (("a", ra), ("b", rb)) if d >= nd - r]
        src += f"    n{d} = " + (f"broadcast_length(a{d}, b{d})\n" if len(have) == 2
                                 else f"{have[0]}{d}\n")
        for x in have:
            src += f"    s{x}{d} = 1 if {x}{d} == n{d} else 0\n"
    shape = ", ".join(f"n{d}" for d in range(nd))
    src += f"    out = np.empty(({shape}))\n"
    (ro, eo), (ra_, ea), (rb_, eb) = _out_row(nd), _row("a", ra, nd, True), _row("b", rb, nd, True)
    src += _nest(nd, f"{eo} = {ea} {{op}} {eb}", rows=(ro, ra_, rb_))
    return src + "    return out\n"


def binary_number_source(name: str, nd: int, array_first: bool) -> str:
    """`out = a OP b` of an nd-D array and a number (in either order)."""
    arr = "a" if array_first else "b"
    src = f"def {name}(a, b):\n" + _dims("n", nd, nd).replace("n.shape", f"{arr}.shape")
    src += f"    out = np.empty(({', '.join(f'n{d}' for d in range(nd))}))\n"
    (ro, eo), (rx, elem) = _out_row(nd), _row(arr, nd, nd, False)
    expr = f"{elem} {{op}} b" if array_first else f"a {{op}} {elem}"
    src += _nest(nd, f"{eo} = {expr}", rows=(ro, rx))
    return src + "    return out\n"


def unary_source(name: str, nd: int, expr: str) -> str:
    """`out = expr` elementwise, `expr` over `{x}` (the element of a)."""
    src = f"def {name}(a):\n" + _dims("n", nd, nd).replace("n.shape", "a.shape")
    src += f"    out = np.empty(({', '.join(f'n{d}' for d in range(nd))}))\n"
    (ro, eo), (ra, ea) = _out_row(nd), _row("a", nd, nd, False)
    src += _nest(nd, f"{eo} = " + expr.format(x=ea), rows=(ro, ra))
    return src + "    return out\n"


def unbcast_source(name: str, nd: int, rx: int) -> str:
    """`unbcast(dy, x)` of an nd-D dy to x of rank rx: dy summed over the axes x lacks
    or has of length 1 (dy itself when the shapes agree)."""
    src = f"def {name}(dy, x):\n" + _dims("n", nd, nd).replace("n.shape", "dy.shape")
    src += _dims("x", rx, nd)
    lead = nd - rx
    if lead == 0:
        same = " and ".join(f"x{d} == n{d}" for d in range(nd))
        src += f"    if {same}:\n        return dy\n"
    for d in range(lead, nd):
        src += f"    sx{d} = 1 if x{d} == n{d} else 0\n"
    shape = ", ".join(f"x{d}" for d in range(lead, nd))
    src += f"    out = np.zeros(({shape}{',' if rx == 1 else ''}))\n"
    src += _nest(nd, f"{_index('x', rx, nd, True).replace('x[', 'out[', 1)} += "
                 f"dy[{', '.join(f'i{d}' for d in range(nd))}]")
    return src + "    return out\n"


def d_pow_source(name: str, nd: int) -> str:
    """The pullback of `x ** y` for an nd-D x and a number y: (gx, gy)."""
    idx = ", ".join(f"i{d}" for d in range(nd))
    src = f"def {name}(dy, x, y):\n" + _dims("n", nd, nd).replace("n.shape", "x.shape")
    src += f"    gx = np.empty(({', '.join(f'n{d}' for d in range(nd))}))\n    gy = 0.0\n"
    pad = "    " * (nd + 1)
    body = (f"gx[{idx}] = 0.0 if y == 0 else dy[{idx}] * y * np.power(x[{idx}], y - 1)\n"
            f"{pad}if x[{idx}] > 0:\n"
            f"{pad}    gy += dy[{idx}] * np.power(x[{idx}], y) * math.log(x[{idx}])")
    return src + _nest(nd, body) + "    return gx, gy\n"


def sum_source(name: str, nd: int) -> str:
    """The sum of every element, by numpy's pairwise summation along the last axis."""
    src = f"def {name}(a):\n" + _dims("n", nd, nd).replace("n.shape", "a.shape")
    src += "    s = 0.0\n"
    src += _nest(nd - 1, f"s += _pairwise(a[{', '.join(f'i{d}' for d in range(nd - 1))}], "
                 f"0, n{nd - 1})")
    return src + "    return s\n"


def _generate() -> dict:
    """Fills the tables of `elementwise` for NDIM-D arrays; returns the pullbacks
    (unbcast by x's rank, and d_pow)."""
    for op, sym in _SYMBOLS.items():
        for ra, rb in _PAIRS:
            key = NDIM if ra == rb else f"a{ra}b{rb}"
            name = f"_{op}_aa{ra}{rb}"
            BINARY_IMPLS[(op, "aa", key)] = make(
                _binary_source(binary_pair_source(name, ra, rb), name, op, sym), name)
        for kind, first in (("as", True), ("sa", False)):
            name = f"_{op}_{kind}{NDIM}"
            BINARY_IMPLS[(op, kind, NDIM)] = make(
                _binary_source(binary_number_source(name, NDIM, first), name, op, sym), name)
    NEG_IMPLS[NDIM] = make(unary_source(f"_neg{NDIM}", NDIM, "-{x}"), f"_neg{NDIM}")
    for u in _UFUNCS:
        name = f"_{u}{NDIM}"
        UFUNC_IMPLS[(getattr(np, u), NDIM)] = make(unary_source(name, NDIM, f"np.{u}({{x}})"),
                                                   name)
    unbcast = {rx: make(unbcast_source(f"_unbcast_{NDIM}to{rx}", NDIM, rx),
                        f"_unbcast_{NDIM}to{rx}") for rx in range(1, NDIM + 1)}
    unbcast[0] = make(sum_source(f"_sum{NDIM}", NDIM), f"_sum{NDIM}")
    d_pow = make(d_pow_source(f"_d_pow_as{NDIM}", NDIM), f"_d_pow_as{NDIM}")
    return {"unbcast": unbcast, "d_pow": d_pow}


PULLBACKS = _generate()
D_POW_AS[NDIM] = PULLBACKS["d_pow"]
UNBCAST_WIDE.update({(NDIM, rx): fn for rx, fn in PULLBACKS["unbcast"].items()})
FULL_SUMS.append(PULLBACKS["unbcast"][0])
