"""Vectorised paths of the JIT: native loops for 3-D arrays (elementwise arithmetic
with numpy's broadcasting, ufuncs, the derivative of broadcasting, `x ** y`), and the
fast codec of host calls.  Values are compared with numpy, gradients with central
differences, under backend="interp" and backend="llvm"."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from adjoint import gradient
from jit import jit
from jit.pullback.backend import JitFallbackWarning
from jit.runtime import host_calls

RS = np.random.RandomState(7)
BACKENDS = ("interp", "llvm")


def central(f, args, k, h=1e-6):
    """Central differences of scalar f with respect to argument k (a float array)."""
    x = np.array(args[k], dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        lo = list(args)
        hi = list(args)
        hi[k], lo[k] = up, down
        g[i] = (f(*hi) - f(*lo)) / (2 * h)
    return g


def check_gradient(f, args, tol=1e-6):
    for backend in BACKENDS:
        with warnings.catch_warnings():
            warnings.simplefilter("error", JitFallbackWarning)
            got = gradient(f, *args, backend=backend)
        for k, a in enumerate(args):
            if isinstance(a, np.ndarray):
                np.testing.assert_allclose(got[k], central(f, args, k), rtol=tol, atol=tol,
                                           err_msg=f"{backend}, argument {k}")


def new_host_sites(fn, *args):
    """(fn's result, how many host-call sites compiling it registered)."""
    before = len(host_calls.SITES)
    out = fn(*args)
    return out, len(host_calls.SITES) - before

# -- 3-D arithmetic, compiled natively -------------------------------------------------------


SHAPES = [((3, 4, 2), (3, 4, 2)), ((3, 1, 2), (1, 4, 2)), ((3, 4, 2), (4, 2)),
          ((4, 1), (3, 4, 2)), ((3, 4, 2), (2,)), ((1,), (3, 4, 2)), ((3, 4, 1), (1, 2))]


def ops(a, b):
    return a * b - b


def all_ops(a, b):
    return (a + b) * (a - b) / (b * b + 1.0) - a ** 2.0


def test_binary_ops_broadcast_like_numpy():
    """Every pair of ranks, with length-1 axes; each operator once."""
    compiled = jit(ops)
    for sa, sb in SHAPES:
        a, b = RS.randn(*sa), RS.randn(*sb)
        out, sites = new_host_sites(compiled, a, b)
        np.testing.assert_allclose(out, ops(a, b), rtol=1e-14, err_msg=f"{sa} {sb}")
        assert sites == 0, "3-D arithmetic went through numpy"
    a, b = RS.randn(3, 1, 2), RS.randn(1, 4, 2)
    np.testing.assert_allclose(jit(all_ops)(a, b), all_ops(a, b), rtol=1e-14)


def test_number_operands_and_unary_ufuncs():
    def f(a):
        return 2.0 - np.tanh(a) * 3.0 + np.exp(-a) / 4.0 + np.sqrt(np.abs(a)) - (1.5 ** a)

    a = RS.randn(2, 3, 4)
    with np.errstate(all="ignore"):
        want = f(a)
    out, sites = new_host_sites(jit(f), a)
    np.testing.assert_allclose(out, want, rtol=1e-13)


def test_mismatched_lengths_raise_numpy_error():
    f = jit(lambda a, b: a * b)
    with pytest.raises(ValueError):
        f(np.ones((2, 3, 4)), np.ones((2, 5, 4)))
    with pytest.raises(ValueError):
        f(np.ones((2, 3, 4)), np.ones(3))


def test_allocation_of_any_rank():
    @jit
    def make(n):
        z = np.zeros((n, 2, 3))
        o = np.ones((2, n, 1, 2))
        return z.sum() + o.sum()
    assert make(4) == 16.0


def test_float32_3d_keeps_its_dtype():
    a = RS.randn(2, 3, 2).astype(np.float32)
    out = jit(lambda a, b: a * b + a)(a, a[:1])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, a * a[:1] + a, rtol=1e-6)

# -- gradients through 3-D broadcasting ------------------------------------------------------


def pairwise_kernel(x, y, ls):
    d = np.expand_dims(x / ls, 1) - np.expand_dims(y / ls, 0)
    return np.sum(np.exp(-0.5 * np.sum(d ** 2, axis=2)))


def test_gradient_of_pairwise_kernel():
    check_gradient(pairwise_kernel, (RS.randn(4, 2), RS.randn(3, 2), np.array([0.8, 1.3])))


def test_gradient_of_broadcast_operands():
    """The cotangent of each operand is dy summed back to its shape (unbcast of a 3-D
    dy to 3, 2 and 1 dimensions, with and without length-1 axes)."""
    def f(a, b3, b2, b1):
        return np.sum(np.sin(a * b3 + b2) - a / (b1 * b1 + 2.0))
    for shapes in (((3, 4, 2), (4, 2), (2,)), ((1, 4, 1), (4, 1), (1,))):
        check_gradient(f, (RS.randn(3, 4, 2),) + tuple(RS.randn(*sh) for sh in shapes))


def test_gradient_of_number_times_3d():
    def f(a, s):
        return np.sum(np.cos(a * s) + s)
    got = {b: gradient(f, RS.randn(2, 2, 3) * 0 + 0.5, 1.7, backend=b)[1] for b in BACKENDS}
    a = np.full((2, 2, 3), 0.5)
    h = 1e-6
    fd = (f(a, 1.7 + h) - f(a, 1.7 - h)) / (2 * h)
    for b in BACKENDS:
        assert got[b] == pytest.approx(fd, rel=1e-7)


def test_gradient_of_power_of_3d():
    def f(a, p):
        return np.sum(a ** p)
    a = np.abs(RS.randn(2, 3, 2)) + 0.1
    check_gradient(lambda a: f(a, 3.0), (a,))
    for b in BACKENDS:
        gp = gradient(f, a, 2.5, backend=b)[1]
        assert gp == pytest.approx(np.sum(a ** 2.5 * np.log(a)), rel=1e-12)

# -- host calls: the fast codec gives what the generic one gave -------------------------------


def test_host_call_values_cross_both_ways():
    """3-D arrays (float, int, bool), numbers and tuples cross a host call intact."""
    @jit
    def f(a, k, flag, x):
        sign, logdet = np.linalg.slogdet(a[0])      # a tuple of two numbers
        m = np.expand_dims(a[0], 2)                  # a 3-D result
        c = np.cumsum(k)                             # an int array
        w = np.where(a > x, a, 0.0)                  # a bool 3-D array crosses
        return sign * logdet + m.sum() + c[-1] + w.sum() + (1.0 if flag else 0.0)

    a = RS.randn(2, 3, 3)
    k = np.arange(5)
    want = np.prod(np.linalg.slogdet(a[0])) + a[0].sum() + 10 + np.where(a > 0.2, a, 0).sum()
    assert f(a, k, True, 0.2) == pytest.approx(want + 1.0, rel=1e-13)
    assert f(a[:, ::-1], k, False, 0.2) == pytest.approx(
        np.prod(np.linalg.slogdet(a[0, ::-1])) + a[0].sum() + 10
        + np.where(a > 0.2, a, 0).sum(), rel=1e-13)


def test_store_into_argument_by_host_call_is_refused():
    """A numpy function that stores into its argument is not run on a copy (which
    would silently leave the array as it was): jit refuses it, naming it."""
    from jit.types import TypingError

    def f(a):
        b = a.copy()
        np.fill_diagonal(b, -1.0)
        return b
    with pytest.raises(TypingError, match="fill_diagonal stores into an array argument"):
        jit(f)(np.zeros((2, 2)))


def test_host_call_result_dtype_checked():
    """A host result that cannot be stored in the declared dtype is a TypeError naming
    the callable (the fast codec keeps the generic codec's checks)."""
    from jit.runtime.host_codec import plan
    from jit.types import FLOAT64, INT64, ArrayT
    site = host_calls.HostSite(lambda x: x * 1.5, "scale", [("slot", ArrayT(INT64, 3))], (),
                               ArrayT(INT64, 3))
    assert plan(site) is not None
    with pytest.raises(TypeError, match="scale returned"):
        host_calls._encode(site, site.result, np.ones((1, 1, 1)) * 1.5, [0] * 7, 0)
    site = host_calls.HostSite(len, "size", [("slot", ArrayT(FLOAT64, 1))], (), INT64)
    assert plan(site) is not None

# -- np.shape natively, einsum as a batched matmul ---------------------------------------------


def test_np_shape_is_read_natively():
    def f(a, b):
        return np.shape(a)[0] * 10 + np.shape(b)[2]
    out, sites = new_host_sites(jit(f), np.zeros((2, 3)), np.zeros((1, 2, 4)))
    assert out == 24 and sites == 0


EINSUMS = [("mnd,mdo->mno", (5, 40, 8), (5, 8, 8)), ("mno,mnd->mdo", (5, 40, 8), (5, 40, 3)),
           ("ij,jk->ki", (30, 40), (40, 50)), ("ijk,jl->lki", (20, 30, 4), (30, 50)),
           ("ab,cd->ad", (2, 3), (4, 5)), ("ii,ij->j", (3, 3), (3, 2)),
           ("i,i->", (4,), (4,)), ("ij,jk->ik", (30, 1), (40, 50))]


@pytest.mark.parametrize("spec, sa, sb", EINSUMS)
def test_contraction_matches_numpy_einsum(spec, sa, sb):
    from adjoint.contraction import einsum
    a, b = RS.randn(*sa), RS.randn(*sb)
    try:
        want = np.einsum(spec, a, b)
    except ValueError:
        with pytest.raises(ValueError):
            einsum(spec, a, b)
        return
    got = einsum(spec, a, b)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_gradient_of_batched_einsum():
    """The layer of a weight-sampled network: forward and cotangents both contract
    by batched matmul (sizes above the threshold where numpy's loop runs)."""
    def f(w, x):
        h = np.tanh(np.einsum("mnd,mdo->mno", x, w))
        return np.sum(np.einsum("mno,mdo->mnd", h, w) ** 2)
    w, x = RS.randn(3, 6, 6) * 0.3, RS.randn(3, 40, 6)
    check_gradient(f, (w, x), tol=1e-5)
