"""A constant option a library derivative compares (`axis == 0` with `axis` passed as a
constant): `z.max(axis=1, keepdims=True)` in a differentiated program stays compiled."""
import warnings

import numpy as np
import pytest

from adjoint import gradient
from jit.pullback.backend import JitFallbackWarning
from jit.pullback.host_jcalls import CallSiteFallbackWarning


def log_softmax_rows(z):
    m = z.max(axis=1, keepdims=True)
    return z - m - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))


def log_softmax_columns(z):
    m = np.max(z, axis=0, keepdims=True)
    return z - m - np.log(np.sum(np.exp(z - m), axis=0, keepdims=True))


def log_softmax_loss(z, axis):
    lsm = log_softmax_rows(z) if axis == 1 else log_softmax_columns(z)
    return np.sum(lsm ** 2)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_max_with_axis_and_keepdims_compiles(axis, backend):
    z = np.random.default_rng(4).normal(size=(4, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        warnings.simplefilter("error", CallSiteFallbackWarning)
        (g, _) = gradient(log_softmax_loss, z, axis, backend=backend)
    h = 1e-6
    for idx in [(0, 0), (2, 3), (3, 4)]:
        e = np.zeros_like(z)
        e[idx] = h
        fd = (log_softmax_loss(z + e, axis) - log_softmax_loss(z - e, axis)) / (2 * h)
        assert g[idx] == pytest.approx(fd, rel=1e-6, abs=1e-9)
