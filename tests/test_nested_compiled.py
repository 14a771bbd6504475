"""Nested `gradient` inside differentiated code: second order compiled (the nested
call's pullback is a Hessian-vector product, `adjoint.nested_hv`), third and fourth
order in the interpreter.  Values against closed forms and central differences."""
import math
import warnings

import numpy as np
import pytest

from adjoint import gradient, value_and_grad


def d_cube(x):
    return gradient(lambda y: y ** 3, x)[0]                 # 3 x^2


def d_mixed(x):
    return gradient(lambda y: y * y * x + 2.0 * y, x)[0]    # 3 x^2 + 2 (x captured)


def d_poly2(x):
    return gradient(lambda y, z: y ** 4 * z + z * z, x, 2.0)[0]    # 8 x^3


def d_value(x):
    y, g = value_and_grad(lambda t: t ** 3 + t, x)
    return y + g[0]                                          # x^3 + x + 3 x^2 + 1


def fd(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


def _strict(fn, *args, backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # a fallback to the interpreter fails the test
        return fn(*args, backend=backend)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_second_order_compiled(backend):
    x = 1.7
    assert _strict(gradient, d_cube, x, backend=backend)[0] == pytest.approx(6 * x, rel=1e-12)
    assert _strict(gradient, d_poly2, x, backend=backend)[0] == pytest.approx(24 * x * x,
                                                                               rel=1e-12)
    assert _strict(gradient, d_value, x, backend=backend)[0] == pytest.approx(
        3 * x * x + 1 + 6 * x, rel=1e-12)
    assert _strict(gradient, d_cube, x, backend=backend)[0] == pytest.approx(
        fd(d_cube, x), rel=1e-6)


def test_closure_over_the_outer_argument():
    x = 0.9   # d/dx [3 x^2 (from y*y*x at y=x, ... )]: the captured x gets its share
    got = gradient(d_mixed, x, backend="interp")[0]
    assert got == pytest.approx(fd(d_mixed, x), rel=1e-6)


def third(x):
    return gradient(d_cube, x)[0]           # 6 x (its gradient: a third order)


def fourth(x):
    return gradient(third, x)[0]            # 6 (its gradient: a fourth order)


def quartic(y):
    return y ** 4 + y * y


def d4(x):
    return gradient(quartic, x)[0]


def d4_2(x):
    return gradient(d4, x)[0]


@pytest.mark.parametrize("x", [0.4, 2.0])
def test_third_and_fourth_order_interpreted(x):
    assert gradient(third, x, backend="interp")[0] == pytest.approx(6.0, rel=1e-12)
    assert gradient(fourth, x, backend="interp")[0] == pytest.approx(0.0, abs=1e-12)
    assert gradient(d4_2, x, backend="interp")[0] == pytest.approx(24 * x, rel=1e-12)
    assert gradient(d4_2, x, backend="interp")[0] == pytest.approx(fd(d4_2, x), rel=1e-6)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_nested_gradient_of_an_array_loss(backend):
    def inner(x):
        return gradient(lambda y: np.sum(y ** 2), x)[0]

    def outer(x):
        return np.sum(inner(x) ** 2)
    x = np.array([1.0, 2.0, -0.5])      # d/dx sum((2x)^2) = 8 x; compiled: no fallback
    assert np.allclose(_strict(gradient, outer, x, backend=backend)[0], 8 * x,
                       rtol=1e-14, atol=0)


# -- tanh to the sixth order (autograd's examples/tanh.py), library rules nested -------
def tanh_derivative(n, x):
    """d^n/dx^n tanh at x, by the recurrence d/dx P(t) = P'(t) (1 - t^2), t = tanh x."""
    p = np.poly1d([1.0, 0.0])
    for _ in range(n):
        p = np.polyder(p) * np.poly1d([-1.0, 0.0, 1.0])
    return p(np.tanh(x))


def tanh_by_exp(x):
    y = np.exp(-x)
    return (1.0 - y) / (1.0 + y)        # tanh(x / 2)


def d1_tanh(x):
    return gradient(math.tanh, x)[0]


def d2_tanh(x):
    return gradient(d1_tanh, x)[0]


def d3_tanh(x):
    return gradient(d2_tanh, x)[0]


def d4_tanh(x):
    return gradient(d3_tanh, x)[0]


def d5_tanh(x):
    return gradient(d4_tanh, x)[0]


def e1_tanh(x):
    return gradient(lambda y: np.sum(tanh_by_exp(y)), x)[0]


def e2_tanh(x):
    return gradient(lambda y: np.sum(e1_tanh(y)), x)[0]


def e3_tanh(x):
    return gradient(lambda y: np.sum(e2_tanh(y)), x)[0]


def d1_exp(x):
    return gradient(lambda y: math.exp(-y), x)[0]


def d2_exp(x):
    return gradient(d1_exp, x)[0]


def d3_exp(x):
    return gradient(d2_exp, x)[0]


@pytest.mark.parametrize("x", [0.3, -1.2])
def test_library_rules_fourth_order_interpreted(x):
    assert gradient(d3_tanh, x, backend="interp")[0] == pytest.approx(
        tanh_derivative(4, x), rel=1e-12)
    assert gradient(d3_exp, x, backend="interp")[0] == pytest.approx(math.exp(-x),
                                                                     rel=1e-12)
    assert gradient(d2_tanh, x, backend="interp")[0] == pytest.approx(fd(d2_tanh, x),
                                                                      rel=1e-6)


def test_sixth_derivative_of_tanh_interpreted():
    x = 0.3
    assert gradient(d5_tanh, x, backend="interp")[0] == pytest.approx(
        tanh_derivative(6, x), rel=1e-10, abs=1e-10)
    xs = np.linspace(-3.0, 3.0, 7)     # by the exp formula, elementwise over an array
    got = gradient(lambda y: np.sum(e2_tanh(y)), xs, backend="interp")[0]
    assert np.allclose(got, tanh_derivative(3, xs / 2) / 8, rtol=0, atol=1e-12)


def test_sixth_derivative_of_tanh_compiled():
    """Five nested `gradient` calls of `math.tanh` inside one compiled gradient, with no
    fallback to the interpreter: the closed form to 1e-10 (about 5 s to compile)."""
    for x in (0.3, -1.1):
        got = _strict(gradient, d5_tanh, x, backend="llvm")[0]
        assert got == pytest.approx(tanh_derivative(6, x), rel=1e-10, abs=1e-10)


def e1_exp_tanh(x):
    return gradient(scalar_tanh_by_exp, x)[0]


def e2_exp_tanh(x):
    return gradient(e1_exp_tanh, x)[0]


def e3_exp_tanh(x):
    return gradient(e2_exp_tanh, x)[0]


def scalar_tanh_by_exp(x):
    y = math.exp(-x)
    return (1.0 - y) / (1.0 + y)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_fourth_derivative_compiled(backend):
    x = 0.3      # d^n/dx^n tanh(x / 2) = P_n(tanh(x / 2)) / 2^n
    got = _strict(gradient, e3_exp_tanh, x, backend=backend)[0]
    assert got == pytest.approx(tanh_derivative(4, x / 2) / 16, rel=1e-12)
    assert got == pytest.approx(fd(e3_exp_tanh, x, h=1e-3), rel=1e-5)


def t1_tanh(x):
    return gradient(math.tanh, x)[0]     # a library function nested, compiled


def t2_tanh(x):
    return gradient(t1_tanh, x)[0]


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_gradient_of_a_library_function_nested(backend):
    x = -0.7
    assert _strict(gradient, t2_tanh, x, backend=backend)[0] == pytest.approx(
        tanh_derivative(3, x), rel=1e-12)
    xs = np.array([-1.0, 0.2, 2.5])
    got = _strict(gradient, lambda y: np.sum(e1_tanh(y)), xs, backend=backend)[0]
    assert np.allclose(got, tanh_derivative(2, xs / 2) / 4, rtol=1e-12, atol=1e-14)


# -- a nested gradient of parameters in a tuple or a dict (meta-learning's inner step) ---
def _pair_loss(p):
    a, b = p
    return a * a * b + np.sin(b)


def _outer_pair(x):
    g = gradient(_pair_loss, (x, 2.0 * x))[0]     # (2ab, a^2 + cos b) at a = x, b = 2x
    return _pair_loss((x, 2.0 * x)) + g[0] * g[1]


_XS = np.random.default_rng(4).normal(size=(5, 3))


def _dict_loss(params, X):
    z = np.tanh(X @ params["W"]) * params["s"]
    return np.sum(z ** 2) + 0.1 * np.sum(params["W"] ** 2)


def _inner_steps(params, X):
    for _ in range(2):
        g = gradient(_dict_loss, params, X)[0]
        params = {k: v - 0.1 * g[k] for k, v in params.items()}
    return _dict_loss(params, X)


def test_nested_gradient_of_tuple_parameters_compiles():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = gradient(_outer_pair, 0.7, backend="llvm")[0]
    x = 0.7
    a, b = x, 2 * x
    # f = a^2 b + sin b + 2ab (a^2 + cos b), a = x, b = 2x
    closed = (2 * a * b + a * a * 2 + 2 * math.cos(b)
              + 2 * (b + 2 * a) * (a * a + math.cos(b)) + 2 * a * b * (2 * a - 2 * math.sin(b)))
    assert got == pytest.approx(closed, rel=1e-12)
    assert got == pytest.approx(gradient(_outer_pair, 0.7, backend="interp")[0], rel=1e-12)


def test_nested_gradient_of_dict_parameters_compiles():
    params = {"W": np.random.default_rng(5).normal(size=(3, 2)), "s": 1.5}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = gradient(_inner_steps, params, _XS, backend="llvm")[0]
    want = gradient(_inner_steps, params, _XS, backend="interp")[0]
    assert set(got) == {"W", "s"}
    np.testing.assert_allclose(got["W"], want["W"], rtol=1e-10)
    assert got["s"] == pytest.approx(want["s"], rel=1e-10)
    h = 1e-6
    up = dict(params, s=1.5 + h)
    down = dict(params, s=1.5 - h)
    assert got["s"] == pytest.approx((_inner_steps(up, _XS) - _inner_steps(down, _XS)) / (2 * h),
                                     rel=1e-6)


def test_nested_value_and_grad_of_tuple_parameters_runs_in_the_interpreter():
    """value_and_grad's pullback adds dy * grad f part by part, which its generated
    code does for numbers and arrays only: compiled code refuses it by name."""
    from jit.types import TypingError

    def outer(x):
        v, g = value_and_grad(_pair_loss, (x, 2.0 * x))
        return v + g[0][0]
    with pytest.raises(TypingError, match="value_and_grad\\(\\) inside differentiated code is "
                                          "compiled for numbers and arrays, not tuple"):
        gradient(outer, 0.7, backend="llvm")
    x, h = 0.7, 1e-6
    assert gradient(outer, x)[0] == pytest.approx((outer(x + h) - outer(x - h)) / (2 * h),
                                                  rel=1e-6)


# a layer with a bias broadcast over the rows (`X @ W + b`): the tangent of its sum is
# `j_add`, whose tuple branch the forward's typing finds dead; its adjoint's
# `unbcast` onto that branch's never-recorded operand made a 2-D cotangent meet a 1-D one
_RNG = np.random.default_rng(7)
_X, _Y = _RNG.normal(size=(5, 3)), _RNG.normal(size=5)


def _layer_loss(W, b):
    h = np.tanh(_X @ W + b)
    return np.sum((h.sum(axis=1) - _Y) ** 2)


def _gradient_norm(W, b):
    gW, gb = gradient(_layer_loss, W, b)
    return np.sum(gW ** 2) + np.sum(gb ** 2)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_gradient_of_a_broadcast_layers_gradient_norm(backend):
    W, b = _RNG.normal(size=(3, 4)), _RNG.normal(size=4)
    gW, gb = _strict(gradient, _gradient_norm, W, b, backend=backend)
    h = 1e-6
    for k in range(4):
        e = np.eye(4)[k] * h
        want = (_gradient_norm(W, b + e) - _gradient_norm(W, b - e)) / (2 * h)
        assert math.isclose(gb[k], want, rel_tol=1e-6, abs_tol=1e-8)
    e = np.zeros((3, 4))
    e[1, 2] = h
    want = (_gradient_norm(W + e, b) - _gradient_norm(W - e, b)) / (2 * h)
    assert math.isclose(gW[1, 2], want, rel_tol=1e-6, abs_tol=1e-8)
