"""LLVM lowering of calls to library callables, keyed by the callee object (one entry
per key of `jit.library.call_types.CALL_RULES`).

`math` functions call the C library the CPython process itself uses (so results are
bit-identical) and then apply CPython's checks from mathmodule.c: a NaN from a
non-NaN argument is ValueError("math domain error"); an infinity from finite
arguments is OverflowError("math range error") for functions that can overflow and
ValueError otherwise.  `sqrt`, `fabs`, `floor`, `ceil`, `trunc`, `copysign` use LLVM
intrinsics (exact operations).  numpy's scalar ufuncs follow IEEE (no exceptions).
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np
from llvmlite import ir as L
from lowering.runtime import check_bound

from jit.codegen.function import F64, I1, I64, FunctionGen
from jit.codegen.arrays import allocate, array_dtype, shape, shape_operands
from jit.codegen.scalar import (_isfinite, _isinf, checked, fintrinsic, float_compare,
                             maybe_nonfinite, truth)
from jit.library.call_types import MATH_BINARY, MATH_UNARY, _range_step_callee
from jit.types import BOOL, FLOAT64, INT64, ArrayT, TupleT

CALL_CODEGEN: dict = {}
INTRINSIC_UNARY = {"sqrt": "sqrt", "fabs": "fabs", "floor": "floor", "ceil": "ceil",
                   "trunc": "trunc"}


def call_codegen(*callees):
    def deco(fn):
        for c in callees:
            if c is not None:
                CALL_CODEGEN[c] = fn
        return fn
    return deco


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


for _name, _ovf in MATH_UNARY.items():
    call_codegen(getattr(math, _name, None))(_math_unary(_name, _ovf))


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


for _name in MATH_BINARY:
    call_codegen(getattr(math, _name, None))(_math_binary(_name))


@call_codegen(math.log)
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
        if ts[0] != FLOAT64:
            return fc.get(s.args[1], INT64)
        return float_to_int(fc, fintrinsic(fc, intrinsic, fc.get(s.args[1])))
    return gen


call_codegen(math.floor)(_int_of("floor"))
call_codegen(math.ceil)(_int_of("ceil"))
call_codegen(math.trunc, builtins.int)(_int_of("trunc"))
call_codegen(builtins.round)(_int_of("roundeven"))


@call_codegen(math.isnan, math.isinf, math.isfinite)
def _cg_isnan(fc: FunctionGen, s, ts):
    x = fc.get(s.args[1], FLOAT64)
    f = s.args[0].value
    if f is math.isnan:
        return fc.b.fcmp_unordered("uno", x, x)
    return _isinf(fc, x) if f is math.isinf else _isfinite(fc, x)


_NP_LIBM = {np.sin: "sin", np.cos: "cos", np.tan: "tan", np.arcsin: "asin",
            np.arccos: "acos", np.arctan: "atan", np.sinh: "sinh", np.cosh: "cosh",
            np.tanh: "tanh", np.exp: "exp", np.expm1: "expm1", np.log: "log",
            np.log1p: "log1p", np.log2: "log2", np.log10: "log10", np.sqrt: "sqrt",
            np.fabs: "fabs", np.floor: "floor", np.ceil: "ceil", np.trunc: "trunc"}


@call_codegen(*_NP_LIBM)
def _cg_np_unary(fc: FunctionGen, s, ts):
    return libm(fc, _NP_LIBM[s.args[0].value], float_args(fc, s))


@call_codegen(np.negative, np.absolute, np.abs, np.square)
def _cg_np_int_or_float(fc: FunctionGen, s, ts):
    f = s.args[0].value
    x = fc.get(s.args[1], s.type)
    if s.type == FLOAT64:
        if f is np.square:
            return fc.b.fmul(x, x)
        return fc.b.fneg(x) if f is np.negative else fintrinsic(fc, "fabs", x)
    if f is np.square:
        return fc.b.mul(x, x)  # numpy wraps int64 silently
    neg = fc.b.sub(L.Constant(I64, 0), x)
    if f is np.negative:
        return neg
    return fc.b.select(fc.b.icmp_signed("<", x, L.Constant(I64, 0)), neg, x)


_NP_BINARY = {np.arctan2: "atan2", np.hypot: "hypot", np.power: "pow",
              np.copysign: "copysign"}


@call_codegen(*_NP_BINARY)
def _cg_np_binary(fc: FunctionGen, s, ts):
    return libm(fc, _NP_BINARY[s.args[0].value], float_args(fc, s))


@call_codegen(builtins.abs)
def _cg_abs(fc: FunctionGen, s, ts):
    if s.type == FLOAT64:
        return fintrinsic(fc, "fabs", fc.get(s.args[1]))
    x = fc.get(s.args[1], INT64)
    neg = checked(fc, "sub", L.Constant(I64, 0), x)
    return fc.b.select(fc.b.icmp_signed("<", x, L.Constant(I64, 0)), neg, x)


@call_codegen(builtins.min, builtins.max)
def _cg_minmax(fc: FunctionGen, s, ts):
    values = _minmax_values(fc, s, ts)
    op = "lt" if s.args[0].value is builtins.min else "gt"
    cur = values[0]
    for x in values[1:]:
        if s.type == FLOAT64:
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


@call_codegen(check_bound)
def _cg_check_bound(fc: FunctionGen, s, ts):
    if len(s.args) == 4:
        name = s.args[2].value
        fc.raise_if(fc.b.not_(fc.get(s.args[3], BOOL)), UnboundLocalError,
                    f"cannot access local variable {name!r} where it is not associated "
                    f"with a value")
    return fc.get(s.args[1], s.type)


@call_codegen(operator.index)
def _cg_index(fc: FunctionGen, s, ts):
    return fc.get(s.args[1], INT64)


@call_codegen(builtins.float)
def _cg_float(fc: FunctionGen, s, ts):
    return fc.get(s.args[1], FLOAT64)


@call_codegen(builtins.bool)
def _cg_bool(fc: FunctionGen, s, ts):
    return truth(fc, fc.get(s.args[1]), ts[0])


@call_codegen(builtins.len)
def _cg_len(fc: FunctionGen, s, ts):
    if isinstance(ts[0], TupleT):
        return L.Constant(I64, len(ts[0].elems))
    return shape(fc, fc.get(s.args[1]), 0)


@call_codegen(np.zeros, np.ones, np.empty)
def _cg_alloc(fc: FunctionGen, s, ts):
    f = s.args[0].value
    fill = 0 if f is np.zeros else 1 if f is np.ones else None
    return allocate(fc, shape_operands(fc, s.args[1]), array_dtype(s), fill)


@call_codegen(builtins.divmod)
def _cg_divmod(fc: FunctionGen, s, ts):
    from jit.codegen.scalar import floordiv_values, mod_values
    t = s.type.elems[0]
    a, b = fc.get(s.args[1], t), fc.get(s.args[2], t)
    q = floordiv_values(fc, a, b, t)
    r = mod_values(fc, a, b, t)
    out = L.Constant(L.LiteralStructType([q.type, r.type]), L.Undefined)
    return fc.b.insert_value(fc.b.insert_value(out, q, 0), r, 1)


@call_codegen(_range_step_callee())
def _cg_range_step(fc: FunctionGen, s, ts):
    step = fc.get(s.args[1], INT64)
    fc.raise_if(fc.b.icmp_signed("==", step, L.Constant(I64, 0)), ValueError,
                "range() arg 3 must not be zero")
    return step


@call_codegen(builtins.isinstance)
def _cg_isinstance(fc: FunctionGen, s, ts):
    from jit.library.call_types import static_isinstance
    return L.Constant(I1, int(static_isinstance(ts[0], s.args[2].value)))


def _cg_updates_float_array(fc: FunctionGen, s, ts):
    from jit.library.call_types import static_updates_float_array
    return L.Constant(I1, int(bool(static_updates_float_array(ts[0]))))


def _register_inplace_test() -> None:
    from ssair.passes.inplace import updates_float_array
    CALL_CODEGEN[updates_float_array] = _cg_updates_float_array


_register_inplace_test()


__all__ = ["CALL_CODEGEN", "ArrayT", "BOOL"]
