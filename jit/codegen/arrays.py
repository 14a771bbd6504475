"""LLVM lowering of tuples and arrays: building and indexing tuples, bounds-checked
array reads and writes (negative indices count from the end, IndexError otherwise),
row views of 2-D arrays, `a.shape`/`a.ndim`/`a.size`, unpacking, and arrays
allocated by compiled code (`np.zeros`, `np.ones`, `np.empty`) through the runtime
arena.

An array value is the struct {data, shape0, shape1, stride0, stride1} (strides in
bytes; a 1-D array leaves the second slots 0); an array of 3 or more dimensions is
{data, [shapes], [strides]} (`nd_array_type`), read through `shape` and `stride`.
"""
from __future__ import annotations

from llvmlite import ir as L

from jit.runtime import symbols
from jit.runtime.symbols import TypedPtr
from jit.codegen.function import (ARRAY, F64, I1, I64, PTR, FunctionGen, codegen,
                                  const_value, lltype, memory_type, nd_array_type)
from jit.typing.infer import LiteralT
from jit.typing.primitives import constant_sequence_type
from jit.types import (BOOL, FLOAT32, INT32, INT64, NARROW, ArrayT, DictT, FunctionT,
                       StrT, TupleT, TypingError, known_string)

ZERO, ONE = L.Constant(I64, 0), L.Constant(I64, 1)


def field(fc: FunctionGen, arr, k: int) -> L.Value:
    return fc.b.extract_value(arr, k)


def shape(fc: FunctionGen, arr, axis: int) -> L.Value:
    if arr.type != ARRAY:          # 3 or more dimensions (`nd_array_type`)
        return fc.b.extract_value(arr, [1, axis])
    return field(fc, arr, 1 + axis)


def stride(fc: FunctionGen, arr, axis: int) -> L.Value:
    if arr.type != ARRAY:
        return fc.b.extract_value(arr, [2, axis])
    return field(fc, arr, 3 + axis)


def index_operands(fc: FunctionGen, args: list) -> list:
    """Index values as int64, whether given as several operands or one tuple."""
    if len(args) == 1 and isinstance(fc.type_of(args[0]), TupleT):
        t = fc.type_of(args[0])
        tup = fc.get(args[0])
        return [fc.convert(fc.b.extract_value(tup, i), e, INT64) for i, e in enumerate(t.elems)]
    return [fc.get(a, INT64) for a in args]


def checked_index(fc: FunctionGen, i, size, axis: int) -> L.Value:
    """Wrap a negative index once and raise IndexError when still out of range."""
    b = fc.b
    neg = b.icmp_signed("<", i, ZERO)
    j = b.select(neg, b.add(i, size), i)
    bad = b.or_(b.icmp_signed("<", j, ZERO), b.icmp_signed(">=", j, size))
    fc.raise_if(bad, IndexError, "index {0} is out of bounds for axis {1} with size {2}",
                (i, L.Constant(I64, axis), size))
    return j


def element_pointer(fc: FunctionGen, arr, idx: list, known_valid: bool = False,
                    itemsize: int = 1, contiguous: bool = False) -> L.Value:
    """Byte address of a[idx...] (len(idx) may be less than ndim: a sub-array).
    `known_valid`: the indices were checked against this shape already (a negative
    one is still wrapped).  `itemsize` 8: the address is counted in 8-byte elements
    (every stride of a float64 or int64 array compiled code sees is a multiple of 8:
    arrays enter aligned, `jit.api`, `jit.runtime.fastcall`), which lets LLVM's loop
    vectoriser version a loop on "stride == 1" and run the vector body on contiguous
    arrays (counted in bytes, that test never holds).  `contiguous`: `arr` is
    C-contiguous with 8-byte elements, so the stride of its last axis is the constant
    8 (a loop over it needs no gather)."""
    b = fc.b
    offset = ZERO
    shift = L.Constant(I64, itemsize.bit_length() - 1)
    for axis, i in enumerate(idx):
        size = shape(fc, arr, axis)
        j = b.select(b.icmp_signed("<", i, ZERO), b.add(i, size), i) if known_valid \
            else checked_index(fc, i, size, axis)
        st = stride(fc, arr, axis)
        if contiguous and axis == len(idx) - 1:
            st = L.Constant(I64, 8)
        offset = b.add(offset, b.mul(j, st if itemsize == 1 else b.ashr(st, shift)))
    return b.gep(field(fc, arr, 0), [offset], inbounds=False,
                 source_etype=L.IntType(8 * itemsize))


def itemsize(dtype) -> int:
    """Bytes per element of a JIT array dtype."""
    return 1 if dtype == BOOL else 4 if dtype in NARROW else 8


def stride_of(dtype) -> int:
    """The element stride of an array compiled code allocates (bools take 8 bytes)."""
    return 4 if dtype in NARROW else 8


def load_element(fc: FunctionGen, ptr, dtype) -> L.Value:
    """An element of `dtype` read from memory into its register (a float32 into a
    double, an int32 into an i64)."""
    v = fc.b.load(ptr, typ=memory_type(dtype))
    if dtype == FLOAT32:
        return fc.b.fpext(v, F64)
    if dtype == INT32:
        return fc.b.sext(v, I64)
    return v


def store_element(fc: FunctionGen, value, ptr, dtype) -> None:
    """Store a register value of `dtype` (already rounded to it) into memory."""
    if dtype == FLOAT32:
        value = fc.b.fptrunc(value, memory_type(dtype))
    elif dtype == INT32:
        value = fc.b.trunc(value, memory_type(dtype))
    fc.b.store(value, ptr)


@codegen("getitem")
def _cg_getitem(fc: FunctionGen, s, ts):
    if isinstance(ts[0], TupleT):
        return _tuple_getitem(fc, s, ts)
    seq = constant_sequence_type(ts[0])
    if seq is not None:     # a list display of numbers held as a constant
        return _tuple_getitem(fc, s, [seq] + list(ts[1:]),
                              const_value(tuple(ts[0].value), seq), "list")
    arr = fc.get(s.args[0])
    idx = index_operands(fc, s.args[1:])
    if s.type == ts[0].dtype:   # a read the adjoint recomputes was in bounds already
        meta = fc.ir.meta
        valid = s.var.id in meta.get("inbounds", ())
        unit = (getattr(s.args[0], "id", None) in meta.get("contiguous", ())
                and len(idx) == ts[0].ndim and itemsize(s.type) == 8)
        return load_element(fc, element_pointer(fc, arr, idx, valid, itemsize(s.type), unit),
                            ts[0].dtype)
    return sub_array(fc, arr, element_pointer(fc, arr, idx), len(idx), ts[0].ndim)


def _tuple_getitem(fc: FunctionGen, s, ts, tup=None, kind: str = "tuple"):
    tup = fc.get(s.args[0]) if tup is None else tup
    n = len(ts[0].elems)
    k = s.args[1]
    kv = getattr(k, "value", None)
    if isinstance(ts[1], LiteralT) and type(ts[1].value) is int:
        kv = ts[1].value                 # a position the types fix
    if isinstance(ts[0], DictT):         # a constant key (see the type rule)
        kv = known_string(ts[1], kv)
        return _entry(fc, tup, ts[0], ts[0].index(kv), s.type)
    if isinstance(kv, int):
        return _entry(fc, tup, ts[0], kv % n if n else 0, s.type)
    elem = lltype(s.type)
    slots = fc.alloca(L.ArrayType(elem, n))
    for m in range(n):
        v = fc.convert(fc.b.extract_value(tup, m), ts[0].elems[m], s.type)
        fc.b.store(v, fc.b.gep(slots, [ZERO, L.Constant(I64, m)]))
    i = fc.get(k, INT64)
    size = L.Constant(I64, n)
    b = fc.b
    j = b.select(b.icmp_signed("<", i, ZERO), b.add(i, size), i)
    bad = b.or_(b.icmp_signed("<", j, ZERO), b.icmp_signed(">=", j, size))
    fc.raise_if(bad, IndexError, f"{kind} index out of range")
    ptr = b.gep(slots, [ZERO, j])
    return b.load(ptr, typ=elem)


def _entry(fc: FunctionGen, tup, t, k: int, want):
    """Entry `k` of a tuple, list or dict value of type `t`, as a value of type `want`.
    A constant of the signature (a str passed in a tuple or as a keyword) has no native
    data: its value is made here, as an object's constant attribute's is."""
    if isinstance(t.elems[k], LiteralT):
        value = t.elems[k].value
        return fc.mg.string_word(value) if isinstance(want, StrT) else \
            L.Constant(lltype(want), None)
    return fc.b.extract_value(tup, k)


@codegen("setitem")
def _cg_setitem(fc: FunctionGen, s, ts):
    arr = fc.get(s.args[0])
    idx = index_operands(fc, s.args[2:])
    ptr = element_pointer(fc, arr, idx, itemsize=itemsize(ts[0].dtype))
    store_element(fc, fc.get(s.args[1], ts[0].dtype), ptr, ts[0].dtype)
    return L.Constant(L.IntType(8), 0)


@codegen("tuple", "list")
def _cg_tuple(fc: FunctionGen, s, ts):
    if isinstance(s.type, LiteralT):      # a list display of constants
        return L.Constant(L.IntType(8), 0)
    out = L.Constant(lltype(s.type), L.Undefined)
    for i, a in enumerate(s.args):
        out = fc.b.insert_value(out, fc.get(a, s.type.elems[i]), i)
    return out


@codegen("dict")
def _cg_dict(fc: FunctionGen, s, ts):
    """The values in key order, each key's last (see the type rule)."""
    last = {a.value: v for a, v in zip(s.args[0::2], s.args[1::2])}
    out = L.Constant(lltype(s.type), L.Undefined)
    for i, (k, t) in enumerate(zip(s.type.keys, s.type.elems)):
        out = fc.b.insert_value(out, fc.get(last[k], t), i)
    return out


@codegen("unpack")
def _cg_unpack(fc: FunctionGen, s, ts):
    if isinstance(ts[0], TupleT):
        return fc.get(s.args[0])
    arr = fc.get(s.args[0])
    n = s.type.elems and len(s.type.elems)
    size = shape(fc, arr, 0)
    fc.raise_if(fc.b.icmp_signed("!=", size, L.Constant(I64, n)), ValueError,
                "cannot unpack an array of length {0} into " + str(n) + " values", (size,))
    out = L.Constant(lltype(s.type), L.Undefined)
    for i in range(n):
        ptr = element_pointer(fc, arr, [L.Constant(I64, i)])
        if ts[0].ndim == 1:
            v = load_element(fc, ptr, ts[0].dtype)
        else:
            v = sub_array(fc, arr, ptr, 1, ts[0].ndim)
        out = fc.b.insert_value(out, v, i)
    return out


@codegen("getattr")
def _cg_getattr(fc: FunctionGen, s, ts):
    if isinstance(s.type, FunctionT):     # a constant object's method: no native value
        return L.Constant(L.IntType(8), 0)
    arr = fc.get(s.args[0])
    name = s.args[1].value
    nd = ts[0].ndim
    if name == "ndim":
        return L.Constant(I64, nd)
    if name == "size":
        size = shape(fc, arr, 0)
        for k in range(1, nd):
            size = fc.b.mul(size, shape(fc, arr, k))
        return size
    field_of = stride if name == "strides" else shape
    out = L.Constant(lltype(s.type), L.Undefined)
    for k in range(nd):
        out = fc.b.insert_value(out, field_of(fc, arr, k), k)
    return out


def sub_array(fc: FunctionGen, arr, ptr, nidx: int, ndim: int) -> L.Value:
    """The view a[i...] (`nidx` indices, `ptr` its first element) of an ndim-D array."""
    return make_array(fc, ptr, [shape(fc, arr, k) for k in range(nidx, ndim)],
                      [stride(fc, arr, k) for k in range(nidx, ndim)])


def make_array(fc: FunctionGen, data, shapes: list, strides: list) -> L.Value:
    if len(shapes) > 2:
        out = L.Constant(nd_array_type(len(shapes)), L.Undefined)
        out = fc.b.insert_value(out, data, 0)
        for k, (n, st) in enumerate(zip(shapes, strides)):
            out = fc.b.insert_value(out, n, [1, k])
            out = fc.b.insert_value(out, st, [2, k])
        return out
    out = L.Constant(ARRAY, L.Undefined)
    out = fc.b.insert_value(out, data, 0)
    for k in range(2):
        out = fc.b.insert_value(out, shapes[k] if k < len(shapes) else ZERO, 1 + k)
        out = fc.b.insert_value(out, strides[k] if k < len(strides) else ZERO, 3 + k)
    return out


def allocate_words(fc: FunctionGen, nbytes) -> L.Value:
    """`nbytes` of arena memory (MemoryError when there are none)."""
    b = fc.b
    fc.mg.allocates = True
    data = b.call(runtime_callee("zy_alloc", L.FunctionType(PTR, [I64])), [nbytes])
    fc.raise_if(b.icmp_unsigned("==", b.ptrtoint(data, I64), ZERO), MemoryError,
                "cannot allocate {0} bytes", (nbytes,))
    return data


def allocate(fc: FunctionGen, dims: list, dtype, fill) -> L.Value:
    """A new C-contiguous array from the arena; `fill` is 0.0/1 or None (empty)."""
    b = fc.b
    total = ONE
    for d in dims:
        fc.raise_if(b.icmp_signed("<", d, ZERO), ValueError,
                    "negative dimensions are not allowed")
        total = b.mul(total, d)
    size = L.Constant(I64, stride_of(dtype))
    nbytes = b.mul(total, size)
    data = allocate_words(fc, b.select(b.icmp_signed("<", nbytes, L.Constant(I64, 8)),
                                       L.Constant(I64, 8), nbytes) if dtype in NARROW else nbytes)
    if fill is not None:
        _fill(fc, data, total, dtype, fill)
    strides = [size]
    for d in reversed(dims[1:]):       # C order
        strides.insert(0, b.mul(d, strides[0]))
    return make_array(fc, data, dims, strides)


def callee_of(ptr: L.Value, fnty: L.FunctionType) -> TypedPtr:
    """A call target at the pointer `ptr` (a symbol of `jit.runtime.symbols`)."""
    return TypedPtr(ptr, fnty)


def runtime_callee(name: str, fnty: L.FunctionType) -> TypedPtr:
    """The runtime's function `name` (`jit.runtime.symbols.RUNTIME`) as a call target."""
    return TypedPtr(symbols.runtime_ptr(name), fnty)


def _fill(fc: FunctionGen, data, total, dtype, fill) -> None:
    b = fc.b
    if fill == 0:
        memset = fc.mg.intrinsic("llvm.memset.p0.i64", L.VoidType(),
                                 [PTR, L.IntType(8), I64, I1])
        b.call(memset, [data, L.Constant(L.IntType(8), 0),
                        b.mul(total, L.Constant(I64, stride_of(dtype))), L.Constant(I1, 0)])
        return
    ty = memory_type(dtype)
    is_float = isinstance(ty, (L.DoubleType, L.FloatType))
    value = L.Constant(ty, float(fill) if is_float else int(fill))
    count_loop(fc, total, lambda i: b.store(value, b.gep(data, [i], source_etype=ty)))


def count_loop(fc: FunctionGen, n, body) -> None:
    """for j in range(n): body(j), emitted at the builder's position."""
    b = fc.b
    head = fc.fn.append_basic_block("loop.head")
    loop = fc.fn.append_basic_block("loop.body")
    done = fc.fn.append_basic_block("loop.done")
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    j = b.phi(I64)
    j.add_incoming(ZERO, pre)
    b.cbranch(b.icmp_signed("<", j, n), loop, done)
    b.position_at_end(loop)
    body(j)
    j.add_incoming(b.add(j, ONE), b.block)
    b.branch(head)
    b.position_at_end(done)


def shape_operands(fc: FunctionGen, operand) -> list:
    t = fc.type_of(operand)
    if t in (INT64, BOOL):
        return [fc.get(operand, INT64)]
    if isinstance(t, TupleT):
        tup = fc.get(operand)
        return [fc.convert(fc.b.extract_value(tup, i), e, INT64) for i, e in enumerate(t.elems)]
    raise TypingError(f"jit: bad shape type {t}")


def array_dtype(s) -> object:
    if not isinstance(s.type, ArrayT):
        raise TypingError("jit: allocation without an array type")
    return s.type.dtype


__all__ = ["allocate", "shape_operands", "array_dtype", "F64", "LiteralT"]
