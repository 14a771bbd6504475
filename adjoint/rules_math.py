"""Derivative rules for Python's arithmetic operators, the `math` module and
builtins (the `math` functions that numpy also has are in `rules_elementary`).  Each pullback is plain Python taking `dy` (never None here; `Pullback`
handles the zero) and the primal operands, returning one cotangent per operand.
The rules also accept numpy arrays (through `unbcast` and numpy-aware helpers), so
`a * b` on arrays uses the same rule as on floats.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from lowering.runtime import (check_bound, check_star_length, check_super, column, keys_of,
                              loop_items, read_entry, read_global, shortest, write_global)

from .rule_table import (no_operands, nondiff, other_operand, partial_rule, pullback_rule,
                         scalar_rule)
from .pytrees import attr_cotangent
from .tape import accum_index, unbcast


def _floor(x):
    return np.floor(x) if isinstance(x, np.ndarray) else math.floor(x)


# -- operators -------------------------------------------------------------------------
@pullback_rule("add")
def d_add(dy, x, y):
    if isinstance(x, tuple) and isinstance(y, tuple):
        return tuple(dy[:len(x)]), tuple(dy[len(x):])
    return unbcast(dy, x), unbcast(dy, y)


@pullback_rule("sub")
def d_sub(dy, x, y):
    return unbcast(dy, x), unbcast(-dy, y)


# Scalar variants (every operand a proven number): an operand the variant does not
# read (see its `needs`) arrives as the placeholder 0.0 and its cotangent, if
# computed, is discarded.
@scalar_rule("add", no_operands)
def d_add_num(dy, x, y):
    return dy, dy


@scalar_rule("sub", no_operands)
def d_sub_num(dy, x, y):
    return dy, -dy


@pullback_rule("mul", needs=lambda act: set(range(2)))
def d_mul(dy, x, y):
    if isinstance(x, (tuple, list)) or isinstance(y, (tuple, list)):
        return _d_repeat(dy, x, y)
    return unbcast(dy * y, x), unbcast(dy * x, y)


@scalar_rule("mul", other_operand)
def d_mul_num(dy, x, y):
    return dy * y, dy * x


# Variants for one operand without a cotangent (a constant: `1.0 + u`, `2.0 * u`), of
# any types: the constant's cotangent (a sum of dy over its broadcast) is not computed.
@partial_rule("add", lambda act: {0, 1}, lambda act: not act[0])
def d_add_right(dy, x, y):
    if isinstance(x, tuple) and isinstance(y, tuple):
        return None, tuple(dy[len(x):])
    return None, unbcast(dy, y)


@partial_rule("add", lambda act: {0, 1}, lambda act: not act[1])
def d_add_left(dy, x, y):
    if isinstance(x, tuple) and isinstance(y, tuple):
        return tuple(dy[:len(x)]), None
    return unbcast(dy, x), None


@partial_rule("sub", lambda act: {0, 1}, lambda act: not act[0])
def d_sub_right(dy, x, y):
    return None, unbcast(-dy, y)


@partial_rule("sub", lambda act: {0, 1}, lambda act: not act[1])
def d_sub_left(dy, x, y):
    return unbcast(dy, x), None


@partial_rule("mul", lambda act: {0, 1}, lambda act: not act[0])
def d_mul_right(dy, x, y):
    if isinstance(x, (tuple, list)) or isinstance(y, (tuple, list)):
        return _d_repeat(dy, x, y)
    return None, unbcast(dy * x, y)


@partial_rule("mul", lambda act: {0, 1}, lambda act: not act[1])
def d_mul_left(dy, x, y):
    if isinstance(x, (tuple, list)) or isinstance(y, (tuple, list)):
        return _d_repeat(dy, x, y)
    return unbcast(dy * y, x), None


def _d_repeat(dy, x, y):
    """`t * n` (a tuple or a list): each entry of t receives the sum over its n copies."""
    t, first = (x, True) if isinstance(x, (tuple, list)) else (y, False)
    g = [None] * len(t)
    for k in range(len(dy)):
        i = k % len(t)
        if dy[k] is not None:
            g[i] = dy[k] if g[i] is None else g[i] + dy[k]
    g = g if isinstance(t, list) else tuple(g)
    return (g, None) if first else (None, g)


@pullback_rule("truediv")
def d_truediv(dy, x, y):
    gx = dy / y
    return unbcast(gx, x), unbcast(-gx * x / y, y)


@scalar_rule("truediv", lambda act: ({1} if any(act) else set()) | ({0} if act[1] else set()))
def d_truediv_num(dy, x, y):
    gx = dy / y
    return gx, -gx * x / y


@pullback_rule("mod")
def d_mod(dy, x, y):
    return unbcast(dy, x), unbcast(-dy * _floor(x / y), y)


@pullback_rule("neg", needs=no_operands)
def d_neg(dy, x):
    return (-dy,)


@pullback_rule(("pow", math.pow, builtins.pow))
def d_pow(dy, x, y):
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return _d_pow_array(dy, x, y)
    gx = 0.0 if y == 0 else dy * y * x ** (y - 1)
    if x > 0:
        gy = dy * x ** y * math.log(x)
    else:
        gy = 0.0
    return gx, gy


@scalar_rule("pow", lambda act: {0, 1} if act[0] else set(), when=lambda act: not act[1])
def d_pow_base(dy, x, y):
    """`x ** y` with a constant (or integer) exponent: no log(x) for dy/dy."""
    return (0.0 if y == 0 else dy * y * x ** (y - 1)), 0.0


def _d_pow_array(dy, x, y):
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    gx = np.where(y == 0, 0.0, dy * y * x ** np.where(y == 0, 1.0, y - 1))
    safe = np.where(x > 0, x, 1.0)
    gy = np.where(x > 0, dy * x ** y * np.log(safe), 0.0)
    return unbcast(gx, x), unbcast(gy, y)


@pullback_rule("matmul")
def d_matmul(dy, x, y):
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim > 2 or y.ndim > 2:
        return _d_matmul_batched(np.asarray(dy), x, y)
    if x.ndim == 1 and y.ndim == 1:
        return dy * y, dy * x
    if x.ndim == 1:
        return y @ dy, np.outer(x, dy)
    if y.ndim == 1:
        return np.outer(dy, y), x.T @ dy
    return dy @ y.T, x.T @ dy


def _d_matmul_batched(dy, x, y):
    """matmul with a stack of matrices: 1-D operands become a row and a column, the
    products run per batch, and broadcast batch axes are summed back."""
    xm = x[None, :] if x.ndim == 1 else x
    ym = y[:, None] if y.ndim == 1 else y
    g = dy
    if x.ndim == 1:
        g = np.expand_dims(g, -2)
    if y.ndim == 1:
        g = np.expand_dims(g, -1)
    gx = unbcast(g @ np.swapaxes(ym, -1, -2), xm)
    gy = unbcast(np.swapaxes(xm, -1, -2) @ g, ym)
    return gx.reshape(x.shape), gy.reshape(y.shape)


# -- math module (the functions numpy also has: `rules_elementary`) ---------------------
@pullback_rule(math.hypot, uses_result=True)
def d_hypot(dy, y, *xs):
    if y == 0:
        return tuple(0.0 for _ in xs)
    return tuple(dy * x / y for x in xs)


@pullback_rule(math.erf)
def d_erf(dy, x):
    return dy * 2.0 / math.sqrt(math.pi) * math.exp(-x * x)


@pullback_rule(math.erfc)
def d_erfc(dy, x):
    return -dy * 2.0 / math.sqrt(math.pi) * math.exp(-x * x)


def digamma(x: float) -> float:
    """psi(x) = d/dx log|Gamma(x)|, to about 1e-15 relative: the recurrence
    psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series; reflection
    psi(x) = psi(1 - x) - pi / tan(pi x) below zero.  A pole (0, -1, ...) gives nan."""
    if x <= 0.0 and x == math.floor(x):
        return math.nan
    if x < 0.0:
        return digamma(1.0 - x) - math.pi / math.tan(math.pi * x)
    acc = 0.0
    while x < 10.0:
        acc -= 1.0 / x
        x += 1.0
    inv = 1.0 / (x * x)
    series = inv * (1.0 / 12 - inv * (1.0 / 120 - inv * (1.0 / 252 - inv * (
        1.0 / 240 - inv * (1.0 / 132 - inv * (691.0 / 32760 - inv / 12))))))
    return acc + math.log(x) - 0.5 / x - series


@pullback_rule(math.lgamma)
def d_lgamma(dy, x):
    return dy * digamma(x)


@pullback_rule(math.gamma, uses_result=True)
def d_gamma(dy, y, x):
    return dy * y * digamma(x)


@pullback_rule(builtins.float)
def d_float(dy, x=0.0):
    return (dy,)


@pullback_rule(column, needs=lambda active: {0, 1})
def d_column(dy, seqs, i):
    """Item i of `zip(*seqs)`: entry j of dy lands at index i of seqs[j]."""
    if dy is None:
        return None, None
    return tuple(accum_index(None, g, s, i) for g, s in zip(dy, seqs)), None


nondiff(shortest)


@pullback_rule(loop_items, needs=lambda active: {0})
def d_loop_items(dy, v):
    """The sequence a loop reads: its cotangent is the iterated value's (a dict view's
    entries: the view's), but a dict's keys and a set's items carry none.  (Compiled
    code has no such call left: `jit.library.dict_methods`.)"""
    return (None,) if keys_of(v) else (dy,)


@pullback_rule(check_bound, needs=no_operands)
def d_check_bound(dy, value, name):
    """A local read after a loop that may not have assigned it: the value itself."""
    return dy, None


def _extreme_pullback(pick):
    def pb(dy, y, *xs, **kw):
        # the result is an entry: dy goes to the first entry equal to it, which is the
        # one a `key=` picks too (the order a key gives has no derivative)
        if set(kw) - {"key"}:
            raise TypeError("adjoint: min/max with default= is not differentiable")
        if len(xs) == 1:
            seq = xs[0]
            k = _first_index(seq, y)
            grads = [None] * len(seq)
            grads[k] = dy
            return (tuple(grads) if not isinstance(seq, np.ndarray)
                    else _one_hot(seq, k, dy),)
        k = _first_index(xs, y)
        return tuple(dy if i == k else None for i in range(len(xs)))
    pb.__name__ = pb.__qualname__ = f"d_{pick}"
    return pb


def _first_index(seq, y) -> int:
    for i, v in enumerate(seq):
        if v is y or v == y:
            return i
    return 0


def _one_hot(a, k, dy):
    g = np.zeros(a.shape, dtype=float)
    g[k] = dy
    return g


d_min = pullback_rule(builtins.min, uses_result=True,
                      nondiff_keywords=("key",))(_extreme_pullback("min"))
d_max = pullback_rule(builtins.max, uses_result=True,
                      nondiff_keywords=("key",))(_extreme_pullback("max"))


@pullback_rule(builtins.sum)
def d_sum(dy, xs, start=0):
    if isinstance(xs, np.ndarray):
        return np.full(xs.shape, dy, dtype=float), dy
    return tuple(unbcast(dy, x) for x in xs), unbcast(dy, start)


def sort_order(xs, reverse=False, key=None) -> list:
    """The positions of xs in the order `sorted(xs, key=key, reverse=reverse)` puts
    them (CPython's stable sort: sorting the positions by the same keys gives the same
    permutation); positions carry no derivative (`nondiff`), so nested modes
    differentiate `d_sorted` without looking into this sort's key."""
    if key is None:
        return sorted(range(len(xs)), key=xs.__getitem__, reverse=reverse)
    keys = [key(x) for x in xs]
    return sorted(range(len(xs)), key=keys.__getitem__, reverse=reverse)


@pullback_rule(builtins.sorted, nondiff_keywords=("key",))
def d_sorted(dy, xs, key=None, reverse=False):
    """`sorted(xs)` is a permutation of xs: an entry's cotangent is the cotangent of
    the place it went to (the permutation is found by sorting the positions by the
    same comparisons, so ties go where CPython's stable sort puts them). The order
    `key` gives is piecewise constant, so no cotangent reaches it."""
    order = sort_order(xs, reverse) if key is None else sort_order(xs, reverse, key)
    if isinstance(xs, np.ndarray):
        g = np.zeros(len(xs))
        for k, i in enumerate(order):
            g[i] = 0.0 if dy[k] is None else dy[k]
        return (g,)
    g = [None] * len(xs)
    for k, i in enumerate(order):
        g[i] = dy[k]
    return (tuple(g) if isinstance(xs, tuple) else g,)


@pullback_rule(builtins.enumerate)
def d_enumerate(dy, xs, start=0):
    """`enumerate(xs)` used as a value (`list(enumerate(xs))`, passed on): its items are
    pairs (i, x); each pair's second cotangent is its entry's (the counts have none)."""
    if dy is None:
        return None, None
    gs = [None if d is None else d[1] for d in dy]
    if isinstance(xs, np.ndarray):
        zero = np.zeros(xs.shape[1:])
        return np.array([zero if g is None else g for g in gs], dtype=float), None
    return (tuple(gs) if isinstance(xs, tuple) else gs), None


nondiff(sort_order, math.floor, math.ceil, math.trunc, builtins.round, builtins.int, builtins.len,
        builtins.range, builtins.bool, builtins.isinstance, builtins.print, builtins.str,
        builtins.type, builtins.repr, builtins.hash, builtins.id,
        math.isnan, math.isinf, math.isfinite, math.factorial, math.comb, math.gcd,
        operator.index, read_entry, read_global, write_global,   # (globals: constants of derivatives)
        check_star_length, check_super)


@pullback_rule(math.copysign)
def d_copysign(dy, x, y):
    return (dy if (x >= 0) == (math.copysign(1.0, y) > 0) else -dy), 0.0


@pullback_rule(math.fmod)
def d_fmod(dy, x, y):
    return dy, -dy * math.trunc(x / y)


@pullback_rule(math.degrees)
def d_degrees(dy, x):
    return dy * (180.0 / math.pi)


@pullback_rule(math.radians)
def d_radians(dy, x):
    return dy * (math.pi / 180.0)


@pullback_rule("unpack")
def d_unpack(dy, x, n):
    if isinstance(x, np.ndarray):
        rows = []
        for g in dy:
            rows.append(np.zeros(x.shape[1:]) if g is None else g)
        return np.array(rows, dtype=float), None
    return dy, None


@pullback_rule("getattr")
def d_getattr(dy, x, name):
    """`a.T` transposes; a bound method (`a.reshape`) passes the object's cotangent
    through (its pullback already returned it for the object); a named tuple's field
    or an object's attribute gives the object a structural cotangent
    (`adjoint.pytrees.attr_cotangent`)."""
    if name == "T" and isinstance(x, np.ndarray):
        return np.transpose(dy), None
    if name == "imag" and isinstance(x, (float, np.ndarray, np.generic)):
        return 0.0 * dy, None       # of a real value: 0 (complex: rules_complex)
    if isinstance(x, (float, int, np.ndarray, np.generic)):
        return dy, None             # a bound method of an array or a number
    return attr_cotangent(x, name, dy), None


@pullback_rule(math.prod)
def d_prod(dy, xs, start=1):
    """`math.prod(xs, start=s)` is `s * x0 * x1 * ...` in that order: each factor's
    cotangent is dy times the product of the others (products of the factors before
    and after it, so that a zero factor needs no division)."""
    vals = [start] + list(xs)
    n = len(vals)
    after = [1] * (n + 1)
    for k in range(n - 1, -1, -1):
        after[k] = vals[k] * after[k + 1]
    before, g = 1, []
    for k in range(n):
        g.append(unbcast(dy * before * after[k + 1], vals[k]))
        before = before * vals[k]
    gx = g[1:]
    if isinstance(xs, np.ndarray):
        gx = np.array(gx, dtype=float).reshape(xs.shape)
    return (tuple(gx) if not isinstance(xs, (list, np.ndarray)) else gx), g[0]


@pullback_rule(math.fsum)
def d_fsum(dy, xs):
    if isinstance(xs, np.ndarray):
        return (np.full(xs.shape, dy, dtype=float),)
    return ((dy,) * len(xs),)


@pullback_rule((builtins.tuple, builtins.list))
def d_tuple(dy, xs=()):
    if isinstance(xs, np.ndarray):
        return (np.array([0.0 if g is None else g for g in dy]),)
    return (tuple(dy) if isinstance(xs, tuple) else list(dy),)
