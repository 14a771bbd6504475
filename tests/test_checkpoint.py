"""Checkpointed loops (`pullback(f, ..., checkpoint=MB)`, adjoint.passes.checkpoint):
the gradient equals the unlimited tape's bit for bit, in the interpreter and
compiled, over the corpus and over loops with calls, branches, breaks, inner loops,
array state and recursion; the tape holds snapshots, not records; clear errors."""
import copy
import math
import warnings

import numpy as np
import pytest

import adjoint
import corpus
import ssair
from adjoint.passes.checkpoint import CheckpointError, budget_words
from bench.workloads import lotka_volterra, pow_loop
from ssair.parser import parse
from forward_check import _like

CASES, _ = corpus.load()
TINY = 1e-9          # one tape word a segment: a snapshot at every header visit
SMALL = 64 * 32 / 2**20     # 64 words a segment


def _same(a, b) -> bool:
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and \
            np.array_equal(a, b, equal_nan=True)
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def _gradients(func, args, backend, checkpoint=None, dy=None):
    y, back = adjoint.pullback(func, *copy.deepcopy(args), backend=backend,
                               checkpoint=checkpoint)
    if dy is None:
        dy = _like(y, np.random.default_rng(0))
    return y, back(copy.deepcopy(dy)), dy


def _check(func, args, backend, checkpoint=TINY):
    with np.errstate(all="ignore"):
        y0, g0, dy = _gradients(func, args, backend)
        y1, g1, _ = _gradients(func, args, backend, checkpoint, dy)
    assert _same(y0, y1)
    assert _same(g0, g1), (g0, g1)


def _params():
    return [pytest.param(c.func, args, id=f"{c.id}-{k}")
            for c in CASES for k, args in enumerate(c.args)]


@pytest.mark.parametrize("backend", ["interp", "auto"])
@pytest.mark.parametrize("func,args", _params())
def test_corpus(func, args, backend):
    """`auto`: compiled where the JIT compiles the function, else the interpreter."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _gradients(func, args, backend)
    except Exception:  # noqa: BLE001 - only what reverse mode differentiates is compared
        pytest.skip("reverse mode does not differentiate this case")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _check(func, args, backend)
    except CheckpointError as e:
        assert "try statement inside a loop" in str(e)


# -- loops of every shape, compiled and interpreted ---------------------------------------
def g(a, b):
    return a * b + 1.0


def call_in_branch(x, n):
    r = x
    for i in range(n):
        if r > 3.0:
            r = g(r, x) * 0.5
        else:
            r = r * x
    return r


def inner_loops_break_and_two_loops(x, n):
    s = 0.0
    for i in range(n):
        t = x
        for j in range(i % 3):
            t = math.sin(t) * x
        s = s + t
        if s > 50.0:
            break
    k = 0
    while k < n:
        s = s * 0.99 + x
        k += 1
    return s


def array_state(x, n):
    v = np.array([x, 2.0 * x, 1.0])
    for i in range(n):
        v = np.tanh(v) * x + 0.1
    return float(np.sum(v))


def power_rec(x, n):
    return 1.0 if n == 0 else x * power_rec(x, n - 1)


def recursion_in_loop(x, n):
    s = 0.0
    for i in range(n):
        s = s + power_rec(x, i % 4) * math.cos(s)
    return s


def early_return(x, n):
    r = 1.0
    i = 0
    while True:
        r = r * x + math.exp(-r)
        i += 1
        if r > 40.0:
            return r * 2.0
        if i >= n:
            return r


def array_writes(w, n):
    acc = np.zeros(2)
    for i in range(n):
        acc[i % 2] += w[i % 3] * (i + 1)
        acc[1] = acc[0] * acc[1] * 0.1 + w[0]
    return acc[0] * acc[1]


def list_and_array_writes(w, n):
    out = []
    acc = np.zeros(2)
    for i in range(n):
        acc[i % 2] += w[i % 3] * (i + 1)
        out.append(acc[0] * acc[1])
    return sum(out) + acc[0]


LOOPS = [
    (pow_loop, (1.01, 23)),
    (lotka_volterra, (1.0, 0.1, 0.075, 1.5, 57)),
    (call_in_branch, (1.1, 30)),
    (inner_loops_break_and_two_loops, (0.7, 25)),
    (inner_loops_break_and_two_loops, (1.9, 40)),
    (array_state, (0.9, 17)),
    (recursion_in_loop, (0.8, 19)),
    (early_return, (1.3, 50)),
    (early_return, (0.5, 9)),
    (array_writes, (np.array([0.5, -1.0, 2.0]), 11)),
    (pow_loop, (1.01, 0)),
    (pow_loop, (1.01, 1)),
]


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("mb", [TINY, SMALL, 64])
@pytest.mark.parametrize("func,args", LOOPS, ids=[f"{f.__name__}-{k}" for k, (f, _) in
                                                  enumerate(LOOPS)])
def test_loops_bit_for_bit(func, args, mb, backend):
    _check(func, args, backend, mb)


@pytest.mark.parametrize("mb", [TINY, SMALL])
def test_a_loop_that_grows_a_list_runs_in_the_interpreter(mb):
    """The JIT does not compile this function at all (`sum` of a list); `auto` runs
    it in the interpreter, checkpointed there."""
    args = (np.array([0.5, -1.0, 2.0]), 11)
    _check(list_and_array_writes, args, "interp", mb)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (the JIT's fallback warning, said once)
        _check(list_and_array_writes, args, "auto", mb)


def test_against_differences_and_closed_form():
    x, n = 1.01, 200
    (d, _) = adjoint.gradient(pow_loop, x, n, checkpoint=SMALL)
    assert d == pytest.approx(n * x ** (n - 1), rel=1e-12)
    h = 1e-6
    args = [1.0, 0.1, 0.075, 1.5]
    got = adjoint.gradient(lotka_volterra, *args, 300, checkpoint=SMALL)
    for k in range(4):
        up, down = list(args), list(args)
        up[k] += h
        down[k] -= h
        fd = (lotka_volterra(*up, 300) - lotka_volterra(*down, 300)) / (2 * h)
        assert got[k] == pytest.approx(fd, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_back_twice_and_value_and_grad(backend):
    y, back = adjoint.pullback(lotka_volterra, 1.0, 0.1, 0.075, 1.5, 200, backend=backend,
                               checkpoint=SMALL)
    first, second = back(1.0), back(1.0)
    assert _same(first, second)
    v, gr = adjoint.value_and_grad(lotka_volterra, 1.0, 0.1, 0.075, 1.5, 200,
                                   backend=backend, checkpoint=SMALL)
    assert v == y and _same(gr, first)


def test_forward_tape_holds_snapshots_only():
    n = 10_000
    words = budget_words(SMALL)
    assert words == 64
    y, back = adjoint.pullback(pow_loop, 1.0001, n, backend="interp", checkpoint=SMALL)
    # one item a visit in the interpreter: a snapshot every 64 visits
    assert len(back.tape) <= n // 64 + 3
    y, back = adjoint.pullback(pow_loop, 1.0001, n, backend="llvm", checkpoint=SMALL)
    # seven words a snapshot: (visit, next, r, i, edge, x, n)
    assert back.env.tape_words() <= (n // 64 + 3) * 7
    y, back = adjoint.pullback(pow_loop, 1.0001, n, backend="interp")
    assert len(back.tape) >= n       # without checkpoint=, a record a visit


def test_code_adjoint_shows_the_recompute_function_and_verifies():
    shown = adjoint.code_adjoint(lotka_volterra, 1.0, 0.1, 0.075, 1.5, 10, checkpoint=1)
    text = str(shown)
    assert "lotka_volterra_recompute" in text and "ckpt_spent" in text
    assert "tape_cut" in text and "# snapshot" in text
    for ir in (shown.forward, shown.adjoint, *shown.recompute):
        ssair.verify(ir)
        assert str(parse(str(ir))) == str(ir)      # the text round-trips
    plain = str(adjoint.code_adjoint(lotka_volterra, 1.0, 0.1, 0.075, 1.5, 10))
    assert "recompute" not in plain


@pytest.mark.parametrize("bad", [0, -1.0, "64", True, float("nan")])
def test_bad_budget_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="checkpoint= takes a memory budget in MiB"):
        adjoint.gradient(pow_loop, 1.0, 10, checkpoint=bad)


def guarded(x, n):
    s = 0.0
    for i in range(n):
        try:
            s = s + g(x, s)
        except ZeroDivisionError:
            s = 0.0
    return s


def test_try_in_a_loop_is_refused_by_name():
    with pytest.raises(CheckpointError, match=r"try statement inside a loop.*guarded.*"
                                              r"test_checkpoint.py:\d+"):
        adjoint.gradient(guarded, 0.5, 4, checkpoint=1)


def test_a_function_without_loops_is_unchanged():
    def f(x):
        return math.sin(x) * x
    assert adjoint.gradient(f, 0.3, checkpoint=1) == adjoint.gradient(f, 0.3)
    assert "recompute" not in str(adjoint.code_adjoint(f, 0.3, checkpoint=1))
