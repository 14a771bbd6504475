"""Exceptions in compiled code (`jit.typing.raising` says how `raise` and `try`
compile):

  * `E(args)` for an exception class `E`, made to be raised at once: typed as
    nothing; its arguments, constants or numbers, are read by the `raise`; with an
    f-string argument (`assert ok, f"bad {x.shape}"`) the call deoptimises there
    instead, and the interpreter's rerun raises it with Python's formatting;
  * `caught()`, the exception a handler block was entered with: the word of the
    error record (`CAUGHT`);
  * `except E:` (`lowering.runtime.exception_matches(caught, E)`, E a constant class
    or tuple of classes): asks the runtime whether the caught error's class is a
    subclass of E (`jit.runtime.caught`)."""
from __future__ import annotations

from typing import Any, Optional

from llvmlite import ir as L

from jit.codegen.arrays import runtime_callee
from jit.library.registry import REGISTRY, Impl
from jit.runtime import symbols
from jit.types import BOOL, FLOAT64, INT64, NONE, FunctionT, Type, TypingError
from jit.typing.formatted import holds_formatted
from jit.typing.infer import UNTYPED_CALLS, Call
from jit.typing.raising import CAUGHT, is_exception_class
from adjoint.passes.inplace import refused_write
from lowering.runtime import exception_matches
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
    runtime, formatted = 0, False
    for op, t in zip(s.args[1:], ts[1:]):
        if isinstance(op, Const) and isinstance(op.value, _CONSTANTS):
            continue
        if holds_formatted(t):      # `assert ok, f"... {x.shape}"`: Python formats it
            formatted = True
            continue
        if t not in _NUMBERS:
            ctx.fail(f"raising {name} with an argument of type {t} is not compiled "
                     "(constants and numbers are)")
        runtime += 1
    if runtime > MAX_DETAILS:
        ctx.fail(f"raising {name} with more than {MAX_DETAILS} arguments computed at run "
                 "time is not compiled")
    ctx.typing.impls[s.var] = RERUN if formatted else RAISED
    ctx.typing.calls[s.var] = Call(None, list(s.args[1:]), cls)
    return NONE


def _cg_exception(fc: Any, s: Any, ts: list) -> Any:
    """Nothing: the block's `raise` records the exception (`FunctionGen._emit_term`)."""
    return None


def _cg_exception_rerun(fc: Any, s: Any, ts: list) -> Any:
    """An exception whose message is an f-string: the call leaves compiled code here
    and its rerun in the interpreter raises it, formatted by Python (a raise is the
    cold path; a device, which cannot rerun, raises the class with the template)."""
    cls = fc.typing.calls[s.var].callee
    fc.deopt_if(L.Constant(L.IntType(1), 1), f"{cls.__name__} with a formatted message", cls)
    return None


def _uses(ir: IR, var: Var) -> list:
    return [user for user, a in ir.uses() if a == var]


RAISED = Impl("an exception class, raised at once", None, exception_call, lower=_cg_exception)
RERUN = Impl("an exception class with an f-string, raised by the interpreter's rerun", None,
             exception_call, lower=_cg_exception_rerun)
UNTYPED_CALLS.insert(0, exception_call)   # (it answers only for exception classes)


def _t_caught(ctx: Any, s: Any, ts: list) -> Type:
    return CAUGHT


def _cg_caught(fc: Any, s: Any, ts: list) -> Any:
    if not fc.mg.reruns:      # a device: its `except` would ask the host
        raise TypingError(f"jit: {fc.source_name} at {fc.ir.file}:{s.line} has an except "
                          "clause, which GPU code does not compile")
    base = fc.mg.errinfo_base(fc.b)
    word = fc.b.load(fc.b.gep(base, [L.Constant(L.IntType(64), 1)],
                              source_etype=L.IntType(64)), typ=L.IntType(64))
    return fc.b.inttoptr(word, L.PointerType())


_KEPT: list = []     # the classes `except` clauses match against (their pointers are baked in)


def _is_matching(ctx: Any, s: Any, ts: list) -> bool:
    return len(ts) == 2 and ts[0] == CAUGHT


def _t_matches(ctx: Any, s: Any, ts: list) -> Type:
    kinds = s.args[2].value if isinstance(s.args[2], Const) else None
    every = kinds if isinstance(kinds, tuple) else (kinds,)
    if not all(is_exception_class(k) for k in every):
        ctx.fail("except of something other than constant exception classes is not compiled")
    return BOOL


def _cg_matches(fc: Any, s: Any, ts: list) -> Any:
    kinds = s.args[2].value
    _KEPT.append(kinds)
    word = fc.b.ptrtoint(fc.get(s.args[1]), L.IntType(64))
    fnty = L.FunctionType(L.IntType(64), [L.IntType(64), L.PointerType()])
    hit = fc.b.call(runtime_callee("zy_exception_matches", fnty),
                    [word, symbols.object_ptr(kinds)])
    return fc.b.icmp_signed("!=", hit, L.Constant(L.IntType(64), 0))


REGISTRY.overload("caught", "in a handler block", lambda ctx, s, ts: True, _t_caught,
                  _cg_caught, family="exceptions")
REGISTRY.declare(exception_matches, family="exceptions",
                 pattern="a caught exception, constant classes", matches=_is_matching,
                 types=_t_matches, lower=_cg_matches)


# -- a write the J transform refuses where it runs (adjoint.passes.inplace.refused_write) --------
def _t_refused_write(ctx: Any, s: Any, ts: list) -> Type:
    if not isinstance(s.args[1], Const) or not isinstance(s.args[1].value, str):
        ctx.fail("refused_write needs a constant message")
    return NONE


def _cg_refused_write(fc: Any, s: Any, ts: list) -> Any:
    message = s.args[1].value.replace("{", "{{").replace("}", "}}")
    fc.raise_if(L.Constant(L.IntType(1), 1), TypeError, message)
    return L.Constant(L.IntType(8), 0)


REGISTRY.declare(refused_write, family="exceptions", pattern="a constant message",
                 types=_t_refused_write, lower=_cg_refused_write)
