"""Slices of tuples by constant slices: `t[1:]`, `t[:2]`, `t[::-1]`.

The result's type depends on which elements the slice picks, so only slices whose
parts are all known at compile time (`SliceT.values`, see jit.library.slicing:
constants, or `len` of a tuple, which `STATIC_CALLS` knows from its type) are; the
tuple's length is known from its type, so the picked positions are known at compile
time (Python's `slice.indices`).  In adjoint code `accum_index(s, dy, t, %slice)`
adds the slice's cotangent back into those positions, as adjoint.tape.accum_index
does; `tuple(t)` of a tuple is t.  A slice computed at run time (`t[i:]`) stays
refused.
"""
from __future__ import annotations

from llvmlite import ir as L

import builtins

from jit.codegen.function import lltype
from jit.library.registry import REGISTRY
from jit.library.slicing import SliceT
from jit.pullback.cotangents import accum_type, accum_values
from jit.typing.infer import STATIC_CALLS, Context
from jit.types import NONE, RecordT, TupleT, Type


def positions(t: TupleT, st: SliceT) -> list:
    """The element positions t[st] picks."""
    return list(range(len(t.elems))[slice(*st.values)])


def _ours(ctx: Context, ts: list) -> bool:
    """A tuple indexed by one slice; a slice not known at compile time is refused."""
    if not (isinstance(ts[0], TupleT) and not isinstance(ts[0], SliceT)):
        return False
    if len(ts) != 2 or not isinstance(ts[1], SliceT):
        return False
    if ts[1].values is None:
        ctx.fail("slicing a tuple by a slice computed at run time is not compiled")
    if ts[1].values[2] == 0:
        ctx.fail("slice step cannot be zero")
    return True


def _is_tuple_slice(ctx: Context, s, ts) -> bool:
    return _ours(ctx, ts)


def _t_getitem(ctx: Context, s, ts):
    return TupleT(tuple(ts[0].elems[k] for k in positions(ts[0], ts[1])))


def _cg_getitem(fc, s, ts):
    tup = fc.get(s.args[0])
    out = L.Constant(lltype(s.type), L.Undefined)
    for j, k in enumerate(positions(ts[0], ts[1])):
        out = fc.b.insert_value(out, fc.b.extract_value(tup, k), j)
    return out


def _slot_types(acc: Type, dy: Type, x: TupleT, picked: list) -> list:
    parts = list(acc.elems) if isinstance(acc, TupleT) else [NONE] * len(x.elems)
    if dy == NONE:
        return parts
    for j, k in enumerate(picked):
        parts[k] = accum_type(parts[k], dy.elems[j])
    return parts


def _is_tuple_slice_acc(ctx: Context, s, ts) -> bool:
    return len(ts) == 4 and _ours(ctx, [ts[2], ts[3]])


def _t_accum(ctx: Context, s, ts):
    acc, dy, x = ts[0], ts[1], ts[2]
    picked = positions(x, ts[3])
    if dy != NONE and not (isinstance(dy, TupleT) and len(dy.elems) == len(picked)):
        ctx.fail(f"accum_index of a {dy} into {len(picked)} elements of a {x} cotangent")
    try:
        return TupleT(tuple(_slot_types(acc, dy, x, picked)))
    except TypeError as e:
        ctx.fail(str(e))


def _cg_accum(fc, s, ts):
    x, acc_t, dy_t = ts[2], ts[0], ts[1]
    where = {k: j for j, k in enumerate(positions(x, ts[3]))}
    acc, dy = fc.get(s.args[0]), fc.get(s.args[1])
    out = L.Constant(lltype(s.type), L.Undefined)
    for k, want in enumerate(s.type.elems):
        part_t = acc_t.elems[k] if isinstance(acc_t, TupleT) else NONE
        part = fc.b.extract_value(acc, k) if part_t != NONE else None
        if k in where and dy_t != NONE:
            g, gt = fc.b.extract_value(dy, where[k]), dy_t.elems[where[k]]
        else:
            g, gt = None, NONE
        out = fc.b.insert_value(out, accum_values(fc, part, part_t, g, gt, want), k)
    return out


def _static_len(engine, t, s):
    """`len(t)` of a tuple is known from its type (so `t[:len(x)]` slices statically)."""
    xt = engine.operand_type(t, s.args[1]) if len(s.args) == 2 else None
    if isinstance(xt, RecordT) and not xt.is_tuple:
        return None
    return len(xt.elems) if isinstance(xt, TupleT) and not isinstance(xt, SliceT) else None


def _t_tuple_call(ctx: Context, s, ts):
    """`tuple(t)` of a tuple is t itself (derivative rules write `tuple(dy[:n])`)."""
    if len(ts) == 1 and isinstance(ts[0], TupleT) and not isinstance(ts[0], SliceT) \
            and not s.kwargs and not (isinstance(ts[0], RecordT) and not ts[0].is_tuple):
        return TupleT(ts[0].elems) if isinstance(ts[0], RecordT) else ts[0]
    ctx.fail(f"tuple() of {', '.join(map(str, ts))} is not compiled (tuples only)")


def _cg_tuple_call(fc, s, ts):
    return fc.get(s.args[1])


def _declare() -> None:
    SHAPE = "shape and slicing"
    STATIC_CALLS[builtins.len] = _static_len
    REGISTRY.declare(builtins.tuple, family=SHAPE, pattern="tuple", types=_t_tuple_call,
                     lower=_cg_tuple_call, gpu={"cuda": "inline"}, numpy_too=True)
    REGISTRY.overload("getitem", "tuple by a constant slice", _is_tuple_slice, _t_getitem,
                      _cg_getitem, SHAPE)
    REGISTRY.overload("accum_index", "into a tuple by a constant slice", _is_tuple_slice_acc,
                      _t_accum, _cg_accum, SHAPE)


_declare()
__all__ = ["positions"]
