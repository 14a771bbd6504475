"""Python's builtin `sum` of a float64 array of 1 or 2 dimensions, compiled as
plain-Python implementations (the recipe of jit.library.elementwise), and its pullback.

CPython's `sum(a)` iterates the array and adds in order, starting from the int 0:
`((0 + a[0]) + a[1]) + ...`.  Over a 1-D array that is a number added element by
element (not numpy's pairwise `np.sum`), over a 2-D array the rows added one after
the other into a row.  The implementations add in that order from 0.0 (0 + x and
0.0 + x are x bit for bit, -0.0 included), so the result is CPython's.  An empty
array sums to the int 0, which these do not return: the call deoptimises to the
interpreter (`deopt_if_empty`).  A `start` argument and other sequences stay refused.
"""
from __future__ import annotations

import builtins

import numpy as np
from llvmlite import ir as L

from jit.library.elementwise import _d_sum1, array_rule, one_array
from jit.library.python_impls import has_array, mark
from jit.library.registry import REGISTRY
from jit.types import BOOL, FLOAT64, INT64, NONE, ArrayT, Type
from jit.typing.infer import Context

EMPTY = "sum() of an empty array is the int 0, which compiled code does not return"


def deopt_if_empty(n: int) -> None:
    """Leave compiled code for the interpreter when the array summed is empty."""


def _t_deopt_if_empty(ctx: Context, s, ts: list) -> Type:
    if len(ts) != 1 or ts[0] not in (INT64, BOOL):
        ctx.fail(f"bad operand {ts} of a runtime check")
    return NONE


def _cg_deopt_if_empty(fc, s, ts):
    n = fc.get(s.args[1], INT64)
    fc.deopt_if(fc.b.icmp_signed("==", n, L.Constant(L.IntType(64), 0)), EMPTY, ValueError)
    return L.Constant(L.IntType(8), 0)


def _sum_items(a):
    n = a.shape[0]
    deopt_if_empty(n)
    total = 0.0
    for i in range(n):
        total = total + a[i]
    return total


def _sum_rows(a):
    n, m = a.shape
    deopt_if_empty(n)
    out = np.zeros(m)
    for i in range(n):
        for j in range(m):
            out[j] = out[j] + a[i, j]
    return out


def _d_sum_rows(dy, a):
    """adjoint.rules_math.d_sum of a 2-D array: the row dy reaches every row."""
    n, m = a.shape
    g = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            g[i, j] = dy[j]
    return g


def _pick_d_sum(argtypes):
    if len(argtypes) != 2 or not isinstance(argtypes[1], ArrayT):
        return None
    dy, a = argtypes
    if a.ndim == 1 and dy == FLOAT64:
        return _d_sum1        # (np.sum's: dy reaches every element)
    if a.ndim == 2 and isinstance(dy, ArrayT) and dy.ndim == 1:
        return _d_sum_rows
    return None


mark(_sum_items, _sum_rows, _d_sum_rows)


def _declare() -> None:
    from adjoint import rules_math as M
    REGISTRY.declare(deopt_if_empty, family="runtime checks", pattern="int",
                     types=_t_deopt_if_empty, lower=_cg_deopt_if_empty, gpu={"cuda": "inline"})
    REGISTRY.declare(builtins.sum, family="math and builtins",
                     pattern="float64 array, 1-D or 2-D", matches=has_array,
                     types=array_rule(one_array({1: _sum_items, 2: _sum_rows}), "sum"))
    REGISTRY.declare_pullback(M.d_sum, "float64 array, 1-D or 2-D", _pick_d_sum)


_declare()
