"""Fuzz seed 91000273220 (fuzz_zygopy_np): a compiled gradient of the wrong shape.

The cotangent of an array that only one branch reads reaches the code after the join as
the None cotangent, a NULL array of length 0.  The compiled `unbcast` of a 1-D array took
its length 0 for a broadcast from length 1 and summed it into a fresh array of length 1,
so the argument's gradient came back with shape (1,) and `gradient` raised "cannot
reshape array of size 1 into shape (3,)".  The None cotangent now stays None there.
"""
from __future__ import annotations

import numpy as np
import pytest

import adjoint


def written_then_read_by_one_branch(v, u, c):
    t1 = u * 1.0
    t1 += 1.0
    if c > 0:
        t5 = v[0:1] * 1.0
    else:
        t5 = t1[0:1]
    return np.sum(t5)


def fuzz_program(A, v, u, s):       # the fuzzer's program, as it drew it
    if np.abs(np.min(s)) > 0.71:
        t1 = u * 1.0
    else:
        t1 = u * 1.0
    t1 += np.min((A / (1.5 + A * A)))
    t2 = float(np.sum(np.abs(u)))
    acc3 = np.zeros(4)
    for row4 in A:
        acc3 += row4
    if t2 > 0.31:
        t5 = np.min((v - v), axis=0, keepdims=True)[0:1] * 1.0
    else:
        t5 = t1[np.array([0])] * 1.0
    return np.sum(acc3) + 0.1 * np.sum(t5)


def central(f, args, k, h=1e-6):
    x = np.array(args[k], dtype=float)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += h
        lo[i] -= h
        out[i] = (f(*args[:k], hi, *args[k + 1:]) - f(*args[:k], lo, *args[k + 1:])) / (2 * h)
    return out


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("c", [1.0, -1.0])
def test_branch_read_cotangent_keeps_its_shape(backend, c):
    v, u = np.arange(3.0), np.array([0.5, -1.0, 2.0])
    g = adjoint.gradient(written_then_read_by_one_branch, v, u, c, backend=backend)
    for k in (0, 1):
        assert g[k].shape == (3,)
        np.testing.assert_allclose(g[k], central(written_then_read_by_one_branch, (v, u, c), k),
                                   atol=1e-8)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_fuzz_program_gradient(backend):
    rng = np.random.default_rng(1)
    args = (rng.normal(size=(3, 4)), rng.normal(size=3), rng.normal(size=3),
            rng.normal(size=3))
    y, back = adjoint.pullback(fuzz_program, *args, backend=backend)
    assert y == pytest.approx(fuzz_program(*args))
    grads = back(1.0)
    for k in range(4):
        assert grads[k].shape == args[k].shape
        np.testing.assert_allclose(grads[k], central(fuzz_program, args, k), atol=1e-6)
