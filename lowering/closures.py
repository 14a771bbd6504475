"""Cell and free variables.

Closures capture values, not cells: `make_closure(@inner, v...)` copies the
current values.  That equals CPython's late binding only when the captured cell
never changes after the closure is made, so a cell variable of the function being
lowered is accepted only if it is a parameter that is never stored, or a local
stored exactly once, outside any loop, before the closure is made.
"""
from __future__ import annotations

import dis
import types

from ssair.ir import Const, Var

from .frame import handles
from .runtime import UNBOUND

REASSIGNED = "closure over reassigned variable"


def _maybe_unbound(lw, v) -> bool:
    if isinstance(v, Const):
        return v.value is UNBOUND
    phi = lw.ssa.phis.get(v) if isinstance(v, Var) else None
    return phi is not None and any(_maybe_unbound_shallow(x) for x in phi.incoming.values())


def _maybe_unbound_shallow(v) -> bool:
    return isinstance(v, Const) and v.value is UNBOUND


def check_capture(lw, name: str):
    """The value of cell `name` for a closure; refuse if it may still change."""
    v = lw.ssa.read(name, lw.block)
    if _maybe_unbound(lw, v):
        lw.refuse(REASSIGNED)
    return v


def _cell_stores(lw) -> dict:
    cached = getattr(lw, "_cell_stores", None)
    if cached is not None:
        return cached
    stores = {}
    for b in lw.reader.blocks:
        for ins in b.instrs:
            if ins.name == "STORE_DEREF":
                stores.setdefault(ins.arg.name, []).append(b.index)
    lw._cell_stores = stores
    return stores


def check_cell_store(lw, name: str) -> None:
    code = lw.code
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    where = _cell_stores(lw).get(name, [])
    if name in params or len(where) != 1 or where[0] in lw.reader.cyclic:
        lw.refuse(REASSIGNED)


def writes_free_variable(code) -> bool:
    """True if `code` (or a function nested in it) assigns one of its free
    variables (`nonlocal` writes), which value capture cannot express."""
    for ins in dis.get_instructions(code):
        if ins.opname in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in code.co_freevars:
            return True
    return any(writes_free_variable(c) for c in code.co_consts if isinstance(c, types.CodeType))


@handles("LOAD_DEREF")
def op_load_deref(lw, ins):
    lw.push(lw.load_local(ins.arg.name))


@handles("LOAD_CLOSURE")
def op_load_closure(lw, ins):
    lw.push(check_capture(lw, ins.arg.name))


@handles("STORE_DEREF")
def op_store_deref(lw, ins):
    if type(ins.arg).__name__ == "FreeVar":
        lw.refuse("nonlocal write")
    check_cell_store(lw, ins.arg.name)
    lw.store_local(ins.arg.name, lw.pop())
