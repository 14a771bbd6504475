"""Which values may be views of another array (`t[0:2]`, `t.T`, `t.reshape(...)`, a
row of a loop over a matrix), through phis, copies and the elements of tuples:
what `instrument` refuses writes into, and `hidden_writes` refuses passing to a
callee that writes into it."""
from __future__ import annotations

from typing import Any

import numpy as np

from ssair import Const, Var

from .aliases import VIEW_NAMES

VIEW_ATTRS = frozenset({"T", "real", "imag", "flat", "mT"})


def view_source(v, defs: dict, phis: dict, seen: set, kinds: Any = None):
    """The statement (through phis and copies) that may make `v` a view, or None."""
    if v in seen or (kinds is not None and kinds.is_scalar(v)):
        return None
    seen.add(v)
    if v in phis:
        for x in phis[v].operands():
            hit = isinstance(x, Var) and view_source(x, defs, phis, seen, kinds)
            if hit:
                return hit
        return None
    s = defs.get(v)
    if s is None:
        return None
    if s.op == "copy" and isinstance(s.args[0], Var):
        return view_source(s.args[0], defs, phis, seen, kinds)
    if s.op == "getitem" and isinstance(s.args[0], Const) and isinstance(s.args[0].value, tuple):
        return v if any(isinstance(e, np.ndarray) for e in s.args[0].value) else None
    elements = tuple_elements(s.args[0], defs) if s.op == "getitem" else None
    k = s.args[1].value if elements is not None and len(s.args) == 2 and \
        isinstance(s.args[1], Const) else None
    if isinstance(k, int) and -len(elements) <= k < len(elements):
        elements = [elements[k]]
    if elements is not None:   # an element of a tuple is that value itself
        for x in elements:
            hit = isinstance(x, Var) and view_source(x, defs, phis, seen, kinds)
            if hit:
                return hit
        return None
    return v if makes_view(s, defs) else None


def tuple_elements(v, defs: dict):
    """The operands of the `tuple` that `v` is (directly or `unpack`ed), or None."""
    made = defs.get(v) if isinstance(v, Var) else None
    if made is not None and made.op == "unpack":
        made = defs.get(made.args[0]) if isinstance(made.args[0], Var) else None
    return made.args if made is not None and made.op == "tuple" else None


def makes_view(s, defs: dict) -> bool:
    if s.op == "getitem":
        return True
    if s.op == "getattr":
        return isinstance(s.args[1], Const) and s.args[1].value in VIEW_ATTRS
    if s.op != "call":
        return False
    f = s.args[0]
    if isinstance(f, Const):
        return getattr(f.value, "__name__", None) in VIEW_NAMES
    m = defs.get(f)
    return (m is not None and m.op == "getattr" and isinstance(m.args[1], Const)
            and m.args[1].value in VIEW_NAMES)


def view_name(s) -> str:
    if s.op == "getitem":
        return "indexing"
    if s.op == "getattr":
        return f".{s.args[1].value}"
    return "a call that returns a view"
