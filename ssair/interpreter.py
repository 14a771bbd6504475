"""The reference interpreter: runs an `IR` with exactly CPython's semantics.

`interpret(ir, *args)` walks the blocks from the entry.  Entering a block evaluates
its phis in parallel from the edge taken (every phi reads before any is written, so
`a, b = b, a + b` loops are right), then its statements, then the terminator.

Statements are dispatched as follows:
  * an op with a handler (the `handlers=` argument, or `register_handler`) runs as
    `handler(state, stmt, values)`: for ops that need interpreter state, such as the
    adjoint's tape operations; `state.context` is the `context=` given to `interpret`;
  * `call(f, args...; kw=...)`: user Python functions are lowered with the lowering
    function the front end injects (`set_lowering`; `lowering` does so when it is
    imported, and caches the IR) and interpreted (keywords and defaults bound with the
    function's signature; with no lowering injected they are called directly);
    `Closure`s and real Python closures are interpreted with their captured values as the leading `nfree` arguments; anything else (numpy, math,
    builtins, classes, functions registered as primitives) is called directly;
  * `make_closure(@inner, vals...; defaults=, kwdefaults=)` builds a
    `Closure(inner, vals)`; `inner` is an IR, a Python function, or a code object
    (made into a function with the enclosing function's globals);
  * every other op runs `PRIMITIVES[op].impl(*values)`.

Exceptions propagate exactly as CPython raises them.  Interpreted calls are counted:
past the depth CPython would reach the interpreter raises `RecursionError`, and it
raises `sys.setrecursionlimit` for its own frames while it runs (restored afterwards)
so that it never overflows the real stack itself.

Each run compiles every IR it meets once into flat per-block lists whose operands
are indices into one value array (constants get slots of their own), so dispatch is a
loop over tuples.
"""
from __future__ import annotations

import inspect
import os
import sys
import sysconfig
import threading
import types
import weakref
from typing import Any, Callable, Optional

from .ir import IR, Branch, Const, Goto, Raise, Return, Var
from .primitives import PRIMITIVES, REVISION
from .refusal import Refusal

# Python frames the interpreter uses per interpreted call (_exec -> _call ->
# _call_ir), with room to spare.
FRAMES_PER_CALL = 4
# Interpreted calls allowed = recursion limit - frames already on the stack - MARGIN.
MARGIN = 3
# CPython 3.10 spends C stack on every Python call: cap the Python frames the
# interpreter may stack there (about 20,000 overflow an 8 MiB stack).  Later
# versions run Python-to-Python calls without C recursion.
FRAME_CAP = 12_000 if sys.version_info < (3, 11) else None

# Top-level modules whose functions are library code: called, never lowered.
# zygopy's own packages are among them: their helpers (lowering.runtime) run as
# ordinary Python.
LIBRARY_MODULES = frozenset({
    "numpy", "math", "cmath", "builtins", "operator", "functools", "itertools",
    "random", "statistics", "copy", "collections", "scipy", "numba", "jax", "torch",
    "autograd", "llvmlite", "bytecode", "typing", "abc", "inspect", "_operator",
    "ssair", "lowering", "adjoint", "jit",
})

HANDLERS: dict = {}


def register_handler(op: str, fn: Callable) -> None:
    """Run `op` as `fn(state, stmt, values)` in every interpretation (tape ops)."""
    HANDLERS[op] = fn


class Closure:
    """A nested function together with its captured values.

    `func` is the inner function: an `IR` (with `nfree == len(values)`) or the Python
    function it is lowered from (`make_closure` turns a code object into such a
    function).  `values` are the free variables' values, in the order of
    `func.__code__.co_freevars`.  `defaults`/`kwdefaults` are the nested function's
    default values when they were computed at run time.  Calling a Closure from plain
    Python interprets it.
    """

    __slots__ = ("func", "values", "defaults", "kwdefaults", "_binder", "__weakref__")

    def __init__(self, func: Any, values: tuple, defaults: Optional[tuple] = None,
                 kwdefaults: Optional[dict] = None) -> None:
        self.func = func
        self.values = tuple(values)
        self.defaults = defaults
        self.kwdefaults = kwdefaults
        self._binder = None

    def __call__(self, *args, **kwargs):
        return _from_python(lambda state: _call(state, self, args, kwargs))

    @property
    def __name__(self) -> str:
        return getattr(self.func, "__name__", None) or getattr(self.func, "name", "closure")

    def __repr__(self) -> str:
        return f"<zygopy closure {self.__name__} over {self.values!r}>"


class State:
    """What one interpretation shares across its nested calls.

    `depth` counts interpreted calls in progress, `limit` is the depth at which
    `RecursionError` is raised, `handlers` maps ops to state-aware handlers, `context`
    is free for handlers (a tape), `codes` caches the compiled form of each IR.
    """

    def __init__(self, handlers: dict, context: Any, depth: int, limit: int) -> None:
        self.handlers = handlers
        self.context = context
        self.depth = depth
        self.limit = limit
        self.codes: dict = {}

    def code(self, ir: IR) -> "_Code":
        c = self.codes.get(ir)
        if c is None:
            c = self.codes[ir] = _compile(ir, self.handlers)
        return c


_local = threading.local()


def interpret(ir: IR, *args: Any, handlers: Optional[dict] = None, context: Any = None) -> Any:
    """Run `ir` on `args` (the `nfree` captured values first) and return its result.

    `handlers` adds or overrides state-aware op handlers for this run (see
    `register_handler`); `context` is exposed to them as `state.context`.  When the
    IR came from a Python function (`ir.func`) and the argument count does not match,
    the arguments are bound with the function's signature (defaults apply).
    """
    outer = getattr(_local, "state", None)
    merged = dict(HANDLERS, **(handlers or {}))
    if outer is not None:
        state = State(merged, context, outer.depth, outer.limit)
        return _nested(state, lambda: _call_ir(state, ir, _bind_ir(ir, args, {})))
    return _outermost(merged, context, lambda s: _call_ir(s, ir, _bind_ir(ir, args, {})))


def _from_python(fn: Callable) -> Any:
    """Enter the interpreter from plain Python (a Closure called by a library)."""
    outer = getattr(_local, "state", None)
    if outer is not None:
        return fn(outer)
    return _outermost(dict(HANDLERS), None, fn)


def _nested(state: State, fn: Callable) -> Any:
    prev = _local.state
    _local.state = state
    try:
        return fn()
    finally:
        _local.state = prev


def _outermost(handlers: dict, context: Any, fn: Callable) -> Any:
    """Set up depth accounting and a recursion limit large enough for our frames."""
    old = sys.getrecursionlimit()
    used = _stack_depth()
    limit = max(old - used - MARGIN, 1)
    if FRAME_CAP is not None:
        limit = min(limit, max((FRAME_CAP - used) // FRAMES_PER_CALL, 1))
    state = State(handlers, context, 0, limit)
    _local.state = state
    sys.setrecursionlimit(max(old, used + FRAMES_PER_CALL * (limit + 2) + 100))
    try:
        return fn(state)
    finally:
        _local.state = None
        sys.setrecursionlimit(old)


def _stack_depth() -> int:
    f, n = sys._getframe(1), 0
    while f is not None:
        f, n = f.f_back, n + 1
    return n


# -- calls ------------------------------------------------------------------------

def _call(state: State, f: Any, args: tuple, kwargs: dict) -> Any:
    """Apply `f` to the argument values: interpret user code, call everything else."""
    tf = type(f)
    if tf is Closure:
        ir, sig_fn = _closure_target(f)
        return _call_ir(state, ir, f.values + _bind(ir, sig_fn, args, kwargs))
    if tf is types.FunctionType:
        if f is _LOWER[1]:       # f(*t, **d) of a tuple and dict known only now
            g, t, d = args
            return _call(state, g, tuple(t), dict(d) if d is not None else {})
        try:
            ir = _user_ir(f)
        except Refusal:          # a construct lowering refuses: CPython runs the call
            return observed(f, args, kwargs, f(*args, **kwargs))
        if ir is not None:
            y = _call_ir(state, ir, _cells(f) + _bind(ir, f, args, kwargs))
            return observed(f, args, kwargs, y) if CALL_OBSERVERS else y
    elif tf is types.MethodType and type(f.__func__) is types.FunctionType:
        ir = _user_ir(f.__func__)
        if ir is not None:
            bound = _bind(ir, f.__func__, (f.__self__,) + tuple(args), kwargs)
            return _call_ir(state, ir, _cells(f.__func__) + bound)
    elif isinstance(f, IR):
        return _call_ir(state, f, _bind_ir(f, args, kwargs))
    return f(*args, **kwargs)


# called with (function, positional values, keywords, result) after each call of a user
# function: how a compiler learns the result type of one it cannot type
CALL_OBSERVERS: list = []


def observed(f: Any, args: tuple, kwargs: dict, y: Any) -> Any:
    """`y`, the result of `f(*args, **kwargs)`, after each observer saw the call."""
    for observe in CALL_OBSERVERS:
        observe(f, tuple(args), kwargs, y)
    return y


def _call_ir(state: State, ir: IR, args: tuple) -> Any:
    code = state.code(ir)
    if len(args) != code.nargs:
        raise TypeError(f"{ir.name}() takes {code.nargs - ir.nfree} positional arguments "
                        f"but {len(args) - ir.nfree} were given")
    if state.depth >= state.limit:
        raise RecursionError("maximum recursion depth exceeded")
    state.depth += 1
    try:
        return _exec(state, code, args)
    finally:
        state.depth -= 1


_SIGNATURES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _bind(ir: IR, fn: Any, args: tuple, kwargs: dict) -> tuple:
    """The IR's non-free parameter values for a call `fn(*args, **kwargs)`."""
    nparams = len(ir.args) - ir.nfree
    if fn is None:
        return _bind_names(ir, args, kwargs)
    if not kwargs and _plain_positional(fn, len(args), nparams):
        return tuple(args)
    sig = _signature(fn)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def _bind_ir(ir: IR, args: tuple, kwargs: dict) -> tuple:
    """Bind a call to a bare IR: through `ir.func`'s signature when there is one."""
    if not kwargs and len(args) == len(ir.args) and ir.meta.get("varargs") is None \
            and ir.meta.get("varkw") is None:
        return tuple(args)
    if isinstance(ir.func, types.FunctionType):
        n = ir.nfree
        return tuple(args[:n]) + _bind(ir, ir.func, tuple(args[n:]), kwargs)
    return _bind_names(ir, args, kwargs)


def _bind_names(ir: IR, args: tuple, kwargs: dict) -> tuple:
    names = [a.name for a in ir.args[ir.nfree:]]
    packed = ir.meta.get("varargs")
    if packed is not None:          # `*name`: the extra positionals, as one tuple
        rest = tuple(args[packed:])
        args = tuple(args[:packed]) + (rest,)
        if len(args) < packed + 1:
            raise TypeError(f"{ir.name}() missing required positional argument(s)")
    varkw = ir.meta.get("varkw")      # `**name`: the dict of the other keywords
    if len(args) > (len(names) if varkw is None else varkw):
        raise TypeError(f"{ir.name}() takes {len(names)} positional arguments "
                        f"but {len(args)} were given")
    values = list(args) + [_MISSING] * (len(names) - len(args))
    if varkw is not None:
        values[varkw] = {}
    for k, v in kwargs.items():
        if varkw is not None and (k not in names or names.index(k) == varkw):
            values[varkw][k] = v
            continue
        if k not in names or values[names.index(k)] is not _MISSING:
            raise TypeError(f"{ir.name}() got an unexpected or repeated keyword argument {k!r}")
        values[names.index(k)] = v
    missing = [n for n, v in zip(names, values) if v is _MISSING]
    if missing:
        raise TypeError(f"{ir.name}() missing required argument(s): {', '.join(missing)}")
    return tuple(values)


def _signature(fn: Any) -> inspect.Signature:
    sig = _SIGNATURES.get(fn)
    if sig is None:
        sig = _SIGNATURES[fn] = inspect.signature(fn)
    return sig


def _plain_positional(fn: Any, nargs: int, nparams: int) -> bool:
    """True when `nargs` positional values fill exactly `fn`'s plain parameters."""
    co = fn.__code__
    if co.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or co.co_kwonlyargcount:
        return False
    return co.co_argcount == nargs == nparams


def _cells(f: types.FunctionType) -> tuple:
    if not f.__closure__:
        return ()
    try:
        return tuple(c.cell_contents for c in f.__closure__)
    except ValueError:
        raise NameError(f"{f.__qualname__}: a free variable is referenced before "
                        f"assignment in its enclosing scope") from None


def _closure_target(c: Closure) -> tuple:
    """(IR, function whose signature binds the call) for a Closure."""
    func = c.func
    if isinstance(func, IR):
        ir, func = func, func.func
        if not isinstance(func, types.FunctionType):
            return ir, None
    else:
        ir = _lowered(func)
    if c.defaults is None and c.kwdefaults is None:
        return ir, func
    if c._binder is None:
        c._binder = types.FunctionType(func.__code__, func.__globals__, func.__name__,
                                       c.defaults, func.__closure__)
        c._binder.__kwdefaults__ = c.kwdefaults
    return ir, c._binder


_TEMPLATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def closure_template(code: types.CodeType, globals_: dict) -> types.FunctionType:
    """A function for a nested function's code object, to lower and bind with
    (its cells are empty: the captured values travel in the Closure)."""
    f = _TEMPLATES.get(code)
    if f is None:
        cells = tuple(types.CellType() for _ in code.co_freevars)
        f = _TEMPLATES[code] = types.FunctionType(code, globals_, code.co_name, None, cells)
        f.__qualname__ = code.co_qualname if hasattr(code, "co_qualname") else code.co_name
    return f


# -- which functions are user code --------------------------------------------------

_USER: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _library_dirs() -> tuple:
    paths = sysconfig.get_paths()
    keys = ("stdlib", "platstdlib", "purelib", "platlib")
    dirs = {os.path.realpath(paths[k]) for k in keys if k in paths}
    return tuple(d + os.sep for d in dirs)


_LIBRARY_DIRS = _library_dirs()


def is_user_function(f: Any) -> bool:
    """True for Python functions the interpreter lowers rather than calls: not from
    a library module (numpy, math, the standard library, installed packages, zygopy
    itself), and not the implementation of a registered primitive."""
    if type(f) is not types.FunctionType:
        return False
    known = _USER.get(f)
    if known is None:
        known = _USER[f] = _is_user_code(f)
    return known and id(f) not in _primitive_impls()


def _primitive_impls() -> frozenset:
    """The ids of the functions that implement primitives (cached per table revision)."""
    if _IMPLS[0] != REVISION[0]:
        _IMPLS[:] = [REVISION[0], frozenset(id(p.impl) for p in PRIMITIVES.values())]
    return _IMPLS[1]


_IMPLS: list = [-1, frozenset()]


def _is_user_code(f: types.FunctionType) -> bool:
    if getattr(f, "__zygopy_lowered__", False):  # code a transform made: run its IR
        return True
    top = (getattr(f, "__module__", None) or "").partition(".")[0]
    if top in LIBRARY_MODULES:
        return False
    path = os.path.realpath(f.__code__.co_filename)
    return not path.startswith(_LIBRARY_DIRS)


def _user_ir(f: types.FunctionType) -> Optional[IR]:
    return _LOWER[0](f) if _LOWER[0] is not None and is_user_function(f) else None


def _lowered(f: Any) -> IR:
    if _LOWER[0] is None:
        raise RuntimeError(f"interpret: no lowering to run {f!r} with; it comes with "
                           f"`import lowering` (ssair.interpreter.set_lowering)")
    return _LOWER[0](f)


_LOWER: list = [None, None]


def set_lowering(lower: Callable, call_unpacked: Optional[Callable] = None) -> None:
    """Inject the front end: `lower(f) -> IR` for a Python function (cached by the
    caller; the interpreter keeps no IR of its own), and the helper its `f(*t, **d)`
    calls, whose callee the interpreter runs as it runs any call."""
    _LOWER[0] = lower
    _LOWER[1] = call_unpacked


# -- compilation to flat per-block lists ------------------------------------------

_MISSING = object()
# statement kinds
PRIM1, PRIM2, PRIMN, PRIMKW, CALL, CLOSURE, HANDLER = range(7)
# terminator kinds
GOTO, BRANCH, RETURN, UNWIND, RAISE = range(5)


class _Code:
    """An IR compiled for one run: value-array template, argument slots, blocks."""

    __slots__ = ("ir", "nargs", "template", "arg_slots", "entry")


class _Block:
    """A compiled block: phi moves per predecessor, statement tuples, terminator."""

    __slots__ = ("caught", "id", "phis", "stmts", "term")


def _compile(ir: IR, handlers: dict) -> _Code:
    if not ir.blocks:
        raise ValueError(f"interpret: function {ir.name} has no blocks")
    slots = _Slots(ir)
    blocks = {b.id: _Block() for b in ir.blocks}
    for b in ir.blocks:
        cb = blocks[b.id]
        cb.id = b.id
        cb.phis = _compile_phis(b, slots)
        stmts = b.stmts
        cb.caught = None
        if stmts and stmts[0].op == "caught":   # filled in by the unwinding in `_exec`
            cb.caught, stmts = stmts[0].var.id, stmts[1:]
        cb.stmts = [_compile_stmt(ir, b, s, slots, handlers) for s in stmts]
        cb.term = _compile_term(ir, b, slots, blocks)
    code = _Code()
    code.ir = ir
    code.nargs = len(ir.args)
    code.arg_slots = tuple(a.var.id for a in ir.args)
    code.entry = blocks[ir.blocks[0].id]
    code.template = slots.values
    return code


class _Slots:
    """Assigns value-array indices: `%n` lives at n, each constant after the vars."""

    def __init__(self, ir: IR) -> None:
        top = max((d.var.id for d in ir.definitions()), default=0)
        self.values = [_MISSING] * (max(top, ir.next_id) + 1)

    def of(self, a: Any) -> int:
        if isinstance(a, Var):
            return a.id
        if isinstance(a, Const):
            self.values.append(a.value)
            return len(self.values) - 1
        raise TypeError(f"interpret: not an operand: {a!r}")


def _compile_phis(b, slots: _Slots) -> dict:
    """Predecessor id -> (destination slots, source slots) for a parallel move."""
    moves: dict = {}
    for p in b.phis:
        for pred, v in p.incoming.items():
            moves.setdefault(pred, ([], []))
            moves[pred][0].append(p.var.id)
            moves[pred][1].append(slots.of(v))
    expected = len(b.phis)
    return {k: (tuple(d), tuple(s)) for k, (d, s) in moves.items() if len(d) == expected}


def _compile_stmt(ir: IR, b, s, slots: _Slots, handlers: dict) -> tuple:
    args = tuple(slots.of(a) for a in s.args)
    kw = tuple((k, slots.of(v)) for k, v in s.kwargs.items())
    where = f"%{s.var.id} in block #{b.id} of {ir.name}" + _at(ir, s.line)
    if s.op in handlers:
        if kw:
            raise ValueError(f"interpret: keyword operands on handled op {s.op!r} ({where})")
        return (HANDLER, s.var.id, handlers[s.op], args, kw, s)
    if s.op == "call":
        return (CALL, s.var.id, None, args, kw, s)
    if s.op == "make_closure":
        return (CLOSURE, s.var.id, _closure_func(ir, s), args, kw, s)
    prim = PRIMITIVES.get(s.op)
    if prim is None or prim.impl is None:
        raise ValueError(f"interpret: no implementation for op {s.op!r} ({where})")
    impl = prim.impl
    if kw:
        return (PRIMKW, s.var.id, impl, args, kw, s)
    kind = PRIM1 if len(args) == 1 else PRIM2 if len(args) == 2 else PRIMN
    return (kind, s.var.id, impl, args, kw, s)


def _closure_func(ir: IR, s) -> Any:
    """The inner function of a `make_closure` whose first operand is a code object."""
    first = s.args[0] if s.args else None
    if not (isinstance(first, Const) and isinstance(first.value, types.CodeType)):
        return None
    globals_ = getattr(ir.func, "__globals__", None)
    if globals_ is None:
        raise ValueError(f"interpret: make_closure of a code object in {ir.name}, "
                         f"which has no Python function to take globals from")
    return closure_template(first.value, globals_)


def _compile_term(ir: IR, b, slots: _Slots, blocks: dict) -> tuple:
    t = b.term

    def target(k: int) -> _Block:
        if k not in blocks:
            raise ValueError(f"interpret: block #{b.id} of {ir.name} jumps to missing #{k}")
        return blocks[k]

    if isinstance(t, Goto) and t.unwind is not None:
        return (UNWIND, target(t.target), target(t.unwind))
    if isinstance(t, Goto):
        return (GOTO, target(t.target))
    if isinstance(t, Branch):
        return (BRANCH, target(t.then), target(t.else_), slots.of(t.cond))
    if isinstance(t, Return):
        return (RETURN, slots.of(t.value))
    if isinstance(t, Raise):
        return (RAISE, slots.of(t.value))
    raise ValueError(f"interpret: block #{b.id} of {ir.name} has no terminator")


def _at(ir: IR, line: Optional[int]) -> str:
    if line is None:
        return ""
    return f" at {ir.file or '?'}:{line}"


# -- execution ------------------------------------------------------------------------

def _exec(state: State, code: _Code, args: tuple) -> Any:
    """Run one compiled function on its argument values.

    A `goto #k unwind #h` remembers (#k, this block, #h); an exception raised while
    #k runs continues at #h as if #h had been entered from this block (the
    `try` costs nothing on the path that does not raise)."""
    env = code.template.copy()
    for slot, v in zip(code.arg_slots, args):
        env[slot] = v
    block, prev, guard = code.entry, None, None
    while True:
        try:
            while True:
                if block.phis:
                    _enter(code, block, prev, env)
                for kind, dst, fn, a, kw, stmt in block.stmts:
                    if kind == PRIM2:
                        env[dst] = fn(env[a[0]], env[a[1]])
                    elif kind == PRIM1:
                        env[dst] = fn(env[a[0]])
                    elif kind == CALL:
                        env[dst] = _call(state, env[a[0]], tuple([env[i] for i in a[1:]]),
                                         {k: env[i] for k, i in kw})
                    elif kind == PRIMN:
                        env[dst] = fn(*[env[i] for i in a])
                    else:
                        env[dst] = _special(state, kind, fn, a, kw, stmt, env)
                term = block.term
                if term[0] == GOTO:
                    prev, block = block.id, term[1]
                elif term[0] == BRANCH:
                    prev, block = block.id, (term[1] if env[term[3]] else term[2])
                elif term[0] == RETURN:
                    return env[term[1]]
                elif term[0] == UNWIND:
                    guard = (term[1], block.id, term[2])
                    prev, block = block.id, term[1]
                else:
                    raise env[term[1]]
        except BaseException as e:
            if guard is None or guard[0] is not block or isinstance(e, Refusal):
                raise
            _, prev, block = guard
            guard = None
            env[block.caught] = e


def _enter(code: _Code, block: _Block, prev: Optional[int], env: list) -> None:
    """Evaluate the phis of `block` in parallel from the edge `prev -> block`."""
    moves = block.phis.get(prev)
    if moves is None:
        edge = "function entry" if prev is None else f"block #{prev}"
        raise ValueError(f"interpret: phis of block #{block.id} of {code.ir.name} have no "
                         f"incoming value for {edge}")
    dsts, srcs = moves
    values = [env[s] for s in srcs]
    for d, v in zip(dsts, values):
        env[d] = v


def _special(state: State, kind: int, fn, a: tuple, kw: tuple, stmt, env: list) -> Any:
    values = [env[i] for i in a]
    if kind == HANDLER:
        return fn(state, stmt, values)
    if kind == CLOSURE:
        kwargs = {k: env[i] for k, i in kw}
        return Closure(fn or values[0], tuple(values[1:]), kwargs.get("defaults"),
                       kwargs.get("kwdefaults"))
    return fn(*values, **{k: env[i] for k, i in kw})
