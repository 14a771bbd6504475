"""Regressions: iterating a dict reads its keys, in CPython's order, on every backend.

Loops used to read `seq[i]` for i in range(len(seq)) whatever `seq` was, so
`for k in {1: 'x', 0: 'y'}` gave the values 'y', 'x' (a silent wrong answer) and
string keys raised KeyError 0.  Each program below is run by CPython, by the
interpreter and by the JIT (which may refuse a dict it cannot type, with a
TypingError, but never answer differently); gradients are checked against central
differences and forward mode against the gradient.  A dict's keys (and a set's
items) carry no derivative, even when a float key is used in arithmetic.  Loops over
arrays, lists and tuples stay compiled, and a write into the array a loop read is
still seen by the in-place checks."""
import warnings

import numpy as np
import pytest

from adjoint import gradient, jvp
from jit import code_typed, jit
from jit.types import TypingError
from lowering import lower
from ssair.interpreter import interpret


def compiled(fn, *args, **kw):
    """`fn(*args, **kw)` with any warning (a fallback to the interpreter) an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kw)


def central(f, x, h=1e-6):
    if np.ndim(x) == 0:
        return (f(x + h) - f(x - h)) / (2 * h)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


# -- programs: int keys (the JIT types only string keys: it refuses these) --------------
def int_keys_listed():
    return [k for k in {1: "x", 0: "y"}]


def int_keys_weighted(x):
    d = {2: x, 0: x * x, 1: 3.0 * x}
    s = 0.0
    for k in d:
        s = s + d[k] * k
    return s


def float_keys_in_arithmetic(x):
    d = {1.5: x, 0.5: x * x}
    s = 0.0
    for k in d:
        s = s + k * d[k] + k * k * x
    return s


def float_keys_summed(x):
    d = {2.0: x * x, 1.0: 3.0}
    return sum(d) * x + sum(tuple(d)) + sum(d.values())


def keys_by_builtins(x):
    d = {3: x, 1: 2.0 * x, 2: x * x}
    return list(d), tuple(d), sorted(d), max(d), min(d), [k * 2 for k in reversed(d)]


def enumerate_zip_reversed_int(x):
    d = {3: x, 1: 2.0 * x}
    s = 0.0
    for i, k in enumerate(d):
        s = s + (i + 1) * k * d[k]
    for k, w in zip(d, (3.0, 5.0)):
        s = s + w * k * d[k]
    for k in reversed(d):
        s = s * 2.0 + d[k]
    return s


# -- string keys: compiled ---------------------------------------------------------------
def str_keys_squares(x):
    d = {"b": x, "a": 2.0 * x}
    s = 0.0
    for k in d:
        s = s + d[k] * d[k]
    return s


def str_keys_enumerate_zip(x):
    d = {"b": x, "a": 2.0 * x, "c": 0.5}
    s = 0.0
    for i, k in enumerate(d):
        s = s + i * d[k]
    for k, w in zip(d, (3.0, 5.0, 7.0)):
        s = s + w * d[k] * x
    return s


def str_keys_comprehension(x):
    d = {"b": x, "a": 2.0 * x}
    return sum([d[k] * x for k in d], 1.0)


def dict_argument(d):
    s = 0.0
    for k in d:
        s = s + d[k] * d[k]
    return s


# -- sets of numbers: CPython's order is that of the set object ---------------------------
def set_items(x):
    s = 0.0
    for v in {3.0, 1.0, 2.5}:
        s = s * v + v * x
    return s


def set_listed():
    return [v for v in {10.0, 3.0, 7.5, 1.25}]


ALL_PRIMAL = [(int_keys_listed, ()), (int_keys_weighted, (1.5,)),
              (float_keys_in_arithmetic, (1.5,)), (float_keys_summed, (1.5,)),
              (keys_by_builtins, (1.5,)), (enumerate_zip_reversed_int, (1.5,)),
              (str_keys_squares, (1.5,)), (str_keys_enumerate_zip, (1.5,)),
              (str_keys_comprehension, (1.5,)), (dict_argument, ({"q": 1.5, "p": -2.0},)),
              (set_items, (1.5,)), (set_listed, ())]
COMPILED = {str_keys_squares, str_keys_enumerate_zip, dict_argument, set_items}


@pytest.mark.parametrize("f, args", ALL_PRIMAL, ids=lambda v: getattr(v, "__name__", ""))
def test_interpreter_iterates_keys_as_cpython(f, args):
    assert interpret(lower(f), *args) == f(*args)


@pytest.mark.parametrize("f, args", ALL_PRIMAL, ids=lambda v: getattr(v, "__name__", ""))
def test_jit_iterates_keys_as_cpython_or_refuses(f, args):
    try:
        got = compiled(jit(f), *args)
    except TypingError:
        assert f not in COMPILED
        return
    assert got == f(*args)


SCALAR = [int_keys_weighted, float_keys_in_arithmetic, float_keys_summed,
          enumerate_zip_reversed_int, str_keys_squares, str_keys_enumerate_zip,
          str_keys_comprehension, set_items]


def _backends(f):
    return ("interp", "llvm") if f in COMPILED else ("interp",)


@pytest.mark.parametrize("f", SCALAR, ids=lambda f: f.__name__)
def test_gradient_and_jvp_against_central_differences(f):
    x = 1.5
    want = central(f, x)
    for backend in _backends(f):
        (g,) = compiled(gradient, f, x, backend=backend)
        assert np.isclose(g, want, rtol=1e-6), backend
        try:
            y, dy = compiled(jvp, f, (x,), (1.0,), backend=backend)
        except TypingError as e:
            # compiled forward mode of a loop over a dict's keys is refused, clearly (the
            # zero tangent of a tuple of str keys is not compiled): the interpreter's
            assert backend == "llvm" and f in (str_keys_squares, str_keys_enumerate_zip), e
            y, dy = jvp(f, (x,), (1.0,), backend="interp")
        assert np.isclose(y, f(x)) and np.isclose(dy, g, rtol=1e-9), backend


def test_float_keys_carry_no_derivative():
    # f = 3x + 3 + (x^2 + 3): f' = 3 + 2x, the keys themselves adding nothing
    assert np.isclose(gradient(float_keys_summed, 1.5, backend="interp")[0], 3.0 + 3.0)
    assert jvp(float_keys_summed, (1.5,), (1.0,), backend="interp")[1] == pytest.approx(6.0)
    (g,) = gradient(lambda d: sum(d) + 0.0 * d[2.0], {2.0: 1.5, 1.0: 3.0},
                    backend="interp")
    assert g == {2.0: 0.0, 1.0: 0.0}


@pytest.mark.parametrize("backend", ("interp", "llvm"))
def test_gradient_of_a_dict_argument(backend):
    (g,) = compiled(gradient, dict_argument, {"q": 1.5, "p": -2.0}, backend=backend)
    assert g == {"q": 3.0, "p": -4.0}


def test_jvp_of_sum_with_a_start_value():
    # sum(xs, start): the constant start has no tangent (it was added to the tangent)
    def f(x):
        return sum([x * x, 2.0 * x], 1.0)
    assert jvp(f, (1.5,), (1.0,), backend="interp") == pytest.approx((6.25, 5.0))


def test_jit_refuses_max_of_string_keys():
    # max(d) is the largest key, not the largest value
    with pytest.raises(TypingError, match="str"):
        jit(lambda d: max(d))({"p": 1.5, "q": -2.0})


# -- arrays, lists and tuples: compiled as before, aliasing still seen ------------------
def rows_and_items(a):
    s = 0.0
    for row in a:
        s = s + np.sum(row * row)
    for i, w in enumerate([a[0], a[1] * 2.0]):
        s = s + i * np.sum(w)
    for v, c in zip((a[0, 0], a[1, 1]), (2.0, 3.0)):
        s = s + v * c
    return s


def rows_read_then_written(a):
    t = a * 1.0
    s = 0.0
    for row in t:
        s = s + np.sum(row * row)
    t[0, 0] = 7.0        # the rows' pullbacks must see the values the loop read
    return s + np.sum(t * a)


def rows_enumerated_then_written(a):
    t = a * 1.0
    s = 0.0
    for i, row in enumerate(t):
        s = s + np.sum(row * row) * (i + 1)
    t[1, 0] = 0.5
    t[1, 1] = -0.5
    return s + np.sum(t * a)


A = np.array([[1.0, 2.0], [3.0, -1.0]])


@pytest.mark.parametrize("backend", ("interp", "llvm"))
@pytest.mark.parametrize("f", [rows_and_items, rows_read_then_written,
                               rows_enumerated_then_written], ids=lambda f: f.__name__)
def test_sequence_loops_compiled_with_aliases_seen(backend, f):
    (g,) = compiled(gradient, f, A.copy(), backend=backend)
    np.testing.assert_allclose(g, central(f, A), rtol=1e-6, atol=1e-8)
    y, dy = compiled(jvp, f, (A.copy(),), (np.ones_like(A),), backend=backend)
    assert np.isclose(y, f(A)) and np.isclose(dy, np.sum(g))


def test_sequence_loops_leave_no_wrapper_in_compiled_code():
    text = str(code_typed(rows_and_items, A))
    assert "loop_items" not in text
    assert compiled(jit(rows_and_items), A) == rows_and_items(A)
