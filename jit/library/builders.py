"""`np.arange`, `np.float64` and `math.fsum`, compiled as plain-Python implementations
(the recipe of jit.library.elementwise):

  * `np.arange(stop)`, `np.arange(start, stop)`, `np.arange(start, stop, step)` of
    integers: an int64 array (numpy's ZeroDivisionError for a zero step); float
    arguments stay refused;
  * `np.float64(x)` of a number (and `np.float64()`): a float64;
  * `math.fsum(xs)` of a 1-D float64/int64 array, a built list or a tuple of
    numbers: CPython's own algorithm (Shewchuk's partials, then the half-even correction across
    partials, from Modules/mathmodule.c), so the result is CPython's bit for bit,
    with its OverflowError and ValueError; and its pullback (`d_fsum`);
  * `np.argmin(a)` / `np.argmax(a)` (and the methods) of float64 arrays: the first
    extreme position, the first NaN if any, numpy's ValueError when empty.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir as L

from typing import Any

from jit.codegen.arrays import allocate, array_dtype, shape_operands
from jit.codegen.function import FunctionGen, const_value
from jit.library.elementwise import _full1, array_rule, impl_call, is_float_array
from jit.library.python_impls import has_array
from jit.library.python_impls import mark
from jit.library.numpy_calls import (Args, add_host, array_of, declare, dtype_arg, dtype_of,
                                     reduction)
from jit.library.registry import REGISTRY, called
from jit.typing.infer import Context
from jit.types import (BOOL, FLOAT32, FLOAT64, INT32, INT64, NONE, ArrayT, BuiltListT, TupleT, Type,
                       is_int_like, is_numeric)

# (message, exception) of the runtime checks below: each raises when its operand is true.
_CHECKS: dict = {}


def check_step(zero: bool) -> None:
    """numpy's error for np.arange with a zero step (compiled natively)."""
    if zero:
        raise ZeroDivisionError("division by zero")


def check_fsum_overflow(bad: bool) -> None:
    """CPython's error when a partial of math.fsum overflows (compiled natively)."""
    if bad:
        raise OverflowError("intermediate overflow in fsum")


def check_fsum_nan(bad: bool) -> None:
    """CPython's error for math.fsum of +inf and -inf (compiled natively)."""
    if bad:
        raise ValueError("-inf + inf in fsum")


def check_argmin_empty(empty: bool) -> None:
    """numpy's error for np.argmin / np.argmax of an empty array (compiled natively)."""
    if empty:
        raise ValueError("attempt to get argmin of an empty sequence")


def check_argmax_empty(empty: bool) -> None:
    if empty:
        raise ValueError("attempt to get argmax of an empty sequence")


_CHECKS.update({check_step: (ZeroDivisionError, "division by zero"),
                check_fsum_overflow: (OverflowError, "intermediate overflow in fsum"),
                check_fsum_nan: (ValueError, "-inf + inf in fsum"),
                check_argmin_empty: (ValueError, "attempt to get argmin of an empty sequence"),
                check_argmax_empty: (ValueError, "attempt to get argmax of an empty sequence")})


# -- np.arange -----------------------------------------------------------------------------------
def _arange_fill(start, step, n):
    m = max(0, n)
    out = np.empty(m, dtype=np.int64)
    for i in range(m):
        out[i] = start + i * step
    return out


def _arange1(stop):
    return _arange_fill(0, 1, stop)


def _arange2(start, stop):
    return _arange_fill(start, 1, stop - start)


def _arange3(start, stop, step):
    check_step(step == 0)
    return _arange_fill(start, step, -((start - stop) // step))


# -- np.argmin / np.argmax (first position; the first NaN wins) -------------------------------
_ARG_SRC = """def {name}(a):
    {shape}
    {check}({size} == 0)
    best = a[{first}]
    k = 0
    {loops}v = a[{idx}]
    {pad}if math.isnan(v):
    {pad}    return {flat}
    {pad}if v {cmp} best:
    {pad}    best = v
    {pad}    k = {flat}
    return k
"""


def _arg_impl(kind: str, nd: int):
    name = f"_arg{kind}{nd}"
    if nd == 1:
        fmt = {"shape": "n = a.shape[0]", "size": "n", "first": "0", "idx": "i", "flat": "i",
               "pad": "    ", "loops": "for i in range(n):\n        "}
    else:
        fmt = {"shape": "n, m = a.shape", "size": "n * m", "first": "0, 0", "idx": "i, j",
               "flat": "i * m + j", "pad": "        ",
               "loops": "for i in range(n):\n        for j in range(m):\n            "}
    text = _ARG_SRC.format(name=name, check=f"check_arg{kind}_empty",
                           cmp="<" if kind == "min" else ">", **fmt)
    ns = {"math": math, "check_argmin_empty": check_argmin_empty,
          "check_argmax_empty": check_argmax_empty}
    exec(compile(text, f"<jit.library.builders {name}>", "exec"), ns)
    mark(ns[name])
    return ns[name]


ARG_IMPLS = {(kind, nd): _arg_impl(kind, nd) for kind in ("min", "max") for nd in (1, 2)}


# -- math.fsum -----------------------------------------------------------------------------------
def _fsum_add(p, m, x):
    """Add x into the m partials p[:m] (exactly); returns the new count and the
    rounded sum that became the top partial (or a non-finite x)."""
    i = 0
    for j in range(m):
        y = p[j]
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            p[i] = lo
            i += 1
        x = hi
    return i, x


def _fsum_round(p, m):
    """The correctly rounded value of the partials p[:m] (half-even across partials)."""
    if m == 0:
        return 0.0
    m -= 1
    hi = p[m]
    lo = 0.0
    while m > 0:
        x = hi
        m -= 1
        y = p[m]
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            break
    if m > 0 and ((lo < 0.0 and p[m - 1] < 0.0) or (lo > 0.0 and p[m - 1] > 0.0)):
        y = lo * 2.0
        x = hi + y
        if y == x - hi:
            hi = x
    return hi


def _fsum1(xs):
    n = xs.shape[0]
    p = np.empty(n + 1)
    m = 0
    special = 0.0
    infs = 0.0
    for k in range(n):
        xsave = float(xs[k])
        m, x = _fsum_add(p, m, xsave)
        if x != 0.0:
            if math.isfinite(x):
                p[m] = x
                m += 1
            else:
                check_fsum_overflow(math.isfinite(xsave))
                if math.isinf(xsave):
                    infs += xsave
                special += xsave
                m = 0
    if special != 0.0:
        check_fsum_nan(math.isnan(infs))
        return special
    return _fsum_round(p, m)


_TUPLE_SRC = """def {name}(t):
    a = np.empty({n})
{stores}    return _fsum1(a)
"""
_D_TUPLE_SRC = """def {name}(dy, xs):
    return (({dys}),)
"""
_TUPLE_IMPLS: dict = {}


def _per_length(n: int, kind: str):
    """`math.fsum` of (and its pullback for) a tuple of n numbers, made on demand."""
    key = (kind, n)
    hit = _TUPLE_IMPLS.get(key)
    if hit is not None:
        return hit
    name = f"_fsum_tuple{n}" if kind == "f" else f"_d_fsum_tuple{n}"
    if kind == "f":
        text = _TUPLE_SRC.format(name=name, n=n,
                                 stores="".join(f"    a[{k}] = t[{k}]\n" for k in range(n)))
    else:
        text = _D_TUPLE_SRC.format(name=name, dys="dy, " * n)
    ns = {"np": np, "_fsum1": _fsum1}
    exec(compile(text, f"<jit.library.builders {name}>", "exec"), ns)
    fn = ns[name]
    mark(fn)
    _TUPLE_IMPLS[key] = fn
    return fn


def _d_fsum1(dy, xs):
    return (_full1(xs, dy),)


def _fsum_list(xs):
    """`math.fsum` of a built list of numbers (`math.fsum([w * x for ...])`)."""
    a = np.empty(len(xs))
    for k in range(len(xs)):
        a[k] = xs[k]
    return _fsum1(a)


def _d_fsum_list(dy, xs):
    out = []
    for k in range(len(xs)):
        out.append(dy)
    return (out,)


mark(_arange_fill, _arange1, _arange2, _arange3, _fsum_add, _fsum_round, _fsum1, _d_fsum1,
     _fsum_list, _d_fsum_list)


# -- typing and registration ---------------------------------------------------------------------
def _int_like(t: Type) -> bool:
    return t in (INT64, BOOL)


def _t_arange(ctx: Context, s, ts: list) -> Type:
    if s.kwargs or not 1 <= len(ts) <= 3 or not all(_int_like(t) for t in ts):
        ctx.fail(f"np.arange of {', '.join(map(str, ts))}"
                 f"{' with keywords' if s.kwargs else ''} is not compiled (integers only)")
    impl = (_arange1, _arange2, _arange3)[len(ts) - 1]
    return impl_call(ctx, s, impl, list(s.args[1:]))


def _t_number_type(kind: Type):
    """The type rule of calling numpy's scalar type of `kind` (np.float64,
    np.float32, np.int32) on one number or none; an int type takes ints only."""
    def rule(ctx: Context, s, ts: list) -> Type:
        if s.kwargs or len(ts) > 1 or (ts and not is_numeric(ts[0])) or (
                ts and is_int_like(kind) and not is_int_like(ts[0])):
            ctx.fail(f"np.{kind} of {', '.join(map(str, ts))} is not compiled (one number)")
        return kind
    return rule


def _cg_number_type(kind: Type):
    def cg(fc, s, ts):
        if not ts:
            return const_value(0, kind)
        return fc.get(s.args[1], kind)      # (rounded to float32, wrapped to int32)
    return cg


def _fsum_items(t: Type) -> bool:
    if isinstance(t, ArrayT):
        return t.ndim == 1
    if isinstance(t, BuiltListT):
        return t.elem in (FLOAT64, INT64, BOOL)
    return isinstance(t, TupleT) and all(is_numeric(e) for e in t.elems)


def _t_fsum(ctx: Context, s, ts: list) -> Type:
    if s.kwargs or len(ts) != 1 or not _fsum_items(ts[0]):
        ctx.fail(f"math.fsum of {', '.join(map(str, ts))} is not compiled (a 1-D array, "
                 "a list or a tuple of numbers)")
    impl = _fsum1 if isinstance(ts[0], ArrayT) else _fsum_list \
        if isinstance(ts[0], BuiltListT) else _per_length(len(ts[0].elems), "f")
    return impl_call(ctx, s, impl, [s.args[1]])


def _whole_array(ctx: Context, s, ts: list) -> bool:
    """Pattern: one array and no axis (`np.argmin(a)`; an axis is numpy's, by host)."""
    return len(ts) == 1 and not s.kwargs and has_array(ctx, s, ts)


def _pick_arg(kind: str):
    def pick(ts):
        ok = len(ts) == 1 and is_float_array(ts[0])
        return ARG_IMPLS[(kind, ts[0].ndim)] if ok else None
    return pick


def _pick_d_fsum(argtypes):
    if len(argtypes) != 2 or not is_numeric(argtypes[0]):
        return None
    xs = argtypes[1]
    if isinstance(xs, ArrayT) and xs.ndim == 1:
        return _d_fsum1
    if isinstance(xs, BuiltListT) and xs.elem == FLOAT64 and argtypes[0] == FLOAT64:
        return _d_fsum_list
    if isinstance(xs, TupleT) and _fsum_items(xs):
        return _per_length(len(xs.elems), "d")
    return None


def _cg_user(fc, s, ts):
    call = fc.typing.calls[s.var]
    return fc.call_user(call.target, call.operands, [])


def _t_check(ctx: Context, s, ts: list) -> Type:
    if len(ts) != 1 or ts[0] != BOOL:
        ctx.fail(f"bad operand {ts} of a runtime check")
    return NONE


def _cg_check(f):
    exc, msg = _CHECKS[f]

    def cg(fc, s, ts):
        fc.raise_if(fc.get(s.args[1], BOOL), exc, msg, ())
        return L.Constant(L.IntType(8), 0)
    return cg


# -- np.zeros / np.ones / np.empty ----------------------------------------------------------
_DTYPE_OF = {float: FLOAT64, np.float64: FLOAT64, int: INT64, np.int64: INT64,
             np.float32: FLOAT32, np.int32: INT32}


def _t_alloc(ctx, s, ts) -> Type:
    if len(ts) not in (1, 2) or len(ts) == 2 and "dtype" in s.kwargs:
        ctx.fail("array constructors take one shape argument (and a dtype)")
    dtype = FLOAT64
    given = dict(s.kwargs)
    if len(ts) == 2:
        given["dtype"] = s.args[2]
    for k, v in given.items():
        val = ctx.const(v)
        if k != "dtype" or _dtype_key(val) not in _DTYPE_OF:
            ctx.fail(f"keyword {k}={val!r} is not supported (dtype float, int, np.float32 "
                     "or np.int32 only)")
        dtype = _DTYPE_OF[_dtype_key(val)]
    shape = ts[0]
    if is_int_like(shape):
        return ArrayT(dtype, 1)
    if isinstance(shape, TupleT) and len(shape.elems) >= 1 and all(
            is_int_like(e) for e in shape.elems):
        return ArrayT(dtype, len(shape.elems))
    ctx.fail(f"shape of type {shape} is not supported")


def _dtype_key(v: Any) -> Any:
    if isinstance(v, np.dtype):
        return v.type
    return v


def _cg_alloc(fc: FunctionGen, s, ts):
    f = called(fc.typing, s)
    fill = 0 if f is np.zeros else 1 if f is np.ones else None
    return allocate(fc, shape_operands(fc, s.args[1]), array_dtype(s), fill)


BUILDERS = "array builders"


def _t_arange_host(a) -> Type:
    """np.arange of floats (numpy computes it): float64 unless every bound is an int."""
    ts = [a.type(k) for k in ("start", "stop", "step")]
    if any(isinstance(t, ArrayT) for t in ts):
        a.ctx.fail("np.arange of an array is not compiled")
    return ArrayT(dtype_arg(a, dtype_of(*ts)), 1)


def _declare() -> None:
    from adjoint import rules_math as M
    for f in _CHECKS:
        REGISTRY.declare(f, family="runtime checks", pattern="int", types=_t_check,
                         lower=_cg_check(f), gpu={"cuda": "inline"})
    REGISTRY.declare(np.zeros, np.ones, np.empty, family=BUILDERS,
                     pattern="int or tuple of ints[, dtype=float|int]", types=_t_alloc,
                     lower=_cg_alloc)
    REGISTRY.declare(np.arange, family=BUILDERS, pattern="ints", types=_t_arange, lower=_cg_user,
                     matches=lambda ctx, s, ts: not s.kwargs and 1 <= len(ts) <= 3
                     and all(_int_like(t) for t in ts))
    add_host(np.arange, "start, stop=None, step=None, dtype=None, *, device=None, like=None",
             _t_arange_host)
    REGISTRY.declare(np.float64, family=BUILDERS, pattern="number or nothing",
                     types=_t_number_type(FLOAT64), lower=_cg_number_type(FLOAT64),
                     gpu={"cuda": "inline"})
    for f, kind in ((np.float32, FLOAT32), (np.int32, INT32)):
        REGISTRY.declare(f, family=BUILDERS, pattern="number or nothing",
                         types=_t_number_type(kind), lower=_cg_number_type(kind))
    REGISTRY.declare(math.fsum, family="reductions", pattern="1-D array, list or tuple of numbers",
                     types=_t_fsum, lower=_cg_user)
    for f, which in ((np.argmin, "min"), (np.argmax, "max")):
        REGISTRY.declare(f, family="reductions", pattern="float64 array, 1-D or 2-D",
                         matches=_whole_array, methods=(f"{f.__name__}(axis=None)",),
                         types=array_rule(_pick_arg(which), f"np.{f.__name__}"))
        add_host(f, "a, axis=None, out=None, *, keepdims=False", reduction(INT64))
    declare(np.argsort, "a, axis=-1, kind=None, order=None, *, stable=None", _argsorted,
            "selection", methods=("argsort(axis=-1, kind=None, order=None, *, stable=None)",))
    REGISTRY.declare_pullback(M.d_fsum, "1-D array, list or tuple of numbers", _pick_d_fsum)


def _argsorted(a: Args) -> Type:
    """np.argsort: int64 positions, 1-D when axis is None, else the operand's rank
    (numpy's own sort, through the host: its order of ties is numpy's)."""
    return array_of(INT64, 1 if a.const("axis") is None else a.array("a").ndim)


_declare()
__all__ = ["ARG_IMPLS", "check_fsum_nan", "check_fsum_overflow", "check_step"]
