"""`gradient(f, ...)` called inside compiled code (jit/pullback/nested_gradient.py):
CPython (where `gradient` is the API), the IR interpreter and the JIT agree, and the
gradients match finite differences and closed forms."""
import copy
import math
import re

import numpy as np
import pytest

import jit
from adjoint import gradient, jacobian, pullback, value_and_grad
from harness import lower, run_ir

RNG = np.random.default_rng(7)
X = RNG.normal(size=(20, 3))
Y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * RNG.normal(size=20)


def mse(w, X, y):
    r = X @ w - y
    return np.sum(r * r) / len(y)


def train(w, X, y, steps, lr):
    for _ in range(steps):
        g = gradient(mse, w, X, y)
        w = w - lr * g[0]
    return w


def mse_grads(w, X, y):
    return gradient(mse, w, X, y)


def sse_grads(w, X, y):
    return gradient(lambda v, A, b: np.sum((A @ v - b) ** 2), w, X, y)


def scaled(x, k, t):
    s = 0.0
    for i in range(k):
        s = s + math.sin(x * i) * t[0] + (t[1] if x > 0 else -t[1])
    return s


def scaled_grads(x, k, t):
    return gradient(scaled, x, k, t)


def closure_grads(a, b):
    def inner(x):
        return x * x * a + b      # a and b are captured: held constant
    return gradient(inner, a)[0] + gradient(inner, b)[0]


def power(x, n):
    return x if n == 0 else x * power(x, n - 1)


def power_grad(x):
    return gradient(power, x, 4)[0]


def helper(x, y):
    return math.exp(x) * y


def calls_helper(x, y):
    return helper(x, y) + helper(y, x) * x


def calls_helper_grads(x, y):
    return gradient(calls_helper, x, y)


def constant(x, y):
    return y * 2.0


def zero_grads(x, a, y):
    return gradient(lambda p, q, r: np.sum(q) * r, x, a, y)


def with_keyword(x, scale):
    return gradient(lambda t, s=1.0: t * t * s, x, s=scale)


def domain_error(x):
    return math.sqrt(x)


def gradient_of_domain_error(x):
    return gradient(domain_error, x)[0]


def newton_sqrt(a, steps):
    """Newton on f(x) = (x*x - a)^2 / 4, whose derivative gradient() gives."""
    x = a
    for _ in range(steps):
        d = gradient(lambda t, c: (t * t - c) ** 2 / 4.0, x, a)[0]
        x = x - d / (3.0 * x * x - a)
    return x


CASES = [
    (train, (np.zeros(3), X, Y, 50, 0.1)),
    (mse_grads, (np.ones(3), X, Y)),
    (mse_grads, (np.ones(2), X[:, ::2], Y)),            # a strided view
    (sse_grads, (np.ones(3), X[:0], Y[:0] + 0.0)),       # 0 rows
    (scaled_grads, (0.7, 5, (1.5, 2.0))),
    (scaled_grads, (-0.7, 5, (1.5, 2.0))),
    (closure_grads, (1.5, -0.5)),
    (power_grad, (1.3,)),
    (calls_helper_grads, (0.3, -1.1)),
    (zero_grads, (1.0, np.ones((2, 2)), 3.0)),
    (with_keyword, (3.0, 2.0)),
    (newton_sqrt, (2.0, 6)),
]


def _same(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, tuple):
        assert len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v)
    elif isinstance(a, np.ndarray):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-14, nan_ok=True)
    else:
        assert a == b


@pytest.mark.parametrize("f,args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_cpython_interpreter_and_jit_agree(f, args):
    keep = copy.deepcopy(args)
    want = f(*copy.deepcopy(args))
    outcome, _ = run_ir(lower(f), f, copy.deepcopy(args))
    assert outcome[0] == "return", outcome
    _same(want, outcome[1])
    _same(want, jit.jit(f)(*args))
    for a, k in zip(args, keep):          # the inputs are not modified
        _same(a, k)


def test_the_training_loop_stays_compiled():
    typed = str(jit.code_typed(train, np.zeros(3), X, Y, 3, 0.1))
    assert "call(@adjoint.api.gradient, @test_jit_nested_gradient.mse" in typed
    assert "function mse_forward(" in typed and "function mse_adjoint(" in typed


def test_gradients_match_finite_differences_and_closed_forms():
    w = np.array([0.3, -0.2, 0.9])
    g = jit.jit(mse_grads)(w, X, Y)
    assert np.allclose(g[0], 2.0 * X.T @ (X @ w - Y) / len(Y), rtol=1e-12)
    assert np.allclose(g[2], -2.0 * (X @ w - Y) / len(Y), rtol=1e-12)
    h = 1e-6
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        fd = (mse(w + e, X, Y) - mse(w - e, X, Y)) / (2 * h)
        assert g[0][k] == pytest.approx(fd, rel=1e-6)
    x = 0.7
    fd = (scaled(x + h, 5, (1.5, 2.0)) - scaled(x - h, 5, (1.5, 2.0))) / (2 * h)
    assert jit.jit(scaled_grads)(x, 5, (1.5, 2.0))[0] == pytest.approx(fd, rel=1e-6)
    assert jit.jit(power_grad)(1.3) == pytest.approx(5 * 1.3 ** 4, rel=1e-13)
    assert jit.jit(newton_sqrt)(2.0, 6) == pytest.approx(math.sqrt(2.0), rel=1e-12)
    wtrain = jit.jit(train)(np.zeros(3), X, Y, 500, 0.1)
    assert np.allclose(wtrain, np.linalg.lstsq(X, Y, rcond=None)[0], atol=1e-8)


def test_zero_and_none_gradients_have_the_arguments_structure():
    g = jit.jit(zero_grads)(1.0, np.ones((2, 2)), 3.0)
    assert g[0] == 0.0 and type(g[0]) is float
    assert g[1].shape == (2, 2) and np.all(g[1] == 3.0)
    assert g[2] == 4.0
    s = jit.jit(scaled_grads)(0.7, 5, (1.5, 2.0))
    assert s[1] is None and isinstance(s[2], tuple) and len(s[2]) == 2


def test_an_error_inside_the_differentiated_function_is_cpythons():
    with pytest.raises(ValueError, match="math domain error"):
        gradient_of_domain_error(-1.0)
    with pytest.raises(ValueError, match="math domain error") as e:
        jit.jit(gradient_of_domain_error)(-1.0)
    assert "domain_error" in str(e.value) and "forward" not in str(e.value)


def _pullback_inside(x):
    y, back = pullback(helper, x, 2.0)
    return back(1.0)[0]


def _pullback_passed_on(x):      # (back escapes: pullback's own code runs)
    y, back = pullback(helper, x, 2.0)
    return _seeded(back)


def _seeded(back):
    return back(1.0)[0]


def test_pullback_called_where_it_is_made_compiles():
    """(tests/test_nested_pullback.py covers the forms and their derivatives)"""
    assert jit.jit(_pullback_inside)(3.0) == _pullback_inside(3.0)


def _jacobian_inside(x):
    return jacobian(helper, x, 2.0)[0]


# (hessian inside compiled code compiles: tests/test_nested_forward_reverse.py)


def _vector_result(x):
    return gradient(lambda a: a * 2.0, x)


def _writes_its_argument(x):
    def inner(a):
        a[0] = a[0] * 2.0
        return np.sum(a)
    return gradient(inner, x)


@pytest.mark.parametrize("f,arg,why", [
    (_pullback_passed_on, 3.0, "pullback() inside compiled code is not compiled yet"),
    (_jacobian_inside, 3.0, "jacobian() inside compiled code is not compiled yet"),
    (_vector_result, np.ones(3), "must return a real scalar"),
    (_writes_its_argument, np.ones(3), "writes into an array argument"),
])
def test_what_is_not_compiled_is_refused_saying_why(f, arg, why):
    with pytest.raises(jit.TypingError, match=re.escape(why)) as e:
        jit.jit(f)(arg)
    assert "lowering.runtime" not in str(e.value) and "adjoint/api.py" not in str(e.value)


def test_differentiating_a_function_that_takes_a_gradient_compiles():
    def outer(x, y):
        return gradient(helper, x, y)[0] * y
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # compiled: no fallback (adjoint.nested_hv)
        y, back = pullback(outer, 0.5, 2.0)
    assert back(1.0)[0] == pytest.approx(math.exp(0.5) * 4.0, rel=1e-13)


def test_only_the_entries_read_are_differentiated():
    typed = str(jit.code_typed(train, np.zeros(3), X, Y, 3, 0.1))
    assert "gradient, @test_jit_nested_gradient.mse, %9, %2, %3)::tuple(array(float64, 1d)" \
        ", none, none)" in typed
    full = str(jit.code_typed(mse_grads, np.ones(3), X, Y))
    assert "::tuple(array(float64, 1d), array(float64, 2d), array(float64, 1d))" in full

    def both(w, X, y):
        v, g = value_and_grad(mse, w, X, y)
        return v, g[0]

    def second_only(w, X, y):
        return value_and_grad(mse, w, X, y)[1][2]
    assert "tuple(float64, tuple(array(float64, 1d), array(float64, 2d)" in \
        str(jit.code_typed(both, np.ones(3), X, Y))
    assert "tuple(float64, tuple(none, none, array(float64, 1d)))" in \
        str(jit.code_typed(second_only, np.ones(3), X, Y))
    _same(jit.jit(second_only)(np.ones(3), X, Y), second_only(np.ones(3), X, Y))
    _same(jit.jit(both)(np.ones(3), X, Y), both(np.ones(3), X, Y))


_LONG_LOOP = """
import resource, numpy as np, jit
from adjoint import gradient
def loss(w, X, y):
    r = X @ w - y
    return np.sum(r * r) / len(y)
def train(w, X, y, steps, lr):
    for _ in range(steps):
        w = w - lr * gradient(loss, w, X, y)[0]
    return w
X, y, w = np.ones((100, 50)), np.ones(100), np.zeros(50)
train_c = jit.jit(train)
train_c(w, X, y, 2, 0.001)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
train_c(w, X, y, 20000, 0.001)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


def test_a_long_compiled_training_loop_frees_each_steps_temporaries():
    """20,000 steps: each gradient's temporaries (and X's 40 KB gradient, not read)
    took 790 MiB before they were freed per call; the update itself still takes
    0.4 KB a step until the call returns."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _LONG_LOOP], capture_output=True, text=True,
                         check=True, timeout=300)
    assert int(out.stdout.split()[-1]) < 100, out.stdout


# -- an array argument that nothing reaches on the path taken (fuzz_zygopy_np seed
# 990023970067: a segfault): its compiled cotangent is NULL there, which the nested
# gradient copied as an array; it is zeros of the argument's shape now, as the
# interpreter gives
def corner_or_scale(A, v, s):
    if np.sum(v) > 0.43:
        return A[-1, 0]
    return 2.0 * s


def corner_gradient(A, v, s):
    return gradient(corner_or_scale, A, v, s)[0]


def test_a_nested_gradient_that_reaches_no_array_argument_is_zeros():
    A, s = np.arange(12.0).reshape(3, 4), 0.3
    v_low, v_high = -np.ones(4), np.ones(4)
    np.testing.assert_array_equal(jit.jit(corner_gradient)(A, v_low, s), np.zeros((3, 4)))
    want = np.zeros((3, 4))
    want[-1, 0] = 1.0
    np.testing.assert_array_equal(jit.jit(corner_gradient)(A, v_high, s), want)
    rows = np.stack([A, 2 * A, 3 * A])
    for v, one in ((v_low, 0.0), (v_high, 1.0)):     # the batched rows, compiled
        got = gradient(corner_or_scale, rows, v, s, batch=(0, None, None))[0]
        np.testing.assert_array_equal(got, np.stack([want * one] * 3))
