"""Small pieces of Python as people write it, compiled with no fallback and
differentiated right: `enumerate(xs, start=1)`, a method of a string constant
(`mode.lower() == "train"`), on both backends."""
import warnings

import numpy as np
import pytest

import jit
from adjoint import gradient

X = np.array([0.5, -1.0, 2.0])


def weighted(x):
    acc = 0.0
    for k, v in enumerate(x, start=1):
        acc += k * v * v
    return acc


def by_mode(x, mode="Train"):
    if mode.lower() == "train" and mode.strip().startswith("T"):
        return np.sum(x ** 2)
    return np.sum(x) * len(mode.replace("a", ""))


def compiled(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return gradient(f, *args, backend="llvm")


def test_enumerate_with_a_start_keyword():
    assert list(enumerate(X, start=1))[0][0] == 1
    for backend in ("interp", "llvm"):
        np.testing.assert_allclose(gradient(weighted, X, backend=backend)[0],
                                   2 * X * np.arange(1, 4))
    assert jit.jit(weighted)(X) == pytest.approx(weighted(X))


@pytest.mark.parametrize("mode", ["Train", "TRAIN", "eval", "banana"])
def test_string_constant_methods_fold(mode):
    want = 2 * X if mode.lower() == "train" else np.full(3, len(mode.replace("a", "")))
    g = compiled(by_mode, X, mode)[0]
    np.testing.assert_allclose(g, want)
    assert jit.jit(by_mode)(X, mode) == pytest.approx(by_mode(X, mode))
