"""`pullback(f, x)` with `back(dy)` in user code (`adjoint.passes.nested_pullback`): the
lowering rewrites it as a call of f and nested gradients, so it compiles in `jit.jit`,
differentiates and compiles at second order, and nests to any order.  CPython, the IR,
the interpreter and the JIT agree; gradients match central differences; a `dy` of the
wrong shape raises the top-level `back`'s error on every path."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jit
import lowering
from adjoint import gradient, pullback
from adjoint.passes.nested_pullback import vjp_function
from tests.adjoint_check import central_differences
from tests.harness import check_lowering

X = np.arange(6.0).reshape(2, 3) / 7


def energy(x):
    return np.sum(np.sin(x) * x)


def layer(w, data):
    return np.tanh(data @ w), np.sum(w ** 2)


def squared_gradient(x):
    y, back = pullback(energy, x)
    return np.sum(back(1.0)[0] ** 2) + y


def of_a_library_function(x):
    y, back = pullback(np.sin, x)
    return np.sum(back(np.ones(3))[0] * y)


def tuple_output(w):
    (h, r), back = pullback(layer, w, X)
    gw, gX = back((np.ones(2), 0.5))
    return np.sum(gw) * np.sum(h) + r + np.sum(gX)


def called_twice(x):
    t = pullback(energy, x)
    back = t[1]
    return np.sum(back(2.0)[0] * back(0.5)[0]) * t[0]


def in_a_loop(x):
    s = 0.0
    for k in range(3):
        y, back = pullback(energy, x * k)
        s = s + np.sum(back(y)[0])
    return s


def of_a_lambda(w, c):
    y, back = pullback(lambda p: np.sum(layer(p, X)[0] ** 2) * c, w)
    return np.sum(back(1.0)[0] ** 2)


def of_a_local_def(w, c):
    def loss(p):
        return np.sum(np.sin(p) * c * w)
    y, back = pullback(loss, w * 2.0)
    return np.sum(back(y)[0])


CASES = [squared_gradient, of_a_library_function, tuple_output, called_twice, in_a_loop,
         of_a_lambda, of_a_local_def]
POINT = np.array([0.1, 0.5, 0.9])


def _args(f):
    return (POINT, 0.7) if f in (of_a_lambda, of_a_local_def) else (POINT,)


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_rewritten_compiled_and_right(f):
    args = _args(f)
    check_lowering(f, args)
    ir = lowering.lower(f)
    assert not any(s.op == "call" and getattr(s.args[0], "value", None) is pullback
                   for b in ir.blocks for s in b.stmts), "the pullback call is rewritten"
    assert jit.jit(f)(*args) == f(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("error", jit.JitFallbackWarning)
        compiled = gradient(f, *args, backend="llvm")[0]
    interpreted = gradient(f, *args, backend="interp")[0]
    np.testing.assert_allclose(compiled, interpreted, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(compiled, central_differences(f, args, 0), rtol=1e-6,
                               atol=1e-8)


def test_third_order_compiled():
    """The gradient of a function taking the gradient of one calling pullback."""
    def outer(x):
        return np.sum(gradient(squared_gradient, x)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", jit.JitFallbackWarning)
        compiled = gradient(outer, POINT, backend="llvm")[0]
    np.testing.assert_allclose(compiled, gradient(outer, POINT, backend="interp")[0],
                               rtol=1e-12)
    np.testing.assert_allclose(compiled, central_differences(outer, (POINT,), 0), rtol=1e-6)


def test_second_derivative_of_a_pullback_closed_form():
    """d/dx of x * sin'(x) (by back) = cos x - x sin x; and once more, by nesting."""
    def inner(x):
        y, back = pullback(np.sin, x)
        return back(1.0)[0] * x

    def first(x):
        return gradient(inner, x)[0]
    x = 0.7
    assert gradient(inner, x, backend="llvm")[0] == pytest.approx(
        np.cos(x) - x * np.sin(x), rel=1e-14)
    for backend in ("llvm", "interp"):
        assert gradient(first, x, backend=backend)[0] == pytest.approx(
            -2 * np.sin(x) - x * np.cos(x), rel=1e-13)


def _wrong_seed(x):
    y, back = pullback(energy, x)
    return np.sum(back(np.ones(2))[0])


def _wrong_shape(x):
    y, back = pullback(np.sin, x)
    return np.sum(back(np.ones(2))[0])


@pytest.mark.parametrize("f,message", [
    (_wrong_seed, "back(dy) of the pullback of energy: dy must be a number, got an array "
                  "of shape (2,)"),
    (_wrong_shape, "back(dy) of the pullback of sin: dy must be an array of shape (3,), "
                   "got an array of shape (2,)")])
def test_a_seed_that_does_not_fit_raises_backs_error_everywhere(f, message):
    runs = [lambda: f(POINT), lambda: jit.jit(f)(POINT),
            lambda: gradient(f, POINT, backend="llvm"),
            lambda: gradient(f, POINT, backend="interp")]
    for run in runs:
        with pytest.raises(ValueError) as got:
            run()
        assert str(got.value) == message


def test_a_back_that_escapes_keeps_pullbacks_own_code():
    def returned(x):
        y, back = pullback(energy, x)
        return back

    def passed_on(x):
        y, back = pullback(energy, x)
        return helper(back)

    def helper(back):
        return np.sum(back(1.0)[0])
    for f in (returned, passed_on):
        ir = lowering.lower(f)
        assert any(s.op == "call" and getattr(s.args[0], "value", None) is pullback
                   for b in ir.blocks for s in b.stmts)
    assert passed_on(POINT) == pytest.approx(np.sum(np.sin(POINT) + POINT * np.cos(POINT)))
    with pytest.raises(TypeError, match="pullback"):
        jit.jit(passed_on)(POINT)


def test_generated_functions_are_made_once():
    assert vjp_function(energy, 0, 1) is vjp_function(energy, 0, 1)


def egrad(fun):
    """autograd's elementwise_grad as a user writes it with pullback: `fun` is a value
    the closure captured, known only when it runs (`vjp_value`, `value_of`)."""
    def g(x):
        y, back = pullback(fun, x)
        return back(np.ones_like(y))[0]
    return g


def test_a_function_value_compiles_by_its_type():
    def loss(x):
        return np.sum(egrad(np.tanh)(x) * x)
    t = np.tanh(POINT)
    np.testing.assert_allclose(egrad(np.tanh)(POINT), 1 - t ** 2, rtol=1e-14)
    with warnings.catch_warnings():
        warnings.simplefilter("error", jit.JitFallbackWarning)
        second = egrad(egrad(np.tanh))(POINT)        # a top-level pullback of g
        compiled = gradient(loss, POINT, backend="llvm")[0]
    np.testing.assert_allclose(second, -2 * t * (1 - t ** 2), rtol=1e-13)
    np.testing.assert_allclose(compiled, gradient(loss, POINT, backend="interp")[0], rtol=1e-12)
    np.testing.assert_allclose(compiled, central_differences(loss, (POINT,), 0), rtol=1e-6)
    assert jit.jit(loss)(POINT) == loss(POINT)


def test_third_order_through_a_function_value_is_refused_by_name():
    """The JIT makes `pullback(fun, x)` static from fun's type; the interpreter runs
    pullback's own code, which nests to the second order."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jit.JitFallbackWarning)
        with pytest.raises(TypeError, match="inside a function that is differentiated twice"):
            egrad(egrad(egrad(np.tanh)))(POINT)


def test_a_function_that_writes_into_its_argument_keeps_pullbacks_copies():
    def scale(v):
        v *= 2.0
        return np.sum(v)

    def caller(x):
        y, back = pullback(scale, x)
        return back(1.0)[0][0] + y

    def caller_of_a_value(x, f):
        y, back = pullback(f, x)
        return back(1.0)[0][0] + y
    for run in (lambda x: caller(x), lambda x: caller_of_a_value(x, scale)):
        x = POINT.copy()
        assert run(x) == pytest.approx(2.0 + 2 * np.sum(POINT))
        assert np.array_equal(x, POINT), "pullback runs f on a copy of x"


NOISE = np.random.default_rng(0)
HISTORY = []


def noisy(w):
    return np.sum(np.tanh(w + NOISE.normal(size=3)))


def logged(w):
    HISTORY.append(1)
    return np.sum(w ** 2)


def calls_noisy(w):
    return noisy(w) * 2.0


@pytest.mark.parametrize("f", [noisy, logged, calls_noisy, np.random.normal],
                         ids=["draws", "appends to a global", "calls a drawing function",
                              "a numpy draw"])
def test_a_function_with_effects_keeps_pullbacks_own_code(f):
    """Run again for back(dy), it would draw other noise (a gradient at another point)
    or log twice: its pullback keeps pullback's own single run, and compiled code
    refuses it, saying why."""
    source = f"""
def caller(w):
    y, back = pullback({f.__name__}, w)
    return back(np.ones_like(y) if np.ndim(y) else 1.0)[0]
"""
    env = {"pullback": pullback, "np": np, f.__name__: f}
    exec(compile(source, __file__, "exec"), env)
    ir = lowering.lower(env["caller"])
    assert any(s.op == "call" and getattr(s.args[0], "value", None) is pullback
               for b in ir.blocks for s in b.stmts)
    if f is not np.random.normal:
        with pytest.raises(jit.TypingError, match="no effect a second run repeats"):
            jit.jit(env["caller"])(POINT)
