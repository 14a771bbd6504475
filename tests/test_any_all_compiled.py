"""np.any / np.all (and the methods) in compiled code: a bool from numpy crosses back
(np.bool_ was refused by the host call's encoding), and a loss that branches on one
stays compiled."""
import warnings

import numpy as np
import pytest

import jit
from adjoint import value_and_grad
from jit.pullback.backend import JitFallbackWarning


def truth_tests(x, m):
    return (np.any(x > 1.0), np.all(x > -5.0), (x > 0).any(), m.all(), x.any(),
            np.any(x > 0, axis=0), np.all(x < 3.0, axis=1))


def test_values_match_numpy():
    x = np.array([[0.5, 2.0], [-1.0, 0.0]])
    m = np.array([True, False])
    got, want = jit.jit(truth_tests)(x, m), truth_tests(x, m)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def clipped_loss(w, X, y):
    r = np.clip(X @ w - y, -2.0, 2.0)
    big = np.abs(r) > 0.5
    penalty = np.sum(r[big] ** 2) if np.any(big) else 0.0
    return np.mean(r ** 2) + 0.1 * penalty


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_a_loss_branching_on_any(backend):
    rng = np.random.default_rng(5)
    X, y, w = rng.normal(size=(12, 3)), rng.normal(size=12), rng.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        v, (g, _, _) = value_and_grad(clipped_loss, w, X, y, backend=backend)
    assert v == pytest.approx(clipped_loss(w, X, y), rel=1e-12)
    h = 1e-6
    for i in range(3):
        e = np.zeros(3)
        e[i] = h
        fd = (clipped_loss(w + e, X, y) - clipped_loss(w - e, X, y)) / (2 * h)
        assert g[i] == pytest.approx(fd, rel=1e-6, abs=1e-9)
