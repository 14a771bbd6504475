"""Basic slices of arrays: `a[i:j]`, `a[i:]`, `a[:j]`, `a[::k]`, `a[i:j:k]`, and on
2-D arrays any mix of slices and integers (`m[1:]`, `m[:, j]`, `m[i, 1:]`,
`m[1:, ::2]`), compiled as views that share the array's memory (writes through
them reach the base array, as in numpy).

The lowering turns `a[1:]` into `%s = call(@slice, 1, None)` and `getitem(a, %s)`.
A slice value has type `SliceT` (a tuple of start, stop and step, each int64, bool
or none), natively the struct of its parts.  Bounds follow CPython's
`PySlice_AdjustIndices` (negative bounds count from the end, then clamp; a zero
step raises ValueError).  Also compiled:

  * `a[i:j] = v` for a float64 array and a number, or a 1-D float64 array and a
    1-D array of the slice's length (v is copied first, as it may overlap the
    view; a length-1 v is broadcast, another length raises numpy's ValueError);
  * in adjoint code, `accum_index` / `take_index` / `zero_index` with a slice
    index (the cotangent of a slice is added into, read from or cleared on the
    same view of the receiver's cotangent).
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass

import numpy as np
from llvmlite import ir as L

from jit.codegen.arrays import ZERO, count_loop, field, make_array, shape, stride
from jit.codegen.function import I64, lltype
from jit.library.elementwise import _assign_as1, _assign_as2
from jit.library.python_impls import mark
from jit.library.registry import REGISTRY
from jit.pullback.array_values import (_copy_or_null, _fill_zero, _null, _row, add_into,
                                           ensure_array)
from jit.typing.infer import Call, Context, lower_function
from jit.types import (BOOL, FLOAT64, INT64, NONE, ArrayT, TupleT, Type, is_float_dtype_array,
                       is_numeric)

ONE = L.Constant(I64, 1)
SSIZE_MAX = L.Constant(I64, (1 << 63) - 1)
SSIZE_MIN = L.Constant(I64, -(1 << 63))


@dataclass(frozen=True, repr=False)
class SliceT(TupleT):
    """A `slice(start, stop, step)` value; `elems` are the three parts' types (int64,
    bool or none), `values` the parts themselves when all are known at compile time
    (tuple slicing needs them: jit.library.tuple_slicing).  A tuple natively, but a distinct
    type."""

    values: tuple | None = None

    def __str__(self) -> str:
        return "slice(" + ", ".join(str(e) for e in self.elems) + ")"


def _part_ok(t: Type) -> bool:
    return t in (INT64, BOOL, NONE)


_UNKNOWN = object()


def _static(ctx: Context, op) -> object:
    """The value of a slice part known at compile time (a constant, or a value the
    engine folded, such as `len` of a tuple), else _UNKNOWN."""
    if ctx.is_const(op):
        return ctx.const(op)
    v = ctx.engine.static_value(ctx.typing, op)
    return v if type(v) is int else _UNKNOWN


def _t_slice(ctx: Context, s, ts: list) -> Type:
    if s.kwargs or not 1 <= len(ts) <= 3 or not all(_part_ok(t) for t in ts):
        ctx.fail(f"slice of {', '.join(map(str, ts))} is not compiled (integers or None)")
    parts = [NONE, ts[0], NONE] if len(ts) == 1 else list(ts) + [NONE] * (3 - len(ts))
    ops = list(s.args[1:])
    values = None
    known = [_static(ctx, o) for o in ops]
    if all(k is not _UNKNOWN for k in known):
        values = (None, known[0], None) if len(ops) == 1 else tuple(known) + (None,) * (
            3 - len(ops))
    return SliceT(tuple(parts), values)


def _cg_slice(fc, s, ts):
    ops = list(s.args[1:])
    ops = [None, ops[0], None] if len(ops) == 1 else ops + [None] * (3 - len(ops))
    out = L.Constant(lltype(s.type), L.Undefined)
    for k, (op, t) in enumerate(zip(ops, s.type.elems)):
        v = L.Constant(L.IntType(8), 0) if op is None or t == NONE else fc.get(op, t)
        out = fc.b.insert_value(out, v, k)
    return out


# -- the view ------------------------------------------------------------------------------------
def _part(fc, sl, st: SliceT, k: int, default) -> L.Value:
    t = st.elems[k]
    if t == NONE:
        return default
    return fc.convert(fc.b.extract_value(sl, k), t, INT64)


def _clamp(fc, v, n, neg) -> L.Value:
    """One bound as PySlice_AdjustIndices adjusts it for a sequence of length n."""
    b = fc.b
    lower = b.select(neg, L.Constant(I64, -1), ZERO)
    upper = b.select(neg, b.sub(n, ONE), n)
    wrapped = b.add(v, n)
    low = b.select(b.icmp_signed("<", wrapped, ZERO), lower, wrapped)
    high = b.select(b.icmp_signed(">=", v, n), upper, v)
    return b.select(b.icmp_signed("<", v, ZERO), low, high)


def slice_bounds(fc, sl, st: SliceT, n) -> tuple:
    """(start, step, length) of slice `sl` over an axis of length n."""
    b = fc.b
    step = _part(fc, sl, st, 2, ONE)
    if st.elems[2] != NONE:
        fc.raise_if(b.icmp_signed("==", step, ZERO), ValueError, "slice step cannot be zero")
    neg = b.icmp_signed("<", step, ZERO)
    start = _clamp(fc, _part(fc, sl, st, 0, b.select(neg, SSIZE_MAX, ZERO)), n, neg)
    stop = _clamp(fc, _part(fc, sl, st, 1, b.select(neg, SSIZE_MIN, SSIZE_MAX)), n, neg)
    up = b.add(b.sdiv(b.sub(b.sub(stop, start), ONE), step), ONE)
    down = b.add(b.sdiv(b.sub(b.sub(start, stop), ONE), b.neg(step)), ONE)
    length = b.select(neg, b.select(b.icmp_signed("<", stop, start), down, ZERO),
                      b.select(b.icmp_signed("<", start, stop), up, ZERO))
    return start, step, length


def index_view(fc, arr, at: ArrayT, ops: list, types: list) -> L.Value:
    """The view arr[ops...] for basic indices (integers and slices, at least one
    slice) sharing arr's memory: an integer drops its axis, a slice keeps it."""
    from jit.codegen.arrays import checked_index
    b = fc.b
    offset, shapes, strides = ZERO, [], []
    for axis, (op, t) in enumerate(zip(ops, types)):
        n, st = shape(fc, arr, axis), stride(fc, arr, axis)
        if isinstance(t, SliceT):
            start, step, length = slice_bounds(fc, op, t, n)
            shapes.append(length)
            strides.append(b.mul(st, step))
        else:
            start = checked_index(fc, fc.convert(op, t, INT64), n, axis)
        offset = b.add(offset, b.mul(start, st))
    for axis in range(len(ops), at.ndim):
        shapes.append(shape(fc, arr, axis))
        strides.append(stride(fc, arr, axis))
    data = b.gep(field(fc, arr, 0), [offset], source_etype=L.IntType(8))
    return make_array(fc, data, shapes, strides)


def basic_index(x: Type, ts: list) -> int:
    """The number of dimensions of x[ts...] when the indices are integers and slices
    with at least one slice (a view), else -1 (not ours)."""
    if not isinstance(x, ArrayT) or not any(isinstance(t, SliceT) for t in ts):
        return -1
    if len(ts) > x.ndim or not all(isinstance(t, SliceT) or t in (INT64, BOOL) for t in ts):
        return -1
    return x.ndim - sum(1 for t in ts if not isinstance(t, SliceT))


def view_of(fc, arr_operand, at: ArrayT, idx_operands: list, arr=None) -> L.Value:
    """index_view of IR operands (`arr` overrides the array's value)."""
    arr = fc.get(arr_operand) if arr is None else arr
    return index_view(fc, arr, at, [fc.get(o) for o in idx_operands],
                      [fc.type_of(o) for o in idx_operands])


# -- getitem / setitem ---------------------------------------------------------------------------
FITS1 = "could not broadcast input array from shape ({1},) into shape ({0},)"


def check_fits1(n: int, n2: int) -> None:
    """numpy's ValueError for `a[i:j] = v` of another length (compiled natively)."""
    if n != n2:
        raise ValueError(FITS1.format(n, n2))


def _store_aa1(a, v):
    """a[:] = v through a view; v is copied first, since it may overlap a (a
    length-1 v is broadcast)."""
    n = a.shape[0]
    if v.shape[0] == 1:
        x = v[0]
        for i in range(n):
            a[i] = x
        return
    check_fits1(n, v.shape[0])
    w = np.empty(n)
    for i in range(n):
        w[i] = v[i]
    for i in range(n):
        a[i] = w[i]


mark(_store_aa1)
# `m[i:j] = v` of two 2-D arrays stays refused: numpy's error message for it needs four
# numbers, and a native error record holds three.
_ASSIGN = {("aa", 1): _store_aa1, ("as", 1): _assign_as1, ("as", 2): _assign_as2}


def _t_fits(ctx: Context, s, ts: list) -> Type:
    if not all(t == INT64 for t in ts):
        ctx.fail(f"bad operands {ts} of a shape check")
    return NONE


def _cg_fits(template: str):
    def cg(fc, s, ts):
        n, n2 = (fc.get(a, INT64) for a in s.args[1:])
        fc.raise_if(fc.b.icmp_signed("!=", n, n2), ValueError, template, (n, n2))
        return L.Constant(L.IntType(8), 0)
    return cg


def _is_view_get(ctx, s, ts) -> bool:
    return basic_index(ts[0], ts[1:]) >= 0


def _is_view_set(ctx, s, ts) -> bool:
    return basic_index(ts[0], ts[2:]) >= 0


def _t_get(ctx: Context, s, ts):
    return ArrayT(ts[0].dtype, basic_index(ts[0], ts[1:]))


def _cg_get(fc, s, ts):
    return view_of(fc, s.args[0], ts[0], s.args[1:])


def _t_set(ctx: Context, s, ts):
    nd = basic_index(ts[0], ts[2:])
    a, v = ts[0], ts[1]
    kind = "aa" if isinstance(v, ArrayT) and v.ndim == nd else \
        "as" if is_numeric(v) else None
    if not is_float_dtype_array(a) or (kind, nd) not in _ASSIGN:
        ctx.fail(f"assigning {v} to a view of {a} is not compiled")
    view_t = ArrayT(a.dtype, nd)
    target = ctx.engine.infer(lower_function(_ASSIGN[(kind, nd)]), (view_t, v))
    ctx.typing.calls[s.var] = Call(target, [s.args[1]], _ASSIGN[(kind, nd)])
    ctx.typing.writes = True
    return NONE


def _cg_set(fc, s, ts):
    view = view_of(fc, s.args[0], ts[0], s.args[2:])
    call = fc.typing.calls[s.var]
    fc.call_user(call.target, call.operands, [view])
    return L.Constant(L.IntType(8), 0)


# -- cotangents: accum_index / take_index / zero_index with slices -------------------------------
def add_view(fc, view, dy, nd: int, dtype=FLOAT64) -> None:
    """view += dy for a 1-D or 2-D view of float `dtype` (a NULL dy adds nothing)."""
    if nd == 1:
        add_into(fc, view, dy, dtype)
        return
    b = fc.b
    bad = b.and_(b.not_(_null(fc, dy)), b.icmp_signed("!=", shape(fc, view, 0), shape(fc, dy, 0)))
    fc.raise_if(bad, ValueError, "cotangent shapes differ ({0} and {1})",
                (shape(fc, view, 0), shape(fc, dy, 0)))
    with b.if_then(b.not_(_null(fc, dy))):
        count_loop(fc, shape(fc, view, 0),
                   lambda i: add_into(fc, _row(fc, view, i), _row(fc, dy, i), dtype))


def _is_view_acc(ctx, s, ts) -> bool:
    return basic_index(ts[2], ts[3:]) >= 0


def _is_float_view(ctx, s, ts) -> bool:
    return basic_index(ts[0], ts[1:]) >= 0 and is_float_dtype_array(ts[0])


def _t_acc(ctx: Context, s, ts):
    nd = basic_index(ts[2], ts[3:])
    acc, dy, x = ts[0], ts[1], ts[2]
    if not is_float_dtype_array(x) or acc not in (NONE, x) or dy not in (
            NONE, ArrayT(x.dtype, nd)):
        ctx.fail(f"accum_index of a {dy} into a view of a {x} cotangent")
    return x


def _cg_acc(fc, s, ts):
    nd = basic_index(ts[2], ts[3:])
    acc = ensure_array(fc, fc.get(s.args[0]), ts[0], fc.get(s.args[2]), ts[2])
    if ts[1] != NONE:
        add_view(fc, view_of(fc, None, ts[2], s.args[3:], arr=acc), fc.get(s.args[1]), nd,
                 ts[2].dtype)
    return acc


def _t_take(ctx: Context, s, ts):
    return ArrayT(ts[0].dtype, basic_index(ts[0], ts[1:]))


def _cg_take(fc, s, ts):
    b, acc = fc.b, fc.get(s.args[0])
    res = fc.alloca(lltype(s.type))
    b.store(acc, res)
    with b.if_then(b.not_(_null(fc, acc))):
        view = view_of(fc, None, ts[0], s.args[1:], arr=acc)
        b.store(_copy_or_null(fc, view, s.type), res)
    return b.load(res, typ=lltype(s.type))


def _t_zero(ctx: Context, s, ts):
    return ts[0]


def _cg_zero(fc, s, ts):
    nd = basic_index(ts[0], ts[1:])
    acc = fc.get(s.args[0])
    with fc.b.if_then(fc.b.not_(_null(fc, acc))):
        view = view_of(fc, None, ts[0], s.args[1:], arr=acc)
        _fill_zero(fc, view, ArrayT(ts[0].dtype, nd))
    return acc


def _declare() -> None:
    SHAPE = "shape and slicing"
    REGISTRY.declare(builtins.slice, family=SHAPE, pattern="ints or None", types=_t_slice,
                     lower=_cg_slice, gpu={"cuda": "inline"})
    REGISTRY.declare(check_fits1, family="runtime checks", pattern="int, int", types=_t_fits,
                     lower=_cg_fits(FITS1), gpu={"cuda": "inline"})
    o = REGISTRY.overload
    o("getitem", "array by basic indices (a view)", _is_view_get, _t_get, _cg_get, SHAPE)
    o("setitem", "a view of a float64 array", _is_view_set, _t_set, _cg_set, SHAPE)
    o("accum_index", "into a view of a float64 array", _is_view_acc, _t_acc, _cg_acc, SHAPE)
    o("take_index", "a view of a float64 cotangent", _is_float_view, _t_take, _cg_take, SHAPE)
    o("zero_index", "a view of a float64 cotangent", _is_float_view, _t_zero, _cg_zero, SHAPE)


_declare()
__all__ = ["SliceT", "basic_index", "index_view", "slice_bounds"]
