"""`zygopy cache info` and `zygopy cache clear`: the disk cache of compiled code.

    zygopy cache info [FOLDER ...]     where it is, how many files, their size, by kind
    zygopy cache clear [FOLDER ...]    remove them, saying what was removed

Both cover the central folder (`$ZYGOPY_CACHE_DIR`, else `~/.cache/zygopy`) and the
`__pycache__/` folders under each FOLDER named, where the entries of functions defined
in writable folders go (`jit.cache_files`).
"""
from __future__ import annotations

import argparse
import os

from jit import cache_files, disk_cache


def cmd_cache_info(args: argparse.Namespace) -> int:
    root = disk_cache.central_directory()
    print(f"cache folder: {root}{_origin()}")
    if not disk_cache.enabled():
        print("the cache is off in this environment (ZYGOPY_CACHE=0)")
    if not os.path.isdir(root):
        print("  (it does not exist yet)")
    found = cache_files.summarise(cache_files.find(args.folders))
    where = "in it" + "".join(f" and under {f}" for f in args.folders)
    print(f"files {where}: {found.files}, {cache_files.size_text(found.bytes)}")
    if found.kinds:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(found.kinds.items()))
        print(f"by kind: {kinds}")
    if not args.folders:
        print("entries of functions in writable folders are in __pycache__/ beside their "
              "source: `zygopy cache info FOLDER` counts those under FOLDER")
    return 0


def cmd_cache_clear(args: argparse.Namespace) -> int:
    root = disk_cache.central_directory()
    removed = cache_files.remove(cache_files.find(args.folders))
    where = root + "".join(f" and __pycache__/ under {f}" for f in args.folders)
    if not removed.files:
        print(f"nothing to remove: no cache files in {where}")
        return 0
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(removed.kinds.items()))
    print(f"removed {removed.files} files ({cache_files.size_text(removed.bytes)}; "
          f"{kinds}) from {where}")
    return 0


def _origin() -> str:
    if os.environ.get("ZYGOPY_CACHE_DIR"):
        return "  (from ZYGOPY_CACHE_DIR)"
    return "  (the default; ZYGOPY_CACHE_DIR moves it)"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`zygopy cache info|clear [FOLDER ...]`."""
    cache = sub.add_parser("cache", help="see or clear the disk cache of compiled code")
    actions = cache.add_subparsers(dest="action", required=True)
    for name, run, text in (("info", cmd_cache_info, "where the cache is and what it holds"),
                            ("clear", cmd_cache_clear, "remove the cache's files")):
        p = actions.add_parser(name, help=text)
        p.add_argument("folders", nargs="*", metavar="FOLDER",
                       help="also the __pycache__/ folders under FOLDER")
        p.set_defaults(run=run)


__all__ = ["add_parser", "cmd_cache_clear", "cmd_cache_info"]
