"""`np.sum(m, axis=k)` and `np.mean(m, axis=k)` of float64 arrays for a constant axis
(0, 1, -1, -2; also positional), compiled as plain-Python implementations (the
recipe of jit.library.elementwise), and their pullbacks.

Bit-exactness: numpy reduces in memory order.  When the reduced axis is the inner one
(the axis of smaller stride among those longer than 1), each output element is
`0.0 + pairwise sum` of its line; otherwise the lines are added one after the other
into the output, which starts at 0.0.  These implementations do the same, so the
results are numpy's bit for bit (checked against numpy on C, Fortran, strided and
transposed layouts); a mean over an empty axis is NaN, as numpy's (without its
RuntimeWarning).  `keepdims=`, other keywords, an axis computed at run time
and the methods with an axis (`m.sum(axis=0)`) stay refused.
"""
from __future__ import annotations

import numpy as np

from jit.library.broadcast import _fdiv
from jit.library.elementwise import (
    _d_mean1,
    _d_mean2,
    _d_sum1,
    _d_sum2,
    _mean1,
    _mean2,
    _pairwise,
    _sum1,
    _sum2,
    impl_call,
    is_float_array,
)
from jit.library.python_impls import has_array, mark, no_array
from jit.library.registry import REGISTRY
from jit.typing.infer import Context
from jit.types import BOOL, FLOAT64, INT64, ArrayT, Type, is_numeric


def _inner_axis(a):
    """numpy's innermost axis of a 2-D array (size-1 axes do not count)."""
    n, m = a.shape
    if m == 1:
        return 0
    if n == 1:
        return 1
    s0 = a.strides[0] if a.strides[0] >= 0 else -a.strides[0]
    s1 = a.strides[1] if a.strides[1] >= 0 else -a.strides[1]
    return 1 if s1 <= s0 else 0


def _sum_axis0(a):
    n, m = a.shape
    out = np.empty(m)
    if _inner_axis(a) == 0:
        for j in range(m):
            out[j] = 0.0 + _pairwise(a[:, j], 0, n)
        return out
    for j in range(m):
        out[j] = 0.0
    for i in range(n):
        for j in range(m):
            out[j] += a[i, j]
    return out


def _sum_axis1(a):
    n, m = a.shape
    out = np.empty(n)
    if _inner_axis(a) == 1:
        for i in range(n):
            out[i] = 0.0 + _pairwise(a[i], 0, m)
        return out
    for i in range(n):
        out[i] = 0.0
    for j in range(m):
        for i in range(n):
            out[i] += a[i, j]
    return out


def _mean_axis0(a):
    out = _sum_axis0(a)
    n = a.shape[0]
    for j in range(out.shape[0]):
        out[j] = _fdiv(out[j], n)
    return out


def _mean_axis1(a):
    out = _sum_axis1(a)
    m = a.shape[1]
    for i in range(out.shape[0]):
        out[i] = _fdiv(out[i], m)
    return out


def _mean_line(a):
    return _sum1(a) / a.shape[0]


def _d_sum_axis(dy, x, axis=None, keepdims=False):
    """adjoint.rules_numpy.d_np_sum of a 2-D x reduced over one axis: dy spread back."""
    n, m = x.shape
    g = np.empty((n, m))
    rows = axis == 0 or axis == -2
    for i in range(n):
        for j in range(m):
            g[i, j] = dy[j] if rows else dy[i]
    return g


def _d_mean_axis(dy, x, axis=None, keepdims=False):
    n, m = x.shape
    rows = axis == 0 or axis == -2
    k = n if rows else m
    g = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            g[i, j] = (dy[j] if rows else dy[i]) / k
    return g


mark(_inner_axis, _sum_axis0, _sum_axis1, _mean_axis0, _mean_axis1, _mean_line, _d_sum_axis,
     _d_mean_axis)

# (reduction, ndim, normalised axis) -> implementation
AXIS_IMPLS = {("sum", 2, 0): _sum_axis0, ("sum", 2, 1): _sum_axis1, ("sum", 1, 0): _sum1,
              ("mean", 2, 0): _mean_axis0, ("mean", 2, 1): _mean_axis1,
              ("mean", 1, 0): _mean_line}


_NO_AXIS = object()


def _axis_value(ctx: Context, s) -> object:
    """The axis of `np.sum(a, axis=k)` / `np.sum(a, k)`: _NO_AXIS when none is given,
    None for `axis=None`, the constant otherwise; raises TypingError for anything
    else (other keywords, an axis computed at run time)."""
    kw = dict(s.kwargs)
    if set(kw) - {"axis"} or len(s.args) + len(kw) > 3:
        ctx.fail(f"np.sum/np.mean with {', '.join(kw) or 'extra arguments'} is not compiled "
                 "(a constant axis only)")
    op = kw.get("axis", s.args[2] if len(s.args) == 3 else _NO_AXIS)
    if op is _NO_AXIS:
        return _NO_AXIS
    if not ctx.is_const(op):
        ctx.fail("np.sum/np.mean with an axis computed at run time is not compiled")
    return ctx.const(op)


def _reduction_rule(name: str, whole: dict):
    """np.sum / np.mean of a float64 array: whole, or over a constant axis."""
    def rule(ctx: Context, s, ts: list) -> Type:
        if not ts or not is_float_array(ts[0]) or ts[0].ndim not in whole:
            ctx.fail(f"np.{name} of {', '.join(map(str, ts))} is not compiled")
        axis, nd = _axis_value(ctx, s), ts[0].ndim
        if axis is _NO_AXIS or axis is None:
            return impl_call(ctx, s, whole[nd], [s.args[1]])
        if type(axis) is not int or not -nd <= axis < nd:
            ctx.fail(f"np.{name} over axis {axis!r} of a {ts[0]} is not compiled")
        return impl_call(ctx, s, AXIS_IMPLS[(name, nd, axis % nd)], [s.args[1]])
    return rule


def _sum_number(x):
    return x + 0          # np.sum of a bool is an int


def _mean_number(x):
    return x + 0.0


def _d_number(dy, x, axis=None, keepdims=False):
    return dy * 1.0


mark(_sum_number, _mean_number, _d_number)
_NUMBERS = (FLOAT64, INT64, BOOL)


def _t_number_reduction(impl, name: str):
    """np.sum / np.mean of a number (numpy takes it as a 0-d array): the number."""
    def rule(ctx: Context, s, ts: list) -> Type:
        if len(ts) != 1 or s.kwargs or ts[0] not in _NUMBERS:
            ctx.fail(f"np.{name} of {', '.join(map(str, ts))} is not compiled")
        return impl_call(ctx, s, impl, [s.args[1]])
    return rule


def _pick_d(impls: dict, axis_impl):
    def pick(argtypes):
        if len(argtypes) == 2 and argtypes[1] in _NUMBERS and argtypes[0] in _NUMBERS:
            return _d_number
        if len(argtypes) < 2 or not is_float_array(argtypes[1]):
            return None
        dy, x = argtypes[0], argtypes[1]
        if isinstance(dy, ArrayT) and dy.ndim == 1 and x.ndim == 2:
            return axis_impl
        return impls.get(x.ndim) if is_numeric(dy) else None
    return pick


def _declare() -> None:
    from adjoint import rules_numpy as R
    for f, name, whole, number in ((np.sum, "sum", {1: _sum1, 2: _sum2}, _sum_number),
                                   (np.mean, "mean", {1: _mean1, 2: _mean2}, _mean_number)):
        REGISTRY.declare(f, family="reductions", pattern="float64 array, 1-D or 2-D[, axis=k]",
                         matches=has_array, methods=(name,), types=_reduction_rule(name, whole))
        REGISTRY.add(REGISTRY.get(f), "number", no_array, _t_number_reduction(number, name))
    REGISTRY.declare_pullback(R.d_np_sum, "float64 array[, axis]",
                              _pick_d({1: _d_sum1, 2: _d_sum2}, _d_sum_axis))
    REGISTRY.declare_pullback(R.d_np_mean, "float64 array[, axis]",
                              _pick_d({1: _d_mean1, 2: _d_mean2}, _d_mean_axis))


_declare()
__all__ = ["AXIS_IMPLS"]
