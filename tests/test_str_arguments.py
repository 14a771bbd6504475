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


def checked_reduce(w, mode="sum"):
    if mode not in ("sum", "mean"):
        raise ValueError(f"unknown mode {mode!r:>8}; n={len(w):03d} ({mode})")
    return np.sum(w ** 2) if mode == "sum" else np.mean(w ** 2)


def label_in(x):
    kind = "pos" if x > 0 else "neg"
    r = 0.0
    if kind in ("neg", "zero"):
        r += 1.0
    if kind not in ("pos",):
        r += 10.0
    return r * x


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_a_str_in_a_tuple_and_an_fstring_of_it_compile(mode):
    w = np.array([0.5, -1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        if mode == "max":
            with pytest.raises(ValueError) as raised:
                checked_reduce(w, mode)
            with pytest.raises(ValueError) as compiled:
                jit.jit(checked_reduce)(w, mode)
            assert str(compiled.value) == str(raised.value)
            return
        assert jit.jit(checked_reduce)(w, mode) == checked_reduce(w, mode)
        g = gradient(checked_reduce, w, mode, backend="llvm")[0]
    np.testing.assert_allclose(g, 2 * w / (1 if mode == "sum" else 3), rtol=1e-12)


@pytest.mark.parametrize("x", [1.5, -2.0])
def test_a_label_in_a_tuple_of_labels(x):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        assert jit.jit(label_in)(x) == label_in(x)
        assert gradient(label_in, x, backend="llvm") == gradient(label_in, x, backend="interp")
