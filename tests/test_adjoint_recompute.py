"""Values the adjoint recomputes instead of recording (`adjoint.passes.induction`):
element reads of a stable array (an argument of a function that writes into no
array), arithmetic and comparisons of them, and the latch of a loop chosen by a
branch on such a value.  The forward then pushes nothing for them; the adjoint reads
a copy of the array made at entry, so a write into the array after the forward
(by the caller, or by the user before calling `back`) cannot change a gradient.
Every case is checked against central differences, and the interpreter against the
JIT."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from jit_grad_check import check_llvm

import adjoint
from adjoint.transform import activity_of, arg_types, lower_function, transform
from bench.workloads import leaky_sum, rosenbrock


def shifted(xs):                  # xs[i - 1] at i = 0 reads the last element
    s = 0.0
    for i in range(len(xs)):
        s += xs[i] * xs[i - 1] ** 2
    return s


def clipped(xs, lo):              # a condition on an element and an invariant number
    s = 0.0
    for i in range(len(xs)):
        if xs[i] - lo > 0.0:
            s += xs[i] * lo
        else:
            s -= 0.5 * xs[i] * xs[i]
    return s


def writes_first(xs):             # a function that writes into an array records
    ys = xs.copy()
    s = 0.0
    for i in range(len(ys)):
        if ys[i] > 0.0:
            ys[i] = 2.0 * ys[i]
        s += ys[i] * ys[i]
    return s


def calls_then_writes(xs):        # the caller writes into the array it passed
    ys = xs * 1.0
    a = leaky_sum(ys)
    ys[0] = -5.0
    return a + leaky_sum(ys)


def _fd(f, args, h=1e-6):
    x = args[0]
    out = np.zeros_like(x)
    for j in range(x.size):
        lo, hi = x.copy(), x.copy()
        lo[j] -= h
        hi[j] += h
        out[j] = (f(hi, *args[1:]) - f(lo, *args[1:])) / (2 * h)
    return out


_X = np.random.default_rng(11).normal(size=23)
CASES = [(leaky_sum, (_X,)), (rosenbrock, (_X,)), (shifted, (_X,)), (clipped, (_X, 0.3)),
         (writes_first, (_X,)), (calls_then_writes, (_X,))]


@pytest.mark.parametrize("f,args", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_gradients_match_differences_and_backends_agree(f, args):
    for backend in ("interp", "llvm"):
        y, back = adjoint.pullback(f, *args, backend=backend)
        assert y == pytest.approx(f(*args), rel=1e-12)
        assert np.allclose(back(1.0)[0], _fd(f, args), rtol=1e-6, atol=1e-6)
    assert check_llvm(f, *args) == "ok"


def _forward(f, args):
    jf = transform(lower_function(f), activity_of(args), arg_types(args))
    return jf.forward


@pytest.mark.parametrize("f", [leaky_sum, rosenbrock, shifted, clipped])
def test_the_forward_records_nothing_and_copies_the_array_once(f):
    args = (_X, 0.3) if f is clipped else (_X,)
    fwd = _forward(f, args)
    ops = [s.op for b in fwd.blocks for s in b.stmts]
    assert "push" not in ops
    assert ops.count("snapshot") == 1 and fwd.meta["stable_copies"]


def test_a_function_writing_into_an_array_still_records():
    fwd = _forward(writes_first, (_X,))
    assert not fwd.meta["induction"].stable
    assert any(s.op == "push" for b in fwd.blocks for s in b.stmts)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_writing_into_the_argument_before_back_changes_nothing(backend):
    xs = _X.copy()
    for f in (leaky_sum, rosenbrock):
        want = adjoint.gradient(f, xs.copy())[0]
        y, back = adjoint.pullback(f, xs, backend=backend)
        xs[:] = -xs                    # every branch would flip
        assert np.array_equal(back(1.0)[0], want)
        xs[:] = -xs


def test_strided_and_contiguous_arguments_agree():
    base = np.random.default_rng(2).normal(size=40)
    strided = base[::2]
    g1 = adjoint.gradient(rosenbrock, strided)[0]
    g2 = adjoint.gradient(rosenbrock, strided.copy())[0]
    assert np.array_equal(g1, g2)
    assert np.allclose(g1, _fd(rosenbrock, (strided.copy(),)), rtol=1e-6, atol=1e-5)


def test_the_entry_forward_copies_only_a_strided_argument():
    from adjoint.passes.stacks import entry_forward
    fwd = _forward(rosenbrock, (_X,))
    entry = entry_forward(fwd)
    assert [s.op for s in entry.entry.stmts].count("contiguous") == 1
    assert "snapshot" not in [s.op for s in entry.entry.stmts]
    assert [s.op for s in fwd.entry.stmts].count("snapshot") == 1    # a callee copies
    strided = np.random.default_rng(3).normal(size=30)[::3]
    for f in (leaky_sum, rosenbrock):
        y, g = adjoint.value_and_grad(f, strided)
        y2, g2 = adjoint.value_and_grad(f, strided.copy())
        assert y == y2 and np.array_equal(g[0], g2[0])


def sorts_first(xs):              # a method call may write into the array
    xs.sort()
    s = 0.0
    for i in range(len(xs)):
        if xs[i] > 0.0:
            s += xs[i] * xs[i] * i
    return s


def calls_a_helper(xs):           # an inactive call of a user function
    s = 0.0
    for i in range(len(xs)):
        s += xs[i] * _weight(i)
    return s


def _weight(i):
    return 1.0 + i % 3


@pytest.mark.parametrize("f", [sorts_first, calls_a_helper, writes_first])
def test_a_function_that_may_write_into_an_array_has_no_stable_array(f):
    assert not _forward(f, (_X,)).meta["induction"].stable
    x = np.array([3.0, -1.0, 2.0, 0.5])
    if f is sorts_first:     # `xs.sort()` permutes a differentiated array: refused (the
        for backend in ("interp", "auto"):      # gradient used to ignore the permutation)
            with pytest.raises(adjoint.rules.NoDerivativeRule, match="ndarray.sort"):
                adjoint.pullback(f, x.copy(), backend=backend)
        return
    want = adjoint.pullback(f, x.copy(), backend="interp")[1](1.0)[0]
    for backend in ("interp", "auto"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y, back = adjoint.pullback(f, x.copy(), backend=backend)
        assert np.array_equal(back(1.0)[0], want)


def pairs(m):                     # element reads of a 2-D stable array
    s = 0.0
    for i in range(m.shape[0]):
        if m[i, 0] > m[i, 1]:
            s += m[i, 0] * m[i, 1] ** 2
    return s


def test_a_strided_2d_argument_is_copied_in_c_order():
    m = np.random.default_rng(8).normal(size=(2, 9)).T      # strides (8, 72)
    assert not m.flags.c_contiguous
    fwd = _forward(pairs, (m,))
    assert "push" not in [s.op for b in fwd.blocks for s in b.stmts]
    want = adjoint.value_and_grad(pairs, np.ascontiguousarray(m))
    for backend in ("interp", "llvm"):
        y, back = adjoint.pullback(pairs, m, backend=backend)
        assert y == want[0] and np.array_equal(back(1.0)[0], want[1][0])
    y, g = adjoint.value_and_grad(pairs, m)
    assert y == want[0] and np.array_equal(g[0], want[1][0])
    h = 1e-6
    fd = np.zeros_like(m)
    for k in np.ndindex(m.shape):
        lo, hi = m.copy(), m.copy()
        lo[k] -= h
        hi[k] += h
        fd[k] = (pairs(hi) - pairs(lo)) / (2 * h)
    assert np.allclose(g[0], fd, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape,view", [
    ((9,), np.s_[::3]), ((4, 6), np.s_[:, ::2]), ((6, 4), np.s_[::-1, 1:]),
    ((0, 3), np.s_[:]), ((3, 0), np.s_[:]), ((5, 5), np.s_[1:4, 2])])
def test_the_runtime_strided_copy_writes_c_order(shape, view):
    """`zy_copy_strided` (jit.runtime.gradient_entry): any 1-D or 2-D layout, empty
    ones included, into C order, word for word."""
    import ctypes
    from jit.runtime.gradient_entry import copy_strided_address
    base = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    src = base.T[view] if len(shape) == 2 and shape[0] == shape[1] else base[view]
    out = np.full(src.size + 1, -1.0)           # one guard word past the end
    n1, s1 = (src.shape[1], src.strides[1]) if src.ndim == 2 else (1, 0)
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 2, *[ctypes.c_int64] * 4)(
        copy_strided_address())
    fn(out.ctypes.data, src.ctypes.data, src.shape[0], n1, src.strides[0], s1)
    assert np.array_equal(out[:-1], src.ravel()) and out[-1] == -1.0
