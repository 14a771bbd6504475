"""The calling forms users write: `*args` parameters (of the differentiated function
and of the functions it calls, with keyword-only parameters after them).  CPython,
the interpreter and the JIT agree; gradients match central differences and come
back one per argument passed."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from adjoint import gradient, pullback
from tests.adjoint_check import check_gradient
from tests.harness import check_lowering
from tests.jit_grad_check import check_llvm


def concat_and_multiply(weights, *args):
    cat = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat, weights)


def squash(z):
    return z / (1.0 + z * z)     # (not np.tanh: numpy's SIMD tanh and libm's differ by an ulp)


def rnn_step(W, x, h):
    return np.sum(squash(concat_and_multiply(W, x, h)))


def total(*xs, scale=2.0):
    s = 0.0
    for x in xs:
        s = s + x * x
    return s * scale


def calls_total(a, b):
    return total(a, b, 3.0) + total(a, scale=0.5) + total()


def calls_with_extras(a, b):
    return total(a, b, 3.0) + total(a, scale=0.5)


def first_and_rest(w, *xs):
    return w * xs[0] + xs[1] * xs[0]


RNG = np.random.default_rng(4)


def squares(*xs):
    return sum(np.sum(x * x) for x in xs)


def test_same_as_cpython():
    check_lowering(calls_total, (1.5, 2.0))
    check_lowering(squares, (1.0, 2.0, 3.0), (np.ones(2),))
    check_lowering(first_and_rest, (2.0, 3.0, 4.0))


def test_callee_with_star_args():
    check_gradient(rnn_step, RNG.normal(size=(6, 2)), RNG.normal(size=(4, 2)),
                   RNG.normal(size=(4, 3)))
    check_gradient(calls_total, 1.5, 2.0)


def test_differentiated_function_with_star_args():
    assert gradient(total, 1.0, 2.0, backend="interp") == (4.0, 8.0)
    g = gradient(squares, 1.0, np.array([1.0, 2.0]) * np.ones((2, 1)), backend="interp")
    assert g[0] == 2.0 and np.array_equal(g[1], [[2.0, 4.0], [2.0, 4.0]])
    check_gradient(first_and_rest, 2.0, 3.0, 4.0)


def test_compiled_star_args():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, back = pullback(first_and_rest, 2.0, 3.0, 4.0, backend="llvm")
    assert (y, back(1.0)) == (18.0, (3.0, 6.0, 3.0))
    assert check_llvm(first_and_rest, 2.0, 3.0, 4.0) == "ok"


def test_keyword_only_without_default_is_a_clear_error():
    def needs(*xs, scale):
        return sum(xs) * scale
    with pytest.raises(TypeError, match="keyword-only argument"):
        pullback(needs, 1.0, backend="interp")


def affine(weights, *parts):
    stacked = np.hstack(parts + (np.ones((parts[0].shape[0], 1)),))
    return np.dot(stacked, weights)


def one_part(W, h):
    return np.sum(squash(affine(W, h)))     # as many arguments as parameters


def test_a_single_star_argument_is_still_packed():
    W, h = RNG.normal(size=(4, 2)), RNG.normal(size=(5, 3))
    check_lowering(one_part, (W, h))
    check_gradient(one_part, W, h)
    assert check_llvm(one_part, W, h) == "ok"


def test_compiled_calls_of_star_args_functions():
    assert check_llvm(rnn_step, RNG.normal(size=(6, 2)), RNG.normal(size=(4, 2)),
                      RNG.normal(size=(4, 3))) == "ok"
    assert check_llvm(calls_with_extras, 1.5, 2.0) == "ok"     # one and two extras
