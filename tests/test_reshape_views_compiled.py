"""Reshapes with a side of 3 or more dimensions and np.expand_dims, compiled natively:
values against numpy, gradients against central differences, on both backends, with
no fallback warning and no host call back into numpy."""
import warnings

import numpy as np
import pytest

import jit
from adjoint import gradient
from jit.runtime import host_calls

BACKENDS = ("interp", "llvm")


def _fd(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def _no_host_calls(fn, *args):
    """fn(*args) compiled, with any call back into numpy failing the test."""
    before = len([s for s in host_calls.SITES if s is not None])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = jit.jit(fn)(*args)
    names = [s.name for s in host_calls.SITES[before:] if s is not None]
    assert not [n for n in names if "reshape" in n or "expand_dims" in n], names
    return out


def split_merge(w):
    a = w[:, :6].reshape((2, 3, 2))          # a strided slice: copied, as numpy does
    b = np.reshape(a, (3, -1))                # 3-D -> 2-D, -1 inferred
    c = np.expand_dims(w, 0)                  # a view with an axis of length one
    d = np.reshape(c, (4, 2, 2))
    e = np.reshape(d, (2, 2, 2, 2))           # 3-D -> 4-D
    return a, b, c, d, e, np.expand_dims(a, -1), np.expand_dims(b, 1), np.expand_dims(w[0], 1)


def test_values_match_numpy():
    w = np.arange(16.0).reshape(2, 8)
    got = _no_host_calls(split_merge, w)
    for x, y in zip(got, split_merge(w)):
        assert x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def test_contiguous_operand_is_a_view():
    def f(w):
        v = np.reshape(w, (2, 2, 4))
        v[0, 0, 0] = -1.0
        return v
    w = np.arange(16.0).reshape(4, 4)
    _no_host_calls(f, w)
    assert w[0, 0] == -1.0


def test_bad_size_raises_value_error():
    with pytest.raises(ValueError, match="cannot reshape array of size 16"):
        jit.jit(lambda w: w.reshape((3, 5, 1)))(np.zeros((2, 8)))


def loss(w):
    a = w[:, :6].reshape((2, 3, 2))
    c = np.expand_dims(w, 1)
    r = np.expand_dims(w[1], 0)
    b = np.reshape(np.sin(a) * a, (3, 2, 2))
    return np.sum(b * b) + np.sum(np.reshape(c, (2, 2, 4)) ** 3) \
        + np.sum(np.reshape(a * a, (12,)) * np.arange(12.0)) + np.sum(r @ r.T)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_match_central_differences(backend):
    w = np.random.RandomState(0).randn(2, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = gradient(loss, w, backend=backend)[0]
    np.testing.assert_allclose(g, _fd(loss, w), rtol=1e-6, atol=1e-6)


# -- a closure's captured values typed once, typed anew when they change -------------------

def _make_scaled():
    scale, shape, table = 2.0, (2, 2, 2), [1.0, 2.0]

    def f(x):
        return np.sum(np.reshape(x, shape) * scale) + table[0]

    def rebind(s, sh):
        nonlocal scale, shape
        scale, shape = s, sh
    return f, rebind, table


@pytest.mark.parametrize("backend", BACKENDS)
def test_closure_cells_rebound_or_mutated_are_seen(backend):
    from jit.types import typeof
    f, rebind, table = _make_scaled()
    x = np.arange(8.0)
    first = typeof(f)
    assert typeof(f) is first                      # the memo answers a call again
    assert gradient(f, x, backend=backend)[0] == pytest.approx(np.full(8, 2.0))
    rebind(3, (4, 2))                              # an int now, and a 2-D shape
    assert typeof(f) != first
    np.testing.assert_allclose(gradient(f, x, backend=backend)[0], np.full(8, 3.0))
    before = typeof(f)
    table[0] = 5                                   # an entry of a captured list changes type
    assert typeof(f) != before
    g = gradient(f, x, backend=backend)[0]
    np.testing.assert_allclose(g, np.full(8, 3.0))
    assert jit.jit(f)(x) == pytest.approx(3 * 28 + 5)


# -- np.sum over one axis of a 3-D array ----------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_sum_over_one_axis_of_3d(axis):
    a = np.random.RandomState(1).randn(3, 4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = jit.jit(lambda a: np.sum(a, axis=axis))(a)
    np.testing.assert_allclose(got, np.sum(a, axis=axis), rtol=1e-13)


def sum_loss(a):
    return np.sum(np.sin(np.sum(a ** 2, axis=1))) + np.sum(np.sum(a, 2) * np.arange(4.0)) \
        + np.sum(np.sum(a, axis=-3) ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sum_over_one_axis_gradient(backend):
    a = np.random.RandomState(2).randn(3, 4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = gradient(sum_loss, a, backend=backend)[0]
    np.testing.assert_allclose(g, _fd(sum_loss, a), rtol=1e-6, atol=1e-6)
