"""The user's door to the JIT.

    @jit.jit
    def f(x, n): ...
    f(2.0, 3)                      # compiled for (float64, int64) on first call
    print(jit.code_typed(f, 2.0, 3))
    print(jit.code_llvm(f, 2.0, 3))
    print(jit.code_native(f, 2.0, 3))

Compiled code is cached per (function, argument types), in the process and on disk
(`jit.disk_cache`: a second process loads what the first compiled).  The per-call path is a
generated Python function per signature: range checks for int arguments, one ctypes
call (PYFUNCTYPE: the GIL stays held, so the shared error record is safe), one status
test.  A DEOPT status (int64 overflow, ...) reruns the call with exact Python
semantics (the original function, or `ssair.interpret` for a bare IR) unless the
function writes into arrays, in which case it raises OverflowError.
"""
from __future__ import annotations

import ctypes
import functools
import inspect
import types
import warnings
import weakref

import numpy as np
from dataclasses import dataclass
from typing import Any, Callable, Optional

from lowering import guards
from ssair.ir import IR
from ssair import progress
from ssair.compile_lock import compiling

from jit import disk_cache
from jit.runtime import host_pullbacks as handles
from jit.runtime import native as runtime
from jit.runtime import symbols
from jit.codegen.function import ENTRY_NUMBERS, ModuleGen
from jit.codegen.entry import (LAYOUT_OK, build_entry, contains_array, copy_array, ctype_of,
                            flat_ctypes, flat_names, is_direct, range_checks, record_entry,
                            unbox_expr)
from jit.typing.infer import ENGINE, LiteralT, Typing, infer, lower_function
from jit.runtime.fastcall import builtin_at, emit_wrapper
from jit.types import (BOOL, FLOAT32, FLOAT64, INT32, INT64, NONE, NUMPY_DTYPE, ArrayT, ClosureT,
                       DictT, FunctionT, ListT, ObjectT, RecordT, TupleT, TypingError, typeof)

@dataclass(eq=False)
class Compiled:
    """One compiled signature: typing, LLVM text before/after optimisation, the
    binding module (for assembly) and the call wrapper: the native one where the
    signature allows, else `python_wrapper`.  One loaded from the disk cache has no
    typing, text or module (a listing compiles it again)."""

    typing: Optional[Typing]
    llvm_text: Optional[str]
    module: Any
    entry: str
    wrapper: Callable
    python_wrapper: Callable
    linked: tuple = ()        # (signature, entry, fast entry): what `rewrapped` needs

    def optimized_llvm(self) -> str:
        return str(self.module)

    def assembly(self) -> str:
        return runtime.native_assembly(self.module)


@dataclass(frozen=True)
class Signature:
    """What the wrappers of a compiled signature are built from (kept in the disk
    cache beside the object code)."""

    argtypes: tuple
    ret: Any
    writes: bool
    name: str


@compiling
def compile_typing(t: Typing, fallback: Callable, reroute: Callable = None,
                   other_classes: Callable = None,
                   cache_key: Optional[disk_cache.Key] = None) -> Compiled:
    """LLVM-compile a typed function and build its Python wrapper (the native one when
    the signature allows; it calls `other_classes(*args)`, by default the Python
    wrapper, for arguments of other classes).  With `cache_key`, the object code goes
    to the disk cache too, unless it refers to something of this process only."""
    _check_signature(t)
    progress.label(f"jit of {t.ir.name} ({t.ir.file}:{t.ir.firstline})", True)
    progress.stage("LLVM IR generation")
    mg = ModuleGen(ENGINE, t, ENTRY_NUMBERS)
    impl = mg.build()
    entry = build_entry(mg, t, impl)
    fast = emit_wrapper(mg.module, t, entry, f"{entry.name}_fast")
    text = str(mg.module)
    # (the text names this process's entry: the function's own key stores the object)
    mod, obj = runtime.compile_ir(text, keep_object=True, cache=False)
    sig = Signature(tuple(t.argtypes), t.ret, bool(t.writes), t.ir.name)
    if cache_key is not None and obj is not None and not t.host_pullbacks:
        # (code that makes handles needs the owning wrapper only its typing asks for)
        used = symbols.referenced(text)
        if symbols.cacheable(used):
            disk_cache.store(cache_key, {"object": obj, "symbols": used, "signature": sig,
                                         "entry": entry.name, "fast": fast})
            _LINKED[cache_key.digest] = (sig, entry.name, fast)
    return _wrap(sig, entry.name, fast, fallback, reroute, other_classes,
                 Compiled(t, text, mod, entry.name, None, None, (sig, entry.name, fast)))


def rewrapped(c: Compiled, fallback: Callable, reroute: Callable = None) -> Compiled:
    """The compiled code of `c` with wrappers of its own: another function of the same
    code (a closure made anew) calls it with its own fallback."""
    sig, entry, fast = c.linked
    return _wrap(sig, entry, fast, fallback, reroute, None,
                 Compiled(c.typing, c.llvm_text, c.module, entry, None, None, c.linked))


_LINKED: dict = {}   # key digest -> (signature, entry, wrapper): linked in this process


@compiling
def load_compiled(key: disk_cache.Key, fallback: Callable, reroute: Callable = None,
                  other_classes: Callable = None) -> Optional[Compiled]:
    """`compile_typing`'s result for the entry under `key` in the disk cache (linked
    once per process), or None: no entry, or one that cannot be used here."""
    linked = _LINKED.get(key.digest)
    if linked is None:
        entry = disk_cache.load(key)
        if entry is None:
            return None
        try:
            symbols.bind(entry["symbols"])
            runtime.load_object(entry["object"])
            linked = (entry["signature"], entry["entry"], entry["fast"])
            if not runtime.function_address(linked[1]):
                raise LookupError(f"the object defines no {linked[1]}")
        except Exception as exc:  # noqa: BLE001 - compiled again instead
            warnings.warn(f"zygopy: cannot use the cache entry {key.path} ({exc})",
                          disk_cache.CacheWarning, stacklevel=2)
            return None
        _LINKED[key.digest] = linked
    sig, entry_name, fast = linked
    return _wrap(sig, entry_name, fast, fallback, reroute, other_classes,
                 Compiled(None, None, None, entry_name, None, None))


def _wrap(sig: Signature, entry: str, fast: Optional[str], fallback: Callable,
          reroute: Optional[Callable], other_classes: Optional[Callable],
          c: Compiled) -> Compiled:
    """`c` with its wrappers: the Python one, and the native builtin `fast` if any."""
    wrapper = make_wrapper(sig, runtime.function_address(entry), fallback, reroute)
    native = None
    if fast is not None:
        fail = _failure(sig, fallback)
        native = builtin_at(runtime.function_address(fast), sig.name,
                            other_classes or wrapper, lambda *args: fail(args))
    c.wrapper, c.python_wrapper = native or wrapper, wrapper
    if c.typing is not None and c.typing.host_pullbacks:
        c.wrapper, c.python_wrapper = _owning(c.wrapper), _owning(wrapper)
    return c


def _owning(call: Callable) -> Callable:
    """`call`, owner of the handles its run makes (`jit.runtime.host_pullbacks`: a
    generator made in compiled code): they are released when it returns."""
    def owned(*args: Any) -> Any:
        start = handles.mark()
        try:
            return call(*args)
        finally:
            handles.release(handles.claim(start))
    owned.__name__ = owned.__qualname__ = getattr(call, "__name__", "call")
    return owned


def _check_signature(t: Typing) -> None:
    bad = [a for a in t.argtypes if isinstance(a, ArrayT)]
    if bad and not LAYOUT_OK:
        raise TypingError("jit: this numpy's array struct layout is not supported")
    if isinstance(t.ret, (ClosureT, FunctionT)):
        raise TypingError(f"jit: {t.ir.name} returns a {t.ret}; returning functions "
                          "from compiled code is not supported")


def make_wrapper(t: Signature, addr: int, fallback: Callable, reroute: Callable = None
                 ) -> Callable:
    """A Python function `(*args) -> result` specialised for this signature.  Array
    arguments are guarded (dtype, ndim): a mismatch goes to `reroute(args)`."""
    argc = [c for a in t.argtypes for c in flat_ctypes(a)]
    direct = is_direct(t.ret)
    restype = {FLOAT64: ctypes.c_double, INT64: ctypes.c_int64, BOOL: ctypes.c_bool}.get(t.ret)
    if not direct:
        argc.append(ctypes.c_void_p)
    cfunc = ctypes.PYFUNCTYPE(restype, *argc)(addr)
    names = [f"a{i}" for i in range(len(t.argtypes))]
    flat = [e for n, a in zip(names, t.argtypes) for e in flat_names(n, a)]
    checks = [c for n, a in zip(names, t.argtypes) for c in range_checks(n, a)]
    env = {"np": np, "cf": cfunc, "err": runtime.ERRINFO, "fail": _failure(t, fallback),
           "rt": runtime, "copy_array": copy_array}
    lines = [f"def call({', '.join(names)}):"]
    sig = ", ".join(names)
    env["fallback_big"] = fallback
    env["reroute"] = reroute
    for n, a in zip(names, t.argtypes):
        if isinstance(a, ArrayT) and reroute is not None:
            num = np.dtype(_NUMPY_DTYPES[a.dtype]).num
            lines.append(f"    if {n}.dtype.num != {num} or {n}.ndim != {a.ndim}: "
                         f"return reroute(({sig}{',' if names else ''}))")
        if a == NONE and reroute is not None:     # (a value where None was typed)
            lines.append(f"    if {n} is not None: "
                         f"return reroute(({sig}{',' if names else ''}))")
        if isinstance(a, TupleT) and reroute is not None and has_record(a):
            env[f"T_{n}"], env["typeof"] = a, _typeof_or_none
            lines.append(f"    if typeof({n}) != T_{n}: "
                         f"return reroute(({sig}{',' if names else ''}))")
        elif isinstance(a, TupleT) and reroute is not None:
            lines.append(f"    if not ({_guard_expr(n, a)}): "
                         f"return reroute(({sig}{',' if names else ''}))")
        leaves = _array_leaves(n, a)     # compiled code steps by elements, not bytes
        if leaves:
            lines.append(f"    if not ({' and '.join(x + '.flags.aligned' for x in leaves)}): "
                         f"return fallback_big({sig})")
        if isinstance(a, ArrayT) and t.writes:
            # a read-only array: let Python raise exactly what CPython raises
            lines.append(f"    if not {n}.flags.writeable: return fallback_big({sig})")
    for c in checks:  # after the guards: a tuple's shape is known here
        lines.append(f"    if not ({c}): return fallback_big({sig})")
    if direct:
        lines += [f"    r = cf({', '.join(flat)})",
                  f"    if err[0]: return fail(({sig}{',' if names else ''}))",
                  "    return r"]
    else:
        env["o"] = out = ctype_of(t.ret)()
        flat.append(str(ctypes.addressof(out)))
        keep = contains_array(t.ret)
        lines += ["    mark = rt.ARENA_HEAD.value" if keep else "    mark = None",
                  f"    cf({', '.join(flat)})",
                  "    if err[0]:",
                  "        if mark is not None: rt.arena_release(mark)",
                  f"        return fail(({sig}{',' if names else ''}))",
                  f"    r = {unbox_expr(t.ret, env, [0])}",
                  "    if mark is not None: rt.arena_release(mark)",
                  "    return r"]
    exec(compile("\n".join(lines), f"<jit wrapper {t.name}>", "exec"), env)
    return env["call"]


_NUMPY_DTYPES = NUMPY_DTYPE


def _array_leaves(name: str, t: Any) -> list:
    """Python expressions for the arrays inside argument `name` of type `t`."""
    if isinstance(t, ArrayT):
        return [name]
    if isinstance(t, DictT):
        return [x for k, e in zip(t.keys, t.elems) for x in _array_leaves(f"{name}[{k!r}]", e)]
    if isinstance(t, RecordT):
        return [x for i, e in enumerate(t.elems)
                for x in _array_leaves(record_entry(name, t, i), e)]
    if isinstance(t, TupleT):
        return [x for i, e in enumerate(t.elems) for x in _array_leaves(f"{name}[{i}]", e)]
    return []


def has_record(t: Any) -> bool:
    """Does type `t` hold an object (`RecordT`)? Its guard is its whole type."""
    return isinstance(t, RecordT) or isinstance(t, TupleT) and any(map(has_record, t.elems))


def _typeof_or_none(value: Any) -> Any:
    try:
        return typeof(value)
    except TypingError:
        return None


def _guard_expr(name: str, t: Any) -> str:
    """A Python test that `name` holds a value of exactly type `t` (tuple arguments)."""
    if isinstance(t, DictT):
        inner = [_guard_expr(f"{name}[{k!r}]", e) for k, e in zip(t.keys, t.elems)]
        return " and ".join([f"type({name}) is dict", f"tuple({name}) == {t.keys!r}"] + inner)
    if isinstance(t, TupleT):
        inner = [_guard_expr(f"{name}[{i}]", e) for i, e in enumerate(t.elems)]
        kind = "list" if isinstance(t, ListT) else "tuple"
        return " and ".join([f"type({name}) is {kind}", f"len({name}) == {len(t.elems)}"] + inner)
    simple = {FLOAT64: "(float, np.float64)", INT64: "(int, np.int64)",
              BOOL: "(bool, np.bool_)", FLOAT32: "(np.float32,)", INT32: "(np.int32,)"}
    if t in simple:     # (numpy's scalars too: `typeof` gives them these types)
        return f"type({name}) in {simple[t]}"
    if t == NONE:
        return f"{name} is None"
    if isinstance(t, LiteralT) and type(t.value) is str:   # a constant of the signature
        return f"type({name}) is str and {name} == {t.value!r}"
    if isinstance(t, ObjectT):
        return f"type({name}).__qualname__ == {t.cls.__qualname__!r}"
    if isinstance(t, ArrayT):
        num = np.dtype(_NUMPY_DTYPES[t.dtype]).num
        return (f"type({name}) is np.ndarray and {name}.dtype.num == {num} "
                f"and {name}.ndim == {t.ndim}")
    return "False"


def _not_rerun(site: Any) -> BaseException:
    """The error of a DEOPT that cannot be rerun in Python (the function writes to
    arrays): a division by zero raises as CPython does for Python numbers; an int64
    overflow says why it was not rerun."""
    if site.exc is ZeroDivisionError:
        return ZeroDivisionError(f"{site.template} (in {site.func} at {site.file}:{site.line})")
    return site.exc(f"{site.template} in compiled {site.func} at {site.file}:{site.line} "
                    "(the function writes to arrays, so it is not rerun with Python integers)")


def _failure(t: Signature, fallback: Callable) -> Callable:
    def fail(args: tuple) -> Any:
        status = runtime.ERRINFO[0]
        if status == runtime.ERROR:
            exc = runtime.current_error()
            if not (isinstance(exc, runtime.NativeDeopt) and not t.writes):
                raise exc          # (a host call's value of another type: run in Python)
            return fallback(*args)
        if t.writes:
            raise _not_rerun(runtime.current_site())
        return fallback(*args)
    return fail


_BY_IR: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # IR -> {types: Compiled}


class Dispatcher:
    """Compiled signatures of one function, keyed by argument types."""

    def __init__(self, func: Any) -> None:
        self.func = func
        self.ir = func if isinstance(func, IR) else None
        self.compiled: dict = {}
        self.fast: dict = {}
        self.guard: tuple = ()      # the globals compiled code read (`lowering.guards`)
        self.renew_guard()

    def renew_guard(self) -> None:
        """Forget the compiled signatures; read the globals' bindings again."""
        self.compiled.clear()
        self.fast.clear()
        target = guards.target_of(self.func) if self.ir is None else None
        self.guard = guards.guard_of(target) if target is not None else ()

    def fresh(self) -> bool:
        """True while every global the compiled code read is bound as it was."""
        for d, n, v in self.guard:
            if d.get(n, guards.MISSING) is not v:
                return False
        return True

    def get_ir(self) -> IR:
        return self.ir if self.ir is not None else lower_function(self.func)

    def python_fallback(self, *full: Any) -> Any:
        """Exact Python semantics for a call (captured values first, as the IR)."""
        if self.ir is not None:
            from ssair.interpreter import interpret
            return interpret(self.ir, *full)
        return self.func(*full[len(self.cells()):])

    def cells(self) -> tuple:
        """The values the function captured (the IR's first arguments)."""
        if self.ir is None and not getattr(self.func, "__closure__", None):
            return ()        # (no lowering needed to know it)
        return _closure_cells(self.get_ir(), self.func)

    def signature(self, args: tuple) -> tuple:
        return tuple(typeof(a) for a in self.cells()) + tuple(typeof(a) for a in args)

    @compiling
    def compile(self, argtypes: tuple, listing: bool = False) -> Compiled:
        """The compiled signature (from the disk cache where it has it; `listing`: with
        its typing and LLVM module, so compiled here)."""
        if not self.fresh():      # (listings too: never of stale globals)
            guards.invalidate()
        c = self.compiled.get(argtypes)
        if c is None or (listing and c.module is None):
            key = None
            if self.ir is None and not listing:
                key = disk_cache.key_for(self.func, "primal", argtypes)
            c = load_compiled(key, self.python_fallback, self.call_slow) if key else None
            if c is None:
                c = self._compile_shared(argtypes, key)
            self.compiled[argtypes] = c
        return c

    def _compile_shared(self, argtypes: tuple, key: Any) -> Compiled:
        """Compiled code for `argtypes`, shared by the dispatchers of every function
        lowered to the same IR (closures of one code: their captured values are
        leading arguments, so `argtypes` holds their types)."""
        ir = self.get_ir()
        per_ir = _BY_IR.get(ir)
        if per_ir is None:
            per_ir = _BY_IR[ir] = {}
        c = per_ir.get(argtypes)
        if c is not None and c.linked:
            return rewrapped(c, self.python_fallback, self.call_slow)
        c = compile_typing(infer(ir, argtypes), self.python_fallback, self.call_slow,
                           cache_key=key)
        per_ir[argtypes] = c
        return c

    def call_slow(self, args: tuple) -> Any:
        if not self.fresh():      # a global was rebound: every lowering is stale
            guards.invalidate()
        else:                     # (a function argument's globals)
            guards.check(None, args)
        try:
            argtypes = self.signature(args)
        except TypingError:
            if any(type(a) is int for a in args):
                return self.func(*args)  # an int beyond int64: exact Python
            raise
        c = self.compile(argtypes)
        key = tuple(map(type, args))
        cells = self.cells()
        if all(k in _FAST_TYPES or k is np.ndarray or k is tuple or hasattr(k, "__jit_type__")
               for k in key) and not cells:
            self.fast[key] = c.wrapper
        return c.wrapper(*_plain(cells + args, argtypes))


_FAST_TYPES = {int, float, bool, type(None)}


def _plain(args: tuple, argtypes: tuple) -> tuple:
    """numpy scalars as Python scalars (ctypes wants int/float)."""
    out = []
    for a, t in zip(args, argtypes):
        out.append(int(a) if t == INT64 else float(a) if t == FLOAT64 else a)
    return tuple(out)


def _closure_cells(ir: IR, func: Any) -> tuple:
    if ir.nfree and getattr(func, "__closure__", None):
        return tuple(c.cell_contents for c in func.__closure__)
    return ()


_DISPATCHERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _renew_dispatchers() -> None:
    for d in list(_DISPATCHERS.values()):
        d.renew_guard()


guards.on_invalidate(_renew_dispatchers)


@compiling
def dispatcher_for(func: Any) -> Dispatcher:
    """The one Dispatcher of a function (compiled code is shared by every jit(func))."""
    try:
        d = _DISPATCHERS.get(func)
    except TypeError:  # not weak-referenceable: no sharing
        return Dispatcher(func)
    if d is None:
        d = _DISPATCHERS[func] = Dispatcher(func)
    return d


def jit(func: Any) -> Callable:
    """Compile `func` (a Python function or an `ssair.IR`) on first call per signature.
    A bound method compiles its function, the object an argument like any other."""
    if isinstance(func, types.MethodType) and isinstance(func.__func__, types.FunctionType):
        return types.MethodType(jit(func.__func__), func.__self__)
    d = dispatcher_for(func)
    if getattr(func, "__code__", None) is not None:
        call = _entry_for(d, func)
    else:
        call = _entry_for(d, None)
        if not isinstance(func, IR):
            call = _binding_entry(func, call)
    if not isinstance(func, IR):
        functools.update_wrapper(call, func)
        call.__zygopy_function__ = func   # what a compiled caller compiles (lowering)
    call.dispatcher = d
    call.py_func = func
    return call


def _binding_entry(func: Any, positional: Callable) -> Callable:
    """Keywords and defaults bound as Python binds them, then the positional entry
    (a callable with no code object of its own: a partial, a callable object)."""
    sig = inspect.signature(func)

    def call(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return positional(*bound.arguments.values())
    return call


def _parameters(func: Any, prefix: str) -> tuple:
    """The parameter list of `func` as source (`x, y=D, /, *a, k=D, **kw`, every
    default a placeholder `D`) and its names in `inspect.signature` order, which is
    the order of the IR's arguments."""
    code = func.__code__
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    nposonly = getattr(code, "co_posonlyargcount", 0)
    names = code.co_varnames
    ndef = len(func.__defaults__ or ())
    kwdefs = func.__kwdefaults__ or {}
    dflt = f"{prefix}d"
    pos = [n + (f"={dflt}" if i >= npos - ndef else "") for i, n in enumerate(names[:npos])]
    if nposonly:
        pos.insert(nposonly, "/")
    kwonly = [n + (f"={dflt}" if n in kwdefs else "") for n in names[npos:npos + nkw]]
    at = npos + nkw
    star = [names[at]] if code.co_flags & inspect.CO_VARARGS else []
    at += len(star)
    dstar = [names[at]] if code.co_flags & inspect.CO_VARKEYWORDS else []
    params = pos + ["*" + n for n in star] + (["*"] if kwonly and not star else []) + kwonly
    params += ["**" + n for n in dstar]
    order = list(names[:npos]) + star + list(names[npos:npos + nkw]) + dstar
    return ", ".join(params), order


# The entry's check that the globals its compiled code read are bound as they were
# (`Dispatcher.fresh`, inline: a method call would double the cost of a call), and the
# class constants any compiled code holds (`lowering.guards.BAKED`).
_GUARD_SRC = ("        for {p}gd, {p}gn, {p}gv in {p}dsp.guard:\n"
              "            if {p}gd.get({p}gn, {p}M) is not {p}gv:\n"
              "                break\n"
              "        else:\n"
              "          for {p}gd, {p}gn, {p}gv in {p}baked:\n"
              "            if {p}gd.get({p}gn, {p}M) is not {p}gv:\n"
              "                break\n"
              "          else:\n")


def _entry_for(d: Dispatcher, func: Any) -> Callable:
    """The user-facing call: look the argument classes up in `d.fast`, else slow path.
    For a Python function it has the function's own parameters (names, defaults,
    keyword-only, *args, **kwargs) and code name, so Python binds a call and words a
    TypeError exactly as for the function itself; the arguments then go on in the IR's
    order.  Without a function (an IR) it takes `*args`."""
    if func is None:
        env = {"fast_get": d.fast.get, "slow": d.call_slow, "dsp": d, "M": guards.MISSING,
               "baked": guards.BAKED}
        src = ("def call(*args):\n"
               "    w = fast_get(tuple(map(type, args)))\n"
               "    if w is not None:\n" + _GUARD_SRC.format(p="") +
               "            return w(*args)\n"
               "    return slow(args)\n")
        exec(compile(src, "<jit entry>", "exec"), env)
        return env["call"]
    prefix = _free_prefix(func.__code__.co_varnames)
    params, order = _parameters(func, prefix)
    values = ", ".join(order) + ("," if len(order) == 1 else "")
    key = ", ".join(f"{prefix}type({n})" for n in order) + ("," if len(order) == 1 else "")
    env = {f"{prefix}fast_get": d.fast.get, f"{prefix}slow": d.call_slow,
           f"{prefix}type": type, f"{prefix}d": None, f"{prefix}dsp": d,
           f"{prefix}M": guards.MISSING, f"{prefix}baked": guards.BAKED}
    src = (f"def call({params}):\n"
           f"    {prefix}w = {prefix}fast_get(({key}))\n"
           f"    if {prefix}w is not None:\n" + _GUARD_SRC.format(p=prefix) +
           f"            return {prefix}w({', '.join(order)})\n"
           f"    return {prefix}slow(({values}))\n")
    exec(compile(src, "<jit entry>", "exec"), env)
    call = env["call"]
    call.__code__ = call.__code__.replace(co_name=func.__code__.co_name)
    call.__defaults__, call.__kwdefaults__ = func.__defaults__, func.__kwdefaults__
    return call


def _free_prefix(names: tuple) -> str:
    """A prefix for the entry's own names that no parameter of the function starts with."""
    prefix = "_zy_"
    while any(n.startswith(prefix) for n in names):
        prefix = "_" + prefix
    return prefix


class Listing:
    """A printable listing (what code_typed / code_llvm / code_native return)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


def _dispatcher(f: Any) -> Dispatcher:
    d = getattr(f, "dispatcher", None)
    return d if isinstance(d, Dispatcher) else dispatcher_for(f)


STAGES = ("primal", "forward", "adjoint", "pullback")


def _stage_listing(kind: str, stage: str, f: Any, args: tuple) -> Listing:
    """A listing of the compiled forward and/or adjoint of `f` (see jit.pullback.backend)."""
    if stage not in STAGES:
        raise ValueError(f"jit: unknown stage {stage!r} (one of {STAGES})")
    from jit.pullback.backend import stage_listing
    return Listing(stage_listing(kind, stage, f, args))


def code_typed(f: Any, *args: Any, stage: str = "primal") -> Listing:
    """The IR specialised on the types of `args`, every value annotated `::type`;
    `stage="forward"`, `"adjoint"` or `"pullback"` (both) shows the compiled J
    transform instead of the primal."""
    if stage != "primal":
        return _stage_listing("typed", stage, f, args)
    d = _dispatcher(f)
    t = infer(d.get_ir(), d.signature(args))
    listings = [str(t.ir)] + [str(c.target.ir) for c in _callees(t) if c is not t]
    return Listing("\n\n".join(dict.fromkeys(listings)))


def _callees(t: Typing) -> list:
    seen, todo, out = set(), [t], []
    while todo:
        cur = ENGINE.table.get(todo.pop().key)
        if cur is None or id(cur) in seen:
            continue
        seen.add(id(cur))
        out.append(type("C", (), {"target": cur})())
        todo.extend(c.target for c in cur.calls.values() if c.target is not None)
    return out


def code_llvm(f: Any, *args: Any, optimized: bool = True, stage: str = "primal") -> Listing:
    """The LLVM IR compiled for the types of `args` (after optimisation by default);
    `stage` as for `code_typed`."""
    if stage != "primal":
        return _stage_listing("llvm" if optimized else "llvm-raw", stage, f, args)
    d = _dispatcher(f)
    c = d.compile(d.signature(args), listing=True)
    return Listing(c.optimized_llvm() if optimized else c.llvm_text)


def code_native(f: Any, *args: Any, stage: str = "primal") -> Listing:
    """The machine code (assembly) compiled for the types of `args`; `stage` as for
    `code_typed`."""
    if stage != "primal":
        return _stage_listing("native", stage, f, args)
    d = _dispatcher(f)
    return Listing(d.compile(d.signature(args), listing=True).assembly())
