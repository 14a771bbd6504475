"""Regressions in the numpy derivative rules as the compiled path runs them: a
cotangent must come back in its operand's form (a float for a number, an array of the
operand's shape otherwise) on the interpreter and on the JIT alike."""
import warnings

import numpy as np
import pytest

from adjoint import gradient

BACKENDS = ("interp", "llvm")


def _central(f, args, k, h=1e-6):
    """Central differences of scalar f in argument k (a float or an array)."""
    x = args[k]
    if isinstance(x, float):
        hi, lo = list(args), list(args)
        hi[k], lo[k] = x + h, x - h
        return (f(*hi) - f(*lo)) / (2 * h)
    g = np.zeros(np.shape(x))
    for i in np.ndindex(g.shape):
        hi, lo = list(args), list(args)
        hi[k], lo[k] = np.array(x, dtype=float), np.array(x, dtype=float)
        hi[k][i] += h
        lo[k][i] -= h
        g[i] = (f(*hi) - f(*lo)) / (2 * h)
    return g


def _check_form_and_value(f, args, backend):
    got = gradient(f, *args, backend=backend)
    for k, (g, a) in enumerate(zip(got, args)):
        if isinstance(a, float):
            assert isinstance(g, float), (k, type(g))
        else:
            assert isinstance(g, np.ndarray) and g.shape == np.shape(a), (k, np.shape(g))
        np.testing.assert_allclose(g, _central(f, args, k), rtol=1e-5, atol=1e-7)


# -- np.outer ravels its operands: each cotangent is shaped back --------------------------
def _outer_sq(a, b):
    return np.sum(np.outer(a, b) ** 2)


def _outer_of_broadcast(M, w, v):
    return np.sum(np.outer(v, M + w) ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_outer_number_operand_gets_a_float(backend):
    u = np.array([0.1, 0.2, 0.3])
    ga, gu = gradient(_outer_sq, 0.5, u, backend=backend)
    assert isinstance(ga, float) and ga == pytest.approx(2 * 0.5 * np.sum(u * u))
    np.testing.assert_allclose(gu, 2 * 0.25 * u)
    _check_form_and_value(_outer_sq, (np.array([0.5, -1.0]), 2.0), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_outer_of_a_broadcast_2d_operand(backend):
    M = np.arange(6.0).reshape(2, 3) / 7
    w, v = np.array([0.5, -0.5, 1.0]), np.array([1.0, -2.0])
    S = M + w
    gM, gw, gv = gradient(_outer_of_broadcast, M, w, v, backend=backend)
    np.testing.assert_allclose(gM, 2 * np.sum(v * v) * S)
    np.testing.assert_allclose(gw, 2 * np.sum(v * v) * S.sum(axis=0))
    np.testing.assert_allclose(gv, 2 * v * np.sum(S * S))


@pytest.mark.parametrize("backend", BACKENDS)
def test_outer_of_3d_operands(backend):
    rng = np.random.default_rng(3)
    _check_form_and_value(_outer_sq, (rng.normal(size=(2, 1, 2)), rng.normal(size=(3, 2))),
                          backend)


# -- np.sqrt (the rule it shares with math.sqrt) on arrays of any rank -------------------
def _sqrt_sum(T):
    return np.sum(np.sqrt(1.0 + T * T))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 3, 2), (2, 1, 2, 2)])
def test_sqrt_gradient_any_rank(backend, shape):
    T = np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape)
    g = gradient(_sqrt_sum, T, backend=backend)[0]
    assert g.shape == shape
    np.testing.assert_allclose(g, T / np.sqrt(1.0 + T * T))


# -- a small table of rules x operand forms (the audit, cut down) ------------------------
_FORMS = {"number": 0.4, "1-D": np.array([0.3, 0.5, 0.7]),
          "2-D": np.array([[0.3, 0.6, 0.2], [0.5, 0.4, 0.8]]),
          "3-D": np.linspace(0.2, 0.8, 12).reshape(2, 2, 3)}
_UNARY = ["sqrt", "exp", "tanh", "arcsin", "cbrt", "abs"]
_BINARY = [("outer", "number", "3-D"), ("outer", "2-D", "1-D"), ("divide", "3-D", "1-D"),
           ("hypot", "number", "3-D"), ("fmax", "2-D", "3-D"), ("arctan2", "3-D", "2-D")]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", _UNARY)
def test_unary_rule_forms(backend, name):
    f = eval(f"lambda v: np.sum(np.{name}(v) * 1.5)", {"np": np})   # a direct call
    for x in (_FORMS["number"], _FORMS["3-D"]):
        _check_form_and_value(f, (x,), backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,a,b", _BINARY)
def test_binary_rule_forms(backend, name, a, b):
    f = eval(f"lambda x, y: np.sum(np.{name}(x, y) ** 2)", {"np": np})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check_form_and_value(f, (_FORMS[a], _FORMS[b] + 0.13), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_outer_called_through_a_variable(backend):
    """np.outer as a function value (a jcall): a 2-D operand takes numpy's own outer."""
    fn = np.outer
    _check_form_and_value(lambda x, y: np.sum(fn(x, y) ** 2), (_FORMS["2-D"], _FORMS["1-D"]),
                          backend)


def test_host_called_rule_types_an_unread_operand_by_its_result(monkeypatch):
    """A rule that reads only its result (sqrt's) is called with a placeholder for its
    operand; where the JIT cannot compile the rule and calls it as Python, the
    operand's cotangent has the result's form, not the placeholder's (a float)."""
    from adjoint import rules_elementary

    def sqrt_rule_in_numpy_only(dy, y, x):      # np.isnan of an array: not compiled
        return np.where(np.isnan(y), 0.0, dy / (2.0 * y))

    monkeypatch.setattr(rules_elementary.d_sqrt, "fn", sqrt_rule_in_numpy_only)

    def f(T):
        return np.sum(np.sqrt(1.0 + T * T))

    T = np.linspace(-1.0, 1.0, 12).reshape(2, 3, 2)
    g = gradient(f, T, backend="llvm")[0]
    np.testing.assert_allclose(g, T / np.sqrt(1.0 + T * T))
    assert gradient(lambda x: np.sqrt(x), 2.0, backend="llvm")[0] == pytest.approx(
        0.5 / np.sqrt(2.0))


# -- division by an element read from an array: numpy scalar semantics --------------------
def _over_elem(x):
    a = np.zeros(2)
    return x / a[1]


def _floor_mod_pow_elem(x):
    a = np.zeros(2)
    return (x // a[1], x % a[1], a[0] ** -1.0)


def _int_elem(n):
    a = np.zeros(2, dtype=np.int64)
    return n // a[1] + n % a[1], n / a[1]


def _over_python_float(x):
    return x / (x - x)


def _python_int_floor(n):
    return n // (n - n)


def test_division_by_a_numpy_zero_is_ieee_compiled():
    import jit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert jit.jit(_over_elem)(1.0) == np.inf
        q, r, p = jit.jit(_floor_mod_pow_elem)(-1.0)
        assert q == -np.inf and np.isnan(r) and p == np.inf
        assert jit.jit(_int_elem)(3) == (0, np.inf) == _int_elem(3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_division_by_a_numpy_zero_in_a_gradient(backend):
    from adjoint import pullback
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y, back = pullback(_over_elem, 1.0, backend=backend)
        assert y == np.inf and back(1.0)[0] == np.inf


@pytest.mark.parametrize("backend", BACKENDS)
def test_division_of_python_numbers_by_zero_still_raises(backend):
    import jit
    with pytest.raises(ZeroDivisionError):
        jit.jit(_over_python_float)(1.0)
    with pytest.raises(ZeroDivisionError):
        jit.jit(_python_int_floor)(4)
    with pytest.raises(ZeroDivisionError):
        gradient(_over_python_float, 1.0, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_uncompiled_rules_called_through_a_variable(backend):
    """A jcall of a function whose rule the JIT cannot compile (fmax's np.isnan, std's
    where) calls the rule as Python, as a direct call does."""
    fmax, std = np.fmax, np.std
    _check_form_and_value(lambda x, y: np.sum(fmax(x, y) ** 2),
                          (_FORMS["2-D"], _FORMS["3-D"] + 0.13), backend)
    _check_form_and_value(lambda x: std(x) * 2.0, (_FORMS["3-D"],), backend)


def _writes_then_divides(x):
    a = np.zeros(2)
    a[0] = x
    return a[0] + x / (x - x)


def test_division_by_zero_in_a_function_that_writes_arrays_raises_zerodivision():
    """A function that writes arrays cannot be rerun in Python: a zero divisor there
    raises CPython's ZeroDivisionError (as for a Python float), not another class."""
    import jit
    with pytest.raises(ZeroDivisionError, match="float division by zero"):
        _writes_then_divides(1.5)
    with pytest.raises(ZeroDivisionError, match="float division by zero"):
        jit.jit(_writes_then_divides)(1.5)


def polyval_of_grid(c, x):
    return np.sum(np.polyval(c, x) ** 2)


def polyval_at_number(c, s):
    return np.polyval(c, s) * s


@pytest.mark.parametrize("backend", BACKENDS)
def test_polyval_has_a_derivative_in_both_operands(backend):
    c, x = np.array([1.0, -2.0, 3.0, 0.5]), np.linspace(-1.0, 1.0, 4)
    gc, gx = gradient(polyval_of_grid, c, x, backend=backend)
    np.testing.assert_allclose(gc, _central(polyval_of_grid, (c, x), 0), rtol=1e-6)
    np.testing.assert_allclose(gx, _central(polyval_of_grid, (c, x), 1), rtol=1e-6)
    gc, gs = gradient(polyval_at_number, c, 0.7, backend=backend)
    assert isinstance(gs, float)
    # d/ds (p(s) s) = p'(s) s + p(s), p(s) = s^3 - 2 s^2 + 3 s + 0.5
    assert np.isclose(gs, (3 * 0.49 - 4 * 0.7 + 3) * 0.7 + np.polyval(c, 0.7), rtol=1e-12)
    np.testing.assert_allclose(gc, 0.7 * 0.7 ** np.arange(3, -1, -1), rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_polyval_in_forward_mode(backend):
    from adjoint import jvp
    c, x = np.array([1.0, -2.0, 3.0, 0.5]), np.linspace(-1.0, 1.0, 4)
    tc, tx = np.array([0.3, -0.1, 0.2, 1.0]), np.array([1.0, 0.5, -0.5, 0.25])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, t = jvp(polyval_of_grid, (c, x), (tc, tx), backend=backend)
    h = 1e-6
    want = (polyval_of_grid(c + h * tc, x + h * tx) - polyval_of_grid(c - h * tc, x - h * tx)) \
        / (2 * h)
    assert np.isclose(t, want, rtol=1e-6)


def _through_a_dtype_operand(x):
    return np.sum(np.asarray(x * 2.0, np.float64) ** 2) + np.sum(np.array(x, np.float32) * x)


@pytest.mark.parametrize("backend", ["interp", "auto"])
def test_a_numpy_type_as_an_operand_of_a_rule(backend):
    """`np.asarray(x, np.float64)`: the dtype is an operand of the rule, and a numpy type
    (whose `dtype` attribute is a descriptor) is not a narrow float: it crashed with an
    AttributeError."""
    x = np.array([0.5, -1.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (g,) = gradient(_through_a_dtype_operand, x, backend=backend)
    np.testing.assert_allclose(g, 8 * x + 2 * x, rtol=1e-6)


def _padded_by_edge(x):
    return np.sum(np.pad(x, 1, mode="edge") ** 2)


@pytest.mark.parametrize("backend", ["interp", "auto", "llvm"])
def test_a_rule_refusing_an_option_raises_its_type_error_in_every_backend(backend):
    """np.pad's derivative supports mode='constant' only: the compiled paths raised an
    AttributeError (the fast path read the type of a forward pass that only raises)
    and then an OverflowError (the adjoint's rerun-only site)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match="np.pad supports mode='constant' only|"
                                            "compiled adjoint of _padded_by_edge"):
            gradient(_padded_by_edge, np.ones(3), backend=backend)


# np.linspace / np.arange with a differentiated bound, and enumerate(...) as a value, were
# marked non-differentiable: their gradients came back zero, silently.
SILENT_ZEROS = {
    "linspace_stop": (lambda x: np.sum(np.linspace(0.0, x, 5) ** 2), lambda x: 2 * x * 1.875),
    "linspace_no_endpoint": (lambda x: np.sum(np.linspace(x, 3.0, 4, endpoint=False) ** 2),
                             None),
    "arange_start_step": (lambda x: np.sum(np.arange(x, x + 3.0, 0.5) ** 2), None),
    "list_of_enumerate": (lambda x: sum(i * v for i, v in list(enumerate([x, x * x, 2.0]))),
                          lambda x: 2 * x),
}


@pytest.mark.parametrize("name", sorted(SILENT_ZEROS))
@pytest.mark.parametrize("backend", ["interp", "auto"])
def test_linspace_arange_and_enumerate_values_differentiate(name, backend):
    from adjoint import jvp
    f, closed = SILENT_ZEROS[name]
    x, h = 0.7, 1e-6
    fd = (f(x + h) - f(x - h)) / (2 * h)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (g,) = gradient(f, x, backend=backend)
        t = jvp(f, (x,), (1.0,))[1]
    assert g == pytest.approx(fd, rel=1e-6) and t == pytest.approx(fd, rel=1e-6)
    if closed is not None:
        assert g == pytest.approx(closed(x), rel=1e-12)
