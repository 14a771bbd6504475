"""Locals that some path leaves unassigned, compiled.

The lowering reads such a local as `%v = φ(#a => UNBOUND, #b => %x)` followed by
`check_bound(%v, "name")` (see `lowering.runtime`).  Native code has no UNBOUND value,
so before typing, `expose_unbound` gives every phi that may carry UNBOUND a bool
companion phi (False where UNBOUND comes in) and passes it to `check_bound` as its
third operand: the compiled check raises CPython's UnboundLocalError when the flag is
false.  UNBOUND itself is typed as "nothing" (the phi takes its other incomings'
type) and compiles to that type's zero, which nothing ever reads.
"""
from __future__ import annotations

from ssair.ir import IR, Const, Phi, Var

from lowering.runtime import UNBOUND, check_bound


def is_unbound(operand) -> bool:
    return isinstance(operand, Const) and operand.value is UNBOUND


def expose_unbound(ir: IR) -> IR:
    """Rewrite `ir` in place (a copy the JIT owns): companion flags for the phis
    that may carry UNBOUND, read by their `check_bound` calls."""
    carrying = _carrying_phis(ir)
    if not carrying:
        return ir
    flags = {}
    for b in ir.blocks:
        for p in b.phis:
            if p.var in carrying:
                flags[p.var] = Phi(ir.new_var(), {}, name=None)
    for b in ir.blocks:
        for p in list(b.phis):
            flag = flags.get(p.var)
            if flag is None:
                continue
            for pred, v in p.incoming.items():
                flag.incoming[pred] = (Const(False) if is_unbound(v) else
                                       flags[v].var if v in flags else Const(True))
            b.phis.append(flag)
    for b in ir.blocks:
        for s in b.stmts:
            if (s.op == "call" and isinstance(s.args[0], Const)
                    and s.args[0].value is check_bound and len(s.args) == 3
                    and s.args[1] in flags):
                s.args.append(flags[s.args[1]].var)
    return ir


def _carrying_phis(ir: IR) -> set:
    """Phis with an UNBOUND incoming, directly or through other such phis."""
    phis = {p.var: p for b in ir.blocks for p in b.phis}
    out = {v for v, p in phis.items() if any(is_unbound(x) for x in p.incoming.values())}
    changed = bool(out)
    while changed:
        changed = False
        for v, p in phis.items():
            if v not in out and any(isinstance(x, Var) and x in out
                                    for x in p.incoming.values()):
                out.add(v)
                changed = True
    return out
