"""Numpy programs compiled: operands of different ranks broadcast (a 1-D array is a
row of a 2-D one), module-level arrays and closures are read as constants.  Each
case: the JIT agrees with the interpreter (`check_llvm`, value and gradients) and
the interpreter's gradient with central differences (`check_gradient`)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jit
from adjoint import pullback
from bench.numpy_programs import mlp_xent
from tests.adjoint_check import check_gradient
from tests.jit_grad_check import check_llvm

RNG = np.random.default_rng(11)
DATA = RNG.normal(size=(5, 3))
LABELS = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
COLUMNS = DATA.T            # a module-level view with non-unit strides


def mlp(W1, b1, W2, b2, x):
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    return np.sum(z * z) + np.sum(b1 * h) + np.sum(1.0 / (h - 3.0)) + np.sum(b2 - z)


def row_first(a, b):
    return np.sum((a - b) ** 2.0 + b / (a + 4.0))


def logistic(w):
    p = 0.5 * (np.tanh(np.dot(DATA, w) / 2.0) + 1.0)
    return -np.sum(np.log(p * LABELS + (1.0 - p) * (1.0 - LABELS))) + np.sum(COLUMNS[1] * w[0])


def _make(a):
    def inner(w):
        return np.sum(a * w)
    return inner


SCALED = _make(np.arange(3.0))


def calls_a_global_closure(w):
    return SCALED(w) * 2.0


MIXED = [
    ((3, 2), (2,)), ((3, 2), (1,)), ((2,), (3, 2)), ((1,), (3, 2)), ((3, 1), (4,)),
    ((4,), (3, 1)), ((3, 2), (1, 2)), ((0, 2), (2,)), ((3, 0), (1,)),
]


@pytest.mark.parametrize("sa,sb", MIXED, ids=[f"{a}-{b}" for a, b in MIXED])
def test_broadcast_across_ranks(sa, sb):
    a, b = RNG.normal(size=sa), RNG.normal(size=sb)
    assert check_llvm(row_first, a, b) == "ok"
    check_gradient(row_first, a, b)


def test_broadcast_of_non_contiguous_operands():
    a = RNG.normal(size=(6, 4))[::2, ::-1]
    b = RNG.normal(size=(8,))[1::2]
    assert check_llvm(row_first, a, b) == "ok"
    assert check_llvm(row_first, b, a) == "ok"


def test_mismatched_ranks_raise_numpys_error():
    with pytest.raises(ValueError):
        jit.jit(row_first)(np.ones((3, 2)), np.ones(3))


def test_two_layer_network():
    args = (RNG.normal(size=(3, 4)), RNG.normal(size=4), RNG.normal(size=(4, 2)),
            RNG.normal(size=2), RNG.normal(size=(5, 3)))
    y, back = pullback(mlp, *args, backend="llvm")        # matrix products: up to the
    yi, backi = pullback(mlp, *args, backend="interp")    # last bits of numpy's BLAS
    assert np.isclose(y, yi, rtol=1e-12) and _close(back(1.0), backi(1.0))
    check_gradient(mlp, *args)


def test_module_level_arrays_are_constants():
    w = np.array([0.3, -0.2, 0.5])
    assert check_llvm(logistic, w) == "ok"
    check_gradient(logistic, w)
    assert jit.jit(logistic)(w) == logistic(w)


def test_closure_read_from_a_global():
    assert check_llvm(calls_a_global_closure, np.ones(3)) == "ok"


def layers(params, x):
    for W, b in params:           # a list of (W, b) tuples, indexed by the loop counter
        x = np.tanh(x @ W + b)
    return np.sum(x * x)


def _close(a, b) -> bool:
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_close, a, b))
    return np.allclose(a, b, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("widths", [(3, 4, 2), (3, 3, 3, 3)])
def test_list_of_layer_tuples(widths):
    params = [(RNG.normal(size=(m, n)), RNG.normal(size=n)) for m, n in zip(widths, widths[1:])]
    x = RNG.normal(size=(5, widths[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # compiled: no fallback warning
        y, back = pullback(layers, params, x, backend="llvm")
    g = back(1.0)
    yi, backi = pullback(layers, params, x, backend="interp")
    assert np.isclose(y, yi, rtol=1e-12) and _close(g, backi(1.0))
    assert isinstance(g[0], list) and isinstance(g[0][0], tuple)
    check_gradient(layers, params, x)


def test_a_list_argument_comes_back_a_list():
    def ident(ps):
        return ps
    assert jit.jit(ident)([1.0, 2.0]) == [1.0, 2.0]
    assert jit.jit(ident)((1.0, [2.0, 3])) == (1.0, [2.0, 3])


softmax_cross_entropy = mlp_xent      # the benchmark's network (bench.numpy_programs)


def test_softmax_cross_entropy_network():
    params = [(RNG.normal(size=(6, 8)), RNG.normal(size=8)),
              (RNG.normal(size=(8, 4)), RNG.normal(size=4))]
    x, y = RNG.normal(size=(7, 6)), np.eye(4)[RNG.integers(0, 4, 7)]
    y_llvm, back = pullback(softmax_cross_entropy, params, x, y, backend="llvm")
    y_interp, back_interp = pullback(softmax_cross_entropy, params, x, y, backend="interp")
    assert np.isclose(y_llvm, y_interp, rtol=1e-12)
    assert _close(back(1.0), back_interp(1.0))
    check_gradient(softmax_cross_entropy, params, x, y)


REDUCTIONS = [
    ("sum", {"axis": 0}), ("sum", {"axis": 1, "keepdims": True}), ("sum", {"keepdims": True}),
    ("sum", {"axis": -1, "keepdims": False}), ("mean", {"axis": 0, "keepdims": True}),
    ("mean", {"keepdims": True}), ("mean", {"axis": -2}), ("max", {"axis": 0}),
    ("max", {"axis": 1, "keepdims": True}), ("min", {"axis": -1}),
    ("min", {"axis": 0, "keepdims": True}), ("max", {}), ("max", {"keepdims": True}),
    ("min", {"axis": None, "keepdims": True}),
]


def _reduction_case(name, kw):
    call = ", ".join(f"{k}={v}" for k, v in kw.items())
    src = (f"def f(a, w):\n    return np.sum(np.{name}(a{', ' if call else ''}{call}) * w)\n")
    scope = {"np": np}
    exec(compile(src, f"<reduction {name} {call}>", "exec"), scope)
    return scope["f"]


@pytest.mark.parametrize("name,kw", REDUCTIONS, ids=[f"{n}-{kw}" for n, kw in REDUCTIONS])
@pytest.mark.parametrize("shape", [(4, 3), (1, 5), (3, 1)])
def test_reductions_with_axis_and_keepdims(name, kw, shape):
    f = _reduction_case(name, kw)
    a = RNG.normal(size=shape)
    shape_out = np.shape(getattr(np, name)(a, **kw))
    w = RNG.normal(size=shape_out) if shape_out else float(RNG.normal())
    assert check_llvm(f, a, w) == "ok"
    if "axis" in kw or name in ("max", "min"):    # whole-array sums: bit-exact in C order
        assert check_llvm(f, a.T.copy().T, w) == "ok"    # Fortran order
    check_gradient(f, a, w)


@pytest.mark.parametrize("name,kw", [("sum", {"axis": 0, "keepdims": True}),
                                     ("max", {"axis": 0, "keepdims": True}),
                                     ("mean", {"keepdims": True})])
def test_reductions_of_1d_arrays_with_keepdims(name, kw):
    f = _reduction_case(name, kw)
    a = RNG.normal(size=5)
    assert check_llvm(f, a, RNG.normal(size=1)) == "ok"


@pytest.mark.parametrize("name", ["max", "min", "sum", "mean"])
@pytest.mark.parametrize("x", [2.5, -3, float("nan")], ids=["float", "int", "nan"])
def test_reductions_of_a_number(name, x):
    f = _reduction_case(name, {})
    assert check_llvm(f, x, 1.5) == "ok"


def test_max_over_an_empty_axis_raises_numpys_error():
    f = _reduction_case("max", {"axis": 0})
    with pytest.raises(ValueError):
        jit.jit(f)(np.zeros((0, 3)), np.ones(3))


def test_max_over_an_axis_with_ties_and_nan():
    f = _reduction_case("max", {"axis": 1})
    a = np.array([[1.0, 3.0, 3.0], [np.nan, 0.0, 1.0]])
    assert check_llvm(f, a, np.array([1.0, 2.0])) == "ok"


def dot_of(a, b):
    return np.sum(np.dot(a, b) ** 2)


@pytest.mark.parametrize("b", [np.ones(3), np.ones((3, 2))], ids=["2d.1d", "2d.2d"])
def test_errors_inside_library_helpers_name_the_users_statement(b):
    from jit.runtime.native import internal_file
    import jit.library.linalg as linalg_module
    assert internal_file(linalg_module.__file__)
    for run in (lambda: jit.jit(dot_of)(np.ones((3, 4)), b),
                lambda: pullback(dot_of, np.ones((3, 4)), b, backend="llvm")):
        with pytest.raises(ValueError) as e:
            run()
        assert "in dot_of at" in str(e.value) and "_dot" not in str(e.value)
        assert "linalg" not in str(e.value)


def test_dot_of_two_matrices_compiles():
    a, b = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2))
    assert jit.jit(dot_of)(a, b) == pytest.approx(dot_of(a, b), rel=1e-12)
    g, gi = pullback(dot_of, a, b, backend="llvm")[1](1.0), pullback(dot_of, a, b,
                                                                     backend="interp")[1](1.0)
    assert _close(g, gi)


def regress(params, x, activation=np.tanh):
    for W, b in params:
        z = np.dot(x, W) + b
        x = activation(z)       # unused after the last layer: its cotangent stays None
    return np.sum(z * z)


def regress_direct(params, x):
    for W, b in params:
        z = np.dot(x, W) + b
        x = np.tanh(z)
    return np.sum(z * z)


@pytest.mark.parametrize("f", [regress, regress_direct], ids=["function-value", "direct"])
def test_rule_of_a_value_whose_cotangent_is_none_at_run_time(f):
    params = [(RNG.normal(size=(3, 4)), RNG.normal(size=4)),
              (RNG.normal(size=(4, 2)), RNG.normal(size=2))]
    x = RNG.normal(size=(5, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, back = pullback(f, params, x, backend="llvm")
        g = back(1.0)
    yi, backi = pullback(f, params, x, backend="interp")
    assert np.isclose(y, yi, rtol=1e-12) and _close(g, backi(1.0))
    check_gradient(f, params, x)


_W12 = RNG.normal(size=12)


def reshape_pair(x):
    return np.sum(np.reshape(x, (6, 2)) * _W12.reshape(6, 2))


def reshape_inferred(x):
    return np.sum(np.reshape(x, (-1, 3)) ** 2 * _W12.reshape((4, 3)))


def reshape_line(x):
    return np.sum(np.reshape(x, -1) * _W12) + np.sum(x.reshape((12,)))


def reshape_method(x):
    return np.sum(x.reshape(3, 4) * _W12.reshape(3, 4)) + np.sum(x.ravel() * _W12)


RESHAPED = [
    (reshape_pair, np.arange(12.0)), (reshape_pair, np.arange(12.0).reshape(3, 4)),
    (reshape_inferred, np.arange(12.0).reshape(4, 3).T), (reshape_line, RNG.normal(size=(6, 2))),
    (reshape_method, RNG.normal(size=(4, 3))[:, ::-1]), (reshape_method, RNG.normal(size=12)),
]


@pytest.mark.parametrize("f,x", RESHAPED, ids=[f"{f.__name__}-{x.ndim}d" for f, x in RESHAPED])
def test_reshape_and_ravel(f, x):
    assert check_llvm(f, x) == "ok"
    check_gradient(f, x)


def test_reshape_of_a_contiguous_array_is_a_view():
    def f(x):
        y = np.reshape(x, (2, 3))
        y[0, 0] = 7.0
        return x[0]
    assert jit.jit(f)(np.arange(6.0)) == f(np.arange(6.0)) == 7.0


def test_reshape_to_a_size_that_does_not_fit():
    with pytest.raises(ValueError, match="cannot reshape array of size 10"):
        jit.jit(reshape_pair)(np.arange(10.0))


def matrix_product(a, b):
    return a @ b


def _layouts(a):
    return [a, np.asfortranarray(a), a.T.copy().T, RNG.normal(size=(2 * a.shape[0],
                                                                     2 * a.shape[1]))[::2, ::2]]


@pytest.mark.parametrize("n,k,m", [(5, 4, 3), (1, 6, 1), (6, 1, 6), (32, 64, 16)])
def test_matrix_products_are_numpys_in_every_layout(n, k, m):
    from jit.library.blas import BLAS
    f = jit.jit(matrix_product)
    for a in _layouts(RNG.normal(size=(n, k))):
        for b in _layouts(RNG.normal(size=(k, m))):
            got, want = f(a, b), a @ b
            assert got.shape == want.shape and np.allclose(got, want, rtol=1e-12)
    a, b = RNG.normal(size=(n, k)), RNG.normal(size=(k, m))
    if BLAS is not None and n > 1 and m > 1:    # the same BLAS call as numpy's
        assert np.array_equal(f(a, b), a @ b)


def test_matrix_products_of_empty_matrices():
    f = jit.jit(matrix_product)
    assert np.array_equal(f(np.ones((0, 3)), np.ones((3, 2))), np.zeros((0, 2)))
    assert np.array_equal(f(np.ones((2, 0)), np.ones((0, 3))), np.zeros((2, 3)))
