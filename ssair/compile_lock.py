"""The process-wide lock of compilation.

Compiling fills tables that the whole process shares: the lowering's IR per function,
the J transform's and forward mode's caches, the JIT's type table, symbol table, error
sites, interned strings, LLVM engine and its per-signature caches.  Each is filled
check-then-insert, so two threads making a first call at once would both build, and
publish twice (LLVM refuses a name defined twice; two error sites could get one id).
Every such fill holds `COMPILE_LOCK` from the check to the publish.

It is one lock for every layer, re-entrant, so that compiling may nest (a callee's
lowering inside typing, typing inside the J transform's users) with no order between
locks to deadlock on.  It is held while compiling only, never while user code runs
(a call compiles, lets go, then runs), so a thread that user code starts can compile.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from ssair import progress

COMPILE_LOCK = threading.RLock()


def compiling(fn: Callable) -> Callable:
    """`fn` run holding `COMPILE_LOCK` (for a function that compiles and publishes);
    the outermost one is timed, and said on stderr when long (`ssair.progress`)."""
    @functools.wraps(fn)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with COMPILE_LOCK:
            before = progress.begin()
            try:
                return fn(*args, **kwargs)
            finally:
                progress.end(before)
    return locked


@compiling
def built_once(table: dict, key: Any, build: Callable, *args: Any) -> Any:
    """`table[key]`, made by `build(*args)` by the first thread that asks (the hot
    paths look `key` up without the lock first)."""
    entry = table.get(key)
    if entry is None:
        entry = table[key] = build(*args)
    return entry


__all__ = ["COMPILE_LOCK", "built_once", "compiling"]
