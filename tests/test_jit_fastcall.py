"""The native call wrapper of scalar signatures (jit.runtime.fastcall): same results, errors,
fallbacks and reference counts as the Python wrapper it stands in front of."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import jit
from jit.runtime import fastcall as fastcall


def scale(a, n):
    return a * n


def recip(x):
    return 1.0 / x


def imul(n, m):
    return n * m


def _native(f, *args):
    g = jit.jit(f)
    g(*args)
    return g, list(g.dispatcher.fast.values())


def test_scalar_signature_gets_a_builtin():
    if not fastcall.LAYOUT_OK:
        pytest.skip("object layout differs")
    _, wrappers = _native(recip, 2.0)
    assert type(wrappers[0]).__name__ == "builtin_function_or_method"


def test_values_and_types():
    f, g = jit.jit(scale), jit.jit(imul)
    assert f(2.0, 3) == 6.0 and type(f(2.0, 3)) is float
    assert f(2, 3.0) == 6.0 and f(True, 2) == 2 and type(f(True, 2)) is int
    assert g(3, 4) == 12 and type(g(3, 4)) is int


def test_ints_beyond_int64_and_overflow_fall_back():
    f, g = jit.jit(scale), jit.jit(imul)
    g(1, 1)
    assert g(2 ** 62, 4) == 2 ** 64
    assert g(2 ** 40, 2 ** 40) == 2 ** 80
    assert g(-5, 2 ** 80) == -5 * 2 ** 80
    f(2.0, 3)
    assert f(2.0, 2 ** 70) == 2.0 * 2 ** 70


def test_errors_are_cpythons_and_repeatable():
    f = jit.jit(recip)
    assert f(4.0) == 0.25
    for _ in range(100):
        with pytest.raises(ZeroDivisionError):
            f(0.0)
    assert f(2.0) == 0.5


def test_wrong_arity_raises_type_error():
    f = jit.jit(recip)
    f(1.0)
    with pytest.raises(TypeError):
        f(1.0, 2.0)


def test_reference_counts_are_stable():
    f = jit.jit(recip)
    x = 2.5
    f(x)
    before = sys.getrefcount(x)
    for _ in range(1000):
        f(x)
    assert sys.getrefcount(x) == before


def ratio_log(x, y):
    return x / y + math.log(x)


def square_times(n, x):
    return n * n * x


def test_native_pullback_matches_interpreter():
    import adjoint
    for args in [(2.0, 4.0), (0.5, -3.0)]:
        y, back = adjoint.pullback(ratio_log, *args, backend="llvm")
        yi, bi = adjoint.pullback(ratio_log, *args, backend="interp")
        assert y == yi and back(1.0) == bi(1.0) and back(2.5) == bi(2.5)
    for n in (3, 2 ** 40, 2 ** 70):
        y, back = adjoint.pullback(square_times, n, 1.5, backend="llvm")
        assert y == square_times(n, 1.5) and back(1.0) == (None, float(n * n))


def test_native_pullback_errors_are_cpythons():
    import adjoint
    with pytest.raises(ZeroDivisionError):
        adjoint.pullback(ratio_log, 2.0, 0.0, backend="llvm")
    with pytest.raises(ValueError, match="math domain error"):
        adjoint.pullback(ratio_log, -1.0, 2.0, backend="llvm")
    y, back = adjoint.pullback(ratio_log, 2.0, 4.0, backend="llvm")
    assert back(1.0) == (0.75, -0.125)


def _masked_sum(m, x):
    return np.sum(x[m])


def test_a_bool_array_argument_is_guarded_with_its_own_dtype():
    """The Python wrapper guarded a bool array with int64's dtype number, so every call
    rerouted to itself (RecursionError before e42565f)."""
    f = jit.jit(_masked_sum)
    assert f(np.array([True, False, True]), np.arange(3.0)) == 2.0
    assert f(np.array([1, 0, 2]), np.arange(3.0)) == 3.0
    assert f(np.array([False, True, True]), np.arange(3.0)) == 3.0


def _several(x, n):
    return (x * 2.0, (n + 1, x > 0.0), None)


def test_a_tuple_of_numbers_is_boxed_by_the_builtin():
    if not fastcall.LAYOUT_OK:
        pytest.skip("object layout differs")
    g, wrappers = _native(_several, 1.5, 3)
    assert type(wrappers[0]).__name__ == "builtin_function_or_method"
    for x, n in ((1.5, 3), (-2.0, -7)):
        got, want = g(x, n), _several(x, n)
        assert got == want and type(got[0]) is float and type(got[1][0]) is int
        assert got[1][1] is want[1][1] and got[2] is None
    none_before, x = sys.getrefcount(None), 2.5
    x_before = sys.getrefcount(x)
    for _ in range(1000):
        g(x, 3)
    assert sys.getrefcount(x) == x_before
    # a missing (or extra) reference to None per call would move it by 1000; other
    # objects of the process come and go meanwhile
    assert abs(sys.getrefcount(None) - none_before) < 100
