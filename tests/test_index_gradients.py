"""Property tests: gradients through array indexing, reads and writes.

Random shapes (0-3 dimensions of 0-4 elements) meet random indices: integer arrays with
repeated and negative entries (and empty ones), boolean masks, slices with any step
(negative included), bare integers, and mixes of these over several axes.  Every
gradient is compared with two references that share no code with zygopy's adjoint:

  * the dense Jacobian of the selection, built from where each selected element comes
    from (`np.arange(x.size).reshape(x.shape)[key]`), so a read of an element k times
    contributes k times its weight;
  * central differences of the (linear) function.

Writes (`y[key] = v`, `y[key] += v`) follow numpy's buffered semantics: with a
repeated index only one update lands, and only the value that landed gets a
cotangent.  The reference there is the Jacobian column by column, by evaluating the
linear function on unit vectors.

CI runs a bounded number of draws; `ZYGOPY_INDEX_EXAMPLES=10000` runs more.
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adjoint import gradient
from jit.pullback.backend import JitFallbackWarning

EXAMPLES = int(os.environ.get("ZYGOPY_INDEX_EXAMPLES", "150"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
BACKENDS = ("interp", "auto")


# -- the functions under test: the index is an argument, so one transform serves all --
def read_weighted(x, key, w):
    return float(np.sum(x[key] * w))


def read_twice(x, key, w):
    return float(np.sum(x[key] * w) + np.sum(x[key] * x[key]))


def write_assign(x, key, v, w):
    y = x.copy()
    y[key] = v
    return float(np.sum(y * w))


def write_add(x, key, v, w):
    y = x.copy()
    y[key] += v
    return float(np.sum(y * w))


def take_along(x, idx, axis, w):
    return float(np.sum(np.take(x, idx, axis=axis) * w))


def view_of_view(x, k1, k2, w):
    return float(np.sum(x[k1][k2] * w))


# -- strategies -------------------------------------------------------------------------
shapes = st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple)


@st.composite
def axis_index(draw, n: int):
    """One entry of an index tuple for an axis of length n."""
    kinds = ["slice", "array"] + (["int"] if n else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "int":
        return draw(st.integers(-n, n - 1))
    if kind == "slice":
        lo = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
        hi = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
        step = draw(st.sampled_from([None, 1, 2, 3, -1, -2]))
        return slice(lo, hi, step)
    size = draw(st.integers(0, 5))
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return np.array(draw(st.lists(st.integers(-n, n - 1), min_size=size, max_size=size)),
                    dtype=np.int64)


@st.composite
def keys(draw, shape: tuple):
    """A basic or advanced index for an array of `shape`."""
    if draw(st.integers(0, 4)) == 0:
        n = int(np.prod(shape))
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)),
                        dtype=bool).reshape(shape)
    used = draw(st.integers(1, len(shape)))
    parts = [draw(axis_index(n)) for n in shape[:used]]
    arrays = [p for p in parts if isinstance(p, np.ndarray)]
    if len(arrays) > 1:   # advanced indices must broadcast together: make them equal length
        m = min(len(a) for a in arrays)
        parts = [p[:m] if isinstance(p, np.ndarray) else p for p in parts]
    return parts[0] if len(parts) == 1 and draw(st.booleans()) else tuple(parts)


def values(shape: tuple, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape)


# -- references -------------------------------------------------------------------------
def read_reference(x: np.ndarray, key, w: np.ndarray) -> np.ndarray:
    """J^T w for the selection x[key], from where each selected element comes from."""
    origin = np.arange(x.size).reshape(x.shape)[key]
    w = np.broadcast_to(w, origin.shape)
    return np.bincount(origin.ravel(), weights=w.ravel(), minlength=x.size).reshape(x.shape)


def jacobian_columns(f, args: list, pos: int) -> np.ndarray:
    """The gradient of a linear-in-args[pos] function, one unit vector at a time."""
    base = np.asarray(args[pos], dtype=float)
    out = np.zeros(base.shape)
    zero = list(args)
    zero[pos] = np.zeros(base.shape)
    f0 = f(*zero)
    for k in range(base.size):
        e = np.zeros(base.size)
        e[k] = 1.0
        one = list(args)
        one[pos] = e.reshape(base.shape)
        out.flat[k] = f(*one) - f0
    return out


def central(f, args: list, pos: int, h: float = 1e-6) -> np.ndarray:
    base = np.asarray(args[pos], dtype=float)
    out = np.zeros(base.shape)
    for k in range(base.size):
        up, down = list(args), list(args)
        up[pos], down[pos] = base.copy(), base.copy()
        up[pos].flat[k] += h
        down[pos].flat[k] -= h
        out.flat[k] = (f(*up) - f(*down)) / (2 * h)
    return out


def grads(f, *args, backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        return gradient(f, *args, backend=backend)


def close(a, b) -> None:
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=1e-7, atol=1e-7)


# -- properties -------------------------------------------------------------------------
@SETTINGS
@given(data=st.data(), backend=st.sampled_from(BACKENDS))
def test_read_gradient_scatters_every_use(data, backend):
    shape = data.draw(shapes)
    key = data.draw(keys(shape))
    x = values(shape, 1)
    w = values(x[key].shape, 2)
    before = (x.copy(), w.copy())
    gx = grads(read_weighted, x, key, w, backend=backend)[0]
    close(gx, read_reference(x, key, w))
    close(gx, central(read_weighted, [x, key, w], 0))
    np.testing.assert_array_equal(x, before[0])
    np.testing.assert_array_equal(w, before[1])


@SETTINGS
@given(data=st.data(), backend=st.sampled_from(BACKENDS))
def test_reading_the_same_elements_twice_adds_both(data, backend):
    shape = data.draw(shapes)
    key = data.draw(keys(shape))
    x = values(shape, 3)
    w = values(x[key].shape, 4)
    gx = grads(read_twice, x, key, w, backend=backend)[0]
    close(gx, read_reference(x, key, w) + read_reference(x, key, 2 * x[key]))
    close(gx, central(read_twice, [x, key, w], 0))


@SETTINGS
@given(data=st.data(), backend=st.sampled_from(BACKENDS), add=st.booleans(),
       scalar=st.booleans())
def test_write_gradient_follows_the_update_that_landed(data, backend, add, scalar):
    shape = data.draw(shapes)
    key = data.draw(keys(shape))
    f = write_add if add else write_assign
    x = values(shape, 5)
    v = 0.75 if scalar else values(x[key].shape, 6)
    w = values(shape, 7)
    gx, _, gv, _ = grads(f, x, key, v, w, backend=backend)
    close(gx, jacobian_columns(f, [x, key, v, w], 0))
    close(gx, central(f, [x, key, v, w], 0))
    if scalar:
        close(gv, (f(x, key, 1.0, w) - f(x, key, 0.0, w)))
        return
    close(gv, jacobian_columns(f, [x, key, v, w], 2))
    close(gv, central(f, [x, key, v, w], 2))


@SETTINGS
@given(data=st.data(), mode=st.sampled_from(["raise", "wrap", "clip"]))
def test_take_gradient_scatters(data, mode):
    shape = data.draw(shapes.filter(lambda s: all(s)))
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = int(np.prod(shape)) if axis is None else shape[axis]
    lo, hi = (-n, n - 1) if mode == "raise" else (-2 * n, 2 * n)
    idx = np.array(data.draw(st.lists(st.integers(lo, hi), max_size=5)), dtype=np.int64)
    x = values(shape, 8)

    def f(x, idx, axis, w):
        return float(np.sum(np.take(x, idx, axis=axis, mode=mode) * w))

    w = values(np.take(x, idx, axis=axis, mode=mode).shape, 9)
    gx = grads(f, x, idx, axis, w, backend="interp")[0]
    close(gx, jacobian_columns(f, [x, idx, axis, w], 0))


@SETTINGS
@given(data=st.data(), backend=st.sampled_from(BACKENDS))
def test_views_of_views(data, backend):
    shape = data.draw(shapes)
    k1 = data.draw(keys(shape))
    inner = np.zeros(shape)[k1].shape
    if not inner:
        return
    k2 = data.draw(keys(inner))
    x = values(shape, 10)
    w = values(x[k1][k2].shape, 11)
    gx = grads(view_of_view, x, k1, k2, w, backend=backend)[0]
    close(gx, jacobian_columns(view_of_view, [x, k1, k2, w], 0))


# -- the reported cases, named ------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_repeated_integer_index_read_accumulates(backend):
    def f(x, idx):
        return float(np.sum(x[idx]))
    g = grads(f, np.ones(5), np.array([0, 0, 0, 2]), backend=backend)
    np.testing.assert_array_equal(g[0], [3.0, 0.0, 1.0, 0.0, 0.0])
    assert g[1] is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_embedding_lookup_with_repeated_rows_accumulates(backend):
    def f(table, idx):
        return float(np.sum(table[idx] * 2.0))
    g = grads(f, np.ones((3, 2)), np.array([1, 1, 0]), backend=backend)[0]
    np.testing.assert_array_equal(g, [[2.0, 2.0], [4.0, 4.0], [0.0, 0.0]])


def test_choose_routes_each_cotangent_to_its_choice():
    def f(a, b):
        return float(np.sum(np.choose(np.array([0, 1, 0, 1]), [a, b]) * np.arange(4.0)))
    ga, gb = grads(f, np.ones(4), 2.0, backend="interp")
    np.testing.assert_array_equal(ga, [0.0, 0.0, 2.0, 0.0])
    assert gb == 4.0


def test_where_with_broadcasting_sums_back_to_each_operand():
    def f(x, y):
        c = np.array([[True], [False], [True]])
        return float(np.sum(np.where(c, x, y) * np.arange(12.0).reshape(3, 4)))
    gx, gy = grads(f, np.ones((1, 4)), 1.5, backend="interp")
    np.testing.assert_array_equal(gx, [[8.0, 10.0, 12.0, 14.0]])
    assert gy == float(np.arange(4.0, 8.0).sum())


def test_take_along_axis_accumulates_repeats():
    def f(x, idx):
        return float(np.sum(np.take_along_axis(x, idx, axis=1)))
    g = grads(f, np.ones((2, 3)), np.array([[0, 0], [2, 2]]), backend="interp")[0]
    np.testing.assert_array_equal(g, [[2.0, 0.0, 0.0], [0.0, 0.0, 2.0]])


def test_scalar_written_into_a_row_sums_its_cotangent():
    def f(x):
        h = np.zeros((x.shape[0], 3))
        for t in range(x.shape[0]):
            h[t] = x[t]
        return float(np.sum(h * h))
    for backend in BACKENDS:
        np.testing.assert_allclose(grads(f, np.array([1.0, 2.0]), backend=backend)[0],
                                   [6.0, 12.0])


def test_in_place_library_writes_are_refused_but_add_at():
    def f(x, idx):
        y = np.zeros(3)
        np.add.at(y, idx, x)          # differentiated: y[...] = scatter_added(y, idx, x)
        return float(np.sum(y * y))
    g = gradient(f, np.ones(3), np.array([0, 0, 1]), backend="interp")[0]
    np.testing.assert_allclose(g, [4.0, 4.0, 2.0])      # y = [2, 1, 0]: 2 y[idx]

    def g(x):
        y = np.zeros(3)
        np.copyto(y, x)
        return float(np.sum(y))
    with pytest.raises(TypeError, match=r"numpy\.copyto"):
        gradient(g, np.ones(3), backend="interp")
