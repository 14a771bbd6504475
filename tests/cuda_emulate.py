"""Run a kernel's NVVM IR on the host CPU, as one GPU thread, for tests without a GPU.

The NVVM text is rewritten into host LLVM IR: the NVPTX triple and data layout go,
address space 1 becomes the default one, libdevice `__nv_f` calls become libm `f`
calls, and the special registers read as a one-thread launch (tid = ctaid = 0,
ntid = nctaid = 1), so the grid-stride loop walks every element.  The kernel then
runs through MCJIT with the very parameters `jit.cuda.marshal.place` builds for
the GPU, and exposes what `jit.cuda.gradient.launch_gradient` needs from a loaded
kernel (`dev.grid`, `alloc`, `launch`, `reset_global`, `read_global`), so the tape
overflow/retry path runs as on a device.  Only the target differs from a GPU run.
"""
from __future__ import annotations

import ctypes
import re

import llvmlite.binding as llvm
import numpy as np

from jit.runtime import native as runtime
from jit.cuda.marshal import NP_DTYPE, place
from jit.cuda.target import ERRINFO_NAME, ERRINFO_WORDS

_SREG = {"tid": 0, "ctaid": 0, "ntid": 1, "nctaid": 1}


def host_ir(text: str) -> str:
    """NVVM IR text -> host LLVM IR text (see the module doc)."""
    text = re.sub(r'^target (triple|datalayout) = .*$', "", text, flags=re.M)
    text = text.replace(" addrspace(1)", "").replace("addrspacecast", "bitcast")
    text = re.sub(r'@"__nv_(\w+)"', r'@"\1"', text)
    text = re.sub(r'@"llvm\.nvvm\.read\.ptx\.sreg\.(\w+)\.x"', r'@"emu_\1"', text)
    for reg, value in _SREG.items():
        text = text.replace(f'declare i32 @"emu_{reg}"()',
                            f'define internal i32 @"emu_{reg}"() {{\n  ret i32 {value}\n}}')
    return text


class _Buf:
    """Host memory standing in for a device allocation."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = np.ascontiguousarray(a)
        self.ptr = self.a.ctypes.data


class _Dev:
    @staticmethod
    def grid(n: int) -> int:
        return 1


class EmulatedKernel:
    """A kernel compiled for the host; `launch` mirrors `jit.cuda.driver.Loaded`."""

    dev = _Dev()

    def __init__(self, kernel) -> None:
        runtime.target_machine()  # initialises the native target
        mod = llvm.parse_assembly(host_ir(kernel.nvvm_ir))
        mod.verify()
        tm = llvm.Target.from_default_triple().create_target_machine()
        self.ee = llvm.create_mcjit_compiler(mod, tm)  # the engine owns tm
        self.ee.finalize_object()
        self.mod = mod
        self.kernel = kernel
        self.addr = self.ee.get_function_address(kernel.name)

    def alloc(self, nbytes: int) -> _Buf:
        return _Buf(np.zeros(max(nbytes // 8, 1), np.int64))

    def global_words(self, name: str, count: int):
        return (ctypes.c_int64 * count).from_address(self.ee.get_global_value_address(name))

    def reset_global(self, name: str) -> None:
        self.global_words(name, 1)[0] = 0

    def read_global(self, name: str) -> int:
        return self.global_words(name, 1)[0]

    def launch(self, n: int, params: list, grid: int = 0) -> None:
        errinfo = self.global_words(ERRINFO_NAME, ERRINFO_WORDS)
        for k in range(ERRINFO_WORDS):
            errinfo[k] = 0
        cfunc = ctypes.CFUNCTYPE(None, *[type(p) for p in params])(self.addr)
        cfunc(*params)
        if errinfo[0]:
            raise runtime.SITES[errinfo[1]].exception(list(errinfo[2:5]))


def run(kernel, args: tuple, gradient: bool = False) -> list:
    """The result arrays of `kernel` over `args`, computed on the host."""
    from jit.cuda.gradient import launch_gradient
    emu = EmulatedKernel(kernel)
    placed = place(args, kernel.spec.operands, _Buf)
    outs = [np.zeros(placed.shape, NP_DTYPE[r]) for r in kernel.spec.results]
    results = [ctypes.c_void_p(o.ctypes.data) for o in outs]
    if gradient:
        launch_gradient(kernel, emu, placed.n, placed.params, results)
    else:
        emu.launch(placed.n, placed.params + results)
    return outs
