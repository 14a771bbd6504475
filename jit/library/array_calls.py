"""More library calls compiled as plain-Python implementations (the recipe of
jit.library.elementwise: typed and compiled like user code):

  * three-argument `pow(a, b, m)` on integers (`powmod`: square-and-multiply that
    never leaves int64, negative exponents through the modular inverse, CPython's
    ValueErrors, the result carries the sign of m);
  * the whole-array loops of np.max / np.min (NaN propagates, an empty array raises
    numpy's ValueError; their registry entries are in jit.library.reductions) and their
    pullbacks, np.prod of a float64 array of 1 or 2 dimensions and its pullback;
  * np.maximum / np.minimum of two float64 arrays of equal shape or of an array and
    a number, and their pullbacks;
  * np.copy of float64 arrays, and np.sign of a number.
Bit-exactness: these are the loops numpy runs (prod multiplies left to right).  One
known difference: among equal zeros of both signs np.max/np.min return the last one,
as numpy's scalar loop does, while numpy's SIMD loop (arrays of 16 and more) may pick
another; values are equal, only the sign of a zero result can differ.
"""
from __future__ import annotations


import numpy as np
from llvmlite import ir as L

import builtins

from jit.library.elementwise import (
    dtype_generic,
    _sum1,
    _sum2,
    _unbcast_aa1,
    _unbcast_aa2,
    array_rule,
    broadcast_length,
    by_first_array,
    impl_call,
    is_float_array,
    one_array,
)
from jit.library.python_impls import has_array, mark
from jit.library.numpy_calls import REDUCE, UFUNC2, add_host, elementwise, reduction
from jit.library.registry import REGISTRY
from jit.codegen.function import I64
from jit.typing.infer import Context
from jit.types import BOOL, FLOAT64, INT64, NONE, ArrayT, Type, is_numeric

_NAN = float("nan")


# -- runtime checks with native codegen ----------------------------------------------------------
def check_modulus(m: int) -> None:
    """CPython's ValueError for pow(a, b, 0) (compiled natively)."""
    if m == 0:
        raise ValueError("pow() 3rd argument cannot be 0")


def check_invertible(g: int) -> None:
    """CPython's ValueError when gcd(base, modulus) = g is not 1 (compiled natively)."""
    if g != 1:
        raise ValueError("base is not invertible for the given modulus")


def check_max_size(n: int) -> None:
    """numpy's ValueError for np.max of an empty array (compiled natively)."""
    if n == 0:
        raise ValueError("zero-size array to reduction operation maximum which has no "
                         "identity")


def check_min_size(n: int) -> None:
    """numpy's ValueError for np.min of an empty array (compiled natively)."""
    if n == 0:
        raise ValueError("zero-size array to reduction operation minimum which has no "
                         "identity")


# (check, raise when the operand equals this value (True) or differs from it (False))
_CHECKS = {check_modulus: (0, True), check_invertible: (1, False),
           check_max_size: (0, True), check_min_size: (0, True)}
_MESSAGES = {check_modulus: "pow() 3rd argument cannot be 0",
             check_invertible: "base is not invertible for the given modulus",
             check_max_size: "zero-size array to reduction operation maximum which has no "
                             "identity",
             check_min_size: "zero-size array to reduction operation minimum which has no "
                             "identity"}


# -- pow(a, b, m) --------------------------------------------------------------------------------
def _mulmod(x, y, n):
    """x * y % n for 0 <= x, y < n without leaving int64 (doubling when n is large)."""
    if n <= 3037000499:
        return x * y % n
    r = 0
    while y > 0:
        if y & 1:
            r = r - (n - x) if r >= n - x else r + x
        x = x - (n - x) if x >= n - x else x + x
        y >>= 1
    return r


def _invmod(a, n):
    """The inverse of a modulo n > 0 (extended Euclid), or CPython's ValueError."""
    t, newt, r, newr = 0, 1, n, a
    while newr != 0:
        q = r // newr
        t, newt = newt, t - q * newt
        r, newr = newr, r - q * newr
    check_invertible(r)
    return t % n


def powmod(a, b, m):
    """CPython's three-argument pow on integers: the result has the sign of m."""
    check_modulus(m)
    n = -m if m < 0 else m
    a = a % n
    if b < 0:
        a = _invmod(a, n)
        b = -b
    r = 1 % n
    while b > 0:
        if b & 1:
            r = _mulmod(r, a, n)
        a = _mulmod(a, a, n)
        b >>= 1
    if m < 0 and r != 0:
        r = r - n
    return r


# -- reductions ----------------------------------------------------------------------------------
def _max1(a):
    n = a.shape[0]
    check_max_size(n)
    m = a[0]
    for i in range(n):
        v = a[i]
        if v != v:
            return v
        if v >= m:
            m = v
    return m


def _min1(a):
    n = a.shape[0]
    check_min_size(n)
    m = a[0]
    for i in range(n):
        v = a[i]
        if v != v:
            return v
        if v <= m:
            m = v
    return m


def _prod1(a):
    p = 1.0
    for i in range(a.shape[0]):
        p *= a[i]
    return p


def _max2(a):
    n, m = a.shape
    check_max_size(n * m)
    best = a[0, 0]
    for i in range(n):
        for j in range(m):
            v = a[i, j]
            if v != v:
                return v
            if v >= best:
                best = v
    return best


def _min2(a):
    n, m = a.shape
    check_min_size(n * m)
    best = a[0, 0]
    for i in range(n):
        for j in range(m):
            v = a[i, j]
            if v != v:
                return v
            if v <= best:
                best = v
    return best


def _prod2(a):
    n, m = a.shape
    p = 1.0
    for i in range(n):
        for j in range(m):
            p *= a[i, j]
    return p


def _d_extreme1(dy, y, x, axis=None, keepdims=False):
    """adjoint.rules_numpy.d_np_max: dy spread over the positions equal to y."""
    n = x.shape[0]
    count = 0
    for i in range(n):
        if x[i] == y:
            count += 1
    g = np.empty(n)
    for i in range(n):
        hit = dy * (1.0 if x[i] == y else 0.0)
        g[i] = hit / count if count > 0 else _NAN
    return g


def _d_extreme2(dy, y, x, axis=None, keepdims=False):
    n, m = x.shape
    count = 0
    for i in range(n):
        for j in range(m):
            if x[i, j] == y:
                count += 1
    g = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            hit = dy * (1.0 if x[i, j] == y else 0.0)
            g[i, j] = hit / count if count > 0 else _NAN
    return g


def _d_prod1(dy, y, x):
    """adjoint.rules_numpy.d_np_prod: dy times the product of the other elements,
    as products before and after each one (the interpreter's order)."""
    n = x.shape[0]
    g = np.empty(n)
    left = 1.0
    for i in range(n):
        g[i] = left
        left = left * x[i]
    right = 1.0
    for i in range(n - 1, -1, -1):
        g[i] = g[i] * right * dy
        right = right * x[i]
    return g


def _d_prod2(dy, y, x):
    n, m = x.shape
    g = np.empty((n, m))
    left = 1.0
    for i in range(n):
        for j in range(m):
            g[i, j] = left
            left = left * x[i, j]
    right = 1.0
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            g[i, j] = g[i, j] * right * dy
            right = right * x[i, j]
    return g


# -- np.maximum / np.minimum and their pullbacks (templates per kind and rank) -------------------
def _fmax(x, y):
    """numpy's maximum of two floats: the second when equal (signed zeros), NaN
    propagates."""
    return x if (x > y or x != x) else y


def _fmin(x, y):
    return x if (x < y or x != x) else y


_EW = {  # kind -> (n from, x element, y element)
    "aa": ("a", "a[{i}]", "b[{i}]"), "as": ("a", "a[{i}]", "b"), "sa": ("b", "a", "b[{i}]")}
_MAXMIN_SRC = """def {name}(a, b):
    {shape}{check}
    out = np.empty({dims})
    {loops}out[{i}] = {fn}({x}, {y})
    return out
"""
_D_MAXMIN_SRC = """def {name}(dy, a0, b0):
    a, b = a0, b0
    {shape}{check}
    ga = np.empty({dims})
    gb = np.empty({dims})
    {loops}pick = {x} {cmp} {y}
    {pad}ga[{i}] = dy[{i}] if pick else 0.0
    {pad}gb[{i}] = 0.0 if pick else dy[{i}]
    return {ga}, {gb}
"""


def _template(src: str, name: str, kind: str, nd: int, **extra) -> object:
    src_arr, x, y = _EW[kind]
    i = "i" if nd == 1 else "i, j"
    shape = f"n = {src_arr}.shape[0]" if nd == 1 else f"n, m = {src_arr}.shape"
    check = _BROADCAST_BOTH[nd] if kind == "aa" else ""
    loops = ("for i in range(n):\n        " if nd == 1 else
             "for i in range(n):\n        for j in range(m):\n            ")
    pad = "    " * nd
    text = src.format(name=name, shape=shape, check=check, dims="n" if nd == 1 else "(n, m)",
                      loops=loops, pad=pad, i=i, x=x.format(i=i), y=y.format(i=i), **extra)
    ns = {"np": np, "broadcast_length": broadcast_length, "_fmax": _fmax, "_fmin": _fmin,
          "_sum1": _sum1, "_sum2": _sum2, "_stretch1": _stretch1, "_stretch2": _stretch2,
          "_unbcast_aa1": _unbcast_aa1, "_unbcast_aa2": _unbcast_aa2}
    exec(compile(text, f"<jit.library.array_calls {name}>", "exec"), ns)
    mark(ns[name])
    return ns[name]


# two arrays of one rank: both stretched to the shape they broadcast to
_BROADCAST_BOTH = {
    1: """
    n = broadcast_length(n, b.shape[0])
    a = _stretch1(a, n)
    b = _stretch1(b, n)""",
    2: """
    n = broadcast_length(n, b.shape[0])
    m = broadcast_length(m, b.shape[1])
    a = _stretch2(a, n, m)
    b = _stretch2(b, n, m)"""}


def _stretch1(a, n):
    """`a` itself, or its one element repeated n times (numpy's broadcast)."""
    if a.shape[0] == n:
        return a
    out = np.empty(n)
    for i in range(n):
        out[i] = a[0]
    return out


def _stretch2(a, n, m):
    rows, cols = a.shape
    if rows == n and cols == m:
        return a
    out = np.empty((n, m))
    si, sj = (1 if rows == n else 0), (1 if cols == m else 0)
    for i in range(n):
        for j in range(m):
            out[i, j] = a[i * si, j * sj]
    return out


def _unbcast_expr(kind: str, nd: int, g: str, operand: str) -> str:
    """The cotangent `g` of the full shape summed back to operand `a0` or `b0`."""
    if kind == "aa":
        return f"_unbcast_aa{nd}({g}, {operand})"
    scalar = (kind == "sa") == (operand == "a0")
    return f"_sum{nd}({g})" if scalar else g


MAXMIN_IMPLS = {(fn, kind, nd): _template(_MAXMIN_SRC, f"_{fn[2:]}_{kind}{nd}", kind, nd,
                                          fn=fn)
                for fn in ("_fmax", "_fmin") for kind in _EW for nd in (1, 2)}
D_MAXMIN_IMPLS = {(cmp, kind, nd): _template(
    _D_MAXMIN_SRC, f"_d_{'max' if cmp == '>=' else 'min'}_{kind}{nd}", kind, nd, cmp=cmp,
    ga=_unbcast_expr(kind, nd, "ga", "a0"), gb=_unbcast_expr(kind, nd, "gb", "b0"))
    for cmp in (">=", "<=") for kind in _EW for nd in (1, 2)}


def _copy1(a):
    n = a.shape[0]
    out = np.empty(n)
    for i in range(n):
        out[i] = a[i]
    return out


def _copy2(a):
    n, m = a.shape
    out = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            out[i, j] = a[i, j]
    return out


dtype_generic(_copy1, _copy2)


def _sign_float(x):
    """np.sign of a float: -1.0, 0.0 (for both zeros), 1.0, or NaN."""
    if x > 0.0:
        return 1.0
    if x < 0.0:
        return -1.0
    return x if x != x else 0.0


def _sign_int(x):
    return 1 if x > 0 else (-1 if x < 0 else 0)


mark(_sign_float, _sign_int, _mulmod, _invmod, powmod, _max1, _min1, _prod1, _max2, _min2, _prod2,
     _d_extreme1, _d_extreme2, _d_prod1, _d_prod2, _fmax, _fmin, _copy1, _copy2, _stretch1,
     _stretch2)


# -- typing and registration ---------------------------------------------------------------------
def _kind(ts: list) -> tuple:
    """(kind, rank) of two operands: two float arrays of one rank, array and number."""
    if len(ts) != 2:
        return None, 0
    a, b = ts
    if is_float_array(a) and is_float_array(b) and a.ndim == b.ndim:
        return "aa", a.ndim
    if is_float_array(a) and is_numeric(b):
        return "as", a.ndim
    if is_numeric(a) and is_float_array(b):
        return "sa", b.ndim
    return None, 0


def _pick_maxmin(fn: str):
    def pick(ts):
        kind, nd = _kind(list(ts))
        return MAXMIN_IMPLS[(fn, kind, nd)] if kind else None
    return pick


def _pick_d_maxmin(cmp: str):
    def pick(argtypes):
        kind, nd = _kind(list(argtypes)[1:]) if len(argtypes) == 3 else (None, 0)
        ok = kind and isinstance(argtypes[0], ArrayT) and argtypes[0].ndim == nd
        return D_MAXMIN_IMPLS[(cmp, kind, nd)] if ok else None
    return pick


def _cg_check(f):
    value, on_equal = _CHECKS[f]
    msg = _MESSAGES[f]

    def cg(fc, s, ts):
        v = fc.get(s.args[1], INT64)
        bad = fc.b.icmp_signed("==" if on_equal else "!=", v, L.Constant(I64, value))
        fc.raise_if(bad, ValueError, msg, ())
        return L.Constant(L.IntType(8), 0)
    return cg


def _t_check(ctx: Context, s, ts: list) -> Type:
    if len(ts) != 1 or ts[0] not in (INT64, BOOL):
        ctx.fail(f"bad operand {ts} of a runtime check")
    return NONE


def _builtin_pow(a, b):
    return a ** b


def _t_builtin_pow(ctx: Context, s, ts):
    """Two-argument `pow(a, b)` is `a ** b` (compiled as the `pow` primitive); three
    integer arguments run `powmod` (stays in int64)."""
    if len(ts) == 2 and not s.kwargs:
        return impl_call(ctx, s, _builtin_pow, list(s.args[1:]))
    if len(ts) == 3 and not s.kwargs and all(t in (INT64, BOOL) for t in ts):
        return impl_call(ctx, s, powmod, list(s.args[1:]))
    ctx.fail("pow() with a modulus is not compiled")


def _t_sign_number(ctx: Context, s, ts):
    """np.sign of a number (np.abs's pullback on arrays calls it per element)."""
    return impl_call(ctx, s, _sign_float if ts[0] == FLOAT64 else _sign_int, [s.args[1]])


def is_one_number(ctx, s, ts) -> bool:
    return len(ts) == 1 and not s.kwargs and ts[0] in (FLOAT64, INT64)


ARRAYS = "float64 array, 1-D or 2-D"
FAMILY = "reductions"


def _declare() -> None:
    from adjoint import rules_numpy as R
    for f in _CHECKS:
        REGISTRY.declare(f, family="runtime checks", pattern="int", types=_t_check,
                         lower=_cg_check(f), gpu={"cuda": "inline"})
    REGISTRY.declare(builtins.pow, family="math and builtins", pattern="numbers",
                     types=_t_builtin_pow)
    REGISTRY.declare(np.prod, family=FAMILY, pattern=ARRAYS, matches=has_array,
                     methods=("prod(axis=None, dtype=None, out=None, keepdims=False)",),
                     types=array_rule(one_array({1: _prod1, 2: _prod2}),
                                                         "np.prod"))
    for f, fn in ((np.maximum, "_fmax"), (np.minimum, "_fmin")):
        REGISTRY.declare(f, family="ufuncs", pattern="float64 arrays of one rank, or array "
                         "and number", matches=has_array,
                         types=array_rule(_pick_maxmin(fn), f"np.{f.__name__}"))
    add_host(np.prod, REDUCE + ", initial=None, where=True", reduction(None))
    for f in (np.maximum, np.minimum):
        add_host(f, UFUNC2, elementwise(None, "x1", "x2"))
    for pb, pattern, pick in (
            (R.d_np_prod, ARRAYS, by_first_array({1: _d_prod1, 2: _d_prod2})),
            (R.d_np_maximum, "arrays", _pick_d_maxmin(">=")),
            (R.d_np_minimum, "arrays", _pick_d_maxmin("<="))):
        REGISTRY.declare_pullback(pb, pattern, pick)


mark(_builtin_pow)
_declare()
