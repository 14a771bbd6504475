"""The kernels' logic without a GPU: the NVVM IR of primal and gradient kernels runs
on the host as one GPU thread (tests/cuda_emulate.py) and must agree with the CPU
JIT and the interpreter.  Exercises the grid-stride loop, operand marshalling,
broadcasting, strides, the device error record and the tape overflow/retry path."""
from __future__ import annotations

import math

import numpy as np
import pytest
from cuda_cases import CASES, GRADIENT_CASES, fact, leaky, pow_loop
from cuda_emulate import run

import adjoint
import jit
from jit.cuda.compile import compile_map, operand_types
from jit.cuda.gradient import compile_gradient
from jit.cuda.tape import forward_words


def _cpu(f, args):
    g = jit.jit(f)
    shape = np.broadcast_shapes(*[np.shape(a) for a in args])
    full = [np.broadcast_to(a, shape).ravel() for a in args]
    return np.array([g(*[x.item() for x in xs]) for xs in zip(*full)]).reshape(shape)


def _map(f, *args):
    return run(compile_map(f, operand_types(args)), args)[0]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].__name__)
def test_primal_kernel_matches_the_cpu_jit(case):
    f, args = case
    np.testing.assert_allclose(_map(f, *args), _cpu(f, args), rtol=1e-12, atol=0)


def test_broadcasting_and_strides():
    x = np.linspace(0.5, 2.0, 12)
    got = _map(pow_loop, x[::-3], np.arange(4))
    np.testing.assert_array_equal(got, [pow_loop(v, n) for v, n in zip(x[::-3], range(4))])
    grid = _map(pow_loop, x.reshape(3, 4)[:, :1], np.arange(4))
    assert grid.shape == (3, 4) and grid[2, 3] == pow_loop(x[8], 3)


def test_device_arrays_are_read_in_place_with_their_strides():
    x = np.linspace(0.5, 2.0, 10)

    class Dev:  # host memory behind a CUDA array interface: fine for the emulator
        __cuda_array_interface__ = {"shape": (5,), "typestr": "<f8", "strides": (16,),
                                    "data": (x.ctypes.data, False), "version": 3}
    np.testing.assert_array_equal(_map(leaky, Dev()), [leaky(v) for v in x[::2]])


def test_device_errors_become_python_exceptions():
    def inv(x):
        return 1.0 / x

    def big(n):
        return n * n
    with pytest.raises(ZeroDivisionError, match="float division by zero.*inv"):
        _map(inv, np.array([1.0, 0.0]))
    with pytest.raises(OverflowError, match="integer overflow"):
        _map(big, np.array([3, 2 ** 40]))
    with pytest.raises(RecursionError, match="maximum recursion depth"):
        _map(fact, np.array([3, 100]))
    assert _map(fact, np.array([20]))[0] == math.factorial(20)


def test_gradient_kernel_without_tape():
    x = np.linspace(-1.0, 1.0, 9)
    y, g = run(compile_gradient(leaky, operand_types((x,))), (x,), gradient=True)
    np.testing.assert_array_equal(y, [leaky(v) for v in x])
    np.testing.assert_array_equal(g, [adjoint.gradient(leaky, v, backend="interp")[0]
                                      for v in x])


def test_gradient_kernel_tape_overflow_is_retried():
    x = np.linspace(0.9, 1.1, 6)
    k = compile_gradient(pow_loop, operand_types((x, 200)))
    k.tape_cap = 64
    y, g = run(k, (x, 200), gradient=True)
    need = k.tape_cap  # words per thread: one loop's records, 200 iterations
    assert need >= 200 and k.history[-2:] == [(64, need), (need, 0)]
    want = [adjoint.gradient(pow_loop, v, 200, backend="interp")[0] for v in x]
    np.testing.assert_allclose(y, [pow_loop(v, 200) for v in x], rtol=1e-15)
    np.testing.assert_allclose(g, want, rtol=1e-13)
    _, g2 = run(k, (x, 200), gradient=True)  # the learnt capacity: one launch
    assert k.history[-1] == (need, 0) and (g2 == g).all()


def rpow(x, n):
    if n <= 0:
        return 1.0
    return x * rpow(x, n - 1) + 0.5 * x


def test_recursive_gradient_kernel_shares_the_thread_tape():
    x, n = np.linspace(0.5, 1.5, 4), np.array([0, 3, 10, 40])
    k = compile_gradient(rpow, operand_types((x, n)))
    k.tape_cap = 8
    y, g = run(k, (x, n), gradient=True)
    assert k.history[-2][0] == 8 and k.history[-1] == (k.tape_cap, 0) and k.tape_cap > 40
    want = [adjoint.gradient(rpow, a, int(b), backend="llvm")[0] for a, b in zip(x, n)]
    np.testing.assert_allclose(y, [rpow(a, int(b)) for a, b in zip(x, n)], rtol=1e-12)
    np.testing.assert_allclose(g, want, rtol=1e-12)


def _cpu_gradients(f, args):
    """y and d y / d (each float argument) per element, from the CPU JIT's pullback."""
    shape = np.broadcast_shapes(*[np.shape(a) for a in args])
    full = [np.broadcast_to(a, shape).ravel() for a in args]
    active = [k for k, a in enumerate(args) if np.asarray(a).dtype == np.float64]
    ys, gs = [], []
    for xs in zip(*full):
        vals = [x.item() for x in xs]
        y, back = adjoint.pullback(f, *vals, backend="llvm")
        g = back(1.0)
        ys.append(y)
        gs.append([g[k] for k in active])
    return np.array(ys, float), np.array(gs, float).T.reshape((len(active),) + shape)


@pytest.mark.parametrize("case", GRADIENT_CASES, ids=lambda c: c[0].__name__)
def test_gradient_kernel_matches_the_cpu_jit(case):
    f, args = case
    k = compile_gradient(f, operand_types(args))
    got = run(k, args, gradient=True)
    if forward_words(k.typing)[1]:  # an exact bound: the first launch never overflows
        assert all(need == 0 for _, need in k.history)
    y, grads = _cpu_gradients(f, args)
    assert len(got) == 1 + len(grads)
    np.testing.assert_allclose(got[0], y, rtol=1e-12, atol=0)
    for g_dev, g_cpu in zip(got[1:], grads):
        np.testing.assert_allclose(g_dev, g_cpu, rtol=1e-12, atol=1e-300)
