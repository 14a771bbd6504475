"""The runtime's sum of two float64 cotangent arrays (`jit.runtime.array_sums`), which
compiled adjoints call instead of inlining it, and the records a `jcall` moves onto
the tape as one struct (`jit.pullback.tape_ops.push_value`): both checked directly
and through gradients (compiled against the interpreter and central differences)."""
import ctypes
import warnings

import numpy as np
import pytest

import jit  # noqa: F401  (registers the compiled backend)
from adjoint import gradient, value_and_grad
from jit.runtime.array_sums import accum_address
from tests.adjoint_check import central_differences


class NativeArray(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("n0", ctypes.c_int64), ("n1", ctypes.c_int64),
                ("s0", ctypes.c_int64), ("s1", ctypes.c_int64)]


def native(x):
    if x is None:
        return NativeArray(None, 0, 0, 0, 0)
    two = x.ndim == 2
    return NativeArray(x.ctypes.data, x.shape[0], x.shape[1] if two else 0,
                       x.strides[0], x.strides[1] if two else 0)


def accum(a, b, ndim):
    fn = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_int64)(accum_address())
    res, na, nb = NativeArray(), native(a), native(b)
    status = fn(ctypes.byref(res), ctypes.byref(na), ctypes.byref(nb), ndim)
    return status, res


def values(res, shape):
    if not res.data:
        return None
    n = int(np.prod(shape))
    flat = np.ctypeslib.as_array(ctypes.cast(res.data, ctypes.POINTER(ctypes.c_double)), (n,))
    return flat.reshape(shape).copy()


ARRAYS = {
    "c 2-d": np.arange(6.0).reshape(2, 3),
    "transposed": np.arange(6.0).reshape(3, 2).T,
    "1-d": np.arange(5.0),
    "strided 1-d": np.arange(10.0)[::3],
    "row": np.ones((1, 4)),
    "column": np.arange(4.0).reshape(4, 1),
    "empty": np.zeros((0, 3)),
    "column view": np.arange(12.0).reshape(3, 4)[:, 1:3],
}


@pytest.mark.parametrize("name", sorted(ARRAYS))
def test_sum_copy_and_null(name):
    x = ARRAYS[name]
    y = x * 0.5 - 1.0                      # C-contiguous, same shape
    status, res = accum(x, y, x.ndim)
    assert status == 0
    assert np.array_equal(values(res, x.shape), x + y)
    assert (res.n0, res.s0) == (x.shape[0], x.shape[1] * 8 if x.ndim == 2 else 8)
    status, res = accum(None, x, x.ndim)   # a NULL side is a zero: a fresh copy
    assert status == 0 and res.data != x.ctypes.data
    assert np.array_equal(values(res, x.shape), x)
    status, res = accum(x, None, x.ndim)   # a + NULL is a itself
    assert status == 0 and res.data == x.ctypes.data
    status, res = accum(None, None, x.ndim)
    assert status == 0 and not res.data


def test_shapes_that_differ_are_reported():
    assert accum(np.ones((2, 3)), np.ones((2, 4)), 2)[0] == 1
    assert accum(np.ones((2, 3)), np.ones((3, 3)), 2)[0] == 1
    assert accum(np.ones(3), np.ones(4), 1)[0] == 1


# -- through gradients: array cotangents summed from views, records of many kinds ------
def _two_uses(x, w):
    a = np.sum(x.T * w)                 # a cotangent of x through a transposed view
    b = np.sum(x * x)
    c = np.sum(x[:, ::2] ** 2)          # and through a strided one
    return a + b + c


def _helper(x, flag, k):
    h = np.tanh(x) * k
    if flag:
        h = h * 2.0
    return h, flag, k


def _records(x, v):
    total = 0.0
    for i in range(3):
        h, on, k = _helper(x * (i + 1.0), i % 2 == 0, float(i) + v)
        total = total + np.sum(h * h) * (1.5 if on else 0.5) + k * v
    return total


def _compiled_gradient(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return gradient(f, *args, backend="llvm")


def test_summed_cotangents_through_views():
    x = np.arange(12.0).reshape(3, 4) / 7.0
    w = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    g = _compiled_gradient(_two_uses, x, w)
    gi = gradient(_two_uses, x, w, backend="interp")
    expect = w.T + 2 * x
    expect[:, ::2] += 2 * x[:, ::2]
    assert np.allclose(g[0], expect, atol=1e-12) and np.allclose(g[0], gi[0], atol=1e-12)
    assert np.allclose(g[1], x.T, atol=1e-12)
    assert np.allclose(g[0], central_differences(_two_uses, (x, w), 0), atol=1e-6)


def test_records_with_bools_and_numbers_round_trip():
    x = np.array([0.3, -0.7, 1.1])
    v = 0.4
    g = _compiled_gradient(_records, x, v)
    gi = gradient(_records, x, v, backend="interp")
    assert np.allclose(g[0], gi[0], atol=1e-12) and np.isclose(g[1], gi[1], atol=1e-12)
    assert np.allclose(g[0], central_differences(_records, (x, v), 0), atol=1e-6)
    assert np.isclose(g[1], central_differences(_records, (x, v), 1), atol=1e-6)
    val, _ = value_and_grad(_records, x, v)
    assert np.isclose(val, _records(x, v))
