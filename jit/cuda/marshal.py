"""Arguments to kernel parameters: broadcasting, strides, host/device placement.

An array argument becomes `(data pointer, element stride)` over the flat index space
of the broadcast shape.  numpy arrays are copied to the device (made contiguous, and
materialised when an N-d array is broadcast); objects with `__cuda_array_interface__`
are used in place when they are C-contiguous with the full shape, or 1-D with any
stride (length 1 broadcasts with stride 0).  Scalars become by-value parameters.
"""
from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from jit.types import BOOL, FLOAT64, INT64, Type

ITEM = 8
_CTYPE = {FLOAT64: ctypes.c_double, INT64: ctypes.c_int64, BOOL: ctypes.c_int8}
NP_DTYPE = {FLOAT64: np.float64, INT64: np.int64, BOOL: np.bool_}


def is_device(x: Any) -> bool:
    return hasattr(x, "__cuda_array_interface__")


def shape_of(x: Any) -> tuple:
    """The array shape of an argument (() for scalars)."""
    if is_device(x):
        return tuple(x.__cuda_array_interface__["shape"])
    return np.shape(x) if isinstance(x, np.ndarray) else ()


def broadcast_shape(args: tuple) -> tuple:
    try:
        return np.broadcast_shapes(*[shape_of(a) for a in args])
    except ValueError as e:
        raise ValueError(f"jit.cuda: the arguments do not broadcast together ({e})") from None


def element_stride(ashape: tuple, strides: Any, shape: tuple) -> int:
    """The element stride that walks an array of `ashape`/`strides` (bytes; None for
    C-contiguous) over the flat index space of `shape`, or -1 when no single stride
    does (the array must then be materialised)."""
    contiguous = strides is None or tuple(strides) == _c_strides(ashape)
    if ashape == shape and contiguous:
        return 1
    if len(ashape) == 1 and len(shape) == 1:
        if ashape[0] == 1 and shape[0] != 1:
            return 0
        step = strides[0] if strides is not None else ITEM
        return step // ITEM if step % ITEM == 0 else -1
    if math.prod(ashape) == 1 and all(d == 1 for d in ashape):
        return 0
    return -1


def _c_strides(shape: tuple) -> tuple:
    out, step = [], ITEM
    for d in reversed(shape):
        out.append(step)
        step *= max(d, 1)
    return tuple(reversed(out))


def host_layout(a: np.ndarray, shape: tuple) -> tuple:
    """(the host array to copy, its element stride) for a numpy argument."""
    stride = element_stride(a.shape, None, shape)
    if stride == 0:
        return np.ascontiguousarray(a).reshape(-1)[:1], 0
    if a.shape == shape:
        return np.ascontiguousarray(a), 1
    return np.ascontiguousarray(np.broadcast_to(a, shape)), 1


def device_layout(x: Any, shape: tuple) -> tuple:
    """(device pointer, element stride) of a `__cuda_array_interface__` argument."""
    cai = x.__cuda_array_interface__
    ashape = tuple(cai["shape"])
    stride = element_stride(ashape, cai.get("strides"), shape)
    if stride < 0:
        raise ValueError(f"jit.cuda: a device array of shape {ashape} and strides "
                         f"{cai.get('strides')} cannot be used for shape {shape}; pass a "
                         "C-contiguous array of the full shape or a 1-D array")
    return int(cai["data"][0]), stride


def scalar_param(value: Any, t: Type) -> Any:
    return _CTYPE[t](int(value) if t != FLOAT64 else float(value))


@dataclass
class Placed:
    """The kernel parameters for a call, and the device buffers they point into
    (kept alive until the launch has finished)."""

    params: list
    keep: list
    n: int
    shape: tuple
    on_device: bool


def place(args: tuple, operands: tuple, upload: Any) -> Placed:
    """Kernel parameters for `args`; `upload(np.ndarray) -> buffer with .ptr`."""
    shape = broadcast_shape(args)
    n = math.prod(shape)
    params, keep = [ctypes.c_int64(n)], []
    for a, o in zip(args, operands):
        if not o.array:
            params.append(scalar_param(a if not isinstance(a, np.ndarray) else a[()], o.type))
            continue
        if is_device(a):
            ptr, stride = device_layout(a, shape)
        else:
            host, stride = host_layout(a, shape)
            buf = upload(host)
            keep.append(buf)
            ptr = buf.ptr
        params += [ctypes.c_void_p(ptr), ctypes.c_int64(stride)]
    return Placed(params, keep, n, shape, any(is_device(a) for a in args))
