"""Shape functions of float64 arrays compiled natively: `np.reshape(a, shape)` and
`a.reshape(shape)` between 1-D and 2-D shapes (one `-1` inferred), `np.ravel(a)` /
`a.ravel()`, and their pullbacks (the cotangent reshaped back).

As numpy does, a C-contiguous operand is reshaped as a view of the same memory
(`view_as`: new shape and strides over the same data), any other operand is copied
first; a size that does not fit raises numpy's ValueError.  Only C order: `order=`
stays refused.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as L

from jit.codegen.arrays import field, make_array
from jit.codegen.function import I64
from jit.library.array_calls import _copy1, _copy2
from jit.library.python_impls import NAMESPACE, impl_call, is_float_array, make, mark
from jit.library.numpy_calls import add_host, reshape, reshaped
from jit.library.registry import REGISTRY
from jit.typing.infer import Context
from jit.types import FLOAT64, INT64, NONE, ArrayT, TupleT, Type, is_int_like

FAMILY = "shape functions"


def view_as(a, n, m):
    """The memory of C-contiguous `a` as an (n, m) array (`m` < 0: as (n,)); compiled
    natively (a new shape and strides over the same data)."""
    raise TypeError("jit.library.shapes.view_as runs only in compiled code")


def _cg_view_as(fc, s, ts):
    data = field(fc, fc.get(s.args[1]), 0)
    n, m = fc.get(s.args[2], INT64), fc.get(s.args[3], INT64)
    eight = L.Constant(I64, 8)
    if s.type.ndim == 1:
        return make_array(fc, data, [n], [eight])
    return make_array(fc, data, [n, m], [fc.b.mul(m, eight), eight])


def _t_view_as(ctx: Context, s, ts) -> Type:
    m = ctx.const(s.args[3])
    return ArrayT(FLOAT64, 1 if isinstance(m, int) and m < 0 else 2)


RESHAPE_MESSAGE = "cannot reshape array of size {0} into shape ({1}, {2})"


def cannot_reshape(size: int, n: int, m: int) -> None:
    """numpy's ValueError for a size that does not fit the requested shape (compiled
    natively: an error record with the three numbers)."""
    raise ValueError(RESHAPE_MESSAGE.format(size, n, m))


def _cg_cannot_reshape(fc, s, ts):
    details = tuple(fc.get(a, INT64) for a in s.args[1:4])
    fc.raise_if(L.Constant(L.IntType(1), 1), ValueError, RESHAPE_MESSAGE, details)
    return L.Constant(L.IntType(8), 0)


def _contiguous1(a):
    return a.shape[0] <= 1 or a.strides[0] == 8


def _contiguous2(a):
    n, m = a.shape
    return n * m == 0 or ((m <= 1 or a.strides[1] == 8) and (n <= 1 or a.strides[0] == 8 * m))


def _resolve(size, n, m):
    """(n, m) with one -1 inferred from `size`, as numpy's reshape does."""
    if n == -1 and m > 0 and size % m == 0:
        return size // m, m
    if m == -1 and n > 0 and size % n == 0:
        return n, size // n
    if n * m != size or n < 0 or m < 0:
        cannot_reshape(size, n, m)
    return n, m


def _reshape1_2(a, shape):
    """A 1-D array as the 2-D `shape`."""
    n, m = _resolve(a.shape[0], shape[0], shape[1])
    c = a if _contiguous1(a) else _copy1(a)
    return view_as(c, n, m)


def _reshape2_2(a, shape):
    p, q = a.shape
    n, m = _resolve(p * q, shape[0], shape[1])
    c = a if _contiguous2(a) else _copy2(a)
    return view_as(c, n, m)


def _line_length(size, n):
    if n != -1 and n != size:
        cannot_reshape(size, n, 1)
    return size


def _reshape2_1(a, n):
    """A 2-D array as 1-D (n, or -1)."""
    p, q = a.shape
    c = a if _contiguous2(a) else _copy2(a)
    return view_as(c, _line_length(p * q, n), -1)


def _reshape1_1(a, n):
    c = a if _contiguous1(a) else _copy1(a)
    return view_as(c, _line_length(a.shape[0], n), -1)


def _ravel1(a):
    return _reshape1_1(a, -1)


def _ravel2(a):
    return _reshape2_1(a, -1)


def _flatten1(a):
    """`a.flatten()`: a copy, never a view."""
    return _copy1(a)


def _flatten2(a):
    return _copy1(_reshape2_1(a, -1))


def _d_reshape_1_1(dy, x, shape):
    """d_np_reshape: the cotangent reshaped back to x's shape (dy's rank, x's rank)."""
    return _reshape1_1(dy, x.shape[0])


def _d_reshape_2_1(dy, x, shape):
    return _reshape2_1(dy, x.shape[0])


def _d_reshape_1_2(dy, x, shape):
    return _reshape1_2(dy, x.shape)


def _d_reshape_2_2(dy, x, shape):
    return _reshape2_2(dy, x.shape)


def _d_ravel1(dy, x):
    return dy


def _d_ravel2(dy, x):
    return _reshape1_2(dy, x.shape)


mark(_contiguous1, _contiguous2, _resolve, _reshape1_2, _reshape2_2, _line_length, _reshape2_1,
     _reshape1_1, _ravel1, _ravel2, _d_reshape_1_1, _d_reshape_2_1, _d_reshape_1_2,
     _d_reshape_2_2, _d_ravel1, _d_ravel2, _flatten1, _flatten2)
_D_RESHAPE = {(1, 1): _d_reshape_1_1, (2, 1): _d_reshape_2_1, (1, 2): _d_reshape_1_2,
              (2, 2): _d_reshape_2_2}


def _method_version(fn):
    """`fn(dy, x, shape)` as the pullback of the method's call (dy, x, shape, m)."""
    name = fn.__name__ + "_m"
    src = f"def {name}(dy, x, shape, m):\n    return {fn.__name__}(dy, x, shape)\n"
    NAMESPACE[fn.__name__] = fn
    return make(src, name)


_D_RESHAPE_METHOD = {k: _method_version(f) for k, f in _D_RESHAPE.items()}


def _reshape_ints1(a, n, m):
    """`a.reshape(n, m)` (the method's two-int form) of a 1-D array."""
    return _reshape1_2(a, (n, m))


def _reshape_ints2(a, n, m):
    return _reshape2_2(a, (n, m))


def _reshape_one1(a, shape):
    """`np.reshape(a, (n,))` of a 1-D array."""
    return _reshape1_1(a, shape[0])


def _reshape_one2(a, shape):
    return _reshape2_1(a, shape[0])


mark(_reshape_ints1, _reshape_ints2, _reshape_one1, _reshape_one2)
# (rank of a, form of the shape operands) -> implementation
_IMPLS = {(1, "n"): _reshape1_1, (2, "n"): _reshape2_1, (1, "(n,)"): _reshape_one1,
          (2, "(n,)"): _reshape_one2, (1, "(n, m)"): _reshape1_2, (2, "(n, m)"): _reshape2_2,
          (1, "n, m"): _reshape_ints1, (2, "n, m"): _reshape_ints2}


def _shape_form(ts: list):
    """The form of reshape's shape operands: an int, a 1- or 2-tuple of ints, or two
    ints (the method's `a.reshape(n, m)`; its `a.reshape(shape)` passes None second)."""
    if len(ts) == 2 and ts[1] == NONE:
        ts = ts[:1]
    if len(ts) == 2 and all(map(is_int_like, ts)):
        return "n, m"
    if len(ts) != 1:
        return None
    if is_int_like(ts[0]):
        return "n"
    if isinstance(ts[0], TupleT) and len(ts[0].elems) in (1, 2) \
            and all(map(is_int_like, ts[0].elems)):
        return "(n,)" if len(ts[0].elems) == 1 else "(n, m)"
    return None


def _t_reshape(ctx: Context, s, ts: list) -> Type:
    form = _shape_form(ts[1:])
    if s.kwargs or not ts or not is_float_array(ts[0]) or form is None:
        ctx.fail(f"np.reshape of {', '.join(map(str, ts))}"
                 f"{' with keywords' if s.kwargs else ''} is not compiled (float64 arrays, "
                 "1-D or 2-D shapes, C order)")
    operands = list(s.args[1:3]) if form != "n, m" else list(s.args[1:4])
    return impl_call(ctx, s, _IMPLS[(ts[0].ndim, form)], operands)


def _t_ravel(ctx: Context, s, ts: list) -> Type:
    if len(ts) != 1 or s.kwargs or not is_float_array(ts[0]):
        ctx.fail(f"np.ravel of {', '.join(map(str, ts))} is not compiled")
    return impl_call(ctx, s, _ravel1 if ts[0].ndim == 1 else _ravel2, [s.args[1]])


def _t_flatten(ctx: Context, s, ts: list) -> Type:
    if len(ts) != 1 or s.kwargs or not is_float_array(ts[0]) or ts[0].ndim > 2:
        ctx.fail(f"a.flatten() of {', '.join(map(str, ts))} is not compiled (of a float64 "
                 "array of one or two dimensions is)")
    return impl_call(ctx, s, _flatten1 if ts[0].ndim == 1 else _flatten2, [s.args[1]])


def _pick_d_reshape(argtypes):
    if len(argtypes) not in (3, 4) or not is_float_array(argtypes[0]) \
            or not is_float_array(argtypes[1]):
        return None
    impl = _D_RESHAPE[(argtypes[0].ndim, argtypes[1].ndim)]
    return impl if len(argtypes) == 3 else _D_RESHAPE_METHOD[(argtypes[0].ndim, argtypes[1].ndim)]


def _is_flat_reshape(ctx, s, ts) -> bool:
    """Pattern: a reshape between 1-D and 2-D (3 or more: `jit.library.reshape_nd`)."""
    shape = ts[1] if len(ts) > 1 else None
    return bool(ts) and isinstance(ts[0], ArrayT) and ts[0].ndim <= 2 \
        and not (isinstance(shape, TupleT) and len(shape.elems) > 2)


def _pick_d_ravel(argtypes):
    if len(argtypes) != 2 or not all(is_float_array(t) for t in argtypes):
        return None
    return _d_ravel1 if argtypes[1].ndim == 1 else _d_ravel2


def _is_view_call(ctx, s, ts) -> bool:
    return len(ts) == 3 and is_float_array(ts[0])


# -- np.roll of a 1-D float64 array: two contiguous copies ------------------------------------
def _roll1(a, shift):
    n = a.shape[0]
    out = np.empty(n)
    if n == 0:
        return out
    k = shift % n
    for i in range(n - k):
        out[i + k] = a[i]
    for i in range(k):
        out[i] = a[n - k + i]
    return out


def _d_roll1(dy, a, shift, axis=None):
    return _roll1(dy, -shift), None, None


mark(_roll1, _d_roll1)


def _is_roll1(ctx: Context, s, ts: list) -> bool:
    """Pattern: np.roll(a, k) or np.roll(a, k, 0) of a 1-D float64 array, k an int."""
    axis = s.kwargs.get("axis", s.args[3] if len(s.args) > 3 else None)
    return len(ts) in (2, 3) and is_float_array(ts[0]) and ts[0].ndim == 1 \
        and is_int_like(ts[1]) and set(s.kwargs) <= {"axis"} \
        and (axis is None or ctx.const(axis, "?") in (None, 0, -1))


def _t_roll1(ctx: Context, s, ts: list) -> Type:
    return impl_call(ctx, s, _roll1, [s.args[1], s.args[2]])


def _pick_d_roll(argtypes: list):
    ok = len(argtypes) >= 3 and is_float_array(argtypes[1]) and argtypes[1].ndim == 1 \
        and is_float_array(argtypes[0]) and is_int_like(argtypes[2])
    return _d_roll1 if ok and all(t in (NONE, INT64) for t in argtypes[3:]) else None


def _declare() -> None:
    from adjoint import rules_numpy as R
    from adjoint import rules_shapes as S
    REGISTRY.declare(view_as, family=FAMILY, pattern="contiguous float64 array, int, int",
                     matches=_is_view_call, types=_t_view_as, lower=_cg_view_as,
                     gpu={"cuda": "inline"})
    REGISTRY.declare(cannot_reshape, family="runtime checks", pattern="int, int, int",
                     types=lambda ctx, s, ts: NONE, lower=_cg_cannot_reshape,
                     gpu={"cuda": "inline"})
    REGISTRY.declare(np.reshape, family=FAMILY, pattern="float64 array, 1-D or 2-D shape",
                     matches=_is_flat_reshape,
                     methods=("reshape(shape, m=None) -> shape, m",),
                     types=_t_reshape)
    REGISTRY.declare(np.ravel, family=FAMILY, pattern="float64 array",
                     matches=lambda ctx, s, ts: bool(ts) and isinstance(ts[0], ArrayT),
                     methods=("ravel",), types=_t_ravel)
    REGISTRY.declare(np.ndarray.flatten, family=FAMILY, pattern="float64 array, 1-D or 2-D",
                     methods=("flatten",), types=_t_flatten, name="ndarray.flatten")
    add_host(np.reshape, "a, shape, m=None", reshaped, via=reshape)
    REGISTRY.add(REGISTRY.get(np.roll), "float64 1-D array, int shift", _is_roll1, _t_roll1)
    REGISTRY.declare_pullback(S.d_np_roll, "float64 1-D array, int shift", _pick_d_roll)
    add_host(np.ravel, "a, order='C'", lambda a: ArrayT(a.array("a").dtype, 1))
    REGISTRY.declare_pullback(R.d_np_reshape, "float64 arrays, 1-D or 2-D", _pick_d_reshape)
    REGISTRY.declare_pullback(S.d_np_ravel, "float64 arrays, 1-D or 2-D", _pick_d_ravel)


_declare()
