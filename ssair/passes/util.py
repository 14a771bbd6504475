"""Small helpers shared by the passes: phi bookkeeping, literal constants and guarded
compile-time evaluation.  (CFG orders and dominators come from `ssair.cfg`.)"""
from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from typing import Any

from ..ir import IR, Const, Phi, Var
from ..primitives import PRIMITIVES

LITERAL_TYPES = (type(None), bool, int, float, str, bytes)
MAX_INT_BITS = 4096
MAX_FOLDED_INT_BITS = 256
MAX_SEQ_LEN = 4096


# -- phis -------------------------------------------------------------------------
def rekey_incoming(phi: Phi, old: int, new: int) -> None:
    """Rename the incoming edge `old` of `phi` to `new`, keeping the print order."""
    phi.incoming = {(new if b == old else b): v for b, v in phi.incoming.items()}


def trivial_value(phi: Phi) -> Any | None:
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
                if v is None or _resolve(v, mapping) == p.var:
                    keep.append(p)  # (a cycle of trivial phis: unreachable code)
                else:
                    mapping[p.var] = v
            b.phis = keep
        if mapping:
            ir.replace_uses(mapping)
            changed = changed_any = True
    return changed_any


def _resolve(v: Any, mapping: dict) -> Any:
    while isinstance(v, Var) and v in mapping:
        v = mapping[v]
    return v


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


def try_evaluate(fn: Callable, args: list, kwargs: dict | None = None) -> Const | None:
    """`Const(fn(*args))` when the call returns a literal without raising or warning,
    else None (the runtime must then raise or warn, or the value cannot be written as
    a constant)."""
    if not _cheap(fn, args):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            value = fn(*args, **(kwargs or {}))
    except Exception:  # noqa: BLE001 - any exception means: leave it to the runtime
        return None
    if type(value) is int and value.bit_length() > MAX_FOLDED_INT_BITS:
        return None  # keeps listings readable: `2 ** 1000` stays an expression
    return Const(value) if is_literal(value) else None


def raises(fn: Callable, args: list) -> bool:
    """Whether `fn(*args)` raises or warns (False when it is too costly to try)."""
    if not _cheap(fn, args):
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fn(*args)
    except Exception:  # noqa: BLE001 - any exception means: leave it to the runtime
        return True
    return False


def _cheap(fn: Callable, args: list) -> bool:
    """Refuse evaluations that could take a long time or much memory when folded
    (`'a' * 10**9`, `1 << 10**9`, `3 ** 10**6`); they are left to the runtime."""
    ints = [a for a in args if type(a) in (int, bool)]
    if any(fn is f for f in _REPEATS):
        seqs = any(type(a) in (str, bytes, tuple) for a in args)
        return not (seqs and any(abs(i) > MAX_SEQ_LEN for i in ints))
    if any(fn is f for f in _GROWS) and len(args) >= 2 and type(args[1]) is int:
        base = args[0].bit_length() if type(args[0]) is int else 1
        return abs(args[1]) <= MAX_INT_BITS and base * abs(args[1]) <= 4 * MAX_INT_BITS
    return True


_REPEATS = (operator.mul, PRIMITIVES["mul"].impl)
_GROWS = (operator.lshift, operator.pow, pow, PRIMITIVES["lshift"].impl, PRIMITIVES["pow"].impl)


# The table's `pow` refuses every large power; the passes bound the cost themselves
# (`_cheap`), so they evaluate with the real operation, as the interpreter runs it.
_EXACT_IMPLS = {"pow": operator.pow}


def evaluator(op: str) -> Callable | None:
    """The function that computes primitive `op` on Python values (None: unknown)."""
    prim = PRIMITIVES.get(op)
    if prim is None or prim.impl is None:
        return None
    return _EXACT_IMPLS.get(op, prim.impl)


def fold_statement(op: str, args: list) -> Const | None:
    """Evaluate primitive `op` on literal operands, or None if it may not be folded."""
    prim = PRIMITIVES.get(op)
    if prim is None or not prim.pure or not prim.foldable or prim.impl is None:
        return None
    if not all(literal_operand(a) for a in args) or not prim.arity_ok(len(args)):
        return None
    return try_evaluate(evaluator(op), [a.value for a in args])


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
