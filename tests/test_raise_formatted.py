"""`assert ok, f"... {x.shape}"` and `raise ValueError(f"...")` compile: the passing
path runs natively (no fallback), and a failing check leaves compiled code at the
raise so that the interpreter's rerun raises CPython's exception, formatted by Python."""
import warnings

import numpy as np
import pytest

import jit
from adjoint import gradient
from formatted_raises import energy


X = np.array([1.0, 2.0, 3.0])


def test_the_passing_path_compiles_with_no_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (g,) = gradient(energy, X, 2.0, backend="llvm")[:1]
        assert jit.jit(energy)(X, 2.0) == pytest.approx(14.0)
    np.testing.assert_allclose(g, 2.0 * X)


@pytest.mark.parametrize("backend", ["llvm", "auto", "interp"])
def test_a_failing_assert_raises_the_formatted_message(backend):
    with pytest.raises(AssertionError, match=r"expected a vector, got shape \(2, 2\)"):
        gradient(energy, np.ones((2, 2)), 2.0, backend=backend)


@pytest.mark.parametrize("backend", ["llvm", "auto", "interp"])
def test_a_raise_with_an_f_string_raises_cpythons_error(backend):
    with pytest.raises(ValueError, match="scale must be positive, got -1.50"):
        gradient(energy, X, -1.5, backend=backend)


def test_jit_raises_the_exception_class():
    f = jit.jit(energy)
    assert f(X, 1.0) == pytest.approx(7.0)
    # (`jit.jit` reruns the call in Python only when its typing writes no arrays;
    # otherwise the class is raised with the site, not the formatted text)
    with pytest.raises(ValueError, match="scale must be positive|formatted message"):
        f(X, -1.5)
