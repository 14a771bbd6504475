"""A local analysis: which SSA values are certainly a Python `int`, `float` or `bool`.

Algebraic simplification and CSE may only rewrite `x * 1` or merge `x + y` when the
operands are plain scalars: a numpy array `x * 1` is a new array, so replacing it by
`x` would create aliasing.  The analysis is optimistic over phis (loop counters such
as `i = φ(0, i + 1)` come out as `int`) and knows:

  * constants (`type(v)` exactly `int`, `float` or `bool`);
  * a `.type` of `int64`, `float64` or `bool` set by type inference;
  * arithmetic on known scalars (in-place `iadd` ... too: on numbers they are the
    plain operators), with Python's result types (`bool + bool` is an
    `int`; `int / int` a `float`; `int ** c` an `int` only for a constant `c >= 0`);
  * operations whose result is always a bool (`not`, `truth`, `is`, `in`, and
    comparisons of known scalars);
  * calls of `len`, `operator.index`, `bool` and the float functions of `math` (always exact
    `bool`, `float`), and of `int`, `float`, `abs` on known scalars.

Anything else is unknown (None).
"""
from __future__ import annotations

import math
import operator
from typing import Any

from ..ir import IR, Const, Phi
from ..primitives import INPLACE

INT, FLOAT, BOOL = "int", "float", "bool"
_TOP = "top"  # not yet computed (optimistic start)
_TYPE_NAMES = {"int64": INT, "float64": FLOAT, "bool": BOOL}
_NUMERIC = (INT, FLOAT, BOOL)

_ARITH = {"add", "sub", "mul", "floordiv", "mod"}
_BITS = {"bitand", "bitor", "bitxor"}
_SHIFTS = {"lshift", "rshift"}
_ALWAYS_BOOL = {"not", "truth", "is", "isnot", "in", "notin"}
_COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}
_FLOAT_MATH = tuple(getattr(math, n) for n in (
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp",
    "expm1", "log", "log1p", "log2", "log10", "sqrt", "fabs", "hypot", "pow", "copysign",
    "degrees", "radians", "erf", "erfc", "gamma", "lgamma", "fmod"))


def const_kind(value: Any) -> str | None:
    """The kind of a constant value, exact types only."""
    return {bool: BOOL, int: INT, float: FLOAT}.get(type(value))


def type_kind(t: Any) -> str | None:
    """The kind named by an inferred `.type`, if any."""
    return None if t is None else _TYPE_NAMES.get(str(t))


class Scalars:
    """`kind(operand)` -> INT, FLOAT, BOOL or None for one IR (computed once; the
    result stays valid while passes only delete or redirect values)."""

    def __init__(self, ir: IR):
        self.kinds: dict = {}
        defs = list(ir.definitions())
        for d in defs:
            self.kinds[d.var] = type_kind(d.type) or (None if _is_arg(d) else _TOP)
        self._solve([d for d in defs if type_kind(d.type) is None and not _is_arg(d)])

    def kind(self, a: Any) -> str | None:
        if isinstance(a, Const):
            return const_kind(a.value)
        k = self.kinds.get(a)
        return None if k == _TOP else k

    def _raw(self, a: Any) -> str | None:
        if isinstance(a, Const):
            return const_kind(a.value)
        return self.kinds.get(a)

    def _solve(self, defs: list) -> None:
        changed = True
        while changed:
            changed = False
            for d in defs:
                new = self._phi(d) if isinstance(d, Phi) else self._stmt(d)
                if new != self.kinds[d.var]:
                    self.kinds[d.var] = new
                    changed = True

    def _phi(self, p: Phi) -> str | None:
        ks = {self._raw(v) for v in p.incoming.values()} - {_TOP}
        if not ks:
            return _TOP
        return ks.pop() if len(ks) == 1 else None

    def _stmt(self, s) -> str | None:
        if s.op in _ALWAYS_BOOL:
            return BOOL
        ks = [self._raw(a) for a in s.args]
        if _TOP in ks:
            return _TOP
        if s.op == "call":
            return _call_kind(s, ks)
        if s.op == "copy":
            return ks[0]
        if s.kwargs or None in ks:
            return None
        return result_kind(INPLACE.get(s.op, s.op), ks, s.args)


def _is_arg(d: Any) -> bool:
    return not hasattr(d, "op")


def result_kind(op: str, ks: list, args: list) -> str | None:
    """Python's result kind of `op` on operands of known kinds `ks`."""
    if op in _COMPARE:
        return BOOL if len(ks) == 2 else None
    if len(ks) == 1:
        return _unary_kind(op, ks[0])
    if len(ks) != 2:
        return None
    a, b = ks
    if op in _ARITH:
        return FLOAT if FLOAT in (a, b) else INT
    if op == "truediv":
        return FLOAT
    if op in _BITS:
        return None if FLOAT in (a, b) else (BOOL if a == b == BOOL else INT)
    if op in _SHIFTS:
        return None if FLOAT in (a, b) else INT
    if op == "pow":
        return _pow_kind(a, b, args[1])
    return None


def _unary_kind(op: str, k: str) -> str | None:
    if op in ("neg", "pos"):
        return FLOAT if k == FLOAT else INT
    if op == "invert":
        return None if k == FLOAT else INT
    return None


def _pow_kind(a: str, b: str, exponent: Any) -> str | None:
    """`int ** int` is an int only for exponents >= 0; `float ** y` may be complex
    unless `y` is integral."""
    const = exponent.value if isinstance(exponent, Const) else None
    if a != FLOAT and b != FLOAT:
        if const is not None:
            return INT if const >= 0 else FLOAT
        return None
    if b != FLOAT:
        return FLOAT if a == FLOAT else None
    if isinstance(const, float) and const.is_integer() and a == FLOAT:
        return FLOAT
    return None


def _call_kind(s, ks: list) -> str | None:
    f = s.args[0].value if isinstance(s.args[0], Const) else None
    rest = ks[1:]
    if f is None or s.kwargs:
        return None
    if f is len or f is operator.index:
        return INT
    if f is bool:
        return BOOL
    if (f is int or f is float) and len(rest) == 1 and rest[0] in _NUMERIC:
        return const_kind(f(0))
    if f is abs and len(rest) == 1 and rest[0] in _NUMERIC:
        return FLOAT if rest[0] == FLOAT else INT
    if any(f is g for g in _FLOAT_MATH):
        return FLOAT
    return None
