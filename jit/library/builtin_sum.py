"""Python's builtin `sum` of an array of any rank and dtype, compiled as one
plain-Python implementation (the recipe of jit.library.python_impls), and its pullback.

CPython's `sum(a)` iterates the array's first axis and adds in order, starting from
the int 0: `((0 + a[0]) + a[1]) + ...`.  Over a 1-D array that is a number added
element by element (not numpy's pairwise `np.sum`), over an array of rank k the
sub-arrays of rank k-1 added one after the other.  The implementation is that very
expression, so numpy's dtype rules come from the JIT's own rules for `+`: the int 0
is weak, so a float32 array sums to float32, an int32 array to int32, and a boolean
array to int64 (as CPython with numpy gives).  No source is rewritten per dtype: one
function, typed per argument type like user code.

An empty array sums to the int 0, which the implementation does not return: the
call deoptimises to the interpreter (`deopt_if_empty`).  A `start` argument and
other sequences are declared by jit.library.sequence_builtins.
"""
from __future__ import annotations

import builtins

import numpy as np
from llvmlite import ir as L

from jit.library.python_impls import has_array, impl_call, mark
from jit.library.registry import REGISTRY
from jit.types import BOOL, FLOAT32, FLOAT64, INT64, NONE, ArrayT, Type
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


def _sum_first_axis(a):
    n = a.shape[0]
    deopt_if_empty(n)
    total = 0 + a[0]
    for i in range(1, n):
        total = total + a[i]
    return total


def _d_sum_first_axis(dy, a):
    """adjoint.rules_math.d_sum of an array: dy (a number, or an array of rank k-1)
    reaches every entry of the first axis; the cotangent has the array's dtype."""
    g = np.empty_like(a)
    for i in range(a.shape[0]):
        g[i] = dy
    return g


mark(_sum_first_axis, _d_sum_first_axis)


def is_one_array(ctx: Context, s, ts: list) -> bool:
    """Pattern: one array (of any rank and dtype), no `start`."""
    return len(ts) == 1 and not s.kwargs and has_array(ctx, s, ts)


def _t_sum(ctx: Context, s, ts: list) -> Type:
    return impl_call(ctx, s, _sum_first_axis, list(s.args[1:]))


def _pick_d_sum(argtypes):
    """The pullback of `sum(a)` for a float array `a` (dy of a's dtype, or a float64
    that the interpreter's rule would hand over), else None."""
    if len(argtypes) != 2 or not isinstance(argtypes[1], ArrayT):
        return None
    dy, a = argtypes
    if a.dtype not in (FLOAT64, FLOAT32):
        return None
    row = dy if a.ndim == 1 else dy.dtype if isinstance(dy, ArrayT) and dy.ndim == a.ndim - 1 \
        else None
    return _d_sum_first_axis if row in (FLOAT64, FLOAT32) else None


def _declare() -> None:
    from adjoint import rules_math as M
    REGISTRY.declare(deopt_if_empty, family="runtime checks", pattern="int",
                     types=_t_deopt_if_empty, lower=_cg_deopt_if_empty, gpu={"cuda": "inline"})
    REGISTRY.declare(builtins.sum, family="math and builtins",
                     pattern="one array, any rank and dtype", matches=is_one_array,
                     types=_t_sum, numpy_too=True)
    REGISTRY.declare_pullback(M.d_sum, "a float array, any rank", _pick_d_sum)


_declare()
