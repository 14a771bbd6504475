"""Matrix products through the BLAS numpy itself calls: `gemm(a, b, out, ta, tb, lda,
ldb)` is `out = op(a) @ op(b)` by the library's `cblas_dgemm`, compiled as a native
call through its address (`ta`/`tb`: 1 when the operand is stored column by column,
i.e. a transposed view, whose leading dimension is then its second stride).

The library is the one numpy was built with, found among numpy's bundled libraries
(`numpy.libs`, `numpy/.dylibs`) under the names OpenBLAS exports (`scipy_cblas_dgemm64_`
for numpy's own 64-bit-integer build, then `cblas_dgemm64_`, then `cblas_dgemm`).
Where none is found, `BLAS` is None and `jit.library.linalg` keeps its loops.  The
same routine with the same layout arguments as numpy gives numpy's results.
"""
from __future__ import annotations

import ctypes
import glob
import os

import numpy as np
from llvmlite import ir as L

from jit.codegen.arrays import field, runtime_callee
from jit.codegen.function import F64, I64, PTR
from jit.library.python_impls import mark
from jit.library.registry import REGISTRY
from jit.types import INT64, NONE

I32 = L.IntType(32)
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
# (symbol, integers are 64-bit): the ILP64 names first (numpy's wheels)
SYMBOLS = (("scipy_cblas_dgemm64_", True), ("cblas_dgemm64_", True), ("cblas_dgemm", False))


def _libraries() -> list:
    base = os.path.dirname(np.__file__)
    found = []
    for pattern in ("*openblas*", "*blas*"):
        for where in (os.path.join(base, os.pardir, "numpy.libs"), os.path.join(base, ".dylibs")):
            found += sorted(glob.glob(os.path.join(where, pattern)))
    return list(dict.fromkeys(os.path.abspath(p) for p in found))


def find_dgemm():
    """(address, 64-bit integers) of numpy's cblas_dgemm, or None."""
    for path in _libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name, ilp64 in SYMBOLS:
            fn = getattr(lib, name, None)
            if fn is not None:
                return ctypes.cast(fn, ctypes.c_void_p).value, ilp64
    return None


BLAS = find_dgemm()


def dgemm_address() -> int:
    """The address of numpy's cblas_dgemm (`jit.runtime.symbols.RUNTIME`)."""
    if BLAS is None:
        raise LookupError("numpy has no cblas_dgemm here")
    return BLAS[0]


def gemm(a, b, out, ta, tb, lda, ldb):
    """out = op(a) @ op(b) by BLAS (compiled natively; see the module docstring)."""
    raise TypeError("jit.library.blas.gemm runs only in compiled code")


def _cg_gemm(fc, s, ts):
    _, ilp64 = BLAS
    it = I64 if ilp64 else I32
    fnty = L.FunctionType(L.VoidType(), [I32, I32, I32, it, it, it, F64, PTR, it, PTR, it, F64,
                                         PTR, it])
    b = fc.b
    a_, b_, out = (fc.get(x) for x in s.args[1:4])
    ta, tb, lda, ldb = (fc.get(x, INT64) for x in s.args[4:8])
    n, m, k = field(fc, out, 1), field(fc, out, 2), field(fc, a_, 2)   # op(a) is (n, k)

    def cast(v):
        return v if ilp64 else b.trunc(v, I32)

    def trans(t):
        return b.trunc(b.add(t, L.Constant(I64, NO_TRANS)), I32)
    ldc = field(fc, out, 2)
    b.call(runtime_callee("cblas_dgemm", fnty),
           [L.Constant(I32, ROW_MAJOR), trans(ta), trans(tb), cast(n), cast(m), cast(k),
            L.Constant(F64, 1.0), field(fc, a_, 0), cast(lda), field(fc, b_, 0), cast(ldb),
            L.Constant(F64, 0.0), field(fc, out, 0), cast(ldc)])
    return L.Constant(L.IntType(8), 0)


def blas_operand(a):
    """(trans, leading dimension) for BLAS of a 2-D array, or (-1, 0) when neither its
    rows nor its columns are contiguous (the caller copies it)."""
    n, m = a.shape
    s0, s1 = a.strides[0], a.strides[1]
    if (m == 1 or s1 == 8) and (n == 1 or (s0 % 8 == 0 and s0 >= 8 * m)):
        return 0, m if n == 1 else s0 // 8
    if (n == 1 or s0 == 8) and (m == 1 or (s1 % 8 == 0 and s1 >= 8 * n)):
        return 1, n if m == 1 else s1 // 8
    return -1, 0


mark(blas_operand)
# declared on every platform (the listing is the same everywhere); called only when
# BLAS was found (linalg's HAS_BLAS)
REGISTRY.declare(gemm, family="linear algebra", pattern="float64 2-D arrays, layout flags",
                 types=lambda ctx, s, ts: NONE, lower=_cg_gemm)
