"""From a Python scalar function and its operand layout to NVVM IR and PTX.

    spec = signature(f, args)                  # which operands are arrays, their types
    k = compile_map(f, spec.operands)          # NVVM text + kernel name, cached
    k.ptx(arch)                                # libNVVM, cached per arch

The typed IR comes from the JIT's inference (`jit.typing.infer`), the device function's
body from the JIT's code generator (`jit.codegen.function`) through `DeviceModuleGen`; this
module only adds the kernel around it and the NVVM metadata.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lowering.guards import on_invalidate
from ssair.ir import IR

from jit.typing.infer import ENGINE, Typing, infer, lower_function
from jit.types import BOOL, FLOAT64, INT64, ArrayT, Type, TypingError, typeof
import jit.cuda.nvvm as nvvm
from jit.cuda.kernel import ELEMENT_TYPES, KernelSpec, Operand, map_kernel
from jit.cuda.target import DeviceModuleGen, check_typed, nvvm_dialect

_DTYPE_TYPES = {np.dtype(np.float64): FLOAT64, np.dtype(np.int64): INT64}


def operand_of(x: Any) -> Operand:
    """The kernel operand an argument becomes: an array (numpy or CUDA array
    interface) of float64/int64, or a broadcast Python/numpy scalar."""
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None or isinstance(x, np.ndarray):
        dtype = np.dtype(cai["typestr"]) if cai is not None else x.dtype
        if cai is None and x.ndim == 0:
            return Operand(typeof(x[()]), False)
        t = _DTYPE_TYPES.get(dtype)
        if t is None:
            raise TypingError(f"jit.cuda: arrays of dtype {dtype} are not supported "
                              "(float64 or int64)")
        return Operand(t, True)
    t = typeof(x)
    if t not in (BOOL, INT64, FLOAT64):
        raise TypingError(f"jit.cuda: an argument of type {t} cannot be broadcast "
                          "(arrays, floats, ints and bools only)")
    return Operand(t, False)


@dataclass
class DeviceKernel:
    """One compiled kernel: its typing, NVVM text and PTX per architecture."""

    typing: Typing
    spec: KernelSpec
    nvvm_ir: str
    ptx_cache: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    def ptx(self, arch: str = nvvm.DEFAULT_ARCH) -> str:
        p = self.ptx_cache.get(arch)
        if p is None:
            p = self.ptx_cache[arch] = nvvm.compile_ptx(self.nvvm_ir, arch, self.name)
        return p


def typing_for(f: Any, argtypes: tuple) -> Typing:
    """The JIT's typed IR of `f` for scalar argument types (no closures over values)."""
    ir = f if isinstance(f, IR) else lower_function(f)
    if ir.nfree:
        raise TypingError(f"jit.cuda: {ir.name} captures variables; pass them as "
                          "arguments (device kernels take scalars and arrays only)")
    t = infer(ir, argtypes)
    return ENGINE.table.get(t.key, t)


def refuse_arrays(t: Typing) -> None:
    """Device functions work on scalars: an array value (allocated, or a captured
    array) has no device representation yet."""
    for var, vt in t.types.items():
        if isinstance(vt, ArrayT):
            raise TypingError(f"jit.cuda: {t.ir.name} uses an array ({var} :: {vt}); "
                              "device functions take and make scalars only")


def build_map(t: Typing, operands: tuple) -> DeviceKernel:
    """The NVVM module of the primal kernel for a typed function."""
    if t.ret not in ELEMENT_TYPES + (BOOL,):
        raise TypingError(f"jit.cuda: {t.ir.name} returns {t.ret}; kernels need a "
                          "scalar result (float64, int64 or bool)")
    refuse_arrays(t)
    mg = DeviceModuleGen(ENGINE, t)
    root = mg.build()
    spec = KernelSpec(f"zy_map_{mg.uid}", list(operands), [t.ret])
    map_kernel(mg, root, spec)
    mg.finish_module()
    text = check_typed(nvvm_dialect(str(mg.module)), f"the kernel of {t.ir.name}")
    return DeviceKernel(t, spec, text)


@functools.lru_cache(maxsize=256)
def compile_map(f: Any, operands: tuple) -> DeviceKernel:
    """The primal kernel of `f` for the given operand layout (cached)."""
    return build_map(typing_for(f, tuple(o.type for o in operands)), operands)


on_invalidate(compile_map.cache_clear)


def operand_types(args: tuple) -> tuple:
    return tuple(operand_of(a) for a in args)


__all__ = [
    "DeviceKernel",
    "Type",
    "compile_map",
    "operand_of",
    "operand_types",
    "typing_for",
]
