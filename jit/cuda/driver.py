"""Loading and launching PTX through `cuda.bindings.driver`, and device memory.

One primary context on device 0, made current on first use.  Every failure to reach
a GPU (bindings missing, no driver library, no device) raises `CudaUnavailable`
naming what is missing.  Kernels run on the legacy default stream and are waited for,
so arrays passed in through `__cuda_array_interface__` may come from any library
that uses blocking streams.
"""
from __future__ import annotations

import ctypes
import functools
import math
from typing import Any

import numpy as np

from jit.runtime import native as runtime
from jit.cuda.nvvm import CudaUnavailable
from jit.cuda.target import ERRINFO_NAME, ERRINFO_WORDS

BLOCK = 256
STACK_BYTES = 8192  # per thread: room for DEVICE_MAX_DEPTH nested device calls


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise CudaUnavailable("jit.cuda: the CUDA Python bindings are not installed "
                              f"({e}); install the extra: pip install 'zygopy[cuda]'") from None
    return driver


def check(result: Any, what: str) -> Any:
    """Unpack a `cuda.bindings.driver` result tuple, raising on a non-success code."""
    drv = _driver()
    err, rest = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
    if err != drv.CUresult.CUDA_SUCCESS:
        _, name = drv.cuGetErrorName(err)
        raise RuntimeError(f"jit.cuda: {what} failed: {name.decode() if name else err}")
    return rest[0] if len(rest) == 1 else rest


@functools.lru_cache(maxsize=1)
def device() -> Device:
    """The current GPU (CudaUnavailable when there is no driver or no device)."""
    drv = _driver()
    try:
        err, = drv.cuInit(0)
    except Exception as e:  # the driver library itself is missing
        raise CudaUnavailable(f"jit.cuda: no NVIDIA driver ({type(e).__name__}: {e}); "
                              "kernels need a GPU (use jit.code_ptx to inspect the code)") \
            from None
    if err != drv.CUresult.CUDA_SUCCESS:
        raise CudaUnavailable(f"jit.cuda: cuInit failed ({err.name}): no usable GPU")
    if check(drv.cuDeviceGetCount(), "cuDeviceGetCount") < 1:
        raise CudaUnavailable("jit.cuda: the NVIDIA driver reports no GPU")
    return Device(drv)


class Device:
    """Device 0 with its primary context current."""

    def __init__(self, drv: Any) -> None:
        self.drv = drv
        self.dev = check(drv.cuDeviceGet(0), "cuDeviceGet")
        self.ctx = check(drv.cuDevicePrimaryCtxRetain(self.dev), "cuDevicePrimaryCtxRetain")
        self.make_current()
        a = drv.CUdevice_attribute
        major = self.attribute(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        minor = self.attribute(a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        self.arch = f"sm_{major}{minor}"
        self.sms = self.attribute(a.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        check(drv.cuCtxSetLimit(drv.CUlimit.CU_LIMIT_STACK_SIZE, STACK_BYTES), "cuCtxSetLimit")
        self.modules: dict = {}

    def make_current(self) -> None:
        check(self.drv.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def attribute(self, attr: Any) -> int:
        return check(self.drv.cuDeviceGetAttribute(attr, self.dev), "cuDeviceGetAttribute")

    def load(self, ptx: str, name: str) -> Loaded:
        """The kernel `name` of a PTX module (loaded once per text)."""
        key = (ptx, name)
        got = self.modules.get(key)
        if got is None:
            mod = check(self.drv.cuModuleLoadData(ptx.encode() + b"\0"), "cuModuleLoadData")
            fn = check(self.drv.cuModuleGetFunction(mod, name.encode()), "cuModuleGetFunction")
            got = self.modules[key] = Loaded(self, mod, fn)
        return got

    def grid(self, n: int) -> int:
        return max(1, min(math.ceil(n / BLOCK), self.sms * 32))


class DeviceBuffer:
    """A device allocation, freed with the object; exposes `__cuda_array_interface__`
    when given a shape and dtype (what map() returns for device inputs)."""

    def __init__(self, nbytes: int, shape: tuple = (), dtype: Any = np.uint8) -> None:
        self.dev = device()
        self.nbytes = max(int(nbytes), 1)
        self.ptr = int(check(self.dev.drv.cuMemAlloc(self.nbytes), "cuMemAlloc"))
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @classmethod
    def from_host(cls, a: np.ndarray) -> DeviceBuffer:
        a = np.ascontiguousarray(a)
        buf = cls(a.nbytes, a.shape, a.dtype)
        if a.nbytes:
            check(buf.dev.drv.cuMemcpyHtoD(buf.ptr, a.ctypes.data, a.nbytes), "cuMemcpyHtoD")
        return buf

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "version": 3}

    def copy_to_host(self) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        if out.nbytes:
            check(self.dev.drv.cuMemcpyDtoH(out.ctypes.data, self.ptr, out.nbytes),
                  "cuMemcpyDtoH")
        return out

    def __del__(self) -> None:
        ptr, self.ptr = getattr(self, "ptr", 0), 0
        if ptr:
            self.dev.drv.cuMemFree(ptr)


class Loaded:
    """A loaded kernel and its module's error record."""

    def __init__(self, dev: Device, mod: Any, fn: Any) -> None:
        self.dev, self.mod, self.fn = dev, mod, fn
        self.errinfo = self.global_address(ERRINFO_NAME)

    def launch(self, n: int, params: list, grid: int = 0) -> None:
        """Run the kernel over `n` elements with ctypes `params` (`grid` blocks, or
        enough to fill the device); raise what the device code raised (the error
        record is cleared first)."""
        drv = self.dev.drv
        self.dev.make_current()
        check(drv.cuMemsetD8(self.errinfo, 0, ERRINFO_WORDS * 8), "cuMemsetD8")
        argv = (ctypes.c_void_p * len(params))(*[ctypes.addressof(p) for p in params])
        check(drv.cuLaunchKernel(self.fn, grid or self.dev.grid(n), 1, 1, BLOCK, 1, 1, 0, 0,
                                 ctypes.addressof(argv), 0), "cuLaunchKernel")
        check(drv.cuCtxSynchronize(), "the kernel")
        self.raise_recorded()

    def alloc(self, nbytes: int) -> DeviceBuffer:
        return DeviceBuffer(nbytes)

    def global_address(self, name: str) -> int:
        ptr, _ = check(self.dev.drv.cuModuleGetGlobal(self.mod, name.encode()),
                       "cuModuleGetGlobal")
        return int(ptr)

    def reset_global(self, name: str) -> None:
        check(self.dev.drv.cuMemsetD8(self.global_address(name), 0, 8), "cuMemsetD8")

    def read_global(self, name: str) -> int:
        word = ctypes.c_int64()
        check(self.dev.drv.cuMemcpyDtoH(ctypes.addressof(word), self.global_address(name), 8),
              "cuMemcpyDtoH")
        return word.value

    def read_errinfo(self) -> list:
        words = (ctypes.c_int64 * ERRINFO_WORDS)()
        check(self.dev.drv.cuMemcpyDtoH(ctypes.addressof(words), self.errinfo,
                                        ERRINFO_WORDS * 8), "cuMemcpyDtoH")
        return list(words)

    def raise_recorded(self) -> None:
        words = self.read_errinfo()
        if words[0] == 0:
            return
        if not 0 <= words[1] < len(runtime.SITES):
            raise RuntimeError(f"jit.cuda: the kernel failed with status {words[0]}")
        raise runtime.SITES[words[1]].exception(words[2:5])
