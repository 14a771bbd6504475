"""The public entry points: `lower(f)` and `code_lowered(f)`."""
from __future__ import annotations

import types
import weakref

from ssair import interpreter
from ssair import progress
from ssair.compile_lock import compiling
from ssair.ir import IR

from . import (closures, guards, loops, ops_basic, ops_call, ops_control, ops_except,  # noqa: F401
               ops_format)  # (handlers)
from .closures import CELLS_ATTR, RUNTIME_DEFAULTS_ATTR, SELF_ATTR, NeedsCell
from .frame import Lowerer
from .runtime import call_unpacked

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# code object -> {sharing key: IR}: functions made at run time from one code object
# (closures, lambdas made in a loop) share one IR; what they capture are its arguments
_BY_CODE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def lower(f) -> IR:
    """The SSA IR of Python function `f` (cached per function object, and shared by
    the functions of one code object: see `shared_ir`).

    Raises `lowering.UnsupportedError` for constructs outside the supported subset.
    A global that is not defined (a module attribute that does not exist) lowers to
    code raising CPython's NameError (AttributeError) where the read runs.
    """
    if type(f) is types.FunctionType:     # the interpreter's path, once per call
        ir = _CACHE.get(f)
        if ir is not None and ir.meta.get("code") is f.__code__:
            if guards.fresh(f):
                return ir
            guards.invalidate()           # a global it read was rebound
    f = getattr(f, "__func__", f)
    if not hasattr(f, "__code__"):
        raise TypeError(f"lowering.lower: {f!r} is not a Python function")
    ir = _CACHE.get(f)
    if ir is None or ir.meta.get("code") is not f.__code__:
        ir = _lowered(f)
    return ir


@compiling
def _lowered(f) -> IR:
    """`_CACHE[f]`, lowered by the first thread that asks (one IR per function: the
    J transform's and the JIT's caches are keyed by it)."""
    ir = _CACHE.get(f)
    if ir is None or ir.meta.get("code") is not f.__code__:
        code = f.__code__
        progress.stage("lowering", f"{f.__qualname__} ({code.co_filename}:{code.co_firstlineno})")
        guards.guard_of(f)                # the values it is lowered with
        ir = shared_ir(f)
        _CACHE[f] = ir
    return ir


# IR -> None, run on each function's lowered IR: rewrites of calls that a higher
# layer registers (`adjoint.passes.nested_forward`: `jvp` / `hvp` called in user code
# become calls of the callee's tangent function)
CALL_REWRITES: list = []


def shared_ir(f) -> IR:
    """The IR of `f`, lowered once per code object and sharing key (`_sharing_key`).

    Lowering reads nothing of `f` but its code, globals and the markers
    `lowering.closures` sets: closure cells are the IR's leading arguments and the
    defaults are bound per call, so a closure made anew (a factory's result, a
    lambda made in a loop) reuses the IR, and with it every transform and compiled
    specialisation keyed by the IR and the argument types.  The IR's `func` is the
    template `template_of(f)`, not `f`: the IR keeps no user value alive."""
    entry = _shared_entry(f)
    if entry[1] is None:
        ir = _lower_with_cells(entry[0])
        ir.meta["code"] = f.__code__
        for rewrite in CALL_REWRITES:
            rewrite(ir)
        _CACHE[entry[0]] = ir
        entry[1] = ir
    return entry[1]


def template_of(f) -> types.FunctionType:
    """The function standing for every function of `f`'s code and sharing key: `f`'s
    code, globals, names, cell markers and first defaults, with empty closure cells.
    Compiled code specialised on a closure value keys on it and on the types of the
    captured values (`jit.types.typeof`)."""
    return _shared_entry(f)[0]


def _shared_entry(f) -> list:
    """[template, its IR or None] for `f`'s code and sharing key."""
    key = _sharing_key(f)
    per_code = _BY_CODE.get(f.__code__)
    if per_code is None:
        per_code = _BY_CODE[f.__code__] = {}
    entry = per_code.get(key)
    if entry is None or entry[0].__globals__ is not f.__globals__:
        entry = per_code[key] = [_template(f), None]
    return entry


def _sharing_key(f) -> tuple:
    """What of `f` beyond its code the lowering depends on: its globals (by identity),
    the cell markers of `lowering.closures`, and the types of its defaults (the
    values are bound per call), and the `__class__` cell of a method (`super()` is
    resolved on its class when lowering: `lowering.super_calls`)."""
    kw = f.__kwdefaults__ or {}
    return (id(f.__globals__), getattr(f, CELLS_ATTR, None), getattr(f, SELF_ATTR, None),
            getattr(f, RUNTIME_DEFAULTS_ATTR, False),
            None if f.__defaults__ is None else tuple(map(type, f.__defaults__)),
            tuple((k, type(v)) for k, v in kw.items()), id(_class_cell(f)))


def _class_cell(f):
    """The `__class__` cell of method `f`, or None."""
    code = f.__code__
    if "__class__" not in code.co_freevars or not f.__closure__:
        return None
    return f.__closure__[code.co_freevars.index("__class__")]


def _template(f) -> types.FunctionType:
    """A function like `f` (code, globals, names, defaults, cell markers) whose closure
    cells are empty, but for a method's `__class__` cell, which it shares (the cell is
    part of the sharing key): what the shared IR was lowered from (`f` itself when it
    has no cells: it holds no captured value)."""
    if not f.__closure__:
        return f
    class_cell = _class_cell(f)
    cells = tuple(class_cell if n == "__class__" else types.CellType()
                  for n in f.__code__.co_freevars) or None
    t = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, cells)
    t.__qualname__, t.__module__ = f.__qualname__, f.__module__
    t.__kwdefaults__ = dict(f.__kwdefaults__) if f.__kwdefaults__ else None
    for attr in (CELLS_ATTR, SELF_ATTR, RUNTIME_DEFAULTS_ATTR):
        if hasattr(f, attr):
            setattr(t, attr, getattr(f, attr))
    return t


def _lower_with_cells(f) -> IR:
    """Lower with value capture of cell variables, then again with a real cell for
    each variable that value capture cannot express exactly (`lowering.closures`)."""
    cells: set = set()
    while True:
        try:
            return Lowerer(f, frozenset(cells)).run()
        except NeedsCell as e:
            if e.name in cells:
                raise RuntimeError(f"lowering: cell {e.name!r} of {f.__qualname__} "
                                   "requested twice") from None
            cells.add(e.name)


@compiling
def register_ir(f: types.FunctionType, ir: IR) -> None:
    """Make `lower(f)` return `ir`: the IR of a function built by a transform (forward
    mode's tangent functions), which the interpreter and the JIT then call as they
    call any user function."""
    ir.meta["code"] = f.__code__
    ir.func = f
    _CACHE[f] = ir


_STUBS = [0]


def stub_function(name: str, nargs: int, globals_: dict, filename: str) -> types.FunctionType:
    """A Python function object `name(a0, ..., a{nargs-1})` to carry an IR a transform
    built (`register_ir`): forward mode's tangent functions, the recompute functions
    of checkpointed loops.  Its body raises, naming a number of its own: no two stubs
    have equal code objects (which caches keyed by code would take for one function),
    and a stub run without its IR fails loudly instead of returning a value;
    `__zygopy_generated__` marks it (`jit.disk_cache` never stores one)."""
    _STUBS[0] += 1
    names = ", ".join(f"a{k}" for k in range(nargs))
    src = (f"def stub({names}):\n    raise RuntimeError('zygopy: generated function "
           f"#{_STUBS[0]} ran before its IR was built')\n")
    scope: dict = {}
    exec(compile(src, filename, "exec"), scope)
    code = scope["stub"].__code__.replace(co_name=name)
    fn = types.FunctionType(code, globals_, name)
    fn.__qualname__ = name
    fn.__zygopy_generated__ = name
    fn.__zygopy_lowered__ = True    # (the interpreter always runs its registered IR)
    return fn


class CodeLowered:
    """The lowered IR of a function, shown as its listing (like Julia's @code_lowered)."""

    def __init__(self, ir: IR):
        self.ir = ir

    def __str__(self) -> str:
        return str(self.ir)

    __repr__ = __str__


def code_lowered(f) -> CodeLowered:
    """An object whose str() and repr() are the listing of `lower(f)`."""
    return CodeLowered(lower(f))


def _drop_lowerings() -> None:
    """Forget the IR of every user function (`guards.invalidate`); the IRs transforms
    built for generated functions stay (nothing else could rebuild them)."""
    for f in list(_CACHE.keys()):
        if not getattr(f, "__zygopy_generated__", None):
            _CACHE.pop(f, None)
    _BY_CODE.clear()


guards.on_invalidate(_drop_lowerings)
interpreter.set_lowering(lower, call_unpacked)   # the interpreter runs user functions it calls
