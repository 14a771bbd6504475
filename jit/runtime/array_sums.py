"""`zy_accum_f64`: the sum of two float64 cotangent arrays, written in LLVM IR and
compiled once per process, that compiled adjoints call rather than inline.

    i64 zy_accum_f64(ptr res, ptr a, ptr b, i64 ndim)

`a`, `b` and `res` point to native 1-D or 2-D arrays ({data, n0, n1, s0, s1}; a 1-D
array has n1 = s1 = 0), and a NULL data pointer is the zero cotangent.  `res` gets:
  * `a` itself when `b` is NULL (NULL too when both are);
  * a new C-contiguous copy of `b` when only `a` is NULL (`zy_copy_c` of
    `jit.runtime.gradient_entry`: one memcpy when `b` is C-contiguous);
  * a new C-contiguous `a + b` otherwise (one pass, any strides).
New memory comes from the arena (`zy_alloc`, called through its symbol as compiled
code calls it).  The result is 0, or 1 when the shapes
differ, or 2 when no memory is left; the caller raises the error at its own site
(`jit.pullback.array_values.add_arrays`).  Inlined, the same code was about 150
instructions at every addition of two array cotangents, a seventh of a large
gradient's module.
"""
from __future__ import annotations

from jit.runtime import native

_SUM_IR = r"""
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

define i64 @zy_accum_f64(ptr %res, ptr %a, ptr %b, i64 %nd) {
entry:
  %ad = load ptr, ptr %a
  %bd = load ptr, ptr %b
  %bnull = icmp eq ptr %bd, null
  br i1 %bnull, label %take_a, label %have_b
take_a:
  call void @llvm.memcpy.p0.p0.i64(ptr %res, ptr %a, i64 40, i1 false)
  ret i64 0
have_b:
  %bn0p = getelementptr i8, ptr %b, i64 8
  %bn0 = load i64, ptr %bn0p
  %bn1p = getelementptr i8, ptr %b, i64 16
  %bn1 = load i64, ptr %bn1p
  %bs0p = getelementptr i8, ptr %b, i64 24
  %bs0 = load i64, ptr %bs0p
  %bs1p = getelementptr i8, ptr %b, i64 32
  %bs1 = load i64, ptr %bs1p
  %two = icmp eq i64 %nd, 2
  %cols = select i1 %two, i64 %bn1, i64 1
  %anull = icmp eq ptr %ad, null
  br i1 %anull, label %shaped, label %check
check:
  %an0p = getelementptr i8, ptr %a, i64 8
  %an0 = load i64, ptr %an0p
  %an1p = getelementptr i8, ptr %a, i64 16
  %an1 = load i64, ptr %an1p
  %d0 = icmp ne i64 %an0, %bn0
  %d1 = icmp ne i64 %an1, %bn1
  %d = or i1 %d0, %d1
  br i1 %d, label %differ, label %shaped
differ:
  ret i64 1
shaped:
  %cells = mul i64 %bn0, %cols
  %bytes = mul i64 %cells, 8
  %out = call ptr @"zy.rt.zy_alloc"(i64 %bytes)
  %oom = icmp eq ptr %out, null
  br i1 %oom, label %nomem, label %made
nomem:
  ret i64 2
made:
  store ptr %out, ptr %res
  %rn0p = getelementptr i8, ptr %res, i64 8
  store i64 %bn0, ptr %rn0p
  %rn1p = getelementptr i8, ptr %res, i64 16
  store i64 %bn1, ptr %rn1p
  %rowbytes = mul i64 %bn1, 8
  %rs0 = select i1 %two, i64 %rowbytes, i64 8
  %rs0p = getelementptr i8, ptr %res, i64 24
  store i64 %rs0, ptr %rs0p
  %rs1 = select i1 %two, i64 8, i64 0
  %rs1p = getelementptr i8, ptr %res, i64 32
  store i64 %rs1, ptr %rs1p
  br i1 %anull, label %copy, label %sum_start
copy:
  call void @"zy.rt.zy_copy_c"(ptr %out, ptr %bd, i64 %bn0, i64 %cols, i64 %bs0, i64 %bs1)
  ret i64 0
sum_start:
  %as0p = getelementptr i8, ptr %a, i64 24
  %as0 = load i64, ptr %as0p
  %as1p = getelementptr i8, ptr %a, i64 32
  %as1 = load i64, ptr %as1p
  %none = icmp slt i64 %cols, 1
  br i1 %none, label %done, label %rows
rows:
  %i = phi i64 [ 0, %sum_start ], [ %i2, %row_end ]
  %more = icmp slt i64 %i, %bn0
  br i1 %more, label %row, label %done
row:
  %arow = mul i64 %i, %as0
  %brow = mul i64 %i, %bs0
  %orow = mul i64 %i, %cols
  br label %cell
cell:
  %j = phi i64 [ 0, %row ], [ %j2, %cell ]
  %aoff0 = mul i64 %j, %as1
  %aoff = add i64 %arow, %aoff0
  %ap = getelementptr i8, ptr %ad, i64 %aoff
  %av = load double, ptr %ap
  %boff0 = mul i64 %j, %bs1
  %boff = add i64 %brow, %boff0
  %bp = getelementptr i8, ptr %bd, i64 %boff
  %bv = load double, ptr %bp
  %sum = fadd double %av, %bv
  %k = add i64 %orow, %j
  %op = getelementptr double, ptr %out, i64 %k
  store double %sum, ptr %op
  %j2 = add i64 %j, 1
  %rowmore = icmp slt i64 %j2, %cols
  br i1 %rowmore, label %cell, label %row_end
row_end:
  %i2 = add i64 %i, 1
  br label %rows
done:
  ret i64 0
}
"""


def accum_address() -> int:
    """The address of `zy_accum_f64` (compiled once; the runtime functions it calls
    are bound as symbols first, as in every module that calls them)."""
    from jit.runtime import symbols
    symbols.runtime_ptr("zy_alloc")
    symbols.runtime_ptr("zy_copy_c")
    return native.compiled_once(_SUM_IR, "zy_accum_f64")
