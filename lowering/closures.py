"""Cell and free variables.

Two ways to give a nested function the variables it closes over:

* value capture (the fast path): `make_closure(@inner, v...)` copies the current
  values.  That equals CPython's late binding when the cell never changes after the
  closure is made: a parameter that is never stored, or a local stored exactly once,
  outside any loop, before the closure is made;
* real cells, for every other cell variable (a closure made in a loop over the loop
  variable, a recursive inner function, a closure reading a variable assigned after it
  is made): the enclosing function makes the cell at entry (`make_cell()`, or
  `make_cell(%param)`), stores with `cell_set(%c, %v)`, reads with
  `cell_get(%c, "name", "local")`, and passes the cell itself to `make_closure`.  The
  nested function is built with `__zygopy_cells__` naming those free variables, so
  its own lowering reads them with `cell_get(%c, "name", "free")`, and passes them on
  as cells to functions nested further.

The lowering tries value capture first; where it cannot prove it exact it raises
`NeedsCell(name)` and `lowering.api.lower` lowers the function again with `name` in
`Lowerer.cells`.
"""
from __future__ import annotations

import dis
import types

from ssair.ir import Const, Var

from .frame import handles
from .runtime import UNBOUND

CELLS_ATTR = "__zygopy_cells__"


class NeedsCell(Exception):
    """Value capture of cell variable `name` would not be exact: use a real cell."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _maybe_unbound(lw, v) -> bool:
    if isinstance(v, Const):
        return v.value is UNBOUND
    phi = lw.ssa.phis.get(v) if isinstance(v, Var) else None
    return phi is not None and any(_maybe_unbound_shallow(x) for x in phi.incoming.values())


def _maybe_unbound_shallow(v) -> bool:
    return isinstance(v, Const) and v.value is UNBOUND


def check_capture(lw, name: str):
    """The value of cell `name` for a closure (or the cell itself in cell mode)."""
    if name in lw.cell_of:
        return lw.cell_of[name]
    v = lw.ssa.read(name, lw.block)
    if _maybe_unbound(lw, v):
        raise NeedsCell(name)
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
        raise NeedsCell(name)


def writes_free_variable(code) -> bool:
    """True if `code` (or a function nested in it) assigns one of its free
    variables (`nonlocal` writes), which the lowering does not support."""
    for ins in dis.get_instructions(code):
        if ins.opname in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in code.co_freevars:
            return True
    return any(writes_free_variable(c) for c in code.co_consts if isinstance(c, types.CodeType))


def make_cells(lw) -> None:
    """At entry: a cell per cell-mode cell variable (holding the parameter of that
    name, if any); cell-mode free variables arrive as cells in their arguments."""
    code = lw.code
    nparams = code.co_argcount + code.co_kwonlyargcount
    params = set(code.co_varnames[:nparams])
    for name in code.co_freevars:
        if name in lw.free_cells:
            lw.cell_of[name] = lw.ssa.read(name, lw.block)
    for name in code.co_cellvars:
        if name not in lw.cells:
            continue
        init = [lw.ssa.read(name, lw.block)] if name in params else []
        lw.cell_of[name] = lw.emit("make_cell", *init, name=name)


def cell_names(lw, values: list, freevars: tuple) -> frozenset:
    """The free variables of a nested function that `values` pass as cells."""
    cells = set(lw.cell_of.values())
    return frozenset(n for n, v in zip(freevars, values) if isinstance(v, Var) and v in cells)


def _load_cell(lw, name: str):
    kind = "free" if name in lw.code.co_freevars else "local"
    return lw.emit("cell_get", lw.cell_of[name], Const(name), Const(kind))


@handles("LOAD_DEREF")
def op_load_deref(lw, ins):
    name = ins.arg.name
    if name in lw.cell_of:
        lw.push(_load_cell(lw, name))
        return
    lw.push(lw.load_local(name))


@handles("LOAD_CLOSURE")
def op_load_closure(lw, ins):
    lw.push(check_capture(lw, ins.arg.name))


@handles("STORE_DEREF")
def op_store_deref(lw, ins):
    name = ins.arg.name
    if type(ins.arg).__name__ == "FreeVar":
        lw.refuse("nonlocal write")
    if name in lw.cell_of:
        lw.emit("cell_set", lw.cell_of[name], lw.pop())
        return
    check_cell_store(lw, name)
    lw.store_local(name, lw.pop())

