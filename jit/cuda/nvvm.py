"""libNVVM: NVVM IR text -> PTX, through `cuda.bindings.nvvm` (the `zygopy[cuda]` extra).

The libraries are found the way `cuda.pathfinder` finds them: `cuda.bindings.nvvm`
loads libnvvm itself (CUDA_HOME/CUDA_PATH, NVIDIA's wheels, the system search path
and /usr/local/cuda); libdevice is looked up under CUDA_HOME/CUDA_PATH, then through
`cuda.pathfinder`, then under /usr/local/cuda*.  Anything missing raises
`CudaUnavailable` saying what is missing and how to get it; importing this module
never fails.
"""
from __future__ import annotations

import functools
import glob
import importlib
import os
import shutil
import subprocess
from typing import Optional

GLOBAL_AS = 1   # NVVM's address space of global memory

LIBDEVICE_NAME = "libdevice.10.bc"
DEFAULT_ARCH = "sm_80"


class CudaUnavailable(RuntimeError):
    """The CUDA path cannot run here; the message says what is missing."""


def _bindings_nvvm():
    try:
        from cuda.bindings import nvvm
    except ImportError as e:
        raise CudaUnavailable("jit.cuda: the CUDA Python bindings are not installed "
                              f"({e}); install the extra: pip install 'zygopy[cuda]' "
                              "(cuda-bindings)") from None
    return nvvm


@functools.lru_cache(maxsize=1)
def nvvm_module():
    """`cuda.bindings.nvvm`, with libNVVM loaded (CudaUnavailable otherwise)."""
    nvvm = _bindings_nvvm()
    try:
        nvvm.version()
    except Exception as e:  # the bindings raise their own loader errors
        raise CudaUnavailable(f"jit.cuda: libNVVM could not be loaded ({e}); install the "
                              "CUDA toolkit or set CUDA_HOME") from None
    return nvvm


def ir_version() -> tuple:
    """The NVVM IR version libNVVM supports (major, minor, debug major, debug minor)."""
    return tuple(nvvm_module().ir_version())


def _cuda_roots() -> list:
    roots = [os.environ.get(k) for k in ("CUDA_HOME", "CUDA_PATH")]
    roots += sorted(glob.glob("/usr/local/cuda*"))
    return [r for r in roots if r]


@functools.lru_cache(maxsize=1)
def libdevice_path() -> str:
    """The path of libdevice.10.bc (CudaUnavailable when none is found)."""
    for root in _cuda_roots():
        p = os.path.join(root, "nvvm", "libdevice", LIBDEVICE_NAME)
        if os.path.isfile(p):
            return p
    try:      # (import_module honours a None in sys.modules, as the tests set it)
        pathfinder = importlib.import_module("cuda.pathfinder")
        return pathfinder.find_bitcode_lib("device")
    except Exception:
        pass
    raise CudaUnavailable(f"jit.cuda: {LIBDEVICE_NAME} not found (looked under CUDA_HOME, "
                          "CUDA_PATH, cuda.pathfinder and /usr/local/cuda*)")


@functools.lru_cache(maxsize=1)
def _libdevice_bytes() -> bytes:
    with open(libdevice_path(), "rb") as f:
        return f.read()


def _log(nvvm, prog) -> str:
    n = nvvm.get_program_log_size(prog)
    buf = bytearray(n)
    if n:
        nvvm.get_program_log(prog, buf)
    return buf.rstrip(b"\0").decode(errors="replace")


def compile_ptx(text: str, arch: str = DEFAULT_ARCH, name: str = "zygopy") -> str:
    """Compile NVVM IR text (libdevice linked lazily) to PTX for `arch` (sm_XX)."""
    nvvm = nvvm_module()
    prog = nvvm.create_program()
    try:
        src = text.encode()
        nvvm.add_module_to_program(prog, src, len(src), name)
        lib = _libdevice_bytes()
        nvvm.lazy_add_module_to_program(prog, lib, len(lib), "libdevice")
        opts = [f"-arch=compute_{arch.removeprefix('sm_')}".encode(), b"-opt=3"]
        try:
            nvvm.compile_program(prog, len(opts), opts)
        except nvvm.nvvmError as e:
            raise RuntimeError(f"jit.cuda: libNVVM rejected the module {name} ({e}):\n"
                               f"{_log(nvvm, prog)}") from None
        n = nvvm.get_compiled_result_size(prog)
        buf = bytearray(n)
        nvvm.get_compiled_result(prog, buf)
        return buf.rstrip(b"\0").decode()
    finally:
        nvvm.destroy_program(prog)


def ptxas_path() -> Optional[str]:
    """The ptxas binary (PATH, CUDA_HOME/CUDA_PATH, /usr/local/cuda*), or None."""
    found = shutil.which("ptxas")
    if found:
        return found
    for root in _cuda_roots():
        p = os.path.join(root, "bin", "ptxas")
        if os.access(p, os.X_OK):
            return p
    return None


def ptxas_check(ptx: str, arch: str) -> None:
    """Assemble `ptx` for `arch` with ptxas; RuntimeError with its output on failure."""
    exe = ptxas_path()
    if exe is None:
        raise CudaUnavailable("jit.cuda: ptxas not found (install the CUDA toolkit)")
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([exe, f"-arch={arch}", src, "-o", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"jit.cuda: ptxas -arch={arch} rejected the PTX:\n"
                               f"{r.stderr}{r.stdout}")
