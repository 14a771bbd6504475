"""What an `except` clause of compiled code asks about the error it caught.

Compiled code holds a caught exception as the word its error record holds
(`ERRINFO[1]`, the id of an error site: `jit.runtime.native.SITES`), so that a
re-raise only writes the word back.  `except E:` asks `zy_exception_matches(word,
E)` whether the site's exception class (or, after a failed host call, the class
of the exception it left pending) is a subclass of E (a class or a tuple of them);
it runs in Python, on the rare path where an exception was raised.
"""
from __future__ import annotations

import ctypes

from jit.runtime import native


def exception_class(word: int) -> type:
    """The class of the exception error site `word` stands for."""
    if word == native.HOST_ERROR:
        pending = native.HOST_PENDING[0]
        return type(pending) if pending is not None else RuntimeError
    return native.SITES[word].exc


def _matches(word: int, kinds_ptr: int) -> int:
    kinds = ctypes.cast(kinds_ptr, ctypes.py_object).value
    return int(issubclass(exception_class(word), kinds))


_MATCHES = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)(_matches)


def matches_address() -> int:
    return ctypes.cast(_MATCHES, ctypes.c_void_p).value
