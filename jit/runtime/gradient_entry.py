"""The compiled adjoint's second entry, for `jit.pullback.fast_path`: gradients written straight
into numpy memory the caller allocated.

    i64 zy_adjf_N(i64 block, double dy, ptr floats?, ptr g_1, ..., ptr g_m)

`floats` (present when the gradient has float leaves) is a float64 array of one slot
per float leaf; `g_1 ... g_m` are C-contiguous float64 arrays shaped like the array
arguments whose gradient is an array, in argument order (all of them `PyArrayObject*`,
checked by the `jit.runtime.fastcall` wrapper before the call).  The entry calls the general
entry `zy_adj_N` (so the adjoint body is inlined in one place only), stores the float
leaves, copies each native gradient array into its numpy array (a null array is
zeros) and frees what the adjoint allocated.  It returns 0, or 1 when a native
gradient's shape is not its numpy array's (the caller then takes the general path);
the status word ERRINFO[0] reports errors as for every entry.
"""
from __future__ import annotations

from typing import Any, Optional

from llvmlite import ir as L

from jit.runtime import native as runtime
from jit.runtime import symbols
from jit.codegen.function import F64, I32, I64, PTR, ModuleGen
from jit.codegen.arrays import runtime_callee
from jit.codegen.entry import DATA_OFF, _release, out_leaves, out_struct
from jit.types import FLOAT64, NONE, ArrayT, TupleT, Type

# zy_copy_strided(dst, src, n0, n1, s0, s1): dst[i * n1 + j] = the 8-byte word at byte
# offset i * s0 + j * s1 of src, a strided 1-D or 2-D native array into C order; compiled
# once per process rather than inlined (and vectorised) into every module that may copy
# one (`jit.pullback.array_values.copy_array`).
#
# zy_copy_grad(dst, src, n0, n1, s0, s1, nd): dst is a PyArrayObject* (C-contiguous
# float64, data at +16, dimensions at +32); src is a native array {data, n0, n1, s0, s1};
# 1-D arrays have n1 = 1, s1 = 0.  A C-contiguous source (the usual cotangent: arena
# memory) is one memcpy, any other a zy_copy_strided: zy_copy_c(dst, src, n0, n1, s0, s1),
# which copies a native array into C-order memory so (jit.runtime.array_sums calls it too).
_COPY_IR = r"""
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

define void @zy_copy_strided(ptr %dst, ptr %src, i64 %n0, i64 %n1, i64 %s0, i64 %s1) {
entry:
  %none = icmp slt i64 %n1, 1
  br i1 %none, label %done, label %next
next:
  %i = phi i64 [ 0, %entry ], [ %i2, %body ]
  %j = phi i64 [ 0, %entry ], [ %j2, %body ]
  %more = icmp slt i64 %i, %n0
  br i1 %more, label %body, label %done
body:
  %ioff = mul i64 %i, %s0
  %joff = mul i64 %j, %s1
  %off = add i64 %ioff, %joff
  %sp = getelementptr i8, ptr %src, i64 %off
  %v = load i64, ptr %sp
  %base = mul i64 %i, %n1
  %k = add i64 %base, %j
  %dp = getelementptr i64, ptr %dst, i64 %k
  store i64 %v, ptr %dp
  %jn = add i64 %j, 1
  %wrap = icmp eq i64 %jn, %n1
  %j2 = select i1 %wrap, i64 0, i64 %jn
  %in = add i64 %i, 1
  %i2 = select i1 %wrap, i64 %in, i64 %i
  br label %next
done:
  ret void
}

define i64 @zy_copy_grad(ptr %dst, ptr %src, i64 %n0, i64 %n1, i64 %s0, i64 %s1, i64 %nd) {
entry:
  %ddp = getelementptr i8, ptr %dst, i64 DATA
  %dd = load ptr, ptr %ddp
  %dimsp = getelementptr i8, ptr %dst, i64 32
  %dims = load ptr, ptr %dimsp
  %d0 = load i64, ptr %dims
  %ok0 = icmp eq i64 %d0, %n0
  %two = icmp eq i64 %nd, 2
  br i1 %two, label %second, label %shaped
second:
  %d1p = getelementptr i64, ptr %dims, i64 1
  %d1 = load i64, ptr %d1p
  %ok1 = icmp eq i64 %d1, %n1
  br label %shaped
shaped:
  %okd = phi i1 [ true, %entry ], [ %ok1, %second ]
  %ok = and i1 %ok0, %okd
  br i1 %ok, label %fill, label %bad
bad:
  ret i64 1
fill:
  %empty = icmp eq ptr %src, null
  %cells = mul i64 %n0, %n1
  %bytes = mul i64 %cells, 8
  br i1 %empty, label %zero, label %layout
zero:
  call void @llvm.memset.p0.i64(ptr %dd, i8 0, i64 %bytes, i1 false)
  ret i64 0
layout:
  call void @zy_copy_c(ptr %dd, ptr %src, i64 %n0, i64 %n1, i64 %s0, i64 %s1)
  ret i64 0
}

define void @zy_copy_c(ptr %dd, ptr %src, i64 %n0, i64 %n1, i64 %s0, i64 %s1) {
entry:
  %unit1 = icmp eq i64 %s1, 8
  %single1 = icmp eq i64 %n1, 1
  %c1 = or i1 %unit1, %single1
  %rowbytes = mul i64 %n1, 8
  %unit0 = icmp eq i64 %s0, %rowbytes
  %single0 = icmp eq i64 %n0, 1
  %c0 = or i1 %unit0, %single0
  %flat = and i1 %c0, %c1
  br i1 %flat, label %whole, label %strided
whole:
  %cells = mul i64 %n0, %n1
  %bytes = mul i64 %cells, 8
  call void @llvm.memcpy.p0.p0.i64(ptr %dd, ptr %src, i64 %bytes, i1 false)
  ret void
strided:
  call void @zy_copy_strided(ptr %dd, ptr %src, i64 %n0, i64 %n1, i64 %s0, i64 %s1)
  ret void
}
"""


def copy_grad_address() -> int:
    """The address of `zy_copy_grad` (compiled once)."""
    return runtime.compiled_once(_COPY_IR.replace("DATA", str(DATA_OFF)), "zy_copy_grad")


def copy_strided_address() -> int:
    """The address of `zy_copy_strided` (compiled once, with `zy_copy_grad`)."""
    copy_grad_address()
    return runtime.function_address("zy_copy_strided")


def copy_c_address() -> int:
    """The address of `zy_copy_c` (compiled once, with `zy_copy_grad`)."""
    copy_grad_address()
    return runtime.function_address("zy_copy_c")


def fast_plan(g_t: Type) -> Optional[list]:
    """Per primal argument, the kind of its gradient ("float", "array" or "none"), or
    None when `g_t` has other parts (the general entry then serves)."""
    if not isinstance(g_t, TupleT):
        return None
    plan = []
    for g in g_t.elems:
        if g == FLOAT64:
            plan.append("float")
        elif isinstance(g, ArrayT) and g.dtype == FLOAT64 and g.ndim <= 2:
            plan.append("array")
        elif g == NONE:
            plan.append("none")
        else:
            return None
    return plan


def build_fast_adjoint_entry(mg: ModuleGen, t: Any, entry: L.Function) -> Optional[L.Function]:
    """Emit `zy_adjf_N` for the adjoint typing `t` (dy a float64) around the adjoint's
    general entry `entry` (`zy_adj_N(block, dy[, out])`, which keeps the adjoint
    inlined in one place), or return None when its gradient is not made of floats and
    float64 arrays."""
    plan = fast_plan(t.ret)
    if plan is None or t.argtypes[2] != FLOAT64:
        return None
    nfloat, narray = plan.count("float"), plan.count("array")
    params = [I64, F64] + [PTR] * ((nfloat > 0) + narray)
    fn = L.Function(mg.module, L.FunctionType(I64, params), f"zy_adjf_{mg.uid}")
    b = L.IRBuilder(fn.append_basic_block("entry"))
    headp = symbols.arena_head_ptr(b)
    mark = b.load(headp, typ=PTR)
    leaves = out_leaves(t.ret)
    args = [b.inttoptr(fn.args[0], PTR), fn.args[1]]
    direct = len(leaves) == 0 or (len(leaves) == 1 and leaves[0][1] == FLOAT64)  # by value
    out = None if direct else b.alloca(out_struct(t.ret))
    r = b.call(entry, args + ([] if direct else [out]))
    status = b.load(symbols.errinfo_ptr(b), typ=I64)
    ok, failed = fn.append_basic_block("ok"), fn.append_basic_block("failed")
    b.cbranch(b.icmp_signed("==", status, L.Constant(I64, 0)), ok, failed)
    b.position_at_end(failed)
    _release(mg, b, mark)
    b.ret(L.Constant(I64, 0))
    b.position_at_end(ok)
    if direct:
        parts = [r] if leaves else []
    else:
        flat = out_struct(t.ret)
        parts = [b.load(b.gep(out, [L.Constant(I32, 0), L.Constant(I32, k)],
                              source_etype=flat), typ=flat.elements[k])
                 for k in range(len(leaves))]
    bad = _store_leaves(b, parts, [leaf for _, leaf in leaves], fn.args[2:], nfloat > 0)
    _release(mg, b, mark)
    b.ret(bad)
    return fn


def _store_leaves(b: L.IRBuilder, parts: list, leaves: list, ptrs, floats: bool):
    """Store every float leaf into the float array and copy every gradient array;
    returns the or-ed shape-mismatch flags (i64)."""
    ptrs = list(ptrs)
    fdata = _data(b, ptrs.pop(0)) if floats else None
    copy_t = L.FunctionType(I64, [PTR, PTR, I64, I64, I64, I64, I64])
    copy = runtime_callee("zy_copy_grad", copy_t)
    bad, k = L.Constant(I64, 0), 0
    for v, leaf in zip(parts, leaves):
        if leaf == FLOAT64:
            b.store(v, b.gep(fdata, [L.Constant(I64, k)], source_etype=F64))
            k += 1
            continue
        fields = [b.extract_value(v, i) for i in range(5)]
        n1, s1 = (fields[2], fields[4]) if leaf.ndim == 2 else (L.Constant(I64, 1),
                                                               L.Constant(I64, 0))
        r = b.call(copy, [ptrs.pop(0), fields[0], fields[1], n1, fields[3], s1,
                          L.Constant(I64, leaf.ndim)])
        bad = b.or_(bad, r)
    return bad


def _data(b: L.IRBuilder, obj) -> L.Value:
    p = b.gep(obj, [L.Constant(I64, DATA_OFF)], source_etype=L.IntType(8))
    return b.load(p, typ=PTR)


__all__ = ["build_fast_adjoint_entry", "copy_grad_address", "copy_strided_address", "fast_plan"]
