"""`gradient(f, X, batch=0)` and `jit.vmap(f)(X)` (jit.batch, adjoint.batching): the
rows computed on a thread pool without the GIL equal, bit for bit, the gradients and
values computed one row at a time, compiled and in the interpreter; a failing row
raises what CPython raises; threads share no tape, error record or arena."""
import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import adjoint
import jit
from bench.workloads import lotka_volterra
from jit.batch import batched


def rosen(x):
    s = 0.0
    for i in range(len(x) - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def lv(p):
    return lotka_volterra(p[0], p[1], p[2], p[3], 200)


def allocates(x):
    """Arrays made in every row: each thread's arena."""
    y = np.tanh(x) * x + np.exp(-x * x)
    return float(np.sum(y * y)) + float(np.dot(y, x))


def scalar(x):
    return math.sin(x) * x ** 3 + math.exp(-x)


def shared(x, w, n):
    s = 0.0
    for i in range(n):
        s += w[i % len(w)] * x[i % len(x)] ** 2
    return s


RNG = np.random.default_rng(0)
CASES = [
    (rosen, (RNG.normal(size=(300, 7)),), 0),
    (lv, (1.0 + 0.1 * RNG.random((64, 4)),), 0),
    (allocates, (RNG.normal(size=(200, 5)),), 0),
    (scalar, (np.linspace(-2.0, 2.0, 500),), 0),
    (shared, (RNG.normal(size=(50, 3)), np.array([0.5, -1.0]), 9), (0, None, None)),
    (shared, (RNG.normal(size=(3, 40)), np.array([0.5, -1.0]), 5), (1, None, None)),
]


def _one_by_one(f, args, axes, backend="auto"):
    from adjoint.batching import per_row
    return per_row(adjoint.gradient, f, args, axes, backend)


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if x is None or y is None:
            assert x is None and y is None
        else:
            assert np.asarray(x).shape == np.asarray(y).shape
            assert np.array_equal(x, y)


@pytest.mark.parametrize("f,args,batch", CASES, ids=[f"{c[0].__name__}-{k}"
                                                     for k, c in enumerate(CASES)])
def test_batch_equals_row_by_row(f, args, batch):
    from adjoint.batching import normalize_axes
    axes = normalize_axes(batch, len(args))
    expect = _one_by_one(f, args, axes, "llvm")
    _same(adjoint.gradient(f, *args, batch=batch, backend="llvm"), expect)
    for workers in (1, 2, 8):
        _same(batched(f, args, axes, "gradient", workers), expect)


@pytest.mark.parametrize("f,args,batch", CASES[:4], ids=[c[0].__name__ for c in CASES[:4]])
def test_interpreter_batch_agrees(f, args, batch):
    small = tuple(a[:5] if isinstance(a, np.ndarray) else a for a in args)
    got = adjoint.gradient(f, *small, batch=batch, backend="interp")
    compiled = adjoint.gradient(f, *small, batch=batch, backend="llvm")
    for x, y in zip(got, compiled):
        assert np.allclose(x, y, rtol=1e-12, atol=1e-12)


def test_closed_form_and_shapes():
    xs = np.linspace(-1.0, 1.0, 101)
    (g,) = adjoint.gradient(lambda x: x * x * 3.0, xs, batch=0)
    assert g.shape == (101,) and np.allclose(g, 6.0 * xs)
    X = RNG.normal(size=(20, 7))
    gx, gw, gn = adjoint.gradient(shared, X, np.array([0.5, -1.0]), 9, batch=(0, None, None))
    assert gx.shape == (20, 7) and gw.shape == (20, 2) and gn is None


@pytest.mark.parametrize("backend", ["llvm", "interp"])
def test_value_and_grad_batch(backend):
    X = RNG.normal(size=(40, 5))
    values, (g,) = adjoint.value_and_grad(rosen, X, batch=0, backend=backend)
    rows = [adjoint.value_and_grad(rosen, x, backend=backend) for x in X]
    assert np.array_equal(values, [r[0] for r in rows])
    assert np.array_equal(g, [r[1][0] for r in rows])


def test_closures_of_one_code_object_are_told_apart():
    def scaled(k):
        return lambda x: k * x * x
    xs = np.linspace(0.0, 1.0, 50)
    assert np.array_equal(adjoint.gradient(scaled(2.0), xs, batch=0)[0], 4.0 * xs)
    assert np.array_equal(adjoint.gradient(scaled(3.0), xs, batch=0)[0], 6.0 * xs)
    assert np.array_equal(jit.vmap(scaled(5.0))(xs), 5.0 * xs * xs)


def test_vmap_values():
    X = RNG.normal(size=(400, 6))
    got = jit.vmap(rosen)(X)
    compiled = jit.jit(rosen)
    assert got.shape == (400,) and np.array_equal(got, [compiled(x) for x in X])
    assert np.allclose(got, [rosen(x) for x in X], rtol=1e-14)
    Y = jit.vmap(lambda x: np.tanh(x) * 2.0)(X)
    assert Y.shape == X.shape and np.allclose(Y, np.tanh(X) * 2.0, rtol=1e-15, atol=0)


def logs(x):
    return math.log(x) * x


def test_a_failing_row_raises_what_cpython_raises():
    xs = np.array([1.0, 2.0, 3.0, -1.0, 5.0])
    with pytest.raises(ValueError, match="math domain error"):
        adjoint.gradient(logs, xs, batch=0)
    with pytest.raises(ValueError, match="math domain error"):
        adjoint.gradient(logs, xs, batch=0, backend="interp")
    # the native error record of the calling thread is untouched: a call after it works
    assert adjoint.gradient(logs, 2.0)[0] == pytest.approx(math.log(2.0) + 1.0)


def test_bad_batch_arguments_are_clear_errors():
    X = np.ones((4, 3))
    with pytest.raises(TypeError, match="batch= takes an axis"):
        adjoint.gradient(rosen, X, batch="rows")
    with pytest.raises(ValueError, match="no axis 2"):
        adjoint.gradient(rosen, X, batch=2)
    with pytest.raises(ValueError, match="has 3 rows, another has 4"):
        adjoint.gradient(lambda a, b: float(np.sum(a * b)), X, np.ones((3, 3)), batch=(0, 0))
    with pytest.raises(ValueError, match="gives 1 axes for 2 arguments"):
        adjoint.gradient(lambda a, b: float(np.sum(a * b)), X, X, batch=(0,))
    with pytest.raises(ValueError, match="maps no argument"):
        adjoint.gradient(rosen, X, batch=(None,))


def test_inputs_are_not_modified():
    X = RNG.normal(size=(30, 5))
    before = X.copy()
    adjoint.gradient(allocates, X, batch=0)
    jit.vmap(allocates)(X)
    assert np.array_equal(X, before)


def test_eight_threads_hammering_batches_and_pullbacks():
    """Batches (themselves on the pool) and compiled pullbacks from 8 threads at once:
    every result exact."""
    X = RNG.normal(size=(200, 6))
    expect = adjoint.gradient(allocates, X, batch=0)[0]
    y0, back0 = adjoint.pullback(lv, np.array([1.0, 0.1, 0.2, 1.1]))
    g0 = back0(1.0)
    start = threading.Barrier(8)

    def work(k):
        start.wait()
        out = []
        for _ in range(5):
            out.append(np.array_equal(adjoint.gradient(allocates, X, batch=0)[0], expect))
            y, back = adjoint.pullback(lv, np.array([1.0, 0.1, 0.2, 1.1]))
            out.append(y == y0 and np.array_equal(back(1.0)[0], g0[0]))
        return all(out)
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(work, range(8)))
