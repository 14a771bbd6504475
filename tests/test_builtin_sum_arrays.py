"""Builtin `sum` over arrays: a generator expression of arrays (a built list once
lowered) compiles, and a list display of arrays of different shapes (broadcasting)
gets each entry's cotangent summed down to its shape, on both backends."""
import warnings

import numpy as np
import pytest

from adjoint import gradient

W = np.array([1.0, 2.0, 3.0])


def poly(c, x):
    return np.mean(sum(ci * x ** i for i, ci in enumerate(c)) ** 2)


def mixed_display(a, b, s):
    return np.sum(sum([a, b, s]) * W)


def mixed_generator(a, b, s):
    return np.sum(sum(v * 2.0 for v in (a, b, s)) * W)


def central(f, args, k, eps=1e-6):
    x = np.atleast_1d(np.asarray(args[k], dtype=float))
    out = np.zeros(x.shape)
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = eps
        up = list(args)
        dn = list(args)
        up[k] = (x + e).reshape(x.shape) if np.ndim(args[k]) else float(x[0] + eps)
        dn[k] = (x - e).reshape(x.shape) if np.ndim(args[k]) else float(x[0] - eps)
        out[j] = (f(*up) - f(*dn)) / (2 * eps)
    return out


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_sum_of_a_generator_of_arrays_compiles_and_differentiates(backend):
    c, x = np.array([0.3, -0.2, 0.5, 0.1]), np.linspace(-1.0, 1.0, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # compiled: no fallback notice
        gc, gx = gradient(poly, c, x, backend=backend)
    np.testing.assert_allclose(gc, central(poly, (c, x), 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(gx, central(poly, (c, x), 1), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("f", [mixed_display, mixed_generator])
def test_broadcast_entries_get_cotangents_of_their_own_shape(f, backend):
    args = (np.array([0.5]), np.array([1.0, 2.0, 3.0]), 0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ga, gb, gs = gradient(f, *args, backend=backend)
    assert ga.shape == (1,) and gb.shape == (3,) and isinstance(gs, float)
    for k, g in enumerate((ga, gb, gs)):
        np.testing.assert_allclose(np.atleast_1d(g), central(f, args, k), rtol=1e-6)
