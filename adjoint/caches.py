"""`adjoint.clear_cache`: forget what zygopy cached, in memory and (if asked) on disk.

The memory caches of every layer register with `lowering.guards.on_invalidate`.  The
disk cache of compiled code belongs to the compiled backend, which adjoint does not
import: the backend registers the function that removes its files with
`on_clear_disk` when it loads (`jit.register_backends`).
"""
from __future__ import annotations

from collections.abc import Callable

from .api import _load_jit
from .transform import clear_cache as _forget_in_memory

_DISK_CLEARERS: list = []     # callables that remove a backend's cache files: -> count


def on_clear_disk(clear: Callable[[], int]) -> None:
    """Register `clear()`, which removes a backend's files on disk and returns how
    many it removed (`clear_cache(disk=True)` calls it)."""
    if clear not in _DISK_CLEARERS:
        _DISK_CLEARERS.append(clear)


def clear_cache(*, disk: bool = False) -> int:
    """Forget every lowering, J transform and compiled function held in memory, so that
    the next call lowers and compiles again with the globals as they are now.  Call it
    after changing code that zygopy cannot see change (a rule's helpers, a module
    edited and reloaded).

    With `disk=True`, also remove the compiled code cached on disk: the cache folder
    (`$ZYGOPY_CACHE_DIR`, else `~/.cache/zygopy`) and the `__pycache__/*.zyc` entries
    this process read or wrote (`zygopy cache clear FOLDER` removes those under any
    folder).  Returns the number of files removed from disk (0 without `disk`)."""
    _forget_in_memory()
    if not disk:
        return 0
    _load_jit()       # (the compiled backend registers its clearer when it loads)
    return sum(clear() for clear in list(_DISK_CLEARERS))


__all__ = ["clear_cache", "on_clear_disk"]
