"""np.round / np.around / np.rint compiled (round half to even, as numpy), on numbers and
arrays, and their zero derivative inside a differentiated program (the minimum-image
convention of a periodic box)."""
import warnings

import numpy as np
import pytest

import jit
from adjoint import value_and_grad
from jit.pullback.backend import JitFallbackWarning


def rounded(x, a):
    return np.round(x) + np.rint(x * 3.0) + np.around(-x), np.round(a), np.rint(a * 2.0)


@pytest.mark.parametrize("x", [0.5, 1.5, -2.5, 2.4999, -0.5, 1e300])
def test_rounding_matches_numpy_half_to_even(x):
    for a in (np.array([0.5, 1.5, -2.5, 3.7]), np.array([[0.5, 1.5], [-2.5, 3.7]]),
              np.array([0.5, 2.5, -1.5], dtype=np.float32)):
        got, want = jit.jit(rounded)(x, a), rounded(x, a)
        assert got[0] == want[0]
        for g, w in zip(got[1:], want[1:]):
            np.testing.assert_array_equal(g, w)
            assert g.dtype == w.dtype


def periodic_energy(pos, box=4.0):
    e = 0.0
    n = pos.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            d -= box * np.round(d / box)
            e += 1.0 / (np.dot(d, d) + 0.5)
    return e


def central(f, x, h=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += h
        lo[idx] -= h
        g[idx] = (f(hi) - f(lo)) / (2 * h)
    return g


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_minimum_image_energy_gradient(backend):
    pos = np.random.default_rng(3).uniform(0.0, 5.0, size=(5, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        v, (g,) = value_and_grad(periodic_energy, pos, backend=backend)
    assert v == pytest.approx(periodic_energy(pos), rel=1e-12)
    np.testing.assert_allclose(g, central(periodic_energy, pos), rtol=1e-6, atol=1e-8)
