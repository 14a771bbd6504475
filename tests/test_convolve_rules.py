"""np.convolve and np.correlate differentiate in every mode and either operand order
(reverse mode compiled and interpreted, forward mode), checked against central
differences; `a.argmin(axis=1)` / `np.argmax(a, 1)` compile (numpy by host call)."""
import warnings

import numpy as np
import pytest

import jit
from adjoint import gradient, hvp, jvp

RNG = np.random.default_rng(5)
W = RNG.normal(size=16)


def loss_of(f, mode):
    def loss(a, v):
        y = f(a, v, mode)
        return np.sum(W[:len(y)] * np.tanh(y))
    return loss


def central(loss, a, v, eps=1e-6):
    ga = [(loss(a + eps * e, v) - loss(a - eps * e, v)) / (2 * eps) for e in np.eye(len(a))]
    gv = [(loss(a, v + eps * e) - loss(a, v - eps * e)) / (2 * eps) for e in np.eye(len(v))]
    return np.array(ga), np.array(gv)


@pytest.mark.parametrize("f", [np.convolve, np.correlate])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n,m", [(7, 3), (3, 7), (5, 5)])
def test_both_operands_differentiate(f, mode, n, m):
    a, v = RNG.normal(size=n), RNG.normal(size=m)
    loss = loss_of(f, mode)
    want_a, want_v = central(loss, a, v)
    for backend in ("interp", "llvm"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ga, gv = gradient(loss, a, v, backend=backend)
        np.testing.assert_allclose(ga, want_a, atol=1e-6)
        np.testing.assert_allclose(gv, want_v, atol=1e-6)
    da, dv = RNG.normal(size=n), RNG.normal(size=m)
    _, t = jvp(loss, (a, v), (da, dv))
    assert t == pytest.approx(want_a @ da + want_v @ dv, abs=1e-6)


def smooth(a, v):
    return np.sum(W[:8] * np.tanh(np.convolve(a, v)))


def test_second_order_through_convolve():
    a, v = RNG.normal(size=6), RNG.normal(size=3)
    d = RNG.normal(size=6)
    eps = 1e-5
    g = lambda x: gradient(smooth, x, v, backend="interp")[0]      # noqa: E731
    want = (g(a + eps * d) - g(a - eps * d)) / (2 * eps)
    np.testing.assert_allclose(hvp(smooth, a, d, v), want, atol=1e-6)


def test_argmin_and_argmax_over_an_axis_compile():
    d = RNG.normal(size=(4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(jit.jit(lambda x: x.argmin(axis=1))(d), d.argmin(axis=1))
        assert np.array_equal(jit.jit(lambda x: np.argmax(x, 0))(d), np.argmax(d, 0))
        assert jit.jit(lambda x: x.argmax())(d) == d.argmax()
