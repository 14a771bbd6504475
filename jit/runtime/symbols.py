"""The numbers native code needs that differ from one process to the next, as named
symbols: what lets an object file compiled in one process run in another
(`jit.disk_cache`).

Compiled code needs the address of the error record, of the arena's head, of the
runtime's functions and of the C API's; the address of a few Python objects (`float`,
a dtype, None); the id of each error site and of each interned string.  Each is
emitted as a reference to an external symbol `@"zy.<kind>.<name>"` (declared
`external global i8` by `native.compile_ir`), and its value is given to LLVM's symbol table
(`llvm.add_symbol`) when it is first used.  MCJIT resolves the symbol when it links
the object.  A process that loads the object from disk binds each symbol again from
its recipe (`bind`), which is why every symbol has one:

    rt     ("rt", name)                 a runtime address, by its `RUNTIME` entry
    capi   ("capi", name)               a function of CPython's C API
    vec    ("vec", name)                glibc's vector variant of libm's `name`
    site   ("site", exc module, exc qualname, template, func, file, line, floats, args)
    str    ("str", text)                an interned string's id
    obj    ("obj", module, qualname) | ("const", repr) | ("dtype", str)
    live   ("live",)                    this process only: a module-level array, a
                                        Python callable of a host call, an object
                                        with no import path.  A module that refers
                                        to one is not written to disk.

The name of a symbol is a function of its recipe (a hash where the recipe is long),
so two processes compiling the same code emit the same names.  Site and string ids
start at 1: LLVM may take a global's address to be non-null.
"""
from __future__ import annotations

import ctypes
import hashlib
import importlib
import re
from typing import Any

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir as L

from ssair.compile_lock import compiling

from jit.runtime import native

I8, I64 = L.IntType(8), L.IntType(64)
PREFIX, LIVE = native.SYMBOL_PREFIX, native.LIVE_PREFIX

# name -> (module, function): a zero-argument function returning the address (and
# compiling the runtime module that defines it on first use).  Declared here, once.
RUNTIME = {
    "errinfo": ("jit.runtime.native", "errinfo_address"),
    "arena_head": ("jit.runtime.native", "arena_head_address"),
    "thread_key": ("jit.runtime.native", "thread_key_address"),
    "threaded": ("jit.runtime.native", "threaded_address"),
    "zy_errinfo_ptr": ("jit.runtime.native", "errinfo_ptr_address"),
    "zy_arena_head_ptr": ("jit.runtime.native", "arena_head_ptr_address"),
    "zy_alloc": ("jit.runtime.native", "alloc_address"),
    "zy_release": ("jit.runtime.native", "release_address"),
    "zy_release_below": ("jit.runtime.native", "release_below_address"),
    "zy_tape_reserve": ("jit.runtime.tape", "reserve_address"),
    "zy_copy_grad": ("jit.runtime.gradient_entry", "copy_grad_address"),
    "zy_copy_strided": ("jit.runtime.gradient_entry", "copy_strided_address"),
    "zy_copy_c": ("jit.runtime.gradient_entry", "copy_c_address"),
    "zy_accum_f64": ("jit.runtime.array_sums", "accum_address"),
    "host_callback": ("jit.runtime.host_calls", "callback_address"),
    "zy_exception_matches": ("jit.runtime.caught", "matches_address"),
    "cblas_dgemm": ("jit.library.blas", "dgemm_address"),
}

RECIPES: dict = {}      # symbol name -> recipe, for every symbol bound in this process
_REFS: dict = {}        # symbol name -> the llvmlite global that refers to it
_SCRATCH = L.Module(name="zy_symbols")   # owns the globals; never compiled
_KEEP: list = []        # objects a bound symbol addresses (alive as long as the process)


def _ref(name: str, recipe: tuple, value: Any) -> L.GlobalVariable:
    ref = _REFS.get(name)
    return ref if ref is not None else _new_ref(name, recipe, value)


@compiling
def _new_ref(name: str, recipe: tuple, value: Any) -> L.GlobalVariable:
    """The global referring to symbol `name`, made (and the symbol bound) once: two
    threads compiling at once would both declare it, and llvmlite refuses the second."""
    ref = _REFS.get(name)
    if ref is None:
        if name not in RECIPES:
            llvm.add_symbol(name, value() if callable(value) else value)
            RECIPES[name] = recipe
        ref = _REFS[name] = L.GlobalVariable(_SCRATCH, I8, name)
        ref.type = L.PointerType()      # an opaque pointer, as everywhere in the JIT
    return ref


def runtime_address(name: str) -> int:
    module, fn = RUNTIME[name]
    return getattr(importlib.import_module(module), fn)()


def runtime_ptr(name: str) -> L.Value:
    """A pointer to the runtime's `name` (`RUNTIME`): a function or the error record."""
    return _ref(native.runtime_symbol(name), ("rt", name), lambda: runtime_address(name))


def errinfo_ptr(b: L.IRBuilder) -> L.Value:
    """The calling thread's error record (`native.ThreadState`; ERRINFO on threads
    that hold the GIL)."""
    return _thread_ptr(b, "zy_errinfo_ptr", "errinfo")


def errinfo_ptr_cold(b: L.IRBuilder) -> L.Value:
    """`errinfo_ptr` as one call of the runtime's accessor: for error paths, which
    run once per raised error, where the inline test of `errinfo_ptr` only adds
    three blocks per site for LLVM to compile."""
    fnty = L.FunctionType(L.PointerType(), [])
    return b.call(TypedPtr(runtime_ptr("zy_errinfo_ptr"), fnty), [])


def arena_head_ptr(b: L.IRBuilder) -> L.Value:
    """The word holding the calling thread's arena head (ARENA_HEAD's address on
    threads that hold the GIL)."""
    return _thread_ptr(b, "zy_arena_head_ptr", "arena_head")


def _thread_ptr(b: L.IRBuilder, name: str, shared_name: str) -> L.Value:
    """The runtime's word `shared_name` while no thread runs without the GIL
    (`native.THREADED` is 0: one load and a branch), else what the runtime's
    accessor `name` says."""
    shared = runtime_ptr(shared_name)
    alone = b.icmp_signed("==", b.load(runtime_ptr("threaded"), typ=I64), L.Constant(I64, 0))
    with b.if_else(alone, likely=True) as (then, otherwise):
        with then:
            from_shared = b.block
        with otherwise:
            own = b.call(TypedPtr(runtime_ptr(name), L.FunctionType(L.PointerType(), [])), [])
            from_own = b.block
    p = b.phi(L.PointerType())
    p.add_incoming(shared, from_shared)
    p.add_incoming(own, from_own)
    return p


class TypedPtr:
    """An opaque pointer used as a call target (llvmlite wants its function type)."""

    def __init__(self, ptr, fnty) -> None:
        self.ptr = ptr
        self.function_type = fnty

    def __getattr__(self, name):
        return getattr(self.ptr, name)


def capi_ptr(name: str) -> L.Value:
    """A pointer to the C API's function `name`."""
    return _ref(PREFIX + "capi." + name, ("capi", name), lambda: _capi_address(name))


def _capi_address(name: str) -> int:
    return ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value


def _hashed(kind: str, recipe: tuple) -> str:
    return f"{PREFIX}{kind}.{hashlib.sha1(repr(recipe).encode()).hexdigest()[:20]}"


def site_word(sid: int) -> L.Value:
    """Error site `sid` of `jit.runtime.native.SITES` as an i64."""
    s = native.SITES[sid]
    recipe = ("site", s.exc.__module__, s.exc.__qualname__, s.template, s.func,
              str(s.file), s.line, s.float_details, s.args)
    if object_recipe(s.exc) != ("obj", recipe[1], recipe[2]):   # a class made at run time
        return live_word("site", sid)
    return _ref(_hashed("site", recipe), recipe, sid).ptrtoint(I64)


def string_word(text: str) -> L.Value:
    """The interned id of `text` (`jit.types.intern_string`) as an i64."""
    from jit.types import intern_string
    recipe = ("str", text)
    return _ref(_hashed("str", recipe), recipe, lambda: intern_string(text)).ptrtoint(I64)


def object_ptr(obj: Any) -> L.Value:
    """A pointer to the Python object `obj` (kept alive by the caller)."""
    recipe = object_recipe(obj)
    if recipe is None:
        return live_ptr("obj", id(obj))
    return _ref(_hashed("obj", recipe), recipe, id(obj))


def live_ptr(tag: str, address: int) -> L.Value:
    """A pointer valid in this process only (see the module docstring)."""
    return _ref(f"{LIVE}{tag}.{address}", ("live",), address)


def live_word(tag: str, value: int) -> L.Value:
    """An i64 valid in this process only (`value` at least 1)."""
    return live_ptr(tag, value).ptrtoint(I64)


def object_recipe(obj: Any) -> Any:
    """How another process finds `obj`, or None."""
    if obj is None or obj is True or obj is False:
        return ("const", repr(obj))
    if isinstance(obj, np.dtype) and obj.isbuiltin and np.dtype(obj.str) is obj:
        return ("dtype", obj.str)
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
        try:
            if _resolve_ref(module, qualname) is obj:
                return ("obj", module, qualname)
        except Exception:  # noqa: BLE001 - no import path: this process only
            return None
    return None


def _resolve_ref(module: str, qualname: str) -> Any:
    value = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def _resolve(recipe: tuple) -> int:
    """The value of a symbol with this recipe in this process (KeyError, ImportError,
    AttributeError, ... when it has none)."""
    kind = recipe[0]
    if kind == "rt":
        return runtime_address(recipe[1])
    if kind == "capi":
        return _capi_address(recipe[1])
    if kind == "vec":
        if native.vector_variant(recipe[1]) is None:
            raise LookupError(f"no vector variant of {recipe[1]}")
        return 0
    if kind == "site":
        _, module, qualname, template, func, file, line, floats, args = recipe
        exc = _resolve_ref(module, qualname)
        return native.site(exc, template, func, file, line, floats, args)
    if kind == "str":
        from jit.types import intern_string
        return intern_string(recipe[1])
    if kind == "const":
        return id({"None": None, "True": True, "False": False}[recipe[1]])
    if kind == "dtype":
        d = np.dtype(recipe[1])
        _KEEP.append(d)
        return id(d)
    if kind == "obj":
        obj = _resolve_ref(recipe[1], recipe[2])
        _KEEP.append(obj)
        return id(obj)
    raise LookupError(f"symbol recipe {recipe!r} cannot be bound in another process")


@compiling
def bind(symbols: dict) -> None:
    """Give LLVM the value of each symbol (name -> recipe) an object file refers to
    (raises when one has none in this process; nothing is bound then)."""
    values = {}
    for name, recipe in symbols.items():
        if name not in RECIPES:
            values[name] = _resolve(recipe)
    for name, value in values.items():
        if symbols[name][0] != "vec":
            llvm.add_symbol(name, value)
        RECIPES[name] = symbols[name]


_VEC_RE = re.compile(r'@"?(zy_vec_[A-Za-z0-9_]+)\b')


def referenced(text: str) -> dict:
    """The symbols (name -> recipe) module text `text` refers to, the vector variants
    of libm it calls included."""
    out = {name: RECIPES[name] for name in set(native.SYMBOL_RE.findall(text))}
    for sym in set(_VEC_RE.findall(text)):
        name = sym[len("zy_vec_"):]
        out[f"{PREFIX}vec.{name}"] = ("vec", name)
    return out


def cacheable(symbols: dict) -> bool:
    """Can another process bind every one of these symbols?"""
    return all(recipe[0] != "live" for recipe in symbols.values())


__all__ = ["RUNTIME", "bind", "cacheable", "capi_ptr", "live_ptr",
           "live_word", "object_ptr", "object_recipe", "referenced", "runtime_ptr",
           "site_word", "string_word"]
