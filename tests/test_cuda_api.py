"""jit.cuda's user API: clear errors where CUDA is missing, argument marshalling
(pure, no GPU), and launches that run only where a driver and a GPU exist."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from cuda_cases import CASES, black_scholes, leaky, pow_loop

import jit
from jit.cuda import nvvm
from jit.cuda.marshal import broadcast_shape, element_stride, host_layout, place


def _driver_reason():
    try:
        from jit.cuda.driver import device
        device()
    except jit.cuda.CudaUnavailable as e:
        return str(e)
    return None


_NO_GPU = _driver_reason()
needs_gpu = pytest.mark.skipif(_NO_GPU is not None, reason=f"no GPU: {_NO_GPU}")


# ---------------------------------------------------------------------------
# errors without CUDA

@pytest.mark.skipif(_NO_GPU is None, reason="a GPU is present")
def test_map_without_a_driver_raises_one_clear_error():
    with pytest.raises(jit.cuda.CudaUnavailable, match="jit.cuda: .*(driver|GPU|bindings)"):
        jit.cuda.map(pow_loop, np.ones(3), 2)
    with pytest.raises(jit.cuda.CudaUnavailable, match="jit.cuda: "):
        jit.cuda.map_gradient(leaky, np.ones(3))


def test_missing_bindings_are_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    nvvm.nvvm_module.cache_clear()
    try:
        with pytest.raises(nvvm.CudaUnavailable, match="zygopy\\[cuda\\]"):
            nvvm.compile_ptx("", "sm_80")
    finally:
        nvvm.nvvm_module.cache_clear()


def test_missing_libdevice_is_named(monkeypatch):
    monkeypatch.setattr(nvvm, "_cuda_roots", lambda: [])
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", None)
    nvvm.libdevice_path.cache_clear()
    try:
        with pytest.raises(nvvm.CudaUnavailable, match="libdevice.10.bc not found"):
            nvvm.libdevice_path()
    finally:
        nvvm.libdevice_path.cache_clear()


def test_the_cpu_jit_is_unaffected():
    assert jit.jit(pow_loop)(2.0, 3) == 8.0
    assert callable(jit.code_ptx) and jit.cuda.map is not map


# ---------------------------------------------------------------------------
# marshalling (pure)

def test_element_strides():
    assert element_stride((5,), None, (5,)) == 1
    assert element_stride((5,), (16,), (5,)) == 2
    assert element_stride((5,), (-8,), (5,)) == -1
    assert element_stride((1,), None, (5,)) == 0
    assert element_stride((2, 3), None, (2, 3)) == 1
    assert element_stride((2, 3), (8, 16), (2, 3)) == -1
    assert element_stride((3,), None, (2, 3)) == -1
    assert element_stride((1, 1), None, (2, 3)) == 0


def test_host_layout_copies_what_cannot_be_strided():
    a = np.arange(12.0).reshape(3, 4)
    host, stride = host_layout(a.T, (4, 3))
    assert stride == 1 and host.flags.c_contiguous and (host == a.T).all()
    host, stride = host_layout(np.arange(3.0), (2, 3))
    assert stride == 1 and host.shape == (2, 3)
    host, stride = host_layout(np.array([7.0]), (9,))
    assert stride == 0 and host.tolist() == [7.0]


def test_place_builds_parameters_in_order():
    from jit.cuda.compile import operand_types
    args = (np.arange(4.0), 3, np.arange(4))
    uploads = []

    class Buf:
        def __init__(self, a):
            uploads.append(a)
            self.ptr = 1000 * len(uploads)
    p = place(args, operand_types(args), Buf)
    assert p.n == 4 and p.shape == (4,) and not p.on_device
    assert [v.value for v in p.params] == [4, 1000, 1, 3, 2000, 1]
    assert broadcast_shape((np.zeros((2, 1)), np.zeros(3), 1.0)) == (2, 3)
    with pytest.raises(ValueError, match="do not broadcast"):
        broadcast_shape((np.zeros(2), np.zeros(3)))


def test_place_uses_device_arrays_in_place():
    from jit.cuda.compile import operand_types

    class Dev:
        __cuda_array_interface__ = {"shape": (6,), "typestr": "<f8", "data": (4096, False),
                                    "strides": (16,), "version": 3}
    p = place((Dev(), 1.5), operand_types((Dev(), 1.5)), None)
    assert [v.value for v in p.params] == [6, 4096, 2, 1.5] and p.on_device


# ---------------------------------------------------------------------------
# on a GPU

def _cpu(f, args):
    g = jit.jit(f)
    shape = broadcast_shape(args)
    full = [np.broadcast_to(a, shape).ravel() if isinstance(a, np.ndarray) else
            [a] * math.prod(shape) for a in args]
    return np.array([g(*xs) for xs in zip(*full)]).reshape(shape)


@needs_gpu
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].__name__)
def test_map_matches_the_cpu_jit(case):
    f, args = case
    big = tuple(np.resize(a, 10 ** 6) if isinstance(a, np.ndarray) else a for a in args)
    got = jit.cuda.map(f, *big)
    want = _cpu(f, big)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


@needs_gpu
def test_map_gradient_matches_the_interpreter():
    import adjoint
    x = np.linspace(-1.0, 1.0, 101)
    y, (g,) = jit.cuda.map_gradient(leaky, x)
    want = [adjoint.gradient(leaky, v, backend="interp")[0] for v in x]
    np.testing.assert_allclose(y, [leaky(v) for v in x], rtol=1e-12)
    np.testing.assert_allclose(g, want, rtol=1e-12)


@needs_gpu
def test_tape_overflow_retries_with_the_measured_need():
    x = np.linspace(0.9, 1.1, 1000)
    y, (g, gn) = jit.cuda.map_gradient(pow_loop, x, 200)
    np.testing.assert_allclose(y, x ** 200, rtol=1e-12)
    np.testing.assert_allclose(g, 200 * x ** 199, rtol=1e-12)
    assert gn is None


@needs_gpu
def test_device_arrays_in_place_and_errors():
    from jit.cuda import DeviceBuffer
    x = DeviceBuffer.from_host(np.linspace(90.0, 110.0, 1000))
    out = jit.cuda.map(black_scholes, x, 100.0, 0.5, 0.01, 0.2)
    assert hasattr(out, "__cuda_array_interface__")
    want = jit.cuda.map(black_scholes, x.copy_to_host(), 100.0, 0.5, 0.01, 0.2)
    np.testing.assert_array_equal(out.copy_to_host(), want)

    def inv(x):
        return 1.0 / x
    with pytest.raises(ZeroDivisionError, match="float division by zero"):
        jit.cuda.map(inv, np.array([1.0, 0.0, 2.0]))
