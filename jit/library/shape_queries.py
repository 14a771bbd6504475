"""`np.shape`, `np.size` and `np.ndim` of a number or an array, compiled natively.

A number is a 0-d value to numpy: shape `()`, size 1, ndim 0.  An array's ndim is
known from its type; its shape and size are read from its header (the size is the
product of the shape).  Other operands (a tuple or list, which numpy would convert
to an array first) and `np.size(a, axis)` are refused with a TypingError.  None of
the three has a derivative (`adjoint` declares them constant).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as L

from jit.codegen.arrays import shape
from jit.codegen.function import I64, lltype
from jit.library.registry import REGISTRY
from jit.typing.infer import Context
from jit.types import INT64, ArrayT, TupleT, Type, is_numeric

FAMILY = "shapes and joining"


def _operand(ctx: Context, s, ts: list, name: str) -> Type:
    """The one operand's type, a number or an array, else a TypingError."""
    if len(ts) != 1 or s.kwargs or not (is_numeric(ts[0]) or isinstance(ts[0], ArrayT)):
        ctx.fail(f"np.{name}() of {', '.join(map(str, ts))} is not compiled (of one number "
                 "or array is)")
    return ts[0]


def _t_shape(ctx: Context, s, ts: list) -> Type:
    t = _operand(ctx, s, ts, "shape")
    return TupleT((INT64,) * (t.ndim if isinstance(t, ArrayT) else 0))


def _cg_shape(fc, s, ts):
    out = L.Constant(lltype(s.type), L.Undefined)
    if isinstance(ts[0], ArrayT):
        arr = fc.get(s.args[1])
        for k in range(ts[0].ndim):
            out = fc.b.insert_value(out, shape(fc, arr, k), k)
    return out


def _t_size(ctx: Context, s, ts: list) -> Type:
    _operand(ctx, s, ts, "size")
    return INT64


def _cg_size(fc, s, ts):
    size = L.Constant(I64, 1)
    if isinstance(ts[0], ArrayT):
        arr = fc.get(s.args[1])
        for k in range(ts[0].ndim):
            size = fc.b.mul(size, shape(fc, arr, k))
    return size


def _t_ndim(ctx: Context, s, ts: list) -> Type:
    _operand(ctx, s, ts, "ndim")
    return INT64


def _cg_ndim(fc, s, ts):
    return L.Constant(I64, ts[0].ndim if isinstance(ts[0], ArrayT) else 0)


def _static_ndim(engine, t, s):
    """`np.ndim(x)` is known from x's type (so a branch on it is decided when typing)."""
    xt = engine.operand_type(t, s.args[1]) if len(s.args) == 2 else None
    if isinstance(xt, ArrayT):
        return xt.ndim
    return 0 if xt is not None and is_numeric(xt) else None


def _declare() -> None:
    from jit.typing.infer import STATIC_CALLS
    REGISTRY.declare(np.shape, family=FAMILY, pattern="number or array", types=_t_shape,
                     lower=_cg_shape, numpy_too=True)
    REGISTRY.declare(np.size, family=FAMILY, pattern="number or array", types=_t_size,
                     lower=_cg_size, numpy_too=True)
    REGISTRY.declare(np.ndim, family=FAMILY, pattern="number or array", types=_t_ndim,
                     lower=_cg_ndim, numpy_too=True)
    STATIC_CALLS[np.ndim] = _static_ndim


_declare()
