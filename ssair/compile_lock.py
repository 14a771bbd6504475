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
    the outermost one is timed, and said on stderr when long (`ssair.progress`), and
    gives the warnings deferred while it ran (`defer_warning`)."""
    @functools.wraps(fn)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with COMPILE_LOCK:
            before = progress.begin()
            try:
                out = fn(*args, **kwargs)
            finally:
                progress.end(before)
            if not before and DEFERRED:
                _warn_deferred()
            return out
    return locked


# Warnings found while compiling, given when the outermost compilation returns: a
# warning given inside type inference that a filter makes an error
# (`simplefilter("error")`) would be raised where a refusal is expected, taken for
# one, and never reach the user.
DEFERRED: list = []


def defer_warning(message: str, category: type, file: Any = None, line: Any = None) -> None:
    """Give this warning once the outermost compilation returns (at `file`:`line`
    when given)."""
    DEFERRED.append((message, category, file, line))


def _warn_deferred() -> None:
    import warnings
    while DEFERRED:
        message, category, file, line = DEFERRED.pop(0)
        if file is None:
            warnings.warn(message, category, stacklevel=3)
        else:
            warnings.warn_explicit(message, category, file, line)


@compiling
def built_once(table: dict, key: Any, build: Callable, *args: Any) -> Any:
    """`table[key]`, made by `build(*args)` by the first thread that asks (the hot
    paths look `key` up without the lock first)."""
    entry = table.get(key)
    if entry is None:
        entry = table[key] = build(*args)
    return entry


__all__ = ["COMPILE_LOCK", "DEFERRED", "built_once", "compiling", "defer_warning"]
