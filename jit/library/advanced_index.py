"""Advanced indexing of arrays (an integer array or a boolean mask among the index parts,
with any mix of slices, integers, `None` and `...`), computed by numpy itself through a
host call: `x[idx, 1:]`, `m[m > 0]`, `t[0, :, [0, 2]]`, and the stores `y[mask] = 0`,
`forces[a] += f` (numpy writes into compiled code's memory: a repeated index keeps the
last value, as in numpy).

The result's rank and where the advanced dimensions go are known at compile time
(`jit.library.index_plans`).  Slices reach Python as (start, stop, step) tuples and are
rebuilt from the plan's kinds before numpy sees the index.  The cotangent primitives of
adjoint code by such an index (`accum_index`: np.add.at, so an element read k times
gets k times its cotangent; `take_index` / `zero_index`: the adjoint of a store) are
adjoint.tape's own functions, run on a copy of the cotangent where they write.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as L

from adjoint.tape import accum_index, take_index, zero_index
from jit.codegen.host_calls import call_host, operand_recipe
from jit.library.elementwise import is_float_array
from jit.library.index_plans import IndexRefused, SliceT, index_parts, plan_index
from jit.library.registry import REGISTRY
from jit.runtime.host_calls import HostSite, passable
from jit.types import BOOL, FLOAT64, INT64, NONE, ArrayT, TupleT, Type
from jit.typing.infer import Context, LiteralT
from jit.typing.local_arrays import made_here

FAMILY = "indexing"


def _key(kinds: tuple, packed: bool, parts: tuple) -> tuple:
    """The index numpy reads, from the parts as they cross the host call."""
    if packed:
        parts = parts[0]
    return tuple(slice(*p) if k == "slice" else p for k, p in zip(kinds, parts))


def numpy_index(kinds: tuple, packed: bool, x, *parts):
    """x[key] by numpy (the result is copied into compiled code's memory)."""
    return x[_key(kinds, packed, parts)]


def numpy_store(kinds: tuple, packed: bool, a, v, *parts) -> None:
    """a[key] = v by numpy, into compiled code's memory."""
    a[_key(kinds, packed, parts)] = v


def add_at_fresh(kinds: tuple, packed: bool, s, dy, x, *parts):
    """adjoint.tape.accum_index (np.add.at) into a copy of the cotangent s."""
    return accum_index(None if s is None else np.array(s), dy, x, *_key(kinds, packed, parts))


def take_by_index(kinds: tuple, packed: bool, s, *parts):
    return take_index(s, *_key(kinds, packed, parts))


def zero_fresh(kinds: tuple, packed: bool, s, *parts):
    """adjoint.tape.zero_index into a copy of the cotangent s."""
    return None if s is None else zero_index(np.array(s), *_key(kinds, packed, parts))


# -- patterns and types ------------------------------------------------------------------------
def has_index_array(x: Type, ts: list) -> bool:
    return isinstance(x, ArrayT) and any(isinstance(t, ArrayT) for t in index_parts(ts))


def _plan(ctx: Context, x: Type, ts: list):
    if not isinstance(x, ArrayT):
        ctx.fail(f"indexing {x} is not supported")
    try:
        return plan_index(x, index_parts(ts))
    except IndexRefused as e:
        ctx.fail(str(e))


def _crossing(ctx: Context, ts: list, what: str) -> None:
    if not all(passable(t) or isinstance(t, LiteralT) for t in ts):    # (literals: baked in)
        ctx.fail(f"{what} by {', '.join(map(str, ts))} is not compiled")


def _t_get(ctx: Context, s, ts):
    plan = _plan(ctx, ts[0], ts[1:])
    _crossing(ctx, ts, f"indexing a {ts[0]}")
    return ts[0].dtype if plan.ndim == 0 else ArrayT(ts[0].dtype, plan.ndim)


_STORES = {FLOAT64: (FLOAT64, INT64, BOOL), INT64: (INT64, BOOL), BOOL: (BOOL,)}


def _t_set(ctx: Context, s, ts):
    a, v = ts[0], ts[1]
    _plan(ctx, a, ts[2:])
    have = v.dtype if isinstance(v, ArrayT) else v
    if have not in _STORES.get(a.dtype, ()):
        ctx.fail(f"assigning {v} to a selection of {a} by an index array is not compiled")
    _crossing(ctx, ts, f"assigning to a {a}")
    if not made_here(ctx.typing.ir, s.args[0]):    # (a write the caller sees)
        ctx.typing.writes = True
    return NONE


def _t_acc(ctx: Context, s, ts):
    acc, dy, x = ts[0], ts[1], ts[2]
    _plan(ctx, x, ts[3:])
    if not is_float_array(x) or acc not in (NONE, x):
        ctx.fail(f"accum_index of a {dy} into a {x} by an index array")
    _crossing(ctx, ts, "the derivative of indexing")
    return x


def _t_take(ctx: Context, s, ts):
    plan = _plan(ctx, ts[0], ts[1:])
    _crossing(ctx, ts, "the derivative of a store")
    return FLOAT64 if plan.ndim == 0 else ArrayT(FLOAT64, plan.ndim)


def _t_zero(ctx: Context, s, ts):
    _plan(ctx, ts[0], ts[1:])
    _crossing(ctx, ts, "the derivative of a store")
    return ts[0]


# -- host calls --------------------------------------------------------------------------------
def _host(fn, name: str, first: int, cotangent_args: tuple = (), writes: tuple = ()):
    """The lowering of a statement whose index parts start at operand `first`: `fn`
    called with the parts' kinds, whether the index is one tuple operand, and the
    operands (`cotangent_args`, `writes`: positions among the operands)."""
    def lower(fc, s, ts) -> L.Value:
        parts = index_parts(ts[first:])
        kinds = tuple("slice" if isinstance(t, SliceT) else "other" for t in parts)
        packed = len(ts) == first + 1 and isinstance(ts[first], TupleT) \
            and not isinstance(ts[first], SliceT)
        recipe, values = operand_recipe(fc, list(s.args))
        recipe = [("const", kinds), ("const", packed)] + recipe
        site = HostSite(fn, name, recipe, (), s.type, cotangents=bool(cotangent_args),
                        cotangent_args=tuple(c + 2 for c in cotangent_args) or (0,),
                        writes_into=tuple(w + 2 for w in writes))
        return call_host(fc, site, values)
    lower.native = "host call"
    return lower


def _declare() -> None:
    o = REGISTRY.overload
    o("getitem", "an index array (integers or a mask) among any index parts",
      lambda ctx, s, ts: has_index_array(ts[0], ts[1:]), _t_get,
      _host(numpy_index, "indexing by an array", 1), FAMILY, numpy_too=True)
    o("setitem", "a selection by an index array (numpy stores)",
      lambda ctx, s, ts: has_index_array(ts[0], ts[2:]), _t_set,
      _host(numpy_store, "a store by an index array", 2, writes=(0,)), FAMILY,
      numpy_too=True)
    o("accum_index", "by an index array (np.add.at)",
      lambda ctx, s, ts: has_index_array(ts[2], ts[3:]), _t_acc,
      _host(add_at_fresh, "the derivative of indexing by an array", 3, (0, 1)),
      FAMILY, numpy_too=True)
    o("take_index", "by an index array",
      lambda ctx, s, ts: has_index_array(ts[0], ts[1:]), _t_take,
      _host(take_by_index, "the derivative of a store by an index array", 1, (0,)),
      FAMILY, numpy_too=True)
    o("zero_index", "by an index array",
      lambda ctx, s, ts: has_index_array(ts[0], ts[1:]), _t_zero,
      _host(zero_fresh, "the derivative of a store by an index array", 1, (0,)),
      FAMILY, numpy_too=True)


_declare()
__all__ = ["has_index_array", "numpy_index", "numpy_store"]
