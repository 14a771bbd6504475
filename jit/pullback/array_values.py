"""LLVM helpers on native float arrays for cotangent code: NULL (the zero cotangent)
tests, element addresses, copies, zero fills and in-place or fresh sums.  Used by the
cotangent primitives (`jit.pullback.cotangents`, `array_cotangents`) and by the
view cotangents of `jit.library.slicing`."""
from __future__ import annotations

from llvmlite import ir as L

from jit.codegen.arrays import (ONE, ZERO, allocate, count_loop, make_array, runtime_callee,
                                shape, stride, stride_of)
from jit.codegen.function import ARRAY, I64, PTR, FunctionGen, lltype, memory_type
from jit.types import FLOAT32, FLOAT64, INT32, INT64, NONE, ArrayT, BuiltListT, TupleT, Type


def _null(fc: FunctionGen, arr) -> L.Value:
    data = fc.b.extract_value(arr, 0)
    return fc.b.icmp_unsigned("==", fc.b.ptrtoint(data, I64), ZERO)


def unless_none(fc: FunctionGen, dy_t: Type, dy, call, ret: Type) -> L.Value:
    """`call()`, or zeros of `ret` when `dy` is an array that is the None cotangent at
    run time (data NULL: nothing reached its value in this iteration), as the
    interpreter's Pullback gives Nones for a None dy."""
    if not isinstance(dy_t, (ArrayT, BuiltListT)):    # (both: data NULL is None)
        return call()
    from jit.codegen.function import zero_of
    b = fc.b
    with b.if_else(_null(fc, dy), likely=False) as (none, some):
        with none:
            zero_block = b.block
        with some:
            g = call()
            call_block = b.block
    out = b.phi(lltype(ret))
    out.add_incoming(zero_of(ret), zero_block)
    out.add_incoming(g, call_block)
    return out


def ensure_array(fc: FunctionGen, s, st: Type, x, xt: ArrayT) -> L.Value:
    """`s` itself, or zeros of `x`'s shape when `s` is the None cotangent."""
    dims = [shape(fc, x, k) for k in range(xt.ndim)]
    dtype = xt.dtype if xt.dtype == FLOAT32 else FLOAT64     # a cotangent's dtype
    if st == NONE:
        return allocate(fc, dims, dtype, 0.0)
    b = fc.b
    pre = b.block
    with b.if_then(_null(fc, s), likely=False):
        fresh = allocate(fc, dims, dtype, 0.0)
        made = b.block
    out = b.phi(lltype(xt))
    out.add_incoming(s, pre)
    out.add_incoming(fresh, made)
    return out


def add_into_nd(fc: FunctionGen, dst, src, ndim: int, dtype: Type = FLOAT64) -> None:
    """dst += src elementwise over arrays of `ndim` dimensions, equal shapes and float
    `dtype` (a NULL src adds nothing)."""
    if ndim == 1:
        return add_into(fc, dst, src, dtype)
    b = fc.b
    dims = [shape(fc, dst, k) for k in range(ndim)]
    for k, n in enumerate(dims):
        fc.raise_if(b.and_(b.not_(_null(fc, src)), b.icmp_signed("!=", n, shape(fc, src, k))),
                    ValueError, "cotangent shapes differ ({0} and {1})", (n, shape(fc, src, k)))
    with b.if_then(b.not_(_null(fc, src))):
        def add(idx):
            _add_to(fc, _elem(fc, dst, idx), _elem(fc, src, idx), dtype)
        nest_loop(fc, dims, add)


def nest_loop(fc: FunctionGen, dims: list, body, idx: tuple = ()) -> None:
    """for i0 in range(dims[0]): for i1 ...: body([i0, i1, ...])."""
    if not dims:
        body(list(idx))
        return
    count_loop(fc, dims[0], lambda j: nest_loop(fc, dims[1:], body, idx + (j,)))


def add_into(fc: FunctionGen, dst, src, dtype: Type = FLOAT64) -> None:
    """dst[j] += src[j] over a 1-D row (a NULL src adds nothing)."""
    n = shape(fc, dst, 0)
    fc.raise_if(fc.b.and_(fc.b.not_(_null(fc, src)), fc.b.icmp_signed("!=", n, shape(fc, src, 0))),
                ValueError, "cotangent shapes differ ({0} and {1})", (n, shape(fc, src, 0)))
    with fc.b.if_then(fc.b.not_(_null(fc, src))):
        count_loop(fc, n, lambda j: _add_to(fc, _elem(fc, dst, [j]), _elem(fc, src, [j]),
                                            dtype))


def _add_to(fc: FunctionGen, pd, ps, dtype: Type) -> None:
    """*pd += *ps for elements of float `dtype` (a float32 sum is float32's own)."""
    b = fc.b
    ty = memory_type(dtype)
    b.store(b.fadd(b.load(pd, typ=ty), b.load(ps, typ=ty)), pd)


def _elem(fc: FunctionGen, arr, idx: list) -> L.Value:
    """Unchecked address of arr[idx...] (indices already in range)."""
    b = fc.b
    off = ZERO
    for axis, i in enumerate(idx):
        off = b.add(off, b.mul(i, stride(fc, arr, axis)))
    return b.gep(b.extract_value(arr, 0), [off], source_etype=L.IntType(8))


def _fill_zero(fc: FunctionGen, arr, t: ArrayT) -> None:
    zero = L.Constant(memory_type(t.dtype), 0.0)
    nest_loop(fc, [shape(fc, arr, k) for k in range(t.ndim)],
              lambda idx: fc.b.store(zero, _elem(fc, arr, idx)))


def _copy_or_null(fc: FunctionGen, arr, t: ArrayT) -> L.Value:
    if t.dtype == FLOAT64 and t.ndim <= 2:      # (a zero plus `arr`)
        return _runtime_sum(fc, L.Constant(ARRAY, [L.Constant(PTR, None)] + [ZERO] * 4), arr, t)
    res = fc.alloca(lltype(t))
    fc.b.store(arr, res)
    with fc.b.if_then(fc.b.not_(_null(fc, arr))):
        fc.b.store(copy_array(fc, arr, t), res)
    return fc.b.load(res, typ=lltype(t))


def copy_array(fc: FunctionGen, x, t: ArrayT) -> L.Value:
    """A C-contiguous copy of `x` (arena memory): one memcpy when `x` is C-contiguous
    too, else a call of the runtime's `zy_copy_strided` (`jit.runtime.gradient_entry`:
    1-D and 2-D arrays of 8-byte elements) or element by element."""
    if t.dtype == FLOAT64 and t.ndim <= 2:
        return _copy_or_null(fc, x, t)
    b = fc.b
    dims = [shape(fc, x, k) for k in range(t.ndim)]
    out = allocate(fc, dims, t.dtype, None)
    contiguous, size = L.Constant(L.IntType(1), 1), L.Constant(I64, stride_of(t.dtype))
    for k in reversed(range(t.ndim)):
        same = b.icmp_signed("==", stride(fc, x, k), stride(fc, out, k))
        contiguous = b.and_(contiguous, same)
        size = b.mul(size, dims[k])
    if t.dtype not in (FLOAT64, INT64, FLOAT32, INT32):   # bools take 8 bytes here, 1 there
        contiguous = L.Constant(L.IntType(1), 0)
    with b.if_else(contiguous) as (flat, strided):
        with flat:
            memcpy = fc.mg.intrinsic("llvm.memcpy.p0.p0.i64", L.VoidType(),
                                     [PTR, PTR, I64, L.IntType(1)])
            b.call(memcpy, [b.extract_value(out, 0), b.extract_value(x, 0), size,
                            L.Constant(L.IntType(1), 0)])
        with strided:
            if t.dtype in (FLOAT64, INT64) and t.ndim <= 2:
                fnty = L.FunctionType(L.VoidType(), [PTR, PTR, I64, I64, I64, I64])
                n1, s1 = (dims[1], stride(fc, x, 1)) if t.ndim == 2 else (ONE, ZERO)
                b.call(runtime_callee("zy_copy_strided", fnty),
                       [b.extract_value(out, 0), b.extract_value(x, 0), dims[0], n1,
                        stride(fc, x, 0), s1])
            else:
                nest_loop(fc, dims, lambda idx: _copy_at(fc, out, x, idx, t))
    return out


def copy_value(fc: FunctionGen, v, t: Type) -> L.Value:
    """LLVM value `v` of type `t` with every array in it copied (`copy_array`), in
    tuples too (and the lists and dicts typed by entry): a snapshot, a value of
    `stop_gradient`."""
    if isinstance(t, ArrayT):
        return copy_array(fc, v, t)
    if isinstance(t, TupleT) and _holds_array(t):
        out = v
        for i, e in enumerate(t.elems):
            out = fc.b.insert_value(out, copy_value(fc, fc.b.extract_value(v, i), e), i)
        return out
    return v


def _holds_array(t: Type) -> bool:
    if isinstance(t, ArrayT):
        return True
    return isinstance(t, TupleT) and any(_holds_array(e) for e in t.elems)


def _copy_at(fc: FunctionGen, dst, src, idx: list, t: ArrayT) -> None:
    ty = memory_type(t.dtype)
    fc.b.store(fc.b.load(_elem(fc, src, idx), typ=ty), _elem(fc, dst, idx))


def add_arrays(fc: FunctionGen, a, b_, t: ArrayT) -> L.Value:
    """A fresh array a + b (same shapes; a NULL side is a zero)."""
    if t.dtype == FLOAT64 and t.ndim <= 2:
        return _runtime_sum(fc, a, b_, t)
    b = fc.b
    res = fc.alloca(lltype(t))
    b.store(a, res)
    with b.if_else(_null(fc, a)) as (a_null, a_ok):
        with a_null, b.if_then(b.not_(_null(fc, b_))):
            b.store(copy_array(fc, b_, t), res)
        with a_ok, b.if_then(b.not_(_null(fc, b_))):
            b.store(_sum_of(fc, a, b_, t), res)
    return b.load(res, typ=lltype(t))


def _runtime_sum(fc: FunctionGen, a, b_, t: ArrayT) -> L.Value:
    """`add_arrays` of float64 arrays of 1 or 2 dimensions, as a call of the runtime's
    `zy_accum_f64` (`jit.runtime.array_sums`) through three slots of this function's
    frame; its errors are raised here, at this statement."""
    b = fc.b
    slots = getattr(fc, "sum_slots", None)
    if slots is None:
        slots = fc.sum_slots = [fc.alloca(ARRAY) for _ in range(3)]
    res, pa, pb = slots
    b.store(a, pa)
    b.store(b_, pb)
    fnty = L.FunctionType(I64, [PTR, PTR, PTR, I64])
    status = b.call(runtime_callee("zy_accum_f64", fnty), [res, pa, pb, L.Constant(I64, t.ndim)])
    with b.if_then(b.icmp_signed("!=", status, ZERO), likely=False):
        axis = b.select(b.icmp_signed("!=", shape(fc, a, 0), shape(fc, b_, 0)), ZERO, ONE)
        n, m = (b.select(b.icmp_signed("==", axis, ZERO), shape(fc, x, 0), shape(fc, x, 1))
                for x in (a, b_))
        fc.raise_if(b.icmp_signed("==", status, ONE), ValueError,
                    "cotangent shapes differ ({0} and {1})", (n, m))
        fc.raise_if(L.Constant(L.IntType(1), 1), MemoryError, "cannot allocate memory for a cotangent")
    return b.load(res, typ=ARRAY)


def _sum_of(fc: FunctionGen, a, b_, t: ArrayT) -> L.Value:
    """A fresh C-contiguous a + b of two arrays that are not NULL, in one pass (a copy
    then an add in place would go over the memory twice)."""
    b = fc.b
    dims = [shape(fc, a, k) for k in range(t.ndim)]
    for k, n in enumerate(dims):
        fc.raise_if(b.icmp_signed("!=", n, shape(fc, b_, k)), ValueError,
                    "cotangent shapes differ ({0} and {1})", (n, shape(fc, b_, k)))
    out = allocate(fc, dims, t.dtype, None)
    ty = memory_type(t.dtype)      # (a float32 sum rounded once: numpy's)

    def add(idx):
        total = b.fadd(b.load(_elem(fc, a, idx), typ=ty), b.load(_elem(fc, b_, idx), typ=ty))
        b.store(total, _elem(fc, out, idx))
    nest_loop(fc, dims, add)
    return out


def _row(fc: FunctionGen, arr, i) -> L.Value:
    ptr = _elem(fc, arr, [i])
    return make_array(fc, ptr, [shape(fc, arr, 1)], [stride(fc, arr, 1)])


def zeros_like(fc: FunctionGen, x, t: ArrayT) -> L.Value:
    return allocate(fc, [shape(fc, x, k) for k in range(t.ndim)], t.dtype, 0.0)


def check_same_shape(fc: FunctionGen, dy, x, ndim: int) -> None:
    """unbcast of an array to an array: only equal shapes are compiled."""
    b = fc.b
    for k in range(ndim):
        bad = b.and_(b.not_(_null(fc, dy)), b.icmp_signed("!=", shape(fc, dy, k), shape(fc, x, k)))
        fc.raise_if(bad, ValueError, "compiled unbroadcast of a cotangent of shape {0} "
                    "to {1} along axis {2} (broadcasting is not compiled)",
                    (shape(fc, dy, k), shape(fc, x, k), L.Constant(I64, k)))
