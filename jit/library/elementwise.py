"""The loop templates of whole-array operations, compiled as plain-Python
implementations; their registry entries are in `jit.library.operators` (operators),
`ufuncs`, `reductions` and `jit.pullback.cotangents` (`unbcast`).

The design guide's recipe: an array primitive the JIT has no native lowering for is
typed as a call of a small plain-Python function written with loops and element
indexing, which the JIT lowers, types and compiles like user code (and LLVM inlines
and vectorises).  Covered, for float64 arrays of 1 or 2 dimensions:

  * `a OP b` for OP in + - * / ** between two arrays of the same shape or an array
    and a number, and `-a` (primitives add, sub, mul, truediv, pow, neg);
  * numpy's elementwise functions of one argument (np.sin, np.exp, np.abs, ...);
  * np.sum (numpy's pairwise summation, so 1-D and C-contiguous 2-D sums are
    bit-identical to numpy's), np.mean;
  * in adjoint code: `unbcast(dy, x)` of an array to a number (a sum), and the
    pullbacks of np.sum / np.mean and of `array ** number`.
Two arrays broadcast as numpy does: a length-1 axis stretches to the other's length,
a 1-D array against a 2-D one is a row (other mismatches raise numpy's ValueError);
an equal-shape pair takes a plain loop.
"""
from __future__ import annotations

import inspect
import math
import re
from typing import Any

import numpy as np


from jit.library.broadcast import _fdiv, broadcast_length, same_length
from jit.library.python_impls import NAMESPACE as _NS, impl_call, is_float_array, mark
from jit.library.python_impls import make as _make
from jit.typing.infer import Context
from jit.types import (BOOL, FLOAT64, INT64, NARROW, NONE, ArrayT, Type, is_float_dtype_array,
                       is_numeric)


# -- implementations (templates instantiated per operator) -------------------------------------
_BINARY_1D = {
    "aa": """def {name}(a, b):
    na = a.shape[0]
    nb = b.shape[0]
    n = broadcast_length(na, nb)
    out = np.empty(n)
    if na == nb:
        for i in range(n):
            out[i] = a[i] {op} b[i]
        return out
    sa = 1 if na == n else 0
    sb = 1 if nb == n else 0
    for i in range(n):
        out[i] = a[i * sa] {op} b[i * sb]
    return out
""",
    "as": """def {name}(a, b):
    n = a.shape[0]
    out = np.empty(n)
    for i in range(n):
        out[i] = a[i] {op} b
    return out
""",
    "sa": """def {name}(a, b):
    n = b.shape[0]
    out = np.empty(n)
    for i in range(n):
        out[i] = a {op} b[i]
    return out
""",
}
_BINARY_2D = {
    "aa": """def {name}(a, b):
    na, ma = a.shape
    nb, mb = b.shape
    n = broadcast_length(na, nb)
    m = broadcast_length(ma, mb)
    out = np.empty((n, m))
    if na == nb and ma == mb:
        for i in range(n):
            for j in range(m):
                out[i, j] = a[i, j] {op} b[i, j]
        return out
    si, sj = (1 if na == n else 0), (1 if ma == m else 0)
    ti, tj = (1 if nb == n else 0), (1 if mb == m else 0)
    for i in range(n):
        for j in range(m):
            out[i, j] = a[i * si, j * sj] {op} b[i * ti, j * tj]
    return out
""",
    "as": """def {name}(a, b):
    n, m = a.shape
    out = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            out[i, j] = a[i, j] {op} b
    return out
""",
    "sa": """def {name}(a, b):
    n, m = b.shape
    out = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            out[i, j] = a {op} b[i, j]
    return out
""",
}
_BINARY_MIXED = {      # numpy broadcasting across ranks: the 1-D operand is a row
    "a2b1": """def {name}(a, b):
    n, ma = a.shape
    mb = b.shape[0]
    m = broadcast_length(ma, mb)
    out = np.empty((n, m))
    sj, tj = (1 if ma == m else 0), (1 if mb == m else 0)
    for i in range(n):
        for j in range(m):
            out[i, j] = a[i, j * sj] {op} b[j * tj]
    return out
""",
    "a1b2": """def {name}(a, b):
    ma = a.shape[0]
    n, mb = b.shape
    m = broadcast_length(ma, mb)
    out = np.empty((n, m))
    sj, tj = (1 if ma == m else 0), (1 if mb == m else 0)
    for i in range(n):
        for j in range(m):
            out[i, j] = a[j * sj] {op} b[i, j * tj]
    return out
""",
}
_UNARY = {
    1: """def {name}(a):
    n = a.shape[0]
    out = np.empty(n)
    for i in range(n):
        out[i] = {expr}
    return out
""",
    2: """def {name}(a):
    n, m = a.shape
    out = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            out[i, j] = {expr}
    return out
""",
}
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "pow": "**"}
_UFUNCS = ("sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "sinh", "cosh", "arcsin",
           "arccos", "arctan", "abs", "absolute", "fabs", "square", "negative", "log1p",
           "expm1", "log2", "log10", "sign", "arcsinh", "arccosh", "arctanh", "exp2", "cbrt",
           "floor", "ceil", "trunc", "deg2rad", "radians", "rad2deg", "degrees", "rint",
           "round")
_NAN = float("nan")
_NS.update(same_length=same_length, broadcast_length=broadcast_length, _fdiv=_fdiv)




_SOURCES: dict = {}    # template-made implementation -> its source (`of_dtype`)


def make(src: str, name: str) -> Any:
    """`python_impls.make`, keeping the source for instances of other dtypes."""
    fn = _make(src, name)
    _SOURCES[fn] = src
    return fn


def dtype_generic(*fns: Any) -> None:
    """Let `of_dtype` instantiate plain functions (loops that allocate their result
    with `np.empty`, names from numpy only) for other float dtypes."""
    for fn in fns:
        _SOURCES[fn] = inspect.getsource(fn)


def _binary_source(template: str, name: str, op: str, sym: str) -> str:
    """A template instantiated for one operator; array division and power are
    numpy's (inf and nan for a zero divisor or a fractional power of a negative
    number, never ZeroDivisionError or OverflowError)."""
    src = template.format(name=name, op=sym)
    if op == "truediv":
        src = re.sub(r"= (.+) / (.+)$", r"= _fdiv(\1, \2)", src, flags=re.M)
    if op == "pow":     # numpy's float power: inf, nan, never an exception
        src = re.sub(r"= (.+) \*\* (.+)$", r"= np.power(\1, \2)", src, flags=re.M)
    return src


BINARY_IMPLS = {(op, kind, nd): make(_binary_source(t[kind], f"_{op}_{kind}{nd}", op, sym),
                                      f"_{op}_{kind}{nd}")
                for op, sym in _SYMBOLS.items() for nd, t in ((1, _BINARY_1D), (2, _BINARY_2D))
                for kind in ("aa", "as", "sa")}
BINARY_IMPLS.update({(op, "aa", kind): make(_binary_source(t, f"_{op}_{kind}", op, sym),
                                            f"_{op}_{kind}")
                     for op, sym in _SYMBOLS.items() for kind, t in _BINARY_MIXED.items()})
NEG_IMPLS = {nd: make(_UNARY[nd].format(name=f"_neg{nd}",
                                         expr="-a[i]" if nd == 1 else "-a[i, j]"), f"_neg{nd}")
             for nd in (1, 2)}
UFUNC_IMPLS = {}
for _u in _UFUNCS:
    for _nd in (1, 2):
        _idx = "a[i]" if _nd == 1 else "a[i, j]"
        UFUNC_IMPLS[(getattr(np, _u), _nd)] = make(
            _UNARY[_nd].format(name=f"_{_u}{_nd}", expr=f"np.{_u}({_idx})"), f"_{_u}{_nd}")


def _pairwise(a, lo, n):
    """numpy's pairwise summation of a[lo:lo + n] (numpy/_core/src/umath/loops)."""
    if n < 8:
        s = -0.0
        for i in range(lo, lo + n):
            s += a[i]
        return s
    if n <= 128:
        r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
        r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
        m = n - n % 8
        for i in range(lo + 8, lo + m, 8):
            r0 += a[i]
            r1 += a[i + 1]
            r2 += a[i + 2]
            r3 += a[i + 3]
            r4 += a[i + 4]
            r5 += a[i + 5]
            r6 += a[i + 6]
            r7 += a[i + 7]
        s = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        for i in range(lo + m, lo + n):
            s += a[i]
        return s
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise(a, lo, n2) + _pairwise(a, lo + n2, n - n2)


def _sum1(a):
    n = a.shape[0]
    # numpy adds onto its identity 0.0: an empty sum is 0.0, a sum of -0.0s is 0.0
    return 0.0 + _pairwise(a, 0, n) if n > 0 else 0.0


def _at(a, m, k):
    """Element k of a C-contiguous 2-D array with m columns, in flat order."""
    return a[k // m, k % m]


_NS["_at"] = _at
_pairwise_flat = make(re.sub(r"a\[([^\]]+)\]", r"_at(a, cols, \1)",
                              inspect.getsource(_pairwise))
                       .replace("def _pairwise(a, lo, n)", "def _pairwise_flat(a, cols, lo, n)")
                       .replace("_pairwise(a, ", "_pairwise_flat(a, cols, "), "_pairwise_flat")


def _sum2(a):
    """numpy sums a C-contiguous array as one flat run, others row by row."""
    n, m = a.shape
    if n * m > 0 and a.strides[1] == 8 and a.strides[0] == 8 * m:
        return 0.0 + _pairwise_flat(a, m, 0, n * m)
    s = 0.0
    for i in range(n):
        s += _pairwise(a[i], 0, m)
    return s


def _mean1(a):
    n = a.shape[0]
    return _sum1(a) / n if n else _NAN   # numpy: nan (with a RuntimeWarning)


def _mean2(a):
    n = a.shape[0] * a.shape[1]
    return _sum2(a) / n if n else _NAN


def _full1(x, v):
    n = x.shape[0]
    out = np.empty(n)
    for i in range(n):
        out[i] = v
    return out


def _full2(x, v):
    n, m = x.shape
    out = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            out[i, j] = v
    return out


def _d_sum1(dy, x, axis=None, keepdims=False):
    return _full1(x, dy)


def _d_sum2(dy, x, axis=None, keepdims=False):
    return _full2(x, dy)


def _d_mean1(dy, x, axis=None, keepdims=False):
    return _full1(x, dy / x.shape[0])


def _d_mean2(dy, x, axis=None, keepdims=False):
    return _full2(x, dy / (x.shape[0] * x.shape[1]))


def _d_pow_as1(dy, x, y):
    n = x.shape[0]
    gx = np.empty(n)
    gy = 0.0
    for i in range(n):
        gx[i] = 0.0 if y == 0 else dy[i] * y * np.power(x[i], y - 1)
        if x[i] > 0:
            gy += dy[i] * np.power(x[i], y) * math.log(x[i])
    return gx, gy


def _d_pow_as2(dy, x, y):
    n, m = x.shape
    gx = np.empty((n, m))
    gy = 0.0
    for i in range(n):
        for j in range(m):
            gx[i, j] = 0.0 if y == 0 else dy[i, j] * y * np.power(x[i, j], y - 1)
            if x[i, j] > 0:
                gy += dy[i, j] * np.power(x[i, j], y) * math.log(x[i, j])
    return gx, gy


def _assign_aa1(a, v):
    n = a.shape[0]
    same_length(n, v.shape[0])
    w = v.copy()   # v may be a view of a (a[...] = a[::-1]): numpy reads it all first
    for i in range(n):
        a[i] = w[i]


def _assign_aa2(a, v):
    n, m = a.shape
    same_length(n, v.shape[0])
    same_length(m, v.shape[1])
    w = v.copy()   # v may be a view of a (m[...] = m.T)
    for i in range(n):
        for j in range(m):
            a[i, j] = w[i, j]


def _assign_as1(a, v):
    for i in range(a.shape[0]):
        a[i] = v


def _assign_as2(a, v):
    n, m = a.shape
    for i in range(n):
        for j in range(m):
            a[i, j] = v


mark(_at, _d_pow_as1, _d_pow_as2, _assign_aa1, _assign_aa2, _assign_as1, _assign_as2,
     _pairwise, _sum1, _sum2, _mean1, _mean2, _full1, _full2, _d_sum1, _d_sum2,
     _d_mean1, _d_mean2)


# -- type rules (the registry entries are in jit.library.operators, ufuncs, reductions) -------
def binary_impl(op: str, ts: list) -> Any:
    """The loop of `a op b` for float arrays of one dtype, or such an array and a
    number whose type leaves the array's dtype as it is (a Python number, or a number
    of the array's dtype); None otherwise (numpy computes the rest)."""
    a, b = ts
    if is_float_dtype_array(a) and is_float_dtype_array(b) and a.dtype == b.dtype:
        key = a.ndim if a.ndim == b.ndim else f"a{a.ndim}b{b.ndim}"
        return of_dtype(BINARY_IMPLS, (op, "aa", key), a.dtype)
    if is_float_dtype_array(a) and _keeps_dtype(a.dtype, b):
        return of_dtype(BINARY_IMPLS, (op, "as", a.ndim), a.dtype)
    if is_float_dtype_array(b) and _keeps_dtype(b.dtype, a):
        return of_dtype(BINARY_IMPLS, (op, "sa", b.ndim), b.dtype)
    return None


def _keeps_dtype(dtype: Type, t: Type) -> bool:
    return is_numeric(t) and (t not in NARROW or t == dtype)


_OF_DTYPE: dict = {}     # (implementation, dtype) -> its instance for that dtype


def of_dtype(table: dict, key: Any, dtype: Type) -> Any:
    """Implementation `table[key]` (written for float64 arrays) for arrays of `dtype`:
    the same source with its result allocated in `dtype` (a float32 loop computes each
    element in float32, `jit.codegen.function.narrowed`); None for an implementation
    not made from a template."""
    impl = table.get(key)
    if impl is None or dtype == FLOAT64:
        return impl
    if impl not in _SOURCES:      # written for float64 only: numpy computes the others
        return None
    hit = _OF_DTYPE.get((impl, dtype))
    if hit is None:
        name = f"{impl.__name__}_{dtype}"
        src = re.sub(r"np\.(empty|zeros)\((\([^()]*\)|[^()]*)\)", rf"np.\1(\2, np.{dtype})",
                     _SOURCES[impl]).replace(f"def {impl.__name__}(", f"def {name}(")
        hit = _OF_DTYPE[(impl, dtype)] = make(src, name)
    return hit


def t_array_arith(ctx: Context, s, ts: list) -> Type:
    """`a OP b` / `-a` with an array operand: a loop over the float64 array(s)."""
    op = s.op
    impl = binary_impl(op, ts) if len(ts) == 2 else \
        of_dtype(NEG_IMPLS, ts[0].ndim, ts[0].dtype) if is_float_dtype_array(ts[0]) else None
    if impl is None:
        ctx.fail(f"{op} of {', '.join(map(str, ts))} is not compiled (whole-array "
                 "arithmetic needs float64 arrays of equal shape, or an array and a "
                 "number)")
    return impl_call(ctx, s, impl, list(s.args))


def array_rule(pick, name: str):
    """The type rule of a library call on arrays: `pick(argtypes)` chooses the
    plain-Python implementation (None: not compiled)."""
    def rule(ctx: Context, s, ts):
        impl = pick(ts) if not s.kwargs else None
        if impl is None:
            ctx.fail(f"{name} of {', '.join(map(str, ts))}"
                     f"{' with keywords' if s.kwargs else ''} is not compiled")
        return impl_call(ctx, s, impl, list(s.args[1:]))
    return rule


def one_array(table: dict):
    """A `pick` for one float array argument, by its rank (and dtype)."""
    def pick(ts):
        if len(ts) == 1 and is_float_dtype_array(ts[0]):
            return of_dtype(table, ts[0].ndim, ts[0].dtype)
        return None
    return pick


def by_first_array(impls: dict):
    """A pullback `pick` by the rank of the first array among the argument types."""
    def pick(argtypes):
        arrays = [t for t in argtypes if isinstance(t, ArrayT)]
        return impls.get(arrays[0].ndim) if arrays else None
    return pick


def _unbcast_aa1(dy, x):
    """The cotangent of a 1-D operand that may have been broadcast from length 1.  The
    None cotangent (a NULL array of length 0) stays None, whatever x's length."""
    if dy.shape[0] == x.shape[0] or x.shape[0] != 1:
        return dy
    out = np.empty(1)
    out[0] = _sum1(dy)
    return out


def _unbcast_aa2(dy, x):
    """The cotangent of a 2-D operand, summed over the axes it was broadcast along."""
    n, m = dy.shape
    rows, cols = x.shape
    if n == rows and m == cols:
        return dy
    out = np.zeros((rows, cols))
    si, sj = (1 if rows == n else 0), (1 if cols == m else 0)
    for i in range(n):
        for j in range(m):
            out[i * si, j * sj] += dy[i, j]
    return out


def _unbcast_row(dy, x):
    """The cotangent of a 1-D operand broadcast as a row against a 2-D one: summed
    over the rows (and over the row when x had length 1)."""
    n, m = dy.shape
    k = x.shape[0]
    out = np.zeros(k)
    sj = 1 if k == m else 0
    for i in range(n):
        for j in range(m):
            out[j * sj] += dy[i, j]
    return out


def _d_pow_pick(argtypes):
    """d_pow(dy, x, y) for a float array x and a number y."""
    if len(argtypes) == 3 and is_float_array(argtypes[1]) and is_numeric(argtypes[2]):
        return D_POW_AS.get(argtypes[1].ndim)
    return None


def _d_hypot2(dy, y, a, b):
    if y == 0:
        return 0.0, 0.0
    return dy * a / y, dy * b / y


def _d_hypot_pick(argtypes):
    """d_hypot(dy, y, *xs) is variadic; two coordinates get a fixed-arity version."""
    return _d_hypot2 if len(argtypes) == 4 else None


def unbcast_pick(ts):
    """`unbcast(dy, x)`: dy summed to x's shape (a number, or an array of x's rank); a
    float32 dy by the same loops in float32 (`of_dtype`)."""
    impl = _unbcast_pick64(ts)
    if impl is None or impl in FULL_SUMS:
        return impl
    return of_dtype({0: impl}, 0, ts[0].dtype)


def _unbcast_pick64(ts):
    if len(ts) == 2 and is_float_dtype_array(ts[0]) and ts[0].ndim > 2:
        if isinstance(ts[1], ArrayT):
            return UNBCAST_WIDE.get((ts[0].ndim, ts[1].ndim))
        number = is_numeric(ts[1]) or ts[1] in (INT64, BOOL)
        return UNBCAST_WIDE.get((ts[0].ndim, 0)) if number else None
    if len(ts) == 2 and is_float_dtype_array(ts[0]) and (
            is_numeric(ts[1]) or ts[1] in (INT64, BOOL)):
        return _sum1 if ts[0].ndim == 1 else _sum2
    if len(ts) == 2 and is_float_dtype_array(ts[0]) and isinstance(ts[1], ArrayT) \
            and ts[1].ndim == ts[0].ndim:
        return _unbcast_aa1 if ts[0].ndim == 1 else _unbcast_aa2
    if len(ts) == 2 and is_float_dtype_array(ts[0]) and ts[0].ndim == 2 \
            and is_float_dtype_array(ts[1]) and ts[1].ndim == 1:
        return _unbcast_row
    return None


def t_unbcast_array(ctx: Context, s, ts):
    impl = unbcast_pick(ts)
    if impl is None:
        ctx.fail(f"unbcast of {ts} is not compiled")
    operands = [s.args[1]] if impl in FULL_SUMS else [s.args[1], s.args[2]]
    return impl_call(ctx, s, impl, operands)


def is_unbcast_of_array(ctx, s, ts) -> bool:
    return unbcast_pick(ts) is not None


D_POW_AS = {1: _d_pow_as1, 2: _d_pow_as2}    # by x's rank (3: `elementwise_nd`)
# (dy's rank > 2, x's rank or 0 for a number) -> unbcast (`elementwise_nd`)
UNBCAST_WIDE: dict = {}
FULL_SUMS = [_sum1, _sum2]      # unbcast to a number: dy summed (`elementwise_nd` adds)
_ASSIGN_IMPLS = {("aa", 1): _assign_aa1, ("aa", 2): _assign_aa2, ("as", 1): _assign_as1,
                 ("as", 2): _assign_as2}


def is_assign_all(ctx, s, ts) -> bool:
    """Pattern `a[...] = v` (what `a OP= b` on an array becomes)."""
    return len(s.args) == 3 and ctx.const(s.args[2]) is Ellipsis


def t_assign_all(ctx: Context, s, ts):
    a, v = ts[0], ts[1]
    kind = "aa" if isinstance(v, ArrayT) and v.ndim == getattr(a, "ndim", -1) else \
        "as" if is_numeric(v) else None
    if not is_float_array(a) or kind is None:
        ctx.fail(f"a[...] = v of {a} and {v} is not compiled")
    impl_call(ctx, s, _ASSIGN_IMPLS[(kind, a.ndim)], list(s.args[:2]))
    return NONE


mark(_unbcast_aa1, _unbcast_aa2, _unbcast_row, _d_hypot2)
dtype_generic(_unbcast_aa1, _unbcast_aa2, _unbcast_row)
_NS["_sum1"] = _sum1
__all__ = ["impl_call", "t_array_arith", "array_rule", "one_array", "by_first_array"]
