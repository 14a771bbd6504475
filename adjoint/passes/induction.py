"""Analysis `induction`: loop counters the adjoint rebuilds instead of reading them
from the tape.

An *induction phi* is an integer phi `%i = φ (#out => %i0, #L => %j, ...)` of a block
H in a CFG cycle whose every incoming value from a block of H's strongly connected
component S is `%j = add(%i, c)`, `add(c, %i)` or `sub(%i, c)` for an int constant
`c` (its *step* on that edge).  S is a maximal component, so it is entered at most
once per call, through preds outside S, and `%i` changes inside S only by its steps.
The adjoint therefore knows the value of `%i` at every point of S from its final
value alone (one env slot): crossing a back edge #L -> H in reverse it subtracts
that edge's step (exact: Python ints).  A scalar `add`, `sub`, `mul` or `neg` in S
of constants, rebuildable values and invariants (defined outside S, so one value per
call: env slots) is rebuilt by recomputing it where it is read (the same operation
on the same operands: the same bits): between its definition and any read in S no
visit of H intervenes (H dominates the definition, which dominates the read).
An element read `a[i...]` (and a comparison or `pow` of rebuildable values) is
rebuilt too when `a` is a *stable array*: an argument proven a float64 array in a
function that writes into no array at all (`_stable_arrays`: no `setitem`, no
in-place operator, no transformed call, no call but of ruled library functions and
of builtins given numbers), so every read of `a` sees its values at entry.  A caller may still write into `a` after this function returns and
before its adjoint runs, so the adjoint reads a copy of it made at entry
(`emit_stacks` adds `snapshot(a)` when a rebuilt value reads it): one copy per call,
where recording would push one word per read per iteration.

*Implied edges*: when H has exactly two predecessors, one outside S (#out) and one
latch, and an induction phi of H has a nonzero step, that phi's value equals its
entry value `%i0` exactly on the first visit; the adjoint tests that instead of
recording H's dummy phi (when `%i0` is a constant or defined outside S).  With
several latches whose steps are all nonzero and of one sign (a `continue` in a
loop, an if/else at its end) the dummy phi is still recorded, but the adjoint tests
the first visit on the counter and branches on the recorded edge only among the
latches: a two-way choice the compiler can turn into a select.

*Chosen edges*: a header H of the `first_visit` kind whose two latches are reached
by the two arms of one branch `goto #X if not %c` in block C (each arm a latch
entered from C alone, or H itself, C then being a latch: an `if` without `else` at
the end of the body), where `%c` is rebuildable from counters of H that step alike on
both latches: the adjoint recomputes `%c` with those counters one step back (C's
iteration) instead of popping H's dummy phi, which is then not recorded.

`rebuildable(ir, kinds)` returns an `Induction` (read by `adjoint.passes.stacks` and
`adjoint.passes.reverse`).  The IR is not modified.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

from ssair import IR, Branch, Const, Var, cfg
from ssair.primitives import INPLACE


@dataclass
class Induction:
    """`phis`: induction phi -> (header id, {latch id: step}); `derived`: value ->
    (op, operands, leaves) for the recomputable values (see `_derive`);
    `scc`: block id -> component index; `implied`: header id -> (phi, entry pred,
    latch, entry value) for headers whose dummy phi is not recorded; `first_visit`:
    header id -> (phi, entry pred, entry value) for headers with several latches, all
    stepping the phi the same way, whose adjoint tests the entry edge on the counter
    and reads the recorded dummy phi only to choose among the latches; `stable`: the
    stable arrays (module docstring); `chosen`: header id -> (condition, latch taken
    when it is true, the other latch, {counter: its step on both latches}) for the
    headers whose latch the adjoint recomputes."""

    phis: dict = field(default_factory=dict)
    derived: dict = field(default_factory=dict)
    scc: dict = field(default_factory=dict)
    implied: dict = field(default_factory=dict)
    first_visit: dict = field(default_factory=dict)
    cyclic: set = field(default_factory=set)
    stable: set = field(default_factory=set)
    chosen: dict = field(default_factory=dict)
    kinds: Any = None

    def can_rebuild(self, v: Any, where: dict, bid: int) -> bool:
        """True when value `v`, read by a record of block `bid`, is rebuilt."""
        if v not in self.phis and v not in self.derived:
            return False
        return self.scc.get(where.get(v)) == self.scc.get(bid)

    def leaves(self, v: Var) -> list:
        """The counters and invariants (env slots) rebuilding `v` reads."""
        return self.derived[v][2] if v in self.derived else [v]


def rebuildable(ir: IR, kinds: Any) -> Induction:
    out = Induction(kinds=kinds)
    out.cyclic = cyclic = cfg.blocks_in_cycles(ir)
    out.scc = {b: k for k, comp in enumerate(cfg.strongly_connected_components(ir))
               for b in comp}
    defs = {s.var: s for b in ir.blocks for s in b.stmts}
    where = def_blocks(ir)
    preds = ir.predecessors()
    for b in ir.blocks:
        if b.id not in cyclic:
            continue
        for p in b.phis:
            steps = _steps(p, b.id, preds[b.id], out.scc, defs, kinds)
            if steps is not None:
                out.phis[p.var] = (b.id, steps)
    out.stable = _stable_arrays(ir, kinds)
    _derive(ir, out, where)
    _implied(ir, out, preds, where)
    _chosen(ir, out, preds)
    return out


def def_blocks(ir: IR) -> dict:
    """Var -> id of the block defining it (arguments: the entry)."""
    where = {a.var: ir.entry.id for a in ir.args}
    for b in ir.blocks:
        for d in b.definitions():
            where[d.var] = b.id
    return where


def _steps(p, bid: int, preds: list, scc: dict, defs: dict, kinds: Any):
    if kinds is None or kinds.kind(p.var) != "int" or p.name == "edge":
        return None
    steps = {}
    for pred in preds:
        if scc.get(pred) != scc[bid]:
            continue
        step = _step_of(defs.get(p.incoming.get(pred)), p.var)
        if step is None:
            return None
        steps[pred] = step
    return steps if steps else None


def _step_of(s: Any, v: Var):
    """c when `s` is `add(v, c)`, `add(c, v)` (-c for `sub(v, c)`), else None."""
    if s is None or s.op not in ("add", "sub", "iadd", "isub") or s.kwargs:
        return None
    a, b = s.args
    if b == v and s.op in ("add", "iadd"):
        a, b = b, a
    if a != v or not isinstance(b, Const) or type(b.value) is not int:
        return None
    return b.value if s.op in ("add", "iadd") else -b.value


_OF_NUMBERS = ("pow", "lt", "le", "gt", "ge", "eq", "ne")   # rebuilt on numbers only
_RECOMPUTE = ("add", "sub", "mul", "neg") + _OF_NUMBERS


def _derive(ir: IR, out: Induction, where: dict) -> None:
    """Scalar `add`/`sub`/`mul`/`neg`/`pow`/comparisons in a cycle, and element reads
    of stable arrays, whose operands are constants, counters or recomputable values
    of the same component, or invariants (defined outside it, never written into):
    rebuilt, not pushed."""
    written = _written(ir, out.kinds)
    changed = True
    while changed:
        changed = False
        for b in ir.blocks:
            for s in b.stmts:
                if s.var in out.derived or s.kwargs or not _recomputable(s, out):
                    continue
                if not out.kinds.is_scalar(s.var) or b.id not in out.cyclic:
                    continue
                leaves = _leaves(out, s.args, out.scc[b.id], where, written)
                if leaves is not None:
                    out.derived[s.var] = (s.op, list(s.args), leaves)
                    changed = True


def _recomputable(s: Any, out: Induction) -> bool:
    if s.op == "getitem":    # an element of a stable array, at int indices
        return s.args[0] in out.stable and all(
            out.kinds.kind(i) == "int" for i in s.args[1:])
    if s.op in _OF_NUMBERS:
        return all(out.kinds.is_scalar(a) for a in s.args)
    return s.op in _RECOMPUTE


def _stable_arrays(ir: IR, kinds: Any) -> set:
    """The float64-array arguments of a function that writes into no array: no
    `setitem`, no in-place operator, and no call but of library functions in the rule
    table without an `out=`, or of builtins given numbers only (`operator.index` of a
    shape).  A transformed call, a method such as `xs.sort()` or a closure may write
    into an array it reaches."""
    if kinds is None:
        return set()
    for b in ir.blocks:
        for s in b.stmts:
            if s.op in ("setitem", "jcall") or s.op in INPLACE:
                return set()
            if s.op == "call" and not _harmless_call(s, kinds):
                return set()
    return {a.var for a in ir.args if kinds.is_float_array(a.var)}


def _harmless_call(s: Any, kinds: Any) -> bool:
    """A call that cannot write into an array (see `_stable_arrays`)."""
    if _ruled(s):
        return "out" not in s.kwargs
    f = s.args[0]
    return (isinstance(f, Const) and isinstance(f.value, (types.BuiltinFunctionType, type))
            and all(kinds.is_scalar(a) for a in [*s.args[1:], *s.kwargs.values()]))


def _leaves(out: Induction, args: list, comp: int, where: dict, written: set):
    """The counters and invariants `args` are computed from, or None."""
    leaves = []
    for a in args:
        if isinstance(a, Const):
            continue
        if a in out.phis and out.scc[out.phis[a][0]] == comp:
            leaves.append(a)
        elif a in out.derived and out.scc.get(where.get(a)) == comp:
            leaves += out.derived[a][2]
        elif out.scc.get(where.get(a)) != comp and a not in written:
            leaves.append(a)
        else:
            return None
    return leaves


def _ruled(s: Any) -> bool:
    """A call of a library function in the rule table (which never writes into
    its arguments: `len`, `math.exp`, `np.sum`, ...)."""
    from ..rules import lookup_callee
    f = s.args[0] if s.op == "call" else None
    return isinstance(f, Const) and lookup_callee(f.value) is not None


def _written(ir: IR, kinds: Any) -> set:
    """Values an array write or a transformed call may change."""
    out = set(ir.meta.get("mutated", ()))
    for b in ir.blocks:
        for s in b.stmts:
            if s.op in ("jcall", "call", "setitem") and not _ruled(s):
                out.update(a for a in s.operands()
                           if isinstance(a, Var) and not kinds.is_scalar(a))
    return out


def _implied(ir: IR, out: Induction, preds: dict, where: dict) -> None:
    dummies = ir.meta.get("dummy_phis", {})
    for v, (h, steps) in out.phis.items():
        if h not in dummies or h in out.implied or h in out.first_visit:
            continue
        entries = [p for p in preds[h] if out.scc.get(p) != out.scc[h]]
        if len(entries) != 1 or set(steps) != set(preds[h]) - set(entries):
            continue
        signs = {(k > 0) - (k < 0) for k in steps.values()}
        init = next(p for p in ir.block(h).phis if p.var == v).incoming[entries[0]]
        inside = isinstance(init, Var) and out.scc.get(where.get(init)) == out.scc[h]
        if inside or 0 in signs or len(signs) != 1:
            continue
        if len(steps) == 1:
            out.implied[h] = (v, entries[0], next(iter(steps)), init)
        else:   # monotonic over every latch: the entry value marks the first visit
            out.first_visit[h] = (v, entries[0], init)


def _chosen(ir: IR, out: Induction, preds: dict) -> None:
    blocks = ir.block_map()
    for h, (_, entry, _) in out.first_visit.items():
        latches = [p for p in preds[h] if p != entry]
        if len(latches) != 2:
            continue
        for c in sorted({q for p in latches for q in preds[p]} | set(latches)):
            arms = _arms(blocks[c], h, latches, preds)
            term = blocks[c].term
            if (arms is None or term.cond not in out.derived
                    or out.scc.get(c) != out.scc[h]):
                continue
            steps = _latch_steps(out, out.derived[term.cond][2], h, latches)
            if steps is not None:
                out.chosen[h] = (term.cond, arms[0], arms[1], steps)
                break


def _arms(c: Any, h: int, latches: list, preds: dict):
    """(latch taken when `c`'s branch condition holds, latch taken otherwise) when the
    two arms of `c`'s branch lead to the two latches of `h`: an arm is a latch entered
    from `c` alone, or `h` itself (then `c` is the latch)."""
    if not isinstance(c.term, Branch) or c.term.then == c.term.else_:
        return None
    arms = []
    for succ in (c.term.then, c.term.else_):
        latch = c.id if succ == h else succ if preds[succ] == [c.id] else None
        if latch not in latches:
            return None
        arms.append(latch)
    return tuple(arms) if arms[0] != arms[1] else None


def _latch_steps(out: Induction, leaves: list, h: int, latches: list):
    """{counter: step} when every counter among `leaves` is a phi of `h` stepping the
    same on both latches (the other leaves are invariants), else None."""
    steps = {}
    for leaf in leaves:
        if leaf not in out.phis:
            continue
        hdr, st = out.phis[leaf]
        if hdr != h or st.get(latches[0]) is None or st.get(latches[0]) != st.get(latches[1]):
            return None
        steps[leaf] = st[latches[0]]
    return steps
