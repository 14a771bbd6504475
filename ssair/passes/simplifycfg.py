"""Control-flow graph simplification."""
from __future__ import annotations

from ..cfg import reachable
from ..ir import IR, Branch, Const, Goto
from .util import is_literal, rekey_incoming, remove_trivial_phis


def simplifycfg(ir: IR) -> IR:
    """Simplify the CFG until nothing changes.

    Requires: a well-formed IR (every block has a terminator; phis have one entry
    per predecessor).
    Guarantees: returns a new IR (the input is untouched) with the same semantics, where
      * a `Branch` on a constant condition becomes a `Goto`, as does one whose two
        targets are the same block;
      * blocks unreachable from the entry are gone, and so are the phi entries for
        edges that no longer exist;
      * phis whose incoming operands are all one value are replaced by it;
      * a block whose unique predecessor ends in `goto` to it is merged into that
        predecessor;
      * a block without statements that only `goto`s another block is bypassed: its
        predecessors jump to the target directly and the target's phis get an entry
        per such predecessor.  Skipped when the block's own phis are used anywhere
        but in the target's phis, or when a predecessor already jumps to the target
        with a different phi value (phis are keyed by predecessor);
      * the entry block stays first; blocks are renumbered 1..n in their order;
      * exception edges stay as they are: a block entered by `goto .. unwind` and a
        block that leaves by one are never merged or bypassed (that would move
        statements into or out of the protected region).
    """
    ir = ir.copy()
    changed = True
    while changed:
        changed = _fold_branches(ir)
        changed = drop_unreachable(ir) or changed
        changed = remove_trivial_phis(ir) or changed
        changed = _merge_chains(ir) or changed
        changed = _bypass_forwarders(ir) or changed
    renumber(ir)
    return ir


def _fold_branches(ir: IR) -> bool:
    changed = False
    for b in ir.blocks:
        t = b.term
        if not isinstance(t, Branch):
            continue
        if t.then == t.else_:
            b.term = Goto(t.then, t.line)
            changed = True
        elif isinstance(t.cond, Const) and is_literal(t.cond.value):
            b.term = Goto(t.then if t.cond.value else t.else_, t.line)
            changed = True
    if changed:
        _prune_phi_entries(ir)
    return changed


def _prune_phi_entries(ir: IR) -> None:
    """Drop phi entries for edges that no longer exist."""
    preds = ir.predecessors()
    for b in ir.blocks:
        for p in b.phis:
            p.incoming = {k: v for k, v in p.incoming.items() if k in preds[b.id]}


def drop_unreachable(ir: IR) -> bool:
    """Remove the blocks unreachable from the entry, and the phi entries of their
    edges, in place; True when any went."""
    live = reachable(ir)
    if len(live) == len(ir.blocks):
        return False
    ir.blocks = [b for b in ir.blocks if b.id in live]
    _prune_phi_entries(ir)
    return True


def _merge_chains(ir: IR) -> bool:
    changed = False
    preds = ir.predecessors()
    blocks = ir.block_map()
    guarded = protected_blocks(ir)
    for b in list(ir.blocks[1:]):
        if len(preds[b.id]) != 1:
            continue
        a = blocks[preds[b.id][0]]
        if a is b or not isinstance(a.term, Goto) or a.term.unwind is not None or a.id in guarded:
            continue
        _merge(ir, a, b, blocks, preds)
        changed = True
    return changed


def _merge(ir: IR, a, b, blocks: dict, preds: dict) -> None:
    """Append `b` (whose only predecessor is `a`, which only jumps to `b`) to `a`."""
    mapping = {p.var: p.incoming[a.id] for p in b.phis}
    a.stmts += b.stmts
    a.term = b.term
    for s in b.successors():
        for p in blocks[s].phis:
            rekey_incoming(p, b.id, a.id)
        preds[s] = [a.id if x == b.id else x for x in preds[s]]
    ir.blocks.remove(b)
    del blocks[b.id]
    if mapping:
        ir.replace_uses(mapping)


def _bypass_forwarders(ir: IR) -> bool:
    changed = False
    guarded = protected_blocks(ir)
    for f in list(ir.blocks[1:]):
        if f.stmts or not isinstance(f.term, Goto) or f.term.target == f.id:
            continue
        if f.term.unwind is not None or f.id in guarded:
            continue
        if _bypass(ir, f):
            changed = True
    return changed


def _bypass(ir: IR, f) -> bool:
    """Redirect the predecessors of the statement-free block `f` to its target.

    `f`'s own phis must be used only by the target's phis (on the edge from `f`);
    the target's phi entry for a predecessor `p` of `f` is then the value that entry
    took through `f`.  False (nothing changed) when that is not so, or when a
    predecessor already jumping to the target would need a different value."""
    target = ir.block(f.term.target)
    if target.id == ir.entry.id or not _phis_only_forwarded(ir, f, target):
        return False
    preds = ir.predecessors()
    fphis = {p.var: p for p in f.phis}

    def through(ph, p):
        v = ph.incoming[f.id]
        return fphis[v].incoming[p] if v in fphis else v

    for p in preds[f.id]:
        if p in preds[target.id] and any(ph.incoming[p] != through(ph, p) for ph in target.phis):
            return False
    for ph in target.phis:
        new = {}
        for k, v in ph.incoming.items():
            if k != f.id:
                new[k] = v
                continue
            for p in preds[f.id]:
                new[p] = through(ph, p)
        ph.incoming = new
    for p in preds[f.id]:
        ir.block(p).term.retarget(f.id, target.id)
    ir.blocks.remove(f)
    return True


def _phis_only_forwarded(ir: IR, f, target) -> bool:
    """Whether every use of a phi of `f` is a phi entry of `target` for edge `f`."""
    if not f.phis:
        return True
    mine = {p.var for p in f.phis}
    allowed = sum(1 for ph in target.phis if ph.incoming.get(f.id) in mine)
    used = sum(1 for _, a in ir.uses() if a in mine)
    return used == allowed


def renumber(ir: IR) -> None:
    """Number the blocks 1..n in their order, rewriting jumps and phi keys."""
    new = {b.id: i + 1 for i, b in enumerate(ir.blocks)}
    if all(k == v for k, v in new.items()):
        return
    for b in ir.blocks:
        b.id = new[b.id]
        for p in b.phis:
            p.incoming = {new[k]: v for k, v in p.incoming.items()}
        _renumber_term(b.term, new)


def protected_blocks(ir: IR) -> set:
    """The blocks entered by `goto .. unwind`."""
    return {b.term.target for b in ir.blocks
            if isinstance(b.term, Goto) and b.term.unwind is not None}


def _renumber_term(t, new: dict) -> None:
    if isinstance(t, Goto):
        t.target = new[t.target]
        if t.unwind is not None:
            t.unwind = new[t.unwind]
    elif isinstance(t, Branch):
        t.then, t.else_ = new[t.then], new[t.else_]
