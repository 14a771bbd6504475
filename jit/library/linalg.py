"""Array methods, `a.T`, `np.outer` and matrix products, compiled as plain-Python
implementations (the recipe of jit.library.elementwise):

  * `a.copy()`, `a.sum()`, `a.mean()`, `a.max()`, `a.min()`, `a.dot(b)`, `a.argmin()`,
    `a.argmax()` (np.argmin / np.argmax: jit.library.builders): the bound
    method is a closure over the receiver (`ClosureT(method, (array,))`), whose body
    calls the numpy function (`np.sum(a)`, ...) the JIT already compiles; so in
    compiled pullbacks `jcall` differentiates through it like any closure, and the
    receiver's cotangent comes back as the closure's captured cotangent;
  * `a.T`: a view with swapped shapes and strides (1-D: the array itself);
  * `np.outer(u, v)` of 1-D float64 arrays (bit-exact: one product per element);
  * `x @ y` (primitive `matmul`) for 1-D and 2-D float64 arrays, numpy's ValueError
    on mismatched core dimensions.  A plain loop adds the products left to right;
    numpy calls BLAS, which may associate (and fuse) differently, so results can
    differ from numpy's in the last bits;
  * the pullbacks of those: `d_getattr` (the method's cotangent is the receiver's;
    `.T` transposes into a fresh array), `d_matmul`, `d_np_outer`, `d_np_dot`;
  * `np.dot` of 1-D/2-D float64 arrays but not of two 2-D ones (numpy's error for
    that names four numbers, a native error record holds three: use `x @ y`).
`np.copy` / `a.copy()` of int64 arrays too.  Methods with keywords (`a.sum(axis=0)`)
and the other methods on int arrays stay refused (TypingError).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as L

from jit.library import array_calls as array_more  # noqa: F401  (np.max/np.min/np.copy on arrays first)
from jit.library.elementwise import PULLBACK_IMPLS, impl_call, is_float_array
from jit.codegen.function import CODEGEN, lltype
from jit.codegen.arrays import field, make_array, shape, stride
from jit.typing.infer import CALL_TYPE_RULES, RULES, Context
from jit.types import INT64, NONE, ArrayT, ClosureT, TupleT, Type

MATMUL_MESSAGE = ("matmul: Input operand 1 has a mismatch in its core dimension 0, with "
                  "gufunc signature (n?,k),(k,m?)->(n?,m?) (size {1} is different from {0})")


def check_matmul(k: int, k2: int) -> None:
    """numpy's ValueError when the core dimensions of `x @ y` differ (compiled natively)."""
    if k != k2:
        raise ValueError(MATMUL_MESSAGE.format(k, k2))


def check_dot11(k: int, k2: int) -> None:
    """numpy's ValueError for np.dot of misaligned shapes (these three: compiled natively)."""
    if k != k2:
        raise ValueError(_DOT_CHECKS[check_dot11][0].format(k, k2))


def check_dot21(n: int, k: int, k2: int) -> None:
    if k != k2:
        raise ValueError(_DOT_CHECKS[check_dot21][0].format(n, k, k2))


def check_dot12(k: int, k2: int, m: int) -> None:
    if k != k2:
        raise ValueError(_DOT_CHECKS[check_dot12][0].format(k, k2, m))


# check -> (message template over its operands, the two operands that must agree)
_DOT_CHECKS = {
    check_matmul: (MATMUL_MESSAGE, (0, 1)),
    check_dot11: ("shapes ({0},) and ({1},) not aligned: {0} (dim 0) != {1} (dim 0)", (0, 1)),
    check_dot21: ("shapes ({0},{1}) and ({2},) not aligned: {1} (dim 1) != {2} (dim 0)",
                  (1, 2)),
    check_dot12: ("shapes ({0},) and ({1},{2}) not aligned: {0} (dim 0) != {1} (dim 0)",
                  (0, 1)),
}


# -- bound methods: closures over the receiver ---------------------------------------------------
def _bind_copy(a):
    def copy():
        return np.copy(a)
    return copy


def _bind_sum(a):
    def sum():
        return np.sum(a)
    return sum


def _bind_mean(a):
    def mean():
        return np.mean(a)
    return mean


def _bind_max(a):
    def max():
        return np.max(a)
    return max


def _bind_min(a):
    def min():
        return np.min(a)
    return min


def _bind_dot(a):
    def dot(b):
        return np.dot(a, b)
    return dot


def _bind_argmin(a):
    def argmin():
        return np.argmin(a)
    return argmin


def _bind_argmax(a):
    def argmax():
        return np.argmax(a)
    return argmax


def _method(factory):
    fn = factory(None)
    fn.__module__ = "jit_array_impls"
    return fn


METHODS = {name: _method(f) for name, f in (
    ("copy", _bind_copy), ("sum", _bind_sum), ("mean", _bind_mean), ("max", _bind_max),
    ("min", _bind_min), ("dot", _bind_dot), ("argmin", _bind_argmin),
    ("argmax", _bind_argmax))}


# -- np.outer and matmul ---------------------------------------------------------------------
def _outer(a, b):
    n = a.shape[0]
    m = b.shape[0]
    out = np.empty((n, m))
    for i in range(n):
        x = a[i]
        for j in range(m):
            out[i, j] = x * b[j]
    return out


def _mm11(a, b):
    n = a.shape[0]
    check_matmul(n, b.shape[0])
    s = 0.0
    for p in range(n):
        s += a[p] * b[p]
    return s


def _mm21(a, b):
    n, k = a.shape
    check_matmul(k, b.shape[0])
    out = np.empty(n)
    for i in range(n):
        s = 0.0
        for p in range(k):
            s += a[i, p] * b[p]
        out[i] = s
    return out


def _mm12(a, b):
    k = a.shape[0]
    k2, m = b.shape
    check_matmul(k, k2)
    out = np.empty(m)
    for j in range(m):
        s = 0.0
        for p in range(k):
            s += a[p] * b[p, j]
        out[j] = s
    return out


def _mm22(a, b):
    n, k = a.shape
    k2, m = b.shape
    check_matmul(k, k2)
    out = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            s = 0.0
            for p in range(k):
                s += a[i, p] * b[p, j]
            out[i, j] = s
    return out


def _dot11(a, b):
    check_dot11(a.shape[0], b.shape[0])
    return _mm11(a, b)


def _dot21(a, b):
    n, k = a.shape
    check_dot21(n, k, b.shape[0])
    return _mm21(a, b)


def _dot12(a, b):
    k2, m = b.shape
    check_dot12(a.shape[0], k2, m)
    return _mm12(a, b)


def _copy_int1(a):
    n = a.shape[0]
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = a[i]
    return out


def _copy_int2(a):
    n, m = a.shape
    out = np.empty((n, m), dtype=np.int64)
    for i in range(n):
        for j in range(m):
            out[i, j] = a[i, j]
    return out


def _transposed_copy(a):
    n, m = a.shape
    out = np.empty((m, n))
    for i in range(m):
        for j in range(n):
            out[i, j] = a[j, i]
    return out


MATMUL_IMPLS = {(1, 1): _mm11, (2, 1): _mm21, (1, 2): _mm12, (2, 2): _mm22}
# np.dot of two 2-D arrays stays refused: its error message needs four numbers, and
# a native error record holds three (use `x @ y`).
DOT_IMPLS = {(1, 1): _dot11, (2, 1): _dot21, (1, 2): _dot12}


# -- pullbacks (adjoint.rules_math.d_matmul, rules_numpy.d_np_outer, d_getattr) ----------------
def _d_mm11(dy, x, y):
    return dy * y, dy * x


def _d_mm21(dy, x, y):
    return np.outer(dy, y), x.T @ dy


def _d_mm12(dy, x, y):
    return y @ dy, np.outer(x, dy)


def _d_mm22(dy, x, y):
    return dy @ y.T, x.T @ dy


def _d_outer(dy, x, y):
    return dy @ y, dy.T @ x


def _d_method(dy, x):
    """The cotangent of a bound method (a closure) is its receiver's."""
    return dy[0], None


def _d_transpose2(dy, x):
    return _transposed_copy(dy), None


def _d_transpose1(dy, x):
    return dy, None


D_MATMUL_IMPLS = {(1, 1): _d_mm11, (2, 1): _d_mm21, (1, 2): _d_mm12, (2, 2): _d_mm22}

for _f in (_copy_int1, _copy_int2, _dot11, _dot21, _dot12, _outer, _mm11, _mm21, _mm12, _mm22, _transposed_copy, _d_mm11,
           _d_mm21, _d_mm12, _d_mm22, _d_outer, _d_method, _d_transpose2, _d_transpose1):
    _f.__module__ = "jit_array_impls"


# -- typing and lowering -----------------------------------------------------------------------
def _attr_name(ctx: Context, s) -> object:
    return ctx.const(s.args[1]) if len(s.args) == 2 else None


def _wrap_getattr() -> None:
    """`a.T` and the bound methods of METHODS on arrays; other attributes as before."""
    plain_rule, plain_cg = RULES["getattr"], CODEGEN["getattr"]

    def rule(ctx: Context, s, ts):
        name = _attr_name(ctx, s)
        if not isinstance(ts[0], ArrayT) or not isinstance(name, str):
            return plain_rule(ctx, s, ts)
        if name == "T":
            return ts[0]
        if name in METHODS:
            return ClosureT(METHODS[name], (ts[0],))
        return plain_rule(ctx, s, ts)

    def cg(fc, s, ts):
        if not isinstance(ts[0], ArrayT):
            return plain_cg(fc, s, ts)
        name = s.args[1].value
        arr = fc.get(s.args[0])
        if name == "T":
            return transpose(fc, arr, ts[0].ndim)
        if name in METHODS:
            return fc.b.insert_value(L.Constant(lltype(s.type), L.Undefined), arr, 0)
        return plain_cg(fc, s, ts)
    RULES["getattr"], CODEGEN["getattr"] = rule, cg


def transpose(fc, arr, ndim: int) -> L.Value:
    """The transposed view of a native array (shapes and strides swapped)."""
    if ndim == 1:
        return arr
    return make_array(fc, field(fc, arr, 0), [shape(fc, arr, 1), shape(fc, arr, 0)],
                      [stride(fc, arr, 1), stride(fc, arr, 0)])


def _matmul_impl(ts: list):
    if len(ts) == 2 and all(is_float_array(t) for t in ts):
        return MATMUL_IMPLS.get((ts[0].ndim, ts[1].ndim))
    return None


def _register_matmul() -> None:
    def rule(ctx: Context, s, ts):
        impl = _matmul_impl(ts)
        if impl is None:
            ctx.fail(f"matmul of {', '.join(map(str, ts))} is not compiled (float64 arrays "
                     "of 1 or 2 dimensions only)")
        return impl_call(ctx, s, impl, list(s.args))

    def cg(fc, s, ts):
        call = fc.typing.calls[s.var]
        return fc.call_user(call.target, call.operands, [])
    RULES["matmul"], CODEGEN["matmul"] = rule, cg


def _pick_outer(ts):
    if len(ts) == 2 and all(is_float_array(t) and t.ndim == 1 for t in ts):
        return _outer
    return None


def _pick_d_matmul(argtypes):
    if len(argtypes) != 3 or not all(is_float_array(t) for t in argtypes[1:]):
        return None
    return D_MATMUL_IMPLS.get((argtypes[1].ndim, argtypes[2].ndim))


def _pick_d_outer(argtypes):
    ok = len(argtypes) == 3 and is_float_array(argtypes[0]) and argtypes[0].ndim == 2
    return _d_outer if ok and all(is_float_array(t) and t.ndim == 1 for t in argtypes[1:]) \
        else None


def _getattr_pullback_impl(ts: list, name: object):
    """The JIT's d_getattr for (dy, x) of a method or `.T`, or None."""
    dy, x = ts[1], ts[2]
    if not isinstance(x, ArrayT) or dy == NONE:
        return None
    if name == "T":
        return _d_transpose2 if x.ndim == 2 else _d_transpose1
    if name in METHODS and isinstance(dy, TupleT) and len(dy.elems) == 1:
        return _d_method
    return None


def _wrap_pullback_calls() -> None:
    """Calls of the `d_getattr` rule object: its attribute-name operand is a constant,
    so the implementation is chosen here and takes only (dy, x)."""
    from adjoint.rules import Pullback
    from adjoint.rules_math import d_getattr
    plain = CALL_TYPE_RULES[Pullback]

    def rule(ctx: Context, s, ts):
        pb = s.args[0].value
        name = ctx.const(s.args[3]) if len(s.args) == 4 else None
        impl = _getattr_pullback_impl(ts, name) if pb is d_getattr else None
        if impl is None:
            return plain(ctx, s, ts)
        ret = impl_call(ctx, s, impl, [s.args[1], s.args[2]])
        ctx.typing.calls[s.var].callee = pb
        return ret
    CALL_TYPE_RULES[Pullback] = rule


def _t_check(ctx: Context, s, ts: list) -> Type:
    if not all(t == INT64 for t in ts):
        ctx.fail(f"bad operands {ts} of a shape check")
    return NONE


def _cg_dot_check(f):
    template, (i, j) = _DOT_CHECKS[f]

    def cg(fc, s, ts):
        dims = [fc.get(a, INT64) for a in s.args[1:]]
        fc.raise_if(fc.b.icmp_signed("!=", dims[i], dims[j]), ValueError, template,
                    tuple(dims))
        return L.Constant(L.IntType(8), 0)
    return cg


def _pick_dot(ts):
    if len(ts) == 2 and all(is_float_array(t) for t in ts):
        return DOT_IMPLS.get((ts[0].ndim, ts[1].ndim))
    return None


def _pick_d_dot(argtypes):
    """adjoint.rules_numpy.d_np_dot of two arrays (a number operand: the rule itself)."""
    if len(argtypes) != 3 or not all(is_float_array(t) for t in argtypes[1:]):
        return None
    x, y = argtypes[1], argtypes[2]
    return D_MATMUL_IMPLS.get((x.ndim, y.ndim)) if (x.ndim, y.ndim) in DOT_IMPLS else None


def _wrap_int_copy() -> None:
    """np.copy (and `a.copy()`) of int64 arrays too (jit.library.array_calls copies floats)."""
    from jit.library.call_types import CALL_RULES
    plain = CALL_RULES[np.copy]

    def rule(ctx: Context, s, ts):
        if len(ts) == 1 and not s.kwargs and isinstance(ts[0], ArrayT) and ts[0].dtype == INT64:
            impl = _copy_int1 if ts[0].ndim == 1 else _copy_int2
            return impl_call(ctx, s, impl, [s.args[1]])
        return plain(ctx, s, ts)
    CALL_RULES[np.copy] = rule


def _register() -> None:
    from adjoint import rules_math as M
    from adjoint import rules_numpy as R

    from jit.library.elementwise import _wrap_call
    from jit.library.call_lowering import CALL_CODEGEN
    from jit.library.call_types import CALL_RULES
    for f in _DOT_CHECKS:
        CALL_RULES[f], CALL_CODEGEN[f] = _t_check, _cg_dot_check(f)
    _wrap_call(np.dot, _pick_dot)
    PULLBACK_IMPLS[id(R.d_np_dot)] = (R.d_np_dot, _pick_d_dot)
    _wrap_getattr()
    _wrap_int_copy()
    _register_matmul()
    _wrap_call(np.outer, _pick_outer)
    _wrap_call(np.matmul, _matmul_impl)
    PULLBACK_IMPLS[id(M.d_matmul)] = (M.d_matmul, _pick_d_matmul)
    PULLBACK_IMPLS[id(R.d_np_matmul)] = (R.d_np_matmul, _pick_d_matmul)
    PULLBACK_IMPLS[id(R.d_np_outer)] = (R.d_np_outer, _pick_d_outer)
    _wrap_pullback_calls()


_register()
__all__ = ["DOT_IMPLS", "MATMUL_IMPLS", "METHODS", "check_matmul", "transpose"]
