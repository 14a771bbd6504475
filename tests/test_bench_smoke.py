"""Smoke tests of bench/: the workloads compute what their numpy references compute,
the cross-check accepts exact gradients and rejects wrong ones, the runner produces a
table.  No timing is asserted anywhere; peers are optional (skipped when missing)."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from bench import numpy_programs, report, verify, workloads
from bench.systems import grads_at
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


# -- the "numpy programs" suite (bench/numpy_programs.py): structured arguments ----------



def _mlp_reference(params, x, y):
    (w1, b1), (w2, b2) = params
    z = np.tanh(x @ w1 + b1) @ w2 + b2
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -(logp * y).sum() / len(x)


def _mlp_grad(params, x, y):
    (w1, b1), (w2, b2) = params
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    p = np.exp(z - z.max(axis=1, keepdims=True))
    dz = (p / p.sum(axis=1, keepdims=True) - y) / len(x)  # rows of y sum to 1
    da = (dz @ w2.T) * (1.0 - h * h)
    return [[(x.T @ da, da.sum(axis=0)), (h.T @ dz, dz.sum(axis=0))]]


def _diffusion_matrix(n, nu):
    eye = np.eye(n)
    return eye + nu * (np.roll(eye, 1, axis=0) - 2.0 * eye + np.roll(eye, -1, axis=0))


def _diffusion_reference(u, nu, steps):
    v = np.linalg.matrix_power(_diffusion_matrix(len(u), nu), steps) @ u
    return v @ v


def _diffusion_grad(u, nu, steps):  # the stencil matrix is symmetric
    return [2.0 * np.linalg.matrix_power(_diffusion_matrix(len(u), nu), 2 * steps) @ u]


def _logreg_grad(w, X, t, lam):
    s = 2.0 * t - 1.0
    return [-(X.T @ (s / (1.0 + np.exp(s * (X @ w))))) / len(X) + 2.0 * lam * w]


NUMPY_REFERENCES = {
    "mlp_xent_32": _mlp_reference,
    "mlp_xent_1024": _mlp_reference,
    "logreg_l2": lambda w, X, t, lam: np.logaddexp(0.0, -(2 * t - 1) * (X @ w)).mean()
    + lam * w @ w,
    "diffusion_roll": _diffusion_reference,
}
NUMPY_GRADIENTS = {"mlp_xent_32": _mlp_grad, "mlp_xent_1024": _mlp_grad,
                   "logreg_l2": _logreg_grad, "diffusion_roll": _diffusion_grad}
NUMPY_SUITE = workloads.load_suite("bench.numpy_programs")


@pytest.mark.parametrize("name", sorted(NUMPY_SUITE))
def test_numpy_program_matches_reference(name):
    w = NUMPY_SUITE[name]
    assert float(w.func(*w.args())) == pytest.approx(NUMPY_REFERENCES[name](*w.args()),
                                                     rel=1e-10)


@pytest.mark.parametrize("name", sorted(NUMPY_SUITE))
def test_cross_check_takes_structured_gradients(name):
    """A gradient shaped like its argument (a list of (W, b) tuples) is flattened leaf
    by leaf, and the central difference moves every leaf."""
    w = NUMPY_SUITE[name]
    exact = grads_at(NUMPY_GRADIENTS[name](*w.args()), (0,))
    findings, _ = verify.check_workload(w, {"ref": float(w.func(*w.args()))}, {"ref": exact})
    assert findings == []
    wrong = [g.copy() for g in exact]
    wrong[0][-1] += 1e-3 * np.max(np.abs(wrong[0]))  # one entry of the last leaf
    findings, _ = verify.check_workload(w, {}, {"a": exact, "b": exact, "bad": wrong})
    assert {f.system for f in findings} == {"bad"}


def test_leaves_and_rebuild_keep_the_structure():
    params = numpy_programs.WORKLOADS[0].args()[0]
    flat = workloads.leaves(params)
    assert [x.shape for x in flat] == [(64, 128), (128,), (128, 10), (10,)]
    back = workloads.rebuild(params, [2 * x for x in flat])
    assert isinstance(back, list) and all(isinstance(p, tuple) for p in back)
    assert np.array_equal(back[1][0], 2 * params[1][0])
    assert workloads.rebuild({"b": 1.0, "a": (2.0,)}, [5.0, 6.0]) == {"b": 6.0, "a": (5.0,)}


def test_autograd_runs_the_numpy_programs_with_its_numpy():
    from bench.peers.autograd_peer import Autograd
    from bench.systems import Unavailable
    system = Autograd()
    try:
        system.setup()
    except Unavailable as e:
        pytest.skip(str(e))
    for name in ("mlp_xent_32", "diffusion_roll"):
        w = NUMPY_SUITE[name]
        task = system.tasks(w)[0]
        _, grads = task.result(task.run())
        exact = grads_at(NUMPY_GRADIENTS[name](*w.args()), (0,))[0]
        np.testing.assert_allclose(grads[0], exact, rtol=1e-9, atol=1e-12)


def test_a_cell_with_a_note_gets_a_footnote():
    res = report.Results(systems=["cpython", "zygopy"], workloads=["w"])
    res.cells[("cpython", "w", "primal")] = {"ok": True, "median_ns": 2000.0, "first_ns": 2000.0}
    res.cells[("zygopy", "w", "primal")] = {"ok": True, "median_ns": 1000.0, "first_ns": 1000.0}
    res.cells[("zygopy", "w", "grad")] = {"ok": True, "median_ns": 5000.0, "first_ns": 9000.0,
                                          "note": "ran in the interpreter"}
    text = report.render(res, {"w": False}, extra=("zy/CPython",))
    assert "5.00 us[1]" in text and "[1] ran in the interpreter" in text
    assert "zy/CPython" in text and "0.50x" in text


# -- the hand-written C adjoint (bench/peers/c_adjoint.c; needs gcc) ---------------------

C_SMALL_ARGS = {
    "pow_loop": (1.3, 7),
    "pow_rec": (1.3, 7),
    "leaky_sum": (np.array([0.5, -2.0, 3.0, -0.25, 1.5]),),
    "horner": (0.7, np.array([1.0, -2.0, 0.5, 3.0])),
    "logsumexp": (np.array([0.3, 2.0, -1.0, 2.5, 1.0]),),
    "rosenbrock": (np.array([0.5, -1.2, 1.0, 0.3]),),
    "lotka_volterra": (1.1, 0.4, 0.1, 0.4, 20),
    "black_scholes": (100.0, 95.0, 0.75, 0.03, 0.25),
}


@pytest.fixture(scope="module")
def c_adjoint_lib():
    from bench.peers import c_adjoint
    from bench.systems import Unavailable
    try:
        return c_adjoint.load()
    except Unavailable as e:
        pytest.skip(str(e))


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.name)
def test_c_adjoint_values_and_gradients_on_small_inputs(w, c_adjoint_lib):
    """CPython's value to 1e-12 and the directional derivative against a central
    difference (bench.verify), and the exact gradient where the tests have one."""
    from dataclasses import replace

    from bench.peers.c_adjoint import evaluate
    small = replace(w, make_args=lambda: C_SMALL_ARGS[w.name])
    value, grads = evaluate(c_adjoint_lib, w.name, small.args())
    findings, _ = verify.check_workload(small, {"c": value}, {"c": grads})
    assert findings == []
    if w.name in GRADIENTS:
        for got, exact in zip(grads, GRADIENTS[w.name](*small.args())):
            np.testing.assert_allclose(got, exact, rtol=1e-12)


def test_c_adjoint_task_times_a_batch_and_reports_the_gradients(c_adjoint_lib):
    from bench.peers.c_adjoint import CAdjoint
    system = CAdjoint()
    system.setup()
    w = get("black_scholes")
    [task] = system.tasks(w)
    assert task.batch > 1  # ~55 ns an evaluation: many per ctypes call
    value, grads = task.result(task.run())
    assert value == w.func(*w.args()) and len(grads) == 5
    [missing] = system.tasks(NUMPY_SUITE["logreg_l2"])
    assert missing.run is None and "no hand-written C adjoint" in missing.missing


def test_report_has_the_c_adjoint_ratio_and_the_latency_table():
    res = report.Results(systems=["zygopy", "c-adjoint"], workloads=["w"])
    res.cells[("zygopy", "w", "grad")] = {"ok": True, "median_ns": 3000.0, "first_ns": 9e6}
    res.cells[("c-adjoint", "w", "grad")] = {"ok": True, "median_ns": 1000.0, "first_ns": 1e3}
    text = report.render(res, {"w": True})
    assert "C adjoint" in text and "3.00x!" in text and "zy grad/C adj <= 2 (goal 1.5)" in text
    sample = {"steps": {"import adjoint": 1e8, "import jit": 2e8, "first gradient": 5e7},
              "numpy_ns": 9e7, "warnings": []}
    numba = {"steps": {"import numba": 1e8, "first njit call": 1e8}, "numpy_ns": 9e7}
    warm = {"steps": {"cached: import adjoint": 1e8, "cached: import jit": 2e8,
                      "first gradient, cache warm": 5e6}, "numpy_ns": 9e7}
    lat = {"runs": 1, "clock": "wall", "probes": {"zygopy": {"samples": [sample], "error": ""},
                                                  "numba": {"samples": [numba], "error": ""},
                                                  "zygopy-cached": {"samples": [warm],
                                                                    "error": ""}}}
    text = report.latency_text(lat)
    assert "first `adjoint.gradient" in text and "Numba's first call: 0.50x" in text
    assert "disk cache warm: first" in text and "takes 5.00 ms after import" in text


def test_forward_mode_bench_table_and_cross_check():
    """bench.forward_mode: its loops are the numpy ones, its table has a row per task,
    and its cross-check flags a result that differs between the systems."""
    from bench import forward_mode as fm
    d = fm.inputs()
    assert fm.rosenbrock(d["x"]) == pytest.approx(np.sum(
        100.0 * (d["x"][1:] - d["x"][:-1] ** 2) ** 2 + (1.0 - d["x"][:-1]) ** 2))
    row = {"median_ns": 1000.0, "checksum": 1.0}
    results = {"zygopy": {"rosenbrock: hvp": row, "rosenbrock: gradient": row},
               "jax": {"rosenbrock: hvp": {**row, "checksum": 2.0}}}
    text = fm.table(results)
    assert "| rosenbrock: hvp | 1.00 us | 1.00 us | 1.00x |" in text
    assert "hvp / gradient on rosenbrock: 1.00x" in text
    assert fm.check(results) == ["rosenbrock: hvp: zygopy 1.0, jax 2.0"]


def test_checkpointing_bench_probe_and_table():
    """bench.checkpointing: both modes give the same gradient bits, and the table has
    a row per workload with the time ratio."""
    from bench import checkpointing as ck
    results = {name: {mode: ck.probe(name, mode, 20_000, 1) for mode in ck.MODES}
               for name in ck.WORKLOADS}
    for modes in results.values():
        assert modes["tape"]["gradient"] == modes["checkpoint=64"]["gradient"]
        assert modes["tape"]["seconds"] > 0
    text = ck.table(results, 20_000)
    assert text.count("| yes |") == 2 and "pow_loop" in text and "euler_lv" in text


def test_batching_bench_probe_and_table():
    """bench.batching: the three systems give the same bits, and the table reports
    the speedup over one thread."""
    from bench import batching as bt
    results = {name: {s: bt.probe(name, s, 200, quick=True)
                      for s in ("threads=1", "threads=all", "python loop")}
               for name in bt.WORKLOADS}
    for r in results.values():
        assert len({x["digest"] for x in r.values()}) == 1
    text = bt.table(results, 200)
    assert text.count("| yes |") == 2 and "speedup over one thread" in text


def test_autograd_upstream_reads_a_checkout_and_checks_one_example():
    """bench.autograd_upstream on autograd's rosenbrock.py, read from the mirror (or the
    checkout in ZYGOPY_AUTOGRAD_CHECKOUT); skipped without one."""
    from bench.autograd_fixed_points import MIRROR
    checkout = os.environ.get("ZYGOPY_AUTOGRAD_CHECKOUT", MIRROR)
    if not os.path.exists(checkout):
        pytest.skip("no autograd checkout")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "bench.autograd_upstream", checkout,
                           "--only", "rosenbrock"], capture_output=True, text=True,
                          cwd=root, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    row = [ln for ln in done.stdout.splitlines() if ln.startswith("| rosenbrock |")]
    assert row and row[0].split("|")[2].strip() == "yes", done.stdout
    assert "right 1/1" in done.stdout
