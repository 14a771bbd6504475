"""The benchmark suite of the "numpy programs" issue: whole-array numpy code as a user
writes it (a list of (W, b) layers, `@`, keepdims reductions, `np.roll`), run with the
common runner:

    python -m bench.run --suite bench.numpy_programs

Every system runs these very functions: CPython calls them on numpy arrays (numpy
eager), zygopy lowers them from their bytecode, the peers get them through
`bench.peers.rebind` with `np` bound to their own numpy (`jax.numpy`,
`autograd.numpy`); JAX jit jits them as written (there is no rewrite of these in
`bench/peers/jax_rewrites.py`: straight-line array code is what `jax.jit` is for; the
integer `steps` of `diffusion_roll` is static, so its loop is unrolled).

The gradient of `mlp_xent` is with respect to `params`, a list of (W, b) tuples: every
system returns that structure, and the cross-check compares its leaves in order
(`bench.workloads.leaves`).  No workload is a `loop` one in the sense of the main
suite (the 100x target over the eager peers is for element-by-element loops; here every
operation is a whole-array one).
"""
from __future__ import annotations

from itertools import pairwise

import numpy as np

from bench.workloads import SEED, Workload


def mlp_xent(params, x, y):
    for W, b in params[:-1]:
        x = np.tanh(x @ W + b)
    W, b = params[-1]
    z = x @ W + b
    m = np.max(z, axis=1, keepdims=True)
    lse = m + np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))
    return -np.sum((z - lse) * y) / x.shape[0]


def logreg_l2(w, X, t, lam):
    z = X @ w
    return np.sum(np.log(1.0 + np.exp(-z * (2.0 * t - 1.0)))) / X.shape[0] + lam * np.sum(w * w)


def diffusion_roll(u, nu, steps):
    for _ in range(steps):
        u = u + nu * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
    return np.sum(u * u)


MLP_SIZES = (64, 128, 10)  # inputs, hidden, classes: one tanh layer, then the softmax layer


def _mlp_args(batch: int):
    def make() -> tuple:
        rng = np.random.default_rng(SEED)
        params = [(rng.standard_normal((m, n)) / np.sqrt(m), 0.1 * rng.standard_normal(n))
                  for m, n in pairwise(MLP_SIZES)]
        x = rng.standard_normal((batch, MLP_SIZES[0]))
        y = np.eye(MLP_SIZES[-1])[rng.integers(0, MLP_SIZES[-1], batch)]
        return params, x, y
    return make


def _logreg_args() -> tuple:
    rng = np.random.default_rng(SEED)
    X = rng.standard_normal((1000, 20))
    w_true = rng.standard_normal(20)
    t = (X @ w_true + 0.5 * rng.standard_normal(1000) > 0.0).astype(np.float64)
    return 0.1 * rng.standard_normal(20), X, t, 0.01


def _diffusion_args() -> tuple:
    rng = np.random.default_rng(SEED)
    return rng.standard_normal(1000), 0.2, 100


WORKLOADS = (
    Workload("mlp_xent_32", mlp_xent, _mlp_args(32), (0,), False,
             "tanh MLP 64-128-10, softmax cross-entropy, batch 32; d/d(list of (W, b))"),
    Workload("mlp_xent_1024", mlp_xent, _mlp_args(1024), (0,), False,
             "the same at batch 1024"),
    Workload("logreg_l2", logreg_l2, _logreg_args, (0,), False,
             "logistic regression with an L2 penalty, X 1000 x 20; d/dw"),
    Workload("diffusion_roll", diffusion_roll, _diffusion_args, (0,), False,
             "1-D diffusion stencil with np.roll, 100 steps on 1000 points; d/du0"),
)

# Ratios this suite adds to the main ones (names from bench.report.EXTRA_RATIOS).
EXTRA_RATIOS = ("zy/CPython",)
