"""A nested `gradient(f, *xs)` / `value_and_grad(f, *xs)` in a function the JIT
differentiates: a jcall compiled as a call with a derivative rule (a `RulePBT`).

Its primal is the nested gradient compiled in place (`jit.pullback.nested_gradient`,
for the statement's key `("nested", var)`); f and xs go on the tape, and the adjoint
calls the rule `adjoint.nested_hv.gradient_pullback` generates for f's code and the
arguments' types: `H dz` by one more nested gradient, of f's tangent function.  That
rule is plain Python the JIT compiles like any other, and it differentiates again the
same way, so every order compiles.  Refused (a TypingError, so `auto` falls back):
keyword arguments, a function that is not Python code of the user's, and captured
values whose cotangent compiled code would have to carry (a closure over
differentiated values)."""
from __future__ import annotations

import types as pytypes
from typing import Any

from jit.typing.infer import Call, Context
from jit.types import BOOL, FLOAT64, INT64, ArrayT, ClosureT, FunctionT, Type, TupleT


def _type_name(t: Type):
    """The scalar analysis' type name of a JIT type (`adjoint.passes.inplace.arg_type`)."""
    if t in (FLOAT64, INT64, BOOL) or isinstance(t, ArrayT):
        return str(t)
    return None


def t_gradient_jcall(ctx: Context, s, f: Any, operands: list, argtypes: tuple) -> Type:
    from adjoint.nested_hv import gradient_pullback
    from jit.library.registry import REGISTRY
    from jit.pullback.jcalls import RulePBT, _fake_call, _primal_type, type_activity
    if ctx.const(s.args[2], ()):
        ctx.fail(f"{f.__name__}() with keyword arguments inside differentiated code is not "
                 "compiled")
    ft = argtypes[0]
    if isinstance(ft, ClosureT) and type(ft.func) is pytypes.FunctionType:
        fn, captured = ft.func, tuple(ft.captured)
    elif isinstance(ft, FunctionT) and type(ft.func) is pytypes.FunctionType \
            and not ft.func.__closure__:
        fn, captured = ft.func, ()
    else:
        ctx.fail(f"{f.__name__}() of a {ft} inside differentiated code is not compiled "
                 "(of a Python function is)")
    if any(type_activity(t) for t in captured):
        ctx.fail(f"{f.__name__}() of {fn.__qualname__}, which captures differentiated values, "
                 "inside differentiated code is not compiled yet; pass them as arguments")
    xs = argtypes[1:]
    if any(t not in (FLOAT64, INT64, BOOL) and not isinstance(t, ArrayT) for t in xs):
        ctx.fail(f"{f.__name__}() inside differentiated code is compiled for numbers and "
                 f"arrays, not {', '.join(str(t) for t in xs)}")
    entry = REGISTRY.for_callee(f)
    fake = _fake_call(s, f, operands, ("nested", s.var))
    impl = entry.pick(ctx, fake, list(argtypes))
    impl, y = _primal_type(ctx, entry, impl, fake, list(argtypes))
    ctx.typing.impls[("primal", s.var)] = impl
    mask = tuple(bool(type_activity(t)) for t in xs)
    from adjoint import api
    pb = gradient_pullback(fn, len(captured), mask, tuple(_type_name(t) for t in xs),
                           tuple(_type_name(t) for t in captured),
                           with_value=f is api.value_and_grad)
    ctx.typing.calls[s.var] = Call(None, operands, f)
    return TupleT((y, RulePBT(id(pb), tuple(argtypes), 1 + len(operands), pb)))
