"""`np.sum`, `np.mean`, `np.max` / `np.amax` and `np.min` / `np.amin` (and the methods
`a.sum()`, `a.mean()`, `a.max()`, `a.min()`) of float64 arrays, whole or over a constant
axis (0, 1, -1, -2; also positional), with a constant `keepdims`, compiled as
plain-Python implementations (the recipe of jit.library.elementwise), and their
pullbacks.

Bit-exactness: numpy reduces in memory order.  When the reduced axis is the inner one
(the axis of smaller stride among those longer than 1), each output element is
`0.0 + pairwise sum` of its line; otherwise the lines are added one after the other
into the output, which starts at 0.0.  These implementations do the same, so the
results are numpy's bit for bit (checked against numpy on C, Fortran, strided and
transposed layouts); a mean over an empty axis is NaN, as numpy's (without its
RuntimeWarning).  Other keywords and an axis or keepdims computed at run time stay
refused.
"""
from __future__ import annotations

import numpy as np

from jit.library.array_calls import (_d_extreme1, _d_extreme2, _max1, _max2, _min1, _min2,
                                    check_max_size, check_min_size)
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
from jit.library.python_impls import NAMESPACE as _NS, has_array, make, mark, no_array
from jit.library.numpy_calls import REDUCE, add_host, reduction
from jit.library.registry import REGISTRY
from jit.typing.infer import Context
from ssair import Const
from jit.types import BOOL, FLOAT32, FLOAT64, INT64, ArrayT, Type, is_numeric


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


def _extreme_axis(a, axis, sign):
    """np.max (sign 1.0) or np.min (sign -1.0) of a 2-D array over `axis` (NaN
    propagates; numpy's ValueError when the reduced axis is empty)."""
    n, m = a.shape
    rows = axis == 0 or axis == -2
    lines, length = (m, n) if rows else (n, m)
    if sign > 0:
        check_max_size(length)
    else:
        check_min_size(length)
    out = np.empty(lines)
    for k in range(lines):
        best = a[0, k] if rows else a[k, 0]
        for t in range(length):
            v = a[t, k] if rows else a[k, t]
            if v != v:
                best = v
                break
            if sign * v >= sign * best:      # the last of equal values, as numpy's loop
                best = v
        out[k] = best
    return out


def _max_axis(a, axis):
    return _extreme_axis(a, axis, 1.0)


def _min_axis(a, axis):
    return _extreme_axis(a, axis, -1.0)


def _max_line(a, axis):
    return _max1(a)


def _min_line(a, axis):
    return _min1(a)


def _kept(r, x, axis):
    """A reduction's 1-D result `r` over `axis` of 2-D `x`, with the axis kept."""
    n = r.shape[0]
    rows = axis == 0 or axis == -2
    out = np.empty((1, n)) if rows else np.empty((n, 1))
    for k in range(n):
        if rows:
            out[0, k] = r[k]
        else:
            out[k, 0] = r[k]
    return out


def _kept_line(r, x, axis):
    """A 1-D array reduced with its axis kept: shape (1,)."""
    out = np.empty(1)
    out[0] = r
    return out


def _kept_cell(r, x, axis):
    """A whole 2-D array reduced with keepdims: shape (1, 1)."""
    out = np.empty((1, 1))
    out[0, 0] = r
    return out


def _spread(dy, x):
    """A cotangent with kept axes (shape (1, m), (n, 1) or (1, 1)) spread over x."""
    n, m = x.shape
    si, sj = (0 if dy.shape[0] == 1 else 1), (0 if dy.shape[1] == 1 else 1)
    g = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            g[i, j] = dy[i * si, j * sj]
    return g


def _d_sum_kept(dy, x, axis=None, keepdims=False):
    """d_np_sum with keepdims=True of a 2-D x."""
    return _spread(dy, x)


def _d_mean_kept(dy, x, axis=None, keepdims=False):
    n, m = x.shape
    count = (n if dy.shape[0] == 1 else 1) * (m if dy.shape[1] == 1 else 1)
    g = _spread(dy, x)
    for i in range(n):
        for j in range(m):
            g[i, j] = _fdiv(g[i, j], count)
    return g


def _d_line_kept(dy, x, axis=None, keepdims=False):
    """d_np_sum with keepdims=True of a 1-D x: dy has shape (1,)."""
    n = x.shape[0]
    g = np.empty(n)
    for i in range(n):
        g[i] = dy[0]
    return g


def _d_line_mean_kept(dy, x, axis=None, keepdims=False):
    g = _d_line_kept(dy, x)
    n = x.shape[0]
    for i in range(n):
        g[i] = _fdiv(g[i], n)
    return g


def _d_extreme_axis(dy, y, x, axis=None, keepdims=False):
    """d_np_max / d_np_min over an axis of 2-D x: each line's dy shared by the
    positions equal to its extreme (NaN when none is: a NaN extreme)."""
    n, m = x.shape
    rows = axis == 0 or axis == -2
    lines, length = (m, n) if rows else (n, m)
    g = np.zeros((n, m))
    for k in range(lines):
        count = 0
        for t in range(length):
            v = x[t, k] if rows else x[k, t]
            if v == y[k]:
                count += 1
        for t in range(length):
            v = x[t, k] if rows else x[k, t]
            share = (dy[k] / count if v == y[k] else 0.0) if count > 0 else _NAN
            if rows:
                g[t, k] = share
            else:
                g[k, t] = share
    return g


def _flat_kept(a):
    """A (1, m) or (n, 1) array as a 1-D copy."""
    n, m = a.shape
    out = np.empty(n * m)
    for i in range(n):
        for j in range(m):
            out[i * m + j] = a[i, j]
    return out


def _d_extreme_axis_kept(dy, y, x, axis=None, keepdims=False):
    if axis is None:          # the whole array with keepdims: dy and y are (1, 1)
        return _d_extreme2(dy[0, 0], y[0, 0], x)
    return _d_extreme_axis(_flat_kept(dy), _flat_kept(y), x, axis)


def _d_extreme_line_kept(dy, y, x, axis=None, keepdims=False):
    return _d_extreme1(dy[0], y[0], x)


mark(_inner_axis, _sum_axis0, _sum_axis1, _mean_axis0, _mean_axis1, _mean_line, _d_sum_axis,
     _d_mean_axis, _extreme_axis, _max_axis, _min_axis, _max_line, _min_line, _kept,
     _kept_line, _kept_cell, _spread, _d_sum_kept, _d_mean_kept, _d_line_kept,
     _d_line_mean_kept, _d_extreme_axis, _flat_kept, _d_extreme_axis_kept,
     _d_extreme_line_kept)

# (reduction, ndim, normalised axis) -> implementation
AXIS_IMPLS = {("sum", 2, 0): _sum_axis0, ("sum", 2, 1): _sum_axis1, ("sum", 1, 0): _sum1,
              ("mean", 2, 0): _mean_axis0, ("mean", 2, 1): _mean_axis1,
              ("mean", 1, 0): _mean_line}


_NO_AXIS = object()
_NAN = float("nan")


def _axis_value(ctx: Context, s) -> tuple:
    """(axis, keepdims) of `np.sum(a, axis=k, keepdims=b)` / `np.sum(a, k)`: the axis is
    _NO_AXIS when none is given, None for `axis=None`, the constant otherwise; raises
    TypingError for anything else (other keywords, values computed at run time)."""
    kw = dict(s.kwargs)
    name = getattr(s.args[0], "value", None)
    name = f"np.{getattr(name, '__name__', '?')}"
    if set(kw) - {"axis", "keepdims"} or len(s.args) + len(kw) > 4 or len(s.args) > 3:
        ctx.fail(f"{name} with {', '.join(kw) or 'extra arguments'} is not compiled "
                 "(a constant axis and keepdims only)")
    op = kw.get("axis", s.args[2] if len(s.args) == 3 else _NO_AXIS)
    keep = kw.get("keepdims", False)
    for v, what in ((op, "an axis"), (keep, "keepdims")):
        if v is not _NO_AXIS and v is not False and not ctx.is_const(v):
            ctx.fail(f"{name} with {what} computed at run time is not compiled")
    keep = bool(ctx.const(keep)) if keep is not False else False
    return (op if op is _NO_AXIS else ctx.const(op)), keep


# (reduction, ndim) -> the reduction over an axis given as an operand
_LINES = {("sum", 2): "_sum_axis0(a) if axis == 0 or axis == -2 else _sum_axis1(a)",
          ("mean", 2): "_mean_axis0(a) if axis == 0 or axis == -2 else _mean_axis1(a)",
          ("max", 2): "_max_axis(a, axis)", ("min", 2): "_min_axis(a, axis)",
          ("sum", 1): "_sum1(a)", ("mean", 1): "_mean_line(a)", ("max", 1): "_max1(a)",
          ("min", 1): "_min1(a)"}
_WHOLE = {("sum", 1): "_sum1", ("sum", 2): "_sum2", ("mean", 1): "_mean_line",
          ("mean", 2): "_mean2", ("max", 1): "_max1", ("max", 2): "_max2",
          ("min", 1): "_min1", ("min", 2): "_min2"}
_NS.update(_sum_axis0=_sum_axis0, _sum_axis1=_sum_axis1, _mean_axis0=_mean_axis0,
           _mean_axis1=_mean_axis1, _max_axis=_max_axis, _min_axis=_min_axis, _sum1=_sum1,
           _sum2=_sum2, _mean_line=_mean_line, _mean2=_mean2, _max1=_max1, _max2=_max2,
           _min1=_min1, _min2=_min2, _kept=_kept, _kept_line=_kept_line, _kept_cell=_kept_cell)


def _kept_impl(name: str, nd: int, over_axis: bool):
    """np.<name>(a, axis=k, keepdims=True) (`over_axis`) or np.<name>(a, keepdims=True)
    of an nd-D array: the reduction, then its result with the axes kept."""
    fn = f"_{name}_kept{nd}{'_axis' if over_axis else ''}"
    if fn not in _NS:
        reduce = _LINES[(name, nd)] if over_axis else f"{_WHOLE[(name, nd)]}(a)"
        keep = ("_kept" if nd == 2 else "_kept_line") if over_axis else \
            ("_kept_cell" if nd == 2 else "_kept_line")
        make(f"def {fn}(a, axis):\n    return {keep}({reduce}, a, axis)\n", fn)
    return _NS[fn]


def _reduction_rule(name: str, whole: dict):
    """np.sum / np.mean / np.max / np.min of a float64 array: whole, or over a
    constant axis, with or without keepdims."""
    def rule(ctx: Context, s, ts: list) -> Type:
        if not ts or not is_float_array(ts[0]) or ts[0].ndim not in whole:
            ctx.fail(f"np.{name} of {', '.join(map(str, ts))} is not compiled")
        (axis, keep), nd = _axis_value(ctx, s), ts[0].ndim
        x = s.args[1]
        whole_array = axis is _NO_AXIS or axis is None
        if not whole_array and (type(axis) is not int or not -nd <= axis < nd):
            ctx.fail(f"np.{name} over axis {axis!r} of a {ts[0]} is not compiled")
        if keep:
            return impl_call(ctx, s, _kept_impl(name, nd, not whole_array),
                             [x, Const(None if whole_array else axis)])
        if whole_array:
            return impl_call(ctx, s, whole[nd], [x])
        if name in ("max", "min"):
            impl = {("max", 2): _max_axis, ("min", 2): _min_axis, ("max", 1): _max_line,
                    ("min", 1): _min_line}[(name, nd)]
            return impl_call(ctx, s, impl, [x, Const(axis)])
        return impl_call(ctx, s, AXIS_IMPLS[(name, nd, axis % nd)], [x])
    return rule


def _sum_number(x):
    return x + 0          # np.sum of a bool is an int


def _mean_number(x):
    return x + 0.0


def _d_number(dy, x, axis=None, keepdims=False):
    return dy * 1.0


def _same_number(x):
    return x             # np.max / np.min of a number (numpy takes it as a 0-d array)


def _d_extreme_number(dy, y, x, axis=None, keepdims=False):
    return dy * 1.0 if x == y else _NAN      # a NaN is its own extreme: nan, as numpy's


mark(_sum_number, _mean_number, _d_number, _same_number, _d_extreme_number)
_NUMBERS = (FLOAT64, FLOAT32, INT64, BOOL)   # (np.sum of an int32 is an int64: not here)
PATTERN = "float64 array, 1-D or 2-D[, axis=k][, keepdims=b]"


def _t_number_reduction(impl, name: str):
    """np.sum / np.mean of a number (numpy takes it as a 0-d array): the number."""
    def rule(ctx: Context, s, ts: list) -> Type:
        if len(ts) != 1 or s.kwargs or ts[0] not in _NUMBERS:
            ctx.fail(f"np.{name} of {', '.join(map(str, ts))} is not compiled")
        return impl_call(ctx, s, impl, [s.args[1]])
    return rule


def _pick_d(impls: dict, axis_impl, kept: dict):
    """The JIT version of d_np_sum / d_np_mean by the types of (dy, x): a number dy
    (whole array), a 1-D dy for a 2-D x (over an axis), a dy of x's rank (keepdims)."""
    def pick(argtypes):
        if len(argtypes) == 2 and argtypes[1] in _NUMBERS and argtypes[0] in _NUMBERS:
            return _d_number
        if len(argtypes) < 2 or not is_float_array(argtypes[1]):
            return None
        dy, x = argtypes[0], argtypes[1]
        if isinstance(dy, ArrayT) and dy.ndim == 1 and x.ndim == 2:
            return axis_impl
        if isinstance(dy, ArrayT) and dy.ndim == x.ndim:
            return kept[x.ndim]
        return impls.get(x.ndim) if is_numeric(dy) else None
    return pick


def _pick_d_extreme(argtypes):
    """The JIT version of d_np_max / d_np_min by the types of (dy, y, x)."""
    if len(argtypes) == 3 and all(t in _NUMBERS for t in argtypes):
        return _d_extreme_number
    if len(argtypes) < 3 or not is_float_array(argtypes[2]):
        return None
    dy, x = argtypes[0], argtypes[2]
    if is_numeric(dy):
        return {1: _d_extreme1, 2: _d_extreme2}[x.ndim]
    if isinstance(dy, ArrayT) and dy.ndim == 1:
        return _d_extreme_axis if x.ndim == 2 else _d_extreme_line_kept
    if isinstance(dy, ArrayT) and dy.ndim == 2 and x.ndim == 2:
        return _d_extreme_axis_kept
    return None


def _declare() -> None:
    from adjoint import rules_numpy as R
    for f, name, whole, number in ((np.sum, "sum", {1: _sum1, 2: _sum2}, _sum_number),
                                   (np.mean, "mean", {1: _mean1, 2: _mean2}, _mean_number)):
        REGISTRY.declare(f, family="reductions", pattern=PATTERN,
                         matches=has_array, methods=(f"{name}(axis=None, keepdims=False)",),
                         types=_reduction_rule(name, whole))
        REGISTRY.add(REGISTRY.get(f), "number", no_array, _t_number_reduction(number, name))
        add_host(f, REDUCE + ", *, where=True", reduction(FLOAT64 if f is np.mean else None))
    for f, methods, impls in ((np.max, ("max(axis=None, keepdims=False)",),
                               {1: _max1, 2: _max2}),
                              (np.min, ("min(axis=None, keepdims=False)",),
                               {1: _min1, 2: _min2}),
                              (np.amax, (), {1: _max1, 2: _max2}),
                              (np.amin, (), {1: _min1, 2: _min2})):
        name = "max" if f in (np.max, np.amax) else "min"
        REGISTRY.declare(f, family="reductions", pattern=PATTERN, matches=has_array,
                         methods=methods, types=_reduction_rule(name, impls))
        REGISTRY.add(REGISTRY.get(f), "number", no_array, _t_number_reduction(_same_number, name))
        add_host(f, "a, axis=None, out=None, keepdims=False, initial=None, where=True",
                 reduction(None))
    REGISTRY.declare_pullback(R.d_np_sum, "float64 array[, axis][, keepdims]",
                              _pick_d({1: _d_sum1, 2: _d_sum2}, _d_sum_axis,
                                      {1: _d_line_kept, 2: _d_sum_kept}))
    REGISTRY.declare_pullback(R.d_np_mean, "float64 array[, axis][, keepdims]",
                              _pick_d({1: _d_mean1, 2: _d_mean2}, _d_mean_axis,
                                      {1: _d_line_mean_kept, 2: _d_mean_kept}))
    REGISTRY.declare_pullback(R.d_np_max, "float64 array[, axis][, keepdims]",
                              _pick_d_extreme)


_declare()
__all__ = ["AXIS_IMPLS"]
