"""Compiled code on disk, so that a second process does not compile again.

What is cached, at two levels:
- a signature compiled by `jit.api.compile_typing` for a plain Python function (no
  closure cells): a `jit` function's primal, and the one-call `gradient` /
  `value_and_grad` of `jit.pullback.fast_gradient`.  An entry holds the object file
  MCJIT linked (its function and its native wrapper), the symbols that object refers
  to with their recipes (`jit.runtime.symbols`), and the signature the Python wrappers
  are built from.  Loading one binds the symbols, links the object and builds the
  wrappers: no lowering, no type inference, no LLVM pass.
- the object file of any other module, keyed by its LLVM text (`object_key`): the
  runtime's modules and compiled pullbacks (`pullback`, and `gradient` of a function
  of float arrays).  A process that makes the same text links the object instead of
  running LLVM's passes and code generation; the lowering, J transform and type
  inference before it still run.

The key (a SHA-256) covers
- the bytecode of the function and of every function it can reach through its globals,
  default values and the attributes of the modules it reads, transitively, outside the
  installed libraries; with the values of the globals it names (`fingerprint`);
- the argument types and what is compiled (primal, gradient, value_and_grad);
- the Python, numpy, llvmlite and LLVM versions, the CPU and its features, and the
  files of zygopy itself (their sizes and modification times).

So a change to a callee in another module gives another key.  A function whose
globals hold something without a stable description (an object of a user class, a
function made at run time with a closure) is not cached; neither is code that
addresses a module-level array or calls back into Python (`symbols.cacheable`).

Where: `__pycache__/` beside the function's source file when that is writable (as
Python's bytecode cache and Numba's `cache=True`), else `$XDG_CACHE_HOME/zygopy`
(`~/.cache/zygopy`).  Entries are written to a temporary file and renamed into place,
so concurrent writers never leave a partial entry; an entry that cannot be read is
ignored with a `CacheWarning` and written again.  `ZYGOPY_CACHE=0` in the environment,
or `jit.disk_cache.enable(False)`, turns the cache off; `ZYGOPY_CACHE_DIR` puts every
entry in one directory.  `zygopy cache info` / `zygopy cache clear` show and remove the
files (`jit.cache_files`), and so does `adjoint.clear_cache(disk=True)`.
"""
from __future__ import annotations

import builtins
import hashlib
import os
import pickle
import sys
import sysconfig
import tempfile
import types
import warnings
from typing import Any, Optional

import numpy as np

MAGIC = b"ZYGOPY-CACHE-1\n"
_STATE: dict = {}
# entries read, written and ignored (unreadable) by this process
STATS = {"loaded": 0, "written": 0, "ignored": 0}


class CacheWarning(UserWarning):
    """A cache entry was ignored (unreadable) or could not be written."""


def enable(flag: bool = True) -> None:
    """Turn the disk cache on or off for this process (it starts on unless the
    environment says `ZYGOPY_CACHE=0`)."""
    _STATE["enabled"] = bool(flag)


def enabled() -> bool:
    flag = _STATE.get("enabled")
    if flag is None:
        flag = _STATE["enabled"] = os.environ.get("ZYGOPY_CACHE", "1").lower() not in (
            "0", "off", "no", "false")
    return flag


class Key:
    """Where an entry lives and the digest it must carry."""

    def __init__(self, path: str, digest: str) -> None:
        self.path = path
        self.digest = digest

    def __repr__(self) -> str:
        return f"Key({self.path!r})"


def key_for(func: Any, kind: str, argtypes: tuple) -> Optional[Key]:
    """The key of `func` compiled as `kind` for `argtypes`, or None (not cacheable, or
    the cache is off)."""
    if not enabled() or not isinstance(func, types.FunctionType) or func.__closure__:
        return None
    if not all(_plain_type(t) for t in argtypes):
        return None
    try:
        pickle.dumps(argtypes)
        described = Fingerprint().function(func)
    except Uncacheable:
        return None
    except Exception:  # noqa: BLE001 - an argument type that does not pickle
        return None
    h = hashlib.sha256()
    for part in (environment(), kind, repr(argtypes), described):
        h.update(part.encode())
        h.update(b"\0")
    digest = h.hexdigest()
    directory = _directory(func.__code__.co_filename)
    if directory is None:
        return None
    used_directories().add(directory)
    stem = os.path.splitext(os.path.basename(func.__code__.co_filename))[0]
    name = "".join(c if c.isalnum() or c in "_." else "_" for c in func.__qualname__)
    return Key(os.path.join(directory, f"{stem}.{name}.{kind}.{digest[:24]}.zyc"), digest)


def object_key(text: str, level: int) -> Optional[Key]:
    """The key of the object file of LLVM module text (`jit.runtime.native.compile_ir`:
    the runtime's modules, compiled pullbacks), in the user cache folder."""
    if not enabled():
        return None
    digest = hashlib.sha256(f"{environment()}\0object {level}\0{text}".encode()).hexdigest()
    directory = os.environ.get("ZYGOPY_CACHE_DIR") or _user_directory()
    if directory is None:
        return None
    used_directories().add(os.path.join(directory, "objects"))
    return Key(os.path.join(directory, "objects", f"{digest[:24]}.zyc"), digest)


def _plain_type(t: Any) -> bool:
    """Numbers, bools, None, strings, arrays and containers of them: an object's class,
    a function or a closure in the signature is compiled in every process (its code is
    not part of the key)."""
    from jit.types import ArrayT, RecordT, Scalar, StrT, TupleT
    if isinstance(t, RecordT):      # (its class's methods are not part of the key)
        return False
    if isinstance(t, TupleT):
        return all(_plain_type(e) for e in t.elems)
    return isinstance(t, (Scalar, ArrayT, StrT))


def load(key: Key) -> Optional[dict]:
    """The entry stored under `key`, or None (absent, or unreadable: a CacheWarning)."""
    try:
        with open(key.path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    try:
        if not data.startswith(MAGIC):
            raise ValueError("not a zygopy cache file")
        entry = pickle.loads(data[len(MAGIC):])
        if not isinstance(entry, dict) or entry.get("digest") != key.digest:
            raise ValueError("its key does not match")
        STATS["loaded"] += 1
        return entry
    except Exception as exc:  # noqa: BLE001 - a corrupt entry is ignored, not fatal
        STATS["ignored"] += 1
        warnings.warn(f"zygopy: ignoring the unreadable cache entry {key.path} ({exc}); "
                      "it will be compiled and written again", CacheWarning, stacklevel=3)
        return None


def store(key: Key, entry: dict) -> bool:
    """Write `entry` under `key` atomically (a temporary file renamed into place);
    False, with a CacheWarning, when it cannot be written."""
    entry = dict(entry, digest=key.digest)
    try:
        data = MAGIC + pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
        directory = os.path.dirname(key.path)
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".zyc-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, key.path)
        except BaseException:
            os.unlink(tmp)
            raise
        STATS["written"] += 1
        return True
    except Exception as exc:  # noqa: BLE001 - the cache is an optimisation
        warnings.warn(f"zygopy: cannot write the cache entry {key.path} ({exc})",
                      CacheWarning, stacklevel=3)
        return False


def _directory(source: str) -> Optional[str]:
    forced = os.environ.get("ZYGOPY_CACHE_DIR")
    if forced:
        return forced
    if os.path.isfile(source):
        here = os.path.join(os.path.dirname(os.path.abspath(source)), "__pycache__")
        if _writable(here):
            return here
    user = _user_directory()
    if user is None:
        return None
    # entries of files with the same name in different folders stay apart
    tag = hashlib.sha1(os.path.abspath(source).encode()).hexdigest()[:12]
    return os.path.join(user, tag)


def _user_directory() -> Optional[str]:
    user = central_directory()
    return user if _writable(user) else None


def central_directory() -> str:
    """The folder of the entries that do not go beside their source file:
    `$ZYGOPY_CACHE_DIR` when set, else `$XDG_CACHE_HOME/zygopy` (`~/.cache/zygopy`).
    Not created here."""
    forced = os.environ.get("ZYGOPY_CACHE_DIR")
    if forced:
        return forced
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "zygopy")


def used_directories() -> set:
    """The folders this process has read or written entries in (a `__pycache__/` beside
    a source file among them), so that clearing the cache finds them."""
    return _STATE.setdefault("used", set())


def _writable(directory: str) -> bool:
    known = _STATE.setdefault("writable", {})
    ok = known.get(directory)
    if ok is None:
        try:
            os.makedirs(directory, exist_ok=True)
            ok = os.access(directory, os.W_OK)
        except OSError:
            ok = False
        known[directory] = ok
    return ok


def environment() -> str:
    """What every key covers besides the function (computed once per process)."""
    env = _STATE.get("environment")
    if env is None:
        import llvmlite
        import llvmlite.binding as llvm
        parts = [sys.implementation.cache_tag, sys.version, np.__version__,
                 llvmlite.__version__, repr(llvm.llvm_version_info), llvm.get_host_cpu_name(),
                 llvm.get_host_cpu_features().flatten(), _own_files()]
        env = _STATE["environment"] = "\n".join(parts)
    return env


def _own_files() -> str:
    """zygopy's own modules: name, size and modification time of each (a changed
    compiler gives other keys)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    for package in ("ssair", "lowering", "adjoint", "jit"):
        for folder, dirs, files in sorted(os.walk(os.path.join(root, package))):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(folder, name))
                    h.update(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


class Uncacheable(Exception):
    """A value with no description that is the same in every process."""


def _library_roots() -> tuple:
    roots = _STATE.get("roots")
    if roots is None:
        paths = sysconfig.get_paths()
        own = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        roots = _STATE["roots"] = tuple(
            {os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "purelib", "platlib")}
            | {os.path.join(own, p) + os.sep for p in ("ssair", "lowering", "adjoint", "jit")})
    return roots

_SCALARS = (int, float, complex, bool, str, bytes, type(None), type(Ellipsis), np.generic)


def _in_library(obj: Any) -> bool:
    """Code of an installed library or of zygopy (its version is in the key)."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    if module is None:
        return False
    path = getattr(module, "__file__", None)
    return path is None or os.path.abspath(path).startswith(_library_roots())


class Fingerprint:
    """A text that changes when anything the compiled code was built from changes
    (see the module docstring)."""

    def __init__(self) -> None:
        self.parts: list = []
        self.seen: dict = {}     # id(function) -> its number in this fingerprint
        self.keep: list = []     # (so that no id is reused while it is built)

    def function(self, func: Any) -> str:
        self._function(func)
        return "\n".join(self.parts)

    def _function(self, func: Any) -> None:
        if id(func) in self.seen:
            self.parts.append(f"again {self.seen[id(func)]}")
            return
        self.seen[id(func)] = len(self.seen)
        self.keep.append(func)
        if func.__closure__:
            raise Uncacheable(f"{func.__qualname__} has closure cells")
        if hasattr(func, "__zygopy_generated__"):   # its IR is not its bytecode's
            raise Uncacheable(f"{func.__qualname__} is a function a transform built")
        code = func.__code__
        self.parts.append(f"def {func.__module__}.{func.__qualname__}")
        self._code(code)
        for d in (func.__defaults__ or ()):
            self._value(d)
        for k, d in sorted((func.__kwdefaults__ or {}).items()):
            self.parts.append(f"kw {k}")
            self._value(d)
        names = sorted(_names(code))
        scope = func.__globals__
        for name in names:
            if name in scope:
                self.parts.append(f"global {name}")
                self._value(scope[name], names)
            elif hasattr(builtins, name):
                self.parts.append(f"builtin {name}")

    def _code(self, code: types.CodeType) -> None:
        lines = code.co_linetable          # (the lines of error sites)
        self.parts.append(repr((code.co_code.hex(), code.co_names, code.co_varnames,
                                code.co_freevars, code.co_cellvars, code.co_argcount,
                                code.co_kwonlyargcount, code.co_flags, code.co_filename,
                                code.co_firstlineno, lines.hex())))
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                self._code(c)
            else:
                self.parts.append(repr(c))

    def _value(self, v: Any, names: tuple = ()) -> None:
        add = self.parts.append
        if isinstance(v, _SCALARS):
            add(f"{type(v).__name__} {v!r}")
        elif isinstance(v, (tuple, list, frozenset, set)):
            add(f"{type(v).__name__} {len(v)}")
            for x in (sorted(v, key=repr) if isinstance(v, (set, frozenset)) else v):
                self._value(x)
        elif isinstance(v, dict):
            add(f"dict {len(v)}")
            for k, x in v.items():
                self._value(k)
                self._value(x)
        elif isinstance(v, np.ndarray):
            if v.dtype.hasobject:
                raise Uncacheable("an object array")
            add(f"array {v.dtype.str} {v.shape} "
                f"{hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()}")
        elif isinstance(v, types.ModuleType):
            add(f"module {v.__name__}")
            if not _in_library(v):     # its attributes this code names
                for name in names:
                    if name in vars(v):
                        add(f"attribute {name}")
                        self._value(vars(v)[name])
        elif isinstance(v, types.FunctionType) and not _in_library(v):
            inner = getattr(v, "py_func", None)     # a `jit.jit` function: its code
            self._function(inner if isinstance(inner, types.FunctionType) else v)
        elif isinstance(v, type) and not _in_library(v):
            add(f"class {v.__module__}.{v.__qualname__}")
            for c in v.__mro__:      # its bases' methods and class-level numbers too
                if c is not v and _in_library(c):
                    continue
                add(f"base {c.__module__}.{c.__qualname__}")
                for name, x in sorted(vars(c).items()):
                    if isinstance(x, (types.FunctionType, staticmethod, classmethod)):
                        add(f"method {name}")
                        self._value(getattr(x, "__func__", x))
                    elif type(x) in (int, float, bool, str) and not name.startswith("__"):
                        add(f"data {name} {x!r}")
        else:
            module = getattr(v, "__module__", None)
            qualname = getattr(v, "__qualname__", None) or getattr(v, "__name__", None)
            if not (isinstance(qualname, str) and isinstance(module, str) and _in_library(v)):
                raise Uncacheable(f"no stable description of {type(v).__name__}")
            add(f"library {module}.{qualname}")


def _names(code: types.CodeType) -> set:
    """The global and attribute names `code` and the code nested in it use."""
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names(c)
    return out


__all__ = ["CacheWarning", "Fingerprint", "Key", "central_directory", "enable", "enabled",
           "key_for", "load", "object_key", "store", "used_directories"]
