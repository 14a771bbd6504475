"""The NVVM flavour of the JIT's LLVM module: what changes when the typed IR of a
scalar function is compiled for the GPU instead of the host.

The function bodies come from the CPU code generator (`jit.codegen.function.ModuleGen` and its
tables keyed by primitive) unchanged; `DeviceModuleGen` only overrides its target
hooks:

  * triple `nvptx64-nvidia-cuda` and NVPTX's data layout;
  * typed pointers (libNVVM's parser rejects `ptr`): a function's result pointer is
    `T*` for a result of LLVM type `T`;
  * the error record is a device global `@zy_errinfo` (8 x i64, address space 1)
    instead of the host's `runtime.ERRINFO`; the launcher reads it back after a kernel;
  * math: LLVM float intrinsics and libm calls become libdevice `__nv_*` calls, and
    the checked int64 arithmetic gets small internal replacements of
    `llvm.s{add,sub,mul}.with.overflow.i64`, so that only operations NVVM documents
    are emitted;
  * a native call depth of `DEVICE_MAX_DEPTH` (a GPU thread's stack is small);
  * the tape's word moves (`push_words`, `pop_words`, the hooks of
    `jit.pullback.tape_ops`) use a per-thread device tape (`jit.cuda.tape`).

`finish_module` adds the `nvvm.annotations` (kernels) and `nvvmir.version` metadata.
"""
from __future__ import annotations

import re

from llvmlite import ir as L

from jit.codegen.function import F64, I1, I32, I64, ModuleGen
from jit.cuda.nvvm import GLOBAL_AS
from jit.library.platforms import CUDA_LIBDEVICE
from jit.cuda.tape import pop_words, push_words
from jit.types import OpaqueT, TypingError, intern_string

TRIPLE = "nvptx64-nvidia-cuda"
DATALAYOUT = ("e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-"
              "f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64")
# NVVM IR version the module declares (major, minor, debug major, debug minor).
NVVMIR_VERSION = (2, 0, 3, 1)
DEVICE_MAX_DEPTH = 64
ERRINFO_NAME = "zy_errinfo"
ERRINFO_WORDS = 8

# libm / LLVM-intrinsic name -> libdevice function (the library's per-platform table)
LIBDEVICE = CUDA_LIBDEVICE

_FLOAT_INTRINSIC = re.compile(r"^llvm\.(\w+)\.f64$")
_OVERFLOW_INTRINSIC = re.compile(r"^llvm\.s(add|sub|mul)\.with\.overflow\.i64$")


class DeviceModuleGen(ModuleGen):
    """`ModuleGen` for libNVVM: see the module docstring for what differs."""

    max_depth = DEVICE_MAX_DEPTH
    vector_math = False    # (libdevice is the device's math)
    reruns = False         # a kernel cannot deoptimise: division by zero raises

    def __init__(self, engine, root) -> None:
        super().__init__(engine, root)
        self.module.triple = TRIPLE
        self.module.data_layout = DATALAYOUT
        self.kernels: list = []
        self._errinfo = None

    # -- hooks ---------------------------------------------------------------
    def value_type(self, t) -> L.Type:
        if isinstance(t, OpaqueT):  # tape and reader: see jit.cuda.tape
            return L.PointerType(I64)
        return super().value_type(t)

    def errinfo_global(self) -> L.GlobalVariable:
        if self._errinfo is None:
            ty = L.ArrayType(I64, ERRINFO_WORDS)
            gv = L.GlobalVariable(self.module, ty, ERRINFO_NAME, addrspace=GLOBAL_AS)
            gv.initializer = L.Constant(ty, None)
            self._errinfo = gv
        return self._errinfo

    def errinfo_base(self, b: L.IRBuilder) -> L.Value:
        gv = self.errinfo_global()
        generic = b.addrspacecast(gv, L.PointerType(gv.value_type))
        return b.bitcast(generic, L.PointerType(I64))

    def site_word(self, sid: int) -> L.Value:
        return L.Constant(I64, sid)      # read back by the host of this process

    def string_word(self, text: str) -> L.Value:
        return L.Constant(I64, intern_string(text))

    def extern(self, name: str, ret: L.Type, args: list) -> L.Function:
        target = LIBDEVICE.get(name)
        if target is None:
            raise TypingError(f"jit.cuda: {name!r} has no device implementation "
                              "(no libdevice function, no Python runtime on the GPU)")
        return super().extern(target, ret, args)

    def intrinsic(self, name: str, ret: L.Type, args: list) -> L.Function:
        m = _FLOAT_INTRINSIC.match(name)
        if m:
            return self.extern(m.group(1), ret, args)
        m = _OVERFLOW_INTRINSIC.match(name)
        if m:
            return self._checked_arith(m.group(1))
        raise TypingError(f"jit.cuda: the intrinsic {name!r} is not supported on the device")

    def push_words(self, fc, tape, words: list) -> None:
        push_words(fc, tape, words)

    def pop_words(self, fc, reader, k: int) -> list:
        return pop_words(fc, reader, k)

    # -- helpers -------------------------------------------------------------
    def _checked_arith(self, op: str) -> L.Function:
        """An internal `{i64, i1} zy_s<op>_ovf(i64, i64)` with the intrinsic's meaning."""
        name = f"zy_s{op}_ovf"
        fn = self.module.globals.get(name)
        if fn is not None:
            return fn
        res_t = L.LiteralStructType([I64, I1])
        fn = L.Function(self.module, L.FunctionType(res_t, [I64, I64]), name)
        fn.linkage = "internal"
        b = L.IRBuilder(fn.append_basic_block("entry"))
        x, y = fn.args
        r, ovf = _OVERFLOW_BODY[op](b, x, y)
        out = b.insert_value(L.Constant(res_t, L.Undefined), r, 0)
        b.ret(b.insert_value(out, ovf, 1))
        return fn

    def extern_raw(self, name: str, ret: L.Type, args: list) -> L.Function:
        """A declaration under its own name (NVVM intrinsics such as the sreg reads)."""
        fn = self.module.globals.get(name)
        if fn is None:
            fn = L.Function(self.module, L.FunctionType(ret, args), name)
        return fn

    def mark_kernel(self, fn: L.Function) -> None:
        self.kernels.append(fn)

    def finish_module(self) -> None:
        """Add the kernel annotations and the NVVM IR version."""
        for k in self.kernels:
            self.module.add_named_metadata(
                "nvvm.annotations", [k, L.MetaDataString(self.module, "kernel"),
                                     L.Constant(I32, 1)])
        self.module.add_named_metadata(
            "nvvmir.version", [L.Constant(I32, v) for v in NVVMIR_VERSION])


def _add_ovf(b: L.IRBuilder, x, y) -> tuple:
    r = b.add(x, y)
    # overflow iff x and y share a sign that r does not have
    sign = b.and_(b.xor(r, x), b.xor(r, y))
    return r, b.icmp_signed("<", sign, L.Constant(I64, 0))


def _sub_ovf(b: L.IRBuilder, x, y) -> tuple:
    r = b.sub(x, y)
    sign = b.and_(b.xor(x, y), b.xor(r, x))
    return r, b.icmp_signed("<", sign, L.Constant(I64, 0))


def _mul_ovf(b: L.IRBuilder, x, y) -> tuple:
    r = b.mul(x, y)
    wide = L.IntType(128)
    exact = b.mul(b.sext(x, wide), b.sext(y, wide))
    return r, b.icmp_signed("!=", exact, b.sext(r, wide))


_OVERFLOW_BODY = {"add": _add_ovf, "sub": _sub_ovf, "mul": _mul_ovf}


_FNEG = re.compile(r"= fneg (double|float) ")


def nvvm_dialect(text: str) -> str:
    """Rewrite the few instructions newer than NVVM's LLVM dialect: `fneg x` becomes
    `fsub -0.0, x` (the same value for every x, signed zeros included)."""
    return _FNEG.sub(r"= fsub \1 -0.0, ", text)


def check_typed(text: str, where: str) -> str:
    """Fail clearly when an opaque pointer slipped into NVVM text (a lowering that
    only the CPU supports, e.g. arrays allocated inside the function)."""
    m = re.search(r"(?<![\w.\"])ptr(?![\w\"])", text)
    if m is None:
        return text
    line = text[:m.start()].count("\n")
    src = text.splitlines()[line].strip()
    raise TypingError(f"jit.cuda: {where} uses a construct the device code generator does "
                      f"not support (an opaque pointer in: {src!r})")


__all__ = [
    "DATALAYOUT",
    "F64",
    "LIBDEVICE",
    "TRIPLE",
    "DeviceModuleGen",
    "check_typed",
    "nvvm_dialect",
]
