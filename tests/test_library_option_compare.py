"""A constant option a library derivative compares (`axis == 0` with `axis` passed as a
constant): `z.max(axis=1, keepdims=True)` in a differentiated program stays compiled."""
import warnings

import numpy as np
import pytest

from adjoint import gradient, value_and_grad
from jit.pullback.backend import JitFallbackWarning
from jit.pullback.host_jcalls import CallSiteFallbackWarning


def log_softmax(z):
    m = z.max(axis=1, keepdims=True)
    return z - m - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))


class RNN:
    @staticmethod
    def loss(params, xs, labels):
        h = np.zeros((xs.shape[1], params["b"].shape[0]))
        hs = []
        for t in range(xs.shape[0]):
            h = np.tanh(xs[t] @ params["Wx"] + h @ params["Wh"] + params["b"])
            hs.append(h)
        H = np.stack(hs)                    # (T, B, H)
        logits = H[-1] @ params["Wo"]
        logp = log_softmax(logits)
        return -np.mean(logp[np.arange(logits.shape[0]), labels]) + 1e-4 * np.sum(H ** 2)


def test_an_rnn_classifier_with_max_over_rows_compiles():
    r = np.random.RandomState(0)
    params = dict(Wx=r.randn(3, 5) * 0.1, Wh=r.randn(5, 5) * 0.1, b=np.zeros(5),
                  Wo=r.randn(5, 4) * 0.1)
    rng = np.random.default_rng(0)
    xs, labels = rng.normal(size=(6, 8, 3)), rng.integers(0, 4, size=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        warnings.simplefilter("error", CallSiteFallbackWarning)
        g = value_and_grad(RNN.loss, params, xs, labels)[1][0]
    h = 1e-6
    for k in params:
        hi = {a: b.copy() for a, b in params.items()}
        lo = {a: b.copy() for a, b in params.items()}
        idx = (0,) * hi[k].ndim
        hi[k][idx] += h
        lo[k][idx] -= h
        fd = (RNN.loss(hi, xs, labels) - RNN.loss(lo, xs, labels)) / (2 * h)
        assert g[k][idx] == pytest.approx(fd, rel=1e-5, abs=1e-9)


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


def softmax(z, axis=-1):
    z = z - np.max(z, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def classifier_loss(W, H, labels):
    logits = H @ W
    logp = log_softmax(logits)
    p = softmax(logits)
    return -np.mean(logp[np.arange(logits.shape[0]), labels]) - 0.01 * np.sum(p * np.log(p))


def test_a_classifier_loss_with_max_over_rows_compiles():
    rng = np.random.default_rng(0)
    W, H, labels = rng.normal(size=(5, 4)), rng.normal(size=(8, 5)), rng.integers(0, 4, size=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        warnings.simplefilter("error", CallSiteFallbackWarning)
        (g, _, _) = gradient(classifier_loss, W, H, labels, backend="llvm")
    h = 1e-6
    for idx in [(0, 0), (4, 3)]:
        e = np.zeros_like(W)
        e[idx] = h
        fd = (classifier_loss(W + e, H, labels) - classifier_loss(W - e, H, labels)) / (2 * h)
        assert g[idx] == pytest.approx(fd, rel=1e-6)
