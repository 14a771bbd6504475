"""Smoke tests of bench/: the workloads compute what their numpy references compute,
the cross-check accepts exact gradients and rejects wrong ones, the runner produces a
table.  No timing is asserted anywhere; peers are optional (skipped when missing)."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from bench import verify, workloads
from bench.workloads import WORKLOADS, get

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _norm_cdf(z):
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _lotka_volterra(a, b, c, d, n):
    state = np.array([10.0, 5.0])
    for _ in range(n):
        x, y = state
        state = state + 0.01 * np.array([a * x - b * x * y, c * x * y - d * y])
    return float(state.sum())


def _black_scholes(s, k, t, r, v):
    d1 = (np.log(s / k) + (r + v * v / 2) * t) / (v * np.sqrt(t))
    d2 = d1 - v * np.sqrt(t)
    return s * _norm_cdf(d1) - k * np.exp(-r * t) * _norm_cdf(d2)


def _logsumexp(xs):
    m = xs.max()
    return m + np.log(np.exp(xs - m).sum())


REFERENCES = {
    "pow_loop": lambda x, n: x ** n,
    "pow_rec": lambda x, n: x ** n,
    "leaky_sum": lambda xs: np.where(xs > 0, xs, 0.01 * xs).sum(),
    "horner": lambda x, c: np.polyval(c, x),
    "logsumexp": _logsumexp,
    "rosenbrock": lambda v: (100 * (v[1:] - v[:-1] ** 2) ** 2 + (1 - v[:-1]) ** 2).sum(),
    "lotka_volterra": _lotka_volterra,
    "black_scholes": _black_scholes,
}


def _rosenbrock_grad(v):
    g = np.zeros_like(v)
    inner = v[1:] - v[:-1] ** 2
    g[:-1] += -400 * v[:-1] * inner - 2 * (1 - v[:-1])
    g[1:] += 200 * inner
    return g


def _horner_grad(x, c):
    powers = x ** np.arange(len(c) - 1, -1, -1)
    return [np.polyval(np.polyder(c), x), powers]


GRADIENTS = {
    "pow_loop": lambda x, n: [n * x ** (n - 1)],
    "leaky_sum": lambda xs: [np.where(xs > 0, 1.0, 0.01)],
    "horner": _horner_grad,
    "logsumexp": lambda xs: [np.exp(xs - _logsumexp(xs))],
    "rosenbrock": lambda v: [_rosenbrock_grad(v)],
}


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.name)
def test_workload_matches_numpy_reference(w):
    got = w.func(*w.args())
    assert isinstance(got, float)
    assert got == pytest.approx(REFERENCES[w.name](*w.args()), rel=1e-10)


def test_inputs_are_seeded_and_fresh():
    a, b = get("rosenbrock").args()[0], get("rosenbrock").args()[0]
    assert a is not b and np.array_equal(a, b)
    assert set(REFERENCES) == set(workloads.BY_NAME)


@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_cross_check_accepts_exact_and_rejects_wrong_gradients(name):
    w = get(name)
    exact = GRADIENTS[name](*w.args())
    findings, _ = verify.check_workload(w, {"ref": w.func(*w.args())}, {"ref": exact})
    assert findings == []
    wrong = [g * 1.001 for g in exact]
    findings, _ = verify.check_workload(w, {}, {"a": exact, "b": exact, "bad": wrong})
    assert [f.system for f in findings] == ["bad", "bad"]


def test_runner_prints_a_table_without_peers():
    cmd = [sys.executable, "-m", "bench.run", "--quick", "--quiet", "--systems", "cpython",
           "--only", "pow_loop,black_scholes", "--tape-n", "0", "--no-pin"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pow_loop" in out.stdout and "black_scholes" in out.stdout
    assert "Cross-check: all values and gradients agree." in out.stdout


def test_numba_compiles_the_same_code():
    numba = pytest.importorskip("numba")
    from bench.peers import rebind
    ns = rebind(workloads, wrap=numba.njit)
    for name in ("pow_rec", "black_scholes"):
        w = get(name)
        assert getattr(ns, name)(*w.args()) == pytest.approx(w.func(*w.args()), rel=1e-12)
