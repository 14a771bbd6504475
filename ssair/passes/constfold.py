"""Constant folding and propagation."""
from __future__ import annotations

import math
import operator

from ..ir import IR, Const
from .util import fold_statement, literal_operand, remove_trivial_phis, try_evaluate

# Library functions that are pure and deterministic on literal arguments; a call of
# one of them on constants is evaluated at compile time unless it raises.
FOLDABLE_CALLS = (
    abs, len, min, max, round, int, float, bool, divmod,
    math.sin, math.cos, math.tan, math.asin, math.acos, math.atan, math.atan2,
    math.sinh, math.cosh, math.tanh, math.asinh, math.acosh, math.atanh,
    math.exp, math.expm1, math.log, math.log1p, math.log2, math.log10, math.sqrt,
    math.fabs, math.floor, math.ceil, math.trunc, math.hypot, math.pow, math.copysign,
    math.degrees, math.radians, math.erf, math.erfc, math.gamma, math.lgamma, math.fmod,
    math.isnan, math.isinf, math.isfinite, math.gcd,
    operator.add, operator.sub, operator.mul, operator.neg, operator.index,
)


def constfold(ir: IR) -> IR:
    """Fold statements whose operands are all constants and propagate the results.

    Requires: a well-formed IR.
    Guarantees: returns a new IR (the input is untouched) where
      * a foldable pure primitive (`PRIMITIVES[op].foldable`) whose operands are all
        literal constants (None, bool, int, float, str, bytes, tuples of those) is
        replaced by its value, computed with the primitive's own `impl`;
      * a `call` of a whitelisted pure library function (`FOLDABLE_CALLS`: `abs`,
        `len`, `math.sin`, `math.sqrt`, ...) on literal constants is replaced too;
      * `copy(x)` is replaced by `x`; a phi whose incoming operands are all one value
        (ignoring itself) is replaced by that value;
      * nothing is folded when the evaluation raises (the runtime must raise), when
        its result is not a literal (arrays, objects: identity and mutability
        matter), or when it would be costly (`'a' * 10**9`, `1 << 10**9`).
    Folded statements are deleted; the CFG is unchanged (`simplifycfg` folds the
    branches whose condition became a constant).
    """
    ir = ir.copy()
    changed = True
    while changed:
        changed = _fold_round(ir)
        changed = remove_trivial_phis(ir) or changed
    return ir


def _fold_round(ir: IR) -> bool:
    mapping = {}
    for b in ir.blocks:
        keep = []
        for s in b.stmts:
            value = _fold(s)
            if value is None:
                keep.append(s)
            else:
                mapping[s.var] = value
        b.stmts = keep
    if mapping:
        ir.replace_uses(mapping)
    return bool(mapping)


def _fold(s):
    """The operand `s` can be replaced by, or None."""
    if s.op == "copy" and len(s.args) == 1 and not s.kwargs:
        return s.args[0] if s.args[0] != s.var else None
    if s.op == "call":
        return _fold_call(s)
    if s.kwargs:
        return None
    return fold_statement(s.op, s.args)


def _fold_call(s):
    f = s.args[0]
    if not isinstance(f, Const) or not any(f.value is g for g in FOLDABLE_CALLS):
        return None
    rest = s.args[1:]
    if not all(literal_operand(a) for a in rest + list(s.kwargs.values())):
        return None
    kwargs = {k: v.value for k, v in s.kwargs.items()}
    return try_evaluate(f.value, [a.value for a in rest], kwargs)
