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
    on mismatched core dimensions.  Two 2-D operands go to numpy's own BLAS
    (`jit.library.blas.gemm`, transposed views without a copy): numpy's result for
    C-contiguous matrices; the other ranks (and a platform where numpy's BLAS is not
    found) add the products left to right in a loop; other layouts can differ from
    numpy's in the last bits;
  * the pullbacks of those: `d_getattr` (the method's cotangent is the receiver's;
    `.T` transposes into a fresh array), `d_matmul`, `d_np_outer`, `d_np_dot`;
  * `np.dot` of 1-D/2-D float64 arrays (for two 2-D ones numpy's error names four
    numbers; a native error record holds three, so the last stands as '...').
`np.copy` / `a.copy()` of int64 arrays too.  Methods with keywords (`a.sum(axis=0)`)
and the other methods on int arrays stay refused (TypingError).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as L

from jit.codegen.arrays import field, make_array, shape, stride
from jit.codegen.function import lltype
from jit.library.array_calls import _copy1, _copy2
from jit.library.blas import BLAS, blas_operand, gemm
from jit.library.elementwise import array_rule, impl_call, is_float_array, of_dtype
from jit.library.python_impls import NAMESPACE, has_array, make, mark
from jit.library.numpy_calls import add_host, dot, dtype_of, host_operator, matmul
from jit.library.registry import REGISTRY
from jit.typing.infer import Context
from jit.types import FLOAT64, INT64, NONE, ArrayT, ClosureT, TupleT, Type, is_float_dtype_array

HAS_BLAS = BLAS is not None     # a compile-time constant of the implementations below
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


def check_dot22(n: int, k: int, k2: int) -> None:
    """np.dot of two 2-D arrays: numpy's message names the second array's column count
    too, which a native error record (three numbers) has no room for: '...' stands in."""
    if k != k2:
        raise ValueError(_DOT_CHECKS[check_dot22][0].format(n, k, k2))


# check -> (message template over its operands, the two operands that must agree)
_DOT_CHECKS = {
    check_matmul: (MATMUL_MESSAGE, (0, 1)),
    check_dot11: ("shapes ({0},) and ({1},) not aligned: {0} (dim 0) != {1} (dim 0)", (0, 1)),
    check_dot21: ("shapes ({0},{1}) and ({2},) not aligned: {1} (dim 1) != {2} (dim 0)",
                  (1, 2)),
    check_dot12: ("shapes ({0},) and ({1},{2}) not aligned: {0} (dim 0) != {1} (dim 0)",
                  (0, 1)),
    check_dot22: ("shapes ({0},{1}) and ({2},...) not aligned: {1} (dim 1) != {2} (dim 0)",
                  (1, 2)),
}


# -- bound methods: closures over the receiver ---------------------------------------------------
_METHOD_FNS: dict = {}


def method_function(name: str):
    """The function of ndarray method `name` (declared with its numpy function in the
    registry): a closure over the receiver `a` calling the function on `a`, or None."""
    hit = REGISTRY.method(name)
    if hit is None:
        return None
    if name not in _METHOD_FNS:
        entry, params, args = hit
        NAMESPACE[f"_np_{name}"] = entry.key
        src = (f"def _bind_{name}(a):\n    def {name}({params}):\n"
               f"        return _np_{name}(a{', ' + args if args else ''})\n"
               f"    return {name}\n")
        fn = make(src, f"_bind_{name}")(None)
        mark(fn)
        # `a.repeat(2, axis=0)`: the callee's numpy call reads its options at compile time
        fn.__zygopy_options__ = tuple(p.split("=")[0].strip() for p in params.split(",")
                                      if "=" in p)
        _METHOD_FNS[name] = fn
    return _METHOD_FNS[name]


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
    if HAS_BLAS and n > 0 and m > 0 and k > 0:
        ta, lda = blas_operand(a)
        if ta < 0:
            a = _copy2(a)
            ta, lda = 0, k
        tb, ldb = blas_operand(b)
        if tb < 0:
            b = _copy2(b)
            tb, ldb = 0, m
        gemm(a, b, out, ta, tb, lda, ldb)
        return out
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


def _dot22(a, b):
    n, k = a.shape
    check_dot22(n, k, b.shape[0])
    return _mm22(a, b)


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
DOT_IMPLS = {(1, 1): _dot11, (2, 1): _dot21, (1, 2): _dot12, (2, 2): _dot22}


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


def _d_transpose_copy(dy, x):
    """`.T`'s pullback for a cotangent of another dtype than float64 (np.copy keeps it)."""
    return np.copy(dy.T), None


D_MATMUL_IMPLS = {(1, 1): _d_mm11, (2, 1): _d_mm21, (1, 2): _d_mm12, (2, 2): _d_mm22}

mark(_copy_int1, _copy_int2, _dot11, _dot21, _dot12, _dot22, _outer, _mm11, _mm21, _mm12, _mm22,
     _transposed_copy, _d_mm11, _d_mm21, _d_mm12, _d_mm22, _d_outer, _d_method, _d_transpose2,
     _d_transpose1, _d_transpose_copy)


# -- typing and lowering -----------------------------------------------------------------------
def _attr_name(ctx: Context, s) -> object:
    return ctx.const(s.args[1]) if len(s.args) == 2 else None


def _is_array_attribute(ctx: Context, s, ts) -> bool:
    """Pattern: `a.T` or a declared method of an array."""
    name = _attr_name(ctx, s)
    return isinstance(ts[0], ArrayT) and isinstance(name, str) and \
        (name == "T" or REGISTRY.method(name) is not None)


def _t_array_attribute(ctx: Context, s, ts):
    name = _attr_name(ctx, s)
    return ts[0] if name == "T" else ClosureT(method_function(name), (ts[0],))


def _cg_array_attribute(fc, s, ts):
    arr = fc.get(s.args[0])
    if s.args[1].value == "T":
        return transpose(fc, arr, ts[0].ndim)
    return fc.b.insert_value(L.Constant(lltype(s.type), L.Undefined), arr, 0)


def transpose(fc, arr, ndim: int) -> L.Value:
    """The transposed view of a native array (shapes and strides swapped)."""
    if ndim == 1:
        return arr
    axes = list(reversed(range(ndim)))
    return make_array(fc, field(fc, arr, 0), [shape(fc, arr, k) for k in axes],
                      [stride(fc, arr, k) for k in axes])


def _matmul_impl(ts: list):
    if len(ts) == 2 and all(is_float_array(t) for t in ts):
        return MATMUL_IMPLS.get((ts[0].ndim, ts[1].ndim))
    return None


def _t_matmul(ctx: Context, s, ts):
    impl = _matmul_impl(ts)
    if impl is None:
        ctx.fail(f"matmul of {', '.join(map(str, ts))} is not compiled (float64 arrays "
                 "of 1 or 2 dimensions only)")
    return impl_call(ctx, s, impl, list(s.args))


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
    """The JIT's d_getattr for (dy, x) of a method or `.T` of an array, or of
    `.item` of a float (`jit.library.number_builtins`), or None."""
    dy, x = ts[1], ts[2]
    if x == FLOAT64 and name == "item" and isinstance(dy, TupleT) and len(dy.elems) == 1:
        return _d_method
    if not isinstance(x, ArrayT) or dy == NONE:
        return None
    if name == "T":
        if x.ndim == 2 and isinstance(dy, ArrayT) and dy.dtype != FLOAT64:
            return _d_transpose_copy
        return {1: _d_transpose1, 2: _d_transpose2}.get(x.ndim)
    if REGISTRY.method(name) is not None and isinstance(dy, TupleT) and len(dy.elems) == 1:
        return _d_method
    return None


def is_getattr_pullback(ctx: Context, s, ts) -> bool:
    """Pattern: a call of the `d_getattr` rule object on an array method or `.T`
    (its attribute-name operand is a constant, so the implementation is chosen here
    and takes only (dy, x))."""
    from adjoint.rules_math import d_getattr
    if s.args[0].value is not d_getattr or len(s.args) != 4:
        return False
    return _getattr_pullback_impl(ts, ctx.const(s.args[3])) is not None


def t_getattr_pullback(ctx: Context, s, ts):
    impl = _getattr_pullback_impl(ts, ctx.const(s.args[3]))
    ret = impl_call(ctx, s, impl, [s.args[1], s.args[2]])
    ctx.typing.calls[s.var].callee = s.args[0].value
    return ret


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


def _pick_copy(ts):
    """np.copy / `a.copy()` of a float64, float32 or int64 array."""
    if len(ts) != 1 or not isinstance(ts[0], ArrayT) or ts[0].ndim not in (1, 2):
        return None
    if ts[0].dtype == INT64:
        return _copy_int1 if ts[0].ndim == 1 else _copy_int2
    if not is_float_dtype_array(ts[0]):
        return None
    return of_dtype({1: _copy1, 2: _copy2}, ts[0].ndim, ts[0].dtype)


LINALG = "linear algebra"


def _declare() -> None:
    from adjoint import rules_math as M
    from adjoint import rules_numpy as R
    for f in _DOT_CHECKS:
        REGISTRY.declare(f, family="runtime checks", pattern="int, int[, int]", types=_t_check,
                         lower=_cg_dot_check(f), gpu={"cuda": "inline"})
    REGISTRY.declare(np.dot, family=LINALG, pattern="float64 arrays, 1-D or 2-D",
                     matches=has_array, methods=("dot(b)",), types=array_rule(_pick_dot, "np.dot"))
    REGISTRY.declare(np.outer, family=LINALG, pattern="float64 1-D arrays", matches=has_array,
                     types=array_rule(_pick_outer, "np.outer"))
    REGISTRY.declare(np.matmul, family=LINALG, pattern="float64 arrays, 1-D or 2-D",
                     matches=has_array, types=array_rule(_matmul_impl, "np.matmul"))
    REGISTRY.declare(np.copy, family="array builders", pattern="float64 or int64 array",
                     matches=has_array, methods=("copy",), types=array_rule(_pick_copy, "np.copy"))
    add_host(np.dot, "a, b, out=None", dot)
    add_host(np.matmul, "a, b, /, out=None, *, casting='same_kind', order='K', dtype=None, "
             "subok=True, signature=None, axes=None, axis=None", matmul)
    add_host(np.outer, "a, b, out=None", lambda a: ArrayT(dtype_of(a.array("a"),
                                                                   a.array("b")), 2))
    REGISTRY.overload("matmul", "arrays", has_array, _t_matmul, family=LINALG)
    host_operator("matmul", LINALG)
    REGISTRY.overload("getattr", "array: .T and the declared methods", _is_array_attribute,
                      _t_array_attribute, _cg_array_attribute, family=LINALG, numpy_too=True)
    REGISTRY.declare_pullback(R.d_np_dot, "float64 arrays", _pick_d_dot)
    REGISTRY.declare_pullback(M.d_matmul, "float64 arrays", _pick_d_matmul)
    REGISTRY.declare_pullback(R.d_np_matmul, "float64 arrays", _pick_d_matmul)
    REGISTRY.declare_pullback(R.d_np_outer, "float64 1-D arrays", _pick_d_outer)


_declare()
__all__ = ["DOT_IMPLS", "MATMUL_IMPLS", "check_matmul", "method_function", "transpose"]
