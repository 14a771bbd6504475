"""Small helpers shared by the passes: phi bookkeeping, literal constants and guarded
compile-time evaluation.  (CFG orders and dominators come from `ssair.cfg`.)"""
from __future__ import annotations

import operator
from typing import Any, Callable, Optional

from ..ir import IR, Const, Phi, Var
from ..primitives import PRIMITIVES

LITERAL_TYPES = (type(None), bool, int, float, str, bytes)
MAX_INT_BITS = 4096
MAX_SEQ_LEN = 4096


# -- phis -------------------------------------------------------------------------
def rekey_incoming(phi: Phi, old: int, new: int) -> None:
    """Rename the incoming edge `old` of `phi` to `new`, keeping the print order."""
    phi.incoming = {(new if b == old else b): v for b, v in phi.incoming.items()}


def trivial_value(phi: Phi) -> Optional[Any]:
    """The single operand a phi always takes (ignoring self-references), or None."""
    vals = [v for v in phi.incoming.values() if v != phi.var]
    if not vals or any(v != vals[0] for v in vals[1:]):
        return None
    return vals[0]


def remove_trivial_phis(ir: IR) -> bool:
    """Replace every phi whose incoming operands are all one value (or itself) by
    that value, until none is left.  Mutates `ir`; returns whether it changed."""
    changed_any = False
    changed = True
    while changed:
        changed = False
        mapping = {}
        for b in ir.blocks:
            keep = []
            for p in b.phis:
                v = trivial_value(p)
                if v is None or p.var in mapping:
                    keep.append(p)
                else:
                    mapping[p.var] = v
            b.phis = keep
        if mapping:
            ir.replace_uses(mapping)
            changed = changed_any = True
    return changed_any


# -- constants ------------------------------------------------------------------
def is_literal(value: Any, depth: int = 0) -> bool:
    """Immutable plain values that the printer writes and the parser reads back:
    None, bool, int, float, str, bytes and tuples of those.  Subclasses (numpy
    scalars among them) are excluded on purpose."""
    if type(value) in LITERAL_TYPES:
        return _small(value)
    if type(value) is tuple and depth < 8:
        return len(value) <= MAX_SEQ_LEN and all(is_literal(x, depth + 1) for x in value)
    return False


def _small(value: Any) -> bool:
    if type(value) is int:
        return value.bit_length() <= MAX_INT_BITS
    if type(value) in (str, bytes):
        return len(value) <= MAX_SEQ_LEN
    return True


def literal_operand(a: Any) -> bool:
    return isinstance(a, Const) and is_literal(a.value)


def try_evaluate(fn: Callable, args: list, kwargs: Optional[dict] = None) -> Optional[Const]:
    """`Const(fn(*args))` when the call returns a literal without raising, else None
    (the runtime must then raise, or the value cannot be written as a constant)."""
    if not _cheap(fn, args):
        return None
    try:
        value = fn(*args, **(kwargs or {}))
    except Exception:
        return None
    return Const(value) if is_literal(value) else None


def raises(fn: Callable, args: list) -> bool:
    """Whether `fn(*args)` raises (False when it is too costly to try)."""
    if not _cheap(fn, args):
        return False
    try:
        fn(*args)
    except Exception:
        return True
    return False


def _cheap(fn: Callable, args: list) -> bool:
    """Refuse evaluations that could take a long time or much memory when folded
    (`'a' * 10**9`, `1 << 10**9`); they are left to the runtime."""
    ints = [a for a in args if type(a) is int]
    seqs = [a for a in args if type(a) in (str, bytes, tuple)]
    if seqs and any(abs(i) > MAX_SEQ_LEN for i in ints):
        return False
    big = any(abs(i) > MAX_INT_BITS for i in ints)
    costly = (PRIMITIVES["lshift"].impl, PRIMITIVES["pow"].impl, operator.lshift,
              operator.pow, pow)
    return not (big and any(fn is f for f in costly))


def fold_statement(op: str, args: list) -> Optional[Const]:
    """Evaluate primitive `op` on literal operands, or None if it may not be folded."""
    prim = PRIMITIVES.get(op)
    if prim is None or not prim.pure or not prim.foldable or prim.impl is None:
        return None
    if not all(literal_operand(a) for a in args) or not prim.arity_ok(len(args)):
        return None
    return try_evaluate(prim.impl, [a.value for a in args])


def is_pure(op: str) -> bool:
    prim = PRIMITIVES.get(op)
    return prim is not None and prim.pure


def use_counts(ir: IR) -> dict:
    """Var -> number of uses (operands of phis, statements and terminators)."""
    counts: dict = {}
    for _, a in ir.uses():
        if isinstance(a, Var):
            counts[a] = counts.get(a, 0) + 1
    return counts
