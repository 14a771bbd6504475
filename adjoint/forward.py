"""Forward mode: `jvp`, `jacfwd`, `hvp` and `code_tangent`.

`jvp(f, primals, tangents)` runs f's tangent IR (`adjoint.passes.tangent`): the primal
with, after each statement, its tangent; no tape.  It runs compiled when a backend
(`TANGENT_RUNNERS`, which the JIT fills) compiles it, else in the interpreter; the
user's function is lowered once and its tangent IR is cached per (function, which
arguments have tangents, the arguments' scalar types).

A user function called by f gets a tangent function of its own: a Python function
object (`<name>_tangent`, never called by Python) whose IR, registered with the
lowering, is the callee's tangent IR; the interpreter and the JIT call it as they
call any user function, so recursion and loops in callees need nothing else.
"""
from __future__ import annotations

import functools

import types
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

import numpy as np

from ssair import IR, Const, VerifyError, verify
from ssair.compile_lock import COMPILE_LOCK, compiling
from ssair.interpreter import interpret
from ssair.primitives import INPLACE
from lowering import guards
from lowering.api import register_ir, stub_function

from .api import _load_jit
from .partials import partials_as_closures
from .passes.inplace import arg_types, canonical_inplace
from .passes.merge_returns import merge_returns
from .passes.tangent import bind_parameters, tangent, zero_tangent
from .rule_table import FORWARD_REFUSAL, IN_FORWARD_MODE
from .options import transform_of
from .pytrees import copy_record, is_namedtuple
from .structure import conform, has_complex, has_objects, user_tangent
from .transform import VERIFY, cells, is_differentiable, lower_function
from . import rules_tangent, sequence_tangents  # noqa: F401  (fill the rule table's jvp entries)
from .transforms import Transformed, positional_params

# backend name -> runner(ir, args) -> result, or None where it does not compile ir
TANGENT_RUNNERS: dict = {}
_IRS: dict = {}          # (code, IR, masks, types, ...) -> (IR, its tangent IR)
_FUNCTIONS: dict = {}    # (function, mask, types) -> its tangent function
_MADE: list = []         # while a build runs: (cache, key) of each entry it added


@contextmanager
def _transaction() -> Iterator[None]:
    """Run a tangent build (of an IR or a tangent function) as one transaction: when
    the outermost build raises, every entry that it and the builds inside it added to
    `_FUNCTIONS` and `_IRS` is removed.  A tangent function is cached before its IR
    is built (a recursive callee calls it), and a callee's tangent IR built meanwhile
    calls it: neither may outlive a failed build, or later calls would run a stub
    without IR (a silent wrong answer).  Builds hold the compile lock, and so do the
    lookups of the caches, so another thread never sees an entry before it is complete."""
    with COMPILE_LOCK:
        outer = not _MADE
        if outer:
            _MADE.append(None)
        try:
            yield
        except BaseException:
            if outer:
                for cache, key in _MADE[1:]:
                    cache.pop(key, None)
            raise
        finally:
            if outer:
                _MADE.clear()


def _cache(cache: dict, key: Any, value: Any) -> None:
    """`cache[key] = value`, undone if the build under way fails (`_transaction`)."""
    cache[key] = value
    if _MADE:
        _MADE.append((cache, key))


def tangent_ir(f: Any, mask: tuple, types_: Optional[tuple] = None,
               captured: Optional[tuple] = None, captured_types: tuple = (),
               only: bool = False) -> IR:
    """The tangent IR of user function `f` (cached); `mask[k]`: parameter k has a
    tangent.  `captured`: f is the inner function of a closure, whose captured values
    (with tangents where `captured[k]`) become leading arguments (`nfree` 0).  `only`:
    the IR returns the tangent alone."""
    ir = lower_function(f)
    full = (tuple(captured) if captured is not None else (False,) * ir.nfree) + tuple(mask)
    ftypes = (tuple(captured_types) if captured is not None else (None,) * ir.nfree) + \
        tuple(types_ or (None,) * len(mask))
    return _tangent_of(ir, full, ftypes, only, explicit_free=captured is not None)


@compiling
def _tangent_of(ir: IR, full: tuple, ftypes: tuple, only: bool = False,
                explicit_free: bool = False) -> IR:
    """The tangent pass of `ir` (its arguments' tangents `full`, their scalar types
    `ftypes`), prepared, verified and cached per IR; `explicit_free`: the captured
    values become ordinary leading arguments."""
    key = (ir.meta.get("code"), id(ir), full, ftypes, only, explicit_free)
    with _transaction():
        got = _IRS.get(key)
        if got is not None and got[0] is ir:
            return got[1]
        out = _build_tangent(ir, full, ftypes, only, explicit_free)
        _cache(_IRS, key, (ir, out))
    return out


def _build_tangent(ir: IR, full: tuple, ftypes: tuple, only: bool,
                   explicit_free: bool) -> IR:
    """The tangent pass of `ir`, prepared and verified (see `_tangent_of`)."""
    prepared = canonical_inplace(merge_returns(partials_as_closures(ir)), ftypes)
    out = tangent(prepared, full, ftypes, tangent_function, only)
    if explicit_free:
        out.nfree = 0
    out.meta["writes"] = _writes(out)
    if VERIFY:
        try:
            verify(out)
        except VerifyError as e:
            raise RuntimeError(f"jvp: the tangent pass produced invalid IR for {ir.name}:"
                               f"\n{e}\n{out}") from None
    return out


@compiling
def tangent_function(f: Any, mask: tuple, types_: tuple, captured: Optional[tuple] = None,
                     captured_types: tuple = (), only: bool = False) -> Any:
    """A function object whose IR is f's tangent IR (see the module docstring)."""
    key = (f, f.__code__, tuple(mask), tuple(types_), captured, tuple(captured_types), only)
    with _transaction():
        fn = _FUNCTIONS.get(key)
        if fn is None:
            fn = _new_tangent_function(f, key)
    return fn


def _new_tangent_function(f: Any, key: tuple) -> Any:
    """`tangent_function` for a key not cached (under `_transaction`)."""
    _, _, mask, types_, captured, captured_types, only = key
    if f.__closure__ and captured is None:
        raise TypeError(f"jvp: {f.__qualname__} reads variables of an enclosing function; "
                        "forward mode calls such a function only at the top level or "
                        "where it is made")
    lowered = lower_function(f)     # (its arguments: parameters, a packed *args, ...)
    n = len(lowered.args) - (0 if captured is not None else lowered.nfree)
    ntan = sum(bool(m) for m in mask) + sum(bool(m) for m in (captured or ()))
    fn = stub_function(f"{f.__name__}_tangent", n + ntan, f.__globals__, f.__code__.co_filename)
    fn.__qualname__ = f"{f.__qualname__}_tangent"
    fn.__module__ = f.__module__
    _cache(_FUNCTIONS, key, fn)      # (before its IR: a recursive f calls fn)
    register_ir(fn, tangent_ir(f, mask, types_, captured, captured_types, only))
    return fn


def jvp_of_value(f: Any, args: tuple, ts: tuple) -> tuple:
    """`(f(*args), its tangent)` for a function value met at run time: a Python
    function, a Closure the interpreter made (its captured values held constant: the
    transform refuses a closure over varied values that escapes), or a library
    function with a derivative rule."""
    from ssair.interpreter import Closure, _closure_target
    mask = tuple(t is not None for t in ts)
    tangents = tuple(t for t in ts if t is not None)
    if isinstance(f, Closure):
        ir, _ = _closure_target(f)
        missing = len(ir.args) - ir.nfree - len(args)
        given = getattr(f.func, "__defaults__", None) or ()
        if 0 < missing <= len(given) and f.defaults is None and not f.kwdefaults:
            args = tuple(args) + tuple(given[len(given) - missing:])   # constants
            mask += (False,) * missing
        elif missing:
            raise TypeError(f"jvp: {_closure_name(f)} is called without some of its "
                            "arguments, whose defaults were computed when it was made: "
                            "forward mode does not carry their tangents yet; pass those "
                            "arguments explicitly")
        out = _tangent_of(ir, (False,) * ir.nfree + mask, (None,) * len(ir.args))
        return interpret(out, *f.values, *args, *tangents)
    named: dict = {}
    if type(f) is functools.partial:    # its bound values held constant
        f, args, ts, named = _unwrap_partial(f, tuple(args), tuple(ts))
        tangents = tuple(t for t in ts if t is not None)
    if type(f) is types.FunctionType:
        args, ts = bind_parameters(f, list(args), named, list(ts), lambda v: v, _pack_values)
        mask = tuple(t is not None for t in ts)
        return interpret(tangent_ir(f, mask, arg_types(args)), *cells(f), *args, *tangents)
    receiver = _receiver_call(f)
    if receiver is not None:       # a bound method, an object called: `self` held constant
        return jvp_of_value(receiver[0], (receiver[1],) + tuple(args), (None,) + tuple(ts))
    from .rules import lookup_callee
    rule = lookup_callee(f)
    if rule is None or not rule.differentiable:
        if any(mask):
            raise TypeError(f"jvp: no derivative rule for {getattr(f, '__qualname__', f)!r} "
                            "in forward mode")
        y = f(*args)
        return y, zero_tangent(y)
    tf = library_tangent(f, len(args), mask, arg_types(args))
    return interpret(lower_function(tf), *args, *tangents)


def _receiver_call(f: Any) -> Any:
    """(function, receiver) of a bound method of a Python function or of an object
    whose class defines `__call__` in Python, else None."""
    if isinstance(f, types.MethodType) and type(f.__func__) is types.FunctionType:
        return f.__func__, f.__self__
    call = getattr(type(f), "__call__", None)
    if type(call) is types.FunctionType and not isinstance(f, type):
        return call, f
    return None


def _closure_name(f: Any) -> str:
    """`name (file:line)` of the nested function a Closure runs."""
    func = getattr(f.func, "func", None) if isinstance(f.func, IR) else f.func
    code = getattr(func, "__code__", None)
    name = getattr(func, "__qualname__", None) or getattr(f.func, "name", "a nested function")
    return f"{name} ({code.co_filename}:{code.co_firstlineno})" if code else name


@compiling
def library_tangent(f: Any, nargs: int, mask: tuple, types_: tuple) -> Any:
    """A tangent function (see `tangent_function`) of `lambda *a: f(*a)` for a library
    function `f` with a derivative rule, called with `nargs` arguments."""
    from ssair import Return
    key = ("library", f, nargs, tuple(mask), tuple(types_))
    with _transaction():
        fn = _FUNCTIONS.get(key)
        if fn is not None:
            return fn
        ir = IR(f"call_{getattr(f, '__name__', 'f')}")
        xs = [ir.add_arg(f"a{k}") for k in range(nargs)]
        b = ir.add_block()
        b.term = Return(ir.push(b, "call", f, *xs))
        out = _tangent_of(ir, tuple(mask), tuple(types_))
        fn = stub_function(f"{ir.name}_tangent", nargs + sum(bool(m) for m in mask),
                           globals(), "<adjoint.forward>")
        register_ir(fn, out)
        _cache(_FUNCTIONS, key, fn)
    return fn


def _copy_arrays(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, (tuple, list)):
        out = [_copy_arrays(v) for v in x]
        return type(x)._make(out) if is_namedtuple(x) else \
            tuple(out) if isinstance(x, tuple) else out
    if isinstance(x, dict):
        return {k: _copy_arrays(v) for k, v in x.items()}
    return copy_record(x, _copy_arrays) if type(x) is not float else x


def jvp(f: Callable, primals: tuple, tangents: tuple, backend: str = "auto") -> tuple:
    """`(f(*primals), J t)`: the Jacobian-vector product of `f` at `primals` in the
    direction `tangents` (one per primal, of its structure; None is zero; an int's is
    ignored), by forward mode: no tape, in the primal's own loop iterations."""
    primals, tangents = tuple(primals), tuple(tangents)
    token = IN_FORWARD_MODE.set(True)
    try:
        return _jvp(f, primals, tangents, backend)
    finally:
        IN_FORWARD_MODE.reset(token)


def _jvp(f: Callable, primals: tuple, tangents: tuple, backend: str) -> tuple:
    if has_complex(primals) or has_complex(tangents):
        raise TypeError(f"jvp: {FORWARD_REFUSAL} (reverse mode does: gradient, pullback)")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    if backend not in ("auto", "interp", "llvm"):
        raise ValueError(f"jvp: unknown backend {backend!r} (one of auto, interp, llvm)")
    t = transform_of(f)
    if isinstance(t, Transformed) and not t.has_aux and t.checkpoint is None and \
            positional_params(t.fn) is not None:
        f = t.target        # its stand-in: a `gradient` call, whose tangent is H dx
    elif isinstance(t, Transformed):
        raise TypeError(f"jvp: {getattr(f, '__qualname__', f)} is a reverse-mode "
                        f"transform, and forward mode over reverse mode is not supported; "
                        f"adjoint.hvp(f, x, v) gives a Hessian-vector product, "
                        f"adjoint.hessian(f, x) the Hessian")
    f, primals, tangents, bound = _unwrap_partial(f, primals, tangents)
    if isinstance(f, types.MethodType) and type(f.__func__) is types.FunctionType:
        # a bound method: its function, with the object a constant first primal
        f, primals, tangents = f.__func__, (f.__self__,) + primals, (None,) + tangents
        held = 1
    else:
        held = 0
    if bound and type(f) is not types.FunctionType:
        raise TypeError(f"jvp: a functools.partial binding keywords of {f!r} (a Python "
                        f"function is needed)")
    if type(f) is types.FunctionType:       # defaults filled in
        primals, tangents = map(tuple, bind_parameters(f, list(primals), bound,
                                                       list(tangents), lambda v: v,
                                                       _pack_values))
    guards.check(f, primals)                 # a global rebound: compile again
    sig = _signature(primals)
    hot = _HOT.get((f, sig, held)) if sig is not None else None
    if hot is not None and hot[0] is getattr(f, "__code__", None):
        mask, ir = hot[1], hot[2]
    else:
        mask = tuple(k >= held and is_differentiable(x) for k, x in enumerate(primals))
        ir = tangent_ir(f, mask, arg_types(primals))
        if sig is not None:
            if len(_HOT) >= 4096:
                _HOT.clear()
            _HOT[(f, sig, held)] = (getattr(f, "__code__", None), mask, ir)
    ts = tuple(conform(x, t, f"jvp: tangent {k}", zero_tangent) for k, (x, t, on)
               in enumerate(zip(primals, tangents, mask)) if on)
    if ir.meta["writes"]:        # the caller's arrays stay as they are
        primals, ts = _copy_arrays(primals), _copy_arrays(ts)
    args = tuple(cells(f)) + primals + ts
    if backend != "interp":
        _load_jit()
        runner = TANGENT_RUNNERS.get("llvm")
        if runner is None and backend == "llvm":
            raise NotImplementedError("jvp: backend 'llvm' is not available")
        if runner is not None:
            got = runner(ir, args, strict=backend == "llvm")
            if got is not None:
                return _numbers(got)
    return _numbers(interpret(ir, *args))


def _unwrap_partial(f: Callable, primals: tuple, tangents: tuple) -> tuple:
    """(function, primals, tangents, keywords) of a call of `f`, a `functools.partial`
    maybe nested: the bound arguments lead the primals with no tangent (held
    constant, as `pullback` holds them) and the bound keywords are returned."""
    named: dict = {}
    while type(f) is functools.partial:
        primals = tuple(f.args) + primals
        tangents = (None,) * len(f.args) + tangents
        named = {**f.keywords, **named}
        f = f.func
    return f, primals, tangents, named


def _numbers(out: tuple) -> tuple:
    """A numpy scalar tangent of a float result as a float; an object's tangent in its
    gradient's form (`user_tangent`)."""
    y, t = out
    if isinstance(y, float) and isinstance(t, np.floating):
        return y, float(t)
    if has_objects(y):
        return y, user_tangent(t, y)
    return out


_HOT: dict = {}   # (f, _signature of the primals) -> (f's code, mask, tangent IR)


def _drop_tangents() -> None:
    for table in (_IRS, _FUNCTIONS, _HOT):
        table.clear()


guards.on_invalidate(_drop_tangents)


def _signature(primals: tuple) -> Optional[tuple]:
    """What the tangent IR of a call depends on, for numbers and arrays (None for
    anything else: the full lookup)."""
    out = []
    for x in primals:
        c = type(x)
        if c is float or c is int or c is bool:
            out.append(c)
        elif c is np.ndarray:
            out.append((x.dtype.str, x.ndim))
        else:
            return None
    return tuple(out)


def _pack_values(kind: str, values: list, tangents: list, keys: Optional[list]) -> tuple:
    """Run-time values for a `*args` (`**kwargs`) parameter, and their tangent."""
    ts = [zero_tangent(v) if t is None else t for v, t in zip(values, tangents)]
    if keys is not None:
        return dict(zip(keys, values)), dict(zip(keys, ts))
    return tuple(values), tuple(ts)




def _writes(ir: IR) -> bool:
    """May running `ir` write into an array or list it is given (its own, a tangent's)?"""
    return any(s.op in INPLACE or s.op in ("setitem", "list_append", "call", "make_closure")
               and not _pure_call(s) for b in ir.blocks for s in b.stmts)


def _pure_call(s: Any) -> bool:
    """A call of a library function with a rule, or of a forward-mode rule, without
    `out=`: it writes into none of its operands."""
    if s.op != "call" or "out" in s.kwargs or not isinstance(s.args[0], Const):
        return False
    from .rule_table import TangentHelper
    from .rules import lookup_callee
    f = s.args[0].value
    if isinstance(f, TangentHelper):
        return f is not rules_tangent.j_assign
    return lookup_callee(f) is not None


def jacfwd(f: Callable, *args: Any, argnums: Any = None, backend: str = "auto") -> tuple:
    """The Jacobian of `f` at `args` column by column, one jvp per entry of the inputs:
    one array per positional argument of shape `shape(y) + shape(arg)`, as `jacobian`
    (reverse mode, row by row) returns it; None for an int and for an argument left
    out of `argnums` (an int or a tuple of positions, JAX's name; all by default).
    Cheaper than `jacobian` when the inputs are fewer than the outputs.  An argument
    holding objects (a dataclass, a named tuple, a user object) gets, as in JAX, its
    gradient's structure with a block of shape `shape(y) + shape(leaf)` at each leaf."""
    wanted = range(len(args)) if argnums is None else \
        (argnums,) if isinstance(argnums, int) else tuple(argnums)
    out = []
    y = None
    for k, x in enumerate(args):
        if k not in wanted or not is_differentiable(x):
            out.append(None)
            continue
        if has_objects(x):
            out.append(_object_jacobian(f, args, k, backend))
            continue
        xarr = np.asarray(x, dtype=float)
        cols = []
        for j in range(xarr.size):
            e = np.zeros(xarr.shape)
            e.reshape(-1)[j] = 1.0
            ts = [None] * len(args)
            ts[k] = float(e) if xarr.ndim == 0 and not isinstance(x, np.ndarray) else e
            y, dy = jvp(f, args, ts, backend=backend)
            cols.append(np.asarray(dy, dtype=float))
        if y is None:
            y, _ = jvp(f, args, [None] * len(args), backend=backend)
        ys = np.shape(y)
        jac = np.stack(cols, axis=-1).reshape(ys + xarr.shape) if cols else \
            np.zeros(ys + xarr.shape)
        out.append(float(jac) if jac.ndim == 0 else jac)
    return tuple(out)


def _object_jacobian(f: Callable, args: tuple, k: int, backend: str) -> Any:
    """The Jacobian of `f` (a number or an array) in `args[k]`, which holds objects:
    as JAX gives it for a pytree, the argument's structure (its gradient's form: the
    same dataclass, named tuple, a SimpleNamespace) holding at each differentiable leaf
    the block of shape `shape(y) + shape(leaf)`, one jvp per entry of the leaf."""
    x = args[k]
    template = conform(x, None, "jacfwd",        # the leaves, as the IR holds them
                       lambda v: zero_tangent(v) if is_differentiable(v) else None)

    def column(path: tuple, leaf: Any, j: int) -> Any:
        unit = np.zeros(np.shape(leaf))
        unit.reshape(-1)[j] = 1.0
        e = _replace_leaf(template, path, float(unit) if unit.ndim == 0 and
                          not isinstance(leaf, np.ndarray) else unit)
        ts = [None] * len(args)
        ts[k] = user_tangent(e, x)
        y, dy = jvp(f, args, ts, backend=backend)
        if not isinstance(y, (float, int, np.ndarray, np.number)):
            raise TypeError(f"jacfwd: the Jacobian in an object argument is given for a "
                            f"function returning a number or an array, not a "
                            f"{type(y).__name__}")
        return np.asarray(dy, dtype=float), np.shape(y)

    def block(path: tuple, leaf: Any) -> Any:
        cols = [column(path, leaf, j) for j in range(np.size(leaf))]
        ys = cols[0][1] if cols else ()
        jac = np.stack([c for c, _ in cols], axis=-1).reshape(ys + np.shape(leaf)) \
            if cols else np.zeros(np.shape(leaf))
        return float(jac) if jac.ndim == 0 else jac
    blocks = _map_leaves(template, block, ())
    return user_tangent(blocks, x)


def _map_leaves(t: Any, fn: Callable, path: tuple) -> Any:
    """Tangent structure `t` with each number or array leaf replaced by `fn(path, leaf)`."""
    if isinstance(t, (tuple, list)):
        out = [_map_leaves(v, fn, path + (i,)) for i, v in enumerate(t)]
        return tuple(out) if isinstance(t, tuple) else out
    if isinstance(t, dict):
        return {key: _map_leaves(v, fn, path + (key,)) for key, v in t.items()}
    return None if t is None else fn(path, t)


def _replace_leaf(t: Any, path: tuple, value: Any) -> Any:
    """Tangent structure `t` with the leaf at `path` replaced by `value`, the others
    left None (zero)."""
    if not path:
        return value
    if isinstance(t, (tuple, list)):
        out = [_replace_leaf(v, path[1:], value) if i == path[0] else None
               for i, v in enumerate(t)]
        return tuple(out) if isinstance(t, tuple) else out
    return {key: _replace_leaf(v, path[1:], value) if key == path[0] else None
            for key, v in t.items()}


def hvp(f: Callable, x: Any, v: Any, *args: Any, backend: str = "auto") -> Any:
    """The Hessian of scalar `f(x, *args)` in x times `v` (args held constant): reverse
    mode over forward mode, the gradient in x of the directional derivative
    `<grad f(x), v>`, which f's tangent IR (returning the tangent alone) computes
    (exact; no Hessian is formed)."""
    from .api import gradient
    cells = tuple(c.cell_contents for c in getattr(f, "__closure__", None) or ())
    if cells and type(f) is not types.FunctionType:
        raise TypeError(f"hvp: {f!r} is not a Python function")
    mask, types_ = (True,) + (False,) * len(args), arg_types((x,) + tuple(args))
    # (a closure's captured values lead the tangent function's arguments, held constant)
    tf = tangent_function(f, mask, types_, captured=(False,) * len(cells),
                          captured_types=arg_types(cells), only=True) if cells else \
        tangent_function(f, mask, types_, only=True)
    v = conform(x, v, "hvp: v", zero_tangent)     # (an object's: as the IR holds it)
    if has_complex((x, v, args)):
        raise TypeError(f"hvp: {FORWARD_REFUSAL}")
    token = IN_FORWARD_MODE.set(True)     # (a complex value met inside: refused)
    try:
        return gradient(tf, *cells, x, *args, v, backend=backend)[len(cells)]
    finally:
        IN_FORWARD_MODE.reset(token)


def hessian(f: Callable, x: Any, backend: str = "auto") -> Any:
    """The matrix of second derivatives of scalar `f` at `x` (of shape `x.shape * 2`).
    For a float or a float array `x` and a Python function (a closure too), its
    columns `H e_j` are Hessian-vector products (`hvp`: the gradient of f's
    directional derivative, compiled as any gradient); under `backend="auto"` a
    function forward mode refuses, and any other `f` or `x`, runs reverse over reverse
    in the interpreter (`backend="llvm"` raises there instead)."""
    by_columns = type(f) is types.FunctionType and (
        isinstance(x, (float, np.floating)) or
        isinstance(x, np.ndarray) and x.dtype.kind == "f" and x.size > 0)
    if by_columns:
        try:
            if not isinstance(x, np.ndarray):
                return hvp(f, float(x), 1.0, backend=backend)
            cols = [hvp(f, x, np.reshape(e, x.shape), backend=backend)
                    for e in np.eye(x.size)]
            return np.reshape(np.stack(cols, axis=-1), x.shape + x.shape)
        except TypeError:
            if backend != "auto":
                raise
    elif backend == "llvm":
        raise TypeError(f"hessian({getattr(f, '__qualname__', f)}, backend='llvm'): "
                        f"compiled for a Python function and a float or float array x; "
                        f"this one runs in the interpreter with "
                        f"backend='interp' or the default 'auto'")

    from .api import gradient, jacobian

    def grad_f(x):
        return gradient(f, x)[0]
    # nested reverse mode runs in the interpreter (adjoint.nested): no JIT attempt
    return jacobian(grad_f, x, backend="interp" if backend == "auto" else backend)[0]


class CodeTangent:
    """The tangent IR of a function, shown as its listing (like `code_adjoint`)."""

    def __init__(self, ir: IR):
        self.ir = ir

    def __str__(self) -> str:
        return str(self.ir)

    __repr__ = __str__


def code_tangent(f: Callable, *args: Any) -> CodeTangent:
    """The IR `jvp(f, args, ...)` runs: f's statements, each followed by its tangent."""
    mask = tuple(is_differentiable(x) for x in args)
    return CodeTangent(tangent_ir(f, mask, arg_types(args)))


rules_tangent.VALUE_JVP[0] = jvp_of_value
hessian.__zygopy_explain__ = lambda *operands: "a nested hessian() call"   # (the JIT's
# refusal tells a call this way: jit.typing.refusals.internal_call)
