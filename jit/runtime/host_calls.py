"""Calls from compiled code back into Python: the JIT's escape hatch.

A statement the JIT cannot implement natively, but whose argument and result types it
knows (a numpy function without a native loop, `print`, the Python version of a
derivative rule), is compiled as a call of one C callback, `zy_host(site, args, out)`:

  * `site` is the index of a `HostSite` in `SITES`: the Python callable, the constant
    operands (baked in at compile time), the types of the operands passed at run time,
    and the result type;
  * `args` and `out` are arrays of 8-byte slots.  A value takes `slot_count(t)` slots: a
    number one (bool and int64 as integers, float64 as its bits), a string one (its id in
    `jit.types.STRINGS`), a 1-D or 2-D array five (data, shape0, shape1, stride0,
    stride1, strides in bytes), an n-D array 1 + 2n (data, shapes, strides), a tuple or
    list the slots of its elements in order, a built list three (data, length,
    capacity: its entries are stored in this same word layout), a Python object one
    (its address), None none.

The callback rebuilds the Python values (an array as a read-only numpy view of the
compiled code's memory: inputs are never modified; writable for an array the
callable stores into, `HostSite.writes_into`), calls the callable, and writes the
result into `out`.  An array result is copied into the runtime arena (`zy_alloc`), so it
lives exactly as long as arrays compiled code allocates itself.  The result must have
the declared type: a number where a number is declared, an array of the declared rank;
an int result where float64 is declared is widened, anything else is a TypeError
naming the callable.  In a derivative rule's site (`cotangents=True`), None stands for a
zero cotangent (a NULL array or list, 0.0: in its result, and in its cotangent operands,
`cotangent_args`) and a cotangent for a value that has none (an integer) is dropped.

An exception raised by the callable is kept (`runtime.HOST_PENDING`) and reported as a
native ERROR at `runtime.HOST_ERROR`: the user gets the very exception Python raised,
as CPython would.

Compiled code runs with the GIL held (see `jit.api`), so the callback runs Python
directly.
"""
from __future__ import annotations

import ctypes
import operator
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from jit.runtime import host_codec
from jit.runtime import native as runtime
from jit.types import (BOOL, FLOAT32, FLOAT64, INT32, INT64, INT64_MAX, INT64_MIN, NONE,
                       NUMPY_DTYPE, STRINGS, ArrayT, BuiltListT, DictT, FormattedT, ListLiteral,
                       ListT, ObjectT, RecordT, StrT, TupleT, Type)


_NUMPY_DTYPES = NUMPY_DTYPE


@dataclass
class HostSite:
    """One host call: `fn(*args, **kwargs)` with `args`/`kwargs` built from `recipe`."""
    fn: Callable
    name: str
    # one entry per positional argument, then one per keyword (names in `kwnames`):
    # ("const", value) or ("slot", type)
    recipe: list
    kwnames: tuple
    result: Type
    cotangents: bool = False
    # with `cotangents`: the positions in `recipe` of the cotangent operands, whose
    # NULL arrays and lists are None (the primal values beside them are never None)
    cotangent_args: tuple = (0,)
    # the positions in `recipe` of arrays the callable writes into (`a[idx] = v` by
    # numpy): a writable view of compiled code's memory, where the others are read-only
    writes_into: tuple = ()
    argtypes: list = field(default_factory=list)
    # the fast codec (`host_codec.plan`), planned at the first call; False: the generic one
    codec: Any = None

    def __post_init__(self) -> None:
        self.argtypes = [t for kind, t in self.recipe if kind == "slot"]
        self.nargs = sum(slot_count(t) for t in self.argtypes)
        self.nout = slot_count(self.result)
        self.arg_words = ctypes.c_int64 * max(self.nargs, 1)
        self.out_words = ctypes.c_int64 * max(self.nout, 1)


SITES: list = [None]    # ids start at 1 (`jit.runtime.symbols`)


def register(site: HostSite) -> int:
    SITES.append(site)
    return len(SITES) - 1


def slot_count(t: Type) -> int:
    """How many 8-byte slots a value of `t` takes (see the module docstring)."""
    if isinstance(t, ArrayT):
        return array_slots(t.ndim)
    if isinstance(t, BuiltListT):
        return 3
    if isinstance(t, TupleT):
        return sum(slot_count(e) for e in t.elems)
    if t in (BOOL, INT64, FLOAT64, FLOAT32, INT32) or isinstance(t, (StrT, ObjectT)):
        return 1
    if t == NONE:
        return 0
    raise TypeError(f"jit: a value of type {t} cannot cross a host call")


def array_slots(ndim: int) -> int:
    """data, shape0, shape1, stride0, stride1 for 1-D and 2-D arrays; data, the shapes
    and the strides for more dimensions (the layouts of `jit.codegen.function`)."""
    return 5 if ndim <= 2 else 1 + 2 * ndim


def passable(t: Type) -> bool:
    try:
        slot_count(t)
        return True
    except TypeError:
        return False


# -- reading the slots -----------------------------------------------------------------

def _decode(t: Type, words: Any, k: int, cotangents: bool, writable: bool = False) -> tuple:
    if isinstance(t, ArrayT):
        n = array_slots(t.ndim)
        if cotangents and words[k] == 0:     # a NULL array: the None cotangent
            return None, k + n
        return _array_view(t, [words[k + i] for i in range(n)], writable), k + n
    if isinstance(t, BuiltListT):
        return _built_list(t, words[k], words[k + 1], cotangents), k + 3
    if isinstance(t, TupleT):
        out = []
        for e in t.elems:
            v, k = _decode(e, words, k, cotangents)
            out.append(v)
        if isinstance(t, DictT):
            return dict(zip(t.keys, out)), k
        if isinstance(t, FormattedT):
            return t.template.format(*out), k
        if isinstance(t, RecordT) and not cotangents:    # the object itself
            from adjoint.pytrees import build_record
            return build_record(t.cls, t.keys, tuple(out), t.aux), k
        return (list(out) if isinstance(t, ListT) else tuple(out)), k
    if t == FLOAT64:
        return ctypes.c_double.from_buffer(ctypes.c_int64(words[k])).value, k + 1
    if t == INT64:
        return int(words[k]), k + 1
    if t == FLOAT32:
        return np.float32(ctypes.c_double.from_buffer(ctypes.c_int64(words[k])).value), k + 1
    if t == INT32:
        return np.int32(words[k]), k + 1
    if t == BOOL:
        return bool(words[k] & 1), k + 1
    if isinstance(t, StrT):
        return STRINGS[words[k]], k + 1
    if isinstance(t, ObjectT):       # borrowed from the caller, alive during the call
        return ctypes.cast(words[k], ctypes.py_object).value, k + 1
    return None, k


def _built_list(t: BuiltListT, data: int, n: int, cotangents: bool) -> Any:
    """The Python list of a built list's entries (None for a NULL cotangent list)."""
    if not data:
        return None if cotangents else []
    width = slot_count(t.elem)
    words = (ctypes.c_int64 * (n * width)).from_address(data)
    out, k = [], 0
    for _ in range(n):
        v, k = _decode(t.elem, words, k, cotangents)
        out.append(v)
    return out


def _array_view(t: ArrayT, fields: list, writable: bool = False) -> np.ndarray:
    data, first = fields[0], 1 + max(t.ndim, 2)      # where the strides start
    dims, strides = tuple(fields[1:1 + t.ndim]), tuple(fields[first:first + t.ndim])
    dtype = _NUMPY_DTYPES[t.dtype]
    if data == 0 or 0 in dims:       # (no elements: a store into it stores nothing)
        out = np.zeros(dims, dtype)
        out.flags.writeable = writable
        return out
    lo = hi = 0
    for n, st in zip(dims, strides):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    # a read-only memoryview of the span (PyBUF_READ): the array is read-only too
    # (a store's target, `writes_into`, gets a writable one)
    flags = _PYBUF_WRITE if writable else _PYBUF_READ
    buf = _MEMORY(data + lo, hi - lo + dtype.itemsize, flags)
    return np.ndarray(dims, dtype, buffer=buf, offset=-lo, strides=strides)


_MEMORY = ctypes.pythonapi.PyMemoryView_FromMemory
_MEMORY.restype = ctypes.py_object
_MEMORY.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int]
_PYBUF_READ = 0x100
_PYBUF_WRITE = 0x200


# -- writing the result ----------------------------------------------------------------

def _encode(site: HostSite, t: Type, v: Any, words: Any, k: int) -> int:
    if isinstance(t, ArrayT):
        for i, w in enumerate(_array_result(site, t, v)):
            words[k + i] = w
        return k + array_slots(t.ndim)
    if isinstance(t, BuiltListT):
        for i, w in enumerate(_list_result(site, t, v)):
            words[k + i] = w
        return k + 3
    if isinstance(t, TupleT):
        if site.cotangents and v is None:
            v = (None,) * len(t.elems)
        if isinstance(t, DictT) and isinstance(v, dict):
            v = tuple(v.get(k) for k in t.keys) if site.cotangents else \
                tuple(v[k] for k in t.keys)
        if site.cotangents and isinstance(v, tuple):
            # a rule may return cotangents for trailing arguments left at their defaults,
            # or none for trailing arguments that have no derivative (None: zero)
            v = (v + (None,) * len(t.elems))[:len(t.elems)]
        if not isinstance(v, (tuple, list)) or len(v) != len(t.elems):
            raise _mismatch(site, t, v)
        for e, x in zip(t.elems, v):
            k = _encode(site, e, x, words, k)
        return k
    if t == FLOAT64 or t == FLOAT32:
        if site.cotangents and v is None:
            v = 0.0
        if isinstance(v, np.ndarray) and v.ndim:
            raise _mismatch(site, t, v)
        v = float(np.float32(v)) if t == FLOAT32 else float(v)
        words[k] = ctypes.c_int64.from_buffer(ctypes.c_double(v)).value
        return k + 1
    if t in (INT64, BOOL, INT32):
        if isinstance(v, (float, np.floating)) or isinstance(v, np.ndarray) and v.ndim:
            raise _mismatch(site, t, v)
        n = int(bool(v)) if isinstance(v, (bool, np.bool_)) else operator.index(v)
        if t == BOOL:
            n = int(bool(n))
        elif t == INT32:
            n = int(np.int64(n).astype(np.int32))
        elif not INT64_MIN <= n <= INT64_MAX:
            raise OverflowError(f"{site.name} returned {n}, which does not fit in int64")
        words[k] = n
        return k + 1
    if t == NONE:
        if v is not None and not site.cotangents:
            raise _mismatch(site, t, v)
        return k
    if isinstance(t, ObjectT) and isinstance(v, t.cls):
        words[k] = id(v)     # (the callable keeps it alive: jit.library.random_draws)
        return k + 1
    raise _mismatch(site, t, v)


def _array_result(site: HostSite, t: ArrayT, v: Any) -> list:
    if v is None and site.cotangents:
        return [0] * array_slots(t.ndim)
    a = np.asarray(v)
    dtype = _NUMPY_DTYPES[t.dtype]
    if a.ndim != t.ndim or not _castable(a.dtype, dtype):
        raise _mismatch(site, t, v)
    nbytes = a.size * dtype.itemsize
    data = _zy_alloc()(max(nbytes, 8))
    if not data:
        raise MemoryError(f"cannot allocate {nbytes} bytes")
    out = host_codec.result_view(data, a.shape, dtype)
    # (a bool result where a bool array is declared: same_kind allows only bool)
    out[...] = a
    dims = list(a.shape) + [0] * (2 - a.ndim)
    strides = list(out.strides) + [0] * (2 - a.ndim)
    return [data] + dims + strides      # (no padding beyond 2 dimensions)


_CASTABLE: dict = {}


def _castable(have: np.dtype, want: np.dtype) -> bool:
    """May a result of dtype `have` be stored where `want` is declared (numbers of the
    same kind or a narrower one)?  Memoised: numpy's check costs more than the copy."""
    hit = _CASTABLE.get((have, want))
    if hit is None:
        hit = _CASTABLE[(have, want)] = bool(np.can_cast(have, want, "same_kind")) \
            and have.kind in "biuf"
    return hit


def _list_result(site: HostSite, t: BuiltListT, v: Any) -> list:
    """A list result stored as a built list in arena memory: (data, length, capacity)."""
    if v is None and site.cotangents:
        return [0, 0, 0]
    if not isinstance(v, (list, tuple)):
        raise _mismatch(site, t, v)
    width = slot_count(t.elem)
    nbytes = max(8 * width * len(v), 8)
    data = _zy_alloc()(nbytes)
    if not data:
        raise MemoryError(f"cannot allocate {nbytes} bytes")
    words = (ctypes.c_int64 * max(width * len(v), 1)).from_address(data)
    k = 0
    for x in v:
        k = _encode(site, t.elem, x, words, k)
    return [data, len(v), len(v)]


def _mismatch(site: HostSite, t: Type, v: Any) -> TypeError:
    what = f"a {v.ndim}-D {v.dtype} array" if isinstance(v, np.ndarray) else \
        f"a value of type {type(v).__name__}"
    return TypeError(f"{site.name} returned {what} where compiled code expects {t}")


def _zy_alloc() -> Callable:
    fn = _STATE.get("alloc")
    if fn is None:
        fn = _STATE["alloc"] = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int64)(
            runtime.arena_functions()[0])
    return fn


_STATE: dict = {}


# -- the callback ----------------------------------------------------------------------

def _enter(sid: int, args: int, out: int) -> int:
    try:
        site = SITES[sid]
        fast = site.codec
        if fast is None:
            fast = site.codec = host_codec.plan(site) or False
        if fast:
            vals = fast.args(site, args if site.nargs else 0)
            npos = len(vals) - len(site.kwnames)
            result = site.fn(*vals[:npos], **dict(zip(site.kwnames, vals[npos:])))
            if site.nout or site.result != NONE or not site.cotangents:
                fast.write(site, result, out, _encode)
            return runtime.OK
        words = site.arg_words.from_address(args) if site.nargs else ()
        k, vals = 0, []
        for pos, (kind, x) in enumerate(site.recipe):
            if kind == "const":     # a list literal: a new list for every call
                vals.append(list(x) if isinstance(x, ListLiteral) else x)
            else:
                none = site.cotangents and pos in site.cotangent_args
                v, k = _decode(x, words, k, none, pos in site.writes_into)
                vals.append(v)
        npos = len(vals) - len(site.kwnames)
        result = site.fn(*vals[:npos], **dict(zip(site.kwnames, vals[npos:])))
        if site.nout or site.result != NONE or not site.cotangents:
            outw = site.out_words.from_address(out)
            _encode(site, site.result, result, outw, 0)
        return runtime.OK
    except BaseException as exc:      # noqa: BLE001  (reported to the caller as-is)
        runtime.HOST_PENDING[0] = exc
        runtime.ERRINFO[1] = runtime.HOST_ERROR
        return runtime.ERROR


_PROTO = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
_CALLBACK = _PROTO(_enter)
CALLBACK_ADDRESS = ctypes.cast(_CALLBACK, ctypes.c_void_p).value


def callback_address() -> int:
    return CALLBACK_ADDRESS
