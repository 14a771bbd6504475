"""Math and builtins: the `math` module's float functions, the builtins the JIT knows
(`abs`, `min`, `max`, `float`, `int`, `bool`, `round`, `len`, `divmod`,
`operator.index`, `isinstance`) and the runtime checks lowering inserts
(`check_bound`, `range_step`, `updates_float_array`), each declared once in the
registry with its type rule and its LLVM lowering.

`math` functions call the C library the CPython process itself uses (so results are
bit-identical) and then apply CPython's checks from mathmodule.c: a NaN from a
non-NaN argument is ValueError("math domain error"); an infinity from finite
arguments is OverflowError("math range error") for functions that can overflow and
ValueError otherwise.  `sqrt`, `fabs`, `floor`, `ceil`, `trunc`, `copysign` use LLVM
intrinsics (exact operations).  numpy's scalar ufuncs (their lowering is here too,
`libm`) follow IEEE (no exceptions); their entries are in `jit.library.ufuncs`.
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import Optional

import numpy as np
from llvmlite import ir as L
from lowering.runtime import check_bound, check_star_length, check_super, missing_name, range_step
from ssair.ir import Const
from ssair.passes.inplace import updates_float_array

from jit.codegen.arrays import shape
from jit.codegen.function import F64, I1, I64, FunctionGen
from jit.codegen.scalar import (_isfinite, _isinf, checked, fintrinsic, float_compare,
                                floordiv_values, maybe_nonfinite, mod_values, truth)
from jit.library import platforms
from jit.library.registry import REGISTRY, called
from jit.typing.infer import STATIC_CALLS
from jit.typing.infer import LiteralT
from jit.types import (BOOL, FLOAT64, INT64, NONE, ArrayT, BuiltListT, DictT, ListLiteral, ListT,
                       RecordT, StrT,
                       TupleT, Type, is_int_like, is_numeric, numeric_join, wide)

# math functions of one float argument: name -> can overflow (inf from finite input is
# OverflowError rather than ValueError, as in CPython's mathmodule.c).
MATH_UNARY = {
    "sin": False, "cos": False, "tan": False, "asin": False, "acos": False, "atan": False,
    "sinh": True, "cosh": True, "tanh": False, "asinh": False, "acosh": False,
    "atanh": False, "exp": True, "expm1": True, "log1p": False, "sqrt": False,
    "fabs": False, "erf": False, "erfc": False, "lgamma": True, "gamma": True,
    "log2": False, "log10": False, "exp2": True, "cbrt": False,
}
SINCE_3_11 = ("cbrt", "exp2")   # math functions CPython 3.10 lacks
MATH_BINARY = ("atan2", "copysign", "fmod", "pow", "hypot")



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




def _t_log(ctx, s, ts) -> Type:
    if len(ts) not in (1, 2):
        ctx.fail("math.log takes 1 or 2 arguments")
    return _float_fn(ctx, s, ts)


def _t_floor(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    return INT64


def _t_isnan(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    return BOOL


def _t_abs(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    return INT64 if ts[0] == BOOL else ts[0]


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


def _t_float(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    return FLOAT64


def _t_int(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    return INT64


def _t_bool(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    return BOOL


def _t_round(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 1)
    return INT64


def _t_len(ctx, s, ts) -> Type:
    if len(ts) == 1 and isinstance(ts[0], LiteralT) and isinstance(ts[0].value,
                                                                  (ListLiteral, str)):
        return INT64     # a constant list (`[]` before a loop appends to it), a string
    if len(ts) != 1 or not isinstance(ts[0], (ArrayT, TupleT, BuiltListT)) or (
            isinstance(ts[0], RecordT) and not ts[0].is_tuple):
        ctx.fail(f"len() of {ts[0] if ts else 'nothing'} is not supported")
    return INT64


def _t_index(ctx, s, ts) -> Type:
    if len(ts) != 1 or not is_int_like(ts[0]):
        ctx.fail(f"operator.index of {ts[0] if ts else 'nothing'} is not supported")
    return INT64


def _t_divmod(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 2)
    r = numeric_join(ts[0], ts[1])
    r = INT64 if r == BOOL else r
    return TupleT((r, r))


def _t_check_bound(ctx, s, ts) -> Type:
    # the value, checked against its companion flag when it has one (jit.typing.unbound)
    if len(ts) == 3 and ts[2] != BOOL:
        ctx.fail("check_bound without a bool flag")
    return ts[0]


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
    if py is None:      # (the subclasses of TupleT first: a dict or a list is no tuple)
        py = dict if isinstance(t, DictT) else list if isinstance(t, (ListT, BuiltListT)) \
            else str if isinstance(t, StrT) \
            else getattr(t, "cls", None) if isinstance(t, RecordT) \
            else tuple if isinstance(t, TupleT) else None
    if py is None and isinstance(t, ArrayT):
        py = np.ndarray
    if py is None and isinstance(t, LiteralT):      # a constant: its own class
        py = list if isinstance(t.value, ListLiteral) else type(t.value)
    if py is None:
        return None
    return issubclass(py, classes)


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




INTRINSIC_UNARY = {"sqrt": "sqrt", "fabs": "fabs", "floor": "floor", "ceil": "ceil",
                   "trunc": "trunc"}


def float_args(fc: FunctionGen, s) -> list:
    return [fc.get(a, FLOAT64) for a in s.args[1:]]


def libm(fc: FunctionGen, name: str, args: list) -> L.Value:
    if name in INTRINSIC_UNARY:
        return fintrinsic(fc, INTRINSIC_UNARY[name], *args)
    if name == "copysign":
        return fintrinsic(fc, "copysign", *args)
    return fc.b.call(fc.mg.extern(name, F64, [F64] * len(args)), args)


def math_checks(fc: FunctionGen, args: list, r, can_overflow: bool) -> None:
    """CPython's is_error/math_1 checks after a libm call (only when the result is
    infinite or NaN: the common case costs one multiply and one compare)."""
    with fc.b.if_then(maybe_nonfinite(fc, r), likely=False):
        _exact_math_checks(fc, args, r, can_overflow)


def _exact_math_checks(fc: FunctionGen, args: list, r, can_overflow: bool) -> None:
    b = fc.b
    arg_nan = L.Constant(I1, 0)
    finite = L.Constant(I1, 1)
    for a in args:
        arg_nan = b.or_(arg_nan, b.fcmp_unordered("uno", a, a))
        finite = b.and_(finite, _isfinite(fc, a))
    fc.raise_if(b.and_(b.fcmp_unordered("uno", r, r), b.not_(arg_nan)), ValueError,
                "math domain error")
    exc = OverflowError if can_overflow else ValueError
    fc.raise_if(b.and_(_isinf(fc, r), finite), exc,
                "math range error" if can_overflow else "math domain error")


# C names that differ from the math module's: C's gamma() is lgamma in glibc
LIBM_NAMES = {"gamma": "tgamma"}


def _math_unary(name: str, can_overflow: bool):
    def gen(fc: FunctionGen, s, ts):
        args = float_args(fc, s)
        r = libm(fc, LIBM_NAMES.get(name, name), args)
        math_checks(fc, args, r, can_overflow)
        return r
    return gen




def _math_binary(name: str):
    def gen(fc: FunctionGen, s, ts):
        args = float_args(fc, s)
        r = libm(fc, name, args)
        if name == "pow":
            zero_base = fc.b.fcmp_ordered("==", args[0], L.Constant(F64, 0.0))
            fc.raise_if(fc.b.and_(zero_base, _isinf(fc, r)), ValueError, "math domain error")
        if name in ("pow", "hypot"):
            math_checks(fc, args, r, True)
        elif name in ("atan2", "fmod"):
            math_checks(fc, args, r, False)
        return r
    return gen




def _scaled(factor: float):
    """math.degrees / math.radians: x times CPython's constant (180/pi or pi/180, the
    one product it computes, so the bits agree)."""
    def gen(fc: FunctionGen, s, ts):
        return fc.b.fmul(float_args(fc, s)[0], L.Constant(F64, factor))
    return gen


def _cg_log(fc: FunctionGen, s, ts):
    args = float_args(fc, s)
    r = libm(fc, "log", args[:1])
    math_checks(fc, args[:1], r, False)
    if len(args) == 1:
        return r
    base = libm(fc, "log", args[1:])
    math_checks(fc, args[1:], base, False)
    fc.raise_if(fc.b.fcmp_ordered("==", base, L.Constant(F64, 0.0)), ZeroDivisionError,
                "float division by zero")
    return fc.b.fdiv(r, base)


def float_to_int(fc: FunctionGen, x) -> L.Value:
    """int(x) for a float that is already integral or to be truncated: ValueError for
    NaN, OverflowError for infinities, DEOPT beyond int64."""
    b = fc.b
    fc.raise_if(b.fcmp_unordered("uno", x, x), ValueError, "cannot convert float NaN to integer")
    fc.raise_if(_isinf(fc, x), OverflowError, "cannot convert float infinity to integer")
    lo = b.fcmp_ordered("<", x, L.Constant(F64, -2.0 ** 63))
    hi = b.fcmp_ordered(">=", x, L.Constant(F64, 2.0 ** 63))
    fc.deopt_if(b.or_(lo, hi), "float too large for int64")
    return b.fptosi(x, I64)


def _int_of(intrinsic: str):
    def gen(fc: FunctionGen, s, ts):
        if wide(ts[0]) != FLOAT64:
            return fc.get(s.args[1], INT64)
        return float_to_int(fc, fintrinsic(fc, intrinsic, fc.get(s.args[1])))
    return gen




def _cg_isnan(fc: FunctionGen, s, ts):
    x = fc.get(s.args[1], FLOAT64)
    f = called(fc.typing, s)
    if f is math.isnan:
        return fc.b.fcmp_unordered("uno", x, x)
    return _isinf(fc, x) if f is math.isinf else _isfinite(fc, x)


def _cg_abs(fc: FunctionGen, s, ts):
    if wide(s.type) == FLOAT64:
        return fintrinsic(fc, "fabs", fc.get(s.args[1]))
    x = fc.get(s.args[1], INT64)
    neg = checked(fc, "sub", L.Constant(I64, 0), x)
    return fc.b.select(fc.b.icmp_signed("<", x, L.Constant(I64, 0)), neg, x)


def _cg_minmax(fc: FunctionGen, s, ts):
    values = _minmax_values(fc, s, ts)
    op = "lt" if called(fc.typing, s) is builtins.min else "gt"
    cur = values[0]
    for x in values[1:]:
        if wide(s.type) == FLOAT64:
            better = float_compare(fc, op, x, cur)
        else:
            better = fc.b.icmp_signed("<" if op == "lt" else ">", x, cur)
        cur = fc.b.select(better, x, cur)
    return cur


def _minmax_values(fc: FunctionGen, s, ts) -> list:
    if len(ts) == 1 and isinstance(ts[0], TupleT):
        tup = fc.get(s.args[1])
        return [fc.convert(fc.b.extract_value(tup, i), e, s.type)
                for i, e in enumerate(ts[0].elems)]
    return [fc.get(a, s.type) for a in s.args[1:]]


def _cg_check_bound(fc: FunctionGen, s, ts):
    if len(s.args) == 4:
        name = s.args[2].value
        fc.raise_if(fc.b.not_(fc.get(s.args[3], BOOL)), UnboundLocalError,
                    f"cannot access local variable {name!r} where it is not associated "
                    f"with a value")
    return fc.get(s.args[1], s.type)


def _cg_index(fc: FunctionGen, s, ts):
    return fc.get(s.args[1], INT64)


def _cg_float(fc: FunctionGen, s, ts):
    return fc.get(s.args[1], FLOAT64)


def _cg_bool(fc: FunctionGen, s, ts):
    return truth(fc, fc.get(s.args[1]), ts[0])


def _cg_len(fc: FunctionGen, s, ts):
    if isinstance(ts[0], TupleT):
        return L.Constant(I64, len(ts[0].elems))
    if isinstance(ts[0], BuiltListT):       # {data, length, capacity}
        return fc.b.extract_value(fc.get(s.args[1]), 1)
    if isinstance(ts[0], LiteralT):
        return L.Constant(I64, len(ts[0].value))
    return shape(fc, fc.get(s.args[1]), 0)


def _cg_divmod(fc: FunctionGen, s, ts):
    t = s.type.elems[0]
    a, b = fc.get(s.args[1], t), fc.get(s.args[2], t)
    q = floordiv_values(fc, a, b, t)
    r = mod_values(fc, a, b, t)
    out = L.Constant(L.LiteralStructType([q.type, r.type]), L.Undefined)
    return fc.b.insert_value(fc.b.insert_value(out, q, 0), r, 1)


def _cg_range_step(fc: FunctionGen, s, ts):
    step = fc.get(s.args[1], INT64)
    fc.raise_if(fc.b.icmp_signed("==", step, L.Constant(I64, 0)), ValueError,
                "range() arg 3 must not be zero")
    return step


def _t_check_star_length(ctx, s, ts) -> Type:
    if not (is_int_like(ts[0]) and all(isinstance(a, Const) for a in s.args[2:])):
        ctx.fail("check_star_length takes an int and two constants")
    return NONE


def _cg_check_star_length(fc: FunctionGen, s, ts):
    least = s.args[2].value + s.args[3].value
    n = fc.get(s.args[1], INT64)
    fc.raise_if(fc.b.icmp_signed("<", n, L.Constant(I64, least)), ValueError,
                f"not enough values to unpack (expected at least {least}, got {{0}})", (n,))
    return L.Constant(L.IntType(8), 0)


def _t_check_super(ctx, s, ts) -> Type:
    # decided by the receiver's class, which is part of the compiled signature
    cls = getattr(ts[0], "cls", None)
    if not isinstance(cls, type):
        ctx.fail(f"super() with a receiver of type {ts[0]}")
    problem = s.args[2].value.mismatch(cls)
    if problem is not None:
        ctx.fail(problem)
    return NONE


def _cg_check_super(fc: FunctionGen, s, ts):
    return L.Constant(L.IntType(8), 0)


def _t_missing_name(ctx, s, ts) -> Type:
    # (always raises: the lowering ends its block with a `raise` nothing reaches)
    return NONE


def _cg_missing_name(fc: FunctionGen, s, ts):
    message = s.args[2].value.replace("{", "{{").replace("}", "}}")
    fc.raise_if(L.Constant(I1, 1), s.args[1].value, message)
    return L.Constant(L.IntType(8), 0)


def _cg_isinstance(fc: FunctionGen, s, ts):
    return L.Constant(I1, int(static_isinstance(ts[0], s.args[2].value)))


def _cg_updates_float_array(fc: FunctionGen, s, ts):
    return L.Constant(I1, int(bool(static_updates_float_array(ts[0]))))






# -- the registry entries ------------------------------------------------------------------
MATH = "math and builtins"
CHECKS = "runtime checks"   # calls lowering and the library templates insert


def _declare_math() -> None:
    for name, can_overflow in MATH_UNARY.items():
        REGISTRY.declare(getattr(math, name, None), family=MATH, pattern="number",
                         name=f"math.{name}" + (" (3.11+)" if name in SINCE_3_11 else ""),
                         types=_t_math_unary, lower=_math_unary(name, can_overflow),
                         gpu={"cuda": platforms.cuda(LIBM_NAMES.get(name, name))})
    for name in MATH_BINARY:
        REGISTRY.declare(getattr(math, name, None), family=MATH, pattern="number, number",
                         types=_t_math_binary, lower=_math_binary(name),
                         gpu={"cuda": platforms.cuda(name)})
    for f, factor in ((math.degrees, 180.0 / math.pi), (math.radians, math.pi / 180.0)):
        REGISTRY.declare(f, family=MATH, pattern="number", types=_t_math_unary,
                         lower=_scaled(factor), gpu={"cuda": "inline"})
    REGISTRY.declare(math.log, family=MATH, pattern="number[, base]", types=_t_log,
                     lower=_cg_log, gpu={"cuda": platforms.cuda("log")})
    for f, intrinsic in ((math.floor, "floor"), (math.ceil, "ceil"), (math.trunc, "trunc")):
        REGISTRY.declare(f, family=MATH, pattern="number", types=_t_floor,
                         lower=_int_of(intrinsic), gpu={"cuda": platforms.cuda(intrinsic)})
    REGISTRY.declare(math.isnan, math.isinf, math.isfinite, family=MATH, pattern="number",
                     types=_t_isnan, lower=_cg_isnan, gpu={"cuda": "inline"})


def _declare_builtins() -> None:
    d = REGISTRY.declare
    d(builtins.abs, family=MATH, pattern="number", types=_t_abs, lower=_cg_abs,
      gpu={"cuda": "inline"})
    d(builtins.min, builtins.max, family=MATH, pattern="numbers, or a tuple of numbers",
      types=_t_minmax, lower=_cg_minmax, gpu={"cuda": "inline"})
    d(builtins.float, family=MATH, pattern="number", types=_t_float, lower=_cg_float,
      gpu={"cuda": "inline"})
    d(builtins.int, family=MATH, pattern="number", types=_t_int, lower=_int_of("trunc"),
      gpu={"cuda": "inline"})
    d(builtins.bool, family=MATH, pattern="number", types=_t_bool, lower=_cg_bool,
      gpu={"cuda": "inline"})
    d(builtins.len, family=MATH, pattern="array, tuple or list", types=_t_len, lower=_cg_len,
      gpu={"cuda": "inline"}, numpy_too=True)
    d(builtins.divmod, family=MATH, pattern="number, number", types=_t_divmod,
      lower=_cg_divmod, gpu={"cuda": "inline"})
    d(operator.index, family=MATH, pattern="int", types=_t_index, lower=_cg_index,
      gpu={"cuda": "inline"})
    # decided by the type alone, or a value passed through: any array too (numpy_too)
    d(builtins.isinstance, family=MATH, pattern="value, constant class", types=_t_isinstance,
      lower=_cg_isinstance, gpu={"cuda": "inline"}, numpy_too=True)
    d(check_bound, family=CHECKS, pattern="value[, name, flag]", types=_t_check_bound,
      lower=_cg_check_bound, gpu={"cuda": "inline"}, numpy_too=True)
    d(missing_name, family=CHECKS, pattern="constant exception class, constant message",
      types=_t_missing_name, lower=_cg_missing_name, gpu={"cuda": "inline"})
    d(range_step, family=CHECKS, pattern="int", types=_t_range_step, lower=_cg_range_step,
      gpu={"cuda": "inline"})
    d(check_star_length, family=CHECKS, pattern="int, constant, constant",
      types=_t_check_star_length, lower=_cg_check_star_length, gpu={"cuda": "inline"})
    d(check_super, family=CHECKS, pattern="object, constant super() site",
      types=_t_check_super, lower=_cg_check_super)
    d(updates_float_array, family=CHECKS, pattern="value", types=_t_updates_float_array,
      lower=_cg_updates_float_array, gpu={"cuda": "inline"}, numpy_too=True)
    STATIC_CALLS[builtins.isinstance] = _static_isinstance_call
    STATIC_CALLS[updates_float_array] = _static_updates_float_array


def _t_math_unary(ctx, s, ts) -> Type:
    if len(ts) != 1:
        ctx.fail("expected 1 argument")
    return _float_fn(ctx, s, ts)


def _t_math_binary(ctx, s, ts) -> Type:
    if len(ts) != 2:
        ctx.fail("expected 2 arguments")
    return _float_fn(ctx, s, ts)


_declare_math()
_declare_builtins()
