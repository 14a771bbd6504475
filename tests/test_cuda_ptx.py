"""The CUDA path without a GPU: NVVM IR is built from the JIT's typed IR, compiled
to PTX by libNVVM and assembled by ptxas for sm_80 and sm_90.  Tests that need
libNVVM or ptxas skip with the reason when those are missing."""
from __future__ import annotations

import re

import numpy as np
import pytest
from cuda_cases import CASES, GRADIENT_CASES, leaky, pow_loop

import jit
from jit.cuda import nvvm
from jit.cuda.compile import compile_map, operand_types
from jit.cuda.gradient import compile_gradient
from jit.cuda.target import check_typed, nvvm_dialect
from jit.types import TypingError

ARCHS = ("sm_80", "sm_90")


def _libnvvm_reason():
    try:
        nvvm.nvvm_module()
        nvvm.libdevice_path()
    except nvvm.CudaUnavailable as e:
        return str(e)
    return None


_NVVM_MISSING = _libnvvm_reason()
needs_nvvm = pytest.mark.skipif(_NVVM_MISSING is not None, reason=str(_NVVM_MISSING))
needs_ptxas = pytest.mark.skipif(nvvm.ptxas_path() is None, reason="ptxas not found")


def _name(case):
    return case[0].__name__


def assemble(ptx: str) -> None:
    for arch in ARCHS:
        nvvm.ptxas_check(ptx, arch)


# ---------------------------------------------------------------------------
# NVVM IR (no libNVVM needed)

def test_nvvm_ir_has_the_module_setup():
    text = compile_map(pow_loop, operand_types((np.zeros(4), 3))).nvvm_ir
    assert 'target triple = "nvptx64-nvidia-cuda"' in text
    assert re.search(r"!nvvmir.version = !\{ !\d+ \}", text)
    assert re.search(r'void \(i64, double\*, i64, i64, double\*\)\* @"zy_map_\d+", '
                     r'!"kernel", i32 1', text)
    assert check_typed(text, "test") == text  # no opaque pointer anywhere


def test_math_goes_to_libdevice_and_checked_ints_have_no_intrinsics():
    text = compile_map(CASES[4][0], operand_types(CASES[4][1])).nvvm_ir
    for fn in ("__nv_sin", "__nv_exp", "__nv_log1p", "__nv_atan2", "__nv_hypot",
               "__nv_sqrt", "__nv_pow", "__nv_floor"):
        assert f'declare double @"{fn}"' in text, fn
    ints = compile_map(CASES[6][0], operand_types(CASES[6][1])).nvvm_ir
    assert "with.overflow" not in ints and "zy_ssub_ovf" in ints
    assert "llvm." not in re.sub(r"llvm\.nvvm\.read\.ptx\.sreg\.\w+", "", ints)


def test_user_calls_and_recursion_are_device_functions():
    text = compile_map(CASES[3][0], operand_types(CASES[3][1])).nvvm_ir
    # status and result come back as one value: {i32, i64}(depth, n)
    assert re.search(r'call \{i32, i64\} @"fact\.0"\(i64 %"[.\w]+", i64 %', text)
    assert re.search(r'icmp sgt i64 %"\.1", 64\n', text)  # the device's depth limit


def test_scalar_arguments_are_broadcast_parameters():
    spec = compile_map(pow_loop, operand_types((np.zeros(4), 3))).spec
    assert [o.array for o in spec.operands] == [True, False]
    spec = compile_map(pow_loop, operand_types((2.0, np.arange(3)))).spec
    assert [(str(o.type), o.array) for o in spec.operands] == [("float64", False),
                                                               ("int64", True)]


def test_fneg_is_rewritten_for_nvvm():
    assert nvvm_dialect('  %"a" = fneg double %"x"\n') == '  %"a" = fsub double -0.0, %"x"\n'


def test_opaque_pointer_is_a_clear_error():
    with pytest.raises(TypingError, match="does not support.*in: 'store double"):
        check_typed("define void @k(double* %p) {\n  store double 1.0, ptr %p\n}", "k")


def test_arrays_allocated_inside_are_refused():
    def alloc(x):
        a = np.zeros(3)
        a[0] = x
        return a[0] + 1.0
    with pytest.raises(TypingError, match=r"jit.cuda: \S*alloc uses an array .*array\(float64"):
        compile_map(alloc, operand_types((np.zeros(2),)))


def test_closures_and_non_scalar_results_are_refused():
    k = 2.0

    def scaled(x):
        return k * x

    def pair(x):
        return (x, x)
    with pytest.raises(TypingError, match="captures variables"):
        compile_map(scaled, operand_types((np.zeros(2),)))
    with pytest.raises(TypingError, match="scalar result"):
        compile_map(pair, operand_types((np.zeros(2),)))
    with pytest.raises(TypingError, match="dtype float32"):
        operand_types((np.zeros(2, np.float32),))


# ---------------------------------------------------------------------------
# PTX through libNVVM, checked by ptxas

@needs_nvvm
@needs_ptxas
@pytest.mark.parametrize("case", CASES, ids=_name)
def test_primal_ptx_assembles(case):
    f, args = case
    k = compile_map(f, operand_types(args))
    for arch in ARCHS:
        ptx = k.ptx(arch)
        assert f".target {arch}" in ptx and f".entry {k.name}(" in ptx
        nvvm.ptxas_check(ptx, arch)


@needs_nvvm
@needs_ptxas
def test_gradient_ptx_with_a_device_tape_assembles():
    k = compile_gradient(pow_loop, operand_types((np.zeros(4), 3)))
    assert k.active == (0,)
    text = k.nvvm_ir
    assert "atomicrmw max" in text and "zy_tape_need" in text
    assert re.search(r'call \{i32, [^\n]*\} @"pow_loop_forward\.\d+"', text)
    assert re.search(r'call \{i32, [^\n]*\} @"pow_loop_adjoint\.\d+"', text)
    assemble(k.ptx("sm_80"))
    nvvm.ptxas_check(k.ptx("sm_90"), "sm_90")


def test_gradient_kernel_calls_the_callees_forward_and_adjoint():
    """jcall/jback lower as on the CPU (jit.pullback.jcalls): the callee's env goes on the
    thread's tape, its adjoint is a device function of the same module."""
    text = compile_gradient(CASES[2][0], operand_types(CASES[2][1])).nvvm_ir
    assert re.search(r'define [^\n@]*@"_sq_forward\.\d+"', text)
    assert re.search(r'call \{i32, [^\n]*\} @"_sq_adjoint\.\d+"', text)
    assert check_typed(text, "test") == text


@needs_nvvm
@needs_ptxas
def test_gradient_ptx_without_tape_assembles():
    k = compile_gradient(leaky, operand_types((np.zeros(4),)))
    for arch in ARCHS:
        nvvm.ptxas_check(k.ptx(arch), arch)


@needs_nvvm
@needs_ptxas
@pytest.mark.parametrize("case", [c for c in GRADIENT_CASES if c[0] not in (leaky, pow_loop)],
                         ids=_name)
def test_gradient_ptx_assembles(case):
    f, args = case
    k = compile_gradient(f, operand_types(args))
    for arch in ARCHS:
        nvvm.ptxas_check(k.ptx(arch), arch)


@needs_nvvm
def test_code_ptx_lists_primal_and_gradient():
    text = str(jit.code_ptx(leaky, np.zeros(3)))
    assert "===== primal kernel (sm_80) =====" in text
    assert "===== gradient kernel (sm_80) =====" in text
    assert text.count(".entry zy_") == 2


@needs_nvvm
def test_code_ptx_says_why_a_gradient_kernel_is_missing():
    def positive(x):
        return x > 0.0
    text = str(jit.code_ptx(positive, np.zeros(3)))
    assert ".entry zy_map_" in text
    assert re.search(r"// no gradient kernel: jit.cuda: \S*positive must return a number",
                     text)
