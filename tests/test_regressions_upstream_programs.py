"""Regressions found by running myia's test programs (bench/myia_programs.py).

Each test restates the failing shape in our own words: the `operator` module's
functions used as ordinary callables (called, kept in tuples, passed to a helper),
and numpy's `.item()` read out of a reduction.
"""
import math
import operator
import warnings

import numpy as np
import pytest

from adjoint import gradient, pullback, value_and_grad
import lowering

BACKENDS = ("interp", "llvm")

ADD, MUL = operator.add, operator.mul


def _central(f, args, i, h=1e-6):
    up = list(args)
    down = list(args)
    up[i] += h
    down[i] -= h
    return (f(*up) - f(*down)) / (2 * h)


def _check_fd(f, args, got):
    for i in range(len(args)):
        assert math.isclose(got[i], _central(f, args, i), rel_tol=1e-6, abs_tol=1e-8)


# -- operator functions as callables ------------------------------------------------

def pair_of_ops(x, y):
    first, second = ADD, MUL
    return first(x, y) + second(x, y) - operator.truediv(x, y) + operator.neg(x) ** 2


def apply_both(fns, x, y):
    f, g = fns
    return operator.mul(f(x, y), g(x, y))


def through_helper(a, b):
    return apply_both((ADD, MUL), a, b)


def compare_as_value(x, y):
    smaller = operator.lt
    return x * y if smaller(x, y) else x - y


@pytest.mark.parametrize("backend", BACKENDS)
def test_operator_functions_in_a_tuple_differentiate(backend):
    got = gradient(pair_of_ops, 1.5, 2.5, backend=backend)
    _check_fd(pair_of_ops, (1.5, 2.5), got)


def test_operator_function_called_directly_is_the_primitive():
    text = str(lowering.code_lowered(pair_of_ops))
    assert "mul(" in text and "truediv(" in text and "_operator" not in text
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # compiled, no fallback to the interpreter
        got = gradient(pair_of_ops, 0.5, -2.0)
    _check_fd(pair_of_ops, (0.5, -2.0), got)


@pytest.mark.parametrize("backend", ("interp", "auto"))
def test_operator_functions_passed_as_values(backend):
    # (a + b) * (a * b): d/da = b(a + b) + ab, d/db = a(a + b) + ab
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # auto may run it in the interpreter
        got = gradient(through_helper, 4.0, 5.0, backend=backend)
    assert got == pytest.approx((5.0 * 9.0 + 20.0, 4.0 * 9.0 + 20.0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_comparison_function_as_value_takes_the_branch(backend):
    assert gradient(compare_as_value, 2.0, 3.0, backend=backend) == pytest.approx((3.0, 2.0))
    assert gradient(compare_as_value, 3.0, 2.0, backend=backend) == pytest.approx((1.0, -1.0))


def test_operator_function_value_without_rule_is_refused():
    def concat(x, y):
        join = operator.concat
        return join((x,), (y,))[0] * 2.0
    # concat has no primitive: CPython's answer, and a clear error if differentiated
    with pytest.raises(Exception, match="concat"):
        gradient(concat, 1.0, 2.0, backend="interp")


# -- ndarray.item ----------------------------------------------------------------------

def total_item(a):
    return np.sum(a * a).item()


def indexed_items(a):
    return (a * 3.0).item(1) + a.item(1, 0) * 2.0


def single_item(a):
    return np.tanh(a).item()


@pytest.mark.parametrize("backend", ("interp", "auto"))
def test_item_of_a_reduction(backend):
    a = np.array([[1.0, -2.0], [0.5, 4.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (g,) = gradient(total_item, a, backend=backend)
    np.testing.assert_allclose(g, 2 * a)


@pytest.mark.parametrize("backend", ("interp", "auto"))
def test_item_with_flat_and_axis_indices(backend):
    a = np.array([[1.0, -2.0], [0.5, 4.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (g,) = gradient(indexed_items, a, backend=backend)
    np.testing.assert_allclose(g, [[0.0, 3.0], [2.0, 0.0]])


@pytest.mark.parametrize("shape", [(1,), (), (1, 1)])
def test_item_of_a_single_element_array(shape):
    a = np.full(shape, 0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y, back = pullback(single_item, a)
    assert y == pytest.approx(math.tanh(0.3))
    (g,) = back(1.0)
    assert np.shape(g) == shape
    np.testing.assert_allclose(g, np.full(shape, 1 - math.tanh(0.3) ** 2))


# -- operator functions as values, compiled -------------------------------------------

def spread_call(fn, *arrays):
    return fn(*arrays)


def ratio_total(xs, ys):
    return np.sum(spread_call(operator.truediv, xs, ys))


def test_operator_value_through_a_helper_compiles():
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # no fallback to the interpreter
        got = gradient(through_helper, 4.0, 5.0, backend="llvm")
    assert got == pytest.approx((65.0, 56.0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_operator_value_spread_over_arrays(backend):
    xs, ys = np.array([1.0, -2.0, 3.0]), np.array([4.0, 5.0, -0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gx, gy = gradient(ratio_total, xs, ys, backend=backend)
    np.testing.assert_allclose(gx, 1.0 / ys)
    np.testing.assert_allclose(gy, -xs / ys ** 2)


# -- Python's builtin sum over an array, compiled ---------------------------------------

def squares_total(a):
    return sum(a * a)


def rows_then_total(a, b):
    per_column = sum(a * b + 1.0)       # a 2-D array: its rows added into one row
    return sum(per_column * per_column)


@pytest.mark.parametrize("backend", BACKENDS)
def test_builtin_sum_of_arrays_compiles_and_differentiates(backend):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # no fallback to the interpreter
        (g1,) = gradient(squares_total, a[0], backend=backend)
        ga, gb = gradient(rows_then_total, a, b, backend=backend)
    np.testing.assert_allclose(g1, 2 * a[0])
    col = np.sum(a * b + 1.0, axis=0)
    np.testing.assert_allclose(ga, 2 * col * b)
    np.testing.assert_allclose(gb, 2 * col * a)


def test_builtin_sum_adds_in_cpythons_order():
    from jit import jit
    x = np.random.default_rng(9).standard_normal(1001)
    assert jit(squares_total)(x) == squares_total(x)     # bit for bit, not pairwise
    m = np.random.default_rng(2).standard_normal((7, 2))
    np.testing.assert_array_equal(jit(lambda a: sum(a))(m), sum(m))


def test_builtin_sum_of_an_empty_array_differentiates():
    (g,) = gradient(squares_total, np.zeros(0), backend="llvm")
    assert g.shape == (0,)


# -- defaults computed when a nested function is made ------------------------------------

def default_read_here(x):
    def square(n=x):
        return n * n
    return square() + square(2.0 * x)       # d/dx = 2x + 8x


def recursive_with_default(x):
    def fact(n=x):
        if n <= 1:
            return 1
        return n * fact(n=n - 1)
    return fact()


def recursive_leaving_out_a_default(x):
    def walk(n=x, acc=1.0):
        if n <= 1:
            return acc
        return n * walk(n - 1)
    return walk()


def _squarer(x):
    def square(n=x):
        return n * n
    return square


def default_read_elsewhere(x):
    return _squarer(x)()


@pytest.mark.parametrize("backend", ("interp", "auto"))
def test_default_made_at_run_time_carries_its_gradient(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the JIT runs such closures in the interpreter
        assert gradient(default_read_here, 3.0, backend=backend) == pytest.approx((30.0,))
        # 3.5 * 2.5 * 1.5 * 0.5 -> d/dx of x(x-1)(x-2)(x-3) at 3.5
        got = gradient(recursive_with_default, 3.5, backend=backend)
    assert got == pytest.approx((_central(recursive_with_default, (3.5,), 0),), rel=1e-6)


def test_recursive_call_that_needs_a_run_time_default_is_refused():
    with pytest.raises(lowering.UnsupportedError, match="run time"):
        gradient(recursive_leaving_out_a_default, 3.0, backend="interp")


def test_default_made_elsewhere_is_refused_not_zero():
    with pytest.raises(TypeError, match="default was computed when the function was made"):
        gradient(default_read_elsewhere, 3.0, backend="interp")


# -- the bench that found these: bench/myia_programs.py on a checkout of our own -------------

_MINI_TEST_GRAD = '''
from dataclasses import dataclass
from myia.operations import array_reduce, array_to_scalar, grad, scalar_add, scalar_mul
from myia.testing.common import MA, f64
from myia.testing.multitest import bt, mt, myia_function_test
from myia.api import myia


@dataclass
class Pt:
    x: f64
    y: f64


@myia_function_test(id="grad")
def gradient(self, fn, args):
    pass


@mt(gradient(2.0, 3.0), gradient(-1.0, 0.5))
def test_ops_in_a_tuple(a, b):
    first, second = scalar_add, scalar_mul
    return first(a, b) * second(a, b)


@gradient(Pt(1.5, -2.0))
def test_fields(p):
    return p.x * p.y


@gradient(MA(2, 2))
def test_matrix(m):
    return array_to_scalar(array_reduce(scalar_add, m * m, ()))


@bt()
def test_inner(backend):
    def inner(v, w):
        return sum(v * w)

    @myia(backend=backend)
    def run(v, w):
        return grad(inner)(v, w)

    run(MA(1, 2)[0], MA(2, 2)[1])
'''

_MINI_EXAMPLE = '''
import numpy
from myia import value_and_grad


def cost(w, x):
    return numpy.sum(numpy.tanh(x @ w) ** 2)


def run():
    value_and_grad(cost, "w")(numpy.ones((3, 2)) * 0.1, numpy.arange(6.0).reshape(2, 3))
'''


def test_bench_reads_programs_from_a_checkout(tmp_path):
    import json
    import os
    import subprocess
    import sys
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_grad.py").write_text(_MINI_TEST_GRAD)
    (tmp_path / "examples").mkdir()
    for name in ("mlp", "rnn", "lstm", "vae", "policy_gradient"):
        (tmp_path / "examples" / f"{name}.py").write_text(_MINI_EXAMPLE)
    (tmp_path / "myia" / "testing").mkdir(parents=True)
    (tmp_path / "myia" / "testing" / "common.py").write_text(
        "MA = FixedMatrix([[1.0, -2.0], [0.5, 3.0]])\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = tmp_path / "rows.json"
    run = subprocess.run([sys.executable, "-m", "bench.myia_programs", str(tmp_path),
                          "--only", "test_,mlp", "--json", str(out)],
                         cwd=root, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": root})
    assert run.returncode == 0, run.stderr[-2000:]
    rows = {r["program"]: r for r in json.loads(out.read_text())}
    assert set(rows) == {"test_ops_in_a_tuple", "test_fields", "test_matrix",
                         "test_inner.inner", "mlp.cost"}
    assert all(r["right"] and r["interp"] for r in rows.values()), rows
    assert "right by default 5/5" in run.stdout


@pytest.mark.parametrize("backend", ("interp", "auto"))
def test_forward_mode_through_operator_values(backend):
    from adjoint import jvp
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y, dx = jvp(through_helper, (4.0, 5.0), (1.0, 0.0), backend=backend)
        _, dy = jvp(through_helper, (4.0, 5.0), (0.0, 1.0), backend=backend)
    assert (y, dx, dy) == pytest.approx((180.0, 65.0, 56.0))


# -- run-time defaults: nested gradients, forward mode, checkpointed loops --------------

def nested_gradient_through_a_default(x):
    def scaled(y, n=x):
        return y * n
    def inner(y):
        return scaled(y) * y            # the default reached inside the inner gradient
    return gradient(inner, x)[0]


def nested_gradient_leaving_out_a_default(x):
    def cube(y, n=x):
        return y * y * n
    return gradient(cube, x)[0]


def nested_gradient_with_an_int_default(x):
    k = 2 if x > 0 else 3
    def cube(y, n=k + 1):
        return y * y * n
    v, back = pullback(cube, x)
    return v + back(2.0)[0] + gradient(cube, x)[0] * value_and_grad(cube, x)[0]


def _module_default(y, n=2.0, *, m=3.0):
    return y * y * n * m


def nested_gradient_with_a_constant_default(x):
    return gradient(_module_default, x)[0] * x


def forward_default_read_here(x):
    scale = lambda y, n=x: y * n * n     # noqa: E731
    return scale(x) + scale(2.0)


def _apply(h, y):
    return h(y)


def forward_default_read_elsewhere(x):
    def scale(y, n=x):
        return y * n
    return _apply(scale, 3.0)


def looped_default(x, steps):
    acc = 0.0
    for _ in range(steps):
        def step(y, n=x):
            return y * n + 1.0
        acc = step(acc)
    return acc


@pytest.mark.parametrize("fn", (nested_gradient_through_a_default,
                                nested_gradient_leaving_out_a_default))
def test_nested_gradient_that_needs_a_run_time_default_is_refused(fn):
    # before: the first gave 2x instead of 4x (the default's share was lost)
    with pytest.raises(TypeError, match=rf"{fn.__name__}.<locals>.* \(.*"
                                        r"test_regressions_upstream_programs.py:\d+\) is "
                                        "called without its argument 2"):
        gradient(fn, 1.3, backend="interp")


@pytest.mark.parametrize("fn", (nested_gradient_with_an_int_default,
                                nested_gradient_with_a_constant_default))
@pytest.mark.parametrize("backend", ("interp", "auto"))
def test_nested_gradient_fills_in_defaults_without_a_gradient(fn, backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # nested gradients run in the interpreter
        (got,) = gradient(fn, 1.3, backend=backend)
    assert got == pytest.approx(_central(fn, (1.3,), 0), rel=1e-6)


@pytest.mark.parametrize("backend", ("interp", "auto"))
def test_forward_mode_takes_a_default_passed_where_the_closure_is_made(backend):
    from adjoint import hvp, jacfwd, jvp
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the JIT runs such closures in the interpreter
        y, t = jvp(forward_default_read_here, (1.3,), (1.0,), backend=backend)
        (j,) = jacfwd(forward_default_read_here, 1.3, backend=backend)
        h = hvp(forward_default_read_here, 1.3, 1.0, backend=backend)
    assert y == forward_default_read_here(1.3)
    want = _central(forward_default_read_here, (1.3,), 0)
    assert t == pytest.approx(want, rel=1e-6) and j == pytest.approx(want, rel=1e-6)
    assert h == pytest.approx(6 * 1.3 + 4.0, rel=1e-9)      # d2/dx2 of x^3 + 2x^2


def test_forward_mode_refuses_a_default_read_elsewhere():
    from adjoint import jvp
    # refused where the closure is passed on (forward mode follows a closure that
    # carries a tangent only where it is made), naming the place
    with pytest.raises(TypeError, match=r"jvp: .*test_regressions_upstream_programs.py:\d+"):
        jvp(forward_default_read_elsewhere, (1.3,), (1.0,), backend="interp")


def test_llvm_compiles_run_time_defaults_bound_where_the_closure_is_made():
    (got,) = gradient(forward_default_read_here, 1.3, backend="llvm")
    assert got == pytest.approx(_central(forward_default_read_here, (1.3,), 0), rel=1e-6)


@pytest.mark.parametrize("backend", ("interp", "auto"))
def test_checkpointed_loop_with_a_run_time_default(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = gradient(looped_default, 1.1, 6, backend=backend, checkpoint=1)
        full = gradient(looped_default, 1.1, 6, backend=backend)
    assert got[0] == pytest.approx(_central(looped_default, (1.1, 6), 0), rel=1e-6)
    assert got[0] == full[0]


def forward_constant_default_read_elsewhere(x):
    def square(y, n=2.0):
        return y * y * n
    return _apply(square, x)


@pytest.mark.parametrize("backend", ("interp", "auto"))
def test_forward_mode_fills_in_a_constant_default_read_elsewhere(backend):
    from adjoint import jvp
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y, t = jvp(forward_constant_default_read_elsewhere, (1.3,), (1.0,), backend=backend)
    assert (y, t) == pytest.approx((2.0 * 1.3 ** 2, 4.0 * 1.3))     # refused before
