"""What compiled code needs to run one callee in Python: the callee's forward and
pullback from the interpreter, behind a handle on the tape.

A user function the JIT cannot compile (or that lowering refuses), called from a
compiled forward, becomes a host call (`jit.runtime.host_calls`) of `forward_caller`:
with a differentiated operand it runs `adjoint.pullback(callee, *args,
backend="interp")`, keeps the interpreter's `back` in `LIVE` under a fresh integer
handle and returns `(y, handle)`; the compiled forward pushes the handle on its tape.
The compiled adjoint pops it and host-calls `backward_caller(handle, dy)`, which runs
`back(dy)`.  With no differentiated operand the callee is plain CPython and no
handle is made.

Handles belong to whoever owns the tape.  A handle starts in this thread's pending
list; `mark()` before a compiled forward and `claim(mark)` after it give the handles
that forward made to its owner (`jit.pullback.runner.NativeEnv`), which `release`s
them when it is freed.  A forward that fails has its handles released at once.

Compiled code needs the callee's result type before it runs, and a function the JIT
cannot type has none: it is learned from a run.  `ResultTypeNeeded` (a TypingError)
says which call is missing; the runner then runs that one call of the whole pullback
in the interpreter, `observing` the callee's results (`RESULT_TYPES`), and compiles on
the next call.
"""
from __future__ import annotations

import itertools
import threading
from contextlib import contextmanager
from typing import Any, Callable

import numpy as np

from jit.runtime.native import NativeDeopt
from jit.types import BOOL, FLOAT64, INT64, ArrayT, TupleT, Type, TypingError, typeof

LIVE: dict = {}                 # handle -> the interpreter's `back`
RESULT_TYPES: dict = {}         # (function, argument types) -> its result's JIT type
_IDS = itertools.count(1)
_LOCAL = threading.local()


class ResultTypeNeeded(TypingError):
    """A compiled forward calls `functions` through the interpreter, and the type of
    what one of them returns for these argument types has not been seen yet."""

    def __init__(self, message: str, functions: tuple) -> None:
        super().__init__(message)
        self.functions = functions


# -- handles ---------------------------------------------------------------------------

def _pending() -> list:
    p = getattr(_LOCAL, "pending", None)
    if p is None:
        p = _LOCAL.pending = []
        _LOCAL.depth = 0
    return p


def store(back: Any) -> int:
    """A new handle for `back`, pending until a runner claims it."""
    hid = next(_IDS)
    LIVE[hid] = back
    _pending().append(hid)
    return hid


def mark() -> int:
    """Where the handles of the forward about to run start.  Outside every other
    claim, pending handles are orphans (made by code that frees its tape itself):
    they are released."""
    p = _pending()
    if _LOCAL.depth == 0 and p:
        release(p[:])
        p.clear()
    _LOCAL.depth += 1
    return len(p)


def claim(start: int) -> list:
    """The handles made since `mark()` returned `start`, now the caller's."""
    p = _pending()
    _LOCAL.depth = max(_LOCAL.depth - 1, 0)
    out = p[start:]
    del p[start:]
    return out


def owned() -> bool:
    """Is a runner claiming the handles made now (a compiled forward or adjoint that
    `mark`ed), so that they are released with its tape?"""
    return getattr(_LOCAL, "depth", 0) > 0


def release(handles: list) -> None:
    for hid in handles:
        LIVE.pop(hid, None)


# -- the Python side of the host calls -------------------------------------------------

def forward_caller(fn: Callable, name: str, active: bool, result: Type) -> Callable:
    """The host callable of a forward call site: `(y, handle)` where an operand is
    differentiated, else `y` from CPython.  A result of another type than the one
    compiled for (`result`, learned from an earlier run) leaves compiled code
    (`NativeDeopt`): the runner runs that call in the interpreter.  So does an
    exception: compiled code does not keep every value's Python class (a numpy
    float64 reaches the callee as a float), so the interpreter's run of the whole
    call decides what is raised."""
    def forward(*args, **kwargs):
        from adjoint.api import pullback
        try:
            if not active:
                return checked_result(fn(*args, **kwargs), result, name)
            y, back = pullback(fn, *(_owned(a) for a in args), backend="interp")
        except NativeDeopt:
            raise
        except Exception as exc:      # noqa: BLE001  (raised again by the interpreter)
            raise NativeDeopt(f"{name} raised {type(exc).__name__} when called from "
                              "compiled code") from None
        return checked_result(y, result, name), store(back)
    forward.__qualname__ = name
    return forward


def checked_result(y: Any, want: Type, name: str) -> Any:
    """`y`, if compiled code built for a `want` can take it; else `NativeDeopt`."""
    try:
        t = typeof(y)
    except TypingError:
        t = None
    if t is None or not _fits(t, want):
        raise NativeDeopt(f"{name} returned a {t or type(y).__name__} where compiled code "
                          f"was built for a {want}")
    return y


def _fits(t: Type, want: Type) -> bool:
    """A value of type `t` is stored as a `want` (an int or bool as a float; an int
    array as a float array)."""
    if t == want:
        return True
    if want == FLOAT64:
        return t in (INT64, BOOL)
    if isinstance(want, ArrayT) and isinstance(t, ArrayT):
        return t.ndim == want.ndim and want.dtype == FLOAT64
    if isinstance(want, TupleT) and isinstance(t, TupleT) and len(t.elems) == len(want.elems):
        return all(_fits(a, b) for a, b in zip(t.elems, want.elems))
    return False


def backward_caller(name: str) -> Callable:
    """The host callable of the matching adjoint: `back(dy)` of the handle's pullback."""
    def backward(hid: int, dy: Any) -> Any:
        back = LIVE.get(hid)
        if back is None:
            raise RuntimeError(f"zygopy: the pullback of {name} was already released "
                               "(its forward's tape was freed)")
        return back(dy)
    backward.__qualname__ = name
    return backward


def _owned(v: Any) -> Any:
    """`v` with its arrays copied: the interpreter's pullback keeps its inputs past the
    host call, and views of compiled memory die with it."""
    if isinstance(v, np.ndarray):
        return v.copy()
    if isinstance(v, tuple):
        return tuple(_owned(x) for x in v)
    if isinstance(v, list):
        return [_owned(x) for x in v]
    return v


# -- learning result types --------------------------------------------------------------

@contextmanager
def learning():
    """While a runner that can learn result types (by an interpreted run, on
    `ResultTypeNeeded`) compiles: elsewhere (`jit.jit`) a call whose result type is
    unknown keeps the JIT's own refusal."""
    _LOCAL.learning = getattr(_LOCAL, "learning", 0) + 1
    try:
        yield
    finally:
        _LOCAL.learning -= 1


def can_learn() -> bool:
    return getattr(_LOCAL, "learning", 0) > 0


def result_key(fn: Any, argtypes: tuple) -> tuple:
    return (getattr(fn, "__code__", fn), argtypes)


@contextmanager
def observing(functions: tuple):
    """Record in `RESULT_TYPES` what the user functions called while the block runs in
    the interpreter return (through `ssair.interpreter.CALL_OBSERVERS`): `functions`,
    whose result type is missing, and every other, which a later compile may need."""
    from ssair.interpreter import CALL_OBSERVERS

    def observe(f: Any, pos: tuple, kw: dict, y: Any) -> None:
        try:
            key = result_key(f, tuple(typeof(a) for a in pos + tuple(kw.values())))
            if key not in RESULT_TYPES:
                RESULT_TYPES[key] = typeof(y)
        except TypingError:
            pass     # an argument or result compiled code cannot hold: refused later
    CALL_OBSERVERS.append(observe)
    try:
        yield
    finally:
        CALL_OBSERVERS.remove(observe)
