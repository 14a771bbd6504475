"""A nested `gradient` / `value_and_grad` of a closure over differentiated values,
compiled: the inner function reads values the outer gradient differentiates (Newton's
method on a parametrised function, MAML's inner step, a scale computed from the
weights).  The nested call's pullback gives the closure a cotangent, the tuple of its
captured values' cotangents (`adjoint.nested_hv.gradient_pullback`); compiled code
reads a closure's captured values with `captured_values` (`jit.pullback.nested_gradient`).

Every case runs with warnings as errors, so a fallback to the interpreter fails it; the
compiled gradient must match the interpreter's and central differences."""
import math
import warnings

import numpy as np
import pytest

from adjoint import gradient, value_and_grad
from adjoint_check import central_differences

RNG = np.random.default_rng(7)
X = RNG.normal(size=(6, 3))
Y = RNG.normal(size=6)


def newton_root(a, steps=3):
    """Newton steps on z**3 + a z - 1 = 0 from z = 1."""
    def p(z):
        return z ** 3 + a * z - 1.0
    z = 1.0
    for _ in range(steps):
        z = z - p(z) / gradient(p, z)[0]
    return z


def scaled_sines(w):
    s = np.sum(w)
    def inner(v):
        return np.sum(np.sin(v * s))
    return np.sum(gradient(inner, w)[0] ** 2)


def two_captures(x, y):
    c = x * y               # differentiated
    k = 3.0                 # constant
    def g(t):
        return math.sin(c * t) + k * t * t + y
    return gradient(g, x + 0.5)[0] * y


def value_and_slope(a):
    def q(t):
        return a * t ** 3 - math.exp(a * t)
    v, (d,) = value_and_grad(q, 0.4)
    return v * d + a


def maml_captured_data(w, xs):
    """MAML's inner step where the task data are differentiated too."""
    def task(v):
        return np.mean((xs @ v - Y) ** 2)
    g = gradient(task, w)[0]
    return task(w - 0.1 * g)


def captured_array_twice(w):
    b = np.tanh(w)
    def energy(u):
        return np.sum((u - b) ** 2 * b)
    return energy(w * 0.5) + np.sum(gradient(energy, w)[0] * w)


CASES = [
    (newton_root, (0.7,)),
    (newton_root, (2.5,)),
    (scaled_sines, (np.array([0.3, -0.2, 0.5]),)),
    (two_captures, (0.6, -1.3)),
    (value_and_slope, (0.8,)),
    (maml_captured_data, (np.array([0.3, -0.2, 0.5]), X)),
    (captured_array_twice, (np.array([0.2, -0.7, 1.1, 0.4]),)),
]


@pytest.mark.parametrize("f, args", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_compiled_matches_interpreter_and_differences(f, args):
    want = gradient(f, *args, backend="interp")
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # a fallback to the interpreter fails
        got = gradient(f, *args, backend="llvm")
    assert len(got) == len(args)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g, central_differences(f, args, k), rtol=1e-5, atol=1e-7)


def test_newton_root_against_implicit_differentiation():
    """After enough steps z(a) solves z**3 + a z = 1, so dz/da = -z / (3 z**2 + a)."""
    a = 0.7
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g, none = gradient(newton_root, a, 30, backend="llvm")
    assert none is None
    z = newton_root(a, 30)
    assert g == pytest.approx(-z / (3 * z * z + a), rel=1e-12)


T0 = 0.4


def slope_squared(a):
    """d(a)**2 + a with d = dq/dt at T0 of a closure q over a."""
    def q(t):
        return a * t ** 3 - math.exp(a * t)
    (d,) = gradient(q, T0)
    return d * d + a


def value_squared(a):
    def q(t):
        return a * t ** 3 - math.exp(a * t)
    v, (d,) = value_and_grad(q, T0)
    return v * v + d * a


def closed_second(a, kind):
    """The second derivative of slope_squared / value_squared by hand."""
    e = math.exp(a * T0)
    d, d1, d2 = 3 * a * T0 ** 2 - a * e, 3 * T0 ** 2 - e - a * T0 * e, \
        -2 * T0 * e - a * T0 * T0 * e
    if kind == "slope":
        return 2 * d1 * d1 + 2 * d * d2
    v, v1, v2 = a * T0 ** 3 - e, T0 ** 3 - T0 * e, -T0 * T0 * e
    return 2 * v1 * v1 + 2 * v * v2 + d2 * a + 2 * d1


@pytest.mark.parametrize("f, kind", [(slope_squared, "slope"), (value_squared, "value")])
def test_second_order_through_captured_values(f, kind):
    """The gradient of the gradient: the pullback of the nested call is differentiated,
    and the closure's cotangent (a tuple) is added entry by entry.  Before, two such
    tuples were concatenated, and the captured value got only the first one: a wrong
    number with no error (the interpreter; the JIT runs this order there too)."""
    a = 0.8
    for backend in ("interp", "auto"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = gradient(lambda x: gradient(f, x, backend=backend)[0], a,
                           backend=backend)[0]
        assert got == pytest.approx(closed_second(a, kind), rel=1e-9)


def test_third_order_through_captured_values():
    """gradient of (gradient of a closure over x) of a closure over x: d/dx of
    d/dx [d/dt (x t^3)]_{t=x} = d/dx [d/dx 3 x^3] = 18 x."""
    def inner(x):
        return gradient(lambda t: x * t ** 3, x)[0]          # 3 x^3
    def middle(x):
        return gradient(lambda t: inner(t) * x / x, x)[0]    # 9 x^2
    x = 1.3
    (g,) = gradient(middle, x, backend="interp")
    assert g == pytest.approx(18 * x, rel=1e-10)
