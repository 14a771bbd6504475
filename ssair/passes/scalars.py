"""A local analysis: which SSA values are certainly a Python `int`, `float` or `bool`.

Algebraic simplification and CSE may only rewrite `x * 1` or merge `x + y` when the
operands are plain scalars: a numpy array `x * 1` is a new array, so replacing it by
`x` would create aliasing.  The analysis is optimistic over phis (loop counters such
as `i = φ(0, i + 1)` come out as `int`) and knows:

  * constants (`type(v)` exactly `int`, `float` or `bool`);
  * a `.type` of `int64`, `float64` or `bool` set by type inference (or by a caller
    that knows the argument values: the adjoint seeds its arguments' types so);
  * float arrays (internally `(FLOAT, ndim or None)`, never returned by `kind`):
    arguments typed `array(float64, 1d)`, `np.zeros(n)`/`ones`/`empty` without
    `dtype=`, `+ - * /`, negation of float arrays with scalars or float arrays, and
    an in-place operator on a float array (`a += b` is `a`, whatever `b` is);
    `is_float_array` says so;
  * element reads `a[i]`, `a[i, j]` with known-int indices of an argument typed
    `array(float64, 1d)` (an int64, float64 or bool array with as many dimensions as
    indices: a bool index adds a dimension); the array itself stays unknown (None) to every user of `kind`;
  * `a.shape[k]` of such an array (an `int`; `a.shape` itself is `SHAPE`, no number);
  * arithmetic on known scalars (in-place `iadd` ... too: on numbers they are the
    plain operators), with Python's result types (`bool + bool` is an
    `int`; `int / int` a `float`; `int ** c` an `int` only for a constant `c >= 0`);
  * operations whose result is always a bool (`not`, `truth`, `is`, `in`, and
    comparisons of known scalars);
  * calls of `len`, `operator.index`, `bool` and the float functions of `math` (always exact
    `bool`, `float`), and of `int`, `float`, `abs` on known scalars.

Phis merging different numeric kinds (`r = 1` then `r *= x` with a float `x`) and
arithmetic on them are some immutable number (`NUMBER`): `is_scalar` says so, while
`kind` (exact kinds only) says None.  Anything else is unknown (None).
"""
from __future__ import annotations

import math
import operator
import re
from typing import Any

import numpy as np

from ..ir import IR, Const, Phi, Var
from ..primitives import INPLACE

INT, FLOAT, BOOL = "int", "float", "bool"
NUMBER = "number"  # an int, float, bool, complex or numpy scalar: no in-place methods
SHAPE = "shape"    # the shape of a known array: a tuple of ints (not a number itself)
_TOP = "top"  # not yet computed (optimistic start)
_TYPE_NAMES = {"int64": INT, "float64": FLOAT, "bool": BOOL}
_NUMERIC = (INT, FLOAT, BOOL)
_SCALAR = _NUMERIC + (NUMBER,)

_ARITH = {"add", "sub", "mul", "floordiv", "mod"}
_BITS = {"bitand", "bitor", "bitxor"}
_SHIFTS = {"lshift", "rshift"}
_ALWAYS_BOOL = {"not", "truth", "is", "isnot", "in", "notin"}
_COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}
_FLOAT_MATH = tuple(getattr(math, n) for n in (
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp",
    "expm1", "log", "log1p", "log2", "log10", "sqrt", "fabs", "hypot", "pow", "copysign",
    "degrees", "radians", "erf", "erfc", "gamma", "lgamma", "fmod"))


_NEW_FLOAT_ARRAY = (np.zeros, np.ones, np.empty)  # without dtype= (kwargs: unknown)


def const_kind(value: Any) -> str | None:
    """The kind of a constant value, exact types only."""
    return {bool: BOOL, int: INT, float: FLOAT}.get(type(value))


_ARRAY_TYPE = re.compile(r"array\((int64|float64|bool), (\d)d\)$")


def type_kind(t: Any) -> str | None:
    """The kind named by an inferred `.type`, if any (`array_kind` for arrays)."""
    return None if t is None else _TYPE_NAMES.get(str(t))


def array_kind(t: Any) -> tuple | None:
    """`(element kind, ndim)` for a `.type` such as `array(float64, 1d)`."""
    m = _ARRAY_TYPE.match(str(t)) if t is not None else None
    return (_TYPE_NAMES[m.group(1)], int(m.group(2))) if m else None


def _seed(d: Any) -> Any:
    """The kind a definition starts from: its `.type`, else unknown (arguments) or
    not yet computed."""
    k = type_kind(d.type) or array_kind(d.type)
    if k is not None:
        return k
    return None if _is_arg(d) else _TOP


class Scalars:
    """`kind(operand)` -> INT, FLOAT, BOOL or None for one IR (computed once; the
    result stays valid while passes only delete or redirect values)."""

    def __init__(self, ir: IR):
        self.kinds: dict = {}
        defs = list(ir.definitions())
        for d in defs:
            self.kinds[d.var] = _seed(d)
        self._solve([d for d in defs if self.kinds[d.var] == _TOP])

    def kind(self, a: Any) -> str | None:
        if isinstance(a, Const):
            return const_kind(a.value)
        k = self.kinds.get(a)
        return k if k in _NUMERIC else None

    def is_float_array(self, a: Any) -> bool:
        """True when `a` is certainly a float64 numpy array."""
        return _is_float_array(self.kinds.get(a)) if isinstance(a, Var) else False

    def is_scalar(self, a: Any) -> bool:
        """True when `a` is certainly an immutable number (its kind may be mixed)."""
        if isinstance(a, Const):
            return type(a.value) in (int, float, bool, complex)
        return self.kinds.get(a) in _SCALAR

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
        if len(ks) == 1:
            return ks.pop()
        if all(_is_float_array(k) for k in ks):
            return (FLOAT, None)
        return NUMBER if ks <= set(_SCALAR) else None

    def _stmt(self, s) -> str | None:
        if s.op in _ALWAYS_BOOL:
            return BOOL
        ks = [self._raw(a) for a in s.args]
        if _TOP in ks:
            return _TOP
        if s.op == "getattr" and isinstance(ks[0], tuple) and s.args[1] == Const("shape"):
            return SHAPE
        if s.op == "call":
            return _call_kind(s, ks)
        if s.op == "copy":
            return ks[0]
        if s.op == "getitem":
            return _element_kind(ks)
        if s.op in INPLACE and _is_float_array(ks[0]):
            return ks[0]        # `a += b` on a float array is that array (or raises)
        if any(isinstance(k, tuple) for k in ks):
            return _array_result(INPLACE.get(s.op, s.op), ks)
        if s.kwargs or any(k not in _SCALAR for k in ks):
            return None
        if NUMBER in ks:
            return _number_kind(INPLACE.get(s.op, s.op), ks)
        return result_kind(INPLACE.get(s.op, s.op), ks, s.args)


def _number_kind(op: str, ks: list) -> str | None:
    """The result kind of `op` when some operand is a mixed `NUMBER`."""
    if op in _COMPARE:
        return BOOL
    if op == "truediv":
        return FLOAT
    if op in _ARITH or op in ("pow", "neg", "pos"):
        return NUMBER
    return None


def _is_float_array(k: Any) -> bool:
    return isinstance(k, tuple) and k[0] == FLOAT


_ARRAY_ARITH = {"add", "sub", "mul", "truediv", "neg", "pos"}


def _array_result(op: str, ks: list) -> tuple | None:
    """Float-array arithmetic: `a + 1.0`, `a * b`, `-a` with a float array operand and
    scalars or float arrays otherwise is a float array (of the arrays' common ndim)."""
    if op not in _ARRAY_ARITH:
        return None
    arrays = [k for k in ks if isinstance(k, tuple)]
    if not all(_is_float_array(k) or k in _SCALAR for k in ks):
        return None
    dims = {k[1] for k in arrays}
    return (FLOAT, dims.pop() if len(dims) == 1 else None)


def _element_kind(ks: list) -> str | None:
    """`a[i, j]` of a known array with one int index per dimension."""
    arr, idx = ks[0], ks[1:]
    if arr == SHAPE:            # a.shape[k]
        return INT if idx == [INT] else None
    if not isinstance(arr, tuple) or len(idx) != arr[1]:
        return None
    return arr[0] if all(k == INT for k in idx) else None  # a[True] adds a dimension


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
    if any(f is g for g in _NEW_FLOAT_ARRAY) and len(rest) == 1:
        return (FLOAT, 1 if rest[0] == INT else None)
    if f is len or f is operator.index:
        return INT
    if f is bool:
        return BOOL
    if (f is int or f is float) and len(rest) == 1 and rest[0] in _SCALAR:
        return const_kind(f(0)) if rest[0] != NUMBER or f is int else None
    if f is abs and len(rest) == 1 and rest[0] in _SCALAR:
        return NUMBER if rest[0] == NUMBER else FLOAT if rest[0] == FLOAT else INT
    if any(f is g for g in _FLOAT_MATH):
        return FLOAT
    return None
