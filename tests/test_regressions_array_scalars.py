"""Regressions found from fuzz_zygopy_np seed 778002474 (d/dv off by exactly 1.0 on
backend="llvm") and by the audit that followed, each checked on both backends against
central differences:

  * one cotangent array handed to two adjoints (`d_add` gives `dy` to both operands,
    a callee's gradient, the seed of a callee that writes into its argument) and then
    updated in place by the adjoint of an indexed value (`accum_index`, `zero_index`):
    the other adjoint changed with it;
  * bound array methods with parameters (`a.var(axis=0)`, `a.cumprod(axis=0)`,
    `a.repeat(2, axis=0)`, `a.trace(offset=1)`) passed their defaults, not the
    caller's arguments, to the compiled numpy function: wrong values and gradients.
"""
import warnings

import numpy as np
import pytest

import jit
from adjoint import gradient

BACKENDS = ("interp", "llvm")
RNG = np.random.default_rng(778002474)
A = RNG.uniform(-1, 1, (3, 4))
V = RNG.uniform(-1, 1, 4)
W = RNG.uniform(-1, 1, 4)
U = RNG.uniform(-1, 1, 3)
S = 0.37


def _central(f, args, k, h=1e-6):
    """Central differences of scalar f in argument k (a float or an array)."""
    x = args[k]
    if isinstance(x, float):
        hi, lo = list(args), list(args)
        hi[k], lo[k] = x + h, x - h
        return (f(*hi) - f(*lo)) / (2 * h)
    g = np.zeros(np.shape(x))
    for i in np.ndindex(g.shape):
        hi = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        lo = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        hi[k][i] += h
        lo[k][i] -= h
        g[i] = (f(*hi) - f(*lo)) / (2 * h)
    return g


def _agrees(f, args, backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no fallback to the interpreter
        got = gradient(f, *args, backend=backend)
    got = got if isinstance(got, tuple) else (got,)
    for k in range(len(args)):
        np.testing.assert_allclose(got[k], _central(f, args, k), rtol=1e-6, atol=1e-8,
                                   err_msg=f"argument {k} on {backend}")


# -- the fuzz finding and its shrunk forms ----------------------------------------------
def fuzz_778002474(A, v, u, s):
    t1 = float(np.sum(v)) * 1.0
    t2 = (t1 - (t1 * 1.43)) * 1.0
    t3 = np.max(float(np.sum((A + s * s)))) * 1.0
    z4 = np.zeros(4)
    for i5 in range(4):
        z4[i5] = np.max(((s * t3) + s * (u - t1)), axis=0) * (i5 + 1)
    return float(np.mean((np.sum((v + z4), axis=-1) - t2))) + 0.1 * np.sum(t1)


def written_then_added(v, s):
    z = np.zeros(4)
    z[0] = s                   # the adjoint of z is cleared at 0 in place ...
    return np.sum(v + z)       # ... and d_add gave it the array v's adjoint is


def written_in_loop(v, s):
    z = np.zeros(4)
    for i in range(4):
        z[i] = s * (i + 1)
    return np.sum(v + z)


def read_after_add(a, b):
    x = a[0]                   # accum_index into a's adjoint, shared with b's
    return x + np.sum(a + b)


def read_view_after_add(a, b):
    c = a + b
    return np.sum(c[1:]) * 3.0 + c[2] + np.sum(c + a)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f, args", [
    (fuzz_778002474, (A, V, U, S)),
    (written_then_added, (V, S)),
    (written_in_loop, (V, S)),
    (read_after_add, (V, W)),
    (read_view_after_add, (V, W)),
], ids=lambda x: getattr(x, "__name__", ""))
def test_shared_cotangent_updated_in_place(f, args, backend):
    _agrees(f, args, backend)


def test_fuzz_finding_gradient_in_v_closed_form():
    """d/dv of the fuzz program: 1 (v) + 0.43 (-t2 = 0.43 t1) + 0.1 + the loop's
    sum_i (i+1) * d(max_j s * (u_j - t1))/dt1 = -10 s (t1 = sum(v))."""
    for backend in BACKENDS:
        gv = gradient(fuzz_778002474, A, V, U, S, backend=backend)[1]
        np.testing.assert_allclose(gv, np.full(4, 1.0 + 0.43 + 0.1 - 10 * S), rtol=1e-12)


# -- gradients handed across calls ---------------------------------------------------------
def sum_of_both(x, y):
    return np.sum(x + y)       # the same cotangent for x and y


def set_first(x, s):
    x[0] = s                   # clears its seed (the caller's adjoint of x) in place


def overwrite_first(x, s):
    r = x * 2.0
    r[0] = s                   # clears the seed of its result in place
    return r


def callee_gradient_then_indexed(a, b):
    c = a * 1.0
    d = b * 1.0
    t = c[0] + d[1]
    return t + sum_of_both(c, d)


def callee_writes_shared_seed(a, b, s):
    c = a * 1.0
    d = b * 1.0
    set_first(c, s)
    return np.sum(c + d)


def callee_result_seed_shared(a, b, s):
    y = overwrite_first(a, s)
    z = overwrite_first(b, s)
    return np.sum((y + z) * a)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f, args", [
    (callee_gradient_then_indexed, (V, W)),
    (callee_writes_shared_seed, (V, W, S)),
    (callee_result_seed_shared, (V, W, S)),
], ids=lambda x: getattr(x, "__name__", ""))
def test_cotangent_shared_across_a_call(f, args, backend):
    _agrees(f, args, backend)


# -- bound array methods pass the caller's arguments ---------------------------------------
METHOD_CALLS = [
    lambda m: np.sum(np.cos(m.var(axis=0))),
    lambda m: np.sum(np.cos(m.std(axis=1, ddof=1))),
    lambda m: np.sum(np.cos(m.var(axis=1, keepdims=True))),
    lambda m: np.sum(np.cos(m.var())),
    lambda m: np.sum(np.cos(m.cumprod(axis=0))),
    lambda m: np.sum(np.cos(m.repeat(2, axis=0)[0])),
    lambda m: np.cos(m.trace(offset=1)),
]


@pytest.mark.parametrize("k", range(len(METHOD_CALLS)))
def test_method_arguments_reach_the_compiled_call(k):
    f = METHOD_CALLS[k]
    assert jit.jit(f)(A) == pytest.approx(f(A), rel=1e-12)
    for backend in BACKENDS:
        _agrees(f, (A,), backend)


def flagged_variance(x, keepdims=False):
    return np.var(x, axis=0, keepdims=keepdims)


def calls_flagged(m):
    return np.sum(np.cos(flagged_variance(m))) + np.sum(flagged_variance(m, keepdims=True))


@pytest.mark.parametrize("backend", BACKENDS)
def test_constant_flag_parameter_of_a_callee(backend):
    """A callee specialised on keepdims=False records it (a literal: nothing on the tape)."""
    _agrees(calls_flagged, (A,), backend)


# -- a selection assigned from the array itself ----------------------------------------------
def reversed_into_itself(u):
    t = u * 1.0
    t[::-1] = t                # numpy copies the overlapping source first
    return np.sum(t * np.array([0.0, 1.0, 2.0]))


def rows_from_itself(v):
    t = v * 1.0
    t[1:3] = t[0:2]            # through a second view (a name of its own) it always worked
    t[0:2] = t[0:2][::-1] * 1.0
    t[:] = t
    return np.sum(t * np.arange(4.0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_selection_assigned_from_its_own_array(backend):
    """The adjoint clears the written selection before adding v's share, v being t."""
    _agrees(reversed_into_itself, (U,), backend)
    _agrees(rows_from_itself, (V,), backend)
    np.testing.assert_allclose(gradient(reversed_into_itself, U, backend=backend)[0],
                               [2.0, 1.0, 0.0])
