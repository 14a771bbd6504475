"""Regressions of the user API's checks (fuzz findings 10, 11 and 14):

* a result that is None on one path is None in compiled code too (not 0.0), and
  `gradient` / `value_and_grad` refuse it as the interpreter does;
* `back(dy)` refuses a cotangent whose structure, shape or kind is not the output's;
* complex inputs follow one convention (JAX's: df/dx - i df/dy) or are refused.
"""
from __future__ import annotations

import numpy as np
import pytest

from adjoint import gradient, pullback, value_and_grad

BACKENDS = ("interp", "llvm")


# -- 14: None results in compiled code ------------------------------------------------
def first_late_double(x, n):
    for i in range(n):
        if i > 5:
            return x * 2.0


def none_checked(x, n):
    y = None
    if n > 0:
        y = x * 3.0
    if y is None:
        return -1.0
    return y


def none_in_tuple(x, n):
    if n > 0:
        return x * 2.0, None
    return None, x


@pytest.mark.parametrize("backend", BACKENDS + ("auto",))
def test_result_none_on_one_path(backend):
    for _ in range(2):      # the second call takes the cached (hot) entries
        assert first_late_double(1.0, 0) is None
        assert pullback(first_late_double, 1.0, 0, backend=backend)[0] is None
        y, back = pullback(first_late_double, 1.5, 9, backend=backend)
        assert y == 3.0 and back(1.0) == (2.0, None)
        for fn in (gradient, value_and_grad):
            with pytest.raises(TypeError, match="must return a real scalar, got NoneType"):
                fn(first_late_double, 1.0, 0, backend=backend)
        assert value_and_grad(first_late_double, 1.0, 7, backend=backend) == (2.0, (2.0, None))


@pytest.mark.parametrize("backend", BACKENDS)
def test_primal_none_compared_and_returned_in_tuple(backend):
    assert value_and_grad(none_checked, 2.0, 0, backend=backend) == (-1.0, (0.0, None))
    assert value_and_grad(none_checked, 2.0, 1, backend=backend) == (6.0, (3.0, None))
    y, back = pullback(none_in_tuple, 2.0, 0, backend=backend)
    assert y == (None, 2.0) and back((None, 1.0)) == (1.0, None)
    y, back = pullback(none_in_tuple, 2.0, 1, backend=backend)
    assert y == (4.0, None) and back((1.0, None)) == (2.0, None)


# -- 10: back(dy) checks dy against the output ----------------------------------------
def scaled(x):
    return x * 2.0


def row(x):
    return np.ones(3) * x


def grid(x):
    return np.ones((2, 2)) * x


def pair(x):
    return x, x * x


def listed(x):
    return [x, x * x]


def named(x):
    return {"a": x, "b": x * x}


def nested(x):
    return x, [np.ones(2) * x, {"k": x * 3.0}]


# output -> (cotangents it takes with the gradient at x = 1.5, cotangents it refuses)
COTANGENTS = {
    scaled: ([(2.0, 4.0), (np.float64(0.5), 1.0), (np.ones(()), 2.0), (None, 0.0)],
             [np.ones(3), np.ones(1), (1.0,), 1j, "a"]),
    row: ([(np.arange(3.0), 3.0), (None, 0.0)],
          [1.0, np.ones(2), np.ones((3, 1)), [1.0, 1.0, 1.0], 1j * np.ones(3)]),
    grid: ([(np.ones((2, 2)), 4.0)], [np.ones(4), np.ones((2, 3)), 1.0]),
    pair: ([((1.0, 1.0), 4.0), ([1.0, 2.0], 7.0), ((None, 1.0), 3.0)],
           [(1.0,), (1.0, 1.0, 1.0), 1.0, np.ones(2), {"a": 1.0}]),
    listed: ([([1.0, 1.0], 4.0), ((0.0, 1.0), 3.0)], [[1.0], 1.0, np.ones(2)]),
    named: ([({"a": 1.0, "b": 1.0}, 4.0), ({"b": 1.0}, 3.0)],
            [{"a": 1.0, "c": 1.0}, (1.0, 1.0), 1.0]),
    nested: ([((1.0, [np.ones(2), {"k": 1.0}]), 6.0), ((1.0, None), 1.0)],
             [(1.0, [np.ones(3), {"k": 1.0}]), (1.0, [np.ones(2), {"j": 1.0}]),
              (1.0, [np.ones(2)])]),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f", list(COTANGENTS), ids=lambda f: f.__name__)
def test_back_checks_the_cotangent(f, backend):
    takes, refuses = COTANGENTS[f]
    y, back = pullback(f, 1.5, backend=backend)
    for dy, want in takes:
        assert back(dy) == (pytest.approx(want),)
    for dy in refuses:
        with pytest.raises((ValueError, TypeError), match=r"back\(dy\) of the pullback of"):
            back(dy)
    assert back(takes[0][0]) == (pytest.approx(takes[0][1]),)   # still usable


@pytest.mark.parametrize("backend", BACKENDS)
def test_back_error_names_both_shapes(backend):
    _, back = pullback(scaled, 0.5, backend=backend)
    with pytest.raises(ValueError, match=r"dy must be a number, got an array of shape \(3,\)"):
        back(np.ones(3))
    _, back = pullback(nested, 0.5, backend=backend)
    with pytest.raises(ValueError, match=r"dy\[1\]\[0\] must be an array of shape \(2,\), "
                                         r"got an array of shape \(3,\)"):
        back((1.0, [np.ones(3), None]))


def test_array_output_with_array_input():
    for backend in BACKENDS:
        _, back = pullback(lambda v: np.sum(v * v), np.arange(3.0), backend=backend)
        with pytest.raises(ValueError, match="must be a number"):
            back(np.ones(3))
        assert np.array_equal(back(np.float64(1.0))[0], [0.0, 2.0, 4.0])


def test_jvp_shares_the_check():
    from adjoint import jvp
    with pytest.raises(ValueError, match=r"jvp: tangent 0 must be a dict"):
        jvp(lambda d: d["a"], ({"a": 1.0},), ((1.0,),))
    with pytest.raises(ValueError, match=r"jvp: tangent 0 must be an array of shape \(3,\)"):
        jvp(row_sum, (np.ones(3),), (np.ones(2),))


def row_sum(v):
    return np.sum(v)


def test_transforms_pass_their_own_cotangents():
    from adjoint import hessian, jacobian
    for backend in BACKENDS:
        assert np.allclose(jacobian(pair, 2.0, backend=backend)[0], [1.0, 4.0])
        assert np.allclose(jacobian(listed, 2.0, backend=backend)[0], [1.0, 4.0])
        assert np.allclose(jacobian(grid, 2.0, backend=backend)[0], np.ones((2, 2)))
        assert np.allclose(jacobian(lambda v: (v, 2 * v), np.ones(2), backend=backend)[0],
                           [np.eye(2), 2 * np.eye(2)])
    assert np.allclose(hessian(lambda v: np.sum(v ** 3), np.arange(2.0)), np.diag([0.0, 6.0]))
    x = np.arange(6.0).reshape(2, 3)
    assert np.allclose(gradient(row_sum_sq, x, batch=0)[0], 2 * x)
    y, back = pullback(row_sum_sq, x[0], checkpoint=1)
    assert np.allclose(back(1.0)[0], 2 * x[0])
    with pytest.raises(ValueError, match="must be a number"):
        back(np.ones(3))


def row_sum_sq(v):
    return np.sum(v * v)


# -- 11: complex values: gradient df/dx - i df/dy everywhere (JAX's), or a refusal ---
def _finite_difference(f, z, h=1e-6):
    """df/dx - i df/dy of real f at z = x + iy (each entry of an array z)."""
    z = np.asarray(z, dtype=complex)
    out = np.zeros(z.shape, dtype=complex)
    for k in range(z.size):
        for step, unit in ((h, 1.0), (1j * h, -1j)):
            up, down = z.copy(), z.copy()
            up.flat[k] += step
            down.flat[k] -= step
            out.flat[k] += unit * (f(up if z.ndim else up[()]) -
                                   f(down if z.ndim else down[()])) / (2 * h)
    return out if z.ndim else complex(out[()])


COMPLEX_SCALAR = {
    "abs(z*z)": lambda z: abs(z * z),
    "abs(exp(z))": lambda z: abs(np.exp(z)),
    "(z*z).imag": lambda z: (z * z).imag,
    "z.imag**2": lambda z: z.imag ** 2,
    "abs(z)**2": lambda z: abs(z) ** 2,
    "(z/(1+z)).real": lambda z: (z / (1.0 + z)).real,
    "abs(sin z) + abs(cos z)": lambda z: abs(np.sin(z)) + abs(np.cos(z)),
    "abs(log z) + abs(sqrt z)": lambda z: abs(np.log(z)) + abs(np.sqrt(z)),
    "abs(z**2.5) + abs(2**z) + abs(z**z)": lambda z: abs(z ** 2.5) + abs(2.0 ** z) + abs(z ** z),
    "np.real(conj(z)*z*1j + z*1j)": lambda z: np.real(np.conjugate(z) * z * 1j + z * 1j),
    "np.imag(z*z) + np.angle(z)": lambda z: np.imag(z * z) + np.angle(z),
    "abs(tanh z) + abs(-z - 3)": lambda z: abs(np.tanh(z)) + abs(-z - 3.0),
    "(z.real*z).imag": lambda z: (z.real * z).imag,
}


@pytest.mark.parametrize("name", list(COMPLEX_SCALAR))
def test_complex_scalar_gradients_follow_one_convention(name):
    f = COMPLEX_SCALAR[name]
    for z in (1.0 + 2.0j, 0.7 - 1.3j):
        assert gradient(f, z, backend="interp")[0] == pytest.approx(_finite_difference(f, z),
                                                                    abs=1e-5)


def _loop_of_products(v):
    s = 0.0
    for i in range(len(v)):
        s = s + abs(v[i] * v[i - 1]) + v[i].imag
    return s


@pytest.mark.parametrize("f", [
    _loop_of_products,
    lambda v: np.abs(np.sum(v * v)),
    lambda v: np.mean(v * v).imag,
    lambda v: np.sum(np.abs(np.array([1.0, 2.0, 3.0]) * v[0])) + np.sum(np.real(v * 1j)),
])
def test_complex_array_gradients(f):
    v = np.array([1 + 1j, 2 - 0.5j, -0.3 + 0.2j])
    got = gradient(f, v, backend="interp")[0]
    assert got.dtype.kind == "c" and np.allclose(got, _finite_difference(f, v), atol=1e-5)


def test_real_inputs_through_complex_values_get_real_gradients():
    def f(v):
        w = v[0] * 1j + v[1] * (1 + 2j)
        return abs(w * w) + np.angle(w) + np.sum(np.real(v * 1j))
    v = np.array([0.4, 1.2])
    got = gradient(f, v, backend="interp")[0]
    assert got.dtype == np.float64
    assert np.allclose(got, _finite_difference(f, v).real, atol=1e-5)
    assert gradient(lambda x: (x * (2 + 1j)).imag, 1.5, backend="interp") == (1.0,)


def test_imag_of_a_real_value_is_constant():
    # x.imag of a float is 0 whatever x: the rule gave it the gradient 1 (the JIT
    # refuses .imag of a float)
    f = lambda v: np.sum(v.imag) + np.sum(v.real) * 2.0   # noqa: E731
    assert np.array_equal(gradient(f, np.ones(2), backend="interp")[0], [2.0, 2.0])
    assert gradient(lambda x: x.imag + 2.0 * x.real, 1.5, backend="interp") == (2.0,)


def test_holomorphic_pullback_is_dy_times_derivative():
    z = 0.7 - 1.3j
    _, back = pullback(lambda w: w * w, z, backend="interp")
    assert back(1.0)[0] == pytest.approx(2 * z)
    assert back(1j)[0] == pytest.approx(1j * 2 * z)
    with pytest.raises(TypeError, match="complex"):
        pullback(lambda w: w * 2.0, 1.5, backend="interp")[1](1j)   # real output


@pytest.mark.parametrize("f", [
    lambda z: np.sum(np.sign(z)).real,
    lambda z: abs(np.cumsum(np.array([z, z]))[1]),
])
def test_rules_without_a_complex_form_refuse(f):
    with pytest.raises(TypeError, match="does not support complex numbers"):
        gradient(f, 0.7 - 1.3j, backend="interp")


def test_user_rule_results_are_checked():
    import adjoint

    def twice(x, y):
        return 2.0 * x * y

    @adjoint.rule(twice)
    def _(dy, x, y):
        return (2.0 * y * dy,)

    def halved(v):
        return np.sum(v) / 2.0

    @adjoint.rule(halved)
    def _(dy, v):
        return (np.full(2, dy / 2.0),)

    with pytest.raises(TypeError, match="returned 1 cotangents for 2 arguments"):
        gradient(lambda a: twice(a, 3.0), 1.0, backend="interp")
    with pytest.raises(ValueError, match=r"cotangent 0 must be an array of shape \(3,\)"):
        gradient(lambda v: halved(v), np.ones(3), backend="interp")


def _back_with_wrong_seed(x):
    _, back = pullback(scaled, x)
    return np.sum(back(np.ones(3))[0])


def _back_inside(x):
    y, back = pullback(lambda t: t * t, x)
    return back(3.0 * x)[0] + y


def test_nested_back_checks_its_seed_as_cpython_does():
    with pytest.raises(ValueError, match="dy must be a number"):
        _back_with_wrong_seed(1.0)
    for backend in ("interp", "auto"):
        with pytest.raises(ValueError, match="dy must be a number"):
            gradient(_back_with_wrong_seed, 1.0, backend=backend)
    assert gradient(_back_inside, 2.0, backend="interp") == (pytest.approx(28.0),)  # 7 x^2


def test_forward_mode_refuses_complex_values():
    # forward mode ran the pullbacks as jvps: exp's gave the conjugate, abs's a wrong number
    from adjoint import jvp
    with pytest.raises(TypeError, match="forward mode does not support complex"):
        jvp(lambda z: abs(z * z), (1 + 2j,), (1.0,), backend="interp")
    with pytest.raises(TypeError, match="forward mode does not support complex"):
        jvp(lambda x: np.exp(x * 1j).real, (0.7,), (1.0,), backend="interp")
    y, t = jvp(lambda x: (x * (1 + 1j) * x).imag, (0.7,), (1.0,), backend="interp")
    assert (y, t) == (pytest.approx(0.49), pytest.approx(1.4))


def test_complex_through_jacobian_and_batch():
    from adjoint import jacobian
    with pytest.raises(TypeError, match="jacobian: complex values are not supported"):
        jacobian(lambda z: z * z, 1 + 2j, backend="interp")
    with pytest.raises(TypeError, match="jacobian: complex values are not supported"):
        jacobian(lambda v: v * (1 + 1j), np.ones(2), backend="interp")
    rows = np.array([[1 + 1j, 2 - 1j], [0.5j, 3.0 + 0j]])
    f = lambda v: np.sum(np.abs(v * v))   # noqa: E731
    got = gradient(f, rows, batch=0)[0]    # the rows were stacked as floats
    assert np.allclose(got, [gradient(f, r, backend="interp")[0] for r in rows])
    assert np.allclose(got, 2 * np.conj(rows))
