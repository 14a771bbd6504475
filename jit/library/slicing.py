"""Basic indexing of arrays, compiled as views that share the array's memory (writes
through them reach the base array, as in numpy): any mix of slices with any step,
integers, `None` (`np.newaxis`), one `...` and lone booleans, over arrays of any rank
(`x[:, None]`, `X[:, None, :] - X[None, :, :]`, `t[..., 0]`, `m[::-1, 1::2]`).  numpy's
reading of the index is `jit.library.index_plans`.

The lowering turns `a[1:]` into `%s = call(@slice, 1, None)` and `getitem(a, %s)`.
A slice value has type `SliceT` (a tuple of start, stop and step, each int64, bool
or none), natively the struct of its parts.  Bounds follow CPython's
`PySlice_AdjustIndices` (negative bounds count from the end, then clamp; a zero
step raises ValueError).  Also compiled:

  * `a[idx] = v` of a number or an array, broadcast into the view as numpy does (v
    is copied first, as it may overlap the view; a mismatch raises ValueError);
  * in adjoint code, `accum_index` / `take_index` / `zero_index` with such an index
    (the cotangent of a view is added into, read from or cleared on the same view of
    the receiver's cotangent).

A view without dimensions (`v[..., 0]` of a vector: numpy's 0-d array) is the
element itself.
"""
from __future__ import annotations

import builtins

from llvmlite import ir as L

from jit.codegen.arrays import ZERO, field, load_element, make_array, shape, store_element, stride
from jit.codegen.function import I64, lltype, memory_type, zero_of
from jit.library.elementwise import is_assign_all
from jit.library.index_plans import IndexPlan, IndexRefused, SliceT, index_parts, plan_index
from jit.library.registry import REGISTRY, numpy_only
from jit.pullback.array_values import (_elem, _fill_zero, _null, add_into_nd, copy_array,
                                       ensure_array, nest_loop)
from jit.typing.infer import Context
from jit.types import (BOOL, FLOAT32, FLOAT64, INT32, INT64, NONE, ArrayT, TupleT, Type,
                       is_float_dtype_array)
from jit.typing.local_arrays import made_here

ONE = L.Constant(I64, 1)
SSIZE_MAX = L.Constant(I64, (1 << 63) - 1)
SSIZE_MIN = L.Constant(I64, -(1 << 63))


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


def part_values(fc, operands: list, parts: list) -> list:
    """The LLVM values of the index parts of types `parts` (None where a part has no
    value: `None`, `...`); one tuple operand is taken apart."""
    valued = [t in (INT64, BOOL) or isinstance(t, (SliceT, ArrayT)) for t in parts]
    ts = [fc.type_of(o) for o in operands]
    if len(ts) == 1 and isinstance(ts[0], TupleT) and not isinstance(ts[0], SliceT):
        tup = fc.get(operands[0])
        return [fc.b.extract_value(tup, k) if ok else None for k, ok in enumerate(valued)]
    return [fc.get(o) if ok else None for o, ok in zip(operands, valued)]


def view_fields(fc, arr, at: ArrayT, plan: IndexPlan, parts: list, values: list) -> tuple:
    """(address of the first element, shapes, strides) of the view arr[parts...] for a
    basic index (no arrays), sharing arr's memory."""
    from jit.codegen.arrays import checked_index
    b = fc.b
    offset, shapes, strides, axis = ZERO, [], [], 0
    for kind, span, t, v in zip(plan.kinds, plan.spans, parts, values):
        if kind == "new" or kind == "bool":
            shapes.append(ONE if kind == "new" else fc.convert(v, BOOL, INT64))
            strides.append(ZERO)
        elif kind == "ellipsis":
            shapes += [shape(fc, arr, axis + k) for k in range(span)]
            strides += [stride(fc, arr, axis + k) for k in range(span)]
        elif kind == "slice":
            n, st = shape(fc, arr, axis), stride(fc, arr, axis)
            start, step, length = slice_bounds(fc, v, t, n)
            shapes.append(length)
            strides.append(b.mul(st, step))
            offset = b.add(offset, b.mul(start, st))
        else:
            n, st = shape(fc, arr, axis), stride(fc, arr, axis)
            offset = b.add(offset, b.mul(checked_index(fc, fc.convert(v, t, INT64), n, axis),
                                         st))
        axis += span
    shapes += [shape(fc, arr, k) for k in range(axis, at.ndim)]
    strides += [stride(fc, arr, k) for k in range(axis, at.ndim)]
    data = b.gep(field(fc, arr, 0), [offset], source_etype=L.IntType(8))
    return data, shapes, strides


def view_of(fc, at: ArrayT, idx_operands: list, arr) -> tuple:
    """(the view arr[idx...] as an array value, or the address of its one element when
    it has no dimensions; its rank) for IR index operands."""
    parts = index_parts([fc.type_of(o) for o in idx_operands])
    plan = plan_index(at, parts)
    data, shapes, strides = view_fields(fc, arr, at, plan, parts,
                                        part_values(fc, idx_operands, parts))
    return (make_array(fc, data, shapes, strides) if shapes else data), plan.ndim


def view_plan(x: Type, ts: list, store: bool = False):
    """The plan of x[ts...] when it is a view of array x (an index without arrays and
    not all integers; for a store, integers that leave an axis too), else None; an
    index numpy refuses raises IndexRefused."""
    parts = index_parts(ts)
    if not isinstance(x, ArrayT) or any(isinstance(t, ArrayT) for t in parts):
        return None
    if all(t == INT64 for t in parts) and not (store and len(parts) < x.ndim):
        return None      # an element, or a sub-array read: the core rules
    return plan_index(x, parts)


def _claims(x: Type, ts: list, store: bool = False) -> bool:
    """Pattern: an array indexed by anything but integers and index arrays (an index
    numpy refuses is claimed too, so that its error names the index)."""
    try:
        return view_plan(x, ts, store) is not None
    except IndexRefused:
        return True


def _plan_or_fail(ctx: Context, x: Type, ts: list, store: bool = False) -> IndexPlan:
    try:
        return view_plan(x, ts, store)
    except IndexRefused as e:
        ctx.fail(str(e))


def _element_or_view(x: ArrayT, nd: int) -> Type:
    """x[...]'s type: a view has a rank; numpy's 0-d view (`v[..., 0]` of a vector) is
    the element itself here (the JIT has no 0-d arrays)."""
    return x.dtype if nd == 0 else ArrayT(x.dtype, nd)


# -- getitem / setitem ---------------------------------------------------------------------------
def _is_view_get(ctx, s, ts) -> bool:
    return _claims(ts[0], ts[1:])


def _is_view_set(ctx, s, ts) -> bool:
    """(`a[...] = v` of 1-D and 2-D arrays has its own loops: jit.library.operators)"""
    return _claims(ts[0], ts[2:], store=True) and (numpy_only(ts) or not is_assign_all(ctx, s, ts))


def _t_get(ctx: Context, s, ts):
    return _element_or_view(ts[0], _plan_or_fail(ctx, ts[0], ts[1:]).ndim)


def _cg_get(fc, s, ts):
    view, nd = view_of(fc, ts[0], s.args[1:], fc.get(s.args[0]))
    return load_element(fc, view, ts[0].dtype) if nd == 0 else view


_STORES = {FLOAT64: (FLOAT64, FLOAT32, INT64, INT32, BOOL),
           FLOAT32: (FLOAT32, FLOAT64, INT64, INT32, BOOL),
           INT64: (INT64, INT32, BOOL), INT32: (INT32, INT64, BOOL), BOOL: (BOOL,)}


def _t_set(ctx: Context, s, ts):
    a, v = ts[0], ts[1]
    nd = _plan_or_fail(ctx, a, ts[2:], store=True).ndim
    have = v.dtype if isinstance(v, ArrayT) else v
    if have not in _STORES[a.dtype] or isinstance(v, ArrayT) and v.ndim > max(nd, 1):
        ctx.fail(f"assigning {v} to a selection of {a} with {nd} dimensions is not "
                 "compiled")
    if not made_here(ctx.typing.ir, s.args[0]):    # (a write the caller sees)
        ctx.typing.writes = True
    return NONE


def _cg_set(fc, s, ts):
    a, v = ts[0], ts[1]
    view, nd = view_of(fc, a, s.args[2:], fc.get(s.args[0]))
    value = fc.get(s.args[1])
    if nd == 0 and not isinstance(v, ArrayT):
        store_element(fc, fc.convert(value, v, a.dtype), view, a.dtype)
    elif nd == 0:
        _store_broadcast(fc, make_array(fc, view, [ONE], [ZERO]), a.dtype, 1, value, v)
    else:
        _store_broadcast(fc, view, a.dtype, nd, value, v)
    return L.Constant(L.IntType(8), 0)


FITS1 = "could not broadcast input array from shape ({1},) into shape ({0},)"
BROADCAST = ("could not broadcast input array into the selection: axis {0} of the value "
             "has length {1}, the selection {2}")


def _store_broadcast(fc, view, dtype, nd: int, value, vt: Type) -> None:
    """view[...] = value, numpy's broadcast of a number or an array into an nd-D view
    (an array is copied first: it may overlap the view)."""
    b = fc.b
    dims = [shape(fc, view, k) for k in range(nd)]
    if not isinstance(vt, ArrayT):
        x = fc.convert(value, vt, dtype)
        nest_loop(fc, dims, lambda idx: store_element(fc, x, _elem(fc, view, idx), dtype))
        return
    src = copy_array(fc, value, vt)
    lead = nd - vt.ndim
    steps = []
    for k in range(vt.ndim):
        n, want = shape(fc, src, k), dims[lead + k]
        bad = b.and_(b.icmp_signed("!=", n, want), b.icmp_signed("!=", n, ONE))
        if nd == 1:       # numpy's own words (its message for more axes needs more numbers)
            fc.raise_if(bad, ValueError, FITS1, (want, n))
        else:
            fc.raise_if(bad, ValueError, BROADCAST, (L.Constant(I64, k), n, want))
        steps.append(b.select(b.icmp_signed("==", n, ONE), ZERO, stride(fc, src, k)))

    def store(idx):
        off = ZERO
        for k, st in enumerate(steps):
            off = b.add(off, b.mul(idx[lead + k], st))
        got = load_element(fc, b.gep(field(fc, src, 0), [off], source_etype=L.IntType(8)),
                           vt.dtype)
        store_element(fc, fc.convert(got, vt.dtype, dtype), _elem(fc, view, idx), dtype)
    nest_loop(fc, dims, store)


# -- cotangents: accum_index / take_index / zero_index with basic indices ----------------------
def _is_view_acc(ctx, s, ts) -> bool:
    return view_plan_quiet(ts[2], ts[3:])


def _is_float_view(ctx, s, ts) -> bool:
    """take_index / zero_index, the adjoint of a store: a row by integers too."""
    return is_float_dtype_array(ts[0]) and view_plan_quiet(ts[0], ts[1:], store=True)


def view_plan_quiet(x: Type, ts: list, store: bool = False) -> bool:
    try:
        return view_plan(x, ts, store) is not None
    except IndexRefused:
        return False


def _t_acc(ctx: Context, s, ts):
    nd = _plan_or_fail(ctx, ts[2], ts[3:]).ndim
    acc, dy, x = ts[0], ts[1], ts[2]
    if not is_float_dtype_array(x):
        ctx.fail(f"accum_index of a {dy} into a view of a {x} cotangent")
    want = (x.dtype, FLOAT64, INT64) if nd == 0 else (ArrayT(x.dtype, nd),)
    if acc not in (NONE, x) or dy not in (NONE,) + want:
        ctx.fail(f"accum_index of a {dy} into a view of a {x} cotangent")
    return x


def _cg_acc(fc, s, ts):
    acc = ensure_array(fc, fc.get(s.args[0]), ts[0], fc.get(s.args[2]), ts[2])
    if ts[1] == NONE:
        return acc
    view, nd = view_of(fc, ts[2], s.args[3:], acc)
    dy = fc.get(s.args[1])
    dtype = ts[2].dtype
    if nd == 0:
        old = load_element(fc, view, dtype)
        store_element(fc, fc.b.fadd(old, fc.convert(dy, ts[1], dtype)), view, dtype)
    else:
        add_into_nd(fc, view, dy, nd, dtype)
    return acc


def _t_take(ctx: Context, s, ts):
    return _element_or_view(ts[0], _plan_or_fail(ctx, ts[0], ts[1:], store=True).ndim)


def _cg_take(fc, s, ts):
    b, acc = fc.b, fc.get(s.args[0])
    res = fc.alloca(lltype(s.type))
    b.store(zero_of(s.type), res)       # 0.0, or the NULL array (a None cotangent)
    with b.if_then(b.not_(_null(fc, acc))):
        view, nd = view_of(fc, ts[0], s.args[1:], acc)
        b.store(load_element(fc, view, ts[0].dtype) if nd == 0 else copy_array(fc, view, s.type),
                res)
    return b.load(res, typ=lltype(s.type))


def _t_zero(ctx: Context, s, ts):
    _plan_or_fail(ctx, ts[0], ts[1:], store=True)
    return ts[0]


def _cg_zero(fc, s, ts):
    acc = fc.get(s.args[0])
    with fc.b.if_then(fc.b.not_(_null(fc, acc))):
        view, nd = view_of(fc, ts[0], s.args[1:], acc)
        if nd == 0:
            fc.b.store(L.Constant(memory_type(ts[0].dtype), 0.0), view)
        else:
            _fill_zero(fc, view, ArrayT(ts[0].dtype, nd))
    return acc


def _declare() -> None:
    SHAPE = "shape and slicing"
    REGISTRY.declare(builtins.slice, family=SHAPE, pattern="ints or None", types=_t_slice,
                     lower=_cg_slice, gpu={"cuda": "inline"})
    o = REGISTRY.overload
    o("getitem", "array by basic indices: slices, None, ..., ints (a view)", _is_view_get,
      _t_get, _cg_get, SHAPE, numpy_too=True)
    o("setitem", "a view of an array (numpy's broadcast)", _is_view_set, _t_set, _cg_set,
      SHAPE, numpy_too=True)
    o("accum_index", "into a view of a float64 array", _is_view_acc, _t_acc, _cg_acc, SHAPE,
      numpy_too=True)
    o("take_index", "a view of a float64 cotangent", _is_float_view, _t_take, _cg_take, SHAPE,
      numpy_too=True)
    o("zero_index", "a view of a float64 cotangent", _is_float_view, _t_zero, _cg_zero, SHAPE,
      numpy_too=True)


_declare()
__all__ = ["SliceT", "slice_bounds", "view_of", "view_plan"]
