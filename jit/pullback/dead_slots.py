"""Dead tape slots: forward values whose every pop the compiled adjoint ignores.

The J transform records the operands of a rule's pullback (its alphas) unless the
rule says otherwise; many pullbacks never read them once typed (`d_add` only tests
`isinstance(x, tuple)`, which typing decides).  After typing the forward and its
adjoint for the usual `dy`, a pop is *dead* when each of its uses is an argument of
a compiled call whose parameter the callee never reads (uses in statements whose
value typing already knows do not count).  A forward value all of whose pops are
dead is not pushed, and its pops read nothing.

Consistency: the set is fixed on the forward's `Typing` (`dead_pushes`) before the
forward is compiled, and frozen empty when code for that forward is generated first
(a callee compiled inside another function's module).  An adjoint compiled later
(another `dy` type, or a callee's adjoint) that does read a dropped value fails with
TypingError, which sends that pullback to the interpreter.
"""
from __future__ import annotations

from typing import Any

from ssair.ir import Var

from jit.types import TypingError


def uses_of(t: Any) -> dict:
    """Var -> [(user, operand position or None)] in a typed IR; users whose value
    typing knows statically (`t.static`) are left out."""
    out: dict = {}
    for b in t.ir.blocks:
        for p in b.phis:
            for v in p.incoming.values():
                out.setdefault(v, []).append((p, None))
        for s in b.stmts:
            if s.var in t.static:
                continue
            for k, a in enumerate(s.args):
                if k == 2 and _type_only(s):
                    continue
                out.setdefault(a, []).append((s, k))
            for a in s.kwargs.values():
                out.setdefault(a, []).append((s, None))
        if b.term is not None:
            for a in b.term.operands():
                out.setdefault(a, []).append((b.term, None))
    return out


def _type_only(s: Any) -> bool:
    """`unbcast(dy, x)` of numbers reads only the type of `x` (the value is dy)."""
    from adjoint.tape import unbcast
    from jit.types import is_numeric
    return (s.op == "call" and getattr(s.args[0], "value", None) is unbcast
            and len(s.args) == 3 and (is_numeric(s.type) or str(s.type) == "none"))


def _param_unused(target: Any, j: int) -> bool:
    if target is None or target.ir.nfree or j >= len(target.ir.args):
        return False
    uses = getattr(target, "var_uses", None)
    if uses is None:
        uses = target.var_uses = uses_of(target)
    return not uses.get(target.ir.args[j].var)


def _ignored_by(t: Any, user: Any, var: Var) -> bool:
    call = t.calls.get(getattr(user, "var", None))
    if getattr(user, "op", None) != "call" or call is None or call.target is None:
        return False
    slots = [j for j, a in enumerate(call.operands) if a == var]
    return bool(slots) and all(_param_unused(call.target, j) for j in slots)


def live_pops(adj: Any) -> set:
    """Ids of the pops of a typed adjoint whose value is read."""
    uses = uses_of(adj)
    live = set()
    for b in adj.ir.blocks:
        for s in b.stmts:
            if s.op != "pop":
                continue
            if not all(_ignored_by(adj, user, s.var) for user, _ in uses.get(s.var, [])):
                live.add(s.var.id)
    return live


def dead_pushes(fwd: Any, adj: Any) -> frozenset:
    """Forward value ids that need no tape slot for the adjoint typing `adj`."""
    pop_of = adj.ir.meta.get("pop_of") or {}
    pushed = {fid for fid in pop_of.values()}
    live = {pop_of[p] for p in live_pops(adj) if p in pop_of}
    present = {s.var.id for b in adj.ir.blocks for s in b.stmts if s.op == "pop"}
    # a value popped in a block typing pruned is never pushed by these types either
    seen = {pop_of[p] for p in present if p in pop_of}
    return frozenset(f for f in pushed if f in seen and f not in live)


def decide(fwd: Any, dead: frozenset) -> frozenset:
    """Fix the dead set of a forward typing (the first decision stands)."""
    got = getattr(fwd, "dead_pushes", None)
    if got is None:
        got = fwd.dead_pushes = dead
    return got


def check_adjoint(fwd: Any, adj: Any) -> None:
    """Refuse an adjoint typing that reads a value its forward does not push."""
    dead = decide(fwd, frozenset())
    if not dead:
        return
    pop_of = adj.ir.meta.get("pop_of") or {}
    needed = {pop_of[p] for p in live_pops(adj) if p in pop_of}
    if needed & dead:
        raise TypingError(f"jit: the adjoint of {adj.ir.name} for these types reads "
                          "values its compiled forward does not record")
