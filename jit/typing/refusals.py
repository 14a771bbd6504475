"""What type inference says when it refuses: each error in the user's terms, naming
the construct, the function and file:line, never zygopy's own helpers or files.

`refuse_exceptions` refuses exception handling (which compiled code lacks),
`uncompiled_construct` a primitive with no type rule, and `describe` /
`internal_call` tell a statement (a call of one of zygopy's helpers as what it does
for the user); `names_internals` spots a message that names zygopy's own code.
"""
from __future__ import annotations

import os
from typing import Any, Optional

from lowering.runtime import raised_by_missing_name
from ssair.ir import IR, Const, Goto, Phi, Raise, Stmt, Var
from ssair.primitives import PRIMITIVES

from jit.types import TypingError


def refuse_exceptions(t: Any) -> None:
    """A `raise` that does not compile is refused at typing time, so
    `backend="auto"` runs the interpreter.  A `raise` of a new exception or of the one
    an `except` caught compiles (`jit.typing.raising`), and so does the `raise` after
    a read of a missing name: the read raises, and nothing reaches the `raise` (see
    `lowering.runtime.raised_by_missing_name`)."""
    from jit.typing.raising import raise_refusal
    for b in t.ir.blocks:
        if isinstance(b.term, Raise) and raised_by_missing_name(b):
            continue
        why = raise_refusal(t.ir, b.term) if isinstance(b.term, Raise) else None
        if why is not None:
            _refuse(t, b.term.line, f"has a raise statement that does not compile: {why}")
        exits = [s for s in b.stmts if s.op == "getattr" and len(s.args) == 2
                 and s.args[1] == Const("__exit__")]
        if exits and any(isinstance(x.term, Goto) and x.term.unwind is not None
                         for x in t.ir.blocks):
            _refuse(t, exits[0].line, "has a with block; compiled code does not run context "
                    "managers yet")


def _refuse(t: Any, line: Any, what: str) -> None:
    name = t.ir.meta.get("source_name", t.ir.name)
    raise TypingError(f"jit: {name} at {t.ir.file}:{line or t.ir.firstline} {what} "
                      "(backend='auto' runs it in the interpreter)")


def describe(typing: Any, d: Any) -> str:
    """`%5 = mul(%3, %4)` in f at file.py:12, for error messages.  A call of one of
    zygopy's own helpers is told in the user's terms (see `internal_call`)."""
    from ssair.printer import format_stmt
    ir = typing.ir
    text = internal_call(d) or (format_stmt(d) if isinstance(d, (Stmt, Phi)) else str(d))
    where = f"{ir.file}:{getattr(d, 'line', None) or ir.firstline}"
    return f"{text} in {ir.meta.get('source_name', ir.name)} at {where}"


# the last: the __module__ of the library's plain-Python code (jit.library.python_impls.MARK)
_OWN_PACKAGES = ("lowering.", "adjoint.", "jit.", "ssair.", "jit_array_impls")


_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


_OWN_DIRS = tuple(os.path.join(_ROOT, p.rstrip("."), "") for p in _OWN_PACKAGES[:4])


def names_internals(text: str) -> bool:
    """Does an error message name zygopy's own code (a module or a source file)?"""
    return any(p in text for p in _OWN_PACKAGES) or any(d in text for d in _OWN_DIRS)


def internal_call(d: Any) -> Optional[str]:
    """What a call of a zygopy helper does, for a user (`__zygopy_explain__` of the
    callee, given its constant operands), or None for any other statement."""
    if not (isinstance(d, Stmt) and d.op in ("call", "jcall") and isinstance(d.args[0], Const)):
        return None
    f = d.args[0].value
    explain = getattr(f, "__zygopy_explain__", None)
    if explain is not None:
        return explain(*[a.value if isinstance(a, Const) else None for a in d.args[1:]])
    module = getattr(f, "__zygopy_symbol__", None) or getattr(f, "__module__", None) or ""
    if module.startswith(_OWN_PACKAGES):
        return "a step zygopy adds to differentiate this function"
    return None


_CELL_OPS = ("make_cell", "cell_get", "cell_set")


# the user's construct behind each primitive that compiled code does not have
_CONSTRUCTS = {
    "caught": "an `except` block",
    "spush": "reverse mode over reverse mode (the gradient of a function's own pullback)",
    "spop": "reverse mode over reverse mode (the gradient of a function's own pullback)",
}


def uncompiled_construct(typing: Any, s: Stmt) -> str:
    """The error for statement `s`, whose primitive has no type rule, in the user's
    terms: the construct, the function and file:line."""
    ir = typing.ir
    if s.op in _CELL_OPS:
        made = _cell_closure(ir, s)
        line = (made or s).line or ir.firstline
        name = _cell_name(ir, s)
        what = (f"makes a function that captures {name!r}, a variable assigned again "
                "after the function is made (a closure made in a loop)")
    else:
        line = s.line or ir.firstline
        sym = getattr(PRIMITIVES.get(s.op), "symbol", None) or s.op
        what = f"uses {_CONSTRUCTS.get(s.op, f'an operation ({sym})')}"
    return (f"jit: {ir.meta.get('source_name', ir.name)} at {ir.file}:{line} {what}; "
            f"compiled code does not support it yet (backend='auto' runs it in the "
            f"interpreter)")


def _cell_def(ir: IR, s: Stmt) -> Stmt:
    """The `make_cell` statement of a cell operation."""
    if s.op == "make_cell" or not s.args or not isinstance(s.args[0], Var):
        return s
    return next((d for d in ir.definitions()
                 if isinstance(d, Stmt) and d.var == s.args[0]), s)


def _cell_name(ir: IR, s: Stmt) -> str:
    return _cell_def(ir, s).name or "a variable"


def _cell_closure(ir: IR, s: Stmt) -> Optional[Stmt]:
    """The first `make_closure` that captures the cell of `s` (where the user made the
    function), or None."""
    cell = _cell_def(ir, s).var
    return next((x for b in ir.blocks for x in b.stmts
                 if x.op == "make_closure" and cell in x.args), None)
