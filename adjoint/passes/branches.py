"""Pass `record_branches`: every block with two or more predecessors gets a *dummy
phi* whose value names the edge that was taken.

Requires: `merge_returns` (the entry has no predecessors).  Guarantees: for each
block B with predecessors P1..Pk (k >= 2) a phi `%d = φ (#P1 => P1, ..., #Pk => Pk)`
(integer constants: the predecessor's block id) is appended to B's phis, named
`edge`; `meta["dummy_phis"]` maps B's id to `%d`.  The adjoint reads the recorded
value and branches back along that edge.  The input is not modified.

`silent_joins(fwd, act)` (after `instrument`) lists the blocks whose edge need not
be recorded: every predecessor is an empty detour from one common block C (one
predecessor, C; no records; no active phis) and the block has no active phis, so
whichever edge was taken the adjoint does the same thing (nothing, then C's).
"""
from __future__ import annotations

from ssair import IR


def record_branches(ir: IR) -> IR:
    out = ir.copy()
    preds = out.predecessors()
    dummies = {}
    for b in out.blocks:
        ps = preds[b.id]
        if len(ps) < 2:
            continue
        dummies[b.id] = out.add_phi(b, {p: p for p in ps}, name="edge")
    out.meta["dummy_phis"] = dummies
    return out


def silent_joins(ir: IR, act) -> set:
    """Blocks whose dummy phi the adjoint does not need (see the module docstring)."""
    preds = ir.predecessors()
    records = ir.meta["records"]
    blocks = ir.block_map()
    out = set()
    for bid in ir.meta["dummy_phis"]:
        ps = preds[bid]
        froms = {tuple(preds[p]) for p in ps}
        if len(froms) != 1 or len(next(iter(froms))) != 1 or bid in ps:
            continue
        if any(records.get(p) or _active_phis(blocks[p], act) for p in ps):
            continue
        if not _active_phis(blocks[bid], act):
            out.add(bid)
    return out


def _active_phis(block, act) -> bool:
    return any(act.is_active(p.var) for p in block.phis if p.name != "edge")
