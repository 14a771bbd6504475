"""Dead code elimination."""
from __future__ import annotations

from ..ir import IR, Const, Var
from ..primitives import PRIMITIVES
from .scalars import BOOL, FLOAT, INT, Scalars
from .util import evaluator, is_pure, literal_operand, raises

# Pure ops that never raise, whatever their operands.
NEVER_RAISE = {"is", "isnot", "tuple", "list", "copy", "make_closure"}
# Ops that cannot raise on plain int/bool operands, nor on plain float operands.
SAFE_SAME_KIND = {"add", "sub", "mul", "neg", "pos", "not", "truth", "lt", "le", "gt",
                  "ge", "eq", "ne"}
SAFE_ON_INTS = {"bitand", "bitor", "bitxor", "invert"}
DIVISIONS = {"truediv", "floordiv", "mod"}
COMPARISONS = {"lt", "le", "gt", "ge", "eq", "ne"}


def dce(ir: IR) -> IR:
    """Remove phis and pure statements whose values are never used.

    Requires: a well-formed IR (every operand defined).
    Guarantees: returns a new IR (the input is untouched) with the same blocks,
    terminators and impure statements (`call`, `setitem`, unknown ops) in their order.
    A value is live iff a terminator, a kept statement, or a live value uses it; dead
    phis go, dead phi cycles (`i = φ(0, i + 1)` with `i` unused) included.  A dead
    pure statement goes only when it cannot raise, so the runtime still raises what
    CPython raises: `is`, `tuple`, `list`, `copy`, `make_closure`; arithmetic and
    comparisons on operands known (`scalars.Scalars`) to be all int/bool or all float;
    divisions by a non-zero constant; constant operands whose evaluation succeeds.
    A dead `x + 1` on an unknown `x` (a None would raise TypeError) stays.
    """
    ir = ir.copy()
    sc = Scalars(ir)
    defs = ir.defs_by_var()
    live = _live_values(ir, defs, sc)
    for b in ir.blocks:
        b.phis = [p for p in b.phis if p.var in live]
        b.stmts = [s for s in b.stmts if s.var in live]
    return ir


def _is_root(stmt, sc: Scalars) -> bool:
    """Statements kept whatever uses them."""
    return not is_pure(stmt.op) or may_raise(stmt, sc)


def may_raise(stmt, sc: Scalars) -> bool:
    """False only when `stmt` certainly completes without an exception."""
    if stmt.op in NEVER_RAISE:
        return False
    if stmt.kwargs or stmt.op not in PRIMITIVES:
        return True
    if all(literal_operand(a) for a in stmt.args):
        impl = evaluator(stmt.op)
        return impl is None or raises(impl, [a.value for a in stmt.args])
    kinds = {sc.kind(a) for a in stmt.args}
    if None in kinds:
        return True
    if stmt.op in COMPARISONS:
        return False
    if stmt.op in DIVISIONS and not _nonzero(stmt.args[1]):
        return True
    if stmt.op in SAFE_SAME_KIND or stmt.op in DIVISIONS:
        return not (kinds <= {INT, BOOL} or kinds == {FLOAT})
    return not (stmt.op in SAFE_ON_INTS and kinds <= {INT, BOOL})


def _nonzero(a) -> bool:
    return isinstance(a, Const) and type(a.value) in (int, float, bool) and a.value != 0


def _live_values(ir: IR, defs: dict, sc: Scalars) -> set:
    work = []
    for b in ir.blocks:
        work += [s.var for s in b.stmts if _is_root(s, sc)]
        work += [a for a in b.term.operands() if isinstance(a, Var)]
    live = set()
    while work:
        v = work.pop()
        if v in live:
            continue
        live.add(v)
        d = defs.get(v)
        if d is not None and hasattr(d, "operands"):
            work += [a for a in d.operands() if isinstance(a, Var) and a not in live]
    return live
