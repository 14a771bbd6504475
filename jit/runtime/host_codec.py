"""The fast reading and writing of a host call's slots (`jit.runtime.host_calls`).

A host call costs what Python spends between compiled code and the callable.  The
generic codec reads each 8-byte slot through ctypes and builds each array view from
a memoryview made by a ctypes call: about 10 us a call, forty times numpy's own work
on a small array.  This codec is planned once per site, for the types most sites
have (numbers, strings, float/int/bool arrays and plain tuples of them):

  * every argument slot is read by one `struct.unpack_from` of the site's format
    (`q` for an integer word, `d` for a float's bits), and a number result is written
    by one `struct.pack_into`;
  * an array is an `np.ndarray` over `SPACE`, one memoryview of the whole user
    address space (read-only, or writable for an array the callable writes into),
    at the array's address: no ctypes call per array;
  * an array result is copied into arena memory (`zy_alloc`) through a view of the
    same space.

The checks are the generic codec's (`host_calls._array_result`): the same results
and the same errors.  Sites with other types (lists, dicts, records, objects,
formatted strings) keep the generic codec (`plan` returns None).
"""
from __future__ import annotations

import ctypes
import struct
from typing import Any, Callable, Optional

import numpy as np

from jit.types import (BOOL, FLOAT32, FLOAT64, INT32, INT64, NONE, NUMPY_DTYPE, STRINGS,
                       ArrayT, StrT, TupleT, Type)

_BASE = 8                   # the view starts here (a memoryview of NULL is refused)
_SIZE = (1 << 47) - _BASE   # x86-64 Linux user space: every address compiled code hands over


def _space(flags: int) -> memoryview:
    make = ctypes.pythonapi.PyMemoryView_FromMemory
    make.restype = ctypes.py_object
    make.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int]
    return make(_BASE, _SIZE, flags)


SPACE = _space(0x100)       # read-only (PyBUF_READ)
SPACE_W = _space(0x200)     # writable (PyBUF_WRITE)
_SCALARS = {FLOAT64: "d", FLOAT32: "d", INT64: "q", INT32: "q", BOOL: "q"}


def simple(t: Type) -> bool:
    """Does this codec handle a value of type `t`?"""
    if t in _SCALARS or t == NONE or isinstance(t, StrT):
        return True
    if isinstance(t, ArrayT):
        return t.dtype in NUMPY_DTYPE
    return type(t) is TupleT and all(simple(e) for e in t.elems)


def _format(t: Type) -> str:
    """The struct format of a value's slots (the layout of `host_calls.slot_count`)."""
    if isinstance(t, ArrayT):
        return "q" * (5 if t.ndim <= 2 else 1 + 2 * t.ndim)
    if isinstance(t, TupleT):
        return "".join(_format(e) for e in t.elems)
    if t == NONE:
        return ""
    return _SCALARS.get(t, "q")


# -- reading ------------------------------------------------------------------------------

def _reader(t: Type, none: bool, writable: bool) -> Callable:
    """(words, k) -> (value, next k) for a value of type `t`; `none`: a NULL array is
    None (a cotangent operand)."""
    if isinstance(t, ArrayT):
        return _array_reader(t, none, writable)
    if isinstance(t, TupleT):
        parts = [_reader(e, none, False) for e in t.elems]

        def tup(w, k):
            out = []
            for p in parts:
                v, k = p(w, k)
                out.append(v)
            return tuple(out), k
        return tup
    if t == NONE:
        return lambda w, k: (None, k)
    if t == FLOAT32:
        return lambda w, k: (np.float32(w[k]), k + 1)
    if t == INT32:
        return lambda w, k: (np.int32(w[k]), k + 1)
    if t == BOOL:
        return lambda w, k: (bool(w[k] & 1), k + 1)
    if isinstance(t, StrT):
        return lambda w, k: (STRINGS[w[k]], k + 1)
    return lambda w, k: (w[k], k + 1)        # float64 (read as 'd') and int64


def _array_reader(t: ArrayT, none: bool, writable: bool) -> Callable:
    nd, n = t.ndim, 5 if t.ndim <= 2 else 1 + 2 * t.ndim
    first = 1 + max(nd, 2)
    dtype, space = NUMPY_DTYPE[t.dtype], SPACE_W if writable else SPACE

    def read(w, k):
        data = w[k]
        if none and data == 0:
            return None, k + n
        dims, strides = w[k + 1:k + 1 + nd], w[k + first:k + first + nd]
        if data == 0 or 0 in dims:   # no elements: as the generic codec
            out = np.zeros(dims, dtype)
            out.flags.writeable = writable
            return out, k + n
        return np.ndarray(dims, dtype, buffer=space, offset=data - _BASE,
                          strides=strides), k + n
    return read


class Plan:
    """One site's codec: the format of its argument slots, a reader per recipe entry
    (a constant's value, or how its slots are read), and the result's writer."""

    def __init__(self, site: Any) -> None:
        self.fmt = "=" + "".join(_format(t) for kind, t in site.recipe if kind == "slot")
        self.parts = []
        for pos, (kind, x) in enumerate(site.recipe):
            if kind == "const":
                self.parts.append((True, x))
            else:
                none = site.cotangents and pos in site.cotangent_args
                self.parts.append((False, _reader(x, none, pos in site.writes_into)))
        self.out_fmt = "=" + _format(site.result)

    def args(self, site: Any, address: int) -> list:
        from jit.types import ListLiteral
        words = struct.unpack_from(self.fmt, SPACE, address - _BASE) if address else ()
        vals, k = [], 0
        for const, p in self.parts:
            if const:                 # a list literal: a new list for every call
                vals.append(list(p) if isinstance(p, ListLiteral) else p)
            else:
                v, k = p(words, k)
                vals.append(v)
        return vals

    def write(self, site: Any, result: Any, address: int, encode: Callable) -> None:
        """Writes `result` into the out slots: the words `encode` (the generic codec's
        checks and conversions) gives, packed at once."""
        words = [0] * (len(self.out_fmt) - 1)
        encode(site, site.result, result, words, 0)
        if words:
            struct.pack_into(self.out_fmt.replace("d", "q"), SPACE_W, address - _BASE, *words)


def plan(site: Any) -> Optional[Plan]:
    """The fast codec of `site`, or None where its types need the generic one."""
    if all(kind == "const" or simple(t) for kind, t in site.recipe) and simple(site.result):
        return Plan(site)
    return None


def result_view(data: int, shape: tuple, dtype: np.dtype) -> np.ndarray:
    """A writable C-contiguous array of `shape` at arena address `data`."""
    return np.ndarray(shape, dtype, buffer=SPACE_W, offset=data - _BASE)
