"""LLVM lowering of calls back into Python (`jit.runtime.host_calls`): operands are
stored in a slot array on the stack, the callback runs the Python callable, and its
result is read back from a second slot array.  A failed call returns its status, which
every caller propagates to the entry like any native error."""
from __future__ import annotations

from typing import Any

from llvmlite import ir as L

from ssair.ir import Const

from jit.codegen.arrays import runtime_callee
from jit.runtime import symbols
from jit.codegen.function import F64, I1, I8, I32, I64, PTR, FunctionGen, array_fields, lltype
from jit.runtime import host_calls as host
from jit.typing.infer import LiteralT
from jit.types import (BOOL, FLOAT32, FLOAT64, NONE, ArrayT, BuiltListT, FunctionT, ObjectT,
                       TupleT, Type)

_FNTY = L.FunctionType(I32, [I64, PTR, PTR])


def call_host(fc: FunctionGen, site: host.HostSite, values: list) -> L.Value:
    """Call `site` with the LLVM `values` of its slot operands; its result as an LLVM value
    of `site.result`."""
    sid = host.register(site)
    b = fc.b
    args = fc.alloca(L.ArrayType(I64, max(site.nargs, 1)))
    out = fc.alloca(L.ArrayType(I64, max(site.nout, 1)))
    k = 0
    for v, t in zip(values, site.argtypes):
        k = _store(fc, args, k, v, t)
    status = b.call(runtime_callee("host_callback", _FNTY),
                    [symbols.live_word("host", sid), b.bitcast(args, PTR), b.bitcast(out, PTR)])
    fc.propagate(status)
    return _load(fc, out, 0, site.result)[0]


def _slot(fc: FunctionGen, buf, k: int) -> L.Value:
    return fc.b.gep(buf, [L.Constant(I64, 0), L.Constant(I64, k)])


def _store(fc: FunctionGen, buf, k: int, v, t: Type) -> int:
    b = fc.b
    if isinstance(t, ArrayT):
        b.store(b.ptrtoint(b.extract_value(v, 0), I64), _slot(fc, buf, k))
        for i, at in enumerate(array_fields(t.ndim)):
            b.store(b.extract_value(v, at), _slot(fc, buf, k + 1 + i))
        return k + host.array_slots(t.ndim)
    if isinstance(t, BuiltListT):
        b.store(b.ptrtoint(b.extract_value(v, 0), I64), _slot(fc, buf, k))
        b.store(b.extract_value(v, 1), _slot(fc, buf, k + 1))
        b.store(b.extract_value(v, 2), _slot(fc, buf, k + 2))
        return k + 3
    if isinstance(t, TupleT):
        for i, e in enumerate(t.elems):
            k = _store(fc, buf, k, b.extract_value(v, i), e)
        return k
    if t == NONE:
        return k
    if isinstance(t, ObjectT):
        v = b.ptrtoint(v, I64)
    elif t == FLOAT64 or t == FLOAT32:
        v = b.bitcast(v, I64)
    elif t == BOOL:
        v = b.zext(v, I64)
    b.store(v, _slot(fc, buf, k))
    return k + 1


def _load(fc: FunctionGen, buf, k: int, t: Type) -> tuple:
    b = fc.b
    if isinstance(t, ArrayT):
        out = L.Constant(lltype(t), L.Undefined)
        data = b.inttoptr(b.load(_slot(fc, buf, k), typ=I64), PTR)
        out = b.insert_value(out, data, 0)
        for i, at in enumerate(array_fields(t.ndim)):
            out = b.insert_value(out, b.load(_slot(fc, buf, k + 1 + i), typ=I64), at)
        return out, k + host.array_slots(t.ndim)
    if isinstance(t, BuiltListT):
        out = L.Constant(lltype(t), L.Undefined)
        out = b.insert_value(out, b.inttoptr(b.load(_slot(fc, buf, k), typ=I64), PTR), 0)
        out = b.insert_value(out, b.load(_slot(fc, buf, k + 1), typ=I64), 1)
        return b.insert_value(out, b.load(_slot(fc, buf, k + 2), typ=I64), 2), k + 3
    if isinstance(t, TupleT):
        out = L.Constant(lltype(t), L.Undefined)
        for i, e in enumerate(t.elems):
            v, k = _load(fc, buf, k, e)
            out = b.insert_value(out, v, i)
        return out, k
    if t == NONE:
        return L.Constant(I8, 0), k
    w = b.load(_slot(fc, buf, k), typ=I64)
    if isinstance(t, ObjectT):
        w = b.inttoptr(w, PTR)
    elif t == FLOAT64 or t == FLOAT32:
        w = b.bitcast(w, F64)
    elif t == BOOL:
        w = b.trunc(w, I1)
    return w, k + 1


def operand_recipe(fc: FunctionGen, operands: list) -> tuple:
    """(recipe, the LLVM values of the run-time operands) for `HostSite`: constants and
    operands known at compile time (a literal, a function) are baked in."""
    recipe, values = [], []
    for a in operands:
        t = fc.type_of(a)
        known = _known_value(a, t)
        if known is not _UNKNOWN:
            recipe.append(("const", known))
        else:
            recipe.append(("slot", t))
            values.append(fc.get(a))
    return recipe, values


_UNKNOWN = object()


def _known_value(a: Any, t: Type) -> Any:
    if isinstance(t, LiteralT):
        return t.value
    if isinstance(t, FunctionT):
        return t.func
    if isinstance(a, Const):
        return a.value
    return _UNKNOWN


def lower_library_call(fc: FunctionGen, s, ts, via: Any = None) -> L.Value:
    """The native code of a library entry implemented by the library itself: the call
    statement `s` made through the host callback (the registry's "host" impls); `via`,
    a Python function called instead of the callee with the same operands."""
    from ssair.printer import object_name
    f = fc.type_of(s.args[0]).func
    operands = list(s.args[1:]) + list(s.kwargs.values())
    recipe, values = operand_recipe(fc, operands)
    site = host.HostSite(via or f, object_name(f), recipe, tuple(s.kwargs), s.type)
    return call_host(fc, site, values)


def lower_calling(via: Any):
    """`lower_library_call` through `via`."""
    def lower(fc: FunctionGen, s, ts) -> L.Value:
        return lower_library_call(fc, s, ts, via)
    lower.native = "host call"
    return lower


lower_library_call.native = "host call"


def lower_operator(fn: Any):
    """The native code of a primitive on values the JIT has no loop for (`a % b` of
    arrays): `fn` (the operator module's function) called through the host callback."""
    def lower(fc: FunctionGen, s, ts) -> L.Value:
        from ssair.printer import object_name
        recipe, values = operand_recipe(fc, list(s.args))
        return call_host(fc, host.HostSite(fn, object_name(fn), recipe, (), s.type), values)
    lower.native = "host call"
    return lower
