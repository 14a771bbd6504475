"""The order of an IR's blocks, as type inference sees it: whether one round over them
in order gives every value its final type."""
from __future__ import annotations

from ssair.ir import IR


def flows_forward(ir: IR) -> bool:
    """Does every edge of `ir` (a branch's, and a phi's incoming one) go from a block to
    a later one in `ir.blocks`?  Then one round of `Engine._run` over the blocks in
    order types each value from final types (no loop carries one back)."""
    pos = {b.id: k for k, b in enumerate(ir.blocks)}
    for k, b in enumerate(ir.blocks):
        if any(pos.get(succ, -1) <= k for succ in b.successors()):
            return False
        if any(pos.get(pred, k) >= k for p in b.phis for pred in p.incoming):
            return False
    return True
