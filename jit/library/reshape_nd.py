"""Reshapes of float64 arrays where either side has 3 or more dimensions, compiled
natively, and `np.expand_dims` as a view.

`reshape_impl(r, k)` is the plain-Python implementation of reshaping an r-D array into a
k-D shape (a k-tuple of ints, one `-1` inferred as numpy does).  It is generated once per
pair of ranks: a C-contiguous operand becomes a view of the same memory (`view_shape`: the
new shape with C strides over the same data), any other operand is copied first, as numpy
does; a shape that does not fit raises numpy's ValueError.  The pullback of a reshape is
the cotangent reshaped back to the operand's shape, by the same implementation.

`np.expand_dims(a, axis)` with a constant int axis inserts an axis of length one into the
shape and strides (`with_axis`, any strides); its pullback reshapes the cotangent back to
the operand's shape.  The 1-D and 2-D reshapes stay in `jit.library.shapes`.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as L

from jit.codegen.arrays import field, make_array, shape, stride
from jit.codegen.function import I64
from jit.library.python_impls import NAMESPACE, impl_call, is_float_array, make
from jit.library.registry import REGISTRY
from jit.types import FLOAT64, INT64, MAX_NDIM, NONE, ArrayT, TupleT, Type, is_int_like
from jit.typing.infer import Context
from ssair import Const

FAMILY = "shape functions"


def view_shape(a, dims):
    """The memory of C-contiguous `a` as an array of shape `dims` (a tuple of ints whose
    product is a's size); compiled natively (C strides over the same data)."""
    raise TypeError("jit.library.reshape_nd.view_shape runs only in compiled code")


def _cg_view_shape(fc, s, ts):
    k = s.type.ndim
    dims = fc.get(s.args[2], TupleT((INT64,) * k))
    sizes = [fc.b.extract_value(dims, i) for i in range(k)]
    strides = [L.Constant(I64, 8)]
    for n in reversed(sizes[1:]):
        strides.insert(0, fc.b.mul(strides[0], n))
    return make_array(fc, field(fc, fc.get(s.args[1]), 0), sizes, strides)


def _t_view_shape(ctx: Context, s, ts) -> Type:
    return ArrayT(FLOAT64, len(ts[1].elems))


def _is_view_shape(ctx, s, ts) -> bool:
    return len(ts) == 2 and is_float_array(ts[0]) and isinstance(ts[1], TupleT) \
        and 1 <= len(ts[1].elems) <= MAX_NDIM and all(map(is_int_like, ts[1].elems))


def cannot_reshape_to(size, dims):
    """numpy's ValueError for a size that does not fit the requested shape."""
    raise ValueError(f"cannot reshape array of size {size} into shape {tuple(dims)}")


def _cg_cannot_reshape_to(fc, s, ts):
    k = len(ts[1].elems)
    dims = fc.get(s.args[2], TupleT((INT64,) * k))
    # (an error record holds three numbers: the size, the rank and the first size)
    details = (fc.get(s.args[1], INT64), L.Constant(I64, k), fc.b.extract_value(dims, 0))
    template = "cannot reshape array of size {0} into the requested {1}-D shape ({2}, ...)"
    fc.raise_if(L.Constant(L.IntType(1), 1), ValueError, template, details)
    return L.Constant(L.IntType(8), 0)


def _names(prefix: str, k: int) -> list:
    return [f"{prefix}{i}" for i in range(k)]


def _contiguous_source(r: int) -> str:
    """`_contiguous_r(a)`: is r-D `a` C-contiguous (numpy's rule: axes of length one and
    empty arrays do not count)?"""
    lines = [f"def _contiguous_{r}(a):", "    want = 8", "    ok = True"]
    for i in reversed(range(r)):
        lines += [f"    if a.shape[{i}] != 1 and a.strides[{i}] != want:", "        ok = False",
                  f"    want = want * a.shape[{i}]"]
    lines += ["    return ok or want == 0"]
    return "\n".join(lines) + "\n"


def _copy_source(r: int) -> str:
    """`_copy_r(a)`: a C-contiguous copy of r-D `a`."""
    n, ix = _names("n", r), _names("i", r)
    lines = [f"def _copy_{r}(a):", f"    {', '.join(n)}, = a.shape",
             f"    out = np.empty(({', '.join(n)},))"]
    for d in range(r):
        lines.append("    " * (d + 1) + f"for {ix[d]} in range({n[d]}):")
    lines.append("    " * (r + 1) + f"out[{', '.join(ix)}] = a[{', '.join(ix)}]")
    lines.append("    return out")
    return "\n".join(lines) + "\n"


def _reshape_source(r: int, k: int) -> str:
    """`_reshape_r_k(a, shape)`: r-D `a` as the k-D `shape`, one -1 inferred."""
    n, s = _names("n", r), _names("s", k)
    lines = [f"def _reshape_{r}_{k}(a, shape):",
             f"    c = a if _contiguous_{r}(a) else _copy_{r}(a)",
             f"    {', '.join(n)}, = a.shape", f"    size = {' * '.join(n)}",
             f"    {', '.join(s)}, = shape", "    known = 1", "    unknown = 0"]
    for x in s:
        lines += [f"    if {x} == -1:", "        unknown += 1", "    else:",
                  f"        known = known * {x}"]
    lines += ["    if unknown == 1 and known > 0 and size % known == 0:"]
    lines += [f"        if {x} == -1:\n            {x} = size // known" for x in s]
    bad = " or ".join(f"{x} < 0" for x in s)
    lines += [f"    if {bad} or {' * '.join(s)} != size:",
              f"        cannot_reshape_to(size, ({', '.join(s)},))",
              f"    return view_shape(c, ({', '.join(s)},))"]
    return "\n".join(lines) + "\n"


def _d_reshape_source(r: int, k: int, method: bool) -> str:
    """The pullback of reshaping an r-D array to k-D: the k-D cotangent back to r-D."""
    name = f"_d_reshape_{k}_{r}" + ("_m" if method else "")
    extra = ", m" if method else ""
    return (f"def {name}(dy, x, shape{extra}):\n"
            f"    return _reshape_{k}_{r}(dy, x.shape)\n")


_MADE: dict = {}


def _made(name: str, source) -> object:
    """The generated implementation `name` (made from `source()` on first use)."""
    fn = _MADE.get(name)
    if fn is None:
        fn = _MADE[name] = make(source(), name)
    return fn


def reshape_impl(r: int, k: int):
    """The implementation of reshaping an r-D float64 array to a k-tuple shape."""
    _made(f"_contiguous_{r}", lambda: _contiguous_source(r))
    _made(f"_copy_{r}", lambda: _copy_source(r))
    return _made(f"_reshape_{r}_{k}", lambda: _reshape_source(r, k))


def d_reshape_impl(dy_rank: int, x_rank: int, method: bool):
    """The pullback of a reshape of an x_rank-D operand to a dy_rank-D result."""
    reshape_impl(dy_rank, x_rank)
    name = f"_d_reshape_{dy_rank}_{x_rank}" + ("_m" if method else "")
    return _made(name, lambda: _d_reshape_source(x_rank, dy_rank, method))


def is_nd_reshape(a: Type, shape: Type) -> bool:
    """Is this a reshape of a float64 array to a tuple shape with a side of 3+ dims?"""
    return is_float_array(a) and isinstance(shape, TupleT) \
        and 1 <= len(shape.elems) <= MAX_NDIM and all(map(is_int_like, shape.elems)) \
        and max(a.ndim, len(shape.elems)) > 2


def t_reshape_nd(ctx: Context, s, ts: list) -> Type:
    """Type `np.reshape(a, shape)` / `a.reshape(shape)` (is_nd_reshape holds)."""
    return impl_call(ctx, s, reshape_impl(ts[0].ndim, len(ts[1].elems)),
                     [s.args[1], s.args[2]])


# -- np.expand_dims: a view with one more axis ---------------------------------------------

def with_axis(a, axis):
    """`a` with an axis of length one inserted at `axis` (0 <= axis <= a.ndim); compiled
    natively (a view)."""
    raise TypeError("jit.library.reshape_nd.with_axis runs only in compiled code")


def _axes(fc, arr, t: ArrayT) -> tuple:
    return ([shape(fc, arr, i) for i in range(t.ndim)],
            [stride(fc, arr, i) for i in range(t.ndim)])


def _cg_with_axis(fc, s, ts):
    arr, axis = fc.get(s.args[1]), _const_axis(fc, s, ts[0].ndim + 1)
    sizes, strides = _axes(fc, arr, ts[0])
    sizes.insert(axis, L.Constant(I64, 1))
    strides.insert(axis, L.Constant(I64, 8))
    return make_array(fc, field(fc, arr, 0), sizes, strides)


def _const_axis(fc, s, ndim: int) -> int:
    """The constant axis operand of `s` (a literal, or a value of a literal type),
    normalised to 0..ndim-1."""
    a = s.args[2]
    return (a.value if isinstance(a, Const) else fc.type_of(a).value) % ndim


def _axis_of(ctx, s, ts, ndim: int):
    """The constant axis of `s` normalised to 0..ndim-1, or None."""
    if len(ts) != 2 or s.kwargs or not is_float_array(ts[0]) or not is_int_like(ts[1]):
        return None
    axis = ctx.const(s.args[2], None)
    if not isinstance(axis, int) or isinstance(axis, bool) or not -ndim <= axis < ndim:
        return None
    return axis % ndim


def _is_with_axis(ctx, s, ts) -> bool:
    return bool(ts) and isinstance(ts[0], ArrayT) and ts[0].ndim < MAX_NDIM \
        and _axis_of(ctx, s, ts, ts[0].ndim + 1) is not None


def _t_with_axis(ctx, s, ts) -> Type:
    return ArrayT(FLOAT64, ts[0].ndim + 1)


def _expand_source(r: int, axis: int) -> str:
    return (f"def _expand_{r}_{axis}(a, axis):\n"
            f"    return with_axis(a, {axis})\n")


def expand_impl(r: int, axis: int):
    """np.expand_dims of an r-D array at normalised `axis`."""
    return _made(f"_expand_{r}_{axis}", lambda: _expand_source(r, axis))


def _t_expand_dims(ctx: Context, s, ts: list) -> Type:
    axis = _axis_of(ctx, s, ts, ts[0].ndim + 1) if ts and is_float_array(ts[0]) else None
    if axis is None or ts[0].ndim >= MAX_NDIM:
        ctx.fail(f"np.expand_dims of {', '.join(map(str, ts))} is not compiled (a float64 "
                 "array and one constant int axis)")
    return impl_call(ctx, s, expand_impl(ts[0].ndim, axis), [s.args[1], s.args[2]])


def _nd_operands(ts: list) -> list:
    """reshape's operand types without the method form's trailing None."""
    return ts[:2] if len(ts) == 3 and ts[2] == NONE else ts


def is_nd_reshape_call(ctx, s, ts) -> bool:
    """Pattern: np.reshape(a, shape) / a.reshape(shape) with a side of 3+ dims."""
    ts = _nd_operands(ts)
    return not s.kwargs and len(ts) == 2 and is_nd_reshape(ts[0], ts[1])


def _pick_d_reshape(argtypes: list):
    """d_np_reshape's JIT version for (dy, x, shape[, None]) with a side of 3+ dims."""
    if len(argtypes) not in (3, 4) or not is_float_array(argtypes[0]) \
            or not is_float_array(argtypes[1]) or max(argtypes[0].ndim, argtypes[1].ndim) <= 2:
        return None
    return d_reshape_impl(argtypes[0].ndim, argtypes[1].ndim, len(argtypes) == 4)


def _pick_d_expand_dims(argtypes: list):
    """d_np_expand_dims's JIT version: the cotangent reshaped to the operand's shape."""
    if len(argtypes) != 3 or not is_float_array(argtypes[0]) \
            or not is_float_array(argtypes[1]) or argtypes[0].ndim != argtypes[1].ndim + 1:
        return None
    r, k = argtypes[1].ndim, argtypes[0].ndim
    reshape_impl(k, r)
    return _made(f"_d_expand_{r}", lambda: (f"def _d_expand_{r}(dy, x, axis):\n"
                                            f"    return _reshape_{k}_{r}(dy, x.shape), None\n"))


def _declare() -> None:
    from adjoint import rules_numpy as R
    from jit.library import numpy_calls, shapes  # noqa: F401  (their entries come first)
    NAMESPACE.update(view_shape=view_shape, cannot_reshape_to=cannot_reshape_to,
                     with_axis=with_axis)
    wide = {"ndim_max": MAX_NDIM}
    REGISTRY.declare(view_shape, family=FAMILY, pattern="contiguous float64 array, int tuple",
                     matches=_is_view_shape, types=_t_view_shape, lower=_cg_view_shape,
                     gpu={"cuda": "inline"}, **wide)
    REGISTRY.declare(cannot_reshape_to, family="runtime checks", pattern="int, int tuple",
                     types=lambda ctx, s, ts: NONE, lower=_cg_cannot_reshape_to,
                     gpu={"cuda": "inline"})
    REGISTRY.declare(with_axis, family=FAMILY, pattern="float64 array, constant int",
                     matches=_is_with_axis, types=_t_with_axis, lower=_cg_with_axis,
                     gpu={"cuda": "inline"}, **wide)
    REGISTRY.add(REGISTRY.get(np.reshape), "float64 array, a side of 3 or more dims",
                 is_nd_reshape_call, t_reshape_nd, **wide)
    REGISTRY.add(REGISTRY.get(np.expand_dims), "float64 array, constant int axis",
                 _is_expand_call, _t_expand_dims, **wide)
    REGISTRY.declare_pullback(R.d_np_reshape, "float64 arrays, a side of 3 or more dims",
                              _pick_d_reshape, **wide)
    REGISTRY.declare_pullback(R.d_np_expand_dims, "float64 arrays", _pick_d_expand_dims,
                              **wide)


def _is_expand_call(ctx, s, ts) -> bool:
    return bool(ts) and is_float_array(ts[0]) and ts[0].ndim < MAX_NDIM \
        and _axis_of(ctx, s, ts, ts[0].ndim + 1) is not None


_declare()
