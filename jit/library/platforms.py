"""Per-platform tables of the library's native code: the C library function each
`libm` call of the codegen (and each float LLVM intrinsic) becomes on a platform that
has no C library.  Registry entries name their mapping from here (`Entry.gpu`), and
the device code generator (`jit.cuda.target`) reads the same table."""
from __future__ import annotations

# C library / LLVM-intrinsic name -> CUDA libdevice function
CUDA_LIBDEVICE = {name: f"__nv_{name}" for name in (
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "exp", "expm1", "log", "log1p", "log2", "log10", "exp2", "cbrt", "sqrt",
    "fabs", "erf", "erfc", "lgamma", "floor", "ceil", "trunc", "rint", "copysign", "atan2",
    "fmod", "pow", "hypot")}
CUDA_LIBDEVICE.update(gamma="__nv_tgamma", tgamma="__nv_tgamma", roundeven="__nv_rint")


def cuda(c_name: str) -> str:
    """The libdevice function of C library function `c_name`."""
    return CUDA_LIBDEVICE[c_name]
