"""The user's door to the CUDA path.

    jit.cuda.map(f, x, 3)             # f applied elementwise, scalars broadcast
    jit.cuda.map_gradient(f, x, 3)    # (values, {arg position: d f / d arg} ...)
    print(jit.code_ptx(f, x, 3))      # PTX of the primal and gradient kernels

Arguments are numpy arrays (copied to the device and results copied back) or objects
with `__cuda_array_interface__` (used in place; results are then `DeviceBuffer`s,
which expose the interface too and `copy_to_host()`).
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np

from lowering import guards

from jit.types import TypingError
from jit.cuda.compile import DeviceKernel, compile_map, operand_types
from jit.cuda.driver import DeviceBuffer, device
from jit.cuda.gradient import compile_gradient, launch_gradient
from jit.cuda.marshal import NP_DTYPE, place
from jit.cuda.nvvm import DEFAULT_ARCH


def _results(kernel: DeviceKernel, args: tuple, gradient: bool = False) -> tuple:
    """Launch `kernel` over `args`; the result buffers and whether to keep them on
    the device."""
    dev = device()
    placed = place(args, kernel.spec.operands, DeviceBuffer.from_host)
    outs = [DeviceBuffer(placed.n * np.dtype(NP_DTYPE[r]).itemsize, placed.shape, NP_DTYPE[r])
            for r in kernel.spec.results]
    results = [ctypes.c_void_p(o.ptr) for o in outs]
    loaded = dev.load(kernel.ptx(dev.arch), kernel.name)
    if gradient:
        launch_gradient(kernel, loaded, placed.n, placed.params, results)
    else:
        loaded.launch(placed.n, placed.params + results)
    return outs, placed.on_device


def _to_user(buf: DeviceBuffer, on_device: bool) -> Any:
    if on_device:
        return buf
    host = buf.copy_to_host()
    return host[()] if host.ndim == 0 else host


def map(f: Callable, *args: Any) -> Any:
    """`f` applied elementwise over the broadcast of `args` on the GPU."""
    device()
    guards.check(f)     # a global it read was rebound: compile again
    kernel = compile_map(f, operand_types(args))
    outs, on_device = _results(kernel, args)
    return _to_user(outs[0], on_device)


def map_gradient(f: Callable, *args: Any) -> tuple:
    """`(values, grads)`: `grads[k]` is the elementwise derivative of `f` with respect
    to argument k for every float argument, None for the others."""
    device()
    guards.check(f)     # a global it read was rebound: compile again
    kernel = compile_gradient(f, operand_types(args))
    outs, on_device = _results(kernel, args, gradient=True)
    values = _to_user(outs[0], on_device)
    it = iter(outs[1:])
    grads = tuple(_to_user(next(it), on_device) if k in kernel.active else None
                  for k in range(len(args)))
    return values, grads


class PTXListing:
    """What `code_ptx` returns: `str()` is the PTX of the primal kernel followed by
    the gradient kernel's (or the reason it could not be built)."""

    def __init__(self, sections: list) -> None:
        self.sections = sections

    def __str__(self) -> str:
        return "\n\n".join(f"// ===== {title} =====\n{text}" for title, text in self.sections)

    __repr__ = __str__


def code_ptx(f: Callable, *args: Any, arch: str = DEFAULT_ARCH) -> PTXListing:
    """The PTX of the primal and gradient kernels of `f` for arguments like `args`."""
    guards.check(f)
    ops = operand_types(args)
    sections = [(f"primal kernel ({arch})", compile_map(f, ops).ptx(arch))]
    try:
        grad = compile_gradient(f, ops).ptx(arch)
    except TypingError as e:
        grad = f"// no gradient kernel: {e}"
    sections.append((f"gradient kernel ({arch})", grad))
    return PTXListing(sections)
