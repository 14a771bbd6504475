"""The JIT's entries for the derivatives users control (`adjoint.custom`); their
derivatives are adjoint's rules for the same keys, as for every entry:

  * `adjoint.stop_gradient(x)`: native, its operand with every array copied (a
    tuple, list or dict rebuilt around the copies), as the Python function returns;
  * the `fwd` call in the body of a `custom_vjp` function (`CustomVJPCall`): a native
    call of the user's `fwd`, compiled like any user function (its `bwd` is compiled
    through the rule's pullback, the `adjoint.rules.Pullback` entry).

A `custom_jvp` function needs no entry: it is the user's function (compiled as one),
its jvp rule a forward-mode rule object (`jit.pullback.tangent_entry`).
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir as L

from adjoint.custom import CustomVJPCall, stop_gradient
from jit.codegen.function import FunctionGen
from jit.library.registry import REGISTRY
from jit.pullback.array_values import copy_array
from jit.typing.infer import Context, LiteralT, user_call
from jit.types import ArrayT, Scalar, StrT, TupleT, Type


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


def _copied(fc: FunctionGen, v: L.Value, t: Type) -> L.Value:
    """LLVM value `v` of type `t` with its arrays copied."""
    if isinstance(t, ArrayT):
        return copy_array(fc, v, t)
    if isinstance(t, TupleT) and _has_array(t):
        out = v
        for i, e in enumerate(t.elems):
            out = fc.b.insert_value(out, _copied(fc, fc.b.extract_value(v, i), e), i)
        return out
    return v


def _has_array(t: Type) -> bool:
    if isinstance(t, ArrayT):
        return True
    return isinstance(t, TupleT) and any(_has_array(e) for e in t.elems)


def _cg_stop_gradient(fc: FunctionGen, s: Any, ts: list) -> L.Value:
    return _copied(fc, fc.get(s.args[1]), ts[0])


REGISTRY.declare(stop_gradient, family="derivatives", pattern="any value (arrays copied)",
                 types=_t_stop_gradient, lower=_cg_stop_gradient, numpy_too=True,
                 gpu={"cuda": "inline"})


# -- the fwd of a custom_vjp function ----------------------------------------------------------
def _t_custom_fwd(ctx: Context, s: Any, ts: list) -> Type:
    call = s.args[0].value
    if call.fwd is None:
        ctx.fail(f"custom_vjp function {call.of} has no rule yet (call its defvjp)")
    out = user_call(ctx, s, call.fwd)
    if not isinstance(out, TupleT) or len(out.elems) != 2:
        ctx.fail(f"the fwd of custom_vjp function {call.of} returns {out}, not a pair "
                 "(y, residuals)")
    return out


def _cg_custom_fwd(fc: FunctionGen, s: Any, ts: list) -> L.Value:
    call = fc.typing.calls[s.var]
    return fc.call_user(call.target, call.operands, [])


_FWD = REGISTRY.entry(CustomVJPCall, family="derivatives", name="custom_vjp fwd call",
                      by_class=True)
REGISTRY.add(_FWD, "the user's fwd (compiled as a user function)", None, _t_custom_fwd,
             _cg_custom_fwd, numpy_too=True)
