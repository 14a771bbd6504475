"""Reverse-mode rules of `adjoint.rules_ufuncs` under the interpreter, checked against
central differences (`check_gradient`, which draws a random output cotangent) over
numbers, 1-D and 2-D arrays, broadcasting, non-contiguous views and empty arrays,
and against autograd's gradients where autograd is installed."""
from __future__ import annotations

import math

import numpy as np
import pytest
from adjoint_check import check_gradient

import adjoint

RNG = np.random.default_rng(7)


def _in(lo, hi, shape):
    """Seeded values in [lo, hi): a float for shape None."""
    if shape is None:
        return float(RNG.uniform(lo, hi))
    return RNG.uniform(lo, hi, size=shape)


def _strided(lo, hi):
    """A non-contiguous 3 x 3 view (every other column of a 3 x 6 array)."""
    return RNG.uniform(lo, hi, size=(3, 6))[:, ::2]


# -- unary elementwise -------------------------------------------------------------------
def arcsinh(x):
    return np.arcsinh(x)


def arccosh(x):
    return np.arccosh(x)


def arctanh(x):
    return np.arctanh(x)


def exp2(x):
    return np.exp2(x)


def deg2rad(x):
    return np.deg2rad(x) * 3.0


def radians(x):
    return np.radians(x)


def rad2deg(x):
    return np.rad2deg(x)


def degrees(x):
    return np.sum(np.degrees(x) * np.sin(x))


UNARY = [(arcsinh, (-2.0, 2.0)), (arccosh, (1.2, 3.0)), (arctanh, (-0.8, 0.8)),
         (exp2, (-2.0, 2.0)), (deg2rad, (-90.0, 90.0)), (radians, (-90.0, 90.0)),
         (rad2deg, (-2.0, 2.0)), (degrees, (-2.0, 2.0))]
SHAPES = [None, (5,), (3, 4), (1, 4), "strided", (0, 3)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("f, lims", UNARY, ids=lambda v: getattr(v, "__name__", ""))
def test_unary(f, lims, shape):
    x = _strided(*lims) if shape == "strided" else _in(*lims, shape)
    grads = check_gradient(f, x)
    if shape is None:
        assert isinstance(grads[0], float)


def m_asinh(x):
    exp2 = getattr(math, "exp2", lambda v: 2.0 ** v)     # math.exp2 is 3.11+
    return math.asinh(x) * math.acosh(x + 2.0) + math.atanh(x / 3.0) + exp2(x)


def test_math_twins():
    check_gradient(m_asinh, 0.7)
    check_gradient(m_asinh, -0.4)


# -- binary elementwise -------------------------------------------------------------------
def logaddexp(x, y):
    return np.logaddexp(x, y)


def logaddexp2(x, y):
    return np.logaddexp2(x, y) * 2.0


def remainder(x, y):
    return np.remainder(x, y)


def mod(x, y):
    return np.sum(np.mod(x, y) * np.cos(x))


def fmod(x, y):
    return np.fmod(x, y)


def fmax(x, y):
    return np.fmax(x, y)


def fmin(x, y):
    return np.fmin(x, y)


PAIRS = [(None, None), (None, (4,)), ((4,), None), ((4,), (4,)), ((1, 4), (3, 4)),
         ((3, 4), (1, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ("strided", (3, 3)),
         ((0, 3), (0, 3)), ((0, 3), (1, 3))]
BINARY = [(logaddexp, (-2.0, 2.0), (-2.0, 2.0)), (logaddexp2, (-3.0, 1.0), (-1.0, 2.0)),
          (remainder, (-3.0, 3.0), (0.7, 1.9)), (mod, (-3.0, 3.0), (-1.9, -0.6)),
          (fmod, (-3.0, 3.0), (0.7, 1.9)), (fmod, (-3.0, 3.0), (-1.9, -0.6)),
          (fmax, (-2.0, 2.0), (-2.0, 2.0)), (fmin, (-2.0, 2.0), (-2.0, 2.0))]


def _arg(shape, lims):
    return _strided(*lims) if shape == "strided" else _in(*lims, shape)


@pytest.mark.parametrize("shapes", PAIRS, ids=str)
@pytest.mark.parametrize("f, la, lb", BINARY, ids=lambda v: getattr(v, "__name__", ""))
def test_binary(f, la, lb, shapes):
    x, y = _arg(shapes[0], la), _arg(shapes[1], lb)
    grads = check_gradient(f, x, y)
    for g, a in zip(grads, (x, y)):
        assert isinstance(g, float) == (not isinstance(a, np.ndarray))


def test_remainder_slopes():
    x, y = np.array([2.5, -2.5, 0.3]), np.array([1.0, 1.0, -0.7])
    _, back = adjoint.pullback(remainder, x, y, backend="interp")
    gx, gy = back(np.ones(3))
    assert np.allclose(gx, 1.0) and np.allclose(gy, [-2.0, 3.0, 1.0])
    _, back = adjoint.pullback(fmod, x, y, backend="interp")
    assert np.allclose(back(np.ones(3))[1], [-2.0, 2.0, 0.0])


def test_fmax_fmin_nan():
    """A NaN loses to a number: the number takes the cotangent (both NaN: the first)."""
    x = np.array([1.0, np.nan, 3.0, np.nan])
    y = np.array([np.nan, 2.0, 1.0, np.nan])
    for f, to_x in ((fmax, [1, 0, 1, 1]), (fmin, [1, 0, 0, 1])):
        _, back = adjoint.pullback(f, x, y, backend="interp")
        gx, gy = back(np.ones(4))
        assert np.array_equal(gx, np.array(to_x, float))
        assert np.array_equal(gy, 1.0 - np.array(to_x, float))


# -- clip ------------------------------------------------------------------------------
def clip_ab(a, lo, hi):
    return np.clip(a, lo, hi)


def clip_kw(a, lo, hi):
    # keyword operands get no cotangent (rules return positional ones): constant bounds
    return np.clip(a, min=-0.5, max=0.6) * 2.0 + lo * hi


def clip_method(a, lo, hi):
    return a.clip(lo, hi)


def clip_low(a, lo):
    return np.clip(a, lo, None)


def clip_high(a, hi):
    return np.sum(np.clip(a, None, hi) ** 2)


@pytest.mark.parametrize("f", [clip_ab, clip_kw, clip_method], ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", ["floats", "arrays", "broadcast", "strided", "empty"])
def test_clip(f, case):
    a = {"floats": _in(-2, 2, (7,)), "arrays": _in(-2, 2, (3, 4)),
         "broadcast": _in(-2, 2, (3, 4)), "strided": _strided(-2, 2),
         "empty": _in(-2, 2, (0, 4))}[case]
    if case in ("floats", "strided"):
        lo, hi = -0.5, 0.6
    elif case == "broadcast":
        lo, hi = _in(-1, -0.2, (1, 4)), _in(0.2, 1, (3, 1))
    else:
        lo, hi = _in(-1, -0.2, a.shape), _in(0.2, 1, a.shape)
    grads = check_gradient(f, a, lo, hi)
    if case == "floats":
        assert isinstance(grads[1], float) and isinstance(grads[2], float)


def test_clip_one_sided():
    a = _in(-2, 2, (3, 4))
    check_gradient(clip_low, a, 0.1)
    check_gradient(clip_high, a, _in(-0.5, 0.5, (4,)))
    check_gradient(clip_ab, 0.3, -1.0, 1.0)


# -- cumprod -----------------------------------------------------------------------------
def cumprod_none(x):
    return np.cumprod(x)


def cumprod_0(x):
    return np.cumprod(x, axis=0)


def cumprod_last(x):
    return np.cumprod(x, axis=-1)


def cumprod_method(x):
    return x.cumprod(1)


@pytest.mark.parametrize("f", [cumprod_none, cumprod_0, cumprod_last],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", ["1d", "2d", "zeros", "strided", "empty"])
def test_cumprod(f, case):
    x = {"1d": _in(0.5, 1.5, (5,)), "2d": _in(-1.5, 1.5, (3, 4)),
         "zeros": np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 0.0, 3.0, 0.5]]),
         "strided": _strided(-1.5, 1.5), "empty": _in(0, 1, (0, 3))}[case]
    check_gradient(f, x)


def test_cumprod_method_and_zero_slopes():
    check_gradient(cumprod_method, _in(0.5, 1.5, (2, 3)))
    x = np.array([2.0, 0.0, 3.0])
    _, back = adjoint.pullback(cumprod_none, x, backend="interp")
    # y = (x0, x0 x1, x0 x1 x2): d/dx1 of the sum is x0 + x0 x2 = 8
    assert np.allclose(back(np.ones(3))[0], [1.0, 8.0, 0.0])


# -- var and std --------------------------------------------------------------------------
def var(x, axis, ddof, keepdims):
    return np.var(x, axis=axis, ddof=ddof, keepdims=keepdims)


def std(x, axis, ddof, keepdims):
    return np.std(x, axis=axis, ddof=ddof, keepdims=keepdims)


def var_method(x, axis, ddof, keepdims):
    return x.var(axis=axis, ddof=ddof, keepdims=keepdims)


def std_method(x, axis, ddof, keepdims):
    return x.std(axis, None, None, ddof, keepdims)


def var_correction(x):
    return np.var(x, 0, correction=1) + np.std(x, correction=1)


STATS = [((3, 4), None), ((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 3, 4), (0, 2)),
         ((1, 4), 1), ((5,), None), ((0, 3), 1), ("strided", 0)]


@pytest.mark.parametrize("shape, axis", STATS, ids=str)
@pytest.mark.parametrize("ddof, keepdims", [(0, False), (1, True)])
@pytest.mark.parametrize("f", [var, std, var_method, std_method], ids=lambda f: f.__name__)
def test_var_std(f, shape, axis, ddof, keepdims):
    x = _strided(-2, 2) if shape == "strided" else _in(-2, 2, shape)
    check_gradient(f, x, axis, ddof, keepdims)


def test_var_std_numbers():
    for f in (var, std):
        grads = check_gradient(f, 3.5, None, 0, False)
        assert grads[0] == 0.0 and isinstance(grads[0], float)
    check_gradient(var_correction, _in(-2, 2, (4, 3)))


def test_std_constant_is_finite():
    _, back = adjoint.pullback(std, np.ones((2, 3)), 0, 0, False, backend="interp")
    assert np.array_equal(back(np.ones(3))[0], np.zeros((2, 3)))


# -- piecewise constant: no cotangent through them ---------------------------------------
def stepped(x):
    return (x * np.floor(x) + x * np.ceil(x) + x * np.round(x) + x * np.rint(x)
            + x * np.trunc(x) + x * np.sign(x) + x * np.around(x) + x * np.fix(x)
            + x * np.floor_divide(x, 0.7))


@pytest.mark.parametrize("shape", [None, (6,), (2, 3)], ids=str)
def test_piecewise_constant(shape):
    x = _in(-3, 3, shape)
    check_gradient(stepped, x)


# -- against autograd ---------------------------------------------------------------------
def test_against_autograd():
    ag = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    x, y = _in(-2, 2, (3, 4)), _in(0.5, 1.5, (1, 4))
    cases = [
        (lambda a, b: np.sum(np.logaddexp(a, b) * np.arcsinh(a)),
         lambda a, b: anp.sum(anp.logaddexp(a, b) * anp.arcsinh(a))),
        (lambda a, b: np.sum(np.remainder(a, b) ** 2 + np.exp2(b)),
         lambda a, b: anp.sum(anp.remainder(a, b) ** 2 + anp.exp2(b))),
        (lambda a, b: np.sum(np.std(a, axis=0, ddof=1) * b) + np.var(a),
         lambda a, b: anp.sum(anp.std(a, axis=0, ddof=1) * b) + anp.var(a)),
        (lambda a, b: np.sum(np.fmax(a, b) - np.fmin(a, b) ** 2),
         lambda a, b: anp.sum(anp.fmax(a, b) - anp.fmin(a, b) ** 2)),
        (lambda a, b: np.sum(np.clip(a, -0.5, 0.7) * np.rad2deg(b)),
         lambda a, b: anp.sum(anp.clip(a, -0.5, 0.7) * anp.rad2deg(b))),
    ]
    for ours, theirs in cases:
        got = adjoint.gradient(ours, x, y, backend="interp")
        for k in (0, 1):
            want = ag.grad(theirs, k)(x, y)
            assert np.allclose(got[k], want, rtol=1e-10, atol=1e-12)


# -- list operands: the cotangent of a list display reaches each number ------------------
def from_lists(a, b, c):
    return (np.logaddexp([a, b], 0.5) + np.var([a, b, c]) + np.std([[a, b], [c, a]], axis=0)
            + np.fmax([a, c], b) + np.remainder([c, b], 0.8))


def from_list_arg(xs):
    return np.sum(np.arcsinh(xs) * np.clip(xs, 0.1, 0.5) + np.cumprod(xs))


def test_list_operands():
    check_gradient(from_lists, 0.3, 0.7, 1.9)
    grads = check_gradient(from_list_arg, [0.3, 0.05, 0.9])
    assert isinstance(grads[0], list) and len(grads[0]) == 3


def parts_of_real(x):
    return np.sum(np.real(x) * 2.0 + np.conjugate(x) + np.imag(x) + np.angle(x)
                  + np.real_if_close(x) ** 2)


@pytest.mark.parametrize("x", [0.7, np.array([1.5, -0.5, 2.0])], ids=["float", "array"])
def test_complex_parts_of_real_values(x):
    check_gradient(parts_of_real, x)
