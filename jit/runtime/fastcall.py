"""Native call wrappers for scalar signatures: a METH_FASTCALL builtin whose C body
is LLVM IR, so `f(x, y)` on floats and ints costs no ctypes marshalling.

For a compiled function whose arguments and result are float64 / int64, the
wrapper built here (`emit_wrapper` into the function's module, then `builtin`) does,
natively:
  1. check the argument count and each argument's exact class (`float`: read
     `ob_fval`; `int`: PyLong_AsLongLongAndOverflow, an int beyond int64 is slow);
  2. call the compiled entry;
  3. if the status word (runtime.ERRINFO[0]) is set, return `fail(*args)` (the Python
     wrapper's error / deoptimisation path); else box the result
     (PyFloat_FromDouble / PyLong_FromLongLong; a tuple of numbers, bools and None,
     nested too, from the flat `out` struct the entry writes: PyTuple_New, items
     stolen by PyTuple_SetItem).
Anything unexpected (wrong count or class) calls `slow(*args)`, the Python wrapper,
which gives the exact behaviour.  An array argument (`ArrayT`) is accepted when it is
exactly a `numpy.ndarray` with the expected dtype object and number of dimensions; the
compiled entry gets the `PyArrayObject*` itself (see `jit.codegen.entry`).  `slow` and
`fail` are read from the builtin's `self` (a tuple), and every address is a symbol
(`jit.runtime.symbols`), so the wrapper's code is the same in every process and goes
to the disk cache with the function.  The object
layouts (ob_type at 8, ob_fval at 16, a tuple's items from 24; an array's nd at 24 and
descr at 56) are checked at import; where they differ, no native wrapper is built.
"""
from __future__ import annotations

import ctypes
import itertools
from typing import Any, Callable, Optional

import numpy as np
from llvmlite import ir as L

from jit.runtime import symbols
from jit.runtime import native as runtime
from jit.codegen.arrays import callee_of
from jit.codegen.entry import out_leaves, out_struct
from jit.types import BOOL, FLOAT64, INT64, NONE, ArrayT, DictT, ListT, RecordT, TupleT

PTR = L.PointerType()
I8 = L.IntType(8)
I64 = L.IntType(64)
F64 = L.DoubleType()
I32 = L.IntType(32)
METH_FASTCALL = 0x80
_COUNTER = itertools.count()


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p),
                ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


ITEMS_OFF = 24     # a tuple's first item
SLOW, FAIL = 2, 3  # their places in the builtin's `self` (see `builtin`)


def _layout_ok() -> bool:
    x = 1.25
    pair = (x, None)
    try:
        return (ctypes.c_void_p.from_address(id(x) + 8).value == id(float)
                and ctypes.c_double.from_address(id(x) + 16).value == 1.25
                and ctypes.c_void_p.from_address(id(pair) + ITEMS_OFF + 8).value == id(None))
    except (ValueError, OSError):  # pragma: no cover
        return False


ND_OFF, DESCR_OFF, FLAGS_OFF = 24, 56, 64
NPY_ARRAY_ALIGNED = 0x0100   # data and every stride a multiple of the dtype's alignment
_DESCRS = {FLOAT64: np.dtype(np.float64), INT64: np.dtype(np.int64)}


def _array_layout_ok() -> bool:
    a = np.zeros((2, 3))[:, ::2]
    odd = np.ndarray((2,), np.float64, np.zeros(3), strides=(12,))
    try:
        return (ctypes.c_int32.from_address(id(a) + ND_OFF).value == 2
                and ctypes.c_void_p.from_address(id(a) + DESCR_OFF).value == id(a.dtype)
                and a.dtype is _DESCRS[FLOAT64]
                and ctypes.c_int32.from_address(id(a) + FLAGS_OFF).value & NPY_ARRAY_ALIGNED
                and not ctypes.c_int32.from_address(id(odd) + FLAGS_OFF).value
                & NPY_ARRAY_ALIGNED)
    except (ValueError, OSError):  # pragma: no cover
        return False


LAYOUT_OK = _layout_ok() and _array_layout_ok()
_NEW = ctypes.pythonapi.PyCFunction_NewEx
_NEW.restype = ctypes.py_object
_NEW.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]


def _capi(name: str, ret: L.Type, args: list) -> Any:
    return callee_of(symbols.capi_ptr(name), L.FunctionType(ret, args))


def _object_word(obj: Any) -> L.Value:
    return symbols.object_ptr(obj).ptrtoint(I64)


def _call_py(b: L.IRBuilder, this, which: int, args, count: L.Value) -> L.Value:
    """self[which](*args[:count]): PyObject_VectorcallDict with the arguments the builtin
    got (their number need not be the signature's: that is one reason to come here)."""
    fn = _capi("PyObject_VectorcallDict", PTR, [PTR, PTR, I64, PTR])
    callee = _field(b, this, ITEMS_OFF + 8 * which, PTR)
    return b.call(fn, [callee, args, count, L.Constant(PTR, None)])


def _field(b: L.IRBuilder, obj, off: int, ty: L.Type) -> L.Value:
    return b.load(b.gep(obj, [L.Constant(I64, off)], source_etype=I8), typ=ty)


def _check_array(fn: L.Function, b: L.IRBuilder, obj, t: ArrayT, slow_block) -> L.Value:
    """`obj` itself once it is an exact ndarray of t's dtype and ndim, else `slow_block`."""
    ok = b.and_(b.icmp_unsigned("==", _field(b, obj, 8, I64), _object_word(np.ndarray)),
                b.icmp_unsigned("==", _field(b, obj, DESCR_OFF, I64),
                                _object_word(_DESCRS[t.dtype])))
    ok = b.and_(ok, b.icmp_signed("==", _field(b, obj, ND_OFF, I32), L.Constant(I32, t.ndim)))
    aligned = b.and_(_field(b, obj, FLAGS_OFF, I32), L.Constant(I32, NPY_ARRAY_ALIGNED))
    ok = b.and_(ok, b.icmp_unsigned("!=", aligned, L.Constant(I32, 0)))   # (element strides)
    good = fn.append_basic_block("array_ok")
    b.cbranch(ok, good, slow_block)
    b.position_at_end(good)
    return obj


def _unbox(fn: L.Function, b: L.IRBuilder, obj, t, slow_block, ovf) -> L.Value:
    """The float or int64 in `obj` (an array: `obj` itself), branching to `slow_block`
    on another class."""
    if isinstance(t, ArrayT):
        return _check_array(fn, b, obj, t, slow_block)
    cls = _field(b, obj, 8, I64)
    want = _object_word(float if t == FLOAT64 else int)
    ok = fn.append_basic_block("ok")
    b.cbranch(b.icmp_unsigned("==", cls, want), ok, slow_block)
    b.position_at_end(ok)
    if t == FLOAT64:
        return _field(b, obj, 16, F64)
    conv = _capi("PyLong_AsLongLongAndOverflow", I64, [PTR, PTR])
    v = b.call(conv, [obj, ovf])
    fits = fn.append_basic_block("fits")
    b.cbranch(b.icmp_signed("==", b.load(ovf, typ=I32), L.Constant(I32, 0)), fits, slow_block)
    b.position_at_end(fits)
    return v


def _emit(mod: L.Module, t: Any, callee: Any, name: str) -> None:
    """The METH_FASTCALL function `name` in `mod` around `callee` (a function of `mod`
    whose pointer parameters take the i64 arguments' values)."""
    fn = L.Function(mod, L.FunctionType(PTR, [PTR, PTR, I64]), name=name)
    fn.attributes.add("noinline")
    fn.attributes.add("optnone")   # straight-line glue: nothing for the optimiser to do
    this, args, nargs = fn.args
    b = L.IRBuilder(fn.append_basic_block("entry"))
    slow_block, err_block = fn.append_basic_block("slow"), fn.append_basic_block("error")
    n = len(t.argtypes)
    ovf = b.alloca(I32)
    count = b.and_(nargs, L.Constant(I64, (1 << 63) - 1))  # less PY_VECTORCALL_ARGUMENTS_OFFSET
    start = fn.append_basic_block("start")
    b.cbranch(b.icmp_signed("==", count, L.Constant(I64, n)), start, slow_block)
    b.position_at_end(start)
    vals = [_unbox(fn, b, b.load(b.gep(args, [L.Constant(I64, i)], source_etype=PTR), typ=PTR),
                   a, slow_block, ovf)
            for i, a in enumerate(t.argtypes)]
    tuple_result = isinstance(t.ret, TupleT)
    ret = L.VoidType() if tuple_result else F64 if t.ret == FLOAT64 else I64
    out = b.alloca(out_struct(t.ret)) if tuple_result else None
    vals = [b.inttoptr(v, p) if isinstance(p, L.PointerType) and v.type == I64 else v
            for v, p in zip(vals, callee.function_type.args)]
    r = b.call(callee, vals + ([out] if tuple_result else []))
    status = b.load(symbols.errinfo_ptr(b), typ=I64)
    done = fn.append_basic_block("done")
    b.cbranch(b.icmp_signed("!=", status, L.Constant(I64, 0)), err_block, done)
    b.position_at_end(done)
    if tuple_result:
        flat = b.load(out, typ=out_struct(t.ret))
        b.ret(_box_tuple(b, t.ret, iter(b.extract_value(flat, k)
                                         for k in range(len(out_leaves(t.ret))))))
    else:
        box = _capi("PyFloat_FromDouble" if t.ret == FLOAT64 else "PyLong_FromLongLong",
                    PTR, [ret])
        b.ret(b.call(box, [r]))
    for block, which in ((slow_block, SLOW), (err_block, FAIL)):
        b.position_at_end(block)
        b.ret(_call_py(b, this, which, args, count))


_LL = {FLOAT64: F64, INT64: I64}


def _box_tuple(b: L.IRBuilder, t: Any, leaves: Any) -> L.Value:
    """The Python object of result type `t` (see `_boxable`), reading its stored
    leaves (`jit.codegen.entry.out_leaves` order) from `leaves`."""
    if isinstance(t, TupleT):
        new = _capi("PyTuple_New", PTR, [I64])
        put = _capi("PyTuple_SetItem", I32, [PTR, I64, PTR])
        tup = b.call(new, [L.Constant(I64, len(t.elems))])
        for i, e in enumerate(t.elems):
            b.call(put, [tup, L.Constant(I64, i), _box_tuple(b, e, leaves)])
        return tup
    if t == NONE:
        none = symbols.object_ptr(None)
        b.call(_capi("Py_IncRef", L.VoidType(), [PTR]), [none])
        return none
    v = next(leaves)
    if t == FLOAT64:
        return b.call(_capi("PyFloat_FromDouble", PTR, [F64]), [v])
    if t == BOOL:
        return b.call(_capi("PyBool_FromLong", PTR, [I64]), [b.zext(v, I64)])
    return b.call(_capi("PyLong_FromLongLong", PTR, [I64]), [v])


def _boxable(t: Any) -> bool:
    """A result the wrapper boxes: a tuple of float64, int64, bool and none (nested)."""
    if isinstance(t, TupleT) and not isinstance(t, (ListT, DictT, RecordT)):
        return all(e in (FLOAT64, INT64, BOOL, NONE) or _boxable(e) for e in t.elems)
    return False


def _passable(t: Any) -> bool:
    return t in _LL or (isinstance(t, ArrayT) and t.dtype in _DESCRS and t.ndim in (1, 2))


def wrappable(t: Any) -> bool:
    """Can `emit_wrapper` take the signature `t` (`argtypes`, `ret`): float64/int64
    scalars and float64/int64 arrays returning a float64, an int64 or a tuple of
    numbers, bools and None?"""
    return (LAYOUT_OK and (t.ret in (FLOAT64, INT64) or _boxable(t.ret)) and bool(t.argtypes)
            and all(_passable(a) for a in t.argtypes))


def emit_wrapper(mod: L.Module, t: Any, callee: Any, name: Optional[str] = None
                 ) -> Optional[str]:
    """Emit the wrapper of `callee` (a function of `mod`, defined there or declared) for
    signature `t` into `mod` (as `name`, else a fresh name); its name, or None when `t`
    is not `wrappable`.  Once `mod` is compiled, `builtin(name, t, slow, fail)` makes
    the Python callable."""
    if not wrappable(t):
        return None
    name = name or f"zy_fast_{next(_COUNTER)}"
    _emit(mod, t, callee, name)
    return name


def builtin(name: str, t: Any, slow: Callable, fail: Callable) -> Callable:
    """The METH_FASTCALL builtin of the compiled wrapper `name`."""
    return builtin_at(runtime.function_address(name), t.ir.name, slow, fail)


def builtin_at(address: int, title: str, slow: Callable, fail: Callable) -> Callable:
    """The METH_FASTCALL builtin `title` whose C function is at `address`."""
    cname = ctypes.c_char_p(title.encode())
    mdef = _MethodDef(cname.value, address, METH_FASTCALL, None)
    keep = (mdef, cname, slow, fail)  # `self` of the builtin: keeps these alive, and
    return _NEW(ctypes.addressof(mdef), keep, None)   # the code reads SLOW and FAIL
