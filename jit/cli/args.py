"""Reading the user's function and arguments for the `zygopy` command line.

Functions are named `FILE.py:FUNC` (or `FILE.py:Outer.method`).  Arguments are Python
literals, read with `ast.literal_eval`: `2.0`, `3`, `-1e-3`, `True`, `None`, `(1.0, 2)`.
A list literal becomes a numpy array (`[1.0, 2.0]` is a float64 vector, `[[1, 2],
[3, 4]]` an int64 matrix); `np.array([...])`, `numpy.array([...])` and `array([...])`
are accepted as spellings of the same thing.  Tuples stay tuples.
"""
from __future__ import annotations

import ast
import importlib.util
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from jit.cli.stages import CliError

ARRAY_SPELLINGS = ("np.array(", "numpy.array(", "array(")


def load_function(spec: str) -> Callable:
    """`path/to/file.py:name` (or `:Outer.name`) -> the function object."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise CliError(f"expected FILE.py:FUNC, got {spec!r}")
    if not os.path.isfile(path):
        raise CliError(f"no such file: {path}")
    module = _import_file(path)
    obj: Any = module
    for part in name.split("."):
        if not hasattr(obj, part):
            raise CliError(f"{path} has no function {name!r}")
        obj = getattr(obj, part)
    if not callable(obj) or not hasattr(obj, "__code__"):
        raise CliError(f"{path}:{name} is not a Python function")
    return obj


def _import_file(path: str) -> Any:
    modname = os.path.splitext(os.path.basename(path))[0]
    if modname in sys.modules or not modname.isidentifier():
        modname = "_zygopy_user_" + "".join(c if c.isalnum() else "_" for c in modname)
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot import {path}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise CliError(f"cannot import {path}: syntax error at line {e.lineno}: {e.msg}")
    except Exception as e:  # noqa: BLE001  (any error of the user's module)
        raise CliError(f"cannot import {path}: {type(e).__name__}: {e}")
    return module


def parse_arg(text: str) -> Any:
    """One command-line argument as a Python value (see the module docstring)."""
    src = text.strip()
    wrapped = next((s for s in ARRAY_SPELLINGS if src.startswith(s)), None)
    if wrapped is not None and src.endswith(")"):
        return _as_array(_literal(src[len(wrapped):-1], text), text)
    value = _literal(src, text)
    return _as_array(value, text) if isinstance(value, list) else value


def parse_args(texts: list) -> tuple:
    return tuple(parse_arg(t) for t in texts)


def _literal(src: str, original: str) -> Any:
    try:
        return ast.literal_eval(src)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise CliError(f"argument {original!r} is not a Python literal (numbers, True, False, "
                       "None, tuples, or a [list] for a numpy array)") from None


def _as_array(value: Any, original: str) -> np.ndarray:
    try:
        arr = np.array(value)
    except ValueError as e:
        raise CliError(f"argument {original!r} is not a rectangular array: {e}") from None
    if arr.dtype.kind == "b":
        return arr
    if arr.dtype.kind not in "if":
        raise CliError(f"argument {original!r}: arrays must hold numbers, got {arr.dtype}")
    return arr.astype(np.float64 if arr.dtype.kind == "f" else np.int64)


def format_call(f: Callable, args: tuple) -> str:
    """`name(arg, ...)` with numpy arrays shown compactly."""
    return f"{f.__name__}({', '.join(format_value(a) for a in args)})"


def format_value(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return np.array2string(v, separator=", ", threshold=8, precision=10)
    if isinstance(v, np.generic):
        return repr(v.item())
    if isinstance(v, tuple):
        inner = ", ".join(format_value(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    return repr(v)
