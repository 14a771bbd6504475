"""The files of the disk cache (`jit.disk_cache`): finding, counting and removing them.

Entries live in two kinds of place:
- the central folder (`disk_cache.central_directory()`: `$ZYGOPY_CACHE_DIR`, else
  `~/.cache/zygopy`), which holds the object files of LLVM modules (`objects/`) and the
  entries of functions whose source folder is not writable;
- a `__pycache__/` folder beside each source file whose functions were compiled, as
  Python's own bytecode cache.  Those are found under folders the caller names, and,
  in a process that compiled something, in the folders it used.

Only zygopy's files are touched: `*.zyc` entries and the `.zyc-*` temporary files of a
write that was interrupted.  Removing them leaves Python's `.pyc` files alone, and
removes a folder of the central folder (and the central folder itself) only once it
is empty, so a `ZYGOPY_CACHE_DIR` that holds other files keeps them.
"""
from __future__ import annotations

import collections
import dataclasses
import os
from collections.abc import Iterable, Iterator

from jit import disk_cache

SUFFIX = ".zyc"
PARTIAL_PREFIX = ".zyc-"       # a temporary file of `disk_cache.store`
KINDS = ("primal", "gradient", "value_and_grad")


@dataclasses.dataclass
class Summary:
    """Cache files found (or removed): how many, their bytes, and how many of each
    kind ("object": an LLVM module's object file; "primal", "gradient",
    "value_and_grad": a compiled function; "partial": an interrupted write)."""

    files: int = 0
    bytes: int = 0
    kinds: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def add(self, path: str, size: int) -> None:
        self.files += 1
        self.bytes += size
        self.kinds[kind_of(path)] += 1


def is_cache_file(name: str) -> bool:
    return name.endswith(SUFFIX) or name.startswith(PARTIAL_PREFIX)


def kind_of(path: str) -> str:
    """What the file at `path` holds, read from its name (`disk_cache.key_for` names an
    entry `FILE.FUNC.KIND.DIGEST.zyc`; `object_key` puts it in `objects/`)."""
    name = os.path.basename(path)
    if name.startswith(PARTIAL_PREFIX):
        return "partial"
    if os.path.basename(os.path.dirname(path)) == "objects":
        return "object"
    parts = name.split(".")
    return parts[-3] if len(parts) >= 4 and parts[-3] in KINDS else "other"


def central_files(root: str) -> Iterator[str]:
    """Every cache file in the central folder `root`, at any depth."""
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if is_cache_file(name):
                yield os.path.join(folder, name)


def folder_files(folder: str) -> Iterator[str]:
    """The cache files directly in `folder` (a `__pycache__/` or `objects/`)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        if is_cache_file(name) and os.path.isfile(path):
            yield path


def tree_files(top: str) -> Iterator[str]:
    """The cache files in the `__pycache__/` folders under `top` (hidden folders, such
    as `.git`, are skipped)."""
    for folder, dirs, _ in os.walk(top):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if os.path.basename(folder) == "__pycache__":
            yield from folder_files(folder)


def find(trees: Iterable[str] = (), used: bool = False) -> list:
    """The paths of the cache files: the central folder's, those under each folder of
    `trees`, and (with `used`) those in the folders this process read or wrote."""
    found = dict.fromkeys(central_files(disk_cache.central_directory()))
    for top in trees:
        found.update(dict.fromkeys(tree_files(top)))
    if used:
        for folder in sorted(disk_cache.used_directories()):
            found.update(dict.fromkeys(folder_files(folder)))
    return list(found)


def summarise(paths: Iterable[str]) -> Summary:
    out = Summary()
    for path in paths:
        try:
            out.add(path, os.stat(path).st_size)
        except OSError:       # removed meanwhile by another process
            pass
    return out


def remove(paths: Iterable[str]) -> Summary:
    """Delete the files `paths`, then the folders of the central folder (and the
    central folder itself) that this left empty; what was removed."""
    out = Summary()
    for path in paths:
        try:
            size = os.stat(path).st_size
            os.unlink(path)
        except OSError:       # removed meanwhile, or not ours to remove
            continue
        out.add(path, size)
    _remove_empty_folders(disk_cache.central_directory())   # (`store` makes them again)
    return out


def _remove_empty_folders(root: str) -> None:
    for folder, _, _ in sorted(os.walk(root), key=lambda t: -len(t[0])):
        try:
            os.rmdir(folder)
        except OSError:       # not empty: it holds files that are not the cache's
            pass


def clear_used() -> int:
    """Remove the central folder's cache files and those of the folders this process
    used (the hook `adjoint.clear_cache(disk=True)` calls); the number removed."""
    return remove(find(used=True)).files


def size_text(n: int) -> str:
    """`n` bytes for people: 512 B, 3.4 KiB, 20.0 MiB."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


__all__ = ["Summary", "clear_used", "find", "kind_of", "remove", "size_text", "summarise"]
