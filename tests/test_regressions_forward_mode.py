"""Regressions of forward mode (`jvp`, `hvp`) and of the rules it shares with reverse
mode: a failed tangent build never leaves a cache entry that later calls run; the
tangent of a power with a zero exponent; zero tangents of int values made at run time;
reductions over an axis compiled; methods of numpy scalars.  Each case runs on both
backends where both apply and is checked against closed forms, CPython or central
differences."""
import math
import warnings

import numpy as np
import pytest

import adjoint

from adjoint import forward, gradient, hvp, jvp
from jit.types import TypingError
from lowering.api import stub_function

BACKENDS = ("interp", "llvm")


def _outcomes(call, times=3):
    """What `call()` gives on each of `times` calls: a value or the error's text."""
    out = []
    for _ in range(times):
        try:
            out.append(("value", call()))
        except Exception as e:  # noqa: BLE001 - the outcome is what is compared
            out.append(("error", f"{type(e).__name__}: {e}"))
    return out


def _central(f, xs, ts, eps=1e-6):
    up = f(*[x + eps * t for x, t in zip(xs, ts)])
    down = f(*[x - eps * t for x, t in zip(xs, ts)])
    return (up - down) / (2 * eps)


# -- a failed tangent build leaves nothing cached (finding 05) -------------------------
def _square_by_sorting(x):
    return np.median(np.array([x, 2.0 * x])) * x    # np.median has no derivative rule


def _calls_square(x):
    return _square_by_sorting(x) + x


def _even(x, n):
    """Calls `_odd` (whose tangent is built inside this one's), then fails."""
    if n <= 0:
        return x
    y = _odd(x, n - 1)
    return np.median(np.array([y, x]))


def _odd(x, n):
    return _even(x, n) * 2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_failed_tangent_build_gives_the_same_error_every_call(backend):
    for call in (lambda: hvp(_square_by_sorting, 1.5, 1.0, backend=backend),
                 lambda: jvp(_calls_square, (1.5,), (1.0,), backend=backend),
                 lambda: jvp(_odd, (1.5, 2), (1.0, None), backend=backend)):
        got = _outcomes(call)
        assert got[0][0] == "error" and "median" in got[0][1], got
        assert len(set(got)) == 1, got


def _power(x, n):
    return x if n <= 1 else x * _power(x, n - 1)


def _ping(x, n):
    """As `_even`, for this test alone (no other test builds its tangent)."""
    y = _pong(x, n - 1) if n > 0 else x
    return np.median(np.array([y, x]))


def _pong(x, n):
    return _ping(x, n) * 2.0


def test_a_failed_build_adds_nothing_to_the_caches():
    # `_pong`'s tangent is built (and complete) inside `_ping`'s, which then fails:
    # it calls `_ping`'s stub, so it must go too
    before = (dict(forward._FUNCTIONS), dict(forward._IRS))
    with pytest.raises(TypeError, match="median"):
        jvp(_pong, (1.5, 2), (1.0, None), backend="interp")
    assert (forward._FUNCTIONS, forward._IRS) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_recursive_tangent_functions_still_work(backend):
    # after a failed build of other functions, a recursive one builds and runs
    _outcomes(lambda: jvp(_odd, (1.5, 2), (1.0, None), backend=backend), times=1)
    y, dy = jvp(_power, (1.5, 4), (1.0, None), backend=backend)
    assert y == pytest.approx(1.5 ** 4) and dy == pytest.approx(4 * 1.5 ** 3)
    assert hvp(lambda x: _power(x, 3), 2.0, 1.0, backend=backend) == pytest.approx(12.0)


def test_a_stub_run_without_its_ir_raises():
    stub = stub_function("orphan", 1, {}, "<test>")
    with pytest.raises(RuntimeError, match="before its IR was built"):
        stub(1.0)


# -- x ** b where b is 0: no 0 ** -1 (finding 06) --------------------------------------
def _double(p):
    return p * 2.0


def _zero_to_the_zero(x):
    v = _double(x) - _double(x)         # 0.0, a number only at run time
    return v ** 0 + x


def _sum_of_powers(x, y):
    return np.sum(x ** y)


def _power_of_values(x, y):
    return (x * 1.0) ** (y * 1.0)       # kinds known only at run time


@pytest.mark.parametrize("backend", BACKENDS)
def test_pow_tangent_at_a_zero_exponent(backend):
    assert jvp(_zero_to_the_zero, (1.0,), (1.0,), backend=backend) == (2.0, 1.0)
    y, dy = jvp(lambda x: np.sum(x ** 0), (np.zeros(2),), (np.ones(2),), backend=backend)
    assert (float(y), float(dy)) == (2.0, 0.0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("x,y", [(0.0, 0.0), (0.0, 2.0), (0.0, 1.0), (2.0, 3.0), (-2.0, 2.0)])
def test_pow_tangents_match_the_gradient(backend, x, y):
    gx, gy = gradient(_power_of_values, x, y, backend=backend)
    assert jvp(_power_of_values, (x, y), (1.0, 0.0), backend=backend)[1] == pytest.approx(gx)
    assert jvp(_power_of_values, (x, y), (0.0, 1.0), backend=backend)[1] == pytest.approx(gy)
    assert gx == pytest.approx(0.0 if y == 0 else y * x ** (y - 1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_pow_tangent_of_arrays_with_zeros(backend):
    x, y = np.array([0.0, 1.0, 2.0, -1.0]), np.array([0.0, 2.0, 0.5, 2.0])
    gx, gy = gradient(_sum_of_powers, x, y, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)     # no 0 ** -1, no log(0)
        dx = jvp(_sum_of_powers, (x, y), (np.ones(4), np.zeros(4)), backend=backend)[1]
        dy = jvp(_sum_of_powers, (x, y), (np.zeros(4), np.ones(4)), backend=backend)[1]
    assert dx == pytest.approx(np.sum(gx)) and dy == pytest.approx(np.sum(gy))
    assert dx == pytest.approx(2.0 + 0.5 * 2 ** -0.5 - 2.0)


# -- zero tangents of ints made at run time (finding 18) -------------------------------
def _where_constant(x):
    return np.where(x > 5.0, x, np.square(2)) + x


def _where_in_loop(x):
    z = np.zeros(3)
    for i in range(3):
        z[i] = np.where(x > 5.0, x, np.square(i)) * (i + 1)
    return np.sum(z) + x


def _where_int_array(x):
    return np.sum(np.where(x > 0.5, x, np.arange(3) * 2))


@pytest.mark.parametrize("backend", BACKENDS)
def test_where_with_an_int_branch_made_at_run_time(backend):
    for f, x in ((_where_constant, 1.0), (_where_constant, 7.0), (_where_in_loop, 1.0),
                 (_where_in_loop, 7.0)):
        y, dy = jvp(f, (x,), (1.0,), backend=backend)
        assert float(y) == f(x)
        assert dy == pytest.approx(_central(f, [x], [1.0]))
    x = np.array([0.1, 1.0, 2.0])
    y, dy = jvp(_where_int_array, (x,), (np.ones(3),), backend=backend)
    assert (float(y), float(dy)) == (3.0, 2.0)


# -- reductions over an axis, arrays of 3 dimensions (finding 19) ----------------------
_RNG = np.random.default_rng(19)
_A2, _T2 = _RNG.standard_normal((3, 4)), _RNG.standard_normal((3, 4))
_A3, _T3 = _RNG.standard_normal((2, 3, 4)), _RNG.standard_normal((2, 3, 4))
_AXIS_CASES = [
    ("max axis 0", lambda a: np.sum(np.max(a, axis=0) ** 2), _A2, _T2),
    ("min axis 1", lambda a: np.sum(np.min(a, axis=1) ** 2), _A2, _T2),
    ("max keepdims", lambda a: np.sum(np.max(a, axis=1, keepdims=True) * a), _A2, _T2),
    ("var axis 0", lambda a: np.sum(np.var(a, axis=0)), _A2, _T2),
    ("std axis 1", lambda a: np.sum(np.std(a, axis=1)), _A2, _T2),
    ("max of 3-D", lambda a: np.sum(np.max(a, axis=0) ** 2), _A3, _T3),
    ("min over two axes", lambda a: np.sum(np.min(a, axis=(0, 2))), _A3, _T3),
    ("3-D arithmetic", lambda a: np.sum(a * a + 2.0 * a), _A3, _T3),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,f,a,t", _AXIS_CASES, ids=[c[0] for c in _AXIS_CASES])
def test_axis_reductions_compile_in_forward_mode(backend, name, f, a, t):
    y, dy = jvp(f, (a,), (t,), backend=backend)
    assert y == pytest.approx(f(a))
    assert dy == pytest.approx(_central(f, [a], [t]), rel=1e-6, abs=1e-6)


def _cumulative(a):
    return np.sum(np.cumprod(a, axis=0))


def test_errors_inside_a_rule_name_only_the_users_line():
    a = np.eye(3) + 0.1
    try:
        _, dy = jvp(_cumulative, (a,), (np.ones((3, 3)),), backend="llvm")
    except TypingError as e:
        text = str(e)
        for internal in ("rules_tangent", "adjoint/", "adjoint.", "j_rows", "j_"):
            assert internal not in text, text
        assert "_cumulative" in text and __file__ in text, text
    else:
        assert dy == pytest.approx(_central(_cumulative, [a], [np.ones((3, 3))]))


# -- methods of numpy scalars (finding 17) ---------------------------------------------
def _tanh_sum(s):
    return np.tanh(s).sum()


def _relu_sum(s):
    return np.maximum(s, 0.0).sum()


def _relu_mean(s):
    return np.maximum(s, 0.0).mean() * s


def test_numpy_scalar_methods_in_reverse_mode():
    assert gradient(_tanh_sum, 0.5, backend="interp")[0] == pytest.approx(
        1 - math.tanh(0.5) ** 2)
    assert gradient(_relu_sum, 0.5, backend="interp") == (1.0,)
    assert gradient(_relu_mean, 0.5, backend="interp")[0] == pytest.approx(1.0)


def test_numpy_scalar_methods_in_forward_mode():
    assert jvp(_relu_sum, (0.5,), (1.0,), backend="interp") == (0.5, 1.0)
    assert jvp(_tanh_sum, (0.5,), (1.0,), backend="interp")[1] == pytest.approx(
        1 - math.tanh(0.5) ** 2)
    assert jvp(_relu_mean, (0.5,), (1.0,), backend="interp")[1] == pytest.approx(1.0)
    # compiled code does not type a float's .sum(): a clear refusal naming it, and
    # "auto" runs the interpreter
    with pytest.raises(TypingError, match="attribute 'sum' of float64"):
        jvp(_relu_sum, (0.5,), (1.0,), backend="llvm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert jvp(_relu_sum, (0.5,), (1.0,), backend="auto") == (0.5, 1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_array_methods_keep_their_tangents(backend):
    a, t = _A2, _T2

    def f(a):
        return np.sum(a, axis=0).mean() + a.ravel().sum() * a.trace()
    y, dy = jvp(f, (a,), (t,), backend=backend)
    assert y == pytest.approx(f(a)) and dy == pytest.approx(_central(f, [a], [t]))


def _transposed_scalar(s):           # fuzz seeds 91000273535/6 (fuzz_zygopy_np)
    return float(np.maximum(-0.5, s).T) * 2 + float(np.maximum(s, -0.99).T * 1.0)


@pytest.mark.parametrize("s", [0.3, -2.0])
def test_transpose_of_a_numpy_scalar_has_a_tangent(s):
    """`np.maximum(-0.5, s).T` of a float s: the rule's tangent is a Python float, which
    has no `.T`; forward mode raised AttributeError where reverse mode ran."""
    y, t = adjoint.jvp(_transposed_scalar, (s,), (1.0,), backend="interp")
    assert y == _transposed_scalar(s)
    h = 1e-6
    fd = (_transposed_scalar(s + h) - _transposed_scalar(s - h)) / (2 * h)
    assert float(t) == pytest.approx(fd, abs=1e-6)
    assert float(t) == pytest.approx(adjoint.gradient(_transposed_scalar, s, backend="interp")[0])


def test_transpose_tangent_of_arrays_still_compiles():
    x, t = np.arange(6.0).reshape(3, 2), np.linspace(-1, 1, 6).reshape(3, 2)
    f = lambda x: np.sum(x.T @ x)  # noqa: E731
    y, dy = adjoint.jvp(f, (x,), (t,), backend="llvm")
    assert y == pytest.approx(f(x))
    assert dy == pytest.approx(np.sum(t.T @ x + x.T @ t))


def _written_into_zeros_like(h):
    agg = np.zeros_like(h)            # no derivative, then a differentiated value written
    agg[1:] = np.tanh(h[1:])
    return np.sum(agg ** 2)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_a_write_into_zeros_like_of_a_differentiated_value_has_its_tangent(backend):
    """`np.zeros_like(h)` got no tangent (its rule has none), so the tangent of what
    was written into it was dropped: jvp gave 0.0, silently."""
    h = np.array([0.3, -0.5, 1.2, 0.1])
    t = np.array([1.0, 2.0, -1.0, 0.5])
    want = float(np.sum(t * adjoint.gradient(_written_into_zeros_like, h,
                                                backend="interp")[0]))
    assert float(adjoint.jvp(_written_into_zeros_like, (h,), (t,), backend=backend)[1]) == \
        pytest.approx(want, rel=1e-12)
