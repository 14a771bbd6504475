"""numpy's ufuncs: each one entry, for numbers (LLVM: the C library or an exact
instruction, IEEE results, never an exception) and for float64 arrays (a loop
template of `jit.library.elementwise`, compiled like user code), with its libdevice
name on the GPU.  np.maximum / np.minimum are in `jit.library.array_calls`."""
from __future__ import annotations

import numpy as np
from llvmlite import ir as L

from jit.codegen.function import I64, FunctionGen
from jit.codegen.scalar import fintrinsic
from jit.library.array_calls import _t_sign_number, is_one_number
from jit.library.broadcast import _fdiv
from jit.library.elementwise import UFUNC_IMPLS, array_rule, binary_impl, one_array
from jit.library.elementwise_nd import NDIM
from jit.library.math_builtins import _scalar_args, float_args, libm
from jit.library.python_impls import MARK, has_array, impl_call, mark, no_array
from jit.library import platforms
from jit.library.numpy_calls import UFUNC1, UFUNC2, add_host, declare, elementwise
from jit.library.registry import REGISTRY, called
from jit.runtime import native as runtime
from jit.types import (FLOAT32, FLOAT64, INT32, INT64, ArrayT, Type, is_int_like, is_numeric,
                       promote, wide)
from jit.typing.spread import RewriteStatement
from ssair.ir import Const, Stmt

NUMPY_UNARY = ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
               "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "fabs", "floor",
               "ceil", "trunc", "square", "negative", "absolute", "abs", "arcsinh", "arccosh",
               "arctanh", "exp2", "cbrt", "deg2rad", "radians", "rad2deg", "degrees", "rint",
               "round", "around")


def _t_np_unary(ctx, s, ts) -> Type:
    """numpy's type: a float32 or int32 number keeps its type (np.exp(np.float32(1)) is
    float32), other ints give a float64 (an int64 for np.negative, np.abs, np.square)."""
    _scalar_args(ctx, ts, 1)
    if called(ctx.typing, s) in (np.negative, np.absolute, np.square) and is_int_like(ts[0]):
        return INT32 if ts[0] == INT32 else INT64
    return FLOAT32 if ts[0] == FLOAT32 else FLOAT64


def _t_np_binary(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 2)
    return FLOAT32 if promote(ts[0], ts[1]) == FLOAT32 else FLOAT64


_NP_LIBM = {np.sin: "sin", np.cos: "cos", np.tan: "tan", np.arcsin: "asin",
            np.arccos: "acos", np.arctan: "atan", np.sinh: "sinh", np.cosh: "cosh",
            np.tanh: "tanh", np.exp: "exp", np.expm1: "expm1", np.log: "log",
            np.log1p: "log1p", np.log2: "log2", np.log10: "log10", np.sqrt: "sqrt",
            np.fabs: "fabs", np.floor: "floor", np.ceil: "ceil", np.trunc: "trunc",
            np.arcsinh: "asinh", np.arccosh: "acosh", np.arctanh: "atanh", np.exp2: "exp2",
            np.cbrt: "cbrt", np.rint: "rint", np.round: "rint", np.around: "rint"}
# numpy's npy_deg2rad / npy_rad2deg: one product by a constant
_NP_SCALE = {np.deg2rad: np.pi / 180.0, np.radians: np.pi / 180.0,
             np.rad2deg: 180.0 / np.pi, np.degrees: 180.0 / np.pi}


def _cg_np_unary(fc: FunctionGen, s, ts):
    f = called(fc.typing, s)
    if f in _NP_SCALE:
        return fc.b.fmul(float_args(fc, s)[0], L.Constant(L.DoubleType(), _NP_SCALE[f]))
    return libm(fc, _array_libm(fc, _NP_LIBM[f]), float_args(fc, s))


def _array_libm(fc: FunctionGen, name: str) -> str:
    """In a loop of the library's own (an elementwise template or a fused kernel, whose
    results stand for numpy's whole-array ones) on the CPU, the libm function the loop
    vectoriser may widen into glibc's vector math where that gives numpy's results
    (`runtime.vector_variant`); elsewhere (a user's loop, CPython's scalar np.tanh;
    the GPU) libm's own."""
    fn = getattr(fc.ir, "func", None)
    if getattr(fn, "__module__", None) != MARK or not fc.mg.vector_math:
        return name
    return runtime.vector_variant(name) or name


def _cg_np_int_or_float(fc: FunctionGen, s, ts):
    f = called(fc.typing, s)
    x = fc.get(s.args[1], s.type)
    if wide(s.type) == FLOAT64:
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


def _cg_np_binary(fc: FunctionGen, s, ts):
    return libm(fc, _NP_BINARY[called(fc.typing, s)], float_args(fc, s))


UFUNCS = "ufuncs"


def _declare_unary(name: str) -> None:
    f = getattr(np, name)
    libm_name = _NP_LIBM.get(f)
    e = REGISTRY.entry(f, family=UFUNCS, gpu={"cuda": platforms.cuda(libm_name) if libm_name
                                              else "inline"})
    if name in NUMPY_UNARY:
        lower = _cg_np_unary if libm_name or f in _NP_SCALE else _cg_np_int_or_float
        REGISTRY.add(e, "number", no_array, _t_np_unary, lower)
    if f is np.sign:
        REGISTRY.add(e, "number", is_one_number, _t_sign_number)
    if (f, 1) in UFUNC_IMPLS:
        REGISTRY.add(e, "float64 array, 1-D to 3-D", has_array,
                     array_rule(one_array({nd: UFUNC_IMPLS[(f, nd)] for nd in range(1, NDIM + 1)}),
                                f"np.{name}"), ndim_max=NDIM)
    add_host(f, UFUNC1, elementwise(None, "x"))


for _name in sorted({getattr(np, n).__name__ for n in NUMPY_UNARY}
                    | {f.__name__ for f, _ in UFUNC_IMPLS}):
    _declare_unary(_name)   # np.abs is np.absolute: one entry
# abs() of an array is np.absolute (ndarray.__abs__): the builtin's entry (its number
# pattern in jit.library.math_builtins) takes np.absolute's array pattern
REGISTRY.add(REGISTRY.get(abs), "float64 array, 1-D to 3-D", has_array,
             array_rule(one_array({nd: UFUNC_IMPLS[(np.absolute, nd)] for nd in range(1, NDIM + 1)}),
                        "abs"), ndim_max=NDIM)
for _f, _c in _NP_BINARY.items():
    REGISTRY.declare(_f, family=UFUNCS, pattern="number, number", types=_t_np_binary,
                     lower=_cg_np_binary, gpu={"cuda": platforms.cuda(_c)},
                     matches=no_array)
    add_host(_f, UFUNC2, elementwise(None, "x1", "x2"))


# -- np.isnan / np.isinf / np.isfinite: comparisons (x != x; x * 0.0 is 0.0 when finite) ----
def _class_tests(f):
    """The statements of `f(x)`: `x != x` is a NaN, `x * 0.0 == 0.0` a finite number and
    `(x * 0.0 != 0.0) == (x == x)` an infinity, for numbers and arrays alike."""
    def build(ir, s) -> list:
        x, line = s.args[1], s.line
        if f is np.isnan:
            return [Stmt(s.var, "ne", [x, x], {}, line, s.name)]
        zero = Stmt(ir.new_var(), "mul", [x, Const(0.0)], {}, line)
        if f is np.isfinite:
            return [zero, Stmt(s.var, "eq", [zero.var, Const(0.0)], {}, line, s.name)]
        odd = Stmt(ir.new_var(), "ne", [zero.var, Const(0.0)], {}, line)
        real = Stmt(ir.new_var(), "eq", [x, x], {}, line)
        return [zero, odd, real, Stmt(s.var, "eq", [odd.var, real.var], {}, line, s.name)]
    return build


def _t_class_test(ctx, s, ts) -> Type:
    f = called(ctx.typing, s)
    if s.kwargs or len(ts) != 1 or not (is_numeric(ts[0]) or isinstance(ts[0], ArrayT)
                                        and ts[0].dtype in (FLOAT64, FLOAT32, INT64, INT32)):
        ctx.fail(f"np.{f.__name__} of {', '.join(map(str, ts))} is not compiled (one number "
                 "or numeric array)")
    raise RewriteStatement(f"a call of np.{f.__name__}", s.var, _class_tests(f))


declare(np.reciprocal, UFUNC1, elementwise(None, "x"), UFUNCS)
declare(np.float_power, UFUNC2, elementwise(FLOAT64, "x1", "x2"), UFUNCS)
for _f in (np.isnan, np.isinf, np.isfinite):
    REGISTRY.declare(_f, family=UFUNCS, pattern="number or numeric array (comparisons)",
                     types=_t_class_test, gpu={"cuda": "inline"})


# -- arithmetic called by name: np.add(x, y) is x + y, with numpy's float division ---------
def _np_add(a, b):
    return a + b


def _np_subtract(a, b):
    return a - b


def _np_multiply(a, b):
    return a * b


def _np_divide(a, b):
    return _fdiv(a, b)


mark(_np_add, _np_subtract, _np_multiply, _np_divide)
_BY_NAME = {np.add: ("add", _np_add), np.subtract: ("sub", _np_subtract),
            np.multiply: ("mul", _np_multiply), np.divide: ("truediv", _np_divide)}


def _t_number_arith(ctx, s, ts) -> Type:
    _scalar_args(ctx, ts, 2)
    return impl_call(ctx, s, _BY_NAME[called(ctx.typing, s)][1], list(s.args[1:]))


def _array_arith(op: str, name: str):
    """np.add(a, b), ... with an array operand: the loop template of `a + b`."""
    def rule(ctx, s, ts) -> Type:
        impl = binary_impl(op, ts) if len(ts) == 2 and not s.kwargs else None
        if impl is None:
            ctx.fail(f"{name} of {', '.join(map(str, ts))} is not compiled (float64 arrays "
                     "of one rank, or an array and a number)")
        return impl_call(ctx, s, impl, list(s.args[1:]))
    return rule


ARRAYS = "float64 arrays of up to 3 dimensions, or array and number"
for _f, (_op, _impl) in _BY_NAME.items():
    _e = REGISTRY.entry(_f, family=UFUNCS, gpu={"cuda": "inline"})
    REGISTRY.add(_e, "numbers", no_array, _t_number_arith)
    REGISTRY.add(_e, ARRAYS, has_array, _array_arith(_op, f"np.{_f.__name__}"), ndim_max=NDIM)
    add_host(_f, UFUNC2, elementwise(None, "x1", "x2"))
REGISTRY.add(REGISTRY.get(np.power), ARRAYS, has_array, _array_arith("pow", "np.power"),
             ndim_max=NDIM)
