"""Turning lazy stack values into IR statements, and building the Python function
objects of nested functions and lambdas at lowering time."""
from __future__ import annotations

import functools
import types

from ssair.ir import Const

from .closures import (CELLS_ATTR, RUNTIME_DEFAULTS_ATTR, SELF_ATTR, SELF_SLOT, cell_names,
                       writes_free_variable)
from .errors import COMPREHENSION_NAMES
from .ops_format import materialize_format
from .runtime import call_unpacked, merged
from .super_calls import SuperMethod
from .values import (Converted, FuncBuild, LazyCall, LazyDict, LazyFormat, LazyList, LazyTuple,
                     ListAppend, Starred)

_FUNCTIONS: dict = {}   # (code, defaults, kwdefaults) -> function, so lowering is stable


def materialize(lw, v):
    """Emit the statement for lazy value `v` in the current block; return its operand."""
    if isinstance(v, LazyTuple):
        if any(isinstance(e, Starred) for e in v.elems):
            return _joined_tuple(lw, v.elems)
        elems = [lw.operand(e) for e in v.elems]
        if all(isinstance(e, Const) for e in elems):
            return Const(tuple(e.value for e in elems))
        return lw.emit("tuple", *elems)
    if isinstance(v, LazyList):
        if any(isinstance(e, Starred) for e in v.elems):
            lw.refuse("starred expression in a list")
        return lw.emit("list", *v.elems)
    if isinstance(v, LazyDict):
        if any(isinstance(e, Starred) for e in v.entries):
            return joined_dict(lw, v.entries, merged)
        return lw.emit("dict", *[lw.operand(x) for pair in v.entries for x in pair])
    if isinstance(v, ListAppend):
        return lw.emit("getattr", v.obj, Const("append"))
    if isinstance(v, LazyCall):
        if any(isinstance(a, Starred) for a in v.args):     # zip(*t) used as a value
            return lw.emit("call", Const(call_unpacked), Const(v.callee),
                           _joined_tuple(lw, v.args), Const(None))
        return lw.emit("call", Const(v.callee), *v.args)
    if isinstance(v, FuncBuild):
        return make_function(lw, v)
    if isinstance(v, LazyFormat):
        return materialize_format(lw, v)
    if isinstance(v, SuperMethod):    # `f = super().forward`: a bound method
        return lw.emit("call", Const(functools.partial), Const(v.fn), v.receiver)
    if isinstance(v, Converted):      # 3.13: a converted value used as it is
        return lw.emit("call", Const({"s": str, "r": repr, "a": ascii}[v.conversion]), v.value)
    lw.refuse(f"{type(v).__name__} used as a value")


def joined_dict(lw, entries: list, join):
    """`{k: v, **d, ...}`: each run of `k: v` entries as a dict display, each `**d`
    as itself, all passed to `join` (`merged` for a display, `keywords` for the
    keywords of a call)."""
    parts, run = [], []
    for e in entries + [None]:
        if isinstance(e, Starred) or e is None:
            if run:
                parts.append(lw.emit("dict", *[lw.operand(x) for pair in run for x in pair]))
                run = []
            if e is not None:
                parts.append(e.seq)
        else:
            run.append(e)
    return lw.emit("call", Const(join), *parts)


def _joined_tuple(lw, elems: list):
    """`(a, *t, b)`: the runs of single items as tuples, each `*t` as `tuple(t)`,
    joined by `+`."""
    parts, run = [], []
    for e in elems + [None]:
        if isinstance(e, Starred) or e is None:
            if run:
                parts.append(lw.emit("tuple", *[lw.operand(x) for x in run]))
                run = []
            if e is not None:
                parts.append(lw.emit("call", Const(tuple), e.seq))
        else:
            run.append(e)
    out = parts[0]
    for p in parts[1:]:
        out = lw.emit("add", out, p)
    return out


def make_function(lw, fb: FuncBuild):
    """`Const(fn)` for a nested function without free variables, otherwise
    `make_closure(@fn, captured...)`; `fn` is a real function whose closure cells
    are empty placeholders, so `lowering.lower(fn)` works on it."""
    code = fb.code
    if code.co_name in COMPREHENSION_NAMES:
        lw.refuse("comprehension")
    if writes_free_variable(code):
        lw.refuse("nonlocal write")
    if len(fb.closure) != len(code.co_freevars):
        lw.refuse("closure of unexpected shape")
    cells = cell_names(lw, fb.closure, code.co_freevars)
    selfs = [n for n, v in zip(code.co_freevars, fb.closure) if v is SELF_SLOT]
    fn = function_object(code, lw.func.__globals__, fb.qualname, fb.defaults, fb.kwdefaults,
                         cells, selfs[0] if selfs else None)
    if fb.dynamic_defaults is not None:
        if selfs:
            setattr(fn, RUNTIME_DEFAULTS_ATTR, True)
        v = lw.emit("make_closure", Const(fn), *fb.closure,
                    kwargs={"defaults": fb.dynamic_defaults})
        lw.known_funcs[v] = fn      # its calls here bind the defaults as operands
        lw.known_defaults[v] = (fb.dynamic_defaults, fb.dynamic_count)
        return v
    if not code.co_freevars:
        return Const(fn)
    v = lw.emit("make_closure", Const(fn), *fb.closure)
    lw.known_funcs[v] = fn
    return v


def function_object(code, globals_: dict, qualname: str, defaults, kwdefaults,
                    cells: frozenset = frozenset(), self_name: str | None = None):
    """The Python function lowered for a nested function (cached): empty placeholder
    cells, constant defaults, `__zygopy_cells__` naming the free variables that
    arrive as cells and `__zygopy_self__` the one that names the function itself
    (`lowering.closures`)."""
    key = (code, repr(defaults), repr(_freeze(kwdefaults)), cells, self_name)
    try:
        return _FUNCTIONS[key]
    except (KeyError, TypeError):
        pass
    closure = tuple(types.CellType() for _ in code.co_freevars) or None
    fn = types.FunctionType(code, globals_, code.co_name, defaults, closure)
    fn.__qualname__ = qualname or getattr(code, "co_qualname", code.co_name)
    if kwdefaults:
        fn.__kwdefaults__ = dict(kwdefaults)
    if cells:
        setattr(fn, CELLS_ATTR, cells)
    if self_name is not None:
        setattr(fn, SELF_ATTR, self_name)
    try:
        _FUNCTIONS[key] = fn
    except TypeError:
        pass
    return fn


def _freeze(x):
    if isinstance(x, dict):
        return tuple(sorted(x.items()))
    return x
