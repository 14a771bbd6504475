"""A generic SSA builder for passes that generate code with mutable variables
(Braun, Buchwald, Hack, Leissa, Mallon, Zwinkau 2013, "Simple and Efficient
Construction of Static Single Assignment Form").

A pass creates its blocks and terminators, then `write(key, block_id, operand)` and
`read(key, block_id)` in any order while it fills the blocks: a read in a block
that has no local definition creates an operandless phi there (every block counts
as unsealed until `finish`), which `finish` completes from the block's
predecessors.  `finish` then removes trivial phis (all operands the same value,
ignoring self references) to a fixpoint and rewrites every use.  A read that
reaches a block without predecessors and without a definition yields
`default(key)`.

Requires: every terminator is in place before `finish`.  Guarantees: the phis it
adds have exactly one incoming operand per predecessor.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from .ir import IR, Const, Phi, Var


class SSABuilder:
    """Variables `key` (any hashable) -> current definition per block."""

    def __init__(self, ir: IR, default: Optional[Callable[[Any], Any]] = None):
        self.ir = ir
        self.default = default or (lambda key: Const(None))
        self.defs: dict = {}       # key -> {block id: operand}
        self.pending: list = []    # (key, block id, Phi) to complete in finish
        self.repl: dict = {}       # removed phi Var -> operand
        self.preds: dict = {}
        self.blocks: dict = {}
        self.done = False

    def write(self, key: Any, block: int, value: Any) -> None:
        self.defs.setdefault(key, {})[block] = value

    def read(self, key: Any, block: int) -> Any:
        v = self.defs.get(key, {}).get(block)
        if v is not None:
            return v
        if self.done:
            return self._read_sealed(key, block)
        b = self._block(block)
        var = self.ir.add_phi(b, {})
        phi = b.phis[-1]
        self.pending.append((key, block, phi))
        self.write(key, block, var)
        return var

    def _block(self, bid: int):
        if not self.blocks:
            self.blocks = self.ir.block_map()
        b = self.blocks.get(bid)
        if b is None:
            self.blocks = self.ir.block_map()
            b = self.blocks[bid]
        return b

    def _read_sealed(self, key: Any, block: int) -> Any:
        preds = self.preds.get(block, [])
        if not preds:
            val = self.default(key)
        elif len(preds) == 1:
            val = self.read(key, preds[0])
        else:
            b = self._block(block)
            var = self.ir.add_phi(b, {})
            phi = b.phis[-1]
            self.write(key, block, var)
            for p in preds:
                phi.incoming[p] = self.read(key, p)
            val = var
        self.write(key, block, val)
        return val

    def finish(self) -> None:
        """Complete the pending phis, drop trivial ones, rewrite all uses."""
        self.blocks = self.ir.block_map()
        self.preds = self.ir.predecessors()
        self.done = True
        for key, bid, phi in self.pending:
            preds = self.preds.get(bid, [])
            if not preds:
                phi.incoming = {}
                self.repl[phi.var] = self.default(key)
                continue
            for p in preds:
                phi.incoming[p] = self.read(key, p)
        self._remove_trivial()
        self.ir.replace_uses(self.repl)

    def _resolve(self, v: Any) -> Any:
        while isinstance(v, Var) and v in self.repl:
            v = self.repl[v]
        return v

    def _remove_trivial(self) -> None:
        changed = True
        while changed:
            changed = False
            for b in self.ir.blocks:
                keep = []
                for phi in b.phis:
                    if phi.var in self.repl:
                        changed = True
                        continue
                    same = _trivial_value(phi, self._resolve)
                    if same is None:
                        keep.append(phi)
                        continue
                    self.repl[phi.var] = same
                    changed = True
                b.phis = keep


def _trivial_value(phi: Phi, resolve) -> Any:
    """The one value `phi` merges (ignoring itself), or None when it is needed."""
    same = None
    for op in phi.incoming.values():
        op = resolve(op)
        if op == phi.var or (same is not None and op == same):
            continue
        if same is not None:
            return None
        same = op
    return same if same is not None else Const(None)
