"""What the forward pass records: tape words per loop iteration, and gradients that
stay right when the adjoint rebuilds values instead of reading them from the tape
(scalar rule variants, loop counters, element reads of unwritten arrays, implied
loop edges; see adjoint.passes.induction)."""
from __future__ import annotations

import math

import adjoint_examples as ex
import numpy as np
import pytest
from adjoint_check import check_gradient

import adjoint
import ssair
from adjoint.passes.inplace import arg_types
from adjoint.tape import Tape
from adjoint.transform import activity_of, lower_function, transform
from bench.workloads import leaky_sum, rosenbrock


def tape_words(f, args) -> int:
    jf = transform(lower_function(f), activity_of(args), arg_types(args))
    tape = Tape()
    ssair.interpret(jf.forward, tape, *args)
    return len(tape)


def words_per_iteration(f, make_args, n: int) -> float:
    """Tape words per loop iteration: the growth between trip counts n and 2n."""
    return (tape_words(f, make_args(2 * n)) - tape_words(f, make_args(n))) / n


def exp_sum(xs):
    s = 0.0
    for i in range(len(xs)):
        s += math.exp(xs[i])
    return s


def countdown_by_two(x, n):
    r = x
    while n > 0:
        r = r * x + 1.0
        n -= 2
    return r


def nested_counters(xs, m):
    s = 0.0
    for j in range(m):
        for i in range(len(xs)):
            s += xs[i] * (j + 1.0)
    return s


def counter_with_continue(xs):
    s = 0.0
    i = 0
    while i < len(xs):
        i += 1
        if xs[i - 1] < 0.0:
            continue
        s += xs[i - 1] * xs[i - 1]
    return s


def doubling_counter(x, n):
    k = 1
    r = 0.0
    while k < n:
        r = r + x * k
        k = k * 2
    return r


def written_array(xs):
    ys = np.zeros(len(xs))
    s = 0.0
    for i in range(len(xs)):
        ys[i] = xs[i] * 2.0
        s += ys[i] * ys[i]
        ys[i] = 0.0
    return s


def sum_cubes(xs):
    s = 0.0
    for i in range(len(xs)):
        s += xs[i] ** 3
    return s


def writes_after_call(xs):
    """The callee's adjoint runs after the caller has overwritten its argument."""
    ys = xs * 1.0
    a = sum_cubes(ys)
    ys[0] = 10.0
    ys[1] = 20.0
    return a + ys[0] * ys[2]


def test_pow_records_one_word_per_iteration():
    """Only r: x is loop invariant, the counter n and the loop edge are rebuilt."""
    assert words_per_iteration(ex.pow, lambda n: (2.0, n), 100) == 1


@pytest.mark.parametrize("f,words", [
    (leaky_sum, 0),      # the branch taken is recomputed from xs[i] (xs is stable)
    (rosenbrock, 0),     # xs[i], xs[i + 1] - xs[i] ** 2 and 1.0 - xs[i] are recomputed
    (exp_sum, 1),        # exp's result
    (countdown_by_two, 1),
])
def test_loops_record_few_words(f, words):
    if f is countdown_by_two:
        make = lambda n: (1.1, 2 * n)
    else:
        make = lambda n: (np.linspace(-1.0, 1.0, n),)
    assert words_per_iteration(f, make, 100) == words


def test_scalar_add_records_nothing():
    text = str(adjoint.code_adjoint(leaky_sum, np.ones(4)))
    assert "d_add_num" in text and "d_mul_num" in text


@pytest.mark.parametrize("f,args", [
    (leaky_sum, (np.linspace(-1.0, 1.0, 7),)),
    (rosenbrock, (np.linspace(-1.5, 1.5, 6),)),
    (exp_sum, (np.linspace(-1.0, 1.0, 5),)),
    (countdown_by_two, (1.1, 7)),
    (countdown_by_two, (1.1, 0)),
    (nested_counters, (np.array([1.0, -2.0, 3.0]), 3)),
    (counter_with_continue, (np.array([1.0, -2.0, 3.0, 0.5]),)),
    (doubling_counter, (1.5, 20)),
    (written_array, (np.array([1.0, -2.0, 3.0]),)),
    (writes_after_call, (np.array([1.0, 2.0, 3.0]),)),
    (ex.pow, (1.3, 0)),
    (ex.pow, (1.3, 5)),
])
def test_rebuilt_values_give_right_gradients(f, args):
    check_gradient(f, *args)


@pytest.mark.parametrize("f,args", [
    (leaky_sum, (np.linspace(-1.0, 1.0, 9),)),
    (rosenbrock, (np.linspace(-1.5, 1.5, 9),)),
    (countdown_by_two, (1.1, 9)),
    (nested_counters, (np.array([1.0, -2.0, 3.0]), 2)),
])
def test_compiled_gradients_agree(f, args):
    want = adjoint.pullback(f, *args, backend="interp")[1](1.0)
    got = adjoint.pullback(f, *args, backend="llvm")[1](1.0)
    for g, w in zip(got, want):
        if w is None:
            assert g is None
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12)


def count_and_sum(xs):
    s = 0.0
    n = 0
    for i in range(len(xs)):
        x = xs[i]
        if x > 0.0:
            n += 1
        else:
            n -= 1
        s += x * x
    return s * n


def test_inactive_branch_records_no_edge():
    """The if/else only updates an int: whichever edge was taken, the adjoint does
    the same, so the join's edge is not recorded (and xs[i] is recomputed: the loop
    pushes nothing)."""
    make = lambda n: (np.linspace(-1.0, 1.0, n),)
    assert words_per_iteration(count_and_sum, make, 100) == 0
    check_gradient(count_and_sum, np.linspace(-1.0, 1.0, 7))
    want = adjoint.pullback(count_and_sum, *make(9), backend="interp")[1](1.0)
    got = adjoint.pullback(count_and_sum, *make(9), backend="llvm")[1](1.0)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
