"""SSA construction for code written with mutable variables (Braun, Buchwald, Hack,
Leissa, Mallon, Zwinkau 2013, "Simple and Efficient Construction of Static Single
Assignment Form").  One builder serves both of its users:

* the lowering *declares* its blocks and their predecessors as it discovers them
  (`add_block`, `add_pred`) and *seals* a block (`seal`) once all its predecessors
  are known;
* a pass that generates code (the adjoint) creates blocks and terminators in the IR
  in any order and never declares them: an undeclared block counts as unsealed
  until `finish`, which takes its predecessors from the IR.

Variables are keys (any hashable: a local's name, a stack slot, a primal `Var`).
`write(key, block, operand)` and `read(key, block)` take a `Block` or a block id.
A read in a block without a local definition
  * in an unsealed block, creates an operandless ("incomplete") phi that sealing
    completes from the block's predecessors;
  * in a sealed block with one predecessor, reads there;
  * in a sealed block with several, creates a phi filled from all of them;
  * in a sealed block without predecessors, yields `default(key)` (the undefined
    value: `Const(None)` unless the user passes another).
A phi the builder made whose operands are all one value (ignoring self references)
is removed when it is completed and again, to a fixpoint, in `finish`, which then
rewrites every use of a removed phi; phis already in the IR are never removed.  Phis are named `phi_name(key)` (None by default) and carry the
line `phi_line[block id]` when the user sets one.

Requires: every terminator is in place before `finish`; a declared block's declared
predecessors are its predecessors in the IR.  Guarantees: every phi left has exactly
one incoming operand per predecessor, in predecessor order.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .ir import IR, Block, Const, Phi, Var


def _no_name(key: Any) -> str | None:
    return None


def _none(key: Any) -> Any:
    return Const(None)


class SSABuilder:
    """Current definitions per (key, block), predecessor lists, sealed blocks and
    the phis created for one IR under construction.

    `phis` maps every phi value the builder created to its `Phi` (removed ones
    included); `repl` maps a removed phi's value to the operand replacing it.
    """

    def __init__(self, ir: IR, default: Callable[[Any], Any] | None = None,
                 phi_name: Callable[[Any], str | None] | None = None):
        self.ir = ir
        self.default = default or _none
        self.phi_name = phi_name or _no_name
        self.defs: dict = {}        # key -> {block id: operand}
        self.preds: dict = {}       # declared block id -> [pred block id]
        self.blocks: dict = {}      # block id -> Block
        self.sealed: set = set()
        self.incomplete: dict = {}  # block id -> {key: Phi}
        self.repl: dict = {}
        self.phis: dict = {}
        self.keys: dict = {}        # phi Var -> key
        self.phi_line: dict = {}    # block id -> line of phis made there
        self.done = False

    # -- declaring blocks (incremental use) ------------------------------------
    def add_block(self, block: Block) -> None:
        """Declare `block`: its predecessors come from `add_pred`."""
        self.blocks[block.id] = block
        self.preds.setdefault(block.id, [])

    def add_pred(self, block: Block, pred: Block) -> None:
        self.add_block(block)
        if pred.id not in self.preds[block.id]:
            self.preds[block.id].append(pred.id)

    def seal(self, block: Any) -> None:
        """All predecessors of `block` are known: complete its incomplete phis."""
        bid = _bid(block)
        if bid in self.sealed:
            return
        self.sealed.add(bid)
        for key, phi in self.incomplete.pop(bid, {}).items():
            self._add_operands(key, phi, bid)

    # -- variables ---------------------------------------------------------------
    def resolve(self, v: Any) -> Any:
        """`v` with removed phis replaced by what replaced them."""
        while isinstance(v, Var) and v in self.repl:
            v = self.repl[v]
        return v

    def write(self, key: Any, block: Any, value: Any) -> None:
        self.defs.setdefault(key, {})[_bid(block)] = value

    def read(self, key: Any, block: Any) -> Any:
        bid = _bid(block)
        v = self.defs.get(key, {}).get(bid)
        if v is not None:
            return self.resolve(v)
        return self._read_recursive(key, bid)

    def _read_recursive(self, key: Any, bid: int) -> Any:
        preds = self._preds(bid)
        if bid not in self.sealed:
            phi = self._new_phi(bid, key)
            self.incomplete.setdefault(bid, {})[key] = phi
            val = phi.var
        elif len(preds) == 1:
            val = self.read(key, preds[0])
        elif not preds:
            val = self.default(key)
        else:
            phi = self._new_phi(bid, key)
            self.write(key, bid, phi.var)
            val = self._add_operands(key, phi, bid)
        self.write(key, bid, val)
        return val

    def _preds(self, bid: int) -> list:
        return self.preds.get(bid, [])

    def _block(self, bid: int) -> Block:
        b = self.blocks.get(bid)
        if b is None:
            self.blocks.update((x.id, x) for x in self.ir.blocks if x.id not in self.blocks)
            b = self.blocks[bid]
        return b

    def _new_phi(self, bid: int, key: Any) -> Phi:
        block = self._block(bid)
        self.ir.add_phi(block, {}, line=self.phi_line.get(bid), name=self.phi_name(key))
        phi = block.phis[-1]
        self.phis[phi.var] = phi
        self.keys[phi.var] = key
        return phi

    def _add_operands(self, key: Any, phi: Phi, bid: int) -> Any:
        for p in self._preds(bid):
            phi.incoming[p] = self.read(key, p)
        return self._try_remove(phi, bid)

    def _try_remove(self, phi: Phi, bid: int) -> Any:
        same = _trivial_value(phi, self.resolve)
        if same is _UNDEFINED:
            same = self.default(self.keys.get(phi.var))
        if same is None:
            return phi.var
        self.repl[phi.var] = same
        block = self._block(bid)
        block.phis = [p for p in block.phis if p is not phi]
        return same

    # -- finishing -----------------------------------------------------------------
    def finish(self) -> None:
        """Seal every block (undeclared ones get their IR predecessors), drop the
        trivial phis this builder made to a fixpoint and rewrite every use of a
        removed phi.  Phis it did not make are the caller's and stay, trivial or
        not: a pass that carries values to an exit through an existing IR must not
        rewrite the phis other passes' metadata names (a return's phi, a record)."""
        ir_preds = self.ir.predecessors()
        for b in self.ir.blocks:
            self.blocks.setdefault(b.id, b)
            if b.id not in self.preds:
                self.preds[b.id] = ir_preds.get(b.id, [])
        for bid in list(self.blocks):
            self.seal(bid)
        self.done = True
        changed = True
        while changed:
            changed = False
            for b in self.ir.blocks:
                for phi in [p for p in b.phis if p.var in self.phis]:
                    if self._try_remove(phi, b.id) is not phi.var:
                        changed = True
        self.ir.replace_uses(self.repl)


_UNDEFINED = object()


def _bid(block: Any) -> int:
    return block if isinstance(block, int) else block.id


def _trivial_value(phi: Phi, resolve) -> Any:
    """The one value `phi` merges (ignoring itself), `_UNDEFINED` when it merges
    only itself, or None when it is needed."""
    same = None
    for op in phi.incoming.values():
        op = resolve(op)
        if op == phi.var or (same is not None and op == same):
            continue
        if same is not None:
            return None
        same = op
    return same if same is not None else _UNDEFINED
