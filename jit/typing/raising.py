"""`raise` in compiled code.

`raise E` and `raise E(a, ...)` of an exception class `E` (a builtin one or the
user's) compile when each argument is a constant or a number: the exception is
made only to be raised, so compiled code never holds it.  The call `E(...)` is
typed as nothing (`jit.library.exceptions`); the block's `raise` records an error site that
names `E` and how to rebuild each argument (a constant, or an int, float or bool
detail of the error record), and returns ERROR like any native error
(`jit.codegen.function`).  The entry then makes `E(*args)` as CPython would, so the
caller sees the same class, arguments and message.

Refused, by `raise_refusal`: raising anything else (a variable holding an
exception) and an exception used as a value besides being raised.

`try` / `except`: an error raised in a protected block (`goto #k unwind #h`) goes
to its handler #h instead of leaving the function (`FunctionGen._make_landings`);
a DEOPT still leaves, and the interpreter reruns the whole call.  The handler's
`caught()` is the error record's site word (`CAUGHT`), which `except E:` matches
(`jit.library.exceptions`) and a re-raise writes back.
"""
from __future__ import annotations

import inspect
from typing import Any, Optional

from jit.types import BOOL, FLOAT64, INT64, OpaqueT, TypingError
from ssair.ir import IR, Const, Goto, Raise, Var

_KINDS = {INT64: "int", FLOAT64: "float", BOOL: "bool"}
# A caught exception (`caught()` of a handler block): natively the word of its error
# record, the site id (`jit.runtime.caught`).  It is only matched and re-raised.
CAUGHT = OpaqueT("caught exception")


def is_exception_class(x: Any) -> bool:
    return inspect.isclass(x) and issubclass(x, BaseException)


def _definition(ir: IR, var: Var) -> Any:
    for b in ir.blocks:
        for s in b.stmts:
            if s.var == var:
                return s
    return None


def raise_refusal(ir: IR, term: Raise) -> Optional[str]:
    """Why the `raise` `term` does not compile, or None when it does."""
    v = term.value
    if isinstance(v, Const):
        return None if is_exception_class(v.value) else "it raises a constant that is not " \
            "an exception class"
    s = _definition(ir, v)
    if s is not None and s.op == "caught":
        return None
    if s is None or s.op != "call" or not isinstance(s.args[0], Const) \
            or not is_exception_class(s.args[0].value):
        return "it raises a value, not a new exception (compiled code holds no exceptions)"
    if s.kwargs:
        return "the exception is made with keyword arguments"
    return None


def raised(typing: Any, term: Raise) -> Optional[tuple]:
    """(exception class, argument operands) of a compiled `raise`, or None."""
    v = term.value
    if isinstance(v, Const):
        return (v.value, []) if is_exception_class(v.value) else None
    call = typing.calls.get(v)
    if call is None or not is_exception_class(call.callee):
        return None
    return call.callee, list(call.operands)


def argument_specs(types: list, operands: list) -> tuple:
    """`jit.runtime.native.Site.args` of a raise: ("const", value) of a constant
    argument, (kind, k) of the k-th number recorded."""
    out, k = [], 0
    for op, t in zip(operands, types):
        if isinstance(op, Const):
            out.append(("const", op.value))
        else:
            out.append((_KINDS[t], k))
            k += 1
    return tuple(out)


def protected_blocks(ir: IR) -> dict:
    """{block k: (p, h)} for each `goto #k unwind #h` ending block #p: an error raised
    in #k goes to handler #h.  A protected block has that one predecessor (the
    lowering makes one per protected statement)."""
    out = {}
    preds = ir.predecessors()
    for b in ir.blocks:
        t = b.term
        if isinstance(t, Goto) and t.unwind is not None:
            if t.target in out or len(preds.get(t.target, ())) != 1:
                raise TypingError(f"jit: block #{t.target} of {ir.name} is entered from "
                                  "more than one place, protected by a handler")
            out[t.target] = (b.id, t.unwind)
    return out
