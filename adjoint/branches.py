"""Pass `record_branches`: every block with two or more predecessors gets a *dummy
phi* whose value names the edge that was taken.

Requires: `merge_returns` (the entry has no predecessors).  Guarantees: for each
block B with predecessors P1..Pk (k >= 2) a phi `%d = φ (#P1 => P1, ..., #Pk => Pk)`
(integer constants: the predecessor's block id) is appended to B's phis, named
`edge`; `meta["dummy_phis"]` maps B's id to `%d`.  The adjoint reads the recorded
value and branches back along that edge.  The input is not modified.
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
