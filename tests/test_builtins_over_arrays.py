"""Python's builtins over numpy arrays in compiled and differentiated code: `sum` of an
array of any rank and dtype (its first axis added in CPython's order, numpy's dtype
rules), `min` / `max` / `any` / `all` of 1-D arrays of every dtype, `abs` of float
arrays (np.absolute), slices of a list built at run time (`sorted(v)[1:-1]`), and a
`np.random.default_rng(seed)` made inside a differentiated loss (draws are constants).

Every "compiled" claim runs with warnings turned into errors, so a fallback to the
interpreter (a JitFallbackWarning) fails the test."""
import math
import warnings
from contextlib import contextmanager

import numpy as np
import pytest

from adjoint import gradient, jvp, value_and_grad
from jit import jit
from jit.runtime import host_pullbacks

BACKENDS = ("interp", "llvm")
F32, I32 = np.float32, np.int32


@contextmanager
def no_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def central_differences(f, x, h=1e-6):
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = h
        g[k] = (f(x + e) - f(x - e)) / (2 * h)
    return g


# -- sum: values and dtypes, compiled ---------------------------------------------------

def builtin_sum(a):
    return sum(a)


@pytest.mark.parametrize("a", [
    np.arange(5, dtype=F32) / 3,
    np.arange(12.0).reshape(4, 3) / 7,
    (np.arange(12, dtype=F32) / 7).reshape(4, 3),
    np.arange(24.0).reshape(2, 3, 4) - 5.5,
    (np.arange(24, dtype=F32) / 3).reshape(2, 3, 4),
    np.arange(12, dtype=I32).reshape(3, 4),
    np.arange(12).reshape(3, 4),
    np.arange(7),
    np.array([[True, False], [True, True]]),
], ids=lambda a: f"{a.dtype}-{a.ndim}d")
def test_sum_of_an_array_is_cpythons_value_and_dtype(a):
    want = sum(a)
    with no_fallback():
        got = jit(builtin_sum)(a)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)      # the same additions, in the same order


def test_sum_of_an_empty_array_is_the_int_zero():
    assert jit(builtin_sum)(np.zeros(0)) == 0        # rerun by CPython
    assert jit(builtin_sum)(np.zeros((0, 3))) == 0   # (its code writes only arrays it
    #                                                  made: rerun too)


# -- sum: reverse and forward mode ----------------------------------------------------

def rows_squared(a):
    row = sum(a * a)                 # a row of squares (2-D) or a plane (3-D)
    return np.sum(np.tanh(row))


COUNTS = np.arange(6).reshape(2, 3)


def through_int_rows(w):
    per_column = sum(COUNTS)         # an int array's rows: an int row, no derivative
    return np.sum(w * per_column) + sum(w * w)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,dtype", [((3,), F32), ((4, 3), F32), ((2, 3, 2), np.float64),
                                         ((2, 3, 2), F32)])
def test_gradient_of_sum_keeps_the_dtype(backend, shape, dtype):
    a = (np.arange(np.prod(shape)).reshape(shape) / 10 - 0.4).astype(dtype)
    with no_fallback():
        (g,) = gradient(rows_squared, a, backend=backend)
    assert g.dtype == dtype
    fd = central_differences(lambda x: float(rows_squared(x)), a)
    tol = 1e-6 if dtype == np.float64 else 2e-3
    np.testing.assert_allclose(g, fd, rtol=tol, atol=tol)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_through_a_sum_of_int_rows(backend):
    w = np.array([0.5, -1.0, 2.0])
    with no_fallback():
        (g,) = gradient(through_int_rows, w, backend=backend)
    np.testing.assert_allclose(g, sum(COUNTS) + 2 * w)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_of_sum_of_rows(backend):
    a = np.arange(6.0).reshape(2, 3) / 5
    t = np.ones_like(a) * 0.5
    y, dy = jvp(rows_squared, (a,), (t,), backend=backend)
    assert y == pytest.approx(rows_squared(a))
    fd = np.sum(central_differences(lambda x: float(rows_squared(x)), a) * t)
    assert dy == pytest.approx(fd, rel=1e-6)


# -- min, max, any, all of 1-D arrays of every dtype -----------------------------------

@pytest.mark.parametrize("fn", [min, max, any, all], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [F32, I32])
def test_extremes_and_truth_of_a_1d_array(fn, dtype):
    a = np.array([3, 0, -2, 5, -2], dtype=dtype)

    def call(x):
        return fn(x)
    with no_fallback():
        got = jit(call)(a)
    assert got == fn(a)
    if fn in (min, max) and dtype in (F32, I32):
        assert type(got) is type(fn(a))            # numpy's scalar of the array's dtype


def extremes(a):
    return max(a * a) + 2.0 * min(a)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float64, F32])
def test_gradient_of_min_and_max(backend, dtype):
    a = np.array([3.0, -1.0, 2.0], dtype=dtype)
    with no_fallback():
        (g,) = gradient(extremes, a, backend=backend)
    assert g.dtype == dtype
    np.testing.assert_allclose(g, [6.0, 2.0, 0.0])


# -- a generator made inside a differentiated loss -------------------------------------

def noisy_loss(w):
    rng = np.random.default_rng(11)
    x = rng.normal(size=(5, 3))
    shift = rng.uniform(-1.0, 1.0, size=5)
    noise = rng.standard_normal(5)
    k = rng.integers(0, 5)
    y = np.tanh(x @ w + shift) * noise
    return np.sum(y * y) + x[k, 0] * w[0]


W = np.array([0.3, -0.2, 0.5])


@pytest.mark.parametrize("backend", BACKENDS)
def test_generator_made_in_the_loss_is_constant_for_the_gradient(backend):
    fd = central_differences(noisy_loss, W)
    with no_fallback():
        (g,) = gradient(noisy_loss, W, backend=backend)
        (again,) = gradient(noisy_loss, W, backend=backend)   # a fresh generator each call
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(g, again)


def test_generator_made_in_the_loss_compiles_with_cpythons_draws():
    with no_fallback():
        value, _ = value_and_grad(noisy_loss)(W)
        assert jit(noisy_loss)(W) == noisy_loss(W)
        y, dy = jvp(noisy_loss, (W,), (np.ones(3),))
    assert value == noisy_loss(W)            # the same stream of numbers, bit for bit
    assert y == noisy_loss(W)
    assert dy == pytest.approx(np.sum(central_differences(noisy_loss, W)), rel=1e-6)
    assert not host_pullbacks.LIVE            # every generator made was released


def sorted_picks(a):
    s = sorted(a)
    return s[0] * 2.0 + s[2] * s[1]


def test_sorted_of_float32_is_refused_clearly_and_right_in_the_interpreter():
    from jit import JitFallbackWarning
    a = np.array([3.0, -1.0, 2.0], dtype=F32)
    with pytest.warns(JitFallbackWarning, match=r"sorted of \(array\(float32, 1d\)\)"):
        (g,) = gradient(sorted_picks, a)
    assert g.dtype == F32
    np.testing.assert_allclose(g, [2.0, 2.0, 3.0])
    with no_fallback():
        (g64,) = gradient(sorted_picks, a.astype(float), backend="llvm")
    np.testing.assert_allclose(g64, [2.0, 2.0, 3.0])


# -- abs() of a float array is np.absolute (ndarray.__abs__) ------------------------------
def _l1_weighted(w):
    return np.sum(abs(w) * w) + np.sum(abs(w[0]))


@pytest.mark.parametrize("w", [np.array([1.0, -2.0, 0.5]),
                               np.array([[1.0, -2.0], [-3.0, 0.25]])])
def test_abs_of_float_array_compiles_and_differentiates(w):
    with no_fallback():
        assert np.array_equal(jit(lambda a: abs(a))(w), abs(w))
        got = gradient(_l1_weighted, w, backend="llvm")[0]
    want = gradient(_l1_weighted, w, backend="interp")[0]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got, central_differences(_l1_weighted, w), rtol=1e-6)
    closed = 2 * np.abs(w)
    closed[0] += np.sign(w[0])
    np.testing.assert_allclose(got, closed, rtol=1e-12)


def test_abs_of_int_array_is_refused_by_name():
    from jit.types import TypingError
    with pytest.raises(TypingError, match="abs of array\\(int64, 1d\\) is not compiled"):
        jit(lambda a: abs(a))(np.array([-1, 2]))


# -- slices of a list built at run time (sorted(...), appends) ---------------------------
def _trimmed_mean(x, a, b):
    s = sorted([x * 1.0, x * 2.0, x * 3.0, x * x, 2.0 - x])
    return (sum(s[1:-1]) / 3.0 + len(s[a:b]) + sum(s[::2]) * x + sum(s[::-1][1:3])
            + len(s[b:a]) + sum(s[a:b:-1]))


def _last_rows(w, k):
    rows = []
    for i in range(4):
        rows.append(w * (i + 1.0))
    return sum(np.sum(r * r) for r in rows[-k:]) + np.sum(rows[0][::-1] * w)


@pytest.mark.parametrize("x,a,b", [(0.7, 1, 3), (0.2, -2, 10), (1.5, 3, 0), (-0.4, 0, 0)])
def test_slices_of_a_built_list_compile_and_differentiate(x, a, b):
    with no_fallback():
        assert jit(_trimmed_mean)(x, a, b) == _trimmed_mean(x, a, b)
        got = gradient(_trimmed_mean, x, a, b, backend="llvm")[0]
    assert got == pytest.approx(gradient(_trimmed_mean, x, a, b, backend="interp")[0], rel=1e-12)
    h = 1e-6
    fd = (_trimmed_mean(x + h, a, b) - _trimmed_mean(x - h, a, b)) / (2 * h)
    assert got == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_slices_of_a_list_of_arrays_differentiate():
    w = np.array([0.3, -0.5, 1.2])
    with no_fallback():
        got = gradient(_last_rows, w, 2, backend="llvm")[0]
    want = gradient(_last_rows, w, 2, backend="interp")[0]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got, central_differences(lambda v: _last_rows(v, 2), w), rtol=1e-6)
    np.testing.assert_allclose(got, 2 * (9 + 16) * w + w[::-1] + w[::-1], rtol=1e-12)


# -- sorted(xs, key=..., reverse=...) and range(n) as a value ------------------------------
def _argsort_by_magnitude(x):
    order = sorted(range(len(x)), key=lambda i: abs(x[i]), reverse=True)
    return sum(x[i] * (k + 1) for k, i in enumerate(order))


def _values_by_key(x):
    ys = sorted([x[0], x[1] * 2.0, x[2] ** 2], key=lambda v: -v)
    return ys[0] * 3.0 + ys[1] * 2.0 + ys[2]


def _pairs_by_first(x):
    pairs = sorted([(x[0], 1.0), (x[1], 2.0), (x[2], 3.0)], key=lambda p: p[0])
    return pairs[0][0] * pairs[0][1] + pairs[2][0] * pairs[2][1]


def _reversed_values(x):
    ys = sorted(x, reverse=True)
    return ys[0] - ys[-1] * 2.0


@pytest.mark.parametrize("f,closed", [
    # x = [0.3, -1.2, 0.9]: |x| puts 1, 2, 0 first; the key's order has no derivative
    (_argsort_by_magnitude, [3.0, 1.0, 2.0]),
    # values 0.3, -2.4, 0.81 by -v: 0.81 (x2**2), 0.3, -2.4
    (_values_by_key, [2.0, 2.0, 3 * 2 * 0.9]),
    (_pairs_by_first, [0.0, 2.0, 3.0]),
    (_reversed_values, [0.0, -2.0, 1.0]),
])
def test_sorted_with_key_or_reverse_compiles_and_differentiates(f, closed):
    x = np.array([0.3, -1.2, 0.9])
    with no_fallback():
        assert jit(f)(x) == f(x)
        got = gradient(f, x, backend="llvm")[0]
        tangent = jvp(f, (x,), (np.array([1.0, 10.0, 100.0]),))
    np.testing.assert_allclose(got, closed, rtol=1e-12)
    np.testing.assert_allclose(gradient(f, x, backend="interp")[0], closed, rtol=1e-12)
    np.testing.assert_allclose(got, central_differences(f, x), rtol=1e-6, atol=1e-9)
    assert tangent[1] == pytest.approx(np.dot(closed, [1.0, 10.0, 100.0]), rel=1e-12)


def test_sorted_with_key_keeps_cpythons_stable_order_of_ties():
    def f(x):
        order = sorted(range(len(x)), key=lambda i: round(x[i]))
        return x[order[0]] * 1.0 + x[order[1]] * 10.0 + x[order[2]] * 100.0
    x = np.array([1.2, 0.9, 1.1])          # all keys 1: the order stays 0, 1, 2
    with no_fallback():
        assert jit(f)(x) == f(x)
        got = gradient(f, x, backend="llvm")[0]
    np.testing.assert_allclose(got, [1.0, 10.0, 100.0])


@pytest.mark.parametrize("bounds", [(5,), (2, 9), (9, 2, -2), (3, 3), (-4, 11, 4), (7, -7, -3),
                                    (0, 1, 100), (1, 5, -1)])
def test_range_with_run_time_bounds_is_a_value(bounds):
    def f(*b):
        r = range(*b)
        s = 0
        for v in r:
            s = s * 3 + v
        return s, len(r), sorted(r, reverse=True)[0] if len(r) else -1
    with no_fallback():
        assert jit(f)(*bounds) == f(*bounds)


def test_range_step_zero_raises_cpythons_error():
    def f(a, b, c):
        return len(range(a, b, c))
    with pytest.raises(ValueError, match="range\\(\\) arg 3 must not be zero"):
        jit(f)(1, 5, 0)


# -- math.prod; np.isnan, np.isinf, np.isfinite ------------------------------------------
def _prod_display(x):
    return math.prod([x, 2.0, x, x + 1.0])          # 2 x^3 + 2 x^2


def _prod_built(x):
    return math.prod([x * i for i in range(1, 4)])  # 6 x^3


def _prod_start(x):
    return math.prod((x, x), start=2.0) + math.prod(()) + math.prod((3, 4))


@pytest.mark.parametrize("f,closed", [(_prod_display, lambda x: 6 * x * x + 4 * x),
                                      (_prod_built, lambda x: 18 * x * x),
                                      (_prod_start, lambda x: 4 * x)])
@pytest.mark.parametrize("x", [1.5, 0.0, -0.75])
def test_math_prod_compiles_and_differentiates(f, closed, x):
    with no_fallback():
        assert jit(f)(x) == f(x)
        got = gradient(f, x, backend="llvm")[0]
        tangent = jvp(f, (x,), (1.0,))[1]
    assert got == pytest.approx(closed(x), rel=1e-12, abs=1e-12)
    assert gradient(f, x, backend="interp")[0] == pytest.approx(closed(x), rel=1e-12, abs=1e-12)
    assert tangent == pytest.approx(closed(x), rel=1e-12, abs=1e-12)


def test_math_prod_of_an_array_and_of_a_shape():
    def f(a):
        return math.prod(a) * math.prod(a.shape)
    a = np.array([1.5, -2.0, 0.5])
    (g,) = gradient(f, a, backend="interp")
    np.testing.assert_allclose(g, 3 * np.array([-1.0, 0.75, -3.0]), rtol=1e-12)
    np.testing.assert_allclose(g, central_differences(f, a), rtol=1e-6)


def _guarded(w):
    if np.any(np.isnan(w)) or not np.all(np.isfinite(w)):
        return 0.0
    return np.sum(w ** 3) + np.sum(np.isinf(w))


@pytest.mark.parametrize("a", [np.array([1.0, np.inf, -np.inf, np.nan, -0.0]),
                               np.array([[1.0, np.nan], [np.inf, 2.0]], dtype=F32),
                               np.array([3, -4]), 2.5, float("nan"), float("-inf"), 7])
def test_isnan_isinf_isfinite_compile(a):
    def classes(x):
        return np.isnan(x), np.isinf(x), np.isfinite(x)
    with no_fallback():
        got = jit(classes)(a)
    for g, w in zip(got, classes(a)):
        assert np.array_equal(g, w)
        assert np.asarray(g).dtype == bool


@pytest.mark.parametrize("w", [np.array([0.5, -1.0, 2.0]), np.array([0.5, np.nan, 2.0]),
                               np.array([np.inf, 1.0, 2.0])])
def test_a_loss_guarded_by_isnan_compiles(w):
    with no_fallback():
        got = gradient(_guarded, w, backend="llvm")[0]
    want = gradient(_guarded, w, backend="interp")[0]
    np.testing.assert_array_equal(got, want)


def test_sorted_by_a_tuple_key_is_refused_in_the_users_terms():
    from jit.types import TypingError

    def f(x):
        ps = sorted([(x[0], 1.0), (x[1], 0.0)], key=lambda p: (p[1], p[0]))
        return ps[0][0]
    with pytest.raises(TypingError) as e:
        jit(f)(np.array([1.0, 2.0]))
    assert "key gives a number" in str(e.value) and "test_builtins_over_arrays.py" in str(e.value)
    assert "_sorted_keyed" not in str(e.value) and "sequence_builtins" not in str(e.value)
    from jit import JitFallbackWarning
    with pytest.warns(JitFallbackWarning, match="key gives a number"):
        assert gradient(f, np.array([1.0, 2.0]))[0].tolist() == [0.0, 1.0]   # (interpreted)


# -- min / max with key= ---------------------------------------------------------------
def _best_by_key(x):
    best = max([x[0], x[1] * 2.0, x[2] - 1.0, 5.0], key=lambda v: abs(v) if v < 4 else 0.0)
    worst = min(range(3), key=lambda i: x[i])           # an argmin: no derivative itself
    first = sorted(range(3), key=lambda i: -x[i])[0]
    return best * 3.0 + x[worst] + x[first] * 10.0 + max(x, key=lambda v: -v) * 0.5


@pytest.mark.parametrize("x,closed", [
    (np.array([0.3, -1.2, 0.9]), [0.0, 6.0 + 1.0 + 0.5, 10.0]),
    (np.array([2.5, 0.1, -3.0]), [10.0, 0.0, 3.0 + 1.0 + 0.5]),
])
def test_min_and_max_with_a_key_compile_and_differentiate(x, closed):
    with no_fallback():
        assert jit(_best_by_key)(x) == _best_by_key(x)
        got = gradient(_best_by_key, x, backend="llvm")[0]
        tangent = jvp(_best_by_key, (x,), (np.array([1.0, 10.0, 100.0]),))[1]
    np.testing.assert_allclose(got, closed, rtol=1e-12)
    np.testing.assert_allclose(gradient(_best_by_key, x, backend="interp")[0], closed, rtol=1e-12)
    np.testing.assert_allclose(got, central_differences(_best_by_key, x), rtol=1e-6, atol=1e-9)
    assert tangent == pytest.approx(np.dot(closed, [1.0, 10.0, 100.0]), rel=1e-12)


def test_max_of_an_empty_list_with_a_key_raises_cpythons_error():
    def f(x, n):
        return max([x * i for i in range(n)], key=lambda v: -v)
    with pytest.raises(ValueError) as want:
        f(1.0, 0)
    with pytest.raises(ValueError) as got:
        jit(f)(1.0, 0)
    assert str(got.value).startswith(str(want.value))
