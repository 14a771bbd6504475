"""Unrolling a loop over a tuple whose body is more than one block (an inner loop, a
branch): `for item in (W, b): for leaf in f(item): ...`, as a recursive flatten of
a pytree writes it.  `jit.typing.unroll` unrolls a one-block body in place; this
copies the body's whole region of blocks once per entry instead.

The region is every block reached from the header's body successor without passing
the header; it must leave the loop only through the header (no `break` to another
block) and return to the header from one block (the latch).  Copy k runs the
header's statements for iteration k (the counter a constant, so `t[k]` is typed for
entry k), then its own copies of the region's blocks; its latch goes on to copy k+1,
the last one to the loop's exit.
"""
from __future__ import annotations

import copy as pycopy
from typing import Any, Optional

from ssair.ir import IR, Block, Branch, Goto, Phi


def _region(ir: IR, head: Block, entry: int, exit_id: int) -> Optional[tuple]:
    """(region block ids in reverse postorder from `entry`, the latch id), or None."""
    blocks, order, seen = ir.block_map(), [], set()

    def visit(b: int) -> bool:
        if b == head.id or b in seen:
            return True
        if b == exit_id or b not in blocks:
            return False
        seen.add(b)
        ok = all(visit(s) for s in blocks[b].successors())
        order.append(b)
        return ok
    if not visit(entry):
        return None
    preds = ir.predecessors()
    if any(p not in seen and not (b == entry and p == head.id)
           for b in seen for p in preds[b]):
        return None             # entered from outside the loop
    latches = [b for b in seen if head.id in blocks[b].successors()]
    if len(latches) != 1:
        return None
    return order[::-1], latches[0]


def unroll_region(ir: IR, head: Block, count: int, entry_pred: int, copy_stmt: Any,
                  mapped: Any) -> bool:
    """Unroll the loop with header `head` `count` times, its body a region of blocks
    (see the module doc); False (nothing changed) when it is not of that form.
    `copy_stmt(ir, s, env)` copies a statement for one iteration (`unroll._copy`)."""
    if not isinstance(head.term, Branch):
        return False
    for entry, exit_id in ((head.term.then, head.term.else_), (head.term.else_, head.term.then)):
        found = _region(ir, head, entry, exit_id)
        if found is not None:
            break
    else:
        return False
    order, latch = found
    blocks = ir.block_map()
    next_id = max(blocks) + 1
    head_phis, head_stmts, line = list(head.phis), list(head.stmts), head.term.line
    env = {p.var: p.incoming[entry_pred] for p in head_phis}
    head.phis, head.stmts = [], []
    made, current, last_latch = [], head, head.id
    for k in range(count):
        current.stmts = [copy_stmt(ir, s, env) for s in head_stmts]
        ids = {b: next_id + j for j, b in enumerate(order)}
        next_id += len(order)
        current.term = Goto(ids[entry], line)
        copies = [_copy_block(ir, blocks[b], ids, env, copy_stmt, mapped) for b in order]
        for c, b in zip(copies, order):   # (once the whole copy is made: a phi may
            for p, q in zip(c.phis, blocks[b].phis):     # read a later block's value)
                p.incoming = {(current.id if i == head.id else ids.get(i, i)): mapped(v, env)
                              for i, v in q.incoming.items()}
        env = {p.var: mapped(p.incoming[latch], env) for p in head_phis}
        nxt = Block(next_id) if k + 1 < count else None
        next_id += 1
        for c in copies:
            c.term.retarget(head.id, nxt.id if nxt is not None else exit_id)
        made += copies + ([nxt] if nxt is not None else [])
        current, last_latch = nxt, ids[latch]
    if count == 0:
        head.term = Goto(exit_id, line)
    return _finish(ir, head, order, made, exit_id, last_latch, env, mapped)


def _copy_block(ir: IR, b: Block, ids: dict, env: dict, copy_stmt: Any, mapped: Any) -> Block:
    """Block `b` for one iteration: fresh phis (their operands set by the caller), its
    statements copied, its jumps within the region renumbered."""
    out = Block(ids[b.id])
    for p in b.phis:
        env[p.var] = ir.new_var()
        out.phis.append(Phi(env[p.var], {}, p.line, p.name))
    out.stmts = [copy_stmt(ir, s, env) for s in b.stmts]
    term = pycopy.copy(b.term)
    term.map_operands(lambda v: mapped(v, env))
    for old, new in ids.items():
        term.retarget(old, new)
    out.term = term
    return out


def _finish(ir: IR, head: Block, order: list, made: list, exit_id: int, last_latch: int,
            env: dict, mapped: Any) -> bool:
    """Drop the original region, add the copies, and make the exit read the values of
    the last copy."""
    gone = set(order)
    ir.blocks = [b for b in ir.blocks if b.id not in gone] + made
    copied = {id(s) for b in made for s in b.stmts} | {id(s) for s in head.stmts}
    for b in ir.blocks:
        for p in b.phis:
            p.incoming = {(last_latch if i == head.id and b.id == exit_id else i):
                          mapped(v, env) for i, v in p.incoming.items()}
        for s in b.stmts:
            if id(s) not in copied:
                s.map_operands(lambda v: mapped(v, env))
        if b.term is not None and all(b is not m for m in made) and b is not head:
            b.term.map_operands(lambda v: mapped(v, env))
    return True
