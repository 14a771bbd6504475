"""Pass `cut_tapes`: an exception that a handler catches leaves the tape as it was
when the protected statement began.

Requires: the finished forward IR (`emit_stacks` done; the adjoint is built from it
before this pass, which adds nothing the adjoint reads).  Guarantees: for each
handler block #h whose protected blocks hold a `jcall`, every block that enters one
of them by `goto .. unwind #h` records `tape_mark(%tape)` (the tape's length) last,
and #h starts, right after `caught()`, with `tape_cut(%tape, φ(marks))`.

Why: a callee's forward pushes onto the one shared tape as it runs; if it raises
halfway, its pushes stay behind, and the caller's adjoint would pop them in place
of its own.  Pushes of the caller's own protected blocks come at their ends, so
they never run when the block raises; a rule's record happens after the rule's
primal returns.  The adjoint of the handler path goes straight back to the block
before the protected one (the edge the dummy phi records), so nothing of the raised
statement is differentiated: its partial effects on the caller's values are not
seen by the handler (SSA), and a callee that writes into an array argument before
raising is the one case whose write the gradient would miss.
"""
from __future__ import annotations

from ssair import IR, Goto, Stmt


def cut_tapes(ir: IR) -> IR:
    tape = ir.meta["tape"]
    blocks = ir.block_map()
    entries: dict = {}
    for b in ir.blocks:
        if isinstance(b.term, Goto) and b.term.unwind is not None:
            entries.setdefault(b.term.unwind, []).append(b)
    for hid, froms in entries.items():
        if not any(s.op == "jcall" for a in froms for s in blocks[a.term.target].stmts):
            continue
        marks = {}
        for a in froms:
            marks[a.id] = ir.new_var()
            a.stmts.append(Stmt(marks[a.id], "tape_mark", [tape]))
        handler = blocks[hid]
        mark = ir.add_phi(handler, marks, name="tape_mark")
        handler.stmts.insert(1, Stmt(ir.new_var(), "tape_cut", [tape, mark]))
    return ir
