"""`*hidden, last = params` and `first, *rest = t`: lowered to reads of `list(seq)`, so
they differentiate and compile as written out, with CPython's ValueError."""
import warnings

import numpy as np
import pytest

import jit
from adjoint import gradient, jvp
from jit.pullback.backend import JitFallbackWarning

BACKENDS = ("interp", "llvm")


def mlp(params, x):
    *hidden, last = params
    for W, b in hidden:
        x = np.maximum(x @ W + b, 0.0)
    W, b = last
    return np.sum((x @ W + b) ** 2)


def heads(t):
    first, *rest = t
    a, *mid, z = rest
    return first * z + sum(m * m for m in mid) + a


def strict(f, *args, backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        return gradient(f, *args, backend=backend)


def layers():
    rng = np.random.default_rng(0)
    return [(rng.normal(size=(3, 4)), rng.normal(size=4)), (rng.normal(size=(4, 4)), np.zeros(4)),
            (rng.normal(size=(4, 1)), np.zeros(1))], rng.normal(size=(5, 3))


@pytest.mark.parametrize("backend", BACKENDS)
def test_hidden_layers_and_the_last_one(backend):
    params, x = layers()
    g = strict(mlp, params, x, backend=backend)[0]
    h = 1e-6
    for k, j, idx in [(0, 0, (1, 2)), (1, 1, (3,)), (2, 0, (2, 0))]:
        hi = [tuple(a.copy() for a in p) for p in params]
        lo = [tuple(a.copy() for a in p) for p in params]
        hi[k][j][idx] += h
        lo[k][j][idx] -= h
        fd = (mlp(hi, x) - mlp(lo, x)) / (2 * h)
        assert g[k][j][idx] == pytest.approx(fd, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_first_middle_and_last(backend):
    t = (1.0, 2.0, 3.0, 4.0, 5.0)
    assert strict(heads, t, backend=backend) == ((5.0, 1.0, 6.0, 8.0, 1.0),)
    assert jit.jit(heads)(t) == heads(t) == 32.0


def test_forward_mode():
    y, dy = jvp(heads, ((1.0, 2.0, 3.0, 4.0, 5.0),), ((1.0, 0.0, 1.0, 0.0, 0.0),))
    assert (y, dy) == (32.0, 11.0)


@pytest.mark.parametrize("backend", ("interp", "auto"))
def test_too_few_items_raise_what_cpython_raises(backend):
    with pytest.raises(ValueError, match=r"not enough values to unpack \(expected at least 2, got 1\)"):
        heads((1.0, 2.0))
    with pytest.raises(ValueError, match=r"not enough values to unpack \(expected at least 2, got 1\)"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gradient(heads, (1.0, 2.0), backend=backend)
