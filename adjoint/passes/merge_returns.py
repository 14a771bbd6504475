"""Pass `merge_returns`: give the function exactly one exit block and an entry block
without predecessors.

Requires: a verified IR.  Guarantees: exactly one block ends in `return`; when the
input had several, a new last block `X` holds `%r = φ (#b => v, ...)` over the
returned operands and each former return jumps to `X`; where every path ends reading
a missing name, the `raise` after each read (which never runs: the read raises)
becomes a jump to a new `return None` block; when the entry block had predecessors
(a loop back to it) and no phis, a fresh entry block jumping to it is prepended.  The
input is not modified.  `meta["exit"]` names the exit block.
"""
from __future__ import annotations

from lowering.runtime import raised_by_missing_name
from ssair import IR, Const, Goto, Raise, Return


def merge_returns(ir: IR) -> IR:
    out = ir.copy()
    _fresh_entry(out)
    rets = [b for b in out.blocks if isinstance(b.term, Return)] or _exit_after_reads(out)
    if not rets:
        raise ValueError(f"merge_returns: {ir.name} never returns")
    if len(rets) == 1:
        out.meta["exit"] = rets[0].id
        return out
    exit_block = out.add_block()
    incoming = {b.id: b.term.value for b in rets}
    line = rets[-1].term.line
    r = out.add_phi(exit_block, incoming, line=line)
    for b in rets:
        b.term = Goto(exit_block.id, b.term.line)
    exit_block.term = Return(r, line)
    out.meta["exit"] = exit_block.id
    return out


def _exit_after_reads(ir: IR) -> list:
    """For a function whose every path ends reading a missing name: each `raise` of
    `missing_name`'s result (which raises itself, so the `raise` never runs) becomes a
    jump to a new `return None` block, which is returned (in a list).  Otherwise []."""
    ends = [b for b in ir.blocks if isinstance(b.term, Raise) and raised_by_missing_name(b)]
    if not ends or any(isinstance(b.term, Raise) for b in ir.blocks if b not in ends):
        return []
    exit_block = ir.add_block()
    exit_block.term = Return(Const(None), ends[-1].term.line)
    for b in ends:
        b.term = Goto(exit_block.id, b.term.line)
    return [exit_block]


def _fresh_entry(ir: IR) -> None:
    entry = ir.entry
    if not ir.predecessors()[entry.id]:
        return
    if entry.phis:
        raise ValueError(f"merge_returns: entry block of {ir.name} has phis")
    new = ir.add_block()
    ir.blocks.remove(new)
    ir.blocks.insert(0, new)
    new.term = Goto(entry.id)
