"""jit.cuda: scalar Python functions as elementwise GPU kernels through libNVVM.

    import jit
    y = jit.cuda.map(f, x, 3)               # numpy in, numpy out (device arrays stay)
    y, grads = jit.cuda.map_gradient(f, x, 3)
    print(jit.code_ptx(f, x, 3))            # needs libNVVM, not a GPU

Needs the `zygopy[cuda]` extra (cuda-bindings), libNVVM and, to run kernels, an
NVIDIA driver and GPU; anything missing raises `CudaUnavailable` on use, never at
import.
"""
from jit.cuda.api import PTXListing, code_ptx, map, map_gradient
from jit.cuda.driver import DeviceBuffer
from jit.cuda.nvvm import CudaUnavailable, compile_ptx, ptxas_check

__all__ = [
           "CudaUnavailable",
           "DeviceBuffer",
           "PTXListing",
           "code_ptx",
           "compile_ptx",
           "map",
           "map_gradient",
           "ptxas_check",
]
