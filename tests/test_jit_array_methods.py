"""Array methods, `.T`, np.outer, matmul / np.dot, np.arange, np.float64, math.fsum and
basic slices compiled by jit.library.linalg, jit.library.builders and jit.library.slicing.

Each feature: the JIT's value equals CPython's (same shape and dtype, bit for bit;
matrix products are compared to 1e-13 relative on random inputs, since numpy calls
BLAS, which associates the sums differently, and bit for bit on inputs whose sums are
exact), errors have CPython's type and message, inputs are left alone (or written the
same way), and gradients through `adjoint.pullback(..., backend="llvm")` equal the
interpreter's (tests/jit_grad_check.check_llvm).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from jit_grad_check import check_llvm

import jit

RNG = np.random.default_rng(20261122)
V = np.array([1.0, -2.0, 3.5, 0.25, 8.0])
W = np.array([0.5, 4.0, -1.5, 2.0, -0.75])
M = np.arange(12.0).reshape(4, 3) * 0.5 - 2.0


def _copies(args: tuple) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _outcome(f, args: list):
    try:
        return "ok", f(*args)
    except Exception as e:  # noqa: BLE001 (the error is the outcome)
        return type(e), str(e)


def _equal(want, got) -> bool:
    if isinstance(want, tuple):
        return isinstance(got, tuple) and len(want) == len(got) and all(
            _equal(w, g) for w, g in zip(want, got))
    if isinstance(want, np.ndarray):
        return (isinstance(got, np.ndarray) and want.shape == got.shape
                and want.dtype == got.dtype and bool(np.array_equal(want, got, equal_nan=True))
                and bool(np.all((np.signbit(want) == np.signbit(got)) | np.isnan(want))))
    if isinstance(want, (bool, np.bool_)):
        return type(got) is bool and bool(want) == got
    if isinstance(want, (float, np.floating)):
        return type(got) is float and (want == got or math.isnan(want) and math.isnan(got)) \
            and math.copysign(1, want) == math.copysign(1, got)
    return type(got) is int and int(want) == got


def check_same(f, *args, close: float = 0.0) -> None:
    """The JIT's outcome equals CPython's: value (within `close` relative when given),
    or error type and message (the JIT appends the source location); the arguments
    end up equal too (unchanged, or written the same way)."""
    ins_py, ins_jit = _copies(args), _copies(args)
    want = _outcome(f, ins_py)
    got = _outcome(jit.jit(f), ins_jit)
    assert want[0] == got[0], (want, got)
    if want[0] != "ok":
        assert got[1].startswith(want[1]), (want[1], got[1])
    elif close:
        np.testing.assert_allclose(got[1], want[1], rtol=close, atol=0)
    else:
        assert _equal(want[1], got[1]), (want[1], got[1])
    for a, b in zip(ins_py, ins_jit):
        assert _equal(a, b) if isinstance(a, np.ndarray) else a == b


def check_grad(f, *args) -> None:
    assert check_llvm(f, *args) == "ok"


# -- methods and .T ------------------------------------------------------------------------------
def m_copy(a):
    b = a.copy()
    b[0] = -1.0
    return a[0], b[0], b


def m_copy2(m):
    b = m.copy()
    b[0, 1] = -1.0
    return m[0, 1], b


def m_copy_int(a):
    b = a.copy()
    b[0] = 7
    return a, b, np.copy(a[::-1])


def m_copy_int2(m):
    c = np.copy(m.T)
    c[0, 1] = 7
    return m, c, m.copy()


def m_sum(a):
    return a.sum()


def m_mean_max_min(a):
    return a.mean(), a.max(), a.min()


def m_dot(a, b):
    return a.dot(b)


def m_argminmax(a):
    return a.argmin(), a.argmax()


def m_transpose(m):
    return m.T, m.T.shape[0], m.T[1, 0]


def m_chain(m):
    return (m.T * 2.0).sum() + m.copy().mean() - m.max() * m.min()


def m_transpose_write(m):
    t = m.T
    t[0, 1] = 100.0
    return m


@pytest.mark.parametrize("f,args", [
    (m_copy, (V,)), (m_sum, (V,)), (m_sum, (M,)), (m_sum, (RNG.standard_normal(300),)),
    (m_sum, (RNG.standard_normal((17, 9)),)), (m_sum, (RNG.standard_normal((20, 9))[:, ::2],)),
    (m_mean_max_min, (V,)), (m_mean_max_min, (M,)), (m_dot, (V, W)), (m_argminmax, (V,)),
    (m_argminmax, (M,)), (m_argminmax, (np.array([2.0, np.nan, -1.0]),)),
    (m_transpose, (M,)), (m_chain, (M,)), (m_transpose_write, (M,)), (m_copy2, (M,)),
    (m_copy_int, (np.arange(4),)), (m_copy_int2, (np.arange(6).reshape(2, 3),)),
])
def test_method_values(f, args):
    check_same(f, *args)


def m_max(a):
    return a.max()


def m_min(a):
    return a.min()


@pytest.mark.parametrize("f,args", [
    (m_max, (np.zeros(0),)), (m_min, (np.zeros((2, 0)),)), (m_argminmax, (np.zeros(0),)),
    (m_dot, (V, W[:3].copy())), (m_sum, (np.zeros(0),)),
])
def test_method_errors_and_empty(f, args):
    check_same(f, *args)


@pytest.mark.parametrize("f,args", [
    (m_copy, (V,)), (m_copy2, (M,)), (m_sum, (V,)), (m_sum, (M,)), (m_mean_max_min, (V,)),
    (m_mean_max_min, (M,)), (m_dot, (V, W)), (m_transpose, (M,)), (m_chain, (M,)),
])
def test_method_gradients(f, args):
    check_grad(f, *args)


def test_reduction_method_with_axis_compiles():
    def f(m):
        return m.sum(axis=0)
    jit.code_typed(f, M)            # (was refused: the methods took no axis)
    assert np.array_equal(jit.jit(f)(M), M.sum(axis=0))


# -- np.outer, matmul, np.dot --------------------------------------------------------------------
def outer(u, v):
    return np.outer(u, v)


def matmul(x, y):
    return x @ y


def np_matmul(x, y):
    return np.matmul(x, y)


def dot(x, y):
    return np.dot(x, y)


def quadratic(m, v):
    return (m.T @ (m @ v)).sum() + np.outer(v, v)[0, 1] + v @ v


SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4)), ((1, 5), (5, 1)),
          ((0, 3), (3, 2)), ((2, 0), (0, 3))]
BAD_SHAPES = [((2, 3), (2, 2)), ((2, 3), (2,)), ((3,), (2, 2)), ((3,), (2,))]


def _pair(sa, sb, exact: bool) -> tuple:
    if exact:  # small dyadic numbers: every sum of products is exact
        return RNG.integers(-8, 9, sa) * 0.25, RNG.integers(-8, 9, sb) * 0.5
    return RNG.standard_normal(sa), RNG.standard_normal(sb)


@pytest.mark.parametrize("sa,sb", SHAPES)
@pytest.mark.parametrize("f", [matmul, np_matmul])
def test_matmul_values(f, sa, sb):
    check_same(f, *_pair(sa, sb, exact=True))
    check_same(f, *_pair(sa, sb, exact=False), close=1e-13)


@pytest.mark.parametrize("sa,sb", BAD_SHAPES)
@pytest.mark.parametrize("f", [matmul, dot])
def test_product_shape_errors(f, sa, sb):
    if f is dot and len(sa) == 2 == len(sb):
        return  # np.dot of two matrices is not compiled (test_dot_of_matrices_stays_refused)
    check_same(f, np.ones(sa), np.ones(sb))


@pytest.mark.parametrize("sa,sb", [s for s in SHAPES if len(s[0]) + len(s[1]) < 4])
def test_dot_values(sa, sb):
    check_same(dot, *_pair(sa, sb, exact=True))
    check_same(dot, *_pair(sa, sb, exact=False), close=1e-13)


def test_dot_of_matrices():
    check_same(dot, M, M.T.copy(), close=1e-13)
    with pytest.raises(ValueError, match="not aligned"):
        jit.jit(dot)(M, M)


def test_outer_values():
    check_same(outer, V, W[:3].copy())
    check_same(outer, RNG.standard_normal(7), RNG.standard_normal(4))
    check_same(outer, np.zeros(0), V)


@pytest.mark.parametrize("f,args", [
    (outer, (V, W[:3].copy())), (quadratic, (M, np.array([1.0, -0.5, 2.0]))),
] + [(matmul, _pair(sa, sb, exact=True)) for sa, sb in SHAPES[:5]]
  + [(dot, _pair(sa, sb, exact=True)) for sa, sb in SHAPES[:3]])
def test_product_gradients(f, args):
    check_grad(f, *args)


# -- np.arange, np.float64, math.fsum ------------------------------------------------------------
def arange1(n):
    return np.arange(n)


def arange2(a, b):
    return np.arange(a, b)


def arange3(a, b, c):
    return np.arange(a, b, c)


def arange_used(x, n):
    s = 0.0
    for k in np.arange(n):
        s += x * k
    return s


@pytest.mark.parametrize("f,args", [
    (arange1, (5,)), (arange1, (0,)), (arange1, (-3,)), (arange1, (True,)), (arange2, (2, 7)),
    (arange2, (7, 2)), (arange2, (-4, -1)), (arange3, (9, 2, -3)), (arange3, (2, 9, 3)),
    (arange3, (0, 10, 4)), (arange3, (0, -10, -4)), (arange3, (1, 2, 0)), (arange3, (5, 5, 1)),
])
def test_arange(f, args):
    check_same(f, *args)


def test_arange_gradient_and_of_floats():
    check_grad(arange_used, 1.5, 4)
    np.testing.assert_array_equal(jit.jit(arange1)(2.5), np.arange(2.5))   # numpy's own


def float64(x):
    return np.float64(x) * 2, np.float64()


@pytest.mark.parametrize("x", [3, 2.5, True, -0.0, 2 ** 60 + 1, float("nan")])
def test_float64(x):
    want, got = float64(x), jit.jit(float64)(x)
    assert _equal(tuple(float(w) for w in want), got)
    check_grad(float64, 2.5)


def fsum(xs):
    return math.fsum(xs)


def fsum3(x, y, z):
    return math.fsum((x, y, z)) * 2.0


FSUM_CASES = [
    [1e-16, 1.0, 1e16], [1.0, 1e100, 1.0, -1e100], [0.1] * 10, [], [-0.0], [-0.0, -0.0],
    [1e308, 1e308], [1e308, -1e308, 1e308], [math.inf, -math.inf], [math.inf, 1.0],
    [math.nan, 1.0], [-math.inf, 2.0, -math.inf], [2.0 ** 53, 1.0, 2.0 ** -60],
    [2.0 ** 53, -1.0, -(2.0 ** -60)], [1.0, 2.0 ** -53, 2.0 ** -106], [5e-324, 5e-324, -1e-323],
]


@pytest.mark.parametrize("xs", FSUM_CASES)
def test_fsum_exact(xs):
    check_same(fsum, np.array(xs, dtype=float))


def test_fsum_random_bit_exact():
    for _ in range(200):
        n = int(RNG.integers(1, 60))
        xs = RNG.standard_normal(n) * 10.0 ** RNG.integers(-30, 30, n)
        if RNG.random() < 0.5:
            xs = np.concatenate([xs, -xs[::-1] * (1 + 2.0 ** -52)])
        RNG.shuffle(xs)
        got = jit.jit(fsum)(xs)
        assert got == math.fsum(xs) and math.copysign(1, got) == math.copysign(1, math.fsum(xs))


def test_fsum_ints_and_tuples():
    check_same(fsum, np.array([2 ** 60, 1, -(2 ** 60), 3]))
    check_same(fsum3, 1.0, 1e-16, 1e16)
    check_same(fsum3, 1, True, 0.5)
    check_grad(fsum, V)
    check_grad(fsum3, 1.0, 2.0, 3.5)


def fsum_of_built_list(xs, w):
    terms = [w * x for x in xs]
    return math.fsum(terms) + math.fsum([k for k in range(len(xs))])


@pytest.mark.parametrize("xs", [[1e-16, 1.0, 1e16], [0.1] * 10, [], [1.0, 1e100, 1.0, -1e100]])
def test_fsum_of_a_built_list(xs):
    check_same(fsum_of_built_list, np.array(xs, dtype=float), 0.5)
    check_grad(fsum_of_built_list, np.array(xs, dtype=float) + 0.25, 0.5)


# -- slices --------------------------------------------------------------------------------------
def slices(a):
    return a[1:], a[:-1] * 2.0, a[::2], a[1:4:2], a[::-1], a[-2:], a[10:], a[3:1], a[4:0:-2]


def int_slices(a):
    return a[1:], a[::-2], a[2:3]


def slice_vars(a, i, j, k):
    return a[i:j:k]


def slice_write_through(a):
    b = a[1:4]
    b[0] = 100.0
    c = b[::-1]
    c[0] = -7.0
    return a


def slice_assign(a, b):
    a[1:3] = 0.0
    a[3:] = b
    return a * 1.0


def slice_overlap(a):
    a[1:] = a[:-1]
    return a


def slice_rows(m):
    return m[1:3], m[::-2], m[1:].sum()


def mixed_views(m, j):
    return m[:, j], m[1, 1:], m[1:, :2], m[-1, ::-1], m[::2, 1]


def mixed_assign(m, v):
    m[:, 0] = 5.0
    m[1, 1:] = v
    m[2:, 1:] = 0.5
    c = m[:, 1]
    c[0] = 99.0
    return m


def mixed_products(m):
    return (m[:, 1] * m[:, 2]).sum() + m[1:, :2].sum() * m[0, 1:].sum()


def slices_in_loop(a):
    s = 0.0
    for i in range(3):
        s += a[i:].sum() * a[i:i + 2].max()
    return s


def products_in_loop(m, v):
    for _ in range(3):
        v = (m.T @ (m @ v)) * 0.1 + v[::-1]
    return v.sum() + math.fsum(v)


def slice_products(a):
    return (a[1:] * a[:-1]).sum() + a[::2].sum() * a[-1]


@pytest.mark.parametrize("f,args", [
    (slices, (V,)), (int_slices, (np.arange(7),)), (slice_write_through, (V,)),
    (slice_assign, (V, np.array([9.0, 8.0]))), (slice_assign, (V, np.array([9.0]))),
    (slice_overlap, (V,)), (slice_rows, (M,)), (slice_products, (V,)),
    (slice_vars, (V, 1, None, 2)), (slice_vars, (V, -1, -6, -1)), (slice_vars, (V, 0, 5, 0)),
    (slice_vars, (V, None, None, -2)), (slice_vars, (V, -100, 100, 3)),
    (mixed_views, (M, 1)), (mixed_views, (M, -3)), (mixed_views, (M, 3)),
    (mixed_assign, (M, np.array([7.0, 8.0]))), (mixed_assign, (M, np.array([7.0, 8.0, 9.0]))),
    (mixed_products, (M,)),
])
def test_slice_values(f, args):
    check_same(f, *args)


@pytest.mark.parametrize("f,args", [
    (slices, (V,)), (slice_write_through, (V,)), (slice_assign, (V, np.array([9.0, 8.0]))),
    (slice_rows, (M,)), (slice_products, (V,)), (slice_vars, (V, 4, 0, -2)),
    (mixed_views, (M, 1)), (mixed_assign, (M, np.array([7.0, 8.0]))), (mixed_products, (M,)),
    (slices_in_loop, (V,)), (products_in_loop, (M, np.array([1.0, -0.5, 2.0]))),
])
def test_slice_gradients(f, args):
    check_grad(f, *args)


def test_typed_listing_names_the_slice():
    text = str(jit.code_typed(slice_vars, V, 1, None, 2))
    assert "slice(int64, none, int64)" in text


# -- tuple slices (constant slices only) ---------------------------------------------------------
def tuple_slices(t):
    return t[1:], t[:2], t[::-1], t[5:], t[-2:-1]


def tuple_slice_math(t, x):
    a = t[1:3]
    b = (x, x * 2.0, 3)[::-2]
    return a[0] * a[1] + b[0] * x + b[1]


def tuple_rotate(t, x):
    for _ in range(2):
        t = t[1:] + (t[0] * x,)
    return t[0] + t[-1]


def tuple_slice_at_run_time(t, i):
    return t[i:]


@pytest.mark.parametrize("f,args", [
    (tuple_slices, ((1, 2, 3, 4),)), (tuple_slices, ((1.5, 2, True),)),
    (tuple_slice_math, ((1.0, -2.0, 3.5, 4.0), 0.5)), (tuple_rotate, ((1.0, 2.0, 3.0), 0.5)),
])
def test_tuple_slices(f, args):
    check_same(f, *args)
    check_grad(f, *args)


def test_tuple_slice_at_run_time_stays_refused():
    with pytest.raises(jit.TypingError):
        jit.code_typed(tuple_slice_at_run_time, (1, 2), 1)


# -- np.sum / np.mean over an axis ---------------------------------------------------------------
def axis_sums(m):
    return np.sum(m, axis=0), np.sum(m, axis=1), np.sum(m, -1), np.mean(m, axis=0), \
        np.mean(m, axis=-2), np.mean(m, 1)


def axis_none(m):
    return np.sum(m, axis=None), np.mean(m, axis=None)


def axis_line(a):
    return np.sum(a, axis=0), np.mean(a, -1)


def axis_out_of_range(m):
    return np.sum(m, axis=2)


def axis_keepdims(m):
    return np.sum(m, axis=0, keepdims=True)


def _layouts():
    out = []
    for k in range(12):
        n, m = (int(x) for x in RNG.integers(1, 160, 2))
        a = RNG.standard_normal((n, m)) * 10.0 ** RNG.integers(-6, 6, (n, m))
        out.append((a, np.asfortranarray(a), a[::2, ::3], a.T, a[::-1, 1:])[k % 5])
    return out + [np.zeros((3, 0)), np.zeros((0, 4)), np.full((2, 3), -0.0)]


@pytest.mark.parametrize("m", _layouts())
def test_axis_sums_bit_exact_in_every_layout(m):
    check_same(axis_sums, m)


def test_axis_sums_more():
    check_same(axis_none, M)
    check_same(axis_line, V)
    check_grad(axis_sums, M)
    check_grad(axis_line, V)
    check_same(axis_keepdims, M)
    check_grad(axis_keepdims, M)
    with pytest.raises(jit.TypingError):
        jit.code_typed(axis_out_of_range, M)


# -- assignments from an overlapping view, numpy's identity for sums ---------------------
def _assign_transpose(m):
    m[...] = m.T
    return m[1, 0] + 10.0 * m[2, 1]


def _assign_reversed(a):
    a[...] = a[::-1]
    return a[4] + 10.0 * a[3]


@pytest.mark.parametrize("f,x", [(_assign_transpose, np.arange(9.0).reshape(3, 3)),
                                 (_assign_reversed, np.arange(5.0))],
                         ids=["transpose", "reversed"])
def test_assigning_a_view_of_the_target_reads_it_first(f, x):
    want, got = f(x.copy()), jit.jit(f)(x.copy())
    assert got == want
    assert check_llvm(f, x.copy()) == "ok"


def test_sums_start_from_zero_and_empty_means_are_nan():
    import warnings
    total, mean = jit.jit(lambda a: np.sum(a)), jit.jit(lambda a: a.mean())
    for a in (np.array([-0.0]), -np.zeros(20), -np.zeros((3, 3))):
        assert math.copysign(1.0, total(a)) == math.copysign(1.0, np.sum(a)) == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert math.isnan(np.mean(np.zeros(0))) and math.isnan(mean(np.zeros(0)))
        assert math.isnan(mean(np.zeros((0, 2))))


# -- a.flatten() (a copy) and np.argsort (numpy's own order) ------------------------------------
def flatten_is_a_copy(a):
    v = a.flatten()
    v[0] = 100.0
    return np.sum(v * np.arange(v.shape[0])) + a.T.flatten()[1], a.flatten(), a[0].flatten()


def argsorts(a):
    return a.argsort(axis=0), np.argsort(a, axis=None), np.argsort(a[0], kind="stable")


def picks_by_argsort(a):
    return np.sum(a[np.argsort(a[:, 0])][0] * np.array([1.0, 2.0, 3.0]))


def test_flatten_and_argsort_compile():
    a = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -0.75], [0.5, 1.5, 0.0]])
    check_same(flatten_is_a_copy, a)
    check_same(argsorts, a)
    check_grad(lambda m: np.sum(m.flatten() * np.arange(9.0)) + np.sum(m[1].flatten() ** 2), a)
    check_grad(picks_by_argsort, a)
