"""A str argument (`activation="tanh"`) is a constant of the compiled signature: the
branch or the dict lookup on it folds, and another string compiles anew."""
import warnings

import numpy as np
import pytest

import jit
from adjoint import gradient, value_and_grad
from jit.pullback.backend import JitFallbackWarning


def relu(z):
    return np.maximum(z, 0.0)


def softplus(z):
    return np.logaddexp(0.0, z)


ACTIVATIONS = {"relu": relu, "tanh": np.tanh, "softplus": softplus}


def loss(params, x, y, activation="tanh"):
    act = ACTIVATIONS[activation]
    return np.mean((act(x @ params[0]) @ params[1] - y) ** 2)


def scaled(x, mode):
    return x * 2.0 if mode == "double" else x * 3.0


@pytest.mark.parametrize("activation", ["tanh", "softplus", "relu", "tanh"])
def test_a_str_keyword_selects_the_activation_compiled(activation):
    rng = np.random.default_rng(0)
    P = [rng.normal(size=(3, 5)), rng.normal(size=5)]
    x, y = rng.normal(size=(10, 3)), rng.normal(size=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        v, g = value_and_grad(loss, P, x, y, activation=activation, backend="llvm")
    vi, gi = value_and_grad(loss, P, x, y, activation=activation, backend="interp")
    assert v == pytest.approx(vi, rel=1e-12)
    np.testing.assert_allclose(g[0][0], gi[0][0], rtol=1e-10)
    np.testing.assert_allclose(g[0][1], gi[0][1], rtol=1e-10)


def test_another_string_compiles_anew():
    assert [gradient(scaled, 1.0, m, backend="llvm")[0] for m in ("double", "triple", "double")] \
        == [2.0, 3.0, 2.0]
    f = jit.jit(scaled)
    assert [f(1.0, m) for m in ("double", "triple", "double")] == [2.0, 3.0, 2.0]
