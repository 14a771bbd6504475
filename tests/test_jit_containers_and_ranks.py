"""Compiled code on arrays of 3 and 4 dimensions, boolean arrays, dict arguments and
list displays.  Native loops are written for 1-D and 2-D arrays of numbers; the rest
is numpy through host calls (`jit.library.registry`: `numpy_only`).  Each program
compiles (`check_llvm` == "ok": value and gradients agree with the interpreter) and
its interpreter gradient matches central differences."""
from __future__ import annotations

import numpy as np
import pytest

import jit
from adjoint import gradient, pullback
from tests.adjoint_check import check_gradient
from tests.jit_grad_check import check_llvm

RNG = np.random.default_rng(3)
X3 = RNG.normal(size=(4, 2, 3))
X4 = RNG.normal(size=(2, 3, 2, 2))
W = RNG.normal(size=3)
MASK_LABELS = np.array([True, False, True, True])       # a module-level bool array


def steps(x, w):
    """An RNN-style loop over the first axis of a 3-D array (views, unpacking)."""
    total = 0.0
    for m in x:
        a, b = m
        total += np.sum(a * w) + np.sum(np.exp(m)) * b[0]
    n, rows, cols = x.shape
    return total + x[1, 0, 2] * n + np.sum(x[2]) / (rows * cols) + x.size


def contractions(x, w):
    y = np.einsum("ijk,k->ij", x, w)
    z = x @ w
    t = np.transpose(x, (2, 0, 1))
    return np.sum(y * z) + np.sum(np.tanh(t) ** 2) + np.sum(x.T[0]) + np.sum(np.mean(x, axis=1))


def reshaped(x):
    flat = np.reshape(x, (4, 6))
    back = flat.reshape(2, 12)
    e = np.expand_dims(x[0], 0)
    return np.sum(back[1] * np.ravel(x)[:12]) + np.sum(e * x) + np.sum(np.concatenate((x, x)))


def four_d(x):
    return np.sum(np.sin(x) * x) + np.sum(x[1, 2]) + np.sum(np.max(x, axis=(2, 3)))


@pytest.mark.parametrize("f,args", [(steps, (X3, W)), (contractions, (X3, W)),
                                    (reshaped, (X3,)), (four_d, (X4,))],
                         ids=["steps", "contractions", "reshaped", "four_d"])
def test_arrays_of_three_and_four_dimensions(f, args):
    assert check_llvm(f, *args) == "ok"
    check_gradient(f, *args)


def test_strided_three_dimensional_argument():
    x = np.moveaxis(RNG.normal(size=(2, 3, 4)), 2, 0)[:, :, ::-1]      # (4, 2, 3), strided
    assert check_llvm(steps, x, W) == "ok"
    check_gradient(steps, x, W)


def test_three_dimensional_result_and_zero_size():
    def double(x):
        return x * 2.0 + 1.0
    np.testing.assert_array_equal(jit.jit(double)(X3), X3 * 2.0 + 1.0)
    empty = np.zeros((0, 2, 3))
    assert jit.jit(double)(empty).shape == (0, 2, 3)
    y, back = pullback(lambda x: np.sum(double(x)), empty, backend="llvm")
    assert y == 0.0 and back(1.0)[0].shape == (0, 2, 3)


def masked(w, x):
    p = np.tanh(x @ w)
    q = p * MASK_LABELS + (1 - p) * (1 - MASK_LABELS)
    keep = x > 0.2
    return (-np.sum(np.log(q + 2.0)) + np.sum(np.where(keep, x, 0.0) ** 2)
            + np.sum(x[keep]) + np.sum(x[np.array([0, 2, 2])]))


def test_boolean_arrays_masks_and_index_arrays():
    x = RNG.uniform(size=(4, 3))
    assert check_llvm(masked, W, x) == "ok"
    check_gradient(masked, W, x)
    # a repeated index adds once per read
    g = gradient(lambda x: np.sum(x[np.array([1, 1, 0])]), np.ones(3), backend="llvm")[0]
    np.testing.assert_array_equal(g, [1.0, 2.0, 0.0])


def test_int64_array_arithmetic_by_numpy():
    def f(a, b):
        return a * b + a // 2 - b % 3
    a, b = np.arange(6).reshape(2, 3), np.arange(1, 4)
    np.testing.assert_array_equal(jit.jit(f)(a, b), f(a, b))


def net(params, x):
    h = x @ params["W"] + params["b"]
    return np.sum(h * h * params["scale"]) + params["c"] ** 2


def test_dict_argument_gradient_is_a_dict():
    p = {"W": RNG.normal(size=(3, 2)), "b": RNG.normal(size=2), "scale": 1.5, "c": 0.3}
    x = RNG.normal(size=(4, 3))
    assert check_llvm(net, p, x) == "ok"
    g = gradient(net, p, x, backend="llvm")[0]
    assert list(g) == list(p) and g["W"].shape == (3, 2) and isinstance(g["c"], float)
    ref = gradient(net, p, x, backend="interp")[0]
    for k in p:
        np.testing.assert_allclose(g[k], ref[k], rtol=1e-12)
    check_gradient(net, p, x)


def test_dict_keys_are_part_of_the_signature():
    def pick(d):
        return d["a"] * 2.0
    f = jit.jit(pick)
    assert f({"a": 1.5}) == 3.0 and f({"a": 2.0, "b": 1.0}) == 4.0
    with pytest.raises(jit.TypingError, match=r"'a' is not among the keys \('b',\)"):
        f({"b": 1.0})
    with pytest.raises(KeyError):           # where the JIT refuses, the interpreter runs
        gradient(pick, {"b": 1.0})


def test_list_displays():
    def f(x):
        pair = [x, 2.0 * x]
        return np.sum(np.concatenate(pair) * np.stack(pair)[1, 0]) + np.sum(
            np.transpose(np.ones((2, 3)), [1, 0]) @ x[:2])
    x = RNG.normal(size=3)
    assert check_llvm(f, x) == "ok"
    check_gradient(f, x)


def recurrent(W, xs, h0):
    """Lists built in compiled code: a display grown by appends, a comprehension, and
    the reads numpy and the loops make of them."""
    h = h0
    outs = [h0 * 1.0]
    for x in xs:
        h = np.tanh(W @ h + x)
        outs.append(h)
    energies = [np.sum(o * o) for o in outs]
    total = 0.0
    for e in energies:
        total += e
    return (np.sum(np.stack(outs) ** 2) + total + energies[-1] + len(outs)
            + np.sum(outs[1] * outs[-1]))


def test_lists_built_in_compiled_code():
    W, xs, h0 = RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=(6, 3)), RNG.normal(size=3)
    assert check_llvm(recurrent, W, xs, h0) == "ok"
    check_gradient(recurrent, W, xs, h0)


def test_a_list_grows_past_its_first_capacity_and_keeps_old_values():
    def f(n, x):
        acc = []
        firsts = []
        for i in range(n):
            acc.append(x * i)
            firsts.append(acc[0])
        return np.sum(np.array(acc)) + np.sum(np.array(firsts)) + len(acc)
    assert jit.jit(f)(37, 1.5) == f(37, 1.5)
    assert gradient(f, 0, 1.5, backend="llvm")[1] == gradient(f, 0, 1.5, backend="interp")[1]
    assert gradient(f, 37, 1.5, backend="llvm")[1] == sum(range(37))


def test_an_empty_built_list():
    def f(n, x):
        acc = []
        for i in range(n):
            acc.append(x)
        return len(acc) + (np.sum(np.array(acc)) if len(acc) else 0.0)
    assert jit.jit(f)(0, 2.0) == 0.0 and jit.jit(f)(3, 2.0) == 9.0


def logsumexp(a, axis=None, keepdims=False):
    peak = np.max(a, axis=axis, keepdims=True)
    out = peak + np.log(np.sum(np.exp(a - peak), axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)


def uses_logsumexp(x):
    """A flag passed as a constant decides the callee's branch at compile time, and
    squeezing a whole reduction kept with its axes has a known rank."""
    return logsumexp(x) + np.sum(logsumexp(x, axis=1)) + np.sum(logsumexp(x, 0, True))


def test_constant_flags_and_whole_reductions_squeezed():
    x = RNG.normal(size=(3, 4))
    assert check_llvm(uses_logsumexp, x) == "ok"
    check_gradient(uses_logsumexp, x)
    # a 3-D array's exp is a native loop calling libm (numpy's SIMD exp can differ in
    # the last bit), so this one compares to a tolerance
    def of_3d(a):
        return np.sum(logsumexp(a, axis=2))
    assert jit.jit(of_3d)(X3) == pytest.approx(of_3d(X3), rel=1e-14)

    def unknown_rank(x):
        return np.squeeze(x)
    with pytest.raises(jit.TypingError, match="rank depends on the shape"):
        jit.jit(unknown_rank)(x)


def flatten(params):
    return np.concatenate([np.ravel(a) for pair in params for a in pair])


def regularised(params, x):
    """A loop over a (W, b) tuple, whose entries differ in rank, runs unrolled."""
    out = x
    for W, b in params:
        out = np.tanh(out @ W + b)
    sizes = 0
    for a in params[0]:
        sizes += a.size
    return np.sum(out) + 0.1 * np.sum(flatten(params) ** 2) + sizes


def test_loops_over_tuples_of_different_ranks_are_unrolled():
    params = [(RNG.normal(size=(3, 2)), RNG.normal(size=2)),
              (RNG.normal(size=(2, 2)), RNG.normal(size=2))]
    x = RNG.normal(size=(4, 3))
    assert check_llvm(regularised, params, x) == "ok"
    check_gradient(regularised, params, x)
    np.testing.assert_array_equal(jit.jit(flatten)(params), flatten(params))
