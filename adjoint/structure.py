"""A tangent or cotangent checked against the value it belongs to.

`jvp` checks each tangent against its primal and `back(dy)` checks its cotangent
against the output, as JAX's `jvp` and `vjp` do: a number for a number (complex only
for a complex value), an array of the same shape for an array, a tuple or list of the
same length for a tuple or list (a named tuple's may also be one of its own class), a
dict with none but the value's keys for a dict, an object of the same class for a
dataclass or a registered class, a `types.SimpleNamespace` or dict of attribute
tangents for another user object (the forms reverse mode's gradient takes:
`adjoint.pytrees`), and None for anything else (a label, None).  None is the zero
anywhere.  Inside the IR a tangent of an object is a tuple of its attributes'
tangents in `record_fields` order (`user_tangent` turns it back into the object's form).  `conform` returns
it in the form the IR takes (floats, fresh arrays, every key of a dict) or raises
ValueError (the structure or shape differs) or TypeError (a complex number for a real
value, or no number at all), naming what was expected, what was given and where.
"""
from __future__ import annotations

import numbers
import types
from typing import Any, Callable

import numpy as np

from .pytrees import (finish_record, flatten_registered, is_dataclass_instance,
                      is_namedtuple, is_record, record_fields, registered)


def conform(x: Any, t: Any, what: str, zero: Callable = lambda x: None) -> Any:
    """`t`, a tangent or cotangent of value `x`, checked and converted; `what` names it
    in errors ("jvp: tangent 0"); `zero(x)` stands in for a None."""
    if type(t) is float and type(x) is float:     # (the common case, without numpy)
        return t
    return _conform(x, t, what, "", zero)


def _conform(x: Any, t: Any, what: str, path: str, zero: Callable) -> Any:
    if t is None:
        z = zero(x)
        if z is None and type(x) is not float and is_record(x):   # its fields' zeros
            return tuple(_conform(v, None, what, path, zero) for _, v in record_fields(x))
        return z
    if isinstance(x, np.ndarray):
        return _array(x, t, what, path)
    if isinstance(x, (tuple, list)):
        if not isinstance(t, (tuple, list)) or len(t) != len(x) or \
                is_namedtuple(t) and type(t) is not type(x):
            _mismatch(x, t, what, path)
        out = [_conform(a, b, what, f"{path}[{k}]", zero) for k, (a, b) in enumerate(zip(x, t))]
        return tuple(out) if isinstance(x, tuple) else out
    if isinstance(x, dict):
        if not isinstance(t, dict) or not set(t) <= set(x):
            _mismatch(x, t, what, path)
        return {k: _conform(v, t.get(k), what, f"{path}[{k!r}]", zero) for k, v in x.items()}
    if _is_number(x):
        return _number(x, t, what, path)
    if is_record(x):
        return _record(x, t, what, path, zero)
    raise ValueError(f"{what}{path} must be None: the value there is a "
                     f"{type(x).__name__}, which has no derivative; got {describe(t)}")


def _record(x: Any, t: Any, what: str, path: str, zero: Callable) -> tuple:
    """The tangent of object `x` as the IR holds it: its attributes' tangents, in
    `record_fields` order, from `t` in the form its gradient takes."""
    fields = record_fields(x)
    parts = _record_parts(x, t, [n for n, _ in fields])
    if parts is None:
        _mismatch(x, t, what, path)
    return tuple(_conform(v, None if _is_int(v) else parts.get(n), what, f"{path}.{n}", zero)
                 for n, v in fields)      # (an int's tangent is ignored, as a primal's)


def _is_int(v: Any) -> bool:
    return isinstance(v, (bool, int, np.integer, np.bool_))


def _record_parts(x: Any, t: Any, names: list) -> Any:
    """{attribute name: tangent} from the tangent `t` given for object `x`, or None
    where `t` is not of `x`'s tangent form."""
    if registered(x) is not None or is_dataclass_instance(x):
        if type(t) is not type(x):
            return None
        parts = flatten_registered(t)[0] if registered(t) is not None else \
            {n: getattr(t, n, None) for n in names}
    elif isinstance(t, types.SimpleNamespace):
        parts = vars(t)
    elif isinstance(t, dict):
        parts = t
    else:
        return None
    return parts if set(parts) <= set(names) else None


def user_tangent(t: Any, y: Any) -> Any:
    """The tangent `t` of value `y`, as the IR holds it, in the form handed to the
    user: an object's in its gradient's form (a dataclass, a named tuple, the
    registered class, a `types.SimpleNamespace`), at any depth; a None zero filled in."""
    if _is_int(y):
        return None             # (as in the gradient)
    if t is None and _is_number(y):
        return zero_of(y)
    if is_namedtuple(y):
        parts = t if isinstance(t, (tuple, list)) else [getattr(t, n, None) for n in y._fields]
        return type(y)._make(user_tangent(a, b) for a, b in zip(parts, y))
    if isinstance(y, (tuple, list)) and isinstance(t, (tuple, list)):
        out = [user_tangent(a, b) for a, b in zip(t, y)]
        return tuple(out) if isinstance(t, tuple) else out
    if isinstance(y, dict) and isinstance(t, dict):
        return {k: user_tangent(v, y.get(k)) for k, v in t.items()}
    if is_record(y):
        if is_record(t):        # (the object's own form, passed on)
            t = {n: v for n, v in record_fields(t)}
        return finish_record(t, y, user_tangent)
    return t


def zero_of(y: Any) -> Any:
    """A number's zero tangent: 0.0."""
    return 0.0 if not np.iscomplexobj(y) else 0j


def has_objects(y: Any) -> bool:
    """Whether an object or a named tuple is in `y` (its tangent needs `user_tangent`)."""
    if type(y) in (float, np.ndarray, int):
        return False
    if isinstance(y, (tuple, list)):
        return is_namedtuple(y) or any(has_objects(v) for v in y)
    if isinstance(y, dict):
        return any(has_objects(v) for v in y.values())
    return is_record(y)


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
    if like and (is_namedtuple(v) or is_record(v)):
        return _describe_object_tangent(v)
    if is_namedtuple(v) or is_record(v) and not isinstance(v, types.SimpleNamespace):
        return f"a {type(v).__name__}"
    if isinstance(v, types.SimpleNamespace):
        return f"a SimpleNamespace with attributes {sorted(vars(v))}"
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape}"
    if isinstance(v, (tuple, list)):
        return f"a {type(v).__name__} of {len(v)} {'entry' if len(v) == 1 else 'entries'}"
    if isinstance(v, dict):
        return f"a dict with {'keys among ' if like else 'keys '}{sorted(v, key=repr)}"
    if like and _is_number(v):
        return "a complex number" if np.iscomplexobj(v) else "a number"
    return f"a {type(v).__name__} ({v!r})" if _is_number(v) else f"a {type(v).__name__}"


def _describe_object_tangent(x: Any) -> str:
    """What a tangent of object `x` must be (its gradient's form)."""
    name = type(x).__name__
    if is_namedtuple(x):
        return f"a {name} or a tuple of {len(x)} entries"
    names = sorted(n for n, _ in record_fields(x))
    if registered(x) is not None or is_dataclass_instance(x):
        return f"a {name} (the same class as the value; fields {names})"
    return f"a SimpleNamespace or dict of attribute tangents (attributes among {names})"


def has_complex(v: Any, _seen: Any = None) -> bool:
    """Whether a complex number or array is among `v`'s leaves (objects' included)."""
    if isinstance(v, (tuple, list)):
        return any(has_complex(e, _seen) for e in v)
    if isinstance(v, dict):
        return any(has_complex(e, _seen) for e in v.values())
    if type(v) is not float and is_record(v):
        seen = set() if _seen is None else _seen
        if id(v) in seen:
            return False
        seen.add(id(v))
        return any(has_complex(e, seen) for _, e in record_fields(v))
    return np.iscomplexobj(v) and _is_number(v) or (isinstance(v, np.ndarray)
                                                     and v.dtype.kind == "c")
