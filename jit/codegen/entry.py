"""The C-ABI entry point of a compiled signature, and the ctypes view of its values.

    <ret> @zy_entry_N(<flattened args>[, ptr %out])

Arguments are flattened to C scalars: float64 -> double, int64 -> i64, bool -> i8, an
array -> the `PyArrayObject*` itself (its data, dimensions and strides are read from
numpy's public struct layout, checked once at import by `layout_ok`), tuples and
closures element by element; None and function constants take no slot.  A
float64/int64/bool/none result is returned directly; anything else is stored through
`%out` into a ctypes structure of the same layout.  The entry calls the function
with depth 0, stores the status in ERRINFO[0] and, unless the result holds arrays,
frees everything the call allocated.
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from llvmlite import ir as L

from jit.runtime import native as runtime
from jit.runtime import symbols
from jit.codegen.function import ARRAY, F64, I8, I32, I64, PTR, ModuleGen, lltype
from jit.codegen.arrays import make_array
from jit.typing.infer import LiteralT, Typing
from jit.types import (BOOL, FLOAT32, FLOAT64, INT32, INT64, INT64_MAX, INT64_MIN, NARROW, NONE,
                       NUMPY_DTYPE, STRINGS, ArrayT, BuiltListT, ClosureT, DictT, FunctionT,
                       ListT, ObjectT, OpaqueT, PartialT, RecordT, StrT, TupleT, Type,
                       TypingError)

# Offsets in numpy's PyArrayObject_fields (64-bit): data, nd, dimensions, strides.
DATA_OFF, DIMS_OFF, STRIDES_OFF = 16, 32, 40


def layout_ok() -> bool:
    """Does this numpy's array struct have the field offsets the entry reads?"""
    a = np.zeros((3, 4))[::2, 1:]
    base = id(a)
    data = ctypes.c_void_p.from_address(base + DATA_OFF).value
    dims = ctypes.POINTER(ctypes.c_int64).from_address(base + DIMS_OFF)
    strides = ctypes.POINTER(ctypes.c_int64).from_address(base + STRIDES_OFF)
    return (data == a.ctypes.data and (dims[0], dims[1]) == a.shape
            and (strides[0], strides[1]) == a.strides)


LAYOUT_OK = layout_ok()


def flat_ctypes(t: Type) -> list:
    """The ctypes of the C parameters an argument of type `t` is flattened into."""
    if t == FLOAT64 or t == FLOAT32:
        return [ctypes.c_double]
    if t == INT64 or t == INT32:
        return [ctypes.c_int64]
    if t == BOOL:
        return [ctypes.c_bool]
    if isinstance(t, (ArrayT, ObjectT)):
        return [ctypes.py_object]
    if isinstance(t, OpaqueT):
        return [ctypes.c_void_p]
    if isinstance(t, TupleT):
        return [c for e in t.elems for c in flat_ctypes(e)]
    if isinstance(t, ClosureT):
        return [c for e in t.captured for c in flat_ctypes(e)]
    return []


_LL_OF_CTYPE = {ctypes.c_double: F64, ctypes.c_int64: I64, ctypes.c_bool: I8,
                ctypes.py_object: PTR, ctypes.c_void_p: PTR}


def is_direct(t: Type) -> bool:
    """Is a result of this type returned by value (not through `out`)?"""
    return t in (FLOAT64, INT64, BOOL, NONE)


def contains_array(t: Type) -> bool:
    if isinstance(t, ArrayT):
        return True
    return isinstance(t, TupleT) and any(contains_array(e) for e in t.elems)


def build_entry(mg: ModuleGen, t: Typing, impl: L.Function) -> L.Function:
    params = [_LL_OF_CTYPE[c] for a in t.argtypes for c in flat_ctypes(a)]
    direct = is_direct(t.ret)
    ret = {FLOAT64: F64, INT64: I64, BOOL: I8}.get(t.ret, L.VoidType())
    if not direct:
        params.append(PTR)
    name = f"zy_entry_{runtime.PROCESS_TAG}_{mg.uid}"
    fn = L.Function(mg.module, L.FunctionType(ret if direct else L.VoidType(), params), name)
    b = L.IRBuilder(fn.append_basic_block("entry"))
    it = iter(fn.args)
    values = [_rebuild(b, a, it) for a in t.argtypes]
    release = mg.allocates and not contains_array(t.ret)
    mark = b.load(symbols.arena_head_ptr(b), typ=PTR) if release else None
    res = b.call(impl, [L.Constant(I64, 0)] + values)
    status = b.extract_value(res, 0)
    out = b.alloca(lltype(t.ret))
    b.store(b.extract_value(res, 1), out)
    errinfo = symbols.errinfo_ptr(b)
    b.store(b.sext(status, I64), errinfo)
    if release:
        _release(mg, b, mark)
    _return(b, t.ret, out, None if direct else fn.args[-1])
    return fn


def _release(mg: ModuleGen, b: L.IRBuilder, mark) -> None:
    from jit.codegen.arrays import runtime_callee
    callee = runtime_callee("zy_release", L.FunctionType(L.VoidType(), [PTR]))
    b.call(callee, [mark])


def out_leaves(t: Type, path: tuple = ()) -> list:
    """(path of element indices, leaf type) for every stored part of a result:
    float64/int64/bool scalars and arrays; none and functions store nothing."""
    if isinstance(t, TupleT):
        return [x for i, e in enumerate(t.elems) for x in out_leaves(e, path + (i,))]
    if t in (FLOAT64, INT64, BOOL, FLOAT32, INT32) or isinstance(t, (ArrayT, StrT)):
        return [(path, t)]
    if isinstance(t, BuiltListT):     # (it lives in the arena, which the call frees)
        raise TypingError("returning a list built in compiled code is not compiled yet "
                          "(return np.array(acc) or tuple(acc))")
    return []


_MEM = {FLOAT64: F64, INT64: I64, BOOL: I8, FLOAT32: F64, INT32: I64}


def out_struct(t: Type) -> L.LiteralStructType:
    """The flat memory layout results are returned in (mirrored by `ctype_of`)."""
    return L.LiteralStructType([lltype(x) if isinstance(x, ArrayT) else _MEM.get(x, I64)
                                for _, x in out_leaves(t)])


def _return(b: L.IRBuilder, ret: Type, out, outp) -> None:
    value = b.load(out, typ=lltype(ret))
    if outp is not None:
        flat = out_struct(ret)
        for k, (path, leaf) in enumerate(out_leaves(ret)):
            v = value
            for i in path:
                v = b.extract_value(v, i)
            if leaf == BOOL:
                v = b.zext(v, I8)
            b.store(v, b.gep(outp, [L.Constant(I32, 0), L.Constant(I32, k)], source_etype=flat))
        b.ret_void()
    elif ret == NONE:
        b.ret_void()
    elif ret == BOOL:
        b.ret(b.zext(value, I8))
    else:
        b.ret(value)


def _rebuild(b: L.IRBuilder, t: Type, it) -> L.Value:
    """The native value of an argument from its flattened C parameters."""
    if t in (FLOAT64, INT64, FLOAT32, INT32) or isinstance(t, (OpaqueT, ObjectT)):
        return next(it)
    if t == BOOL:
        return b.icmp_unsigned("!=", next(it), L.Constant(I8, 0))
    if isinstance(t, ArrayT):
        return _array_from_pyobject(b, next(it), t.ndim)
    if isinstance(t, (TupleT, ClosureT)):
        elems = t.elems if isinstance(t, TupleT) else t.captured
        out = L.Constant(lltype(t), L.Undefined)
        for i, e in enumerate(elems):
            out = b.insert_value(out, _rebuild(b, e, it), i)
        return out
    return L.Constant(I8, 0)


def _array_from_pyobject(b: L.IRBuilder, obj, ndim: int) -> L.Value:
    def at(off):
        return b.load(b.gep(obj, [L.Constant(I64, off)], source_etype=I8), typ=PTR)
    data, dims, strides = at(DATA_OFF), at(DIMS_OFF), at(STRIDES_OFF)
    shapes = [b.load(b.gep(dims, [L.Constant(I64, k)], source_etype=I64), typ=I64)
              for k in range(ndim)]
    steps = [b.load(b.gep(strides, [L.Constant(I64, k)], source_etype=I64), typ=I64)
             for k in range(ndim)]

    class _FC:  # make_array only needs a builder
        pass
    fc = _FC()
    fc.b = b
    return make_array(fc, data, shapes, steps)


# ---------------------------------------------------------------------------
# Python side: ctypes structures for results returned through `out`.

class ArrayStruct(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("shape0", ctypes.c_int64),
                ("shape1", ctypes.c_int64), ("stride0", ctypes.c_int64),
                ("stride1", ctypes.c_int64)]


_ND_STRUCTS: dict = {}


def array_struct(ndim: int) -> Any:
    """The ctypes structure of a native array of `ndim` dimensions."""
    if ndim <= 2:
        return ArrayStruct
    st = _ND_STRUCTS.get(ndim)
    if st is None:
        row = ctypes.c_int64 * ndim
        st = _ND_STRUCTS[ndim] = type(f"Array{ndim}Struct", (ctypes.Structure,), {
            "_fields_": [("data", ctypes.c_void_p), ("shape", row), ("strides", row)]})
    return st


_CTYPES = {FLOAT64: ctypes.c_double, INT64: ctypes.c_int64, BOOL: ctypes.c_bool,
           FLOAT32: ctypes.c_double, INT32: ctypes.c_int64}


def ctype_of(t: Type) -> Any:
    """The ctypes structure of a result returned through `out` (see `out_struct`)."""
    fields = [(f"f{k}", array_struct(x.ndim) if isinstance(x, ArrayT)
               else _CTYPES.get(x, ctypes.c_int64))
              for k, (_, x) in enumerate(out_leaves(t))]
    return type("Result", (ctypes.Structure,), {"_fields_": fields})


def flat_names(name: str, t: Type, strict: bool = False) -> list:
    """Python expressions for the native leaves of argument `name` of type `t`, in the
    entry's parameter order (a closure passes its captured values; a tape its
    address).  `strict`: a type no compiled pullback takes is a TypingError."""
    if isinstance(t, DictT):
        return [x for k, e in zip(t.keys, t.elems) for x in flat_names(f"{name}[{k!r}]", e,
                                                                        strict)]
    if isinstance(t, RecordT):
        return [x for i, e in enumerate(t.elems) for x in flat_names(
            record_entry(name, t, i), e, strict)]
    if isinstance(t, TupleT):
        return [x for i, e in enumerate(t.elems) for x in flat_names(f"{name}[{i}]", e, strict)]
    if isinstance(t, PartialT):
        nargs = len(t.captured) - len(t.keys)
        places = [f"{name}.args[{i}]" for i in range(nargs)] + [
            f"{name}.keywords[{k!r}]" for k in t.keys]
        return [x for p, e in zip(places, t.captured) for x in flat_names(p, e, strict)]
    if isinstance(t, ClosureT):
        return [x for i, e in enumerate(t.captured)
                for x in flat_names(f"{name}.__closure__[{i}].cell_contents", e, strict)]
    if t == NONE or isinstance(t, (FunctionT, LiteralT)):
        return []
    if isinstance(t, OpaqueT):
        return [f"{name}.addr"]
    if strict and not (t in (FLOAT64, INT64, BOOL, FLOAT32, INT32)
                       or isinstance(t, (ArrayT, ObjectT))):
        raise TypingError(f"jit: arguments of type {t} cannot be passed to a compiled pullback")
    return [name]


def range_checks(name: str, t: Type) -> list:
    """Python tests that the int leaves of argument `name` fit in int64."""
    if t == INT64:
        return [f"{INT64_MIN} <= {name} <= {INT64_MAX}"]
    if isinstance(t, DictT):
        return [c for k, e in zip(t.keys, t.elems) for c in range_checks(f"{name}[{k!r}]", e)]
    if isinstance(t, RecordT):
        return [c for i, e in enumerate(t.elems)
                for c in range_checks(record_entry(name, t, i), e)]
    if isinstance(t, TupleT):
        return [c for i, e in enumerate(t.elems) for c in range_checks(f"{name}[{i}]", e)]
    return []


def record_entry(name: str, t: RecordT, i: int) -> str:
    """The Python expression of entry `i` of record `name` (see `jit.types.RecordT`)."""
    if t.is_tuple:
        return f"{name}[{i}]"
    if t.aux is not None or _registered(t):
        return f"__import__('adjoint').pytrees.flatten_registered({name})[0][{t.keys[i]!r}]"
    return f"{name}.{t.keys[i]}"


def _registered(t: RecordT) -> bool:
    from adjoint.pytrees import is_registered_class
    return is_registered_class(t.cls)


def unbox_expr(t: Type, env: dict, counter: list, direct: bool = False) -> str:
    """Python source rebuilding a result of type `t`: from the flat structure `o`, or
    (`direct`) from `r`, the entry's return value."""
    if isinstance(t, RecordT):
        env.setdefault("rebuild", rebuild_record)
        env[f"R{len(env)}"] = t
        name = f"R{len(env) - 1}"
        parts = ", ".join(unbox_expr(e, env, counter, direct) for e in t.elems)
        return f"rebuild({name}, ({parts}{',' if len(t.elems) == 1 else ''}))"
    if isinstance(t, ListT):
        return "[" + ", ".join(unbox_expr(e, env, counter, direct) for e in t.elems) + "]"
    if isinstance(t, DictT):
        return "{" + ", ".join(f"{k!r}: {unbox_expr(e, env, counter, direct)}"
                               for k, e in zip(t.keys, t.elems)) + "}"
    if isinstance(t, TupleT):
        parts = [unbox_expr(e, env, counter, direct) for e in t.elems]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if isinstance(t, LiteralT):  # a constant: no native data
        env[f"L{len(env)}"] = t.value
        return f"L{len(env) - 1}"
    if t == NONE or isinstance(t, FunctionT) or not out_leaves(t):
        return "None"
    k = counter[0]
    counter[0] += 1
    if direct:
        return "r" if t != BOOL else "bool(r)"
    if isinstance(t, ArrayT):
        env[f"T{k}"] = t
        return f"copy_array(o.f{k}, T{k})"
    if isinstance(t, StrT):
        env["STRINGS"] = STRINGS
        return f"STRINGS[o.f{k}]"
    if t in NARROW:      # numpy's scalar type, as numpy returns it
        env[f"N{k}"] = NUMPY_DTYPE[t].type
        return f"N{k}(o.f{k})"
    return f"o.f{k}"


def rebuild_record(t: RecordT, values: tuple) -> Any:
    """An object of record type `t` holding `values` (a result built in compiled code):
    the named tuple, the registered class's `unflatten`, or the object made without
    calling `__init__` (as the API makes a gradient)."""
    from adjoint.pytrees import build_record
    return build_record(t.cls, t.keys, values, t.aux)


def copy_array(s: Any, t: ArrayT) -> np.ndarray:
    """A numpy-owned copy of a native array (native memory is freed after the call)."""
    if not s.data:  # the None cotangent of an array (see jit.pullback.array_cotangents)
        return None
    dtype = NUMPY_DTYPE[t.dtype]
    if t.ndim > 2:
        shape, strides = tuple(s.shape), tuple(s.strides)
    else:
        shape = (s.shape0,) if t.ndim == 1 else (s.shape0, s.shape1)
        strides = (s.stride0,) if t.ndim == 1 else (s.stride0, s.stride1)
    if 0 in shape:
        return np.zeros(shape, dtype)
    lo = sum(min(0, (n - 1) * st) for n, st in zip(shape, strides))
    hi = sum(max(0, (n - 1) * st) for n, st in zip(shape, strides)) + np.dtype(dtype).itemsize
    buf = (ctypes.c_char * (hi - lo)).from_address(s.data + lo)
    view = np.ndarray(shape, dtype, buffer=buf, offset=-lo, strides=strides)
    return view.copy()


__all__ = ["build_entry", "flat_ctypes", "ctype_of", "unbox_expr", "is_direct", "ARRAY",
           "flat_names", "range_checks"]
