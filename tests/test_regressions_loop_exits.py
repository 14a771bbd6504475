"""Loop exits and early returns must carry the output's cotangent back to the inputs.

Fuzz finding 03: `for ...: if c: return x` followed by `return x` had a zero gradient
on every backend.  `merge_returns` joins the two returns in a phi `φ(x, x)`, the one
value the adjoint seeds with `dy`; `emit_stacks` carried its env slots to the exit
with an `SSABuilder` whose `finish` also removed that trivial phi (it did not make
it), so `dy` was seeded on a value nothing read any more.  Every function below
returns one value from several places, inside and after loops; each gradient and
tangent is checked against central differences of the CPython function, in the
interpreter and compiled.
"""
from __future__ import annotations

import numpy as np
import pytest

from adjoint import gradient, jvp, pullback
from ssair import IR, Branch, Goto, Return, interpret, verify
from ssair.ssabuild import SSABuilder

BACKENDS = ("interp", "llvm")


def search_returns_arg(x):
    for i in range(3):
        if x > 20.0:
            return x
    return x


def search_returns_value_before_loop(x):
    s = x * x
    for i in range(3):
        if i == 5:
            return s
    return s


def nested_search(x):
    for i in range(3):
        for j in range(2):
            if x > 100.0:
                return x
    return x


def three_returns_of_one_value(x):
    a = x * 3.0
    for i in range(4):
        if a > 100.0:
            return a
        if a < -100.0:
            return a
    return a


def break_or_return_same(x):
    s = 1.0
    for i in range(6):
        if s > 5.0:
            break
        if s < -5.0:
            return s
        s = s * x
    return s


def while_search(x):
    n = 0
    while n < 3:
        n += 1
        if x > 1e9:
            return x * x
    return x * x


def search_over_tuple(x):
    for t in (1.0, 2.0, 3.0):
        if t > x:
            return x
    return x


def returns_at_iteration(x):
    s = 1.0
    for i in range(5):
        s = s * x
        if s > 2.0:
            return s
    return -s


def two_returns_in_body(x):
    s = x
    for i in range(8):
        s = s * 1.3
        if s > 4.0:
            return s
        s = s + x
        if s > 3.0:
            return s * 2.0
    return s


def while_else_return(x):
    n = 0
    s = x
    while n < 4:
        s = s * x
        if s > 5.0:
            return s
        n += 1
    else:
        s = s + 1.0
    return s * 3.0


def helper_search(x):
    for i in range(3):
        if x > 20.0:
            return x
    return x


def calls_a_search(x):
    return helper_search(x) * helper_search(x * 2.0)


def recursive_search(x, n):
    for i in range(2):
        if n == 0:
            return x
    return recursive_search(x * x, n - 1)


def maybe_empty_loop(x, n):
    s = x * 2.0
    for i in range(n):
        s = s * x
        if s > 10.0:
            return s
    return s


def pick_one(x, y):
    for i in range(3):
        if x > y:
            return x
    return y


SHAPES = [
    (search_returns_arg, (0.5,)), (search_returns_arg, (25.0,)),
    (search_returns_value_before_loop, (0.5,)), (nested_search, (0.7,)),
    (three_returns_of_one_value, (0.4,)), (three_returns_of_one_value, (50.0,)),
    (break_or_return_same, (1.4,)), (break_or_return_same, (-2.0,)),
    (while_search, (1.5,)), (search_over_tuple, (0.5,)), (search_over_tuple, (5.0,)),
    (returns_at_iteration, (1.1,)), (returns_at_iteration, (3.0,)),
    (returns_at_iteration, (0.5,)), (two_returns_in_body, (0.5,)),
    (two_returns_in_body, (1.3,)), (while_else_return, (1.5,)), (while_else_return, (0.5,)),
    (calls_a_search, (0.5,)), (recursive_search, (1.2, 2)),
    (maybe_empty_loop, (1.5, 0)), (maybe_empty_loop, (1.5, 3)),
    (pick_one, (0.5, 1.0)), (pick_one, (1.5, 1.0)),
]
IDS = [f"{f.__name__}{args}" for f, args in SHAPES]


def _float_positions(args):
    return [k for k, a in enumerate(args) if isinstance(a, float)]


def _fd(f, args, k, h=1e-6):
    hi, lo = list(args), list(args)
    hi[k] += h
    lo[k] -= h
    return (f(*hi) - f(*lo)) / (2 * h)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f,args", SHAPES, ids=IDS)
def test_gradient_through_loop_exits(f, args, backend):
    g = gradient(f, *args, backend=backend)
    for k, a in enumerate(args):
        if k in _float_positions(args):
            assert g[k] == pytest.approx(_fd(f, args, k), rel=1e-6, abs=1e-6)
        else:
            assert g[k] is None


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f,args", SHAPES, ids=IDS)
def test_tangent_through_loop_exits(f, args, backend):
    for k in _float_positions(args):
        ts = tuple(1.0 if j == k else 0.0 if j in _float_positions(args) else None
                   for j in range(len(args)))
        y, t = jvp(f, args, ts, backend=backend)
        assert y == f(*args)
        assert t == pytest.approx(_fd(f, args, k), rel=1e-6, abs=1e-6)


def double_until(a):
    for i in range(3):
        a[i] = a[i] * 2.0
        if a[i] > 100.0:
            return a
    return a


def sum_of_squares_after(v):
    d = double_until(v * 1.0)
    return np.sum(d * d)


@pytest.mark.parametrize("backend", BACKENDS)
def test_written_array_returned_from_loop(backend):
    """The returned array is also an argument the function writes into: its
    cotangent flows in through the return phi and out through the argument."""
    for v in (np.array([0.5, 1.0, 1.5, 3.0]), np.array([0.5, 60.0, 3.0, 0.1])):
        stop = 3 if v[1] < 50.0 else 2
        scale = np.where(np.arange(4) < stop, 2.0, 1.0)
        ct = np.array([1.0, 2.0, 3.0, 4.0])
        _, back = pullback(double_until, v.copy(), backend=backend)
        for _ in range(2):          # the tape is read, not consumed
            np.testing.assert_allclose(back(ct)[0], ct * scale)
        g = gradient(sum_of_squares_after, v.copy(), backend=backend)[0]
        np.testing.assert_allclose(g, 2.0 * scale * scale * v)


def test_ssa_builder_keeps_phis_it_did_not_make():
    """`SSABuilder.finish` removes only its own trivial phis: a phi already in the IR
    (a join of two returns of one value) may be named by other passes' metadata."""
    ir = IR("f")
    x = ir.add_arg("x")
    entry, left, right, join = (ir.add_block() for _ in range(4))
    entry.term = Branch(ir.push(entry, "gt", x, 0.0), left.id, right.id)
    left.term = Goto(join.id)
    right.term = Goto(join.id)
    r = ir.add_phi(join, {left.id: x, right.id: x})
    join.term = Return(r)
    builder = SSABuilder(ir)
    builder.write("v", entry.id, x)
    v = builder.read("v", join.id)
    builder.finish()
    assert builder.resolve(v) == x       # the phi it made for "v" is trivial: gone
    verify(ir)
    assert [p.var for p in join.phis] == [r] and join.term.value == r
    assert interpret(ir, 2.5) == 2.5
