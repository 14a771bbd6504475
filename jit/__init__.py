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
