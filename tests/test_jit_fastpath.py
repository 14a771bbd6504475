"""The compiled shortcut of `adjoint.pullback` for array arguments and for several
gradients (jit.pullback.fast_path): it must give exactly what the
general path gives (the interpreter's numbers, to 1e-12), never modify its inputs,
hand out fresh gradient arrays, and step aside to the general path for anything
its compiled signature does not cover."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from jit_grad_check import close

import adjoint
from bench.workloads import horner
from bench.workloads import logsumexp as lse
from bench.workloads import rosenbrock as rosen
from jit.pullback.backend import JitFallbackWarning


def quadratic_form(m, v):
    s = 0.0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            s += v[i] * m[i, j] * v[j]
    return s


def weighted(ws, idx, scale):
    s = 0.0
    for k in range(len(idx)):
        s += ws[idx[k]] * scale
    return s


def unused_array(x, ys):
    return x * 2.0 + len(ys)


def writes_input(xs, c):
    for i in range(len(xs)):
        xs[i] = xs[i] * c
    return xs[0] + xs[len(xs) - 1]


def five(spot, strike, t, rate, vol):
    sd = vol * math.sqrt(t)
    d1 = (math.log(spot / strike) + (rate + 0.5 * vol ** 2) * t) / sd
    return spot * math.erf(d1) - strike * math.exp(-rate * t) * (d1 - sd)


def picks(xs, i):
    return xs[i] * 2.0


def int_result(xs, n):
    k = 0
    for i in range(n):
        if xs[i] > 0.0:
            k += 1
    return k


def _both(f, *args):
    y, back = adjoint.pullback(f, *args, backend="llvm")
    yi, backi = adjoint.pullback(f, *args, backend="interp")
    return y, back, yi, backi


RNG = np.random.default_rng(7)
CASES = [
    (horner, (0.9, RNG.uniform(-1, 1, 50))),
    (quadratic_form, (RNG.normal(size=(4, 3)), RNG.normal(size=4))),
    (quadratic_form, (RNG.normal(size=(6, 6))[::2, 1::2], RNG.normal(size=9)[::3])),
    (weighted, (RNG.normal(size=5), np.array([4, 0, 2, 2]), 1.5)),
    (unused_array, (1.5, np.zeros(3))),
    (five, (100.0, 95.0, 0.75, 0.03, 0.25)),
]


@pytest.mark.parametrize("f,args", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_shortcut_agrees_with_the_interpreter(f, args):
    before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    y, back, yi, backi = _both(f, *args)
    assert type(back).__name__ == "Back", "the compiled shortcut should serve this call"
    assert close(y, yi)
    g, gi = back(0.75), backi(0.75)
    assert close(g, gi)
    for a, b in zip(args, before):  # inputs are never modified
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b)
    for got, want, x in zip(g, gi, args):  # the general path's types and shapes
        if want is None:
            assert got is None
        elif isinstance(x, np.ndarray):
            assert isinstance(got, np.ndarray) and got.shape == x.shape
            assert got.dtype == np.float64 and got.flags.c_contiguous
        else:
            assert type(got) is float


def test_functions_writing_their_arguments_stay_exact():
    # in-out arguments change the cotangent's shape: the general path serves them
    xs = RNG.normal(size=6)
    before = xs.copy()
    y, back, yi, backi = _both(writes_input, xs, 1.25)
    assert close(y, yi) and close(back(0.75), backi(0.75))
    assert np.array_equal(xs, before)


def test_gradient_arrays_are_fresh_and_back_repeats():
    xs = RNG.uniform(-1, 1, 20)
    _, back = adjoint.pullback(horner, 0.5, xs, backend="llvm")
    g1, g2 = back(1.0), back(2.0)
    assert g1[1] is not g2[1]
    assert close(2.0 * g1[1], g2[1]) and close(2.0 * g1[0], g2[0])
    g1[1][:] = 0.0  # a caller scribbling on one result does not touch the next
    assert close(back(1.0)[1], g2[1] / 2.0)


def reads_late(xs, w):
    s = 0.0
    for i in range(len(xs)):
        s += w * xs[i]     # d/dw reads xs[i] in the adjoint unless it is recorded
    return s


def whole(xs, w):
    return w * np.sum(xs * xs)     # the rules of mul and sum read xs in the adjoint


@pytest.mark.parametrize("f,args", [
    (whole, (RNG.normal(size=6), 0.5)), (quadratic_form, (RNG.normal(size=(5, 5)), RNG.normal(size=5))),
    (horner, (0.7, RNG.normal(size=9))), (rosen, (RNG.normal(size=9),)),
    (lse, (RNG.normal(size=9),)), (reads_late, (RNG.normal(size=9), 1.5)),
    (weighted, (RNG.normal(size=5), np.array([4, 0, 2, 2]), 1.5)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_input_written_after_pullback_does_not_change_the_gradient(f, args):
    _, back = adjoint.pullback(f, *args, backend="llvm")
    want = back(1.0)
    for a in args:
        if isinstance(a, np.ndarray):
            a[...] = 3      # the caller reuses its buffers before calling back
    assert close(back(1.0), want)


def test_arrays_the_adjoint_reads_are_copied():
    from adjoint.transform import activity_of, arg_types, lower_function, transform
    from jit.pullback.backend import BACKEND
    from jit.pullback.fast_path import unread_arrays
    # whole's rules read xs; rosen's adjoint recomputes xs[i] from xs (a stable array);
    # horner's adjoint only adds into the cotangent of coeffs (its shape)
    for f, args, want in ((whole, (np.ones(3), 0.5), set()), (rosen, (np.ones(4),), set()),
                          (horner, (0.7, np.ones(4)), {1})):
        jf = transform(lower_function(f), activity_of(args), arg_types(args))
        assert unread_arrays(jf, BACKEND.code_for(jf, args)) == want


def test_other_signatures_take_the_general_path():
    xs = RNG.normal(size=8)
    y, back = adjoint.pullback(horner, 0.3, xs, backend="llvm")
    assert type(back).__name__ == "Back"
    # same argument classes, other dtype / rank: the general path, same numbers
    for other in (np.arange(8), np.ones((2, 4)), xs.astype(np.float32)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", JitFallbackWarning)
                y2, back2 = adjoint.pullback(horner, 0.3, other, backend="auto")
        except Exception as e:  # noqa: BLE001 - then the interpreter must fail alike
            with pytest.raises(type(e)):
                adjoint.pullback(horner, 0.3, other, backend="interp")
            continue
        yi, backi = adjoint.pullback(horner, 0.3, other, backend="interp")
        dy = 1.0 if np.ndim(yi) == 0 else np.ones(np.shape(yi))   # (dy has y's shape)
        # float32 compiles too (rounded per operation where the interpreter's rules
        # round per rule): equal to float32's precision
        rtol = 1e-5 if other.dtype == np.float32 else 1e-12
        assert close(y2, yi, rtol) and close(back2(dy), backi(dy), rtol)
    # a dy that is not a float
    assert close(back(np.float64(0.5)), back(0.5))


def test_errors_are_cpythons():
    xs = np.array([1.0, 2.0, 3.0])
    assert adjoint.pullback(picks, xs, 2, backend="llvm")[0] == 6.0
    with pytest.raises(IndexError):
        adjoint.pullback(picks, xs, 3, backend="llvm")
    with pytest.raises(IndexError):
        picks(xs, 3)
    # the shortcut keeps working after an error
    _, back = adjoint.pullback(picks, xs, -1, backend="llvm")
    assert close(back(1.0)[0], np.array([0.0, 0.0, 2.0]))


def test_integer_results_and_integer_arguments():
    xs = RNG.normal(size=12)
    y, back = adjoint.pullback(int_result, xs, 12, backend="llvm")
    assert y == int_result(xs, 12) and type(y) is int
    g = back(1.0)
    assert g[1] is None and close(g[0], np.zeros(12))


def _cube_plus(x, n):
    return x ** 3 + n


def test_alternating_signatures_each_get_their_own_results():
    # the last compiled signature is tried first; others must not be served by it
    for x, n in [(1.5, 2), (2, 2), (1.5, 2), (1.5, 2 ** 70), (True, 3), (1.5, 2)]:
        y, back = adjoint.pullback(_cube_plus, x, n, backend="llvm")
        yi, backi = adjoint.pullback(_cube_plus, x, n, backend="interp")
        assert y == yi and type(y) is type(yi)
        assert back(1.0) == backi(1.0)
    with pytest.raises(TypeError):
        adjoint.pullback(_cube_plus, 1.5, backend="llvm")
