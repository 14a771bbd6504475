"""Library calls compiled by jit.library.array_calls (and np.sum of 2-D arrays): values equal
CPython's / numpy's, gradients equal the interpreter's (tests/jit_grad_check)."""
from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from jit_grad_check import check_llvm

import adjoint
import jit


def _outcome(f, *args):
    try:
        return "ok", f(*args)
    except Exception as e:  # noqa: BLE001 (the error type is the outcome)
        return type(e), None


def _same(w, r) -> bool:
    if w[0] != r[0]:
        return False
    if w[0] != "ok":
        return True
    a, b = np.asarray(w[1]), np.asarray(r[1])
    return (a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
            and bool(np.all(np.signbit(a) == np.signbit(b))))


def powmod3(a, b, m):
    return pow(a, b, m)


def _powmod_cases() -> list:
    rnd = random.Random(7)
    cases = [(17, 5, 11), (-17, 5, 11), (3, 200, 1000003), (3, -1, 7), (2, -1, 4), (5, 3, -7),
             (0, 0, 1), (2 ** 62, 2 ** 62 + 3, 2 ** 63 - 1), (-5, 7, -(2 ** 40)), (4, -3, -9),
             (7, 0, -5), (3, 2, 0), (True, 5, 3)]
    for _ in range(150):
        m = rnd.choice([rnd.randint(-2 ** 63 + 1, 2 ** 63 - 1), rnd.randint(-100, 100)])
        cases.append((rnd.randint(-2 ** 63, 2 ** 63 - 1), rnd.randint(-50, 2 ** 63 - 1), m))
    return cases


def test_pow_with_modulus_matches_cpython():
    f = jit.jit(powmod3)
    for case in _powmod_cases():
        w, r = _outcome(powmod3, *case), _outcome(f, *case)
        assert w == r, case


def test_pow_with_modulus_result_is_int():
    assert type(jit.jit(powmod3)(3, 4, 5)) is int


RNG = np.random.default_rng(3)
ARRAYS = [RNG.normal(size=7), RNG.normal(size=(3, 4)), np.array([1.0, 3.0, 3.0, -2.0]),
          np.array([1.0, np.nan, 2.0]), np.array([0.0, 2.0, -0.0]), np.array([]),
          np.array([0.0, -0.0]), np.array([-0.0, 0.0])]
# (Not here: 2-D arrays that are not C-contiguous: numpy keeps their memory order in
# elementwise results and sums in that order; the JIT's results are C-ordered.)
REDUCTIONS = [
    lambda a: np.max(a), lambda a: np.min(a) * 2.0, lambda a: np.prod(a),
    lambda a: np.amax(a) + np.amin(a), lambda a: np.sum(np.maximum(a, 0.1)),
    lambda a: np.sum(np.minimum(0.1, a)), lambda a: np.sum(np.maximum(a, a * a)),
    lambda a: np.sum(np.minimum(a * 0.5, a)), lambda a: np.sum(np.copy(a) * a),
    lambda a: np.sum(np.sqrt(np.abs(a)) + np.abs(a)), lambda a: np.prod(a * 0.0),
]


@pytest.mark.parametrize("k", range(len(REDUCTIONS)))
def test_reductions_values(k):
    def g(a, f=REDUCTIONS[k]):
        return f(a)
    for a in ARRAYS:
        assert _same(_outcome(g, a), _outcome(jit.jit(g), a)), (k, a)


@pytest.mark.parametrize("k", range(len(REDUCTIONS)))
def test_reductions_gradients(k):
    def g(a, f=REDUCTIONS[k]):
        return f(a)
    for a in ARRAYS:
        if a.size and not np.isnan(a).any():
            assert check_llvm(g, a) == "ok", (k, a)


def test_maximum_of_two_arrays_and_signed_zeros():
    def g(a, b):
        return np.maximum(a, b), np.minimum(b, a)
    a, b = np.array([0.0, -0.0, 1.0, np.nan]), np.array([-0.0, 0.0, np.nan, 2.0])
    for w, r in zip(g(a, b), jit.jit(g)(a, b)):
        assert _same(("ok", w), ("ok", r))
    with pytest.raises(ValueError):
        jit.jit(g)(a, b[:3].copy())


def test_max_of_empty_raises_value_error():
    def g(a):
        return np.max(a)
    with pytest.raises(ValueError, match="zero-size array"):
        jit.jit(g)(np.array([]))


def test_sign_of_numbers():
    def g(x):
        return np.sign(x)
    for x in (2.0, -3.0, 0.0, -0.0, float("nan"), 3, -2, 0):
        w, r = g(x), jit.jit(g)(x)
        assert (w == r or (w != w and r != r)) and type(r) is type(x), x


@pytest.mark.parametrize("shape", [(3, 4), (1, 9), (9, 1), (20, 30), (300, 7), (0, 3)])
def test_sum_of_contiguous_2d_is_numpys(shape):
    def g(a):
        return np.sum(a)
    x = RNG.normal(size=shape)
    assert jit.jit(g)(x) == g(x)


def round_n(x, n):
    return round(x, n)


def round_kw(x):
    return round(x, ndigits=2) * x


def test_round_with_ndigits_matches_cpython():
    import math
    rnd = random.Random(5)
    xs = [2.675, 0.125, 0.375, -0.001, 1e300, -1.5e-300, math.inf, -math.inf, 0.0, -0.0,
          5e-324, 1.7976931348623157e308, 123456.789]
    xs += [rnd.uniform(-1e6, 1e6) for _ in range(100)]
    xs += [rnd.random() * 10 ** rnd.randint(-20, 20) for _ in range(100)]
    f = jit.jit(round_n)
    for x in xs:
        for n in (0, 1, 2, 3, 7, 17, 30, 322, 323, 324, 400, -1, -3, -400, True):
            w, r = round_n(x, n), f(x, n)
            assert type(r) is float and w == r and math.copysign(1, w) == math.copysign(1, r)
    assert math.isnan(f(math.nan, 2))


def test_round_gradients_and_keyword():
    assert jit.jit(round_kw)(1.23456) == round_kw(1.23456)
    for x in (1.23456, -0.5, 3.0):
        assert check_llvm(round_kw, x) == "ok"


def extremes(x, y):
    return max(x, -1.0, 0.5) + min(1.0, x, y) * 2.0 + max(x, y) - min(y, x, 0.25, -3)


@pytest.mark.parametrize("x,y", [(2.0, 0.3), (-2.0, 5.0), (0.5, 0.5), (1.0, 1.0),
                                 (-0.0, 0.0), (-5.0, -5.0)])
def test_min_max_of_numbers_gradients(x, y):
    assert jit.jit(extremes)(x, y) == extremes(x, y)
    assert check_llvm(extremes, x, y) == "ok"


def _stencil(u, nu, steps):
    for _ in range(steps):
        u = u + nu * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
    return np.sum(u * u)


def test_compiled_calls_do_not_fault_their_arena_memory_in_again():
    """A call allocates its arrays (4.8 MB here) and frees them all on return; glibc
    keeps that memory (`keep_freed_memory`), so the next call takes no page faults
    for it (1,600 a call otherwise)."""
    import resource

    from jit.runtime import native
    if not native.keep_freed_memory():
        pytest.skip("glibc's malloc parameters are the environment's here")
    f = jit.jit(_stencil)
    args = (np.linspace(-1.0, 1.0, 1000), 0.2, 100)
    for _ in range(3):
        f(*args)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        f(*args)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before < 200


def _misaligned(values) -> np.ndarray:
    """A float64 array whose elements sit 12 bytes apart (numpy allows it; its
    `flags.aligned` is False)."""
    raw = np.zeros(12 * len(values) + 8, np.uint8)
    a = np.ndarray((len(values),), np.float64, raw, strides=(12,))
    a[...] = values
    assert not a.flags.aligned
    return a


def _weighted(a, w):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * w[i]
    return s + np.sum(a * a)


MISALIGNED_CONSTANT = _misaligned([0.5, -1.5, 2.5])


def _reads_constant(x):
    return np.sum(MISALIGNED_CONSTANT * x)


def test_arrays_whose_strides_are_not_multiples_of_8_are_read_right():
    """Compiled code counts 8-byte elements, not bytes (so that loops vectorise): an
    array argument with other strides runs through Python, one nested in a tuple too,
    and a module-level one is refused by compiled code (a copy would miss later writes
    into it: globals are live), so `backend="auto"` reads it in the interpreter."""
    a, w = _misaligned([1.0, 2.0, 3.0]), np.array([0.5, 0.25, 2.0])
    want = _weighted(a, w)
    assert jit.jit(_weighted)(a, w) == want
    assert jit.jit(_weighted)(w, a) == _weighted(w, a)
    pair = jit.jit(lambda t: _weighted(t[0], t[1]))
    assert pair((a, w)) == want and pair((w.copy(), w)) == _weighted(w, w)
    with pytest.raises(TypeError, match="not aligned"):
        jit.jit(_reads_constant)(w)
    with warnings.catch_warnings():      # (the interpreter's fallback, said once)
        warnings.simplefilter("ignore")
        got = adjoint.gradient(_reads_constant, w)[0]
    np.testing.assert_array_equal(got, MISALIGNED_CONSTANT)
    y, back = adjoint.pullback(_weighted, a, w, backend="llvm")
    assert y == want
    np.testing.assert_allclose(back(1.0)[0], w + 2 * np.asarray(a), rtol=1e-15)
