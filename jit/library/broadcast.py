"""Numpy's rules for two arrays of one rank, as natively compiled helpers of the
elementwise templates (`jit.library.elementwise`, `jit.library.array_calls`): the length two axes
broadcast to, and float division that gives inf and nan instead of raising."""
from __future__ import annotations

import math

from llvmlite import ir as L

from jit.codegen.function import I64
from jit.library.python_impls import mark
from jit.library.registry import REGISTRY
from jit.types import INT64, NONE

_NAN = float("nan")


def broadcast_length(n: int, m: int) -> int:
    """The length two axes broadcast to (compiled natively; numpy's ValueError when
    neither is 1 and they differ)."""
    if n == m or m == 1:
        return n
    if n == 1:
        return m
    raise ValueError(f"operands could not be broadcast together (an axis of length {n} "
                     f"against one of length {m})")


def _cg_broadcast_length(fc, s, ts):
    b = fc.b
    n, m = fc.get(s.args[1], INT64), fc.get(s.args[2], INT64)
    one = L.Constant(I64, 1)
    equal_or_one = b.or_(b.icmp_signed("==", n, m), b.icmp_signed("==", m, one))
    fc.raise_if(b.and_(b.not_(equal_or_one), b.icmp_signed("!=", n, one)), ValueError,
                "operands could not be broadcast together (an axis of length {0} against one "
                "of length {1})", (n, m))
    return b.select(equal_or_one, n, m)


def same_length(n: int, m: int) -> None:
    """Raise numpy's ValueError when two shapes do not match (compiled natively)."""
    if n != m:
        raise ValueError(f"operands could not be broadcast together (an axis of length {n} "
                         f"against one of length {m})")


def _cg_same_length(fc, s, ts):
    n, m = fc.get(s.args[1], INT64), fc.get(s.args[2], INT64)
    fc.raise_if(fc.b.icmp_signed("!=", n, m), ValueError,
                "operands could not be broadcast together (an axis of length {0} against one "
                "of length {1})", (n, m))
    return L.Constant(L.IntType(8), 0)


def _fdiv(a, b):
    """numpy's a / b on floats: IEEE division by zero instead of ZeroDivisionError."""
    if b != 0.0:
        return a / b
    if a != a or a == 0.0:
        return _NAN
    neg = (a < 0.0) != (math.copysign(1.0, b) < 0.0)
    return -math.inf if neg else math.inf


mark(_fdiv)
REGISTRY.declare(broadcast_length, family="elementwise operators on arrays",
                 pattern="int, int", types=lambda ctx, s, ts: INT64,
                 lower=_cg_broadcast_length, gpu={"cuda": "inline"})
REGISTRY.declare(same_length, family="elementwise operators on arrays", pattern="int, int",
                 types=lambda ctx, s, ts: NONE, lower=_cg_same_length, gpu={"cuda": "inline"})
