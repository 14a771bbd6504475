"""A number or string of an object's class read through the object (`self.eps` with
`eps = 1e-8` in the class body) compiles as a constant, and rebinding it on the class
or on a subclass compiles again: no stale value, in `gradient` and `jit.jit`, for an
object passed in and for one made inside the function.  A class constant read through
the class (`C.factor`) is likewise never stale in `jit.jit` (its disk-cache key holds
the value)."""
import warnings

import numpy as np
import pytest

import jit
from adjoint import gradient

X = np.array([1.0, 2.0])


class Scaled:
    factor = 2.0
    kind = "square"

    def __init__(self, w):
        self.w = w

    def energy(self, x):
        p = 2 if self.kind == "square" else 3
        return self.factor * np.sum(self.w * x ** p)


class Derived(Scaled):
    pass


class Namespace:
    factor = 2.0


def passed_in(x, obj):
    return obj.energy(x)


def made_inside(x):
    return Derived(np.ones(2)).energy(x)


def through_the_class(x):
    return Namespace.factor * np.sum(x)


def want(factor, kind="square"):
    return factor * (2 * X if kind == "square" else 3 * X ** 2)


@pytest.fixture(autouse=True)
def restore():
    yield
    Scaled.factor, Scaled.kind, Namespace.factor = 2.0, "square", 2.0
    for name in ("factor", "kind"):
        if name in vars(Derived):
            delattr(Derived, name)


def grad(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # compiled, no fallback
        return gradient(f, *args, backend="llvm")[0]


@pytest.mark.parametrize("cls", [Scaled, Derived])
def test_a_class_constant_read_through_an_object_passed_in(cls):
    obj = cls(np.ones(2))
    np.testing.assert_allclose(grad(passed_in, X, obj), want(2.0))
    Scaled.factor = 3.0
    np.testing.assert_allclose(grad(passed_in, X, obj), want(3.0))
    Derived.factor = 0.5               # shadows the base's on the subclass only
    np.testing.assert_allclose(grad(passed_in, X, obj), want(0.5 if cls is Derived else 3.0))
    Scaled.kind = "cube"               # a string: the branch on it folds again
    expect = want(0.5 if cls is Derived else 3.0, "cube")
    np.testing.assert_allclose(grad(passed_in, X, obj), expect)
    assert jit.jit(passed_in)(X, obj) == pytest.approx(passed_in(X, obj))


def test_a_class_constant_read_through_an_object_made_inside():
    f = jit.jit(made_inside)
    np.testing.assert_allclose(grad(made_inside, X), want(2.0))
    assert f(X) == pytest.approx(10.0)
    Scaled.factor = 3.0
    np.testing.assert_allclose(grad(made_inside, X), want(3.0))
    assert f(X) == pytest.approx(15.0)
    Derived.factor = 0.5
    np.testing.assert_allclose(grad(made_inside, X), want(0.5))
    assert f(X) == pytest.approx(2.5)


def test_a_class_constant_read_through_the_class_is_never_stale_in_jit():
    f = jit.jit(through_the_class)
    assert f(X) == 6.0
    Namespace.factor = 3.0
    assert f(X) == 9.0
    np.testing.assert_allclose(grad(through_the_class, X), [3.0, 3.0])


def test_the_object_gets_no_cotangent_for_a_class_constant():
    g = gradient(lambda obj, x: obj.energy(x), Scaled(np.ones(2)), X, backend="llvm")[0]
    np.testing.assert_allclose(g.w, 2.0 * X ** 2)


class WithClassmethod:
    factor = 2.0

    @staticmethod
    def square(v):
        return v * v

    @classmethod
    def scaled(cls, v):
        return cls.factor * cls.square(v)


def through_a_classmethod(x):
    return np.sum(WithClassmethod.scaled(x))


def test_a_classmethod_reads_its_class_constants_and_staticmethods():
    f = jit.jit(through_a_classmethod)
    try:
        np.testing.assert_allclose(grad(through_a_classmethod, X), 4.0 * X)
        assert f(X) == pytest.approx(10.0)
        WithClassmethod.factor = 3.0
        np.testing.assert_allclose(grad(through_a_classmethod, X), 6.0 * X)
        assert f(X) == pytest.approx(15.0)
    finally:
        WithClassmethod.factor = 2.0
