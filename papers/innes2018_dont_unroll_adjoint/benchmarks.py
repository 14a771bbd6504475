"""The benchmark functions of Innes (2018), table 1, rebuilt as plain Python.

The paper times five small programs in Julia: a scalar expression (SinCos), a loop
(Loop), LogSumExp, the loss of a logistic regression and a 2-layer MLP.  Here each is
written the way a zygopy user writes it: the `math` module, loops over numpy arrays
with indexing.  `torch_versions` gives the idiomatic vectorised PyTorch code for the
same computations.  `WORKLOADS` lets `python -m bench.run --suite
papers.innes2018_dont_unroll_adjoint.benchmarks` run them with every peer.
"""
from __future__ import annotations

import math

import numpy as np

SEED = 20181017
LOOP_N = 1000
LSE_N = 1000
LR_SAMPLES, LR_FEATURES = 100, 10
MLP_IN, MLP_HIDDEN = 10, 20


def sincos(x):
    return math.sin(math.cos(x))


def loop(x, n):
    r = 1.0
    while n > 0:
        n -= 1
        r *= x
    return r


def logsumexp(xs):
    m = xs[0]
    for i in range(1, len(xs)):
        if xs[i] > m:  # noqa: PLR1730  (a branch in the loop, as in the paper's LogSumExp)
            m = xs[i]
    s = 0.0
    for i in range(len(xs)):
        s += math.exp(xs[i] - m)
    return m + math.log(s)


def logistic_regression(w, b, X, y):
    loss = 0.0
    for i in range(X.shape[0]):
        z = b
        for j in range(X.shape[1]):
            z += X[i, j] * w[j]
        loss += math.log(1.0 + math.exp(-y[i] * z))
    return loss / X.shape[0]


def mlp(W1, b1, W2, b2, x):
    out = b2
    for i in range(W1.shape[0]):
        h = b1[i]
        for j in range(W1.shape[1]):
            h += W1[i, j] * x[j]
        out += W2[i] * math.tanh(h)
    return out * out


def _rng():
    return np.random.default_rng(SEED)


def sincos_args():
    return (1.0,)


def loop_args():
    return (1.0005, LOOP_N)


def logsumexp_args():
    return (3.0 * _rng().standard_normal(LSE_N),)


def logistic_regression_args():
    r = _rng()
    X = r.standard_normal((LR_SAMPLES, LR_FEATURES))
    y = np.where(r.standard_normal(LR_SAMPLES) > 0, 1.0, -1.0)
    return (0.1 * r.standard_normal(LR_FEATURES), 0.05, X, y)


def mlp_args():
    r = _rng()
    return (0.3 * r.standard_normal((MLP_HIDDEN, MLP_IN)), 0.1 * r.standard_normal(MLP_HIDDEN),
            0.3 * r.standard_normal(MLP_HIDDEN), 0.2, r.standard_normal(MLP_IN))


# -- the same computations in idiomatic PyTorch (vectorised), float64 -----------------

def torch_versions(torch) -> dict:
    """name -> function of tensors, for PyTorch's gradient timings."""
    def t_sincos(x):
        return torch.sin(torch.cos(x))

    def t_loop(x, n):
        r = torch.ones((), dtype=torch.float64)
        for _ in range(n):
            r = r * x
        return r

    def t_logsumexp(xs):
        return torch.logsumexp(xs, 0)

    def t_logistic_regression(w, b, X, y):
        return torch.mean(torch.log1p(torch.exp(-y * (X @ w + b))))

    def t_mlp(W1, b1, W2, b2, x):
        out = W2 @ torch.tanh(W1 @ x + b1) + b2
        return out * out
    return {"sincos": t_sincos, "loop": t_loop, "logsumexp": t_logsumexp,
            "logistic_regression": t_logistic_regression, "mlp": t_mlp}


def _workloads() -> tuple:
    try:
        from bench.workloads import Workload
    except ImportError:
        return ()
    return (
        Workload("sincos", sincos, sincos_args, (0,), False, "sin(cos(x))"),
        Workload("loop", loop, loop_args, (0,), True, f"x**n by a while loop, n = {LOOP_N}"),
        Workload("logsumexp", logsumexp, logsumexp_args, (0,), True,
                 f"max loop, then exp-sum loop, {LSE_N} elements"),
        Workload("logistic_regression", logistic_regression, logistic_regression_args,
                 (0, 1), True, f"mean logistic loss, {LR_SAMPLES} x {LR_FEATURES}; d/dw, d/db"),
        Workload("mlp", mlp, mlp_args, (0, 1, 2, 3), True,
                 f"squared output of a {MLP_IN}-{MLP_HIDDEN}-1 tanh MLP; d/d(parameters)"),
    )


WORKLOADS = _workloads()
