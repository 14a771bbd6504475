"""The native runtime: the LLVM target and MCJIT engine, the error record native code
fills in, the allocation arena, and the error sites that turn a status code back
into a Python exception.

Calling convention of every compiled user function (see `jit.codegen.function`):

    i32 impl(i64 depth, ptr out, args...)    status 0 = OK, 1 = ERROR, 2 = DEOPT

On ERROR the function has written `ERRINFO[1] = site id` and up to three details
(`ERRINFO[2:5]`) first; callers propagate the status unchanged.  DEOPT means "the
result does not fit the native types" (an int64 overflow, a negative integer
exponent, a complex power): the wrapper reruns the call with exact Python semantics.

Arrays allocated by compiled code come from `zy_alloc`: malloc'd blocks threaded on
one list (`ARENA_HEAD`); the wrapper releases everything allocated during a call
after copying returned arrays into numpy-owned memory.  `zy_release_below` frees a run
in the middle of the list (a `gradient` inside compiled code frees its temporaries
once it has copied its result, `jit.pullback.nested_gradient`).  A call allocates all its
arrays before it frees any, so glibc would hand the freed top of its heap back to the
kernel after every call and fault it in again on the next one (1.7 ms of page faults
in a 0.36 ms stencil): the arena tells glibc to keep it (`keep_freed_memory`).
"""
from __future__ import annotations

import ctypes
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm
from ssair import progress
from ssair.compile_lock import COMPILE_LOCK, compiling

OK, ERROR, DEOPT = 0, 1, 2
# Native call depth that raises RecursionError (CPython's limit, capped so that the
# native stack, a few hundred bytes per frame, never overflows).
MAX_DEPTH = min(max(sys.getrecursionlimit(), 1000), 20_000)

ERRINFO = (ctypes.c_int64 * 8)()
ERRINFO_ADDR = ctypes.addressof(ERRINFO)
ARENA_HEAD = ctypes.c_void_p(0)
ARENA_HEAD_ADDR = ctypes.addressof(ARENA_HEAD)

_LOCK = COMPILE_LOCK   # (one lock for all compilation: see ssair.compile_lock)
# In the names of the functions a module exports: another process's object files
# (`jit.disk_cache`) never define a name this process chooses.
PROCESS_TAG = os.urandom(6).hex()
_STATE: dict = {}


@dataclass(frozen=True)
class Site:
    """Where and what a native error is: the exception class, a message template
    formatted with the details the native code recorded, and the source location."""

    exc: type
    template: str
    func: str
    file: Any
    line: Any
    float_details: bool = False
    # A user's `raise E(args)`: per argument ("const", value) or (kind, detail
    # slot) with kind "int", "float" or "bool"; the exception is `E(*args)`, as
    # CPython makes it (no location appended).  None for the JIT's own errors.
    args: Any = None

    def exception(self, details: list) -> BaseException:
        if self.args is not None:
            return self.exc(*[_raised_arg(a, details) for a in self.args])
        if self.float_details:
            details = [ctypes.c_double.from_buffer(ctypes.c_int64(d)).value for d in details]
        msg = self.template.format(*details)
        where = f" (in {self.func} at {self.file}:{self.line})" if self.line else ""
        return self.exc(msg + where)


def _raised_arg(spec: tuple, details: list) -> Any:
    """One argument of a user's exception from its `Site.args` entry."""
    kind, v = spec
    if kind == "const":
        return v
    word = details[v]
    if kind == "float":
        return ctypes.c_double.from_buffer(ctypes.c_int64(word)).value
    return bool(word) if kind == "bool" else int(word)


SITES: list = [None]    # ids start at 1 (`jit.runtime.symbols`)
_SITE_IDS: dict = {}


@compiling
def site(exc: type, template: str, func: str, file: Any, line: Any,
         float_details: bool = False, args: Any = None) -> int:
    """The id of an error site (deduplicated)."""
    key = (exc, template, func, file, line, float_details, args)
    sid = _SITE_IDS.get(key)
    if sid is None:
        sid = len(SITES)
        SITES.append(Site(*key))
        _SITE_IDS[key] = sid
    return sid


CALLER_SLOT = 5     # ERRINFO: the site of the user statement that called a helper


def current_site() -> Site:
    """The site in ERRINFO after a native ERROR or DEOPT status, placed at the
    user's statement when it was raised inside a library helper."""
    where = SITES[ERRINFO[1]]
    caller = ERRINFO[CALLER_SLOT]
    ERRINFO[CALLER_SLOT] = 0
    if caller and internal_file(where.file):
        at = SITES[caller]
        where = Site(where.exc, where.template, at.func, at.file, at.line,
                     where.float_details, where.args)
    return where


class HostError(Exception):
    """The exception class of the error site of a failed host call (see
    `jit.runtime.host_calls`); never raised itself: the call's own exception is."""


HOST_ERROR = site(HostError, "{0}", "<host call>", "<host call>", 0)
HOST_PENDING: list = [None]     # the exception the failed host call raised


def current_error() -> BaseException:
    """The exception described by ERRINFO after a native ERROR status."""
    if ERRINFO[1] == HOST_ERROR:
        exc, HOST_PENDING[0] = HOST_PENDING[0], None
        return exc if exc is not None else RuntimeError("a call from compiled code failed")
    return current_site().exception(list(ERRINFO[2:5]))


_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PACKAGES = tuple(os.path.join(_ROOT, p) + os.sep for p in ("jit", "adjoint", "ssair", "lowering"))


def internal_file(file: Any) -> bool:
    """Code of zygopy itself: generated helpers (`<jit.library.elementwise _mul_aa2>`) and the
    plain-Python helpers of its packages (derivative rules compiled by the JIT)."""
    f = str(file)
    return f.startswith("<jit") or os.path.abspath(f).startswith(_PACKAGES)


def target_machine() -> Any:
    tm = _STATE.get("tm")
    if tm is None:
        return _new_target_machine("tm", 3)
    return tm


@compiling
def _new_target_machine(key: str, opt: int) -> Any:
    """The host's target machine with codegen at `opt`, made once (as `_STATE[key]`)."""
    tm = _STATE.get(key)
    if tm is None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                          features=llvm.get_host_cpu_features().flatten(),
                                          opt=opt, reloc="default", codemodel="jitdefault")
        _STATE[key] = tm
    return tm


def engine() -> Any:
    """The one MCJIT engine every compiled module is added to."""
    ee = _STATE.get("ee")
    return ee if ee is not None else _new_engine()


@compiling
def _new_engine() -> Any:
    ee = _STATE.get("ee")
    if ee is None:
        tm = target_machine()
        ee = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
        ee.set_object_cache(_object_compiled)
        _STATE["ee"] = ee
    return ee


def optimize(mod: Any, level: Any = 3) -> None:
    """Run LLVM's standard new-pass-manager pipeline (no fast-math flags are ever set);
    none at level `QUICK`."""
    if level == QUICK:
        return
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(target_machine(), pto)
    pb.getModulePassManager().run(mod, pb)


# The quick tier: a module of more than `QUICK_ABOVE_LINES` lines of IR (a loss of a
# few hundred lines, with its adjoint and its library helpers, makes 24 000 (36 000
# before records moved whole and array cotangents were summed by the runtime: the
# threshold went from 30 000 to 20 000 with that density); a sixth
# derivative by nested gradients 50 000 to 450 000) runs no IR passes and LLVM's fast
# instruction selection (codegen at -O0).  (SROA, instcombine and simplifycfg before
# it cost more than the shorter code generation they bought, and the code they gave
# was no faster.)  At -O3 such a module takes about 1 s per 10 000 lines to
# optimise and compile (80 s for the 590 000 lines of a sixth derivative over an
# array), all of it before the first result; at the quick tier about a tenth of that.
# The price is the speed of the code: elementwise loops over large arrays ran 6x
# slower at the quick tier (a 14 000-line MLP gradient at batch 1024: 128 ms against
# 20 ms), which is why shorter modules, where -O3 costs a second or two, keep it.
# `ZYGOPY_QUICK_COMPILE=0` in the environment compiles every module at its level.
QUICK = "quick"
QUICK_ABOVE_LINES = 20_000


def tier(text: str, level: Any) -> Any:
    """The level `compile_ir` compiles `text` at when asked for `level`: QUICK for a
    long module (see `QUICK_ABOVE_LINES`), else `level`."""
    if level and level != QUICK and text.count("\n") > QUICK_ABOVE_LINES and quick_enabled():
        return QUICK
    return level


def quick_enabled() -> bool:
    return os.environ.get("ZYGOPY_QUICK_COMPILE", "1").lower() not in ("0", "false", "no", "off")


def quick_target_machine() -> Any:
    """The target machine of the quick tier: the engine's, with codegen at -O0."""
    tm = _STATE.get("quick tm")
    return tm if tm is not None else _new_target_machine("quick tm", 0)


# glibc's vector math (libmvec) for the loops of numpy's elementwise functions, where
# its results are numpy's own bit for bit: libm name -> (vector function, lanes, the CPU
# feature it needs).  On AVX-512, libmvec's 8-lane tanh and numpy's SIMD tanh agree on
# float64 (tests/test_fusion.py checks it); libmvec's exp, log, sin, cos, ... differ
# from both numpy's and libm's in the last bit, so those keep libm.
VECTOR_MATH = {"tanh": ("_ZGVeN8v_tanh", 8, "avx512f")}


@compiling
def vector_variant(name: str) -> Any:
    """The scalar symbol (`zy_vec_<name>`: libm's function under another name) that a
    library loop calls for libm's `name` so that the loop vectoriser may widen it into
    libmvec's function; None where libmvec, the CPU feature or an entry is missing."""
    key = ("vector", name)
    if key not in _STATE:
        _STATE[key] = _find_vector_variant(name)
    return _STATE[key]


def _find_vector_variant(name: str) -> Any:
    entry = VECTOR_MATH.get(name)
    if entry is None:
        return None
    vector, _, feature = entry
    if f"+{feature}" not in llvm.get_host_cpu_features().flatten().split(","):
        return None
    try:
        mvec = ctypes.CDLL("libmvec.so.1", mode=ctypes.RTLD_GLOBAL)
        getattr(mvec, vector)
        scalar = ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None
    symbol = f"zy_vec_{name}"
    llvm.add_symbol(symbol, scalar)
    return symbol


def with_vector_math(text: str) -> str:
    """Module text whose `zy_vec_*` declarations name their libmvec variant (the
    `vector-function-abi-variant` attribute, which llvmlite's builder cannot write)."""
    extra, kept = [], []
    for k, (name, (vector, lanes, _)) in enumerate(VECTOR_MATH.items()):
        symbol = f"zy_vec_{name}"
        decl = re.search(rf'declare double @"?{symbol}"?\(double[^)]*\)', text)
        if decl is None:
            continue
        group = 9000 + k
        text = text.replace(decl.group(0), f"{decl.group(0)} #{group}")
        kept.append(f"ptr @zy.vec.keep.{k}")
        extra += [f"declare <{lanes} x double> @{vector}(<{lanes} x double>)",
                  f"@zy.vec.keep.{k} = internal global ptr @{vector}",
                  f"attributes #{group} = {{ nounwind memory(none) "
                  f'"vector-function-abi-variant"="_ZGV_LLVM_N{lanes}v_{symbol}({vector})" }}']
    if not extra:
        return text
    extra.append(f"@llvm.compiler.used = appending global [{len(kept)} x ptr] "
                 f'[{", ".join(kept)}], section "llvm.metadata"')
    return text + "\n" + "\n".join(extra) + "\n"


# A process-specific number in module text: `@"zy.<kind>.<name>"` (`jit.runtime.symbols`);
# the `live` kind is this process's only.
SYMBOL_PREFIX = "zy."
LIVE_PREFIX = SYMBOL_PREFIX + "live."
SYMBOL_RE = re.compile(r'@"(zy\.[A-Za-z0-9_.]+)"')


def runtime_symbol(name: str) -> str:
    """The symbol of the runtime's address `name` (`jit.runtime.symbols.RUNTIME`)."""
    return SYMBOL_PREFIX + "rt." + name


def with_symbol_declarations(text: str) -> str:
    """Module text with an external declaration for every symbol it refers to."""
    names = sorted(set(SYMBOL_RE.findall(text)))
    if not names:
        return text
    return text + "\n" + "\n".join(f'@"{n}" = external global i8' for n in names) + "\n"


@compiling
def compile_ir(text: str, level: int = 3, keep_object: bool = False,
               cache: bool = True) -> Any:
    """Parse, verify, optimise (at `level`; 0 skips the pipeline, for glue code that
    is straight-line already; a long module at QUICK, see `tier`) and JIT a module;
    returns the binding module, and with `keep_object` also the object file MCJIT
    linked (bytes, for the disk cache).

    With `cache`, the object file of the same text (compiled at the same level, by the
    same zygopy, LLVM and CPU) is linked from the disk cache when an earlier process
    compiled it (`jit.disk_cache.object_key`): the object is a function of the text,
    and every symbol the text names was bound in this process when the text was
    made.  The returned module is then a `LinkedModule`.  Text that names `live`
    symbols is not stored: no other process makes the same text."""
    text = with_symbol_declarations(with_vector_math(text))
    level = tier(text, level)
    key = None
    if cache and f'@"{LIVE_PREFIX}' not in text:
        from jit import disk_cache
        key = disk_cache.object_key(text, level)
        entry = disk_cache.load(key) if key is not None else None
        if entry is not None:
            try:
                load_object(entry["object"])
                mod = LinkedModule(text, level)
                return (mod, entry["object"]) if keep_object else mod
            except Exception as exc:  # noqa: BLE001 - compiled instead
                import warnings
                warnings.warn(f"zygopy: cannot link the cache entry {key.path} ({exc})",
                              disk_cache.CacheWarning, stacklevel=2)
    mod, obj = _compile(text, level)
    if key is not None and obj is not None:
        disk_cache.store(key, {"object": obj})
    return (mod, obj) if keep_object else mod


class LinkedModule:
    """A module whose object file came from the disk cache: its optimised IR is made
    again on demand, for the listings (`str`, `native_assembly`)."""

    def __init__(self, text: str, level: int) -> None:
        self.text, self.level, self._module = text, level, None

    def module(self) -> Any:
        if self._module is None:
            mod = llvm.parse_assembly(self.text)
            if self.level:
                optimize(mod, self.level)
            self._module = mod
        return self._module

    def __str__(self) -> str:
        return str(self.module())


def _compile(text: str, level: Any) -> tuple:
    """(the binding module, its object file) of `text`, linked into the engine."""
    if len(text) > 100_000:
        progress.stage(f"LLVM: optimising and compiling {len(text) // 1024} kB of IR"
                       + (" (quick tier)" if level == QUICK else ""))
    if level == QUICK:
        return _compile_quick(text)
    with _LOCK:
        mod = llvm.parse_assembly(text)
        mod.verify()
        if level:
            optimize(mod, level)
        ee = engine()
        _OBJECT[:] = [mod]
        try:
            ee.add_module(mod)
            ee.finalize_object()
        finally:
            kept, _OBJECT[:] = _OBJECT[1:], []
        ee.run_static_constructors()
    return mod, (kept[0] if kept else None)


def _compile_quick(text: str) -> tuple:
    """`_compile` at QUICK: the object file comes from the quick tier's target machine
    (MCJIT's own codegen runs at the engine's -O3) and is linked as a cached one is."""
    with _LOCK:
        mod = llvm.parse_assembly(text)
        mod.verify()
        obj = quick_target_machine().emit_object(mod)
        ee = engine()
        ee.add_object_file(llvm.ObjectFileRef.from_data(obj))
        ee.finalize_object()
    return mod, obj


_OBJECT: list = []     # [module to keep the object of, its bytes] while compile_ir links


def _object_compiled(mod: Any, data: bytes) -> None:
    # (MCJIT compiles every module still pending, the engine's empty first one too)
    if _OBJECT and _OBJECT[0] is not None and mod is _OBJECT[0]:
        _OBJECT.append(data)


@compiling
def load_object(data: bytes) -> None:
    """Link an object file (from `compile_ir(..., keep_object=True)` in some process,
    its symbols bound: `jit.runtime.symbols.bind`) into the engine."""
    with _LOCK:
        ee = engine()
        ee.add_object_file(llvm.ObjectFileRef.from_data(data))
        ee.finalize_object()


@compiling
def compiled_once(text: str, name: str) -> int:
    """The address of function `name` of the module `text`, compiled on first use
    (the run-time helpers written as LLVM text)."""
    key = ("once", name)
    addr = _STATE.get(key)
    if addr is None:
        compile_ir(text)
        addr = _STATE[key] = function_address(name)
    return addr


def function_address(name: str) -> int:
    return engine().get_function_address(name)


def native_assembly(mod: Any) -> str:
    return target_machine().emit_assembly(mod.module() if isinstance(mod, LinkedModule)
                                          else mod)


# ---------------------------------------------------------------------------
# The arena: written in LLVM IR once, called through symbols (`jit.runtime.symbols`).

# Per-thread state: a thread that runs compiled code without the GIL (`jit.batch`'s
# workers) gives it its own error record and arena head through a pthread key,
#     struct state { i64 errinfo[8]; ptr arena_head; }
# set around its native calls by `zy_set_thread_state`; every other thread (those
# holding the GIL) uses ERRINFO and ARENA_HEAD.  Compiled code finds the record and
# the head through `zy_errinfo_ptr()` and `zy_arena_head_ptr()`, which (as the
# inline test of `jit.runtime.symbols.errinfo_ptr`) ask the key only while a batch
# runs (`THREADED`).
_ARENA_IR = r"""
declare ptr @malloc(i64)
declare void @free(ptr)
declare ptr @pthread_getspecific(i32)
declare i32 @pthread_setspecific(i32, ptr)

; the calling thread's state, or null (no batch runs, or the thread set none)
define ptr @zy_thread_state() {
entry:
  %n = load i64, ptr THREADED
  %alone = icmp eq i64 %n, 0
  br i1 %alone, label %none, label %ask
none:
  ret ptr null
ask:
  %k = load i32, ptr KEY
  %s = call ptr @pthread_getspecific(i32 %k)
  ret ptr %s
}

define ptr @zy_errinfo_ptr() {
entry:
  %s = call ptr @zy_thread_state()
  %none = icmp eq ptr %s, null
  %p = select i1 %none, ptr ERRINFO, ptr %s
  ret ptr %p
}

define ptr @zy_arena_head_ptr() {
entry:
  %s = call ptr @zy_thread_state()
  %none = icmp eq ptr %s, null
  %own = getelementptr i8, ptr %s, i64 64
  %p = select i1 %none, ptr HEAD, ptr %own
  ret ptr %p
}

define void @zy_set_thread_state(ptr %s) {
entry:
  %k = load i32, ptr KEY
  %r = call i32 @pthread_setspecific(i32 %k, ptr %s)
  ret void
}

define ptr @zy_alloc(i64 %n) {
entry:
  %size = add i64 %n, 16
  %p = call ptr @malloc(i64 %size)
  %null = icmp eq ptr %p, null
  br i1 %null, label %fail, label %ok
fail:
  ret ptr null
ok:
  %headp = call ptr @zy_arena_head_ptr()
  %old = load ptr, ptr %headp
  store ptr %old, ptr %p
  store ptr %p, ptr %headp
  %data = getelementptr i8, ptr %p, i64 16
  ret ptr %data
}

; free the blocks from `first` down the list to (not including) `mark`
define void @zy_free_run(ptr %first, ptr %mark) {
entry:
  br label %loop
loop:
  %cur = phi ptr [ %first, %entry ], [ %next, %body ]
  %done = icmp eq ptr %cur, %mark
  br i1 %done, label %exit, label %body
body:
  %next = load ptr, ptr %cur
  call void @free(ptr %cur)
  br label %loop
exit:
  ret void
}

define void @zy_release(ptr %mark) {
entry:
  %headp = call ptr @zy_arena_head_ptr()
  %head = load ptr, ptr %headp
  call void @zy_free_run(ptr %head, ptr %mark)
  store ptr %mark, ptr %headp
  ret void
}

; free the blocks from keep's next one down to mark, and link keep to mark: what was
; allocated between mark and keep goes, keep and the newer blocks stay
define void @zy_release_below(ptr %keep, ptr %mark) {
entry:
  %first = load ptr, ptr %keep
  call void @zy_free_run(ptr %first, ptr %mark)
  store ptr %mark, ptr %keep
  ret void
}
"""


# glibc's mallopt parameters (malloc.h) and the values the arena sets
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
KEEP_FREED_BYTES = 64 << 20     # free memory at the heap's top glibc keeps
HEAP_UP_TO_BYTES = 32 << 20     # blocks below this come from the heap, not from mmap
_MALLOC_ENV = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")


def keep_freed_memory() -> bool:
    """Keep glibc from trimming the heap after each compiled call: up to
    `KEEP_FREED_BYTES` freed at its top stay mapped, and blocks below
    `HEAP_UP_TO_BYTES` come from the heap (setting one threshold turns off glibc's
    own adjustment of both; these are the largest values it adjusts them to).  Left
    alone where the environment sets malloc's parameters or the C library is not
    glibc.  True when it set them."""
    if any(k in os.environ for k in _MALLOC_ENV):
        return False
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None or not hasattr(ctypes.CDLL(None), "gnu_get_libc_version"):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, HEAP_UP_TO_BYTES)
                and mallopt(_M_TRIM_THRESHOLD, KEEP_FREED_BYTES))


def arena_functions() -> tuple:
    """(address of zy_alloc, address of zy_release), compiled on first use (which
    also sets glibc's malloc parameters, `keep_freed_memory`)."""
    addrs = _STATE.get("arena")
    return addrs if addrs is not None else _compile_arena()


@compiling
def _compile_arena() -> tuple:
    addrs = _STATE.get("arena")
    if addrs is None:
        keep_freed_memory()
        text = _ARENA_IR
        for word, name, addr in (("HEAD", "arena_head", ARENA_HEAD_ADDR),
                                 ("ERRINFO", "errinfo", ERRINFO_ADDR),
                                 ("KEY", "thread_key", thread_key_address()),
                                 ("THREADED", "threaded", threaded_address())):
            llvm.add_symbol(runtime_symbol(name), addr)
            text = text.replace(word, f'@"{runtime_symbol(name)}"')
        compile_ir(text)
        addrs = (function_address("zy_alloc"), function_address("zy_release"))
        _STATE["release below"] = function_address("zy_release_below")
        for name in ("zy_errinfo_ptr", "zy_arena_head_ptr", "zy_set_thread_state"):
            _STATE[name] = function_address(name)
        _STATE["release"] = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addrs[1])
        _STATE["arena"] = addrs       # (last: another thread reads the others after it)
    return addrs


def errinfo_address() -> int:
    return ERRINFO_ADDR


THREAD_KEY = ctypes.c_uint32(0)
# How many batches run native code on threads without the GIL (`jit.batch`, which
# changes it holding the GIL): while 0, compiled code uses ERRINFO and ARENA_HEAD
# without asking for the thread's state.
THREADED = ctypes.c_int64(0)


def threaded_address() -> int:
    return ctypes.addressof(THREADED)


@compiling
def thread_key_address() -> int:
    """The address of the pthread key of the per-thread state (created on first use)."""
    if "key" not in _STATE:
        libc = ctypes.CDLL(None)
        if libc.pthread_key_create(ctypes.byref(THREAD_KEY), None) != 0:
            raise MemoryError("zygopy: cannot create a pthread key")
        _STATE["key"] = ctypes.addressof(THREAD_KEY)
    return _STATE["key"]


def runtime_function(name: str) -> int:
    """The address of one of the arena module's functions (`zy_errinfo_ptr`,
    `zy_arena_head_ptr`, `zy_set_thread_state`)."""
    arena_functions()
    return _STATE[name]


class ThreadState(ctypes.Structure):
    """A thread's own error record and arena head (see `_ARENA_IR`)."""

    _fields_ = [("errinfo", ctypes.c_int64 * 8), ("arena_head", ctypes.c_void_p)]


def arena_head_address() -> int:
    return ARENA_HEAD_ADDR


def errinfo_ptr_address() -> int:
    return runtime_function("zy_errinfo_ptr")


def arena_head_ptr_address() -> int:
    return runtime_function("zy_arena_head_ptr")


def alloc_address() -> int:
    return arena_functions()[0]


def release_address() -> int:
    return arena_functions()[1]


def release_below_address() -> int:
    """Address of `zy_release_below(keep, mark)` (see `_ARENA_IR`): a block's data starts
    16 bytes after the block, whose first word links to the next older block."""
    arena_functions()
    return _STATE["release below"]


def arena_mark() -> Any:
    return ARENA_HEAD.value


def arena_release(mark: Any) -> None:
    """Free every block allocated since `mark` (a value of `arena_mark()`)."""
    if ARENA_HEAD.value != mark:
        arena_functions()
        _STATE["release"](mark)


BLOCK_SLOT = 6   # ERRINFO index a compiled pullback's forward entry stores its block in


class NativeDeopt(OverflowError):
    """The compiled forward met a value beyond its native types (an int64 overflow):
    `backend="auto"` reruns the pullback in the interpreter."""


def adjoint_failed() -> None:
    """The error path of a compiled adjoint: raise its error."""
    if ERRINFO[0] == ERROR:
        raise current_error()
    site = current_site()      # (a DEOPT: the adjoint cannot be rerun)
    if isinstance(site.exc, type) and issubclass(site.exc, Exception) \
            and not issubclass(site.exc, OverflowError):    # (a message Python would format)
        raise site.exc(f"{site.template} in the compiled adjoint of {site.func} at "
                       f"{site.file}:{site.line} (backend='interp' gives the message)")
    raise OverflowError(f"{site.template} in the compiled adjoint of {site.func} at "
                        f"{site.file}:{site.line}")
