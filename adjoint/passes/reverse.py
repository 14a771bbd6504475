"""Pass `reverse`: build the adjoint IR from the finished forward IR.

Requires: `emit_stacks` (records, pushes, env slots, dummy phis in `meta`) and the
`Activity`.  Guarantees: an IR `name_adjoint(%reader, %env, %dy)` that returns a
tuple with one cotangent per argument of the primal IR (captured values first), in
which
  * block 1 unpacks the env slots (`getitem(%env, k)`) and seeds the returned
    value's adjoint with `%dy`; when the function may write into some of its
    arguments (`meta["inout"]`), `%dy` is the pair (dy, their adjoints at the end of
    the call), which seed those arguments' adjoints too;
  * every primal block B gets an adjoint block A(B), laid out in reverse block order:
    it pops B's pushed values (reverse order of the pushes) when B is in a cycle,
    then runs the pullbacks of B's records in reverse statement order;
  * when B has one predecessor P, A(B) routes B's phi adjoints to their operands
    from P and jumps to A(P); with several, A(B) compares the recorded dummy phi with
    each predecessor id (a chain of `eq` + `goto`) and jumps to an edge block
    E(B, P) that routes the phis' adjoints along that edge, then to A(P); routing
    reads every phi's adjoint before writing any (phis are parallel);
  * A(entry) returns the arguments' adjoints.
Adjoint variables (one per active primal value) are mutable while the code is
built and put into SSA form by `ssair.ssabuild.SSABuilder`; a value's adjoint is
reset to zero (None) after its definition's pullback has run, so each loop
iteration's instance gets its own.  The adjoint IR's size is linear in the primal's.
"""
from __future__ import annotations

from typing import Any

from ssair import IR, Branch, Const, Goto, Return, Var, cfg
from ssair.ssabuild import SSABuilder

from .activity import Activity
from .induction import def_blocks
from .instrument import Record, where
from ..tape import unbcast

NONE = Const(None)


class _Ctx:
    """State while building one adjoint IR."""

    def __init__(self, fwd: IR, act: Activity, primal_args: list):
        self.fwd = fwd
        self.act = act
        self.adj = IR(fwd.name.removesuffix("_forward") + "_adjoint", file=fwd.file,
                      firstline=fwd.firstline)
        self.reader = self.adj.add_arg("reader")
        self.env = self.adj.add_arg("env")
        self.dy = self.adj.add_arg("dy")
        self.adj.next_id = max(self.adj.next_id, fwd.next_id)
        self.primal_args = primal_args
        self.ssa = SSABuilder(self.adj)
        self.env_vals: dict = {}
        self.local: dict = {}
        self.cyclic = fwd.meta["cyclic"]
        self.accums: dict = {}     # accum result -> the primal value it is for
        self.closures = {s.var: s for b in fwd.blocks for s in b.stmts
                         if s.op == "make_closure"}
        self.indexed = {r.operands[0] for recs in fwd.meta["records"].values()
                        for r in recs if r.kind in ("getitem", "setitem")}
        self.ind = fwd.meta.get("induction")
        self.rebuilt = fwd.meta.get("rebuilt", set())
        self.where = def_blocks(fwd)
        self.cur = None            # the adjoint block of the records being emitted
        self.recomputed: dict = {}

    def emit(self, block, op: str, *args, line=None, kwargs=None) -> Var:
        return self.adj.push(block, op, *args, line=line, kwargs=kwargs)

    def alpha(self, v: Any, bid: int) -> Any:
        """The adjoint-side operand holding forward value `v` for block `bid`."""
        if not isinstance(v, Var):
            return v
        if v in self.local:
            return self.local[v]
        if bid in self.cyclic and self.ind is not None and self.ind.can_rebuild(
                v, self.where, bid):
            return self.rebuild(v)
        if v not in self.env_vals:
            raise RuntimeError(f"adjoint: value {v} is not recorded for block #{bid}")
        return self.env_vals[v]

    def rebuild(self, v: Var) -> Any:
        """The value of loop counter `v` (or of a value rebuilt from counters) at the
        current point of the adjoint (see `adjoint.passes.induction`)."""
        return self.recompute(v, self.cur, self.recomputed)

    def recompute(self, v: Any, block, known: dict) -> Any:
        """Rebuilt value `v` computed in `block`; `known` (value -> adjoint value) is
        what is computed already, and may hold counters of another iteration."""
        if not isinstance(v, Var):
            return v
        got = known.get(v)
        if got is None:
            if v in self.rebuilt:
                got = self.ssa.read(("counter", v), block.id)
            elif v in self.ind.derived:
                op, args, _ = self.ind.derived[v]
                got = self.exact(self.emit(block, op, *[self.recompute(a, block, known)
                                                        for a in args]), op)
            else:                          # an invariant (a stable array: its copy)
                got = self.env_vals[self.fwd.meta["stable_copies"].get(v, v)]
            known[v] = got
        return got

    def exact(self, v: Var, op: str = "add") -> Var:
        """Mark `v` (a rebuilt value) as one the forward computed, so that its integer
        arithmetic cannot overflow and its `pow` does not raise (`meta["exact_ints"]`),
        and its element read is in bounds (`meta["inbounds"]`); the JIT reads both
        (var ids) and emits them unchecked."""
        key = "inbounds" if op == "getitem" else "exact_ints"
        self.adj.meta.setdefault(key, set()).add(v.id)
        return v

    def read(self, v: Var, block) -> Any:
        return self.ssa.read(v, block.id)

    def add(self, v: Any, g: Any, block, line=None) -> None:
        """adjoint(v) += g, when v is active."""
        if not self.act.is_active(v) or g is None:
            return
        cur = self.read(v, block)
        new = self.emit(block, "accum", cur, g, line=line)
        self.accums[new] = v
        self.ssa.write(v, block.id, new)

    def own(self, v: Any, g: Any, block, line=None) -> None:
        """adjoint(v) = g, where g may be shared (another adjoint, a seed the caller
        still holds, a callee's gradient handed to two operands): written as
        `accum(None, g)`, a copy, when v's adjoint is updated in place."""
        if v not in self.indexed:        # (what `_drop_copies` would find)
            self.ssa.write(v, block.id, g)
            return
        new = self.emit(block, "accum", NONE, g, line=line)
        self.accums[new] = v
        self.ssa.write(v, block.id, new)


def build_adjoint(fwd: IR, act: Activity, primal_args: list) -> IR:
    ctx = _Ctx(fwd, act, primal_args)
    entry = ctx.adj.add_block()
    ids = {b.id: ctx.adj.add_block().id for b in reversed(fwd.blocks)}
    ctx.adj.blocks = [entry]
    copies = set(fwd.meta.get("stable_copies", {}).values())
    for k, v in enumerate(fwd.meta["env"]):
        ctx.env_vals[v] = ctx.emit(entry, "getitem", ctx.env, k)
        if v in copies:      # made by `snapshot`: C-contiguous, for the JIT
            ctx.adj.meta.setdefault("contiguous", set()).add(ctx.env_vals[v].id)
    for v in ctx.rebuilt:
        ctx.ssa.write(("counter", v), entry.id, ctx.env_vals[v])
    _seed(ctx, entry, fwd.meta["ret"], fwd.meta.get("inout", ()))
    _allocate_looped(ctx, entry)
    entry.term = Goto(ids[fwd.meta["exit"]])
    preds = fwd.predecessors()
    for b in reversed(fwd.blocks):
        _adjoint_block(ctx, b, ids, preds[b.id])
    live = cfg.reachable(ctx.adj)    # the other detours of a silent join
    ctx.adj.blocks = [blk for blk in ctx.adj.blocks if blk.id in live]
    ctx.ssa.finish()
    _drop_copies(ctx)
    return ctx.adj


def _drop_copies(ctx: _Ctx) -> None:
    """`accum(None, g)` is `g` itself unless its value is updated in place later
    (the adjoint of an indexed array must own its storage): drop those copies."""
    repl = {}
    for blk in ctx.adj.blocks:
        keep = []
        for s in blk.stmts:
            target = ctx.accums.get(s.var)
            if target is not None and target not in ctx.indexed and s.args[0] == NONE:
                repl[s.var] = s.args[1]
                continue
            keep.append(s)
        blk.stmts = keep
    ctx.adj.replace_uses(repl)


def _seed(ctx: _Ctx, entry, ret, inout: tuple) -> None:
    """The returned value's adjoint is `dy`; with in-out arguments `dy` is the pair
    `(dy, initial adjoints of the arguments)`.  The returned value must still be
    defined in the forward: a pass that replaced it (a removed phi) would leave `dy`
    seeded on a value no pullback reads, a zero gradient instead of an error."""
    if isinstance(ret, Var) and ret not in ctx.where:
        raise RuntimeError(f"adjoint: {ctx.fwd.name} returns {ret}, which its forward "
                           f"IR no longer defines")
    dy = ctx.dy
    if inout:
        dy = ctx.emit(entry, "getitem", ctx.dy, 0)
        init = ctx.emit(entry, "getitem", ctx.dy, 1)
        for k in inout:
            v = ctx.primal_args[k]
            ctx.own(v, ctx.emit(entry, "dget", init, k), entry)
    if isinstance(ret, Var):
        if ret in [ctx.primal_args[k] for k in inout]:
            ctx.ssa.write(ret, entry.id, ctx.emit(entry, "accum", ctx.read(ret, entry), dy))
        else:
            ctx.own(ret, dy, entry)


def _allocate_looped(ctx: _Ctx, entry) -> None:
    """A float-array argument whose elements a loop reads gets its adjoint as zeros
    up front, so that the loop's `accum_index` finds it allocated (no test for a
    first write on every iteration)."""
    kinds = ctx.ind.kinds if ctx.ind is not None else None
    if kinds is None:
        return
    looped = {r.operands[0] for bid, recs in ctx.fwd.meta["records"].items()
              if bid in ctx.cyclic for r in recs if r.kind == "getitem"}
    seeded = {ctx.fwd.meta["ret"], *[ctx.primal_args[k] for k in ctx.fwd.meta.get("inout", ())]}
    for v in ctx.primal_args:
        if v in looped and v in ctx.env_vals and v not in seeded and kinds.is_float_array(v):
            ctx.ssa.write(v, entry.id, ctx.emit(entry, "zero", ctx.env_vals[v]))


def _adjoint_block(ctx: _Ctx, b, ids: dict, preds: list) -> None:
    a = _new_block(ctx, ids[b.id])
    ctx.local, ctx.cur, ctx.recomputed = {}, a, {}
    if b.id in ctx.cyclic:
        for v in reversed(ctx.fwd.meta["pushes"][b.id]):
            ctx.local[v] = ctx.emit(a, "pop", ctx.reader)
            ctx.adj.meta.setdefault("pop_of", {})[ctx.local[v].id] = v.id  # for the JIT
    for rec in reversed(ctx.fwd.meta["records"].get(b.id, [])):
        _pullback(ctx, rec, a)
    if not preds:
        grads = [ctx.read(v, a) if ctx.act.is_active(v) else NONE for v in ctx.primal_args]
        a.term = Return(ctx.emit(a, "tuple", *grads))
        return
    if len(preds) == 1:
        _route_phis(ctx, b, preds[0], a)
        a.term = Goto(ids[preds[0]])
        return
    _edge_switch(ctx, b, a, ids, preds)


def _new_block(ctx: _Ctx, bid: int):
    from ssair import Block
    blk = Block(bid)
    ctx.adj.blocks.append(blk)
    return blk


def _edge_switch(ctx: _Ctx, b, a, ids: dict, preds: list) -> None:
    """Branch on the recorded edge: eq-chain over the predecessors of b."""
    if b.id in ctx.fwd.meta.get("silent", ()):   # every edge's adjoint is the same
        a.term = Goto(ids[preds[0]])
        return
    routed = any(ctx.act.is_active(p.var) or p.var in ctx.rebuilt for p in b.phis)
    edges, targets = [], []
    for p in preds:
        if not routed:
            targets.append(ids[p])
            continue
        e = _new_block(ctx, _next_id(ctx, ids))
        _route_phis(ctx, b, p, e)
        e.term = Goto(ids[p])
        edges.append(e)
        targets.append(e.id)
    implied = ctx.ind.implied.get(b.id) if ctx.ind is not None else None
    if implied is not None:
        v, entry, _, init = implied
        first = _first_visit(ctx, a, v, init, b.id)
        a.term = Branch(first, targets[preds.index(entry)], targets[1 - preds.index(entry)])
        _order_blocks(ctx, a, edges)
        return
    test = a
    first = ctx.ind.first_visit.get(b.id) if ctx.ind is not None else None
    if first is not None:    # the entry edge from the counter, then the latches
        v, entry, init = first
        c = _first_visit(ctx, a, v, init, b.id)
        test = _new_block(ctx, _next_id(ctx, ids))
        a.term = Branch(c, targets[preds.index(entry)], test.id)
        targets = [t for t, p in zip(targets, preds) if p != entry]
        preds = [p for p in preds if p != entry]
    chosen = ctx.ind.chosen.get(b.id) if ctx.ind is not None else None
    if chosen is not None:   # the latch from the branch that chose it, recomputed
        cond, then, _, steps = chosen
        known = {}
        for v, step in steps.items():
            now = ctx.ssa.read(("counter", v), test.id)
            known[v] = ctx.exact(ctx.emit(test, "sub" if step > 0 else "add", now,
                                          Const(abs(step))))
        c = ctx.recompute(cond, test, known)
        k = preds.index(then)
        test.term = Branch(c, targets[k], targets[1 - k])
        _order_blocks(ctx, a, edges)
        return
    d = ctx.alpha(ctx.fwd.meta["dummy_phis"][b.id], b.id)
    for k, p in enumerate(preds[:-1]):
        c = ctx.emit(test, "eq", d, Const(p))
        if k == len(preds) - 2:
            test.term = Branch(c, targets[k], targets[-1])
            break
        nxt = _new_block(ctx, _next_id(ctx, ids))
        test.term = Branch(c, targets[k], nxt.id)
        test = nxt
    _order_blocks(ctx, a, edges)


def _first_visit(ctx: _Ctx, a, v: Var, init: Any, bid: int) -> Var:
    """True on the first visit of header `bid`: counter `v` is back at its entry value.
    Every latch steps it the same way, so every later visit is beyond that value: the
    test is `<=` (`>=` for a falling counter), which tells the compiler the counter's
    range inside the loop (an index `v - 1` is then never negative)."""
    rising = next(iter(ctx.ind.phis[v][1].values())) > 0
    return ctx.emit(a, "le" if rising else "ge", ctx.ssa.read(("counter", v), a.id),
                    ctx.alpha(init, bid))


def _next_id(ctx: _Ctx, ids: dict) -> int:
    used = {blk.id for blk in ctx.adj.blocks} | set(ids.values())
    return max(used) + 1


def _order_blocks(ctx: _Ctx, a, edges: list) -> None:
    """Keep edge blocks after the test chain for a readable listing."""
    rest = [blk for blk in ctx.adj.blocks if blk not in edges]
    ctx.adj.blocks = rest + edges


def _route_phis(ctx: _Ctx, b, pred: int, blk) -> None:
    phis = [p for p in b.phis if ctx.act.is_active(p.var)]
    grads = [ctx.read(p.var, blk) for p in phis]
    for p in phis:
        ctx.ssa.write(p.var, blk.id, NONE)
    for p, g in zip(phis, grads):
        ctx.add(p.incoming[pred], g, blk, line=p.line)
    for p in b.phis:
        step = ctx.ind.phis[p.var][1].get(pred) if p.var in ctx.rebuilt else None
        if step is not None:   # back across a latch edge: the counter's previous value
            now = ctx.ssa.read(("counter", p.var), blk.id)
            op = "sub" if step > 0 else "add"
            prev = ctx.exact(ctx.emit(blk, op, now, Const(abs(step))))
            ctx.ssa.write(("counter", p.var), blk.id, prev)


# -- pullbacks of single statements ----------------------------------------------------
def _pullback(ctx: _Ctx, rec: Record, blk) -> None:
    dy = ctx.read(rec.var, blk) if ctx.act.is_active(rec.var) else NONE
    emit = _EMITTERS.get(rec.kind)
    if emit is None:
        raise RuntimeError(f"adjoint: no emitter for {rec.kind}{where(ctx.fwd, rec.line)}")
    emit(ctx, rec, blk, dy)
    if ctx.act.is_active(rec.var):
        ctx.ssa.write(rec.var, blk.id, NONE)


def _emit_rule(ctx: _Ctx, rec: Record, blk, dy) -> None:
    owner = rec.block
    args = [dy]
    if rec.result_alpha is not None:
        args.append(ctx.alpha(rec.result_alpha, owner))
    args += [_operand(ctx, rec, a) for a in rec.operands]
    kw = {k: ctx.alpha(rec.alpha.get(v, v), owner) for k, v in rec.kwargs.items()}
    g = ctx.emit(blk, "call", Const(rec.rule.pullback), *args, line=rec.line, kwargs=kw)
    for k, a in enumerate(rec.operands):
        if ctx.act.is_active(a):
            ctx.add(a, ctx.emit(blk, "dget", g, k, line=rec.line), blk, rec.line)


UNREAD = Const(0.0)   # an operand the pullback does not read (see `Rule.needs`)


def _operand(ctx: _Ctx, rec: Record, a: Any) -> Any:
    if isinstance(a, Var) and a not in rec.alpha:
        return UNREAD
    return ctx.alpha(rec.alpha.get(a, a), rec.block)


def _emit_jcall(ctx: _Ctx, rec: Record, blk, dy) -> None:
    """`jback` takes the operands' current adjoints and returns their new ones (an
    argument the callee writes into is replaced, see `adjoint.transform`).  When the
    callee is a closure made in this function, its entry is the tuple of the
    captured values' adjoints, so that writes into captured arrays are seen."""
    pb = ctx.alpha(next(iter(rec.alpha.values())), rec.block)
    captured = _captured(ctx, rec)
    first = [ctx.act.is_active(a) and a not in rec.operands[:k]
             for k, a in enumerate(rec.operands)]
    cur = [ctx.read(a, blk) if on else NONE for a, on in zip(rec.operands, first)]
    if captured is not None:
        cur[0] = ctx.emit(blk, "tuple", *[ctx.read(v, blk) if ctx.act.is_active(v) else NONE
                                           for v in captured])
    g = ctx.emit(blk, "jback", pb, ctx.reader, dy, ctx.emit(blk, "tuple", *cur),
                 line=rec.line)
    if captured is not None:
        _write_captured(ctx, blk, captured, ctx.emit(blk, "dget", g, 0, line=rec.line))
    for k, a in enumerate(rec.operands):
        if not ctx.act.is_active(a) or (k == 0 and captured is not None):
            continue
        part = ctx.emit(blk, "dget", g, k, line=rec.line)
        if first[k]:
            ctx.own(a, part, blk, rec.line)
        else:
            ctx.add(a, part, blk, rec.line)


def _captured(ctx: _Ctx, rec: Record):
    """The captured values when the callee is `make_closure(...)` of this function
    (each active one at most once, and none also passed as an argument)."""
    f = rec.operands[0]
    d = ctx.closures.get(f) if isinstance(f, Var) else None
    if d is None:
        return None
    vals = [v for v in d.args[1:]]
    active = [v for v in vals if ctx.act.is_active(v)]
    if len(set(active)) != len(active) or any(v in rec.operands[1:] for v in active):
        return None
    return vals


def _write_captured(ctx: _Ctx, blk, captured: list, d_free) -> None:
    for k, v in enumerate(captured):
        if ctx.act.is_active(v):
            ctx.own(v, ctx.emit(blk, "dget", d_free, k), blk)


def _emit_parts(ctx: _Ctx, rec: Record, blk, dy, skip: int = 0) -> None:
    for k, a in enumerate(rec.operands[skip:]):
        if ctx.act.is_active(a):
            ctx.add(a, ctx.emit(blk, "dget", dy, k, line=rec.line), blk, rec.line)


def _emit_tuple(ctx, rec, blk, dy) -> None:
    _emit_parts(ctx, rec, blk, dy)


def _emit_dict(ctx, rec, blk, dy) -> None:
    """`dict(k0, v0, k1, v1, ...)`: value k's cotangent is the entry k of dy."""
    ops = rec.operands
    keys = list(dict.fromkeys(getattr(k, "value", k) for k in ops[0::2]))
    last = {getattr(k, "value", k): v for k, v in zip(ops[0::2], ops[1::2])}
    for k, v in last.items():      # (a repeated key's earlier values are dropped)
        if ctx.act.is_active(v):
            pos = Const(keys.index(k))
            ctx.add(v, ctx.emit(blk, "dget", dy, Const(k), pos, line=rec.line), blk, rec.line)


def _emit_closure(ctx, rec, blk, dy) -> None:
    _emit_parts(ctx, rec, blk, dy, skip=1)


def _emit_identity(ctx, rec, blk, dy) -> None:
    ctx.add(rec.operands[0], dy, blk, rec.line)


def _emit_getitem(ctx, rec, blk, dy) -> None:
    x = rec.operands[0]
    if not ctx.act.is_active(x):
        return
    idx = [ctx.alpha(i, rec.block) for i in rec.operands[1:]]
    s = ctx.read(x, blk)
    new = ctx.emit(blk, "accum_index", s, dy, ctx.alpha(x, rec.block), *idx, line=rec.line)
    # the forward read x at these very indices: they are valid for x's shape
    ctx.adj.meta.setdefault("inbounds", set()).add(new.id)
    ctx.ssa.write(x, blk.id, new)


def _emit_setitem(ctx, rec, blk, dy) -> None:
    a, v = rec.operands[0], rec.operands[1]
    idx = [ctx.alpha(i, rec.block) for i in rec.operands[2:]]
    s = ctx.read(a, blk)
    g = None
    if ctx.act.is_active(v):
        # v may have been broadcast into the selection: its cotangent is summed back
        g = ctx.emit(blk, "take_index", s, *idx, line=rec.line)
        g = ctx.emit(blk, "call", Const(unbcast), g, ctx.alpha(v, rec.block), line=rec.line)
    ctx.ssa.write(a, blk.id, ctx.emit(blk, "zero_index", s, *idx, line=rec.line))
    if g is not None:      # after the clear: v may be a itself (`t[::-1] = t`)
        ctx.add(v, g, blk, rec.line)


def _emit_push(ctx, rec, blk, dy) -> None:
    g = ctx.emit(blk, "spop", ctx.alpha(rec.operands[0], rec.block), line=rec.line)
    ctx.add(rec.operands[1], g, blk, rec.line)


def _emit_pop(ctx, rec, blk, dy) -> None:
    ctx.emit(blk, "spush", ctx.alpha(rec.operands[0], rec.block), dy, line=rec.line)


_EMITTERS = {
    "push": _emit_push, "pop": _emit_pop,
    "rule": _emit_rule, "jcall": _emit_jcall, "tuple": _emit_tuple, "list": _emit_tuple,
    "dict": _emit_dict, "make_closure": _emit_closure, "copy": _emit_identity,
    "pos": _emit_identity, "getitem": _emit_getitem, "setitem": _emit_setitem,
}
