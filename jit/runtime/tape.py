"""The native tape of compiled pullbacks: one growable buffer of 8-byte slots.

    struct tape   { i64 *data; i64 len; i64 cap; }      (NativeTape)
    struct reader { tape *tape; i64 pos; }               (NativeReader)

`push(tape, v)` appends the leaves of `v` (a float64, int64, bool, or a tuple of
those, flattened; none takes no slot) as raw 64-bit words; `pop(reader)` moves the
reader's cursor back by as many slots as its static type has leaves and rebuilds the
value.  The slot types are static: the compiler knows the type of every push from
inference, and the type of every pop from `ir.meta["pop_types"]` (var id -> Type),
which `jit.pullback.jcalls.adjoint_ir` derives from the adjoint's `meta["pop_of"]` (pop
var -> the forward value its push recorded, written by adjoint/passes/reverse.py) and the
typed forward.  Consecutive pushes (pops) share one capacity (bounds) check; a pushed
dummy phi whose value is known at compile time takes no slot (`meta["pop_static"]`).
Compiled pullbacks (jit.pullback.runner) keep the tape inside a malloc'd block instead
of a NativeTape; these classes serve direct use and tests.  Reading never changes the tape, so
many readers (one per `back` call) may walk it.  The buffer grows by doubling with
`realloc` (`zy_tape_reserve`, compiled once) and is freed when the NativeTape is
garbage-collected.
"""
from __future__ import annotations

import ctypes

from jit.runtime import native as runtime
from jit.types import READER, TAPE

_LIBC = ctypes.CDLL(None)
_LIBC.free.argtypes = [ctypes.c_void_p]
_LIBC.free.restype = None


class TapeStruct(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("len", ctypes.c_int64), ("cap", ctypes.c_int64)]


class ReaderStruct(ctypes.Structure):
    _fields_ = [("tape", ctypes.c_void_p), ("pos", ctypes.c_int64)]


class NativeTape:
    """A tape compiled forwards push onto; passed to native code as a pointer."""

    __jit_type__ = TAPE
    __slots__ = ("s", "addr")

    def __init__(self) -> None:
        self.s = TapeStruct(None, 0, 0)
        self.addr = ctypes.addressof(self.s)

    def __len__(self) -> int:
        return self.s.len

    def words(self) -> list:
        """The raw slots (for tests and debugging)."""
        if not self.s.len:
            return []
        return list((ctypes.c_int64 * self.s.len).from_address(self.s.data))

    def reader(self) -> "NativeReader":
        return NativeReader(self)

    def __del__(self) -> None:
        if self.s.data:
            _LIBC.free(self.s.data)
            self.s.data = None

    def __repr__(self) -> str:
        return f"<NativeTape of {self.s.len} slots>"


class NativeReader:
    """A cursor walking a NativeTape backwards; keeps its tape alive."""

    __jit_type__ = READER
    __slots__ = ("tape", "s", "addr")

    def __init__(self, tape: NativeTape) -> None:
        self.tape = tape
        self.s = ReaderStruct(tape.addr, tape.s.len)
        self.addr = ctypes.addressof(self.s)

    @property
    def pos(self) -> int:
        return self.s.pos


_RESERVE_IR = r"""
declare ptr @realloc(ptr, i64)

define i32 @zy_tape_reserve(ptr %t, i64 %k) {
entry:
  %lenp = getelementptr i8, ptr %t, i64 8
  %capp = getelementptr i8, ptr %t, i64 16
  %len = load i64, ptr %lenp
  %cap = load i64, ptr %capp
  %need = add i64 %len, %k
  %fits = icmp sle i64 %need, %cap
  br i1 %fits, label %ok, label %grow
grow:
  %dbl = shl i64 %cap, 1
  %big = icmp sgt i64 %dbl, %need
  %c1 = select i1 %big, i64 %dbl, i64 %need
  %small = icmp slt i64 %c1, 64
  %newcap = select i1 %small, i64 64, i64 %c1
  %old = load ptr, ptr %t
  %bytes = shl i64 %newcap, 3
  %p = call ptr @realloc(ptr %old, i64 %bytes)
  %null = icmp eq ptr %p, null
  br i1 %null, label %fail, label %store
store:
  store ptr %p, ptr %t
  store i64 %newcap, ptr %capp
  br label %ok
ok:
  ret i32 0
fail:
  ret i32 1
}
"""

def reserve_address() -> int:
    """The address of `zy_tape_reserve(tape*, slots) -> 0 | 1 (out of memory)`."""
    return runtime.compiled_once(_RESERVE_IR, "zy_tape_reserve")
