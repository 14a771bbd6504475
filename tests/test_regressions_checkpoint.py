"""Regressions for checkpointed loops (`gradient(f, ..., checkpoint=MB)`) whose
adjoint reads none of a loop's records: a loop that runs zero times still pushes
its visit-0 snapshot, and the adjoint must pop it when it leaves the loop's adjoint
(it was left on the tape: "tape read past its start", or a hang compiled).  Each
checkpointed gradient must equal the plain one bit for bit, and the plain one the
closed form, on both backends."""
import math

import numpy as np
import pytest

from adjoint import gradient

BACKENDS = ["interp", "llvm"]
BUDGETS = [1e-9, 64 * 32 / 2**20, 64]   # one word a segment, 64 words, 64 MiB


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    return type(a) is type(b) and a == b


def _checked(f, args, backend):
    """The plain gradient, after asserting every budget gives it bit for bit."""
    plain = gradient(f, *args, backend=backend)
    for mb in BUDGETS:
        got = gradient(f, *args, backend=backend, checkpoint=mb)
        assert _same(got, plain), (mb, got, plain)
    return plain


def _sin_chain(x, k):
    """d/dx of sin applied k times, at x."""
    d = 1.0
    for _ in range(k):
        d *= math.cos(x)
        x = math.sin(x)
    return d


def three_loops(x, a, b, c):
    for i in range(a):
        x = math.sin(x)
    for i in range(b):
        x = math.sin(x)
    for i in range(c):
        x = math.sin(x)
    return x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("trips", [(2, 0, 0), (0, 0, 0), (0, 3, 0), (1, 0, 1),
                                   (0, 1, 5), (4, 0, 2), (0, 0, 1)])
def test_loops_in_sequence_some_zero_trip(backend, trips):
    g = _checked(three_loops, (0.3, *trips), backend)
    assert g[1:] == (None, None, None)
    assert g[0] == pytest.approx(_sin_chain(0.3, sum(trips)), rel=1e-12)


def nested(x, n, m):
    for i in range(n):
        for j in range(m):
            x = math.sin(x)
        x = x * 1.5
    for i in range(m):
        x = math.sin(x)
    return x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n,m", [(0, 0), (0, 2), (3, 0), (2, 2), (1, 1)])
def test_nested_loops_zero_trip(backend, n, m):
    g = _checked(nested, (0.4, n, m), backend)
    x, d = 0.4, 1.0
    for _ in range(n):
        d *= _sin_chain(x, m)
        for _ in range(m):
            x = math.sin(x)
        x, d = x * 1.5, d * 1.5
    d *= _sin_chain(x, m)
    assert g[0] == pytest.approx(d, rel=1e-12)


def while_loops(x, y, n):
    k = 0
    while k < n:
        x = x * y
        k += 1
    while x > 100.0:      # runs zero times for the arguments below
        x = x - y * y
    return x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [0, 1, 4])
def test_while_loops_zero_trip(backend, n):
    g = _checked(while_loops, (1.25, 1.5, n), backend)
    assert g[0] == 1.5 ** n
    assert g[1] == pytest.approx(n * 1.25 * 1.5 ** (n - 1) if n else 0.0, rel=1e-14)


def returns_from_loop(x, y, n):
    for i in range(3):
        x = math.sin(x) * y
    for i in range(n):
        if y <= 0.1:
            return 0.5 * x
        x = math.tanh(x)
    for i in range(n):      # skipped entirely when the loop above returned
        x = x * y
    return x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("y,n", [(1.2, 0), (0.05, 0), (1.2, 2), (0.05, 2)])
def test_zero_trip_loop_around_an_early_return(backend, y, n):
    g = _checked(returns_from_loop, (0.7, y, n), backend)
    eps = 1e-6
    fd = (returns_from_loop(0.7 + eps, y, n) - returns_from_loop(0.7 - eps, y, n)) / (2 * eps)
    assert g[0] == pytest.approx(fd, rel=1e-6)


def array_state(x, y, n):
    """(The shape of the finding's program that hung when compiled.)"""
    j = 0
    while j < 3:
        j += 1
        a = np.zeros(2)
        for q in range(2):
            a[q] = math.exp(x)
        x -= math.tanh(y) * a[1]
    for i in range(n):
        while y > 5.0:
            x *= 0.5
        if y <= 0.1:
            return 0.25
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_array_state_then_zero_trip_loop(backend):
    g = _checked(array_state, (0.2, 1.1, 0), backend)
    eps = 1e-6
    for k in range(2):
        lo, hi = [0.2, 1.1, 0], [0.2, 1.1, 0]
        lo[k] -= eps
        hi[k] += eps
        assert g[k] == pytest.approx((array_state(*hi) - array_state(*lo)) / (2 * eps),
                                     rel=1e-6)
    assert g[2] is None


def test_back_runs_twice_after_zero_trip_loop():
    """`back` may run several times: each run pops the snapshot afresh."""
    from adjoint import pullback
    for backend in BACKENDS:
        y, back = pullback(three_loops, 0.3, 2, 0, 1, backend=backend, checkpoint=1e-9)
        first, second = back(1.0), back(1.0)
        assert _same(first, second)
        assert _same(first, gradient(three_loops, 0.3, 2, 0, 1, backend=backend))
