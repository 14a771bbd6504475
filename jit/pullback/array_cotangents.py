"""Type rules and LLVM lowering of the array cotangent primitives of adjoint IR (see
adjoint/tape.py for their Python semantics).

An array cotangent is an array value whose data pointer may be NULL: that is the
`None` cotangent (`jit.codegen.function.zero_of`), so a phi joining `None` with an array
needs no boxing.  Cotangent arrays are allocated on first write (`accum_index` of
NULL allocates zeros of the primal's shape) and updated in place afterwards, as the
interpreter does; returned gradients are copied into numpy memory by the entry
(a NULL comes back as None, which the API turns into zeros).

    accum_index(s, dy, x, i...)  s[i] += dy   (array s of x's shape; or a tuple
                                               cotangent with a constant index)
    take_index(s, i...)          s[i]          (0.0 when s is NULL)
    zero_index(s, i...)          s[i] = 0      (nothing when s is NULL)
    snapshot(x)                  a copy of an array the forward writes into later
    zero(x) / accum(a, b)        on arrays: zeros of x's shape / a fresh a + b
    unbcast(dy, x)               dy summed to x's shape (same shape, or to a float)
"""
from __future__ import annotations

from llvmlite import ir as L


from jit.codegen.function import F64, I64, FunctionGen, codegen, lltype, zero_of
from jit.runtime.host_calls import slot_count
from jit.pullback.array_values import (_copy_or_null, _fill_zero, _null, add_into,
                                        add_into_nd, copy_array, copy_value,
                                        ensure_array)
from jit.pullback.cotangents import accum_type, accum_values, cotangent_type
from jit.codegen.arrays import (
    ZERO,
    allocate_words,
    count_loop,
    element_pointer,
    index_operands,
    itemsize,
    load_element,
    make_array,
    shape,
    store_element,
    stride,
    stride_of,
    sub_array,
)
from jit.library.index_plans import SliceT
from jit.library.slicing import slice_bounds
from jit.typing.infer import Context, LiteralT, rule
from jit.typing.primitives import index_types
from jit.types import (FLOAT64, INT64, NONE, ArrayT, BuiltListT, ClosureT, DictT, TupleT, Type,
                       count_held, is_float, is_float_dtype_array, is_int_like, is_numeric,
                       known_string)

ONE = L.Constant(I64, 1)


def _indices_ok(ctx: Context, x: ArrayT, idx: list) -> int:
    if not all(is_int_like(i) for i in idx) or len(idx) > x.ndim:
        ctx.fail(f"cotangent index {', '.join(map(str, idx))} into {x} is not supported")
    return x.ndim - len(idx)


@rule("accum_index")
def _t_accum_index(ctx: Context, s, ts) -> Type:
    acc, dy, x = ts[0], ts[1], ts[2]
    if isinstance(x, TupleT):
        return _tuple_accum_type(ctx, s, acc, dy, x)
    if isinstance(x, BuiltListT):
        return _list_accum_type(ctx, s, acc, dy, x)
    if x == NONE and acc == NONE:
        return NONE     # (an entry of None, on a path never taken: no cotangent)
    if not is_float_dtype_array(x):
        ctx.fail(f"accum_index into the cotangent of a {x} is not supported")
    if acc != NONE and acc != x:
        ctx.fail(f"accum_index into a {acc} for a {x}")
    rest = _indices_ok(ctx, x, index_types(ctx, ts[3:]))
    want = x.dtype if rest == 0 else ArrayT(x.dtype, rest)
    # (an element's cotangent of another number type is taken in the array's dtype)
    if dy != NONE and dy != want and not (rest == 0 and is_numeric(dy)):
        ctx.fail(f"accum_index of a {dy} into an element of type {want}")
    return x


def _tuple_accum_type(ctx: Context, s, acc: Type, dy: Type, x: TupleT) -> Type:
    k = _position(x, known_string(ctx.type_of(s.args[3]), ctx.const(s.args[3])))
    parts = list(acc.elems) if isinstance(acc, TupleT) else [NONE] * len(x.elems)
    if len(s.args) == 4 and k is None and is_int_like(ctx.type_of(s.args[3])) \
            and all(e == FLOAT64 for e in x.elems) and dy in (FLOAT64, NONE):
        return TupleT((FLOAT64,) * len(x.elems))  # a variable index: a select per slot
    if len(s.args) == 4 and k is None and is_int_like(ctx.type_of(s.args[3])) and x.elems \
            and all(e == x.elems[0] for e in x.elems):
        try:         # a homogeneous tuple (the layers of a network): a branch per slot
            return TupleT(tuple(accum_type(p, dy) for p in parts))
        except TypeError as e:
            ctx.fail(str(e))
    if len(s.args) != 4 or not isinstance(k, int) or not -len(x.elems) <= k < len(x.elems):
        ctx.fail("accum_index into a tuple cotangent needs one constant index (or a "
                 "tuple of floats)")
    try:
        parts[k] = accum_type(parts[k], dy)
    except TypeError as e:
        ctx.fail(str(e))
    return TupleT(tuple(parts))


def _list_accum_type(ctx: Context, s, acc: Type, dy: Type, x: BuiltListT) -> Type:
    """s[i] += dy into the cotangent of a built list (a built list of its entries')."""
    want = cotangent_type(x)
    raw = ts_of(ctx, s.args[3:])
    idx = index_types(ctx, raw)
    if len(raw) == 1 and isinstance(raw[0], SliceT) and want != NONE and acc in (NONE, want):
        if dy != NONE and not (isinstance(dy, BuiltListT) and accum_ok(want.elem, dy.elem)):
            ctx.fail(f"accum_index of a {dy} into a slice of the cotangent of a {x}")
        return want        # (see _slice_accum)
    if len(idx) != 1 or not is_int_like(idx[0]) or want == NONE or acc not in (NONE, want):
        ctx.fail(f"accum_index into the cotangent of a {x} by {idx} is not compiled")
    try:
        accum_type(want.elem, dy)
    except TypeError as e:
        ctx.fail(str(e))
    return want


def accum_ok(a: Type, b: Type) -> bool:
    """Whether cotangents of types `a` and `b` can be added into an `a`."""
    try:
        return accum_type(a, b) == a
    except TypeError:
        return False


def ts_of(ctx: Context, operands: list) -> list:
    return [ctx.type_of(a) for a in operands]


def _cg_list_accum(fc: FunctionGen, s, ts):
    """s[i] += dy for a built list's cotangent s (entries of zeros when s is None)."""
    b = fc.b
    want, dy_t = s.type, ts[1]
    et = lltype(want.elem)
    x = fc.get(s.args[2])
    n = b.extract_value(x, 1)
    acc = fc.get(s.args[0], want) if ts[0] != NONE else zero_of(want)
    slot = fc.alloca(lltype(want))
    b.store(acc, slot)
    with b.if_then(_null(fc, acc), likely=False):
        fresh = allocate_words(fc, b.mul(n, L.Constant(I64, 8 * slot_count(want.elem))))
        count_loop(fc, n, lambda j: b.store(zero_of(want.elem),
                                            b.gep(fresh, [j], source_etype=et)))
        made = L.Constant(lltype(want), L.Undefined)
        for k, v in enumerate((fresh, n, n)):
            made = b.insert_value(made, v, k)
        b.store(made, slot)
    acc = b.load(slot, typ=lltype(want))
    if dy_t == NONE:
        return acc
    if isinstance(ts[3], SliceT):
        _slice_accum(fc, acc, fc.get(s.args[1]), ts[3], fc.get(s.args[3]), want.elem, dy_t.elem)
        return acc
    i = index_operands(fc, s.args[3:])[0]
    j = b.select(b.icmp_signed("<", i, ZERO), b.add(i, n), i)
    fc.raise_if(b.or_(b.icmp_signed("<", j, ZERO), b.icmp_signed(">=", j, n)), IndexError,
                "list index out of range")
    ptr = b.gep(b.extract_value(acc, 0), [j], source_etype=et)
    b.store(accum_values(fc, b.load(ptr, typ=et), want.elem, fc.get(s.args[1]), dy_t,
                         want.elem), ptr)
    return acc


def _slice_accum(fc: FunctionGen, acc, dy, st: SliceT, sl, elem: Type, dy_elem: Type) -> None:
    """acc[sl] += dy, entry by entry, for a built list's cotangent `acc` and the cotangent
    `dy` of the slice (a built list of its length)."""
    b = fc.b
    et, dt = lltype(elem), lltype(dy_elem)
    start, step, length = slice_bounds(fc, sl, st, b.extract_value(acc, 1))
    m = b.extract_value(dy, 1)
    fc.raise_if(b.icmp_signed("!=", m, length), ValueError,
                "the cotangent of a list slice has {0} entries, the slice {1}", (m, length))
    data, src = b.extract_value(acc, 0), b.extract_value(dy, 0)

    def add(k):
        ptr = b.gep(data, [b.add(start, b.mul(k, step))], source_etype=et)
        v = b.load(b.gep(src, [k], source_etype=dt), typ=dt)
        b.store(accum_values(fc, b.load(ptr, typ=et), elem, v, dy_elem, elem), ptr)
    count_loop(fc, length, add)



@codegen("accum_index")
def _cg_accum_index(fc: FunctionGen, s, ts):
    acc_t, dy_t, x_t = ts[0], ts[1], ts[2]
    if isinstance(x_t, TupleT):
        return _cg_tuple_accum(fc, s, ts)
    if isinstance(x_t, BuiltListT):
        return _cg_list_accum(fc, s, ts)
    if x_t == NONE:
        return fc.get(s.args[0])       # (None, see `_t_accum_index`)
    acc = ensure_array(fc, fc.get(s.args[0]), acc_t, fc.get(s.args[2]), x_t)
    if dy_t == NONE:
        return acc
    valid = s.var.id in fc.ir.meta.get("inbounds", ())   # the forward's own index
    dtype = x_t.dtype
    ptr = element_pointer(fc, acc, index_operands(fc, s.args[3:]), valid, itemsize(dtype))
    if is_numeric(dy_t):
        old = load_element(fc, ptr, dtype)
        store_element(fc, fc.b.fadd(old, fc.get(s.args[1], dtype)), ptr, dtype)
        return acc
    nidx = len(index_types(None, ts[3:]))
    if x_t.ndim - nidx == 1:
        row = make_array(fc, ptr, [shape(fc, acc, nidx)], [stride(fc, acc, nidx)])
        add_into(fc, row, fc.get(s.args[1]), dtype)
    else:
        add_into_nd(fc, sub_array(fc, acc, ptr, nidx, x_t.ndim), fc.get(s.args[1]),
                    x_t.ndim - nidx, dtype)
    return acc


def _position(x: TupleT, k):
    """A constant index into a tuple cotangent: a dict's key is its value's position (the
    cotangent of a dict is the tuple of its values' cotangents, in key order)."""
    return x.index(k) if isinstance(x, DictT) else k


def _cg_tuple_accum(fc: FunctionGen, s, ts):
    acc_t, dy_t = ts[0], ts[1]
    k = ts[3].value if isinstance(ts[3], LiteralT) and type(ts[3].value) is int else \
        known_string(ts[3], getattr(s.args[3], "value", None))   # (a position the types fix)
    k = _position(ts[2], k)
    if not isinstance(k, int):
        return _cg_tuple_accum_var(fc, s, ts)
    k = k % len(ts[2].elems)
    acc = fc.get(s.args[0])
    if isinstance(acc_t, TupleT) and all(a == w for i, (a, w) in
                                         enumerate(zip(acc_t.elems, s.type.elems)) if i != k):
        # the other entries keep their types: only entry k changes (one extract and
        # one insert, not a rebuild of the whole tuple at every write)
        part_t = acc_t.elems[k]
        part = fc.b.extract_value(acc, k) if part_t != NONE else None
        v = accum_values(fc, part, part_t, fc.get(s.args[1]), dy_t, s.type.elems[k])
        if lltype(acc_t) != lltype(s.type):
            acc = _retyped(fc, acc, acc_t, s.type, k)
        return fc.b.insert_value(acc, v, k)
    out = L.Constant(lltype(s.type), L.Undefined)
    for i, want in enumerate(s.type.elems):
        part_t = acc_t.elems[i] if isinstance(acc_t, TupleT) else NONE
        part = fc.b.extract_value(acc, i) if part_t != NONE else None
        if i == k:
            v = accum_values(fc, part, part_t, fc.get(s.args[1]), dy_t, want)
        else:
            v = accum_values(fc, part, part_t, None, NONE, want)
        out = fc.b.insert_value(out, v, i)
    return out


def _retyped(fc: FunctionGen, acc, acc_t: TupleT, want: TupleT, k: int):
    """Tuple `acc` as a value of `want`, which differs from its type at entry `k` only
    (that entry left undefined)."""
    out = L.Constant(lltype(want), L.Undefined)
    for i in range(len(want.elems)):
        if i != k:
            out = fc.b.insert_value(out, fc.b.extract_value(acc, i), i)
    return out


def _cg_tuple_accum_var(fc: FunctionGen, s, ts):
    """s[i] += dy for a variable i into a tuple of floats: one select per slot."""
    acc_t, dy_t, n = ts[0], ts[1], len(ts[2].elems)
    b = fc.b
    i = fc.get(s.args[3], INT64)
    i = b.select(b.icmp_signed("<", i, ZERO), b.add(i, L.Constant(I64, n)), i)
    fc.raise_if(b.or_(b.icmp_signed("<", i, ZERO), b.icmp_signed(">=", i, L.Constant(I64, n))),
                IndexError, "tuple index out of range")
    if any(e != FLOAT64 for e in s.type.elems):
        if _one_slot_type(ts[0], s.type):
            return _cg_tuple_accum_slot(fc, s, ts, i)
        return _cg_tuple_accum_branches(fc, s, ts, i)
    acc = fc.get(s.args[0])
    dy = fc.get(s.args[1], FLOAT64) if dy_t != NONE else L.Constant(F64, 0.0)
    out = L.Constant(lltype(s.type), L.Undefined)
    for k in range(n):
        part_t = acc_t.elems[k] if isinstance(acc_t, TupleT) else NONE
        old = fc.convert(b.extract_value(acc, k), part_t, FLOAT64) if part_t != NONE \
            else L.Constant(F64, 0.0)
        hit = b.icmp_signed("==", i, L.Constant(I64, k))
        out = b.insert_value(out, b.select(hit, b.fadd(old, dy), old), k)
    return out


def _one_slot_type(acc_t: Type, out_t: TupleT) -> bool:
    """Do every slot of the cotangent, before and after, have one type (before: that
    type, or all none)?"""
    want = out_t.elems[0] if out_t.elems else NONE
    parts = acc_t.elems if isinstance(acc_t, TupleT) else (NONE,)
    return want != NONE and all(e == want for e in out_t.elems) and \
        all(p == parts[0] for p in parts) and parts[0] in (NONE, want)


def _cg_tuple_accum_slot(fc: FunctionGen, s, ts, i) -> L.Value:
    """s[i] += dy for a variable i into a tuple whose slots share one type (a list
    argument of arrays): the slots go to memory, the one at i is summed there, once,
    and the tuple is read back.  (A branch per slot, each with its own copy of the
    sum, made LLVM's work grow with the length times the size of the sum.)"""
    acc_t, dy_t = ts[0], ts[1]
    want = s.type.elems[0]
    part_t = acc_t.elems[0] if isinstance(acc_t, TupleT) else NONE
    b, n, ty = fc.b, len(s.type.elems), lltype(want)
    slots = fc.alloca(L.ArrayType(ty, n))
    acc = fc.get(s.args[0]) if part_t != NONE else None
    for k in range(n):
        v = b.extract_value(acc, k) if part_t != NONE else zero_of(want)
        b.store(v, b.gep(slots, [ZERO, L.Constant(I64, k)]))
    ptr = b.gep(slots, [ZERO, i])
    old = b.load(ptr, typ=ty) if part_t != NONE else None
    dy = fc.get(s.args[1]) if dy_t != NONE else None
    b.store(accum_values(fc, old, part_t, dy, dy_t, want), ptr)
    out = L.Constant(lltype(s.type), L.Undefined)
    for k in range(n):
        out = b.insert_value(out, b.load(b.gep(slots, [ZERO, L.Constant(I64, k)]), typ=ty), k)
    return out


def _cg_tuple_accum_branches(fc: FunctionGen, s, ts, i) -> L.Value:
    """s[i] += dy for a variable i into a homogeneous tuple of arrays or tuples: each
    slot is its old value, or (in a branch taken when i is its index) the sum."""
    acc_t, dy_t = ts[0], ts[1]
    b = fc.b
    acc = fc.get(s.args[0]) if isinstance(acc_t, TupleT) else None
    dy = fc.get(s.args[1]) if dy_t != NONE else None
    out = L.Constant(lltype(s.type), L.Undefined)
    for k, want in enumerate(s.type.elems):
        part_t = acc_t.elems[k] if isinstance(acc_t, TupleT) else NONE
        old = b.extract_value(acc, k) if part_t != NONE else None
        kept = accum_values(fc, old, part_t, None, NONE, want)
        before = b.block
        with b.if_then(b.icmp_signed("==", i, L.Constant(I64, k))):
            added = accum_values(fc, old, part_t, dy, dy_t, want)
            after = b.block
        slot = b.phi(lltype(want))
        slot.add_incoming(added, after)
        slot.add_incoming(kept, before)
        out = b.insert_value(out, slot, k)
    return out


def _whole(ctx_or_s, s=None) -> bool:
    """Is this `take_index` / `zero_index` of the whole array (`s[...]`)?"""
    st = s if s is not None else ctx_or_s
    return len(st.args) == 2 and getattr(st.args[1], "value", None) is Ellipsis


@rule("take_index")
def _t_take_index(ctx: Context, s, ts) -> Type:
    if ts[0] == NONE:
        return NONE
    if _whole(s) and (is_float_dtype_array(ts[0]) or is_float(ts[0])):
        # s[...] of a number is the number (the path of an in-place update that
        # found an array, typed for a value the JIT knows is a number, never runs)
        return ts[0]
    if not is_float_dtype_array(ts[0]):
        ctx.fail(f"take_index of a {ts[0]} cotangent is not supported")
    rest = _indices_ok(ctx, ts[0], index_types(ctx, ts[1:]))
    if rest:
        ctx.fail("take_index of a row of a cotangent is not supported yet")
    return ts[0].dtype


@codegen("take_index")
def _cg_take_index(fc: FunctionGen, s, ts):
    if ts[0] == NONE:
        return L.Constant(L.IntType(8), 0)
    acc = fc.get(s.args[0])
    b = fc.b
    if _whole(s):
        return acc if is_float(ts[0]) else _copy_or_null(fc, acc, ts[0])
    pre = b.block
    dtype = ts[0].dtype
    with b.if_then(b.not_(_null(fc, acc))):
        v = load_element(fc, element_pointer(fc, acc, index_operands(fc, s.args[1:]),
                                             itemsize=itemsize(dtype)), dtype)
        got = b.block
    out = b.phi(F64)
    out.add_incoming(L.Constant(F64, 0.0), pre)
    out.add_incoming(v, got)
    return out


@rule("zero_index")
def _t_zero_index(ctx: Context, s, ts) -> Type:
    if ts[0] == NONE:
        return NONE
    if _whole(s) and (is_float_dtype_array(ts[0]) or is_float(ts[0])):    # as take_index
        return ts[0]
    if not is_float_dtype_array(ts[0]) or _indices_ok(ctx, ts[0], index_types(ctx, ts[1:])):
        ctx.fail(f"zero_index of a {ts[0]} cotangent is not supported")
    return ts[0]


@codegen("zero_index")
def _cg_zero_index(fc: FunctionGen, s, ts):
    if ts[0] == NONE:
        return L.Constant(L.IntType(8), 0)
    if is_float(ts[0]):        # the whole of a number (see _t_take_index)
        return L.Constant(F64, 0.0)
    acc = fc.get(s.args[0])
    with fc.b.if_then(fc.b.not_(_null(fc, acc))):
        if _whole(s):
            _fill_zero(fc, acc, ts[0])
        else:
            dtype = ts[0].dtype
            ptr = element_pointer(fc, acc, index_operands(fc, s.args[1:]),
                                  itemsize=itemsize(dtype))
            store_element(fc, L.Constant(F64, 0.0), ptr, dtype)
    return acc


@rule("snapshot", "contiguous")
def _t_snapshot(ctx: Context, s, ts) -> Type:
    return ts[0]


@codegen("contiguous")
def _cg_contiguous(fc: FunctionGen, s, ts):
    """`x` itself when it is C-contiguous, else `copy_array(x)` (its strides decide)."""
    x = fc.get(s.args[0])
    if not isinstance(ts[0], ArrayT):
        return x
    b = fc.b
    flat, size = L.Constant(L.IntType(1), 1), L.Constant(I64, stride_of(ts[0].dtype))
    for k in reversed(range(ts[0].ndim)):
        one = b.icmp_signed("==", shape(fc, x, k), ONE)
        flat = b.and_(flat, b.or_(one, b.icmp_signed("==", stride(fc, x, k), size)))
        size = b.mul(size, shape(fc, x, k))
    res = fc.alloca(lltype(ts[0]))
    b.store(x, res)
    with b.if_then(b.not_(flat), likely=False):
        b.store(copy_array(fc, x, ts[0]), res)
    return b.load(res, typ=lltype(ts[0]))


@codegen("snapshot")
def _cg_snapshot(fc: FunctionGen, s, ts):
    return copy_value(fc, fc.get(s.args[0]), ts[0])     # (arrays in tuples too)


@codegen("ckpt_copy")     # (its type rule refuses built lists)
def _cg_ckpt_copy(fc: FunctionGen, s, ts):
    return _copy_held(fc, fc.get(s.args[0]), ts[0])


@codegen("ckpt_copy_joint")     # (its type rule allows one array at most)
def _cg_ckpt_copy_joint(fc: FunctionGen, s, ts):
    out = L.Constant(lltype(s.type), L.Undefined)
    for k, (a, t) in enumerate(zip(s.args[1:], ts[1:])):
        out = fc.b.insert_value(out, _copy_held(fc, fc.get(a), t), k)
    return out


def _copy_held(fc: FunctionGen, x, t: Type):
    """`x` with every array it holds (itself, or in its tuples and closures) copied."""
    if isinstance(t, ArrayT):
        return copy_array(fc, x, t)
    parts = t.elems if isinstance(t, TupleT) else t.captured if isinstance(t, ClosureT) else ()
    for k, e in enumerate(parts):
        if count_held(e, ArrayT):
            x = fc.b.insert_value(x, _copy_held(fc, fc.b.extract_value(x, k), e), k)
    return x
