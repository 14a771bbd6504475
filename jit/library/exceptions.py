"""The type rule of `E(args)` for an exception class `E`, made to be raised at once
(`jit.typing.raising` says how the `raise` compiles): it is typed as nothing, and
its arguments, constants or numbers, are read by the `raise`."""
from __future__ import annotations

from typing import Any, Optional

from jit.library.registry import Impl
from jit.types import BOOL, FLOAT64, INT64, NONE, FunctionT, Type
from jit.typing.infer import UNTYPED_CALLS, Call
from jit.typing.raising import is_exception_class
from ssair.ir import IR, Const, Raise, Var

MAX_DETAILS = 3     # ERRINFO[2:5]: the run-time arguments an error record holds
_NUMBERS = (INT64, FLOAT64, BOOL)
_CONSTANTS = (str, int, float, bool, type(None))


def exception_call(ctx: Any, s: Any, ts: list) -> Optional[Type]:
    """The type rule of `E(args)` for an exception class `E` (an `UNTYPED_CALLS`
    handler): nothing, where the result is only raised; None for other callees."""
    cls = ts[0].func if isinstance(ts[0], FunctionT) else None
    if not is_exception_class(cls):
        return None
    name = cls.__name__
    if s.kwargs:
        ctx.fail(f"{name}(...) with keyword arguments is not compiled")
    uses = [u for u in _uses(ctx.typing.ir, s.var)]
    if not uses or any(not isinstance(u, Raise) for u in uses):
        ctx.fail(f"an exception ({name}) is compiled only where it is raised at once, "
                 "not kept as a value")
    runtime = 0
    for op, t in zip(s.args[1:], ts[1:]):
        if isinstance(op, Const) and isinstance(op.value, _CONSTANTS):
            continue
        if t not in _NUMBERS:
            ctx.fail(f"raising {name} with an argument of type {t} is not compiled "
                     "(constants and numbers are)")
        runtime += 1
    if runtime > MAX_DETAILS:
        ctx.fail(f"raising {name} with more than {MAX_DETAILS} arguments computed at run "
                 "time is not compiled")
    ctx.typing.impls[s.var] = RAISED
    ctx.typing.calls[s.var] = Call(None, list(s.args[1:]), cls)
    return NONE


def _cg_exception(fc: Any, s: Any, ts: list) -> Any:
    """Nothing: the block's `raise` records the exception (`FunctionGen._emit_term`)."""
    return None


def _uses(ir: IR, var: Var) -> list:
    return [user for user, a in ir.uses() if a == var]


RAISED = Impl("an exception class, raised at once", None, exception_call, lower=_cg_exception)
UNTYPED_CALLS.insert(0, exception_call)   # (it answers only for exception classes)
