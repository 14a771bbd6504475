"""Python as people write it, compiled: `raise`, a branch choosing between closures,
nested functions with defaults computed at run time, builtins over sequences
(`sum`, `min`, `max`, `any`, `all`, `sorted`) and `.item()` / `np.broadcast_to`.
Each runs under `jit.jit` and under both gradient backends; "compiled" is asserted by
turning the fallback warning into an error, and every gradient is checked against
central differences."""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import jit
from adjoint import gradient

BACKENDS = ("interp", "llvm")


def strict_gradient(f, *args, backend):
    """`gradient` with a fallback to the interpreter turned into an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return gradient(f, *args, backend=backend)


def central(f, args, k, eps=1e-6):
    """The central difference of f along argument k (a float or an array)."""
    x = args[k]
    if isinstance(x, float):
        hi = list(args); hi[k] = x + eps   # noqa: E702
        lo = list(args); lo[k] = x - eps   # noqa: E702
        return (f(*hi) - f(*lo)) / (2 * eps)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x); e[i] = eps   # noqa: E702
        hi = list(args); hi[k] = x + e     # noqa: E702
        lo = list(args); lo[k] = x - e     # noqa: E702
        g[i] = (f(*hi) - f(*lo)) / (2 * eps)
    return g


def check_gradient(f, *args, wrt=(0,)):
    for backend in BACKENDS:
        got = strict_gradient(f, *args, backend=backend)
        for k in wrt:
            np.testing.assert_allclose(got[k], central(f, args, k), rtol=1e-6, atol=1e-7)


def outcome(f, *args):
    """(exception class, args) of a call that raises, else ("value", result)."""
    try:
        return "value", f(*args)
    except Exception as exc:  # noqa: BLE001
        return type(exc), exc.args


# -- raise -------------------------------------------------------------------------------------
class ModelError(Exception):
    pass


def checked_log(x):
    if x <= 0.0:
        raise ValueError("log of a non-positive number")
    return np.log(x) * x


def checked_step(x, n):
    if n > 3:
        raise IndexError("step", n, x, n > 5)
    if x == 0.0:
        raise ModelError
    if x == 1.0:
        raise ModelError("at one", 1)
    return x * x * n


@pytest.mark.parametrize("args", [(2.5,), (-1.0,)])
def test_raise_of_a_builtin_exception_is_cpythons(args):
    assert outcome(jit.jit(checked_log), *args) == outcome(checked_log, *args)
    for backend in BACKENDS:
        if args[0] > 0:
            check_gradient(checked_log, *args)
        else:
            with pytest.raises(ValueError) as info:
                strict_gradient(checked_log, *args, backend=backend)
            assert info.value.args == ("log of a non-positive number",)


@pytest.mark.parametrize("args", [(2.0, 2), (2.5, 7), (0.0, 1), (1.0, 2)])
def test_raise_with_run_time_arguments_and_user_classes(args):
    expected = outcome(checked_step, *args)
    assert outcome(jit.jit(checked_step), *args) == expected
    for backend in BACKENDS:
        got = outcome(lambda *a: strict_gradient(checked_step, *a, backend=backend), *args)
        if expected[0] == "value":
            assert got[1][0] == pytest.approx(central(checked_step, list(args), 0))
        else:
            assert got == expected


def keeps_an_exception(x):
    e = ValueError("kept")
    if x > 0:
        raise e
    return e


def test_an_exception_kept_as_a_value_is_refused_clearly():
    with pytest.raises(jit.TypingError, match="raised at once"):
        jit.jit(keeps_an_exception)(1.0)


# -- a phi of different closures ---------------------------------------------------------------
def branch_closure(x):
    def g(y):
        return y * 2.0 + x

    def h(y):
        return y * y

    k = g if x > 0 else h
    return k(x)


def returned_closure(x):        # myia's test_nested_closure
    a = x * x

    def f():
        b = x + 5

        def g():
            return a + b

        def h():
            return a * b
        return g if x < 0 else h
    return f()()


def three_ways(x, n):
    def g(y):
        return y * x

    def h(y):
        return y + x
    if n == 0:
        k = g
    elif n == 1:
        k = h
    else:
        k = lambda y: np.sin(y) * x   # noqa: E731
    return k(x) * 2.0


@pytest.mark.parametrize("x", [3.0, -3.0])
def test_a_branch_between_two_closures(x):
    assert jit.jit(branch_closure)(x) == branch_closure(x)
    # `return g if x < 0 else h` is one return of a phi on 3.11, two returns elsewhere,
    # whose join the dispatcher rewrite does not cover yet: refused there, clearly
    try:
        got = jit.jit(returned_closure)(x)
    except jit.TypingError as e:
        assert sys.version_info[:2] != (3, 11) and "cannot unify closure" in str(e)
    else:
        assert got == returned_closure(x)
    check_gradient(branch_closure, x)
    if sys.version_info[:2] == (3, 11):
        check_gradient(returned_closure, x)
        return
    got = strict_gradient(returned_closure, x, backend="interp")[0]
    assert got == pytest.approx(central(returned_closure, [x], 0), rel=1e-6)
    try:        # (refused clearly on these versions, see above; right where it compiles)
        got = strict_gradient(returned_closure, x, backend="llvm")[0]
    except jit.TypingError:
        return
    assert got == pytest.approx(central(returned_closure, [x], 0), rel=1e-6)


@pytest.mark.parametrize("n", [0, 1, 2])
def test_a_branch_between_three_functions(n):
    assert jit.jit(three_ways)(0.7, n) == three_ways(0.7, n)
    check_gradient(three_ways, 0.7, n)


# -- defaults computed at run time, recursion through a cell ----------------------------------
def fact_default(x):            # myia's test_fact_opt
    def fact(n=x):
        if n <= 1:
            return 1
        return n * fact(n=n - 1)
    return fact()


def fact_cell(x):
    def fact(n):
        if n <= 1.0:
            return 1.0
        return n * fact(n - 1.0)
    return fact(x)


def test_recursion_with_a_run_time_default_and_through_a_cell():
    assert jit.jit(fact_default)(4.1) == pytest.approx(fact_default(4.1))
    check_gradient(fact_default, 4.1)
    check_gradient(fact_cell, 4.3)


def made_with_default(x):
    def g(n=x):
        return n * 2.0
    return g


def calls_without_the_default(x):
    return made_with_default(x)()


def test_a_call_that_leaves_out_a_run_time_default_is_refused_by_the_jit():
    with pytest.raises(jit.TypingError, match="missing argument 'n'"):
        jit.jit(calls_without_the_default)(3.0)


# -- builtins over sequences -------------------------------------------------------------------
def sums(x):
    a = np.array([x, 2.0 * x, x * x])
    return sum(a) + sum([x, 3.0]) + sum((x, x * x), 10.0) + sum(v * v for v in [x, 2.0 * x])


def extremes(x):
    a = np.array([x, 2.0 * x, 1.5])
    built = [v * x for v in [1.0, -1.0, 0.5]]
    return min(a) + 2.0 * max(a) + 3.0 * min(built) + max([x, 1.0, x * x])


def truths(x):
    a = np.array([x, 2.0 * x])
    r = x
    if any(a > 5.0):
        r = r * 2.0
    if all([v > 1.0 for v in [x, 2.0 * x]]):
        r = r * 3.0
    if any((x < 0.0, x > 100.0)):
        r = r + 1.0
    return r


def sorts(a):
    s = sorted(a)
    return s[0] + 2.0 * s[1] + 5.0 * s[-1] + 0.5 * sorted([a[0], a[1] * a[1]])[0]


def sum_of_arrays(x):
    a = np.ones(3) * x
    return np.sum(sum([a, a * x, np.ones(3)]))


@pytest.mark.parametrize("f", [sums, extremes, truths, sum_of_arrays])
def test_builtins_over_sequences(f):
    for x in (0.8, 3.0):
        assert jit.jit(f)(x) == pytest.approx(f(x), rel=1e-15)
        check_gradient(f, x)


def test_sorted_matches_cpython_and_differentiates():
    rng = np.random.default_rng(1)
    for n in (1, 6, 70):
        a = np.round(rng.normal(size=n), 1)         # ties included
        assert jit.jit(lambda v: np.array(sorted(v)))(a).tolist() == sorted(a)
    a = np.array([0.3, -1.2, 0.9, 0.1, 2.0])
    assert jit.jit(sorts)(a) == sorts(a)
    check_gradient(sorts, a)


def min_of_built(n):
    return min([float(i) for i in range(n)])


def sum_of_built(n):
    return sum([float(i) * 0.5 for i in range(n)])


def test_empty_sequences_behave_as_in_cpython():
    assert outcome(jit.jit(min_of_built), 0) == outcome(min_of_built, 0)
    assert jit.jit(sum_of_built)(0) == 0 and type(jit.jit(sum_of_built)(0)) is int
    nan = np.array([3.0, np.nan, 1.0])
    assert np.array_equal(jit.jit(lambda v: np.array(sorted(v)))(nan), sorted(nan),
                          equal_nan=True)


# -- .item() and np.broadcast_to ---------------------------------------------------------------
def scalar_items(x, y):
    xs = np.broadcast_to(np.array(x), (4, 3))
    ys = np.broadcast_to(y, (4, 3))
    return np.sum(xs / ys).item() + np.float64(x * y).item()


def test_item_of_a_number_and_broadcast_to():
    assert jit.jit(scalar_items)(3.1, 7.6) == pytest.approx(scalar_items(3.1, 7.6), rel=1e-15)
    check_gradient(scalar_items, 3.1, 7.6, wrt=(0, 1))


# -- a loop over a list whose accumulator starts as the int 0 ----------------------------------
def accumulate(xs, w):              # myia's test_aliasing_list
    res = 0
    for x in xs:
        res = res + x * w
    return np.sum(sum(res))


def test_an_accumulator_that_becomes_an_array_in_the_first_iteration():
    xs = [np.arange(3.0).reshape(1, 3) + k for k in range(4)]
    w = np.array([[0.5, -1.0, 2.0]])
    assert jit.jit(accumulate)(xs, w) == accumulate(xs, w)
    for backend in BACKENDS:
        got = strict_gradient(accumulate, xs, w, backend=backend)
        np.testing.assert_allclose(got[1], central(lambda v: accumulate(xs, v), [w], 0),
                                   rtol=1e-6)
        for k in range(4):
            np.testing.assert_allclose(got[0][k], np.broadcast_to(w, (1, 3)))


# -- try / except ------------------------------------------------------------------------------
def reciprocal(x):
    try:
        y = 1.0 / x
    except ZeroDivisionError:
        y = 0.0
    return y * x


def negated_on_error(x):
    try:
        if x < 0:
            raise ValueError("negative")
        y = x * x
    except (TypeError, ValueError):
        y = -x
    return y


def read_or_default(a, i):
    try:
        v = a[i]
    except IndexError:
        v = 0.5
    return v * 2.0


def too_big(x):
    if x > 1.0:
        raise ValueError("too big")
    return x * x


def caught_from_a_callee(x):
    try:
        y = too_big(x)
    except ValueError:
        y = 10.0 * x
    return y


def with_else_and_finally(x):
    try:
        y = x * 3.0
        if x > 5:
            raise ValueError("big")
    except ValueError:
        y = 1.0
    else:
        y = y + x
    finally:
        y = y * 2.0
    return y


def in_a_loop(xs):
    s = 0.0
    for x in xs:
        try:
            s = s + too_big(x)
        except ValueError:
            s = s - x
    return s


def not_caught(x):
    try:
        if x < 0:
            raise KeyError("k")
        y = x
    except ValueError:
        y = -x
    return y


@pytest.mark.parametrize("f, x", [(reciprocal, 2.0), (reciprocal, 0.0), (negated_on_error, 2.0),
                                  (negated_on_error, -2.0), (caught_from_a_callee, 0.5),
                                  (caught_from_a_callee, 2.0), (with_else_and_finally, 2.0),
                                  (with_else_and_finally, 7.0)])
def test_try_except_compiles(f, x):
    assert jit.jit(f)(x) == f(x)
    check_gradient(f, x)


def test_try_except_of_an_index_error_in_a_loop_and_an_uncaught_error():
    a = np.arange(3.0)
    for i in (1, 5):
        assert jit.jit(read_or_default)(a, i) == read_or_default(a, i)
        check_gradient(read_or_default, a, i)
    xs = np.array([0.5, 2.0, 0.7, 3.0])
    assert jit.jit(in_a_loop)(xs) == in_a_loop(xs)
    check_gradient(in_a_loop, xs)
    assert outcome(jit.jit(not_caught), -1.0) == outcome(not_caught, -1.0)
    for backend in BACKENDS:
        with pytest.raises(KeyError):
            strict_gradient(not_caught, -1.0, backend=backend)


def uses_the_exception(x):
    try:
        y = too_big(x)
    except ValueError as e:
        y = len(str(e)) * x
    return y


def test_an_exception_read_in_its_handler_is_refused_clearly():
    with pytest.raises(jit.TypingError, match="str"):
        jit.jit(uses_the_exception)(2.0)


def divide_into(x, d):
    out = np.zeros(2)
    try:
        out[0] = x / d
    except ZeroDivisionError:
        out[0] = -1.0
    return out


def test_a_function_writing_arrays_catches_a_division_by_zero():
    for d in (0.0, 4.0):
        np.testing.assert_array_equal(jit.jit(divide_into)(1.0, d), divide_into(1.0, d))


# -- a list of arrays of mixed ranks built by appends ------------------------------------------
def mixed_weights(x, W, b):
    ws = [W * x]
    ws.append(b * x)
    ws.append(np.sum(W) * x)
    s = 0.0
    for w in ws:
        s = s + np.sum(w * w)
    return s + np.sum(ws[0] @ ws[1])


def appended_in_a_branch(x, flag):
    ws = []
    ws.append(np.ones((2, 2)) * x)
    if flag:
        ws.append(np.ones(2) * x)
    return len(ws) * x


def test_a_list_of_mixed_ranks_built_by_appends():
    W = np.array([[0.5, -1.0], [2.0, 0.3]])
    b = np.array([1.0, -0.5])
    assert jit.jit(mixed_weights)(1.3, W, b) == pytest.approx(mixed_weights(1.3, W, b))
    check_gradient(mixed_weights, 1.3, W, b, wrt=(0, 1, 2))
    with pytest.raises(jit.TypingError, match="appending a array"):
        jit.jit(appended_in_a_branch)(1.0, True)


def chosen_in_a_loop(x):
    def g(y):
        return y * 2.0

    def h(y):
        return y + x
    k = g
    for i in range(3):
        if i == 1:
            k = h
    return k(x)


def test_a_function_variable_chosen_again_in_a_loop_is_refused_clearly():
    with pytest.raises(jit.TypingError, match="chosen again in a loop, is not compiled"):
        jit.jit(chosen_in_a_loop)(1.5)


def halve_into(x, d):
    out = np.zeros(2)
    try:
        out[0] = too_big(x) / d
    except (ValueError, ZeroDivisionError):
        out[1] = 1.0
    return out


def test_a_function_writing_arrays_catches_an_error_of_its_callee():
    for x, d in ((0.5, 2.0), (3.0, 2.0), (0.5, 0.0)):
        np.testing.assert_array_equal(jit.jit(halve_into)(x, d), halve_into(x, d))


class Scope:
    def __enter__(self):
        return 2.0

    def __exit__(self, *exc):
        return False


def inside_a_with(x, scope):
    with scope as s:
        y = x * s
    return y


def test_a_with_block_is_refused_clearly_and_auto_runs_the_interpreter():
    with pytest.raises(jit.TypingError, match="has a with block; compiled code does not run "
                                              "context managers yet"):
        gradient(inside_a_with, 1.5, Scope(), backend="llvm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradient(inside_a_with, 1.5, Scope())[0] == 2.0

