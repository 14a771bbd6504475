"""A differentiated function that itself calls forward mode (`jvp`, `hvp`, `jacfwd`,
`hessian`): reverse over forward and forward over forward, compiled with no fallback
where the call's function is known where it is called; checked against closed forms
and central differences, in the interpreter and compiled."""
import math
import warnings

import numpy as np
import pytest

import adjoint
from adjoint import gradient, hessian, hvp, jacfwd, jvp
from jit import JitFallbackWarning, jit

BACKENDS = ["interp", "llvm"]
X = np.array([0.3, -0.7, 0.5])
V = np.array([1.0, 0.5, -2.0])
U = np.array([-0.4, 1.5, 0.25])


def strict(fn, *args, **kw):
    """`fn(*args, **kw)`, any warning (a fallback to the interpreter) an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kw)


def central(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


# f = sum(x sin x): its gradient, the Hessian's diagonal (the Hessian is diagonal) and
# that diagonal's derivative, in closed form
def f(x):
    return np.sum(np.sin(x) * x)


def grad_f(x):
    return np.sin(x) + x * np.cos(x)


def hess_f(x):
    return 2 * np.cos(x) - x * np.sin(x)


def dhess_f(x):
    return -3 * np.sin(x) - x * np.cos(x)


# -- reverse over forward ----------------------------------------------------------------
def directional_squared(x):
    return jvp(f, (x,), (V,))[1] ** 2


def curvature_penalty(x):
    return f(x) + 0.1 * hvp(f, x, V) @ V


PROBES = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, 1.0]])


def quartic(x):
    return np.sum(x ** 4) / 12.0 + x[0] * x[1]


def hutchinson_trace(x):
    """The Hessian's trace estimated with sign probes: exact here (the only
    off-diagonal entry, 1, cancels over the probes), so it is sum(x ** 2)."""
    s = 0.0
    for k in range(len(PROBES)):
        v = PROBES[k]
        s = s + v @ hvp(quartic, x, v)
    return s / len(PROBES)


def small_map(x):
    return np.array([x[0] * x[1], np.sin(x[2]), x[0] ** 2])


def jacobian_norm(x):
    J = jacfwd(small_map, x)[0]
    return np.sum(J * J)


def hessian_sum(x):
    return np.sum(hessian(f, x))


CASES = [
    (directional_squared, lambda x: 2 * (V @ grad_f(x)) * V * hess_f(x)),
    (curvature_penalty, lambda x: grad_f(x) + 0.1 * V * V * dhess_f(x)),
    (hutchinson_trace, lambda x: 2 * x),
    (jacobian_norm, lambda x: np.array([10 * x[0], 2 * x[1], -np.sin(2 * x[2])])),
    (hessian_sum, dhess_f),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("loss,want", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_loss_calling_forward_mode_is_differentiated(loss, want, backend):
    (g,) = strict(gradient, loss, X, backend=backend)
    np.testing.assert_allclose(g, want(X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g, central(loss, X), rtol=1e-6, atol=1e-8)


def test_the_transforms_take_such_a_loss_compiled():
    np.testing.assert_allclose(strict(adjoint.grad(curvature_penalty, backend="llvm"), X),
                               grad_f(X) + 0.1 * V * V * dhess_f(X), rtol=1e-10)
    value, g = strict(adjoint.value_and_grad(jacobian_norm), X)
    assert math.isclose(value, jacobian_norm(X), rel_tol=1e-12)
    np.testing.assert_allclose(g, [10 * X[0], 2 * X[1], -np.sin(2 * X[2])], rtol=1e-10)


def test_a_closure_made_in_the_loss_carries_its_captured_values_gradient():
    def loss(x, w):
        return jvp(lambda z: np.sum(w * z ** 3), (x,), (V,))[1]    # 3 <w x^2, V>
    for backend in BACKENDS:
        gx, gw = strict(gradient, loss, X, 2.0, backend=backend)
        np.testing.assert_allclose(gx, 12.0 * X * V, rtol=1e-12)
        assert math.isclose(gw, 3 * np.sum(X * X * V), rel_tol=1e-12)


def linear_in_n(x, n):
    return x * n + x ** 2


def scaled_tangent(x):      # the tangent in x: n + 2x, whatever n's tangent says
    return jvp(linear_in_n, (x, 3), (1.0, 1.0))[1] * x


def test_an_int_arguments_tangent_is_ignored_as_jvp_ignores_it():
    g, loss = linear_in_n, scaled_tangent
    assert jvp(g, (2.0, 3), (1.0, 1.0)) == (10.0, 7.0)
    for backend in BACKENDS:
        assert strict(gradient, loss, 2.0, backend=backend) == (11.0,)


# -- forward over forward, reverse over forward over forward -------------------------------
def directional(x):
    return jvp(f, (x,), (V,))[1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_over_forward_and_reverse_over_it(backend):
    y, t = strict(jvp, directional, (X,), (U,), backend=backend)
    assert math.isclose(y, V @ grad_f(X), rel_tol=1e-12)
    assert math.isclose(t, np.sum(U * V * hess_f(X)), rel_tol=1e-10)
    # the Hessian of <grad f, V> is diag(V f''') : times U
    np.testing.assert_allclose(strict(hvp, directional, X, U, backend=backend),
                               V * dhess_f(X) * U, rtol=1e-10)
    (_, tj) = strict(jvp, jacobian_norm, (X,), (U,), backend=backend)
    assert math.isclose(tj, U @ np.array([10 * X[0], 2 * X[1], -np.sin(2 * X[2])]),
                        rel_tol=1e-10)


# -- reverse over reverse through adjoint.grad, hessian in compiled code -------------------
def test_grad_of_grad_compiles():
    def g(x):
        return math.sin(x) * x * x
    d2 = grad(grad(g, backend="llvm"), backend="llvm")
    x = 0.8
    want = 2 * math.sin(x) + 4 * x * math.cos(x) - x * x * math.sin(x)
    assert math.isclose(strict(d2, x), want, rel_tol=1e-12)


grad = adjoint.grad


def test_hessian_and_jacfwd_inside_jit_code_compile():
    @jit
    def second(x):
        return hessian(lambda t: t ** 3, x)

    @jit
    def jac(x):
        return jacfwd(small_map, x)[0]
    assert strict(second, 3.0) == 18.0
    np.testing.assert_allclose(strict(jac, X), [[X[1], X[0], 0.0], [0.0, 0.0, math.cos(X[2])],
                                                [2 * X[0], 0.0, 0.0]], rtol=1e-12)


# -- what still runs in the interpreter, or is refused -------------------------------------
def curvature(x):
    return hvp(f, x, V) @ V


def test_a_fourth_order_falls_back_with_a_warning_and_the_right_answer():
    # hvp of <V, H V> (reverse over forward over reverse over forward) is not compiled
    # yet; <V, H V> = sum(V^2 f''') and f'''' = -4 cos x + x sin x
    with pytest.warns(JitFallbackWarning):
        got = hvp(curvature, X, U)
    np.testing.assert_allclose(got, V * V * (-4 * np.cos(X) + X * np.sin(X)) * U,
                               rtol=1e-9)


def test_a_function_passed_as_a_value_is_refused_by_name():
    def loss(x, fn):
        return jvp(fn, (x,), (V,))[1]
    with pytest.raises(TypeError, match=r"jvp\(\) inside a function that reverse mode"):
        gradient(loss, X, f, backend="interp")
    with pytest.raises(TypeError, match=r"jvp\(\) inside a function that forward mode"):
        jvp(loss, (X, f), (V, None), backend="interp")


# -- a loop over a dict's str keys, in forward mode ------------------------------------------
def str_keys(x):
    d = {"b": x, "a": 2.0 * x, "c": 0.5}
    s = 0.0
    for k in d:
        s = s + d[k] * d[k] * x
    return s


def test_compiled_jvp_of_a_loop_over_str_keys():
    for backend in BACKENDS:
        y, t = strict(jvp, str_keys, (1.5,), (1.0,), backend=backend)
        assert math.isclose(y, str_keys(1.5), rel_tol=1e-12)
        assert math.isclose(t, 15 * 1.5 ** 2 + 0.25, rel_tol=1e-12)     # d/dx (5x^3 + x/4)
