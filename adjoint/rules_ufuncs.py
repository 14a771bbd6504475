"""Derivative rules for more of numpy's elementwise functions and statistics: the
inverse hyperbolic functions, exp2, cbrt and the angle conversions, logaddexp(2), the
remainders (`np.remainder` alias `np.mod`, `np.fmod`), `np.fmax`/`np.fmin`, `np.clip`,
`np.cumprod`, `np.var` and `np.std` (functions and ndarray methods).

Conventions are those of `rules_numpy`: a pullback takes `dy` (never None) and the
call's arguments as the user wrote them, and returns one cotangent per positional
argument; `cotangent_like` (shared with `rules_linalg`) sums each cotangent back over
the axes its operand was broadcast along and gives it the operand's form (a float
for a Python number, a list for a list).  The `math` twins of the inverse
hyperbolics and of exp2 share these rules (`_math`: exp2 only where `math` has it).
A differentiable keyword operand (`np.clip(a, min=lo)`) is refused by the transform:
the rule table differentiates positional operands only.
"""
from __future__ import annotations

import math

import numpy as np

from .rule_table import defmethod, nondiff, pullback_rule
from .rules_numpy import _expand
from .tape import unbcast

_LN2 = math.log(2.0)


def _math(name: str) -> tuple:
    """`math.<name>` as a one-element tuple, or () on a Python that lacks it (exp2 is
    3.11+): the math twin shares the numpy function's rule."""
    f = getattr(math, name, None)
    return (f,) if f is not None else ()


def cotangent_like(g, x):
    """Cotangent `g` (of the result's broadcast shape) summed down to operand `x` and
    given its form: an array of its shape, a float for a number, a list or tuple of
    the same nesting for a sequence."""
    if isinstance(x, np.ndarray):
        return np.asarray(unbcast(np.asarray(g), x))
    if isinstance(x, (list, tuple)):
        return _nested(np.asarray(unbcast(np.asarray(g), np.asarray(x, dtype=float))), x)
    return float(np.sum(g))


def _nested(g, xs):
    parts = [_nested(g[k], v) if isinstance(v, (list, tuple))
             else g[k] if isinstance(v, np.ndarray) else float(g[k])
             for k, v in enumerate(xs)]
    return parts if isinstance(xs, list) else tuple(parts)


def _arr(x):
    return np.asarray(x, dtype=float)


# -- unary elementwise -------------------------------------------------------------------
@pullback_rule((np.arcsinh,) + _math("asinh"))
def d_arcsinh(dy, x):
    xa = _arr(x)
    return cotangent_like(dy / np.sqrt(xa * xa + 1.0), x)


@pullback_rule((np.arccosh,) + _math("acosh"))
def d_arccosh(dy, x):
    xa = _arr(x)
    return cotangent_like(dy / np.sqrt(xa * xa - 1.0), x)


@pullback_rule((np.arctanh,) + _math("atanh"))
def d_arctanh(dy, x):
    xa = _arr(x)
    return cotangent_like(dy / (1.0 - xa * xa), x)


@pullback_rule((np.exp2,) + _math("exp2"), uses_result=True)
def d_exp2(dy, y, x):
    return cotangent_like(dy * y * _LN2, x)


@pullback_rule((np.cbrt,) + _math("cbrt"), uses_result=True)
def d_cbrt(dy, y, x):
    return cotangent_like(dy / (3.0 * y * y), x)


@pullback_rule((np.deg2rad, np.radians))
def d_deg2rad(dy, x):
    return cotangent_like(dy * (math.pi / 180.0), x)


@pullback_rule((np.rad2deg, np.degrees))
def d_rad2deg(dy, x):
    return cotangent_like(dy * (180.0 / math.pi), x)


# -- binary elementwise ------------------------------------------------------------------
@pullback_rule(np.logaddexp, uses_result=True)
def d_logaddexp(dy, r, x, y):
    """d/dx log(e^x + e^y) = e^(x - r): each operand's share of the sum."""
    return (cotangent_like(dy * np.exp(_arr(x) - r), x),
            cotangent_like(dy * np.exp(_arr(y) - r), y))


@pullback_rule(np.logaddexp2, uses_result=True)
def d_logaddexp2(dy, r, x, y):
    return (cotangent_like(dy * np.exp2(_arr(x) - r), x),
            cotangent_like(dy * np.exp2(_arr(y) - r), y))


@pullback_rule(np.remainder)      # np.mod is the same ufunc
def d_remainder(dy, x, y):
    """x - y * floor(x / y): slope 1 in x and -floor(x / y) in y."""
    return cotangent_like(dy, x), cotangent_like(-dy * np.floor(np.divide(x, y)), y)


@pullback_rule(np.fmod)
def d_fmod(dy, x, y):
    """x - y * trunc(x / y) (C's fmod, the sign of x)."""
    return cotangent_like(dy, x), cotangent_like(-dy * np.trunc(np.divide(x, y)), y)


def _route(dy, x, y, to_x):
    """Send dy to x where `to_x`, to y elsewhere (both summed to their shapes)."""
    gx = np.where(to_x, dy, 0.0)
    return cotangent_like(gx, x), cotangent_like(np.where(to_x, 0.0, dy), y)


@pullback_rule(np.fmax)
def d_fmax(dy, x, y):
    """The larger one takes dy; a NaN loses to a number (numpy's fmax ignores it)."""
    xa, ya = np.asarray(x), np.asarray(y)
    return _route(dy, x, y, (xa >= ya) | np.isnan(ya))


@pullback_rule(np.fmin)
def d_fmin(dy, x, y):
    xa, ya = np.asarray(x), np.asarray(y)
    return _route(dy, x, y, (xa <= ya) | np.isnan(ya))


# -- clip: min(hi, max(a, lo)) ---------------------------------------------------------
def _clip_bounds(a_min, a_max, kw_min, kw_max):
    lo = a_min if kw_min is None else kw_min
    hi = a_max if kw_max is None else kw_max
    return lo, hi


def _clip_grads(dy, a, lo, hi):
    """Cotangents of a, lo, hi for min(hi, max(a, lo)), dy of the result's shape (a
    missing bound gets None)."""
    av = np.asarray(a)
    m = av if lo is None else np.maximum(av, lo)
    upper = np.zeros(np.shape(m), dtype=bool) if hi is None else (m > np.asarray(hi))
    dm = np.where(upper, 0.0, dy)
    ghi = None if hi is None else cotangent_like(np.where(upper, dy, 0.0), hi)
    if lo is None:
        return cotangent_like(dm, a), None, ghi
    below = av < np.asarray(lo)
    return (cotangent_like(np.where(below, 0.0, dm), a),
            cotangent_like(np.where(below, dm, 0.0), lo), ghi)


@pullback_rule(np.clip)
def d_clip(dy, a, a_min=None, a_max=None, out=None, min=None, max=None):
    if out is not None:
        raise TypeError("adjoint: np.clip with out= is not differentiable")
    lo, hi = _clip_bounds(a_min, a_max, min, max)
    ga, glo, ghi = _clip_grads(np.broadcast_to(dy, np.shape(np.clip(a, lo, hi))), a, lo, hi)
    return (ga, None if a_min is None else glo, None if a_max is None else ghi)


def _method_clip(dy, a, a_min=None, a_max=None, out=None, min=None, max=None):
    return d_clip.fn(dy, a, a_min, a_max, out, min, max)


# -- cumprod ---------------------------------------------------------------------------
def _cumprod_last(dy, x):
    """Pullback of cumprod along the last axis, exact where x has zeros."""
    if np.all(x != 0):
        y = np.cumprod(x, axis=-1)
        return np.flip(np.cumsum(np.flip(dy * y, -1), -1), -1) / x
    n = x.shape[-1]
    # row i: x with x_i replaced by 1; its cumprod at j >= i is d y_j / d x_i
    held = np.repeat(x[..., None, :], n, axis=-2)
    eye = np.eye(n, dtype=bool)
    held = np.where(eye, 1.0, held)
    parts = np.cumprod(held, axis=-1) * np.triu(np.ones((n, n)))
    return np.einsum("...ij,...j->...i", parts, dy)


@pullback_rule(np.cumprod)
def d_cumprod(dy, x, axis=None, dtype=None, out=None):
    if out is not None:
        raise TypeError("adjoint: np.cumprod with out= is not differentiable")
    xa = np.asarray(x, dtype=float)
    if axis is None:
        g = _cumprod_last(np.asarray(dy).reshape(-1), xa.reshape(-1)).reshape(xa.shape)
    else:
        ax = axis % max(xa.ndim, 1)
        g = np.moveaxis(_cumprod_last(np.moveaxis(dy, ax, -1), np.moveaxis(xa, ax, -1)), -1, ax)
    return cotangent_like(g, x)


def _method_cumprod(dy, a, axis=None, dtype=None, out=None):
    return (d_cumprod.fn(dy, a, axis, dtype, out),)


# -- variance and standard deviation ----------------------------------------------------
def _count(x, axis):
    """How many elements each reduction of `x` over `axis` reads."""
    if axis is None:
        return x.size
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return int(np.prod([x.shape[a] for a in axes]))


def _ddof(ddof, correction):
    return ddof if correction is None else correction


def _var_grad(dy, x, axis, ddof, keepdims):
    """dy * d var / dx = dy * 2 (x - mean) / (N - ddof), dy spread over the axes."""
    xa = np.asarray(x, dtype=float)
    centred = xa - np.mean(xa, axis=axis, keepdims=True)
    return _expand(dy, xa, axis, keepdims) * (2.0 * centred / (_count(xa, axis) - ddof))


@pullback_rule(np.var)
def d_var(dy, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, correction=None):
    if out is not None:
        raise TypeError("adjoint: np.var with out= is not differentiable")
    return cotangent_like(_var_grad(dy, x, axis, _ddof(ddof, correction), keepdims), x)


@pullback_rule(np.std, uses_result=True)
def d_std(dy, y, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False,
          correction=None):
    """d sqrt(v) = dv / (2 sqrt(v)); where the spread is zero the slope is taken as 0
    (exact when one element is reduced, a subgradient otherwise)."""
    if out is not None:
        raise TypeError("adjoint: np.std with out= is not differentiable")
    ya = np.asarray(y, dtype=float)
    safe = np.where(ya == 0.0, 1.0, ya)
    scaled = np.where(ya == 0.0, 0.0, np.asarray(dy) / (2.0 * safe))
    return cotangent_like(_var_grad(scaled, x, axis, _ddof(ddof, correction), keepdims), x)


def _method_var(dy, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False,
                correction=None):
    return (d_var.fn(dy, a, axis, dtype, out, ddof, keepdims, correction),)


def _method_std(dy, y, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False,
                correction=None):
    return (d_std.fn(dy, y, a, axis, dtype, out, ddof, keepdims, correction),)


defmethod(np.ndarray, "var", _method_var)
defmethod(np.ndarray, "std", _method_std, uses_result=True)
defmethod(np.ndarray, "clip", _method_clip)
defmethod(np.ndarray, "cumprod", _method_cumprod)

# piecewise constant: no cotangent (np.floor, np.sign, ... are in rules_numpy)
nondiff(np.around, np.fix, np.floor_divide, np.signbit)


# -- complex parts of real values ---------------------------------------------------------------
@pullback_rule((np.real, np.real_if_close))
def d_np_real(dy, x, tol=100):
    """For real x these are the identity (complex values are not differentiated)."""
    return cotangent_like(np.real(dy), x)

# np.imag, np.angle, np.conjugate (and complex values): adjoint.rules_complex
