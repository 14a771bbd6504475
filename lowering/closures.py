"""Cell and free variables.

Two ways to give a nested function the variables it closes over:

* value capture (the fast path): `make_closure(@inner, v...)` copies the current
  values.  That equals CPython's late binding when the cell never changes after the
  closure is made: a parameter that is never stored, or a local stored exactly once,
  outside any loop, before the closure is made;
* real cells, for every other cell variable (a closure made in a loop over the loop
  variable, inner functions calling each other, a closure reading a variable assigned after it
  is made): the enclosing function makes the cell at entry (`make_cell()`, or
  `make_cell(%param)`), stores with `cell_set(%c, %v)`, reads with
  `cell_get(%c, "name", "local")`, and passes the cell itself to `make_closure`.  The
  nested function is built with `__zygopy_cells__` naming those free variables, so
  its own lowering reads them with `cell_get(%c, "name", "free")`, and passes them on
  as cells to functions nested further.

The lowering tries value capture first; where it cannot prove it exact it raises
`NeedsCell(name)` and `lowering.api.lower` lowers the function again with `name` in
`Lowerer.cells`.

A recursive inner function (`def inner(k): ... inner(k - 1) ...`, stored once and
never rebound) needs no cell either: its own slot in `make_closure` is a placeholder
`None`, the function is built with `__zygopy_self__` naming that free variable, and
its lowering reads the variable as `make_closure(@inner, <its own captured values>)`,
a closure equal to itself.  No cycle through a cell remains, so the J transform and
the JIT treat it as any closure (the recursive call's cotangent reaches the captured
values through that `make_closure`).
"""
from __future__ import annotations

import dis
import sys
import types

from ssair.ir import Const, Var

from .handlers import handles
from .reader import param_names
from .runtime import UNBOUND
from .super_calls import class_cell

CELLS_ATTR = "__zygopy_cells__"
SELF_ATTR = "__zygopy_self__"
SELF_SLOT = Const(None)     # the placeholder a self-referencing function captures
# Set on a self-referencing function whose defaults are computed at run time (`def
# fact(n=x)`): the closure of itself that its lowering builds (`self_closure`) does
# not carry them, so a recursive call must pass every argument (`ops_call.call`
# refuses one that leaves a defaulted argument out).
RUNTIME_DEFAULTS_ATTR = "__zygopy_runtime_defaults__"


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
    if name == lw.self_name:
        return self_closure(lw)
    v = lw.ssa.read(name, lw.block)
    if _maybe_unbound(lw, v):
        if name in self_referencing(lw.code):
            return SELF_SLOT
        raise NeedsCell(name)
    return v


def self_closure(lw):
    """Inside a self-referencing function: a closure of itself over its own
    captured values (`SELF_SLOT` for its own name)."""
    vals = [SELF_SLOT if n == lw.self_name else
            lw.cell_of[n] if n in lw.cell_of else lw.ssa.read(n, lw.block)
            for n in lw.code.co_freevars]
    v = lw.emit("make_closure", Const(lw.func), *vals)
    lw.known_funcs[v] = lw.func
    return v


_CLOSURE_BUILD = {"LOAD_CLOSURE", "LOAD_FAST", "LOAD_FAST_LOAD_FAST", "BUILD_TUPLE",
                  "LOAD_CONST", "COPY_FREE_VARS"}


def self_referencing(code) -> frozenset:
    """Cell variables of `code` that hold a function referring to itself by that
    name and nothing else: the variable is stored once (outside loops, checked by
    `check_cell_store`), its cell is passed to exactly one function build (positional
    defaults allowed, see `RUNTIME_DEFAULTS_ATTR`), whose result is stored straight
    into the variable."""
    instrs = list(dis.get_instructions(code))
    params = param_names(code)
    out = set()
    for name in code.co_cellvars:
        if name in params:
            continue
        stores = [i for i, ins in enumerate(instrs)
                  if ins.opname == "STORE_DEREF" and ins.argval == name]
        loads = [i for i, ins in enumerate(instrs) if ins.opname.startswith(
            ("LOAD_CLOSURE", "LOAD_FAST")) and name in _names(ins.argval)]
        if len(stores) == 1 and len(loads) == 1 and _builds_into(instrs, loads[0], name):
            out.add(name)
    return frozenset(out)


def _names(argval) -> tuple:
    return argval if isinstance(argval, tuple) else (argval,)


def _builds_into(instrs: list, start: int, name: str) -> bool:
    """The instructions from `start` build one closure-only function whose code
    reads free variable `name`, and store it into `name`."""
    k, code = start, None
    while k < len(instrs) and instrs[k].opname in _CLOSURE_BUILD:
        if isinstance(instrs[k].argval, types.CodeType):
            code = instrs[k].argval
        k += 1
    if k >= len(instrs) or instrs[k].opname != "MAKE_FUNCTION" or code is None:
        return False
    if sys.version_info < (3, 13):
        if instrs[k].arg not in (0x08, 0x09):       # a closure, maybe with defaults
            return False
        k += 1
    else:
        k += 1
        while k < len(instrs) and instrs[k].opname == "SET_FUNCTION_ATTRIBUTE":
            if instrs[k].arg not in (0x08, 0x01):
                return False
            k += 1
    return (name in code.co_freevars and k < len(instrs)
            and instrs[k].opname == "STORE_DEREF" and instrs[k].argval == name)


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
    params = param_names(code)
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
    params = set(param_names(code))
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
    if name == lw.self_name and name not in lw.cell_of:
        lw.push(self_closure(lw))
        return
    if name in lw.cell_of:
        lw.push(_load_cell(lw, name))
        return
    cls = class_cell(lw) if name == "__class__" else None
    lw.push(Const(cls) if cls is not None else lw.load_local(name))


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

