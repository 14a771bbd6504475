"""The JIT's entries for the derivatives users control (`adjoint.custom`); their
derivatives are adjoint's rules for the same keys, as for every entry:

  * `adjoint.stop_gradient(x)`: native, its operand with every array copied (a
    tuple, list or dict rebuilt around the copies), as the Python function returns;
  * the calls in the body of a `custom_vjp` function: `CustomVJPCall`, a native call
    of the user's `fwd`, compiled like any user function; `CustomVJPOutput`, its `y`
    (the rule of which, a generated function calling the user's `bwd`, compiles
    through the `adjoint.rules.Pullback` entry); `checked_cotangents`, what `bwd`
    returned checked against the arguments: their number and kinds when typed, the
    shapes of arrays at run time; `dense_cotangent`, the `dy` given to `bwd`, with
    zeros where nothing flowed (None when typed, a NULL array at run time);
  * the call in the body of a `custom_jvp` function (`CustomJVPCall`): a native call
    of the user's function (its jvp rule is a forward-mode rule object,
    `jit.pullback.tangent_entry`; its reverse rule, the jvp rule transposed, runs as
    Python called from the compiled adjoint).
The user's functions may be closures: their captured values are passed as constants.
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir as L

from adjoint.custom import (
    CustomJVPCall,
    CustomVJPCall,
    CustomVJPOutput,
    checked_cotangents,
    dense_cotangent,
    stop_gradient,
)
from jit.codegen.arrays import shape
from jit.codegen.function import FunctionGen, lltype, zero_of
from jit.library.python_impls import impl_call
from jit.library.registry import REGISTRY
from jit.pullback.array_values import _null, copy_value, zeros_like
from jit.pullback.tangent_entry import tangent_zero_type
from jit.types import NONE, NUMERIC, ArrayT, DictT, Scalar, StrT, TupleT, Type
from jit.typing.infer import Context, LiteralT, user_call
from ssair import Const


# -- stop_gradient ------------------------------------------------------------------------
def _check_copyable(ctx: Context, t: Type) -> None:
    """Refuse (a typing error) a value whose copy is not compiled: a list built at run
    time, an object."""
    if isinstance(t, (Scalar, LiteralT, StrT, ArrayT)):
        return
    if isinstance(t, TupleT):     # tuples, and the lists and dicts typed by entry
        for e in t.elems:
            _check_copyable(ctx, e)
        return
    ctx.fail(f"stop_gradient of a {t} is not compiled")


def _t_stop_gradient(ctx: Context, s: Any, ts: list) -> Type:
    if len(ts) != 1 or s.kwargs:
        ctx.fail("stop_gradient takes one argument")
    _check_copyable(ctx, ts[0])
    return ts[0]


def _cg_stop_gradient(fc: FunctionGen, s: Any, ts: list) -> L.Value:
    return copy_value(fc, fc.get(s.args[1]), ts[0])


REGISTRY.declare(stop_gradient, family="derivatives", pattern="any value (arrays copied)",
                 types=_t_stop_gradient, lower=_cg_stop_gradient, numpy_too=True)


def call_user_function(ctx: Context, s: Any, fn: Any) -> Type:
    """Type `s` as a native call of user function `fn` with `s`'s operands; a closure's
    captured values are passed as constants first (as `jit.pullback.tangent_entry`
    passes a closure's)."""
    if not fn.__closure__:
        return user_call(ctx, s, fn)
    try:
        cells = [Const(c.cell_contents) for c in fn.__closure__]
    except ValueError:
        ctx.fail(f"{fn.__qualname__} reads a variable of its enclosing function that is "
                 "not assigned yet")
    if s.kwargs:
        ctx.fail(f"a call of {fn.__qualname__} with keyword arguments")
    return impl_call(ctx, s, fn, cells + list(s.args[1:]))


# -- a custom_vjp function: its fwd call, its output call, its bwd's result checked -------------
def _t_custom_fwd(ctx: Context, s: Any, ts: list) -> Type:
    call = s.args[0].value
    if call.fwd is None:
        ctx.fail(f"custom_vjp function {call.of} has no rule yet (call its defvjp)")
    out = call_user_function(ctx, s, call.fwd)
    if not isinstance(out, TupleT) or len(out.elems) != 2:
        raise TypeError(f"custom_vjp: fwd {call.fwd.__qualname__} of {call.of} must return "
                        f"a pair (y, residuals); it returns {out}")
    return out


def _cg_user_call(fc: FunctionGen, s: Any, ts: list) -> L.Value:
    """The native call of the user function that the type rule chose."""
    call = fc.typing.calls[s.var]
    return fc.call_user(call.target, call.operands, [])


def _t_custom_jvp_call(ctx: Context, s: Any, ts: list) -> Type:
    return call_user_function(ctx, s, s.args[0].value.fun)


_JVP = REGISTRY.entry(CustomJVPCall, family="derivatives", name="custom_jvp call",
                      by_class=True)
REGISTRY.add(_JVP, "the user's function (compiled as a user function)", None,
             _t_custom_jvp_call, _cg_user_call, numpy_too=True)


_FWD = REGISTRY.entry(CustomVJPCall, family="derivatives", name="custom_vjp fwd call",
                      by_class=True)
REGISTRY.add(_FWD, "the user's fwd (compiled as a user function)", None, _t_custom_fwd,
             _cg_user_call, numpy_too=True)

_OUT = REGISTRY.entry(CustomVJPOutput, family="derivatives", name="custom_vjp output call",
                      by_class=True)
REGISTRY.add(_OUT, "y, residuals, arguments (its value: y)", None,
             lambda ctx, s, ts: ts[1],      # (ts: the callee's type, then the operands')
             lambda fc, s, ts: fc.get(s.args[1]), numpy_too=True)


def _t_checked(ctx: Context, s: Any, ts: list) -> Type:
    """`checked_cotangents(g, who, *args)`: what `adjoint.custom.checked_cotangents`
    checks, from the types (the shapes of arrays: at run time, `_cg_checked`)."""
    who, g, args = ctx.const(s.args[2]), ts[0], ts[2:]
    n = len(args)
    if not isinstance(g, TupleT) or type(g) is not TupleT:
        raise TypeError(f"{who} must return a tuple of {n} cotangent{'s' if n != 1 else ''}"
                        f" (one per argument), got {g}")
    if len(g.elems) != n:
        raise TypeError(f"{who} returned {len(g.elems)} cotangent"
                        f"{'s' if len(g.elems) != 1 else ''} for {n} argument"
                        f"{'s' if n != 1 else ''}")
    for k, (t, x) in enumerate(zip(g.elems, args)):
        _check_like(who, f"cotangent {k}", t, x)
    return g


def _check_like(who: str, what: str, t: Type, x: Type) -> None:
    """Cotangent type `t` against its argument's type `x` (None always fits)."""
    if t == NONE:
        return
    if isinstance(x, ArrayT):
        if not isinstance(t, ArrayT) or t.ndim != x.ndim:
            raise ValueError(f"{who}: {what} must be an array of {x.ndim} dimension"
                             f"{'s' if x.ndim != 1 else ''}, got {t}")
        return
    if isinstance(x, TupleT):
        if not isinstance(t, TupleT) or len(t.elems) != len(x.elems):
            raise ValueError(f"{who}: {what} must be a sequence of {len(x.elems)}, got {t}")
        for k, (a, b) in enumerate(zip(t.elems, x.elems)):
            _check_like(who, f"{what}[{k}]", a, b)
        return
    if x in NUMERIC and t not in NUMERIC:
        raise ValueError(f"{who}: {what} must be a number, got {t}")


def _cg_checked(fc: FunctionGen, s: Any, ts: list) -> L.Value:
    who = s.args[2].value
    g = fc.get(s.args[1])
    for k, (t, x) in enumerate(zip(ts[0].elems, ts[2:])):
        _check_shapes(fc, f"{who}: cotangent {k}", fc.b.extract_value(g, k), t,
                      fc.get(s.args[3 + k]), x)
    return g


def _check_shapes(fc: FunctionGen, what: str, v: L.Value, t: Type, a: L.Value,
                  x: Type) -> None:
    """At run time: array cotangent `v` has the shape of its argument `a`."""
    if isinstance(t, ArrayT) and isinstance(x, ArrayT):
        for axis in range(x.ndim):
            got, want = shape(fc, v, axis), shape(fc, a, axis)
            fc.raise_if(fc.b.icmp_signed("!=", got, want), ValueError,
                        f"{what} has {{}} entries along axis {axis} where its argument "
                        "has {}", (got, want))
    elif isinstance(t, TupleT) and isinstance(x, TupleT):
        for k, (e, xe) in enumerate(zip(t.elems, x.elems)):
            _check_shapes(fc, f"{what}[{k}]", fc.b.extract_value(v, k), e,
                          fc.b.extract_value(a, k), xe)


REGISTRY.declare(checked_cotangents, family="derivatives",
                 pattern="a bwd's cotangents, its arguments", types=_t_checked,
                 lower=_cg_checked, numpy_too=True)


def _t_dense(ctx: Context, s: Any, ts: list) -> Type:
    return _dense_type(ts[0], ts[1])


def _dense_type(dt: Type, yt: Type) -> Type:
    """The type of `dense_cotangent(dy, y)` for these types of `dy` and `y`."""
    if dt == NONE:
        return tangent_zero_type(yt)
    if isinstance(dt, TupleT) and isinstance(yt, TupleT) and len(dt.elems) == len(yt.elems):
        elems = tuple(_dense_type(d, y) for d, y in zip(dt.elems, yt.elems))
        # a dict's cotangent, natively the tuple of its values', is a dict again here (the
        # structure of `y`, as the interpreter gives it): a tangent function indexes it
        return DictT(elems, yt.keys) if isinstance(yt, DictT) else TupleT(elems)
    return dt


def _cg_dense(fc: FunctionGen, s: Any, ts: list) -> L.Value:
    return _dense(fc, fc.get(s.args[1]), ts[0], fc.get(s.args[2]), ts[1], s.type)


def _dense(fc: FunctionGen, dv: Any, dt: Type, yv: L.Value, yt: Type, want: Type) -> Any:
    """LLVM value of `dense_cotangent` (`want`: its type)."""
    b = fc.b
    if isinstance(want, TupleT):
        out = L.Constant(lltype(want), L.Undefined)
        for i, w in enumerate(want.elems):
            d = None if dt == NONE else b.extract_value(dv, i)
            de = NONE if dt == NONE else dt.elems[i]
            out = b.insert_value(out, _dense(fc, d, de, b.extract_value(yv, i), yt.elems[i], w), i)
        return out
    if isinstance(want, ArrayT):
        if dt == NONE:
            return zeros_like(fc, yv, want)
        res = fc.alloca(lltype(want))      # a NULL array: nothing flowed in this run
        b.store(dv, res)
        with b.if_then(_null(fc, dv), likely=False):
            b.store(zeros_like(fc, yv, want), res)
        return b.load(res, typ=lltype(want))
    if dt == NONE:
        return zero_of(want)
    return dv


REGISTRY.declare(dense_cotangent, family="derivatives", pattern="a cotangent, its value",
                 types=_t_dense, lower=_cg_dense, numpy_too=True)
