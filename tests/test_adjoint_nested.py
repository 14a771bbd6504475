"""Nested reverse mode: second derivatives by `gradient` inside differentiated code,
`hessian`, and the differentiated tape operations (adjoint/nested.py)."""
import copy
import math

import numpy as np
import pytest

import adjoint
import corpus
import lowering

CASES, _ = corpus.load()


def second(f, x, *rest):
    """d/dx of d f/dx, by nested reverse mode (no *args in the lambda: the lowering
    refuses star-calls)."""
    if not rest:
        return adjoint.gradient(lambda t: adjoint.gradient(f, t)[0], x)[0]
    if len(rest) == 1:
        r0 = rest[0]
        return adjoint.gradient(lambda t: adjoint.gradient(f, t, r0)[0], x)[0]
    r0, r1 = rest
    return adjoint.gradient(lambda t: adjoint.gradient(f, t, r0, r1)[0], x)[0]


def first(f, x, *rest):
    return adjoint.gradient(f, x, *rest)[0]


def fd_second(f, x, *rest, h=1e-5):
    return (first(f, x + h, *rest) - first(f, x - h, *rest)) / (2 * h)


def poly(x):
    return x ** 3 - 2.0 * x * x + x


def trig(x):
    return math.sin(x) * math.cos(2.0 * x) + math.exp(-x * x)


def pow_loop(x, n):
    r = 1.0
    while n > 0:
        n -= 1
        r *= x
    return r


def branchy(x):
    if x > 1.0:
        return math.log(x) * x
    return x * x * x


def rec(x, n):
    return x if n == 0 else math.tanh(rec(x, n - 1)) + x * 0.5


def square(t):
    return t * t


def twice(f, v):
    return f(f(v))


def higher_order(x):
    return twice(square, x) + twice(math.sin, x)


def closure(x):
    k = x * 2.0

    def inner(t):
        return t * k + math.sqrt(t)
    return inner(x) * inner(1.5)


@pytest.mark.parametrize("f,x,rest", [
    (poly, 1.3, ()), (trig, 0.4, ()), (pow_loop, 1.5, (4,)), (branchy, 2.0, ()),
    (branchy, 0.5, ()), (rec, 0.3, (6,)), (higher_order, 0.7, ()), (closure, 1.2, ()),
])
def test_second_derivative(f, x, rest):
    assert second(f, x, *rest) == pytest.approx(fd_second(f, x, *rest), rel=1e-5, abs=1e-7)


def test_exact_second_derivatives():
    assert second(poly, 2.0) == pytest.approx(6 * 2.0 - 4.0)
    assert second(pow_loop, 1.5, 4) == pytest.approx(12 * 1.5 ** 2)


def test_hessian():
    def g(x):
        return x[0] ** 2 * x[1] + math.exp(x[1]) + x[0] * x[2]
    x = np.array([1.0, 0.5, -2.0])
    h = adjoint.hessian(g, x)
    expect = [[2 * x[1], 2 * x[0], 1.0], [2 * x[0], math.exp(x[1]), 0.0], [1.0, 0.0, 0.0]]
    np.testing.assert_allclose(h, expect, rtol=1e-12, atol=1e-12)


def test_hessian_through_loop_over_array():
    def energy(x):
        s = 0.0
        for i in range(len(x) - 1):
            d = x[i + 1] - x[i]
            s += d * d * d * d
        return s
    x = np.array([0.1, 0.4, 1.0, 0.7])
    h = adjoint.hessian(energy, x)
    eps = 1e-6
    fd = np.array([(adjoint.gradient(energy, x + eps * e)[0]
                    - adjoint.gradient(energy, x - eps * e)[0]) / (2 * eps)
                   for e in np.eye(4)])
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-6)


def _corpus_scalar_cases():
    out = []
    for c in CASES:
        for args in c.args:
            if not args or not isinstance(args[0], float) or len(args) > 3:
                continue
            try:
                y = c.func(*copy.deepcopy(args))
            except Exception:  # noqa: BLE001
                continue
            if isinstance(y, float):
                out.append(pytest.param(c.func, args, id=f"{c.id}-{len(out)}"))
    return out


@pytest.mark.parametrize("func,args", _corpus_scalar_cases())
def test_corpus_second_derivatives(func, args):
    x, rest = args[0], args[1:]
    try:
        lowering.lower(func)
    except lowering.UnsupportedError:
        pytest.skip("the lowering refuses this construct")
    try:
        fd1, fd2 = fd_second(func, x, *rest), fd_second(func, x, *rest, h=2e-5)
    except (ValueError, ZeroDivisionError, OverflowError):
        pytest.skip("the first derivative is not defined around this point")
    except TypeError as e:
        if "through a cell" not in str(e):
            raise
        pytest.skip("reverse mode refuses cells (closures over reassigned variables)")
    if not math.isfinite(fd1) or abs(fd1 - fd2) > 1e-4 * max(1.0, abs(fd1)):
        pytest.skip("not twice differentiable here")
    assert second(func, x, *rest) == pytest.approx(fd1, rel=1e-4, abs=1e-6)


A = np.array([[2.0, 1.0], [0.5, 3.0]])


def quadratic(x):
    return np.dot(x, A @ x)


def sum_sin(x):
    return np.sum(np.sin(x) * x)


def test_hessian_of_numpy_functions():
    x = np.array([0.3, -0.7])
    np.testing.assert_allclose(adjoint.hessian(quadratic, x), A + A.T, rtol=1e-12)
    np.testing.assert_allclose(adjoint.hessian(sum_sin, x),
                               np.diag(2 * np.cos(x) - x * np.sin(x)), rtol=1e-12)


def test_deep_recursion_raises_recursion_error():
    def deep(x, n):
        return x if n == 0 else deep(x * 1.0001, n - 1)
    with pytest.raises(RecursionError):
        adjoint.gradient(deep, 1.0, 100_000)


def star_cubes(*a):
    return np.sum(a[0] ** 3)


def test_nested_gradient_of_a_function_taking_star_args():
    # the nested gradient's arguments bind *a one for one (the silent wrong answer was
    # d/dx of sum(3 x^2), with `a` bound to x itself: a[0] its first entry)
    def outer(x):
        return np.sum(adjoint.gradient(star_cubes, x)[0] * x)
    x = np.array([1.0, 2.0])
    for backend in ("interp", "auto"):
        np.testing.assert_allclose(adjoint.gradient(outer, x, backend=backend)[0], 9 * x ** 2,
                                   rtol=1e-12)


def test_nested_gradient_of_a_star_args_closure_is_refused_not_wrong():
    def outer(x):
        k = x[0]

        def h(*a):
            return k * np.sum(a[0] ** 3)
        return np.sum(adjoint.gradient(h, x)[0])
    with pytest.raises(TypeError, match=r"gradient\(\) of .*outer.<locals>.h, a closure that "
                                        r"takes \*args"):
        adjoint.gradient(outer, np.array([1.0, 2.0]), backend="interp")
