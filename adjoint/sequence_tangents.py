"""Forward mode of Python's builtins over sequences: `sorted` (with `key=` and
`reverse=`), `min` / `max` with `key=`, `enumerate` as a value and `math.prod`.  The
order a key gives is piecewise constant, so it has no tangent: the tangent of the result
is the tangents of the entries it picked, in the order they went
(`adjoint.rules_math` holds their pullbacks)."""
from __future__ import annotations

import builtins
import math

from .rules_math import sort_order
from .rules_tangent import _helper, _one_row, _set


@_helper
def j_sorted(xs, t, key=None, reverse=False):
    """The tangent of `sorted(xs)`: t's entries in the order xs's went (a list; the
    order `key` gives is piecewise constant, so it has no tangent)."""
    order = sort_order(xs, reverse) if key is None else sort_order(xs, reverse, key)
    return [t[i] for i in order]

@_helper
def j_enumerate(xs, t, start=0):
    """The tangent of `enumerate(xs)` as a value: pairs (0, t_i) (a count has none)."""
    return zip([0] * len(t), t)


@_helper
def j_prod(xs, t, start=1):
    """The tangent of `math.prod(xs, start=s)` (s held constant): each entry's tangent
    times the product of the others."""
    vals = list(xs)
    total = 0.0 * start
    for k in range(len(vals)):
        if t[k] is None:
            continue
        term = t[k] * start
        for j in range(len(vals)):
            if j != k:
                term = term * vals[j]
        total = total + term
    return total

_set([builtins.sorted], lambda em, s, ts: None if ts[0] is None else em.op(
    "call", j_sorted, em.operands(s)[0], ts[0], **s.kwargs))
_set([builtins.enumerate], lambda em, s, ts: None if ts[0] is None else em.op(
    "call", j_enumerate, em.operands(s)[0], ts[0], **s.kwargs))
_set([math.prod], lambda em, s, ts: None if ts[0] is None else em.op(
    "call", j_prod, em.operands(s)[0], ts[0], **s.kwargs))

@_helper
def j_keyed_extreme(y, xs, t):
    """The tangent of `max(xs, key=k)` / `min(xs, key=k)`: the tangent of the entry it
    returned (the first equal to the result; the order a key gives has no tangent)."""
    for i in range(len(xs)):
        if xs[i] == y:
            return t[i]
    return t[0]


def _keyed_extreme_jvp(by_entries):
    """min/max: with `key=` alone, the entry's tangent (`j_keyed_extreme`); else as
    `scalar_result` makes it (`by_entries`)."""
    def jvp(em, s, ts):
        args = em.operands(s)
        if set(s.kwargs) != {"key"} or len(args) != 1:
            return by_entries(em, s, ts)
        if ts[0] is None:
            return None
        return em.op("call", j_keyed_extreme, s.var, args[0], ts[0])
    return jvp


_set([builtins.max, builtins.min], _keyed_extreme_jvp(_one_row(data_only=False)))
