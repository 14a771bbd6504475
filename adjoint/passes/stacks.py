"""Pass `emit_stacks`: decide where each recorded value lives, and finish the
forward IR.

Requires: `instrument` (records per block, `meta["tape"]`, `meta["dummy_phis"]`).
Guarantees:
  * for a block in a CFG cycle (`ssair.cfg.blocks_in_cycles`: it may run more than
    once per call) its dummy phi and then those of its records' alphas that are
    defined in the same strongly connected component are pushed at the end of the
    block, `push(%tape, %v)`, in a fixed order (`meta["pushes"][block]`); the adjoint
    block pops them in reverse.  An alpha defined outside the block's component
    (a loop invariant) has one value per call, so it is an env slot instead: its
    definition cannot run again after the block (it would share the component);
  * every other recorded value is an *env slot*: the exit returns
    `tuple(%y, tuple(slot values...))` (`meta["env"]`, the slot order).  A slot whose
    definition does not dominate the exit is carried there through phis built with
    `ssair.ssabuild.SSABuilder` (`None` on paths where it was not defined: the
    adjoint only reads it on the path that defined it); the IR's own phis stay, even
    trivial ones: `meta["ret"]` may name one (`merge_returns` of one value);
  * values the adjoint rebuilds (`meta["induction"]`, see `adjoint.passes.induction`: loop
    counters and constant offsets of them, read in their own component) are not
    pushed; the counters' final values become env slots instead, as do the entry
    values of the headers whose edge is implied (whose dummy phi is not pushed);
    the dummy phis of `meta["silent"]` joins are not recorded at all, nor those of
    the headers whose latch the adjoint recomputes (`chosen`), whose condition's
    counters become env slots; a stable array a rebuilt value reads is copied at
    entry (`snapshot`) and the copy is its env slot (`meta["stable_copies"]`);
  * `meta["cyclic"]` is the set of blocks in cycles, `meta["rebuilt"]` the counters
    the adjoint rebuilds.
The return value of the forward IR is therefore `(y, env)`.  The input is modified
in place and returned.
"""
from __future__ import annotations

from ssair import IR, Return, Stmt, Var, cfg
from ssair.ssabuild import SSABuilder


def emit_stacks(ir: IR) -> IR:
    cyclic = cfg.blocks_in_cycles(ir)
    scc = {b: k for k, comp in enumerate(cfg.strongly_connected_components(ir)) for b in comp}
    where = _def_blocks(ir)
    dummies = ir.meta["dummy_phis"]
    records = ir.meta["records"]
    ind = ir.meta.get("induction")
    implied = ind.implied if ind is not None else {}
    chosen = ind.chosen if ind is not None else {}
    silent = ir.meta.get("silent", set())
    pushes, env, roots = {}, [], []
    for b in ir.blocks:
        unneeded = b.id in implied or b.id in silent or b.id in chosen
        values = ([dummies[b.id]] if b.id in dummies and not unneeded else [])
        for rec in records.get(b.id, []):
            values += rec.recorded()
        values = list(dict.fromkeys(values))
        if b.id in cyclic and ind is not None:
            rebuilt = [v for v in values if ind.can_rebuild(v, where, b.id)]
            roots += [leaf for v in rebuilt for leaf in ind.leaves(v)]
            values = [v for v in values if v not in rebuilt]
        if b.id in cyclic:
            pushes[b.id] = [v for v in values if scc[where[v]] == scc[b.id]]
            tape = ir.meta["tape"]
            b.stmts += [Stmt(ir.new_var(), "push", [tape, v]) for v in pushes[b.id]]
            values = [v for v in values if scc[where[v]] != scc[b.id]]
        env += [v for v in values if v not in env]
    firsts = list(ind.first_visit.values()) if ind is not None else []
    roots += [phi for phi, _, _, _ in implied.values()] + [phi for phi, _, _ in firsts]
    roots += [leaf for cond, _, _, _ in chosen.values() for leaf in ind.leaves(cond)]
    inits = [i for _, _, _, i in implied.values()] + [i for _, _, i in firsts]
    copies = _stable_copies(ir, [v for v in roots if ind is not None and v in ind.stable])
    extra = [copies.get(v, v) for v in roots] + [init for init in inits if isinstance(init, Var)]
    env += [v for v in dict.fromkeys(extra) if v not in env]
    counters = {v for v in roots if v in ind.phis} if ind is not None else set()
    ir.meta.update(cyclic=cyclic, pushes=pushes, env=env, rebuilt=counters,
                   stable_copies=copies)
    _return_env(ir, env)
    return ir


def _stable_copies(ir: IR, arrays: list) -> dict:
    """A copy made at entry of each stable array a rebuilt value reads (see
    `adjoint.passes.induction`): array -> the copy."""
    copies = {}
    for a in dict.fromkeys(arrays):
        copies[a] = c = ir.new_var()
        ir.entry.stmts.insert(0, Stmt(c, "snapshot", [a]))
    return copies


def entry_forward(fwd: IR) -> IR:
    """The forward IR as called by `pullback`, `gradient` or `value_and_grad` itself
    rather than by another forward: its entry copies of stable arrays become
    `contiguous(a)` (no copy of a C-contiguous argument).  No caller runs between
    the forward and the adjoint then, and `pullback` copies an argument whose elements
    the adjoint reads before the forward sees it (`jit.pullback.fast_path`), so the
    copy only has to give the adjoint its C-contiguous layout.  Returns `fwd` itself
    when it has no such copy, else a new IR."""
    copies = set(fwd.meta.get("stable_copies", {}).values())
    if not copies:
        return fwd
    out = fwd.copy()
    for st in out.entry.stmts:
        if st.var in copies and st.op == "snapshot":
            st.op = "contiguous"
    return out


def _def_blocks(ir: IR) -> dict:
    where = {a.var: ir.entry.id for a in ir.args}
    for b in ir.blocks:
        for d in b.definitions():
            where[d.var] = b.id
    return where


def _return_env(ir: IR, env: list) -> None:
    exit_id = ir.meta["exit"]
    exit_block = ir.block(exit_id)
    builder = SSABuilder(ir)
    where = _def_blocks(ir)
    for v in env:
        builder.write(v, where[v], v)
    slots = [builder.read(v, exit_id) for v in env]
    builder.finish()
    slots = [builder.resolve(s) for s in slots]
    ret = exit_block.term
    e = ir.push(exit_block, "tuple", *slots, line=ret.line)
    out = ir.push(exit_block, "tuple", ret.value, e, line=ret.line)
    exit_block.term = Return(out, ret.line)

