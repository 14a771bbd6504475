"""`with np.errstate(divide="ignore", ...):` lowered as its body alone.

`np.errstate` only sets how numpy reports floating-point errors (warn, ignore, print,
log, raise, call).  Code that differentiates or compiles a function never reports
them (compiled code does not warn at all, and its results are the same numbers), so
a block that only chooses among the reporting modes (`ignore`, `warn`, `print`,
`log`) is its body: the `__enter__`/`__exit__` calls and the handler that calls
`__exit__` with an exception are dropped, and the body's statements raise to the
handler around the `with` (or out of the function).  The JIT, which runs no context
managers, then compiles such a function; the interpreter runs it without the
context (numpy's own warnings may show).  A block that asks numpy to raise
(`"raise"`, `"call"`), any other context manager, or one whose value is bound
(`as e`) is left as it is.

Pass `drop_errstate_blocks(ir)` runs on the lowered IR, in place.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ssair import IR, Const, Var
from ssair.ir import Goto
from ssair.passes.simplifycfg import drop_unreachable, renumber

REPORTING_ONLY = frozenset({"ignore", "warn", "print", "log"})


def drop_errstate_blocks(ir: IR) -> None:
    """See the module docstring."""
    if not any(_is_errstate(s) for b in ir.blocks for s in b.stmts):
        return                  # (the usual function: one look, no tables built)
    changed = False
    while True:
        found = _next_block(ir)
        if found is None:
            break
        _drop(ir, *found)
        changed = True
    if changed:
        drop_unreachable(ir)
        renumber(ir)


def _is_errstate(s: Any) -> bool:
    if s.op != "call" or len(s.args) != 1 or not isinstance(s.args[0], Const) \
            or s.args[0].value is not np.errstate or not s.kwargs:
        return False
    return all(isinstance(v, Const) and v.value in REPORTING_ONLY for v in s.kwargs.values())


def _next_block(ir: IR) -> Optional[tuple]:
    """(the errstate call, its `__enter__`/`__exit__` reads and calls, the handler
    block, the handler around the `with`) of one droppable block, or None."""
    stmts = {s.var: (b, s) for b in ir.blocks for s in b.stmts}
    uses: dict = {}
    for b in ir.blocks:
        for s in list(b.stmts) + list(b.phis):
            for v in s.operands():
                if isinstance(v, Var):
                    uses.setdefault(v, []).append(s)
        term_value = getattr(b.term, "value", None)
        if isinstance(term_value, Var):
            uses.setdefault(term_value, []).append(b.term)
    for b, s in stmts.values():
        if not _is_errstate(s):
            continue
        reads = {u.args[1].value: u for u in uses.get(s.var, [])
                 if u.op == "getattr" and isinstance(u.args[1], Const)}
        if set(reads) != {"__enter__", "__exit__"} or len(uses[s.var]) != 2:
            continue
        enter, leave = reads["__enter__"], reads["__exit__"]
        entered = [u for u in uses.get(enter.var, []) if u.op == "call"]
        exits = uses.get(leave.var, [])
        normal = [u for u in exits if u.op == "call" and len(u.args) == 4 and
                  all(a == Const(None) for a in u.args[1:])]
        if len(entered) != 1 or uses.get(entered[0].var) or len(normal) != 1 \
                or uses.get(normal[0].var):
            continue                   # (`with ... as e`, or a shape not the with's)
        handler = _handler_after(ir, stmts[entered[0].var][0])
        outer = _handler_of(ir, stmts[normal[0].var][0].id)   # (`__exit__` runs under
        if handler is None or outer is False:                  # the with's own handler)
            continue
        if outer is not None and any(b.phis for b in ir.blocks if b.id == outer):
            continue        # (its phis would need a value from each block it now gets)
        return s, enter, leave, entered[0], normal[0], handler, outer
    return None


def _handler_after(ir: IR, b: Any) -> Any:
    """The handler of the body after the `__enter__` call in block `b`: the `unwind`
    of its jump, or (3.10) of the jump out of the empty block it goes to."""
    blocks = {x.id: x for x in ir.blocks}
    for _ in range(3):
        term = b.term
        if getattr(term, "unwind", None) is not None:
            return term.unwind
        nxt = blocks.get(term.target) if isinstance(term, Goto) else None
        if nxt is None or nxt.stmts or nxt.phis:
            return None
        b = nxt
    return None


def _handler_of(ir: IR, block: int) -> Any:
    """The handler protecting `block` (the `unwind` of the jumps into it), None for
    none, False where its predecessors disagree."""
    got = {getattr(b.term, "unwind", None) for b in ir.blocks if block in b.successors()
           and getattr(b.term, "target", None) == block}
    return got.pop() if len(got) == 1 else False


def _drop(ir: IR, cm, enter, leave, entered, normal, handler: int, outer) -> None:
    gone = {cm.var, enter.var, leave.var, entered.var, normal.var}
    for b in ir.blocks:
        b.stmts = [s for s in b.stmts if s.var not in gone]
        if getattr(b.term, "unwind", None) == handler:
            b.term.unwind = outer
