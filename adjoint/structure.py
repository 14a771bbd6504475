"""A tangent or cotangent checked against the value it belongs to.

`jvp` checks each tangent against its primal and `back(dy)` checks its cotangent
against the output, as JAX's `jvp` and `vjp` do: a number for a number (complex only
for a complex value), an array of the same shape for an array, a tuple or list of the
same length for a tuple or list, a dict with none but the value's keys for a dict, and
None for anything else (a label, None).  None is the zero anywhere.  `conform` returns
it in the form the IR takes (floats, fresh arrays, every key of a dict) or raises
ValueError (the structure or shape differs) or TypeError (a complex number for a real
value, or no number at all), naming what was expected, what was given and where.
"""
from __future__ import annotations

import numbers
import types
from typing import Any, Callable

import numpy as np

from .pytrees import is_record, record_fields


def conform(x: Any, t: Any, what: str, zero: Callable = lambda x: None,
            records: bool = False) -> Any:
    """`t`, a tangent or cotangent of value `x`, checked and converted; `what` names it
    in errors ("jvp: tangent 0"); `zero(x)` stands in for a None.  With `records`, an
    object `x` (a dataclass, a user object) takes an object of its class, a namespace or
    a dict of its attributes' tangents, returned as the tuple of them in its attribute
    order (the form forward mode reads an attribute's tangent from)."""
    if type(t) is float and type(x) is float:     # (the common case, without numpy)
        return t
    return _conform(x, t, what, "", zero if not records else _RecordZero(zero))


class _RecordZero:
    """A `zero` that marks the conversion of objects to tuples of their tangents."""

    def __init__(self, zero: Callable) -> None:
        self.zero = zero

    def __call__(self, x: Any) -> Any:
        return self.zero(x)


def _conform(x: Any, t: Any, what: str, path: str, zero: Callable) -> Any:
    if t is None:
        return zero(x)
    if isinstance(zero, _RecordZero) and is_record(x):
        return _record(x, t, what, path, zero)
    if isinstance(x, np.ndarray):
        return _array(x, t, what, path)
    if isinstance(x, (tuple, list)):
        if not isinstance(t, (tuple, list)) or len(t) != len(x):
            _mismatch(x, t, what, path)
        out = [_conform(a, b, what, f"{path}[{k}]", zero) for k, (a, b) in enumerate(zip(x, t))]
        return tuple(out) if isinstance(x, tuple) else out
    if isinstance(x, dict):
        if not isinstance(t, dict) or not set(t) <= set(x):
            _mismatch(x, t, what, path)
        return {k: _conform(v, t.get(k), what, f"{path}[{k!r}]", zero) for k, v in x.items()}
    if _is_number(x):
        return _number(x, t, what, path)
    raise ValueError(f"{what}{path} must be None: the value there is a "
                     f"{type(x).__name__}, which has no derivative; got {describe(t)}")


def _record(x: Any, t: Any, what: str, path: str, zero: Callable) -> tuple:
    """The tangent `t` of object `x` as the tuple of its attributes' tangents."""
    fields = record_fields(x)
    parts = t if isinstance(t, dict) else dict(record_fields(t)) if (
        type(t) is type(x) or isinstance(t, types.SimpleNamespace)) else None
    if parts is None or not set(parts) <= {name for name, _ in fields}:
        raise ValueError(f"{what}{path} must be None, a {type(x).__name__}, a namespace or "
                         f"a dict of its attributes {[n for n, _ in fields]}, got "
                         f"{describe(t)}")
    return tuple(_conform(v, parts.get(name), what, f"{path}.{name}", zero)
                 for name, v in fields)


def _is_number(x: Any) -> bool:
    return isinstance(x, (numbers.Number, np.number, np.bool_))


def _array(x: np.ndarray, t: Any, what: str, path: str) -> np.ndarray:
    if not isinstance(t, np.ndarray) and not _is_number(t):
        _mismatch(x, t, what, path)
    if np.shape(t) != x.shape:
        _mismatch(x, t, what, path)
    dtype = _dtype_for(x.dtype.kind == "c", t, what, path)
    return np.array(t, dtype=dtype)


def _number(x: Any, t: Any, what: str, path: str) -> Any:
    if not _is_number(t) and not (isinstance(t, np.ndarray) and t.ndim == 0):
        _mismatch(x, t, what, path)
    dtype = _dtype_for(np.iscomplexobj(x), t, what, path)
    return complex(t) if dtype is complex else float(t)


def _dtype_for(complex_value: bool, t: Any, what: str, path: str) -> type:
    """complex for a complex value; float for a real one (a complex `t` is refused)."""
    kind = np.asarray(t).dtype.kind
    if kind not in "biufc":
        raise TypeError(f"{what}{path} must hold numbers, got {describe(t)}")
    if complex_value:
        return complex
    if kind == "c":
        raise TypeError(f"{what}{path} is complex ({describe(t)}) but the value there is "
                        "real; give a real number")
    return float


def _mismatch(x: Any, t: Any, what: str, path: str) -> None:
    raise ValueError(f"{what}{path} must be {describe(x, like=True)}, got {describe(t)}")


def describe(v: Any, like: bool = False) -> str:
    """A short description of `v`'s structure; `like`: of a value shaped like it."""
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape}"
    if isinstance(v, (tuple, list)):
        return f"a {type(v).__name__} of {len(v)} {'entry' if len(v) == 1 else 'entries'}"
    if isinstance(v, dict):
        return f"a dict with {'keys among ' if like else 'keys '}{sorted(v, key=repr)}"
    if like and _is_number(v):
        return "a complex number" if np.iscomplexobj(v) else "a number"
    return f"a {type(v).__name__} ({v!r})" if _is_number(v) else f"a {type(v).__name__}"


def has_complex(v: Any) -> bool:
    """Whether a complex number or array is among `v`'s leaves."""
    if isinstance(v, (tuple, list)):
        return any(has_complex(e) for e in v)
    if isinstance(v, dict):
        return any(has_complex(e) for e in v.values())
    return np.iscomplexobj(v) and _is_number(v) or (isinstance(v, np.ndarray)
                                                     and v.dtype.kind == "c")
