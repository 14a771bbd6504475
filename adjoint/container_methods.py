"""Methods of dicts that pass a differentiable value along, as plain Python over
`d[k]`: `d.get(k, v)`, `d.items()`, `d.values()`, `d.keys()`.

Reverse mode differentiates a call of one of these bound methods as a call of its
function here, with the dict its first argument (`adjoint.transform.call_forward`),
so each entry read gets its cotangent as `d[k]` gives it, and a default passed to
`get` gets the cotangent where the key is missing.  The JIT rewrites the same calls
into reads of constant keys (`jit.library.dict_methods`).  The views Python returns
are lists here (iterated, measured and indexed alike).
"""
from __future__ import annotations

from typing import Any, Optional

from .rule_table import nondiff


def dict_key_list(d: dict) -> list:
    """The keys of `d` in order (no derivative: keys are labels)."""
    return list(d.keys())


def dict_get(d: dict, key: Any, default: Any = None) -> Any:
    if key in d:
        return d[key]
    return default


def dict_values(d: dict) -> list:
    return [d[k] for k in dict_key_list(d)]


def dict_items(d: dict) -> list:
    return [(k, d[k]) for k in dict_key_list(d)]


nondiff(dict_key_list)
PYTHON_METHODS = {(dict, "get"): dict_get, (dict, "values"): dict_values,
                  (dict, "items"): dict_items, (dict, "keys"): dict_key_list}


def python_method(f: Any) -> Optional[tuple]:
    """(function, receiver) when `f` is a bound method listed above, else None."""
    owner = getattr(f, "__self__", None)
    if type(owner) is not dict:
        return None
    fn = PYTHON_METHODS.get((dict, getattr(f, "__name__", None)))
    return None if fn is None else (fn, owner)
