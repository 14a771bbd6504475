"""Pass `checkpoint_loops`: the outermost loops of a finished J transform keep, in
place of every record of every iteration, a snapshot of their state every k header
visits; the adjoint recomputes each segment's records from its snapshot when it
reaches it (`pullback(f, ..., checkpoint=MB)`).

Requires: the finished forward and adjoint (`cut_tapes` done) of a function called
at the top of a pullback: a loop that is entered once per forward.  Guarantees, for
each outermost loop L (header #h) whose blocks push records, without unwind edges:

Forward.  #h gains the counters `c` (header visits so far), `nx` (the visit of the
next snapshot), `p` (the visit of the last one) and `mk` (the tape's length after
it), and is split: its phis and `goto #snap if c == nx`, then #snap, then #h2 with
#h's statements.  #snap measures the words the finished segment pushed per visit,
sets the next stride to `budget // words per visit` (at least 1), truncates the
tape back to `mk` (the segment's records are dropped), and pushes the snapshot
`(c, nx, state...)`: the values of #h's phis and every value from outside L that L
reads.  Each edge leaving L passes a block that truncates the tape to `mk` again, so
after the loop the tape holds only its snapshots, and at any time at most one
segment's records.

Recompute function `name_recompute(%tape, %snap)`: L's blocks, entered at #h with
the snapshot's values, stopping at visit `nx` (or where L exits); it pushes exactly
the records the forward pushed for those visits, as L's own code pushes them.

Adjoint.  It makes one scratch tape and reader per loop at its entry
(`ckpt_tape`, `ckpt_reader`) and frees it at its returns (`ckpt_free`).  Pops of
L's records and the `jback`s of L's calls read the scratch reader.  Each block that
reads L's records first asks `ckpt_spent(scratch, reader)`: all of the segment's
records are read and an earlier segment remains.  While it is, the block pops the
next snapshot from the main tape, recomputes that segment onto the scratch tape and
rewinds the scratch reader (`ckpt_rewind`); a segment may record nothing (the exit
test alone).  Records of one visit lie in one segment, so a block either finds its
records in the scratch tape or finds it spent.  The adjoint's own arithmetic is
unchanged: the gradient is the unlimited tape's, bit for bit.

A recompute runs during `back`, after the rest of the forward and maybe the
caller's own writes, so a snapshot holds the state as it was, not references to
memory written since (`adjoint.passes.aliases` gives the classes of values that
may share memory, `meta["sharing"]`, and those a write may change,
`meta["reread"]`):
  * state the loop may write into (an operand of an impure statement, or a value
    sharing memory with an array the loop assigns into, a list it appends to) is
    copied into the snapshot, and each recompute starts from a copy of that copy:
    a segment starts from the state it had, however many times `back` runs.  The
    values of one class are copied together (`ckpt_copy_joint`), so that one
    object held under two names (`t` and `(t, b)`) stays one; two arrays that
    share memory in part (a view and its base) cannot be copied apart and are
    refused at run time (compiled code refuses more than one array);
  * a phi that a later write may change (the code after the loop, or the caller:
    an argument) is copied into each snapshot (`ckpt_copy`);
  * such a value from outside the loop, which the loop only reads, is copied once
    on entry to the loop, and every snapshot holds that copy.
"""
from __future__ import annotations

from typing import Any

from ssair import IR, Branch, Const, Goto, Return, Stmt, Var
from ssair.cfg import natural_loops, strongly_connected_components
from ssair.ir import Block
from ssair.passes.util import rekey_incoming

WORD_BYTES = 8


class CheckpointError(TypeError):
    """A loop of this function cannot be checkpointed."""


def budget_words(megabytes: float) -> int:
    """Tape words one segment may take for a budget of `megabytes`: the forward's
    tape and the adjoint's scratch tape each hold one segment, and a tape's buffer
    may be twice what it holds (it grows by doubling)."""
    if not isinstance(megabytes, (int, float)) or isinstance(megabytes, bool) \
            or not megabytes > 0:
        raise ValueError(f"pullback: checkpoint= takes a memory budget in MiB (a positive "
                         f"number), not {megabytes!r}")
    return max(1, int(megabytes * 2**20) // (4 * WORD_BYTES))


def outer_loops(ir: IR) -> dict:
    """Header id -> block ids of the loops not inside another loop."""
    loops = natural_loops(ir)
    return {h: body for h, body in loops.items()
            if not any(h in other and h != g for g, other in loops.items())}


def checkpoint_loops(fwd: IR, adj: IR, budget: int, make_function: Any) -> tuple:
    """(forward, adjoint, recompute IRs) with every outer loop of `fwd` that records
    checkpointed; `make_function(ir)` gives a function object carrying a recompute
    IR.  `fwd` and `adj` are not changed."""
    fwd, adj = fwd.copy(), adj.copy()
    adj.meta["pop_of"] = dict(adj.meta.get("pop_of") or {})
    tape = fwd.meta["tape"]
    recomputes = []
    for h, body in sorted(outer_loops(fwd).items()):
        pushed = {s.args[1].id for b in fwd.blocks if b.id in body for s in b.stmts
                  if s.op == "push" and isinstance(s.args[1], Var)}
        if not pushed and not any(s.op == "jcall" for b in fwd.blocks if b.id in body
                                  for s in b.stmts):
            continue
        _refuse(fwd, body)
        state = _state(fwd, h, body, tape)
        copies = _copies(fwd, h, body, state)
        recompute = _recompute_ir(fwd, h, body, tape, state, copies[0], len(recomputes))
        snap = _snapshot_forward(fwd, h, body, tape, state, copies, budget)
        _read_segments(adj, pushed, snap, make_function(recompute))
        recomputes.append(recompute)
    return fwd, adj, recomputes


def _refuse(fwd: IR, body: set) -> None:
    for b in fwd.blocks:
        if b.id in body and isinstance(b.term, Goto) and b.term.unwind is not None:
            line = b.term.line or (b.stmts[-1].line if b.stmts else None)
            raise CheckpointError(
                f"pullback: checkpoint= does not support a try statement inside a "
                f"loop yet (in {fwd.meta.get('source_name', fwd.name)} at "
                f"{fwd.file}:{line})")


def _state(fwd: IR, h: int, body: set, tape: Var) -> list:
    """What a segment starts from: #h's phis (but those that are one constant) and
    the values from outside the loop that its blocks read, in a fixed order."""
    inside = {d.var for b in fwd.blocks if b.id in body for d in b.definitions()}
    header = fwd.block(h)
    out = [p.var for p in header.phis if _constant(p) is None]
    seen = set(out)
    for b in fwd.blocks:
        if b.id not in body:
            continue
        ops = [a for d in b.definitions() if d not in header.phis for a in d.operands()]
        ops += [v for p in header.phis for k, v in p.incoming.items() if k in body]
        ops += b.term.operands()
        for a in ops:
            if isinstance(a, Var) and a not in inside and a != tape and a not in seen:
                seen.add(a)
                out.append(a)
    return out


def _copies(fwd: IR, h: int, body: set, state: list) -> tuple:
    """(written, each, once).  `written`: the state values the loop may write into,
    in groups: values that may share memory the loop writes into form one group,
    copied together (`ckpt_copy_joint`) into each snapshot, and again at the start
    of each recompute.  `each`: the other phis whose memory a write after the loop
    or the caller may change (`meta["reread"]`), copied into each snapshot.  `once`:
    the values from outside the loop that such a write may change, copied once on
    entry (the loop only reads them)."""
    from ssair.passes.util import is_pure

    from .aliases import Sharing, written_by
    classes = fwd.meta.get("sharing") or Sharing({}, {})
    reread = fwd.meta.get("reread") or set()
    defs = {s.var: s for b in fwd.blocks for s in b.stmts}
    stmts = [s for b in fwd.blocks if b.id in body for s in b.stmts if s.op != "push"]
    touched = {a for s in stmts if not is_pure(s.op) for a in s.operands()}
    hit = {classes.of(w) for s in stmts for w in written_by(s, defs, None)}
    groups: dict = {}
    for v in state:
        if classes.of(v) in hit:
            groups.setdefault(classes.of(v), []).append(v)
        elif v in touched:
            groups[v] = [v]
    written = list(groups.values())
    copied = {v for g in written for v in g}
    phis = {p.var for p in fwd.block(h).phis}
    each = [v for v in state if v not in copied and v in phis and v in reread]
    once = [v for v in state if v not in copied and v not in phis and v in reread]
    return written, each, once


def _copy_groups(ir: IR, block: Block, groups: list, value_of: dict, where: str) -> dict:
    """Statements at the end of `block` copying each group of written state values
    together (`value_of` maps a state value to what holds it here; `where` names the
    loop for an error); returns state value -> its copy."""
    out = {}
    for g in groups:
        joint = ir.push(block, "ckpt_copy_joint", Const(where),
                        *[value_of.get(v, v) for v in g])
        out.update({v: ir.push(block, "getitem", joint, k) for k, v in enumerate(g)})
    return out


def _where(fwd: IR, body: set) -> str:
    """`f at file:line` of loop `body` (its first line), for messages."""
    line = min((s.line for b in fwd.blocks if b.id in body for s in b.stmts if s.line),
               default=None)
    return f"{fwd.meta.get('source_name', fwd.name)} at {fwd.file}:{line}"


def _constant(phi: Any) -> Any:
    """The Const a phi always takes, or None."""
    vals = list(phi.incoming.values())
    if vals and all(isinstance(v, Const) for v in vals) and \
            all(v == vals[0] and type(v.value) is type(vals[0].value) for v in vals):
        return vals[0]
    return None


def _split(ir: IR, block: Block, k: int) -> Block:
    """Move `block`'s statements from the k-th on and its terminator into a new block
    placed after it (phis of the successors now name the new block), which `block`
    now jumps to.  Returns the new block."""
    after = _new_block(ir, block)
    after.stmts, after.term = block.stmts[k:], block.term
    block.stmts, block.term = block.stmts[:k], Goto(after.id)
    for s in after.successors():
        for p in ir.block(s).phis:
            rekey_incoming(p, block.id, after.id)
    return after


def _visit_counter(ir: IR, header: Block, rest: Block, starts: dict) -> Var:
    """A phi of `header` (split into `header` and `rest`) counting its visits: its
    value entering from each predecessor in `starts`, one more from every latch (the
    increment is `rest`'s first statement)."""
    following = ir.new_var()
    latches = [q for q in ir.predecessors()[header.id] if q not in starts]
    visit = ir.add_phi(header, {**starts, **{q: following for q in latches}}, name="visit")
    rest.stmts.insert(0, Stmt(following, "add", [visit, Const(1)]))
    return visit


def _new_block(ir: IR, before: Block) -> Block:
    b = ir.add_block()
    ir.blocks.remove(b)
    ir.blocks.insert(ir.blocks.index(before) + 1, b)
    return b


def _snapshot_forward(fwd: IR, h: int, body: set, tape: Var, state: list, copies: tuple,
                      budget: int) -> Var:
    """Rewrite loop #h of the forward as the module docstring says; returns the
    snapshot tuple's value.  `copies`: `_copies`' (written, each, once)."""
    written, each, once = copies
    header = fwd.block(h)
    outside = [p for p in fwd.predecessors()[h] if p not in body]
    h2 = _split(fwd, header, 0)
    latches = [p for p in fwd.predecessors()[h] if p not in outside]
    body = set(body) | {h2.id}
    entry_mark = {o: fwd.push(fwd.block(o), "tape_mark", tape) for o in outside}
    c = _visit_counter(fwd, header, h2, {o: 0 for o in outside})
    nx = fwd.add_phi(header, {o: 0 for o in outside}, name="next_snapshot")
    last = fwd.add_phi(header, {o: 0 for o in outside}, name="last_snapshot")
    mk = fwd.add_phi(header, dict(entry_mark), name="tape_mark")
    frozen = {v: fwd.add_phi(header, {o: fwd.push(fwd.block(o), "ckpt_copy", v)
                                      for o in outside}, name="entry_copy") for v in once}
    for v, ph in frozen.items():
        next(q for q in header.phis if q.var == ph).incoming.update({q: ph for q in latches})
    due = fwd.push(header, "eq", c, nx)
    snap_block = _new_block(fwd, header)
    header.term = Branch(due, snap_block.id, h2.id)
    b = snap_block
    words = fwd.push(b, "sub", fwd.push(b, "tape_mark", tape), mk)
    visits = fwd.push(b, "sub", c, last)
    per = fwd.push(b, "call", Const(max), words, 1)
    stride = fwd.push(b, "call", Const(max), fwd.push(b, "floordiv", fwd.push(
        b, "mul", visits, budget), per), 1, name="stride")
    nx1 = fwd.push(b, "add", c, stride)
    fwd.push(b, "tape_cut", tape, mk)
    saved = _copy_groups(fwd, b, written, {}, _where(fwd, body))
    saved.update({v: fwd.push(b, "ckpt_copy", v) for v in each})
    saved.update(frozen)
    snap = fwd.push(b, "tuple", c, nx1, *[saved.get(v, v) for v in state], name="snapshot")
    fwd.push(b, "push", tape, snap)
    mk1 = fwd.push(b, "tape_mark", tape)
    b.term = Goto(h2.id)
    joins = {}
    for v, new in ((nx, nx1), (last, c), (mk, mk1)):
        joins[v] = fwd.add_phi(h2, {h: v, snap_block.id: new})
    for p, latch_value in ((nx, joins[nx]), (last, joins[last]), (mk, joins[mk])):
        phi = next(q for q in header.phis if q.var == p)
        for lt in latches:
            phi.incoming[lt] = latch_value
    for blk in list(fwd.blocks):
        if blk.id not in body or blk.id in (h, snap_block.id):
            continue
        for s in blk.successors():
            if s in body:
                continue
            cut = _new_block(fwd, blk)
            fwd.push(cut, "tape_cut", tape, joins[mk])
            cut.term = Goto(s)
            blk.term.retarget(s, cut.id)
            for p in fwd.block(s).phis:
                rekey_incoming(p, blk.id, cut.id)
    return snap


def _recompute_ir(fwd: IR, h: int, body: set, tape: Var, state: list, written: list,
                  k: int) -> IR:
    """`name_recompute(%tape, %snap)`: loop #h's blocks from a snapshot to the next."""
    name = fwd.meta.get("source_name", fwd.name)
    work = fwd.copy()
    out = IR(f"{name}_recompute" + (f"{k}" if k else ""), file=fwd.file,
             firstline=fwd.firstline, next_id=fwd.next_id)
    out.meta["source_name"] = name
    t = out.add_arg("tape")
    snap = out.add_arg("snapshot")
    entry = out.add_block(0)
    start = out.push(entry, "getitem", snap, 0, name="visit")
    stop = out.push(entry, "getitem", snap, 1, name="next_snapshot")
    got = {v: out.push(entry, "getitem", snap, 2 + i) for i, v in enumerate(state)}
    got.update(_copy_groups(out, entry, written, got, _where(fwd, body)))
    entry.term = Goto(h)
    out.blocks += [b for b in work.blocks if b.id in body]
    header = out.block(h)
    phis = {p.var for p in header.phis}
    outer = {v: g for v, g in got.items() if v not in phis}
    outer[tape] = t

    def sub(a):
        return outer.get(a, a) if isinstance(a, Var) else a
    for b in out.blocks[1:]:
        for d in b.definitions():
            d.map_operands(sub)
        b.term.map_operands(sub)
    for p in header.phis:
        start_value = got[p.var] if p.var in got else _constant(p)
        p.incoming = {entry.id: start_value,
                      **{q: v for q, v in p.incoming.items() if q in body}}
    ret = out.add_block()
    ret.term = Return(Const(None))
    for b in out.blocks:       # (before new blocks take ids that L's exits name)
        for s in b.successors():
            if s not in body and b is not entry:
                b.term.retarget(s, ret.id)
    h2 = _split(out, header, 0)
    visit = _visit_counter(out, header, h2, {entry.id: start})
    header.term = Branch(out.push(header, "eq", visit, stop), ret.id, h2.id)
    return out


def _read_segments(adj: IR, pushed: set, snap: Var, recompute: Any) -> None:
    """Point the adjoint's reads of the loop's records at a scratch tape refilled
    from the snapshots (module docstring)."""
    reader = adj.args[0].var
    pop_of = adj.meta["pop_of"]
    loop_pops = {s.var for b in adj.blocks for s in b.stmts
                 if s.op == "pop" and pop_of.get(s.var.id) in pushed}
    reads = {s.var for b in adj.blocks for s in b.stmts
             if s.var in loop_pops or s.op == "jback" and s.args[0] in loop_pops}
    stray = [s for b in adj.blocks for s in b.stmts if s.op == "jback" and
             s.var not in reads and any(x.var in reads for x in b.stmts)]
    if stray:
        raise CheckpointError(f"pullback: checkpoint=: a call's pullback in a loop of "
                              f"{adj.meta.get('source_name', adj.name)} is not read "
                              "from the loop's records")
    entry = adj.entry
    scratch, sreader = adj.new_var(), adj.new_var()
    entry.stmts[:0] = [Stmt(scratch, "ckpt_tape", []),
                       Stmt(sreader, "ckpt_reader", [scratch])]
    for b in list(adj.blocks):
        first = next((k for k, s in enumerate(b.stmts) if s.var in reads), None)
        if first is None:
            continue
        for s in b.stmts[first:]:
            if s.var in reads:
                s.args[1 if s.op == "jback" else 0] = sreader
        rest = _split(adj, b, first)
        check = _new_block(adj, b)
        fill = _new_block(adj, check)
        b.term = Goto(check.id)
        spent = adj.push(check, "ckpt_spent", scratch, sreader)
        check.term = Branch(spent, fill.id, rest.id)
        got = adj.push(fill, "pop", reader, name="snapshot")
        pop_of[got.id] = snap.id
        adj.push(fill, "tape_cut", scratch, 0)
        adj.push(fill, "call", Const(recompute), scratch, got)
        adj.push(fill, "ckpt_rewind", scratch, sreader, adj.push(fill, "getitem", got, 0))
        fill.term = Goto(check.id)     # (a segment may hold no records)
    _drain_on_exit(adj, reads, scratch, sreader, snap)
    for b in adj.blocks:
        if isinstance(b.term, Return):
            adj.push(b, "ckpt_free", scratch)


def _loop_of_reads(adj: IR, reads: set) -> set:
    """The blocks of the adjoint's cycle (a strongly connected component, which
    early exits of the loop may make irreducible) that holds every read of the loop's
    records: the adjoint of the loop."""
    where = {b.id for b in adj.blocks if any(s.var in reads for s in b.stmts)}
    comps = [set(c) for c in strongly_connected_components(adj) if where & set(c)]
    if len(comps) != 1 or len(comps[0]) < 2:
        raise CheckpointError(f"pullback: checkpoint=: the adjoint of a loop of "
                              f"{adj.meta.get('source_name', adj.name)} is not one loop")
    return comps[0]


def _drain_on_exit(adj: IR, reads: set, scratch: Var, sreader: Var, snap: Var) -> None:
    """On every edge leaving the loop's adjoint, pop the loop's snapshots that no read
    asked for (down to the one of visit 0, which the forward always pushes): a loop
    that ran zero times, or whose first segments recorded nothing, leaves them on the
    main tape, where the code before the loop would read them as its own records."""
    reader = adj.args[0].var
    pop_of = adj.meta["pop_of"]
    loop = _loop_of_reads(adj, reads)
    exits = [(b, s) for b in adj.blocks if b.id in loop
             for s in dict.fromkeys(b.successors()) if s not in loop]
    for b, s in exits:
        check = _new_block(adj, b)
        drop = _new_block(adj, check)
        spent = adj.push(check, "ckpt_spent", scratch, sreader)
        check.term = Branch(spent, drop.id, s)
        got = adj.push(drop, "pop", reader, name="snapshot")
        pop_of[got.id] = snap.id
        adj.push(drop, "tape_cut", scratch, 0)
        adj.push(drop, "ckpt_rewind", scratch, sreader, adj.push(drop, "getitem", got, 0))
        drop.term = Goto(check.id)
        b.term.retarget(s, check.id)
        for p in adj.block(s).phis:
            rekey_incoming(p, b.id, check.id)
