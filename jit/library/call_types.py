"""Type rules for calls to library callables, keyed by the callee object.

`CALL_RULES[callee](ctx, stmt, argtypes) -> Type`.  The math module's float
functions, numpy's scalar ufuncs, the builtins the JIT knows (`abs`, `min`, `max`,
`float`, `int`, `bool`, `len`, `round`) and the array constructors
(`np.zeros`, `np.ones`, `np.empty`).  `jit.library.call_lowering.CALL_CODEGEN` has one
entry per key of this table.
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import Any, Callable, Optional

import numpy as np
from lowering.runtime import check_bound

from jit.types import (BOOL, FLOAT64, INT64, NONE, ArrayT, TupleT, Type, is_int_like, is_numeric,
                    numeric_join)

CALL_RULES: dict = {}

# math functions of one float argument: name -> can overflow (inf from finite input is
# OverflowError rather than ValueError, as in CPython's mathmodule.c).
MATH_UNARY = {
    "sin": False, "cos": False, "tan": False, "asin": False, "acos": False, "atan": False,
    "sinh": True, "cosh": True, "tanh": False, "asinh": False, "acosh": False,
    "atanh": False, "exp": True, "expm1": True, "log1p": False, "sqrt": False,
    "fabs": False, "erf": False, "erfc": False, "lgamma": True, "gamma": True,
    "log2": False, "log10": False, "exp2": True, "cbrt": False,
}
MATH_BINARY = ("atan2", "copysign", "fmod", "pow", "hypot")
NUMPY_UNARY = ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
               "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "fabs", "floor",
               "ceil", "trunc", "square", "negative", "absolute", "abs")


def call_rule(*callees: Any) -> Callable:
    """Register a call type rule for the given callables (missing ones are skipped)."""
    def deco(fn):
        for c in callees:
            if c is not None:
                CALL_RULES[c] = fn
        return fn
    return deco


def call_rule_for(f: Any) -> Optional[Callable]:
    try:
        return CALL_RULES.get(f)
    except TypeError:
        return None


def _scalar_args(ctx, ts: list, n: Optional[int] = None) -> None:
    if n is not None and len(ts) != n:
        ctx.fail(f"expected {n} arguments, got {len(ts)}")
    for t in ts:
        if not is_numeric(t):
            ctx.fail(f"argument of type {t} is not a number")
    if ctx.stmt.kwargs:
        ctx.fail("keyword arguments are not supported here")


def _float_fn(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts)
    return FLOAT64


for _name in MATH_UNARY:
    call_rule(getattr(math, _name, None))(lambda ctx, s, ts: _float_fn(ctx, s, ts[:1]) if
                                          len(ts) == 1 else ctx.fail("expected 1 argument"))
for _name in MATH_BINARY:
    call_rule(getattr(math, _name, None))(lambda ctx, s, ts: _float_fn(ctx, s, ts) if
                                          len(ts) == 2 else ctx.fail("expected 2 arguments"))


@call_rule(math.log)
def _t_log(ctx, s, ts) -> Type:
    if len(ts) not in (1, 2):
        ctx.fail("math.log takes 1 or 2 arguments")
    return _float_fn(ctx, s, ts)


@call_rule(math.floor, math.ceil, math.trunc)
def _t_floor(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    return INT64


@call_rule(math.isnan, math.isinf, math.isfinite)
def _t_isnan(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    return BOOL


@call_rule(*[getattr(np, n) for n in NUMPY_UNARY])
def _t_np_unary(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    if s.args[0].value in (np.negative, np.absolute, np.square) and is_int_like(ts[0]):
        return INT64
    return FLOAT64


@call_rule(np.arctan2, np.hypot, np.power, np.copysign)
def _t_np_binary(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 2)
    return FLOAT64


@call_rule(builtins.abs)
def _t_abs(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    return INT64 if ts[0] == BOOL else ts[0]


@call_rule(builtins.min, builtins.max)
def _t_minmax(ctx, s, ts) -> Type:
    if len(ts) == 1 and isinstance(ts[0], TupleT):
        ts = list(ts[0].elems)
    if len(ts) < 2:
        ctx.fail("min/max need two or more numbers or a tuple")
    _scalar_args(ctx, ts)
    out = ts[0]
    for t in ts[1:]:
        out = numeric_join(out, t)
    return out


@call_rule(builtins.float)
def _t_float(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    return FLOAT64


@call_rule(builtins.int)
def _t_int(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    return INT64


@call_rule(builtins.bool)
def _t_bool(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    return BOOL


@call_rule(builtins.round)
def _t_round(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    return INT64


@call_rule(builtins.len)
def _t_len(ctx, s, ts) -> Type:
    if len(ts) != 1 or not isinstance(ts[0], (ArrayT, TupleT)):
        ctx.fail(f"len() of {ts[0] if ts else 'nothing'} is not supported")
    return INT64


_DTYPE_OF = {float: FLOAT64, np.float64: FLOAT64, int: INT64, np.int64: INT64}


@call_rule(np.zeros, np.ones, np.empty)
def _t_alloc(ctx, s, ts) -> Type:
    if len(ts) != 1:
        ctx.fail("array constructors take one shape argument (and dtype=)")
    dtype = FLOAT64
    for k, v in s.kwargs.items():
        val = ctx.const(v)
        if k != "dtype" or _dtype_key(val) not in _DTYPE_OF:
            ctx.fail(f"keyword {k}={val!r} is not supported (dtype float or int only)")
        dtype = _DTYPE_OF[_dtype_key(val)]
    shape = ts[0]
    if is_int_like(shape):
        return ArrayT(dtype, 1)
    if isinstance(shape, TupleT) and len(shape.elems) in (1, 2) and all(
            is_int_like(e) for e in shape.elems):
        return ArrayT(dtype, len(shape.elems))
    ctx.fail(f"shape of type {shape} is not supported")


def _dtype_key(v: Any) -> Any:
    if isinstance(v, np.dtype):
        return v.type
    return v


@call_rule(operator.index)
def _t_index(ctx, s, ts) -> Type:
    if len(ts) != 1 or not is_int_like(ts[0]):
        ctx.fail(f"operator.index of {ts[0] if ts else 'nothing'} is not supported")
    return INT64


@call_rule(builtins.divmod)
def _t_divmod(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 2)
    r = numeric_join(ts[0], ts[1])
    r = INT64 if r == BOOL else r
    return TupleT((r, r))


@call_rule(check_bound)
def _t_check_bound(ctx, s, ts) -> Type:
    # the value, checked against its companion flag when it has one (jit.typing.unbound)
    if len(ts) == 3 and ts[2] != BOOL:
        ctx.fail("check_bound without a bool flag")
    return ts[0]


def _range_step_callee():
    try:
        from lowering.runtime import range_step
    except ImportError:
        return None
    return range_step


@call_rule(_range_step_callee())
def _t_range_step(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    if not is_int_like(ts[0]):
        ctx.fail(f"range step of type {ts[0]}")
    return INT64


def static_isinstance(t: Type, classes) -> Optional[bool]:
    """isinstance(v, classes) for every value v of JIT type t, or None if unknown."""
    if not isinstance(classes, tuple):
        classes = (classes,)
    if not all(isinstance(c, type) for c in classes):
        return None
    py = {BOOL: bool, INT64: int, FLOAT64: float, NONE: type(None)}.get(t)
    if py is None and isinstance(t, TupleT):
        py = tuple
    if py is None and isinstance(t, ArrayT):
        py = np.ndarray
    if py is None:
        return None
    return issubclass(py, classes)


@call_rule(builtins.isinstance)
def _t_isinstance(ctx, s, ts) -> Type:
    if len(ts) != 2 or not ctx.is_const(s.args[2]):
        ctx.fail("isinstance needs a constant class argument")
    if static_isinstance(ts[0], ctx.const(s.args[2])) is None:
        ctx.fail(f"isinstance of {ts[0]} cannot be decided statically")
    return BOOL


def _static_isinstance_call(engine, t, s) -> Optional[bool]:
    obj = engine.operand_type(t, s.args[1])
    cls = s.args[2].value if len(s.args) > 2 and hasattr(s.args[2], "value") else None
    return static_isinstance(obj, cls) if cls is not None else None


def _register_static() -> None:
    from jit.typing.infer import STATIC_CALLS
    STATIC_CALLS[builtins.isinstance] = _static_isinstance_call


_register_static()


# `ssair.passes.inplace.updates_float_array(x)`: the adjoint's test before an in-place
# operator on a value of unknown kind; decided by the type (a float array or not).
def static_updates_float_array(t: Optional[Type]) -> Optional[bool]:
    if t is None:
        return None
    return isinstance(t, ArrayT) and t.dtype == FLOAT64


def _t_updates_float_array(ctx, s, ts) -> Type:
    if len(ts) != 1:
        ctx.fail("updates_float_array takes one argument")
    return BOOL


def _static_updates_float_array(engine, t, s) -> Optional[bool]:
    return static_updates_float_array(engine.operand_type(t, s.args[1]))


def _register_inplace_test() -> None:
    from ssair.passes.inplace import updates_float_array
    from jit.typing.infer import STATIC_CALLS
    CALL_RULES[updates_float_array] = _t_updates_float_array
    STATIC_CALLS[updates_float_array] = _static_updates_float_array


_register_inplace_test()
