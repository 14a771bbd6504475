"""Derivative rules for numpy: elementwise ufuncs, reductions, products, shape
functions and constructors.  Pullbacks are plain Python over numpy values; the
array operators (`a * b`, `a @ b`) share the operator rules of `rules_math`, and the
functions `math` also has (`np.sin`, `np.arcsin`, ...) the rules of `rules_elementary`.
"""
from __future__ import annotations

import numpy as np

from .rule_table import defmethod, nondiff, pullback_rule
from .rules_math import _d_pow_array, d_matmul
from .tape import unbcast


def _f(x):
    return np.asarray(x, dtype=float)


# -- unary elementwise (the functions `math` also has: `rules_elementary`) -----------------
@pullback_rule(np.square)
def d_np_square(dy, x):
    return 2.0 * dy * x


@pullback_rule(np.negative)
def d_np_negative(dy, x):
    return -dy


@pullback_rule(np.reciprocal, uses_result=True)
def d_np_reciprocal(dy, y, x):
    """d(1/x) = -dx / x**2 = -y**2 dx."""
    return -dy * y * y


# -- binary elementwise -----------------------------------------------------------------
@pullback_rule(np.add)
def d_np_add(dy, x, y):
    return unbcast(dy, x), unbcast(dy, y)


@pullback_rule(np.subtract)
def d_np_subtract(dy, x, y):
    return unbcast(dy, x), unbcast(-dy, y)


@pullback_rule(np.multiply)
def d_np_multiply(dy, x, y):
    return unbcast(dy * y, x), unbcast(dy * x, y)


@pullback_rule((np.divide, np.true_divide))
def d_np_divide(dy, x, y):
    gx = np.divide(dy, y)     # numpy's division: a zero divisor gives inf, not an error
    return unbcast(gx, x), unbcast(np.divide(-gx * x, y), y)


@pullback_rule((np.power, np.float_power))
def d_np_power(dy, x, y):
    return _d_pow_array(dy, x, y)


def _select(dy, x, y, pick_x):
    gx = np.where(pick_x, dy, 0.0)
    gy = np.where(pick_x, 0.0, dy)
    return unbcast(gx, x), unbcast(gy, y)


@pullback_rule(np.maximum)
def d_np_maximum(dy, x, y):
    return _select(dy, x, y, np.asarray(x) >= np.asarray(y))


@pullback_rule(np.minimum)
def d_np_minimum(dy, x, y):
    return _select(dy, x, y, np.asarray(x) <= np.asarray(y))


@pullback_rule(np.hypot, uses_result=True)
def d_np_hypot(dy, r, x, y):
    return unbcast(dy * x / r, x), unbcast(dy * y / r, y)


@pullback_rule(np.where)
def d_np_where(dy, c, x, y):
    return None, unbcast(np.where(c, dy, 0.0), x), unbcast(np.where(c, 0.0, dy), y)


# -- selection by index arrays: a repeated index adds its cotangent once per use --------
def _wrapped(idx, n, mode):
    """The indices numpy reads for `mode` (`raise` keeps negative indices as they are)."""
    idx = np.asarray(idx)
    if mode == "wrap":
        return idx % n
    if mode == "clip":
        return np.clip(idx, 0, n - 1)
    return idx


@pullback_rule(np.take)
def d_np_take(dy, a, indices, axis=None, out=None, mode="raise"):
    if out is not None:
        raise TypeError("adjoint: np.take with out= is not differentiable")
    a = np.asarray(a)
    flat = a.reshape(-1) if axis is None else a
    ax = 0 if axis is None else axis % a.ndim
    g = np.zeros(flat.shape, dtype=np.result_type(a.dtype, float))
    key = (slice(None),) * ax + (_wrapped(indices, flat.shape[ax], mode),)
    np.add.at(g, key, dy)
    return g.reshape(a.shape), None


@pullback_rule(np.take_along_axis)
def d_np_take_along_axis(dy, a, indices, axis):
    a = np.asarray(a)
    if axis is None:
        g = np.zeros(a.size, dtype=np.result_type(a.dtype, float))
        np.add.at(g, np.asarray(indices), dy)
        return g.reshape(a.shape), None, None
    g = np.zeros(a.shape, dtype=np.result_type(a.dtype, float))
    ax = axis % a.ndim
    idx = np.asarray(indices)
    grids = np.indices(idx.shape, sparse=True)
    key = tuple(idx if k == ax else grids[k] for k in range(a.ndim))
    np.add.at(g, key, dy)
    return g, None, None


@pullback_rule(np.choose)
def d_np_choose(dy, a, choices, out=None, mode="raise"):
    if out is not None:
        raise TypeError("adjoint: np.choose with out= is not differentiable")
    k = _wrapped(a, len(choices), mode)
    grads = [unbcast(np.where(k == j, dy, 0.0), c) for j, c in enumerate(choices)]
    if isinstance(choices, np.ndarray):
        return None, np.stack([np.broadcast_to(g, np.shape(c)) for g, c in
                               zip(grads, choices)])
    return None, type(choices)(grads) if isinstance(choices, list) else tuple(grads)


# -- reductions and products ------------------------------------------------------------
def _expand(dy, x, axis, keepdims=False):
    """Broadcast a reduction's cotangent back over the reduced axes."""
    x = np.asarray(x)
    g = np.asarray(dy, dtype=float)
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
    return np.broadcast_to(g, x.shape).astype(float)


@pullback_rule(np.sum)
def d_np_sum(dy, x, axis=None, keepdims=False):
    g = _expand(dy, x, axis, keepdims)
    return g if isinstance(x, np.ndarray) else _like(g, x)


@pullback_rule(np.mean)
def d_np_mean(dy, x, axis=None, keepdims=False):
    x = np.asarray(x)
    n = x.size if axis is None else np.prod([x.shape[a] for a in np.atleast_1d(axis)])
    return _expand(dy, x, axis, keepdims) / n


@pullback_rule(np.prod, uses_result=True)
def d_np_prod(dy, y, x, axis=None, dtype=None, keepdims=False):
    """dy times the product of the other factors of each one (exact at zeros)."""
    x = _f(x)
    if axis is None:
        return _expand(dy, x, None, keepdims) * _others(x.reshape(-1)).reshape(x.shape)
    axes = tuple(a % x.ndim for a in np.atleast_1d(axis))
    rest = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, rest + list(axes))
    flat = moved.reshape(moved.shape[:len(rest)] + (-1,))
    others = np.transpose(_others(flat).reshape(moved.shape), np.argsort(rest + list(axes)))
    return _expand(dy, x, axes, keepdims) * others


def _others(x):
    """Along the last axis: each element's product of all the other elements."""
    ones = np.ones(x.shape[:-1] + (1,))
    left = np.cumprod(np.concatenate([ones, x[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, x[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return left * right


def _like(g, x):
    if isinstance(x, tuple):
        return tuple(g.tolist())
    return g


@pullback_rule(np.dot)
def d_np_dot(dy, x, y):
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        return unbcast(dy * y, x), unbcast(dy * x, y)
    if np.ndim(x) > 2 or np.ndim(y) > 2:
        return _d_dot_tensor(np.asarray(dy), np.asarray(x), np.asarray(y))
    return d_matmul.fn(dy, x, y)


def _d_dot_tensor(dy, x, y):
    """np.dot of N-D arrays sums x's last axis against y's second-to-last (its last
    when 1-D): x is [A.., k], y is [B1.., k, B2], dy is [A.., B1.., B2]."""
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    xa = [next(letters) for _ in range(x.ndim - 1)]
    k = next(letters)
    b1 = [next(letters) for _ in range(max(y.ndim - 2, 0))]
    b2 = [next(letters)] if y.ndim >= 2 else []
    xs, ys, ds = "".join(xa) + k, "".join(b1) + k + "".join(b2), "".join(xa + b1 + b2)
    gx = np.einsum(f"{ds},{ys}->{xs}", dy, y)
    gy = np.einsum(f"{ds},{xs}->{ys}", dy, x)
    return gx, gy


@pullback_rule(np.matmul)
def d_np_matmul(dy, x, y):
    return d_matmul.fn(dy, x, y)


@pullback_rule(np.outer)
def d_np_outer(dy, x, y):
    """np.outer ravels its operands, so each cotangent (of the raveled operand) is
    given back its operand's form."""
    return _unravel(dy @ _flat(y), x), _unravel(dy.T @ _flat(x), y)


def _flat(x):
    """np.ravel(x) as float64 (a one-element array for a number)."""
    if isinstance(x, (int, float)):
        return np.ones(1) * x
    return _f(x).ravel()


def _unravel(g, x):
    """1-D cotangent `g` of `np.ravel(x)` in the form of `x`: an array of its shape,
    a float for a number (a list or tuple gets an array of its shape)."""
    if isinstance(x, np.ndarray):
        return g.reshape(x.shape)
    if isinstance(x, (list, tuple)):
        return g.reshape(np.shape(x))
    return float(g[0])


@pullback_rule(np.broadcast_to)
def d_np_broadcast_to(dy, x, shape):
    return unbcast(dy, x), None


@pullback_rule(np.expand_dims)
def d_np_expand_dims(dy, x, axis):
    return np.reshape(dy, np.shape(x)), None


# -- shapes -----------------------------------------------------------------------------
@pullback_rule(np.reshape)
def d_np_reshape(dy, x, *shape, order="C", **kw):
    """The reshape back, in the order the elements were read (`order=`)."""
    return (_reshape_back(dy, x, order),) + (None,) * len(shape)


def _reshape_back(dy, x, order):
    if order == "A":
        order = "F" if np.isfortran(np.asarray(x)) else "C"
    return np.reshape(dy, np.shape(x), order=order)


@pullback_rule(np.transpose)
def d_np_transpose(dy, x, axes=None):
    if axes is None:
        return np.transpose(dy)
    return np.transpose(dy, np.argsort([k % np.ndim(x) for k in axes]))


@pullback_rule((np.array, np.asarray))
def d_np_array(dy, x, dtype=None, copy=True, order="K", subok=False, ndmin=0,
               like=None, device=None):
    # np.array and np.asarray: the keywords of both; only `x` is differentiable
    dy = np.asarray(dy)
    if isinstance(x, np.ndarray):
        return (dy,)
    if isinstance(x, (tuple, list)):
        return (_unstack(dy, x),)
    return (float(dy),)


def _unstack(dy, xs):
    # a tuple, built without list.append so that nested AD can lower it
    out = ()
    for k in range(len(xs)):
        x = xs[k]
        if isinstance(x, (tuple, list)):
            out = out + (_unstack(dy[k], x),)
        elif isinstance(x, np.ndarray):
            out = out + (dy[k],)
        else:
            out = out + (float(dy[k]),)
    return out


@pullback_rule(np.copy)
def d_np_copy(dy, x):
    return dy


def _method_reshape(dy, a, *shape, order="C", **kw):
    return (_reshape_back(dy, a, order),) + (None,) * len(shape)


def _method_sum(dy, a, axis=None, keepdims=False):
    return (_expand(dy, a, axis, keepdims),)


def _method_copy(dy, a):
    return (dy,)


def _method_dot(dy, a, b):
    return d_np_dot.fn(dy, a, b)


def _method_item(dy, a, *index):
    """`a.item(...)` reads one element of `a` (the only one, a flat index, or one index
    per axis): dy goes there, zeros elsewhere; a numpy scalar's is dy itself."""
    if not isinstance(a, np.ndarray):
        return (float(dy),) + (None,) * len(index)
    g = np.zeros(a.shape, dtype=a.dtype if a.dtype.kind in "fc" else float)
    where = index[0] if len(index) == 1 else tuple(index)
    if len(index) == 1 and not isinstance(where, tuple):
        where = np.unravel_index(where, a.shape)
    g[where if index else (0,) * a.ndim] = dy
    return (g,) + (None,) * len(index)


defmethod(np.ndarray, "reshape", _method_reshape)
defmethod(np.ndarray, "item", _method_item)
defmethod(np.ndarray, "sum", _method_sum)
defmethod(np.ndarray, "copy", _method_copy)
defmethod(np.ndarray, "dot", _method_dot)

@pullback_rule(np.full)
def d_np_full(dy, shape, fill_value, dtype=None, order="C", like=None, device=None):
    """Every entry is `fill_value`: its cotangent is the sum of dy (the shape has none)."""
    return None, np.sum(dy)


@pullback_rule(np.full_like)
def d_np_full_like(dy, a, fill_value, dtype=None, order="K", subok=True, shape=None,
                   device=None):
    """`a` gives only the shape and dtype: no cotangent; `fill_value` the sum of dy."""
    return None, np.sum(dy)


def scatter_added(a, indices, values):
    """What `np.add.at(a, indices, values)` leaves in `a`, as a new array: the J
    transform writes it back (`a[...] = scatter_added(a, i, v)`,
    `adjoint.passes.inplace`), so that the write is one reverse mode follows."""
    out = np.array(a, copy=True)
    np.add.at(out, indices, values)
    return out


@pullback_rule(scatter_added)
def d_scatter_added(dy, a, indices, values):
    """a's cotangent passes through; each value gets the cotangent of the entry it was
    added to (a gather, repeats included), summed over what it was broadcast to."""
    dy = np.asarray(dy)
    return dy, None, unbcast(dy[indices], values)


nondiff(np.zeros, np.ones, np.empty, np.zeros_like, np.ones_like, np.empty_like,
        np.shape, np.size, np.ndim, np.floor, np.ceil,
        np.round, np.argmax, np.argmin, np.argsort, np.isnan, np.isfinite, np.isinf,
        np.eye, np.identity, np.trunc, np.rint, np.less, np.greater, np.equal, np.any, np.all,
        np.triu_indices, np.tril_indices, np.triu_indices_from, np.tril_indices_from)


@pullback_rule(np.linspace)
def d_np_linspace(dy, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """`np.linspace(start, stop, num)` is `start * (1 - t) + stop * t`, t = i / (num - 1)
    (i / num without the endpoint), along axis 0: each end gets dy weighted by its
    share.  An integer dtype has no derivative."""
    if retstep or axis != 0:
        raise TypeError("adjoint: the derivative of np.linspace supports retstep=False and "
                        "axis=0 only")
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        return None, None
    dy = np.asarray(dy, dtype=float)
    n = int(num)
    div = n - 1 if endpoint else n
    t = (np.arange(n) / div if div > 0 else np.zeros(n)).reshape((n,) + (1,) * (dy.ndim - 1))
    return unbcast(np.sum(dy * (1.0 - t), axis=0), start), unbcast(np.sum(dy * t, axis=0), stop)


@pullback_rule(np.arange)
def d_np_arange(dy, *bounds, **kw):
    """`np.arange(start, stop, step)` is `start + i * step` (its length is piecewise
    constant in the bounds): start gets the sum of dy, step the sum of i * dy; a lone
    stop and the stop get none."""
    if len(bounds) < 2:
        return (None,)
    dy = np.asarray(dy, dtype=float)
    out = [unbcast(np.sum(dy), bounds[0]), None]
    if len(bounds) > 2:
        out.append(unbcast(np.sum(dy * np.arange(dy.shape[0])), bounds[2]))
    return tuple(out)


def _extreme(dy, y, x, axis=None, keepdims=False):
    x = np.asarray(x)
    yk = y if keepdims or axis is None else np.expand_dims(y, axis)
    mask = (x == yk)
    count = mask.sum(axis=axis, keepdims=True) if axis is not None else mask.sum()
    return _expand(dy, x, axis, keepdims) * mask / count


@pullback_rule((np.max, np.amax, np.min, np.amin), uses_result=True)
def d_np_max(dy, y, x, axis=None, keepdims=False):
    return _extreme(dy, y, x, axis, keepdims)


def _full_length(dy, n: int, m: int, mode: str):
    """Cotangent `dy` of `np.convolve` / `np.correlate` of lengths n and m in `mode`,
    placed where its entries sit in the full output (length n + m - 1; zeros around)."""
    if mode == "full":
        return dy
    g = np.zeros(n + m - 1)
    start = min(n, m) - 1 if mode == "valid" else (min(n, m) - 1) // 2
    g[start:start + len(dy)] = dy
    return g


@pullback_rule(np.convolve)
def d_np_convolve(dy, a, v, mode="full"):
    """y[i] = sum_k a[k] v[i - k] over the full output: each operand's cotangent is
    the full cotangent correlated with the other operand."""
    g = _full_length(dy, len(a), len(v), mode)
    return np.correlate(g, v, "valid"), np.correlate(g, a, "valid")


@pullback_rule(np.correlate)
def d_np_correlate(dy, a, v, mode="valid"):
    """np.correlate(a, v) is np.convolve(a, v[::-1]) (real operands)."""
    g = _full_length(dy, len(a), len(v), mode)
    return np.correlate(g, v[::-1], "valid"), np.correlate(g, a, "valid")[::-1]


@pullback_rule(np.polyval)
def d_np_polyval(dy, p, x):
    """polyval(p, x) = sum_i p[i] x^(n-1-i): d/dp[i] is x^(n-1-i) (summed against dy
    over x's entries), d/dx is sum_i p[i] (n-1-i) x^(n-2-i)."""
    pv, xv = np.asarray(p, dtype=float), np.asarray(x, dtype=float)
    exps = np.arange(pv.shape[0] - 1, -1, -1)
    powers = xv[..., None] ** exps
    slopes = exps * xv[..., None] ** np.maximum(exps - 1, 0)
    g = np.asarray(dy, dtype=float)
    gp = np.tensordot(g, powers, axes=xv.ndim)
    gx = g * (slopes @ pv)
    return gp, (float(gx) if xv.ndim == 0 else gx)


@pullback_rule(np.cumsum)
def d_np_cumsum(dy, x, axis=None, dtype=None):
    if axis is None:
        g = np.cumsum(np.asarray(dy).ravel()[::-1])[::-1]
        return g.reshape(np.shape(x))
    return np.flip(np.cumsum(np.flip(dy, axis), axis), axis)


@pullback_rule((np.float64, np.float32))
def d_np_float64(dy, x=0.0):
    return dy


def _method_max(dy, y, a, axis=None, keepdims=False):
    return (_extreme(dy, y, a, axis, keepdims),)


def _method_mean(dy, a, axis=None, keepdims=False):
    return (d_np_mean.fn(dy, a, axis, keepdims),)


def _method_astype(dy, a, dtype, *rest, **kw):
    """`a.astype(dtype)`: dy, back in a's float dtype (a float64 array cast to float32
    gets a float64 cotangent); none through an integer or boolean dtype."""
    if np.dtype(dtype).kind not in "fc" or dy is None:
        return None, None
    if getattr(getattr(a, "dtype", None), "kind", "") != "f":
        return dy, None
    return np.asarray(dy).astype(a.dtype, copy=False), None


defmethod(np.ndarray, "max", _method_max, uses_result=True)
defmethod(np.ndarray, "min", _method_max, uses_result=True)
defmethod(np.ndarray, "mean", _method_mean)


def _method_prod(dy, y, a, axis=None, dtype=None, keepdims=False):
    return (d_np_prod.fn(dy, y, a, axis, dtype, keepdims),)


defmethod(np.ndarray, "prod", _method_prod, uses_result=True)


def _method_cumsum(dy, a, axis=None, dtype=None):
    return (d_np_cumsum.fn(dy, a, axis),)


def _method_take(dy, a, indices, axis=None, mode="raise"):
    return (d_np_take.fn(dy, a, indices, axis, None, mode)[0], None)


defmethod(np.ndarray, "cumsum", _method_cumsum)
defmethod(np.ndarray, "take", _method_take)
defmethod(np.ndarray, "astype", _method_astype)
nondiff(np.ndarray.argmin, np.ndarray.argmax, np.ndarray.any, np.ndarray.all)
