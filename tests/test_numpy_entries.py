"""One small program per numpy entry that compiled code calls through numpy itself
(`jit.library.numpy_calls`, the registry's "host call" impls): each compiles
(`check_llvm` == "ok": value and gradients agree with the interpreter) and its
interpreter gradient matches central differences.  Inputs include a strided view, a
broadcast operand and a 0-size array where the function takes them."""
from __future__ import annotations

import numpy as np
import pytest

from tests.adjoint_check import check_gradient
from tests.jit_grad_check import check_llvm

RNG = np.random.default_rng(21)
M = RNG.normal(size=(3, 4))
S = RNG.uniform(1.0, 2.0, size=(3, 3)) + 3.0 * np.eye(3)    # well conditioned
V = RNG.normal(size=4)
T3 = RNG.normal(size=(2, 3, 4))


def w(y):
    """A fixed weighting that makes a scalar of any array (and of a number)."""
    a = np.asarray(y, dtype=float)
    return np.sum(a * np.linspace(0.5, 1.5, a.size).reshape(a.shape))


CASES = {
    "var_std": (lambda m: w(np.var(m, axis=0)) + w(np.std(m, axis=1, ddof=1)) + np.var(m),
                (M,)),
    "cumprod": (lambda v: w(np.cumprod(v)) + w(np.cumprod(M * v, axis=1)), (V,)),
    "fmod_fmax_fmin": (lambda m: w(np.fmod(m, 0.7)) + w(np.fmax(m, 0.1)) + w(np.fmin(m, V)),
                       (M,)),
    "logaddexp2": (lambda m: w(np.logaddexp2(m, 0.3)), (M,)),
    "real_imag_conj": (lambda m: w(np.real(m)) + w(np.conjugate(m)) + w(np.imag(m) + m)
                       + w(np.real_if_close(m)), (M,)),
    "angle": (lambda m: w(np.angle(m) * m), (M,)),
    "sort_partition": (lambda v: w(np.sort(v)) + w(np.partition(v, 1)) + w(np.sort(M, 0)),
                       (V,)),
    "diff": (lambda m: w(np.diff(m)) + w(np.diff(m, n=2, axis=0)), (M,)),
    "atleast": (lambda v: w(np.atleast_1d(v)) + w(np.atleast_2d(v)) + w(np.atleast_3d(v)),
                (V,)),
    "stacks": (lambda m: w(np.hstack((m, m))) + w(np.vstack((m, m[:1]))) + w(np.column_stack(
        (m[0], m[1]))) + w(np.stack((m, m), axis=2)) + w(np.concatenate((m, m), axis=None)),
               (M,)),
    "splits": (lambda m: w(np.hsplit(m, 2)[1]) + w(np.vsplit(m, [1])[0])
               + w(np.array_split(m, 2, axis=1)[0]) + w(np.dsplit(T3 * m[0, 0], 2)[1]), (M,)),
    "tile_repeat": (lambda v: w(np.tile(v, (2, 1))) + w(np.repeat(v, 2)) + w(v.repeat(3)), (V,)),
    "pad": (lambda m: w(np.pad(m, ((1, 0), (2, 1)))), (M,)),
    "flips": (lambda m: w(np.flip(m)) + w(np.fliplr(m)) + w(np.flipud(m)) + w(np.rot90(m)),
              (M,)),
    "axes": (lambda t: w(np.swapaxes(t, 0, 2)) + w(np.moveaxis(t, 0, -1)) + w(np.rollaxis(t, 2))
             + w(t.swapaxes(1, 2)) + w(np.transpose(t, (1, 0, 2))), (T3,)),
    "expand_squeeze": (lambda m: w(np.expand_dims(m, 1)) + w(np.squeeze(m[:1], axis=0))
                       + w(np.shape(m)[0] * m), (M,)),
    "gradient": (lambda m: w(np.gradient(m[0])) + w(np.gradient(m, axis=1))
                 + w(np.gradient(m)[0]), (M,)),
    "diag_tri": (lambda s: w(np.diag(s)) + w(np.diag(s[0], k=1)) + w(np.diagflat(s[0]))
                 + w(np.tril(s, -1)) + w(np.triu(s)) + np.trace(s) + s.trace(), (S,)),
    "products": (lambda m: w(np.kron(m[:2, :2], m[1:, 2:])) + w(np.inner(m, m))
                 + w(np.tensordot(m, m.T, axes=1)) + w(np.einsum("ij,kj->ik", m, m))
                 + w(np.einsum(m, [0, 1], [1, 0])) + w(np.cross(m[:, :3], m[:, 1:])), (M,)),
    "linalg": (lambda s: np.linalg.det(s) + np.linalg.slogdet(s)[1] + w(np.linalg.inv(s))
               + w(np.linalg.solve(s, s[0])) + w(np.linalg.cholesky(s @ s.T))
               + np.linalg.norm(s), (S,)),
    "where_select": (lambda m: w(np.where(m > 0, m, 0.1 * m)) + w(np.select(
        [m > 1, m < -1], [m, -m], 0.5 * m)), (M,)),
    "builders": (lambda v: w(np.linspace(0.0, 1.0, 4) * v) + w(np.full((2, 4), 2.0) * v)
                 + w(np.eye(4) @ v) + w(np.identity(4) @ v) + w(np.zeros_like(v) + v)
                 + w(np.ones_like(M) * v) + w(np.full_like(v, 3.0) * v) + w(np.empty_like(v) * 0
                                                                            + v)
                 + w(np.array([v, v])) + w(np.asarray(v)) + w(np.arange(0.5, 4.0) * v), (V,)),
    "fill_values": (lambda c: w(np.full((2, 3), c)) + w(np.full_like(M, c) * M), (1.5,)),
    "operators": (lambda m: w(m % 0.6) + w(m // 0.6 * m) + w((m > 0) & (m < 1)) * 1.0
                  + w(T3 * m[0]) + w(T3 @ m.T), (M,)),
    "reductions_3d": (lambda t: np.sum(t) + w(np.mean(t, axis=1)) + w(np.max(t, axis=(0, 2)))
                      + w(np.min(t, axis=2, keepdims=True)) + w(np.prod(t[0], axis=0)), (T3,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_numpy_entry(name):
    f, args = CASES[name]
    f.__name__ = f"entry_{name}"
    assert check_llvm(f, *args) == "ok"
    check_gradient(f, *args)


@pytest.mark.parametrize("name", ["var_std", "stacks", "flips", "diag_tri", "products"])
def test_numpy_entry_on_a_strided_view(name):
    f, args = CASES[name]
    f.__name__ = f"entry_{name}_strided"
    strided = tuple(np.asfortranarray(a)[..., ::-1] if isinstance(a, np.ndarray) and a.ndim > 1
                    else a for a in args)
    assert check_llvm(f, *strided) == "ok"


def test_zero_size_operands():
    def f(m):
        return (np.sum(np.concatenate((m, m))) + np.sum(np.var(np.ones((2, 3)), axis=0))
                + np.sum(np.tile(m, 2)) + np.sum(np.sort(m, axis=0)) + np.sum(np.roll(m, 1)))
    assert check_llvm(f, np.zeros((0, 3))) == "ok"
