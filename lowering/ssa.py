"""On-the-fly SSA construction after Braun et al. 2013, "Simple and Efficient
Construction of Static Single Assignment Form".

Variables are keys: a local's name (str), a stack slot `("$s", k)` or an internal
loop counter `("$it", n)`.  `write`/`read` per block; reading in a block whose
predecessors are not all known (unsealed) creates an incomplete phi that `seal`
completes.  Trivial phis (all operands the same value, ignoring self references)
are removed as they appear and once more, to a fixpoint, in `finish`.

A read that reaches the entry without a definition yields `Const(UNBOUND)`.
"""
from __future__ import annotations

from ssair.ir import IR, Block, Const, Phi, Var

from .runtime import UNBOUND


class SSABuilder:
    """Current definitions, predecessor lists and phis for one IR under construction."""

    def __init__(self, ir: IR):
        self.ir = ir
        self.defs = {}          # key -> {block id: operand}
        self.preds = {}         # block id -> [pred block id]
        self.blocks = {}        # block id -> Block
        self.sealed = set()
        self.incomplete = {}    # block id -> {key: Phi}
        self.repl = {}          # removed phi Var -> operand
        self.phi_line = {}      # block id -> line for phis created there
        self.phis = {}          # phi Var -> Phi

    def add_block(self, block: Block) -> None:
        self.blocks[block.id] = block
        self.preds[block.id] = []

    def add_pred(self, block: Block, pred: Block) -> None:
        if pred.id not in self.preds[block.id]:
            self.preds[block.id].append(pred.id)

    def resolve(self, v):
        while isinstance(v, Var) and v in self.repl:
            v = self.repl[v]
        return v

    def write(self, key, block: Block, value) -> None:
        self.defs.setdefault(key, {})[block.id] = value

    def read(self, key, block: Block):
        v = self.defs.get(key, {}).get(block.id)
        if v is not None:
            return self.resolve(v)
        return self._read_recursive(key, block)

    def _read_recursive(self, key, block: Block):
        preds = self.preds[block.id]
        if block.id not in self.sealed:
            phi = self._new_phi(block, key)
            self.incomplete.setdefault(block.id, {})[key] = phi
            val = phi.var
        elif len(preds) == 1:
            val = self.read(key, self.blocks[preds[0]])
        elif not preds:
            val = Const(UNBOUND)
        else:
            phi = self._new_phi(block, key)
            self.write(key, block, phi.var)
            val = self._add_operands(key, phi, block)
        self.write(key, block, val)
        return val

    def _new_phi(self, block: Block, key) -> Phi:
        name = key if isinstance(key, str) else None
        v = self.ir.add_phi(block, {}, line=self.phi_line.get(block.id), name=name)
        self.phis[v] = _find_phi(block, v)
        return self.phis[v]

    def _add_operands(self, key, phi: Phi, block: Block):
        for p in self.preds[block.id]:
            phi.incoming[p] = self.read(key, self.blocks[p])
        return self._try_remove(phi, block)

    def _try_remove(self, phi: Phi, block: Block):
        same = _trivial_value(phi, self.resolve)
        if same is None:
            return phi.var
        self.repl[phi.var] = same
        block.phis = [p for p in block.phis if p is not phi]
        return same

    def seal(self, block: Block) -> None:
        if block.id in self.sealed:
            return
        self.sealed.add(block.id)
        for key, phi in self.incomplete.pop(block.id, {}).items():
            self._add_operands(key, phi, block)

    def finish(self) -> None:
        """Seal everything, drop trivial phis to a fixpoint, rewrite all uses."""
        for bid in list(self.blocks):
            self.seal(self.blocks[bid])
        changed = True
        while changed:
            changed = False
            for b in self.ir.blocks:
                for phi in list(b.phis):
                    if self._try_remove(phi, b) is not phi.var:
                        changed = True
        self.ir.replace_uses(self.repl)


def _trivial_value(phi: Phi, resolve):
    """The single value a phi merges (ignoring itself), or None if it is needed."""
    same = None
    for op in phi.incoming.values():
        op = resolve(op)
        if op == phi.var or (same is not None and op == same):
            continue
        if same is not None:
            return None
        same = op
    return same if same is not None else Const(UNBOUND)


def _find_phi(block: Block, v: Var) -> Phi:
    return next(p for p in block.phis if p.var == v)
