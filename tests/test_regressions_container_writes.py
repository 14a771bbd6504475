"""Writes into an array reached through another name of it: a tuple's element, an
unpacked element, a nested tuple, a list or dict value, a callee's result, a
`for` over a tuple, a container read after the write.  Each is either differentiated as a write into the array
itself (checked against central differences) or refused with an error naming the
line -- never a silent wrong gradient (it used to drop the write on both backends).
"""
import warnings

import numpy as np
import pytest

import adjoint
from jit.pullback.backend import JitFallbackWarning

A = np.arange(6.0).reshape(2, 3) / 10 + 0.1
X = 0.4
BACKENDS = ["interp", "llvm"]


def central(f, a, x, h=1e-6):
    dx = (f(a.copy(), x + h) - f(a.copy(), x - h)) / (2 * h)
    da = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = h
        da[i] = (f(a + e, x) - f(a - e, x)) / (2 * h)
    return da, dx


def ident(a):
    return a


def scaled(a):
    return a * 1.0


def tuple_element(A, x):
    t = A * x
    pair = (t, 2.0)
    pair[0][0, 0] = np.sum(t[1])
    return np.sum(t * t)


def tuple_element_read_back(A, x):
    t = A * x
    pair = (t, 2.0)
    s = np.sum(pair[0] * t)
    pair[0][1, 2] += t[0, 1] * 2.0
    return s + np.sum(pair[0] * pair[0])


def unpacked_element(A, x):
    t = A * x
    u, _ = (t, 2.0)
    u[1, 1] = t[0, 2] * 0.5
    return np.sum(np.sin(t)) + np.sum(u[0])


def nested_tuple(A, x):
    t = A * x
    c = ((t, 1.0), 2.0)
    c[0][0][0, 2] = c[0][0][1, 0] * 3.0
    return np.sum(t * t)


def for_over_tuple(A, x):
    t = A * x
    for row in (t,):
        row[0, 1] = np.sum(t[1]) * x
    return np.sum(t * t)


def fresh_callee_result(A, x):
    t = A * x
    c = scaled(t)
    c[0, 0] = np.sum(t[1])
    return np.sum(c * t)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f", [tuple_element, tuple_element_read_back, unpacked_element,
                               nested_tuple, fresh_callee_result])
def test_a_write_through_another_name_is_a_write_into_the_array(f, backend):
    with warnings.catch_warnings():      # llvm: compiled, no fallback
        warnings.simplefilter("error", JitFallbackWarning)
        da, dx = adjoint.gradient(f, A.copy(), X, backend=backend)
    ra, rx = central(f, A, X)
    assert np.allclose(da, ra, atol=1e-5) and np.isclose(dx, rx, atol=1e-5)


def callee_returns_its_argument(A, x):
    t = A * x
    c = ident(t)
    c[0, 0] = np.sum(t[1])
    return np.sum(t * t)


def list_element(A, x):
    t = A * x
    c = [t, 2.0]
    c[0][0, 0] = np.sum(t[1])
    return np.sum(t * t)


def dict_value(A, x):
    t = A * x
    c = {"w": t}
    c["w"][1, 0] += t[0, 1]
    return np.sum(t * t)


def container_read_after_write(A, x):
    t = A * x
    box = [t]
    t[0, 0] = np.sum(t[1])
    return np.sum(box[0] * box[0])


def tuple_passed_on_after_write(A, x):
    t = A * x
    pair = (t, x)
    t[0, 0] = 1.0
    return total(pair)


def total(p):
    return np.sum(p[0] * p[0]) * p[1]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f", [for_over_tuple, callee_returns_its_argument, list_element,
                               dict_value,
                               container_read_after_write, tuple_passed_on_after_write])
def test_a_write_another_live_name_outlives_is_refused_naming_the_line(f, backend):
    with pytest.raises(TypeError, match=r"test_regressions_container_writes\.py:\d+"):
        adjoint.gradient(f, A.copy(), X, backend=backend)


# -- a user function that writes into its argument, given a view of another array ---------
def _set_first(r):
    r[0] = 5.0


def _writes_a_row(x):
    t = x * 1.0
    _set_first(t[1])
    return np.sum(t * x)


def _writes_each_row(x):
    t = x * 1.0
    for row in t:
        _set_first(row)
    return np.sum(t * x)


def _writes_its_own_array(x):
    t = x * 1.0
    _set_first(t)
    return np.sum(t * x)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("f", [_writes_a_row, _writes_each_row])
def test_callee_writing_into_a_view_is_refused_not_wrong(f, backend):
    """The callee's adjoint clears the cotangent of its argument (the view), never the
    viewed array's: the gradient came back [2, 4, 8, 8] for [2, 4, 5, 8]."""
    x = np.arange(4.0).reshape(2, 2) + 1.0
    with pytest.raises(TypeError, match="_set_first that writes into its argument"):
        adjoint.gradient(f, x, backend=backend)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_callee_writing_into_the_array_itself_is_differentiated(backend):
    x = np.arange(4.0).reshape(2, 2) + 1.0
    want = 2 * x
    want[0] = 5.0           # t's first row is 5.0 and no longer depends on x
    np.testing.assert_allclose(adjoint.gradient(_writes_its_own_array, x, backend=backend)[0],
                               want)


def _eliminate(a, b):
    """Gaussian elimination as people write it: `n = a.shape[0]`, then writes into
    rows in nested loops (`n` is a number, not a second name of `a`)."""
    a, b = a.copy(), b.copy()
    n = a.shape[0]
    for k in range(n):
        for i in range(k + 1, n):
            m = a[i, k] / a[k, k]
            a[i] = a[i] - m * a[k]
            b[i] = b[i] - m * b[k]
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - np.dot(a[i, i + 1:], x[i + 1:])) / a[i, i]
    return np.sum(x * x)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_a_shape_read_before_writes_is_not_an_alias(backend):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, 3)) + 4.0 * np.eye(3)
    b = rng.normal(size=3)
    ga, gb = adjoint.gradient(_eliminate, a, b, backend=backend)
    # the same loss by numpy's solver, differentiated by its rule
    wa, wb = adjoint.gradient(lambda m, v: np.sum(np.linalg.solve(m, v) ** 2), a, b,
                              backend="interp")
    np.testing.assert_allclose(ga, wa, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gb, wb, rtol=1e-10, atol=1e-12)
