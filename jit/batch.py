"""Many inputs on every core: `adjoint.gradient(f, X, batch=0)` (a gradient per row of
X) and `jit.vmap(f)(X)` (a value per row), split over a pool of threads that run
native code without the GIL.

For the argument types of one call, the rows of a chunk run in one compiled function,
built as IR and compiled like any user function:

    def f_rows(lo, hi, a0, ..., out0, ...):
        i = lo
        while i < hi:
            g = gradient(f, a0[i], a1, ...)      # (or `y = f(...)` for vmap)
            out0[i] = g[0]; ...
            i += 1
        return hi

`gradient` inside compiled code is its registry entry (`jit.pullback.nested_gradient`):
forward and adjoint back to back on a tape in the native frame.  Each thread calls the
entry through a `ctypes.CFUNCTYPE` (which releases the GIL) after pointing the
runtime's per-thread state at a record of its own (`jit.runtime.native.ThreadState`):
its error record and its arena.  Threads share no tape, no error record and no
arena; they write disjoint rows of the outputs.

A row that fails (an exception, an int64 overflow) sends the whole call to the
per-row path, `adjoint.gradient` on each row in turn, which raises what CPython
would, at the first failing row.  So does a function the JIT refuses, with
`backend="auto"` (a `JitFallbackWarning` says why, once).
"""
from __future__ import annotations

import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

import numpy as np

from lowering.guards import on_invalidate
from ssair import IR, Branch, Const, Goto, Return
from ssair.compile_lock import COMPILE_LOCK

from adjoint.batching import normalize_axes, row, rows_of

from jit.codegen.entry import flat_ctypes
from jit.runtime import native as runtime
from jit.types import FLOAT64, INT64, ArrayT, TypingError, typeof

_TABLE: dict = {}           # (id(f), mode, types, axes, out types) -> (f, _Rows or message)
_LOCK = threading.Lock()


_POOLS: dict = {}
on_invalidate(_TABLE.clear)


def _pool(k: int) -> ThreadPoolExecutor:
    """The process's pool of `k` threads (made once: starting threads costs more than
    a small batch)."""
    with _LOCK:
        pool = _POOLS.get(k)
        if pool is None:
            pool = _POOLS[k] = ThreadPoolExecutor(max_workers=k,
                                                  thread_name_prefix="zygopy-batch")
    return pool


def workers_available() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


class _Rows:
    """The compiled row loop for one signature, and how to call it from a thread."""

    def __init__(self, f: Callable, mode: str, argtypes: tuple, axes: tuple,
                 out_types: tuple) -> None:
        from jit.api import compile_typing
        from jit.typing.infer import infer
        loop_types = (INT64, INT64) + argtypes + out_types
        ir = rows_ir(f, mode, len(argtypes), axes,
                     [None if t is None else t.ndim for t in out_types])
        loop_types = tuple(t for t in loop_types if t is not None)
        t = infer(ir, loop_types)
        if t.ret != INT64:
            raise TypingError(f"jit: the row loop of {ir.name} returns {t.ret}")

        def refuse(*args: Any) -> Any:
            raise TypingError("jit: the row loop needs exact Python semantics")
        compiled = compile_typing(t, refuse)
        cargs = [c for a in loop_types for c in flat_ctypes(a)]
        addr = runtime.function_address(compiled.entry)
        self.call = ctypes.CFUNCTYPE(ctypes.c_int64, *cargs)(addr)    # releases the GIL
        self.set_state = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(
            runtime.runtime_function("zy_set_thread_state"))

    def run(self, lo: int, hi: int, values: tuple) -> bool:
        """Rows lo..hi-1 on this thread; did one fail?"""
        state = runtime.ThreadState()
        self.set_state(ctypes.addressof(state))
        try:
            self.call(lo, hi, *values)
        finally:
            self.set_state(None)
        return bool(state.errinfo[0])


def rows_ir(f: Callable, mode: str, nargs: int, axes: tuple, ranks: list) -> IR:
    """The IR of the row loop (module docstring); `ranks`: per result, the rank of its
    output array, or None (gradients of ints have none)."""
    from adjoint.api import gradient, value_and_grad
    name = getattr(f, "__name__", "f")
    code = getattr(f, "__code__", None)
    ir = IR(f"{name}_rows", file=getattr(code, "co_filename", None),
            firstline=getattr(code, "co_firstlineno", None))
    lo, hi = ir.add_arg("lo"), ir.add_arg("hi")
    args = [ir.add_arg(f"a{k}") for k in range(nargs)]
    out = [ir.add_arg(f"out{k}") if r is not None else None for k, r in enumerate(ranks)]
    entry, head, body, done = (ir.add_block() for _ in range(4))
    entry.term = Goto(head.id)
    i = ir.add_phi(head, {entry.id: lo}, name="i")
    head.term = Branch(ir.push(head, "lt", i, hi), body.id, done.id)
    operands = [ir.push(body, "getitem", a, i) if ax is not None else a
                for a, ax in zip(args, axes)]
    whole = ir.push(body, "call", Const(slice), None, None)    # out[i, :, ...] = row

    def store(o: Any, value: Any, rank: int) -> None:
        ir.push(body, "setitem", o, value, i, *[whole] * (rank - 1))
    if mode in ("gradient", "value_and_grad"):
        with_value = mode == "value_and_grad"
        got = ir.push(body, "call", Const(value_and_grad if with_value else gradient),
                      Const(f), *operands)
        g = ir.push(body, "getitem", got, 1) if with_value else got
        if with_value:
            store(out[0], ir.push(body, "getitem", got, 0), ranks[0])
        for k, o in enumerate(out[with_value:]):
            if o is not None:
                store(o, ir.push(body, "getitem", g, k), ranks[k + with_value])
    else:
        store(out[0], ir.push(body, "call", Const(f), *operands), ranks[0])
    head.phis[0].incoming[body.id] = ir.push(body, "add", i, 1)
    body.term = Goto(head.id)
    done.term = Return(hi)
    return ir


def _compiled(f: Callable, mode: str, argtypes: tuple, axes: tuple, out_types: tuple) -> Any:
    """The row loop for `f` itself (the loop's IR holds f as a constant: two closures
    of one code object are two loops) and these types, or the message of a refusal."""
    key = (id(f), mode, argtypes, axes, out_types)
    with COMPILE_LOCK:
        hit = _TABLE.get(key)
        if hit is not None and hit[0] is f:
            return hit[1]
        try:
            loop = _Rows(f, mode, argtypes, axes, out_types)
        except (TypingError, NotImplementedError, KeyError, TypeError, ValueError) as e:
            loop = f"jit: cannot compile the row loop of {getattr(f, '__name__', f)}: {e}"
        _TABLE[key] = (f, loop)
    return loop


def batched(f: Callable, args: tuple, axes: tuple, mode: str,
            workers: Optional[int] = None) -> Any:
    """Per-row gradients (`mode="gradient"`), values (`"value"`) or both
    (`"value_and_grad"`: values, gradients) stacked, computed
    by the compiled row loop on `workers` threads (default: every core); raises
    TypingError where the JIT refuses the row loop."""
    moved, n = rows_of(args, axes)
    if n == 0:
        raise ValueError("batch=: no rows")
    first = row(moved, axes, 0)
    for k, a in enumerate(first):
        if not _flat_value(a):      # the row loop's C entry takes none but these
            raise TypingError(f"jit: batch=: argument {k} is a {type(a).__name__}; the "
                              "compiled row loop takes numbers, arrays and tuples of them")
    row_types = tuple(typeof(a) for a in first)
    if mode in ("gradient", "value_and_grad"):
        shapes = [np.shape(a) if t == FLOAT64 or (isinstance(t, ArrayT) and
                                                   t.dtype == FLOAT64) else None
                  for a, t in zip(first, row_types)]
        if all(s is None for s in shapes):
            raise TypingError("jit: batch=: no float argument to differentiate")
        if mode == "value_and_grad":
            shapes.insert(0, ())
    else:           # (the row loop compiles f; the first row's shape needs no compile)
        shapes = [np.shape(f(*first))]
    outs = [None if s is None else np.empty((n,) + tuple(s)) for s in shapes]
    out_types = tuple(None if o is None else typeof(o) for o in outs)
    full_types = tuple(typeof(a) for a in moved)
    loop = _compiled(f, mode, full_types, axes, out_types)
    if isinstance(loop, str):
        raise TypingError(loop)
    values = tuple(x for a in moved + tuple(o for o in outs if o is not None)
                   for x in _flat(a))
    k = max(1, min(workers or workers_available(), n))
    bounds = np.linspace(0, n, min(n, 4 * k) + 1).astype(int)
    chunks = [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]
    runtime.THREADED.value += 1       # (holding the GIL: see runtime.THREADED)
    try:
        if k == 1:
            failed = [loop.run(lo, hi, values) for lo, hi in chunks]
        else:
            jobs = [_pool(k).submit(loop.run, lo, hi, values) for lo, hi in chunks]
            failed = [j.result() for j in jobs]
    finally:
        runtime.THREADED.value -= 1
    if any(failed):
        raise _RowFailed()
    if mode == "gradient":
        return tuple(outs)
    if mode == "value_and_grad":
        return outs[0], tuple(outs[1:])
    return outs[0]


def _flat_value(a: Any) -> bool:
    """Whether `_flat` passes all of `a` (a number, an array, or a tuple of them)."""
    if isinstance(a, tuple) and not hasattr(a, "_fields"):
        return all(_flat_value(e) for e in a)
    return isinstance(a, (np.ndarray, bool, int, float, np.bool_, np.integer, np.floating))


def _flat(a: Any) -> list:
    """An argument as the entry's C parameters take it (see `jit.codegen.entry`)."""
    if isinstance(a, tuple):
        return [x for e in a for x in _flat(e)]
    if isinstance(a, np.ndarray):
        return [a]
    if isinstance(a, (bool, np.bool_)):
        return [bool(a)]
    if isinstance(a, (int, np.integer)):
        return [int(a)]
    if isinstance(a, (float, np.floating)):
        return [float(a)]
    return []


class _RowFailed(Exception):
    """A row failed in native code: the caller reruns the rows one by one."""


def batch_runner(f: Callable, args: tuple, axes: tuple, mode: str, strict: bool) -> Any:
    """`adjoint.api`'s batch backend: the stacked result, or None for the per-row
    path (a failing row; with `strict` false, also a row loop the JIT refuses, said
    once by a `JitFallbackWarning`)."""
    try:
        return batched(f, args, axes, mode)
    except _RowFailed:
        return None
    except TypingError as e:
        if strict:
            raise
        _warn_once(f, e)
        return None


_WARNED: set = set()


def _warn_once(f: Callable, e: Exception) -> None:
    import warnings

    from jit.pullback.backend import JitFallbackWarning
    code = getattr(f, "__code__", f)
    if code not in _WARNED:
        _WARNED.add(code)
        warnings.warn(f"zygopy: batch= runs {getattr(f, '__name__', f)} row by row: {e}",
                      JitFallbackWarning, stacklevel=4)


def vmap(f: Callable, batch: Any = 0, workers: Optional[int] = None) -> Callable:
    """`vmap(f)(X, ...)`: `f` of each row of X (axis 0 of the first argument; `batch`
    as for `adjoint.gradient`), stacked, computed on every core."""
    def mapped(*args: Any) -> Any:
        axes = normalize_axes(batch, len(args))
        try:
            return batched(f, args, axes, "value", workers)
        except (_RowFailed, TypingError) as e:
            if isinstance(e, TypingError):
                _warn_once(f, e)
            moved, n = rows_of(args, axes)
            return np.array([np.asarray(f(*row(moved, axes, i))) for i in range(n)])
    mapped.__name__ = f"vmap_{getattr(f, '__name__', 'f')}"
    mapped.__wrapped__ = f
    return mapped


def register() -> None:
    """Install `batched` as `adjoint.api`'s batch backend for "llvm" and "auto"."""
    from adjoint import api
    api.BATCH_RUNNERS["llvm"] = api.BATCH_RUNNERS["auto"] = batch_runner
