"""The pullback of `np.linalg.norm` for every `ord`, `axis` and `keepdims` numpy
accepts: vector norms along one axis (`ord` a number, `inf`, `-inf`; 0 counts and has
no derivative) and matrix norms over two axes (`'fro'`, `'nuc'`, 2, -2, 1, -1, `inf`,
`-inf`).  Where a norm is not differentiable (a kink: a zero entry of a 1-norm, tied
maxima) the cotangent is shared equally among the tied entries, as `np.max`'s is."""
from __future__ import annotations

import numpy as np

from .rule_table import pullback_rule

_MATRIX_ORDS = (None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf)


def _axes(x: np.ndarray, axis) -> tuple:
    """The reduced axes, non-negative, as numpy reads `axis` (None: all of a vector
    or a matrix)."""
    if axis is None:
        return tuple(range(x.ndim))
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return tuple(a % x.ndim for a in axes)


def _kept(v, axes: tuple, keepdims: bool):
    """`v` (a result over `axes`) with the reduced axes kept, for broadcasting."""
    v = np.asarray(v, dtype=float)
    return v if keepdims else np.expand_dims(v, axes)


def _ties(mask: np.ndarray, axes: tuple) -> np.ndarray:
    """`mask` divided by its count over `axes`: a tie shares the cotangent."""
    return mask / np.sum(mask, axis=axes, keepdims=True)


def _safe_divide(x: np.ndarray, yk: np.ndarray) -> np.ndarray:
    """x / yk, 0 where the norm yk is 0 (written without `out=`, so that the rule's own
    code can be differentiated: the second derivative of a norm)."""
    nonzero = yk != 0
    return np.where(nonzero, x / np.where(nonzero, yk, 1.0), 0.0)


def _vector(x: np.ndarray, yk: np.ndarray, ord, axes: tuple) -> np.ndarray:
    """d|x|_ord / dx along `axes` (one axis, or all of a vector), `yk` the norm kept."""
    if ord is None or ord == 2:
        return _safe_divide(x, yk)
    if ord == 0:
        return np.zeros_like(x)
    a = np.abs(x)
    if ord in (np.inf, -np.inf):
        return np.sign(x) * _ties(a == yk, axes)
    if ord == 1:
        return np.sign(x)
    ratio = _safe_divide(a, yk)
    return np.sign(x) * ratio ** (ord - 1)


def _matrix(x: np.ndarray, yk: np.ndarray, ord, axes: tuple) -> np.ndarray:
    """d|x|_ord / dx for the matrices over the two `axes`, `yk` the norm kept."""
    if ord is None or ord == "fro":
        return _safe_divide(x, yk)
    m = np.moveaxis(x, axes, (-2, -1))
    if ord in ("nuc", 2, -2):
        u, _, vt = np.linalg.svd(m, full_matrices=False)
        pick = slice(None) if ord == "nuc" else slice(0, 1) if ord == 2 else slice(-1, None)
        g = u[..., :, pick] @ vt[..., pick, :]
    else:           # 1, -1: the extreme column sum of |x|; inf, -inf: row sum
        sums = np.sum(np.abs(m), axis=-2 if ord in (1, -1) else -1, keepdims=True)
        extreme = np.max if ord in (1, np.inf) else np.min
        g = np.sign(m) * _ties(sums == extreme(sums, axis=(-2, -1), keepdims=True), (-2, -1))
    return np.moveaxis(g, (-2, -1), axes)


@pullback_rule(np.linalg.norm, uses_result=True)
def d_np_norm(dy, y, x, ord=None, axis=None, keepdims=False):
    x = np.asarray(x, dtype=float)
    axes = _axes(x, axis)
    if len(axes) == 1 or ord is None and axis is None:     # (None: the 2-norm of all)
        g = _vector(x, _kept(y, axes, keepdims or axis is None), ord, axes)
    elif len(axes) == 2 and ord in _MATRIX_ORDS:
        g = _matrix(x, _kept(y, axes, keepdims or axis is None), ord, axes)
    else:
        raise TypeError(f"adjoint: np.linalg.norm with ord={ord!r} over {len(axes)} axes "
                        "is not a norm numpy computes")
    return g * _kept(dy, axes, keepdims or axis is None)
