"""jit: type inference, specialisation and llvmlite code generation for zygopy's IR.

    from jit import jit, code_typed, code_llvm, code_native, TypingError
"""
from .api import Dispatcher, code_llvm, code_native, code_typed, compile_typing, jit
from .infer import ENGINE, Typing, infer
from .types import (BOOL, FLOAT64, INT64, NONE, ArrayT, ClosureT, FunctionT, TupleT, Type,
                    TypingError, typeof)

__all__ = ["jit", "code_typed", "code_llvm", "code_native", "TypingError", "infer", "typeof",
           "Typing", "Dispatcher", "compile_typing", "ENGINE", "BOOL", "INT64", "FLOAT64",
           "NONE", "ArrayT", "TupleT", "FunctionT", "ClosureT", "Type"]
from . import codegen_adjoint, codegen_tape  # noqa: E402,F401  (register the tape rules)
from .runtime_tape import NativeReader, NativeTape  # noqa: E402
from .types import READER, TAPE  # noqa: E402
from . import cuda  # noqa: E402  (the CUDA path; imports no CUDA library until used)
from .cuda import code_ptx  # noqa: E402
from . import grad_array, grad_calls  # noqa: E402,F401  (array cotangents, jcall / jback)
from .grad_backend import BACKEND as GRAD_BACKEND, JitFallbackWarning, register as _register  # noqa: E402
from .grad_fast import register as _register_fast  # noqa: E402


def register_backends() -> None:
    """Make `backend="llvm"` (and `"auto"`) of `adjoint` use compiled pullbacks: the
    `zygopy.backends` entry point, which adjoint loads on its first pullback."""
    _register()
    _register_fast()


register_backends()
from . import array_ops  # noqa: E402,F401  (whole-array operations as compiled loops)
from . import array_more  # noqa: E402,F401  (more library calls as compiled loops)
from . import array_methods  # noqa: E402,F401  (array methods, .T, outer, matmul)
from . import array_builders  # noqa: E402,F401  (np.arange, np.float64, math.fsum)
from . import array_slices  # noqa: E402,F401  (a[i:j] views)
from . import tuple_slices  # noqa: E402,F401  (t[1:] by constant slices)
from . import array_axis  # noqa: E402,F401  (np.sum / np.mean over an axis)
from . import numbers_more  # noqa: E402,F401  (round(x, n), min/max pullbacks)
from . import strings  # noqa: E402,F401  (str values chosen by branches)
