"""jit: type inference, specialisation and llvmlite code generation for zygopy's IR.

    from jit import jit, code_typed, code_llvm, code_native, TypingError
"""
from jit.api import Dispatcher, code_llvm, code_native, code_typed, compile_typing, jit
from jit.typing.infer import ENGINE, Typing, infer
from jit.types import (BOOL, FLOAT64, INT64, NONE, READER, TAPE, ArrayT, ClosureT, FunctionT,
                       TupleT, Type, TypingError, typeof)
from jit.runtime.tape import NativeReader, NativeTape
from jit.cuda import code_ptx
from jit.pullback.backend import BACKEND as GRAD_BACKEND, JitFallbackWarning
from jit.pullback.host_jcalls import CallSiteFallbackWarning
from jit.pullback.backend import register as _register
from jit.pullback.fast_path import register as _register_fast
from jit.pullback.fast_gradient import register as _register_fast_gradient
from jit.pullback.tangent_entry import register as _register_tangents
from jit.batch import register as _register_batch, vmap
from jit.library import catalog  # noqa: F401  (every library callable, declared once)
from jit import cache_files
from adjoint.caches import on_clear_disk

__all__ = ["jit", "code_typed", "code_llvm", "code_native", "code_ptx", "TypingError", "infer",
           "typeof", "Typing", "Dispatcher", "compile_typing", "ENGINE", "BOOL", "INT64",
           "FLOAT64", "NONE", "READER", "TAPE", "ArrayT", "TupleT", "FunctionT", "ClosureT",
           "Type", "NativeReader", "NativeTape", "GRAD_BACKEND", "JitFallbackWarning",
           "CallSiteFallbackWarning", "register_backends", "vmap"]


def register_backends() -> None:
    """Make `backend="llvm"` (and `"auto"`) of `adjoint` use compiled pullbacks: the
    `zygopy.backends` entry point, which adjoint loads on its first pullback."""
    _register()
    _register_fast()
    _register_fast_gradient()
    _register_tangents()
    _register_batch()
    on_clear_disk(cache_files.clear_used)     # adjoint.clear_cache(disk=True)


register_backends()
