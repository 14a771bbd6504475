"""`adjoint.gradient(f, *args)` and `adjoint.value_and_grad(f, *args)` as one native
call: no `back` object, no tape kept after the call.

For a plain function (no closure cells, no keyword-only parameters, no `*args` or
`**kwargs`) and positional arguments, the call is compiled once per (code object,
argument types) as the primal of a generated function

    def f_gradient(a0, ..., an):  return gradient(f, a0, ..., an)

whose one statement is `gradient`'s registry entry in compiled code
(`jit.pullback.nested_gradient`): f's forward and adjoint run back to back on a tape
in the native frame, and the gradients are built there.  Its wrapper is the JIT's
usual one (`jit.api.compile_typing`): for float/int arguments and float/int arrays
returning numbers, it is a METH_FASTCALL builtin that boxes the result tuple itself
(`jit.runtime.fastcall`).  The last signature compiled for `f` is tried first, by
`adjoint.api` itself, without looking at the arguments (`HOT_GRADIENTS`): the builtin
checks their number and classes and sends anything else to the lookup by types.

Whatever this cannot compile (the JIT refuses f, a closure, keywords, a non-scalar
result, an int beyond int64 at run time) takes `adjoint.api`'s general path, pullback
then `back(1.0)`, with the same results and errors.  So does a float array argument,
whose gradient is an array: pullback's fast path writes it straight into numpy arrays
(`jit.runtime.gradient_entry`), where this wrapper would copy it out of the arena
through ctypes (horner's 1,000 coefficients: 8.8 us against 5.8 us).
"""
from __future__ import annotations

from typing import Any

from lowering.guards import guard_of, on_invalidate
from ssair import IR, Const, Return
from ssair.compile_lock import built_once

from jit.pullback.host_jcalls import CallSiteFallbackWarning
from jit.pullback.backend import BACKEND
from jit.types import FLOAT64, INT64, ArrayT, TupleT, TypingError, is_float, typeof

_TABLE: dict = {}       # (code, with_value, argument types) -> (globals, call, Python
                        # wrapper) or False
_HOT: tuple = ({}, {})  # adjoint.api.HOT_GRADIENTS once registered
_HOT_MAX = 4096
_RUNNERS: dict = {}     # adjoint.api.RUNNERS: the fast path runs while "llvm" is BACKEND
_GENERAL: list = []     # adjoint.api's general path: (f, args, with_value) -> result
on_invalidate(_TABLE.clear)     # (the hot tables are adjoint.api's: it empties them)


def fast_gradient(f: Any, args: tuple, with_value: bool) -> Any:
    """`gradient(f, *args)` (or `value_and_grad`) compiled, or None: the general path.
    (`adjoint.api` first tries `HOT_GRADIENTS`, the call this fills for f.)"""
    return _lookup(f, args, with_value)


def _lookup(f: Any, args: tuple, with_value: bool, native: bool = True) -> Any:
    """The compiled call for these arguments' types (compiled on first use) called, or
    None.  `native=False`: through the Python wrapper (the native builtin sent these
    arguments away: a subclass, a misaligned array)."""
    code = getattr(f, "__code__", None)
    if code is None or _RUNNERS.get("llvm") is not BACKEND or not _eligible(f, args):
        return None
    try:
        argtypes = tuple(typeof(a) for a in args)
    except TypingError:
        return None
    hot = _HOT[with_value]
    if len(hot) >= _HOT_MAX:
        hot.clear()
    if any(_has_float_array(t) for t in argtypes):
        # an array in the gradient: see the module docstring.  f's next call goes to
        # pullback's fast path without looking its arguments up again.
        hot[f] = (code, _pullback_path(f, with_value), False, guard_of(f))
        return None
    key = (code, with_value, argtypes)
    entry = _TABLE.get(key)
    if entry is None:
        entry = built_once(_TABLE, key, _build, f, argtypes, with_value)
    if entry is False:        # not compiled this way: f's next call goes to the general
        hot[f] = (code, _general_path(f, with_value), False, guard_of(f))   # path
        return None
    if entry[0] is not f.__globals__:
        return None
    call = entry[1] if native else entry[2]
    if native and call is not entry[2]:     # a builtin: it checks its arguments itself
        hot[f] = (code, call, True, guard_of(f))
    return call(*(int(a) if t == INT64 else float(a) if t == FLOAT64 else a
                  for a, t in zip(args, argtypes)))


def _general_path(f: Any, with_value: bool) -> Any:
    return lambda *args: _GENERAL[0](f, args, with_value)


def _pullback_path(f: Any, with_value: bool) -> Any:
    """`gradient` through pullback's fast path (`jit.pullback.fast_path`) called directly:
    what the general path does for a float result, without its layers of calls."""
    from jit.pullback.fast_path import fast_pullback, fast_value_and_grad
    general = _general_path(f, with_value)

    def call(*args: Any) -> Any:
        got = fast_value_and_grad(f, args)    # no Back: see jit.pullback.fast_path
        if got is not None:
            return got if with_value else got[1]
        got = fast_pullback(f, args)
        if got is None or type(got[0]) is not float:   # (the general path decides)
            return general(*args)
        g = got[1](1.0)
        return (got[0], g) if with_value else g
    return call


def _has_float_array(t: Any) -> bool:
    if isinstance(t, ArrayT):
        return is_float(t.dtype)
    return isinstance(t, TupleT) and any(_has_float_array(e) for e in t.elems)


def _eligible(f: Any, args: tuple) -> bool:
    """A plain function called with positional arguments.  Its defaults must not be
    used: the compiled call, shared by the functions of one code object, binds the
    first one's (lambdas made in a loop with `k=k` differ in nothing else)."""
    code = f.__code__
    return (type(f).__name__ == "function" and not f.__closure__
            and (code.co_argcount == len(args) or not f.__defaults__
                 and code.co_argcount > len(args))
            and not code.co_kwonlyargcount and not code.co_flags & 0x0C)


def _wrapper_ir(f: Any, nargs: int, with_value: bool) -> IR:
    from adjoint import api
    code = f.__code__
    ir = IR(f"{f.__name__}_{'value_and_grad' if with_value else 'gradient'}",
            file=code.co_filename, firstline=code.co_firstlineno)
    xs = [ir.add_arg(n) for n in code.co_varnames[:nargs]]
    b = ir.add_block()
    target = api.value_and_grad if with_value else api.gradient
    b.term = Return(ir.push(b, "call", Const(target), Const(f), *xs))
    return ir


def _build(f: Any, argtypes: tuple, with_value: bool) -> Any:
    from jit import disk_cache
    from jit.api import compile_typing, load_compiled
    from jit.typing.infer import infer

    general = _general_path(f, with_value)   # a deoptimised call: exact Python semantics

    def reroute(args: tuple) -> Any:      # arguments of other types
        try:
            same = tuple(typeof(a) for a in args) == argtypes
        except TypingError:
            same = False
        got = None if same else _lookup(f, args, with_value)   # (never back to itself)
        return got if got is not None else general(*args)

    def other_classes(*args: Any) -> Any:  # what the native builtin does not take
        got = _lookup(f, args, with_value, native=False)
        return got if got is not None else general(*args)

    key = disk_cache.key_for(f, "value_and_grad" if with_value else "gradient", argtypes)
    compiled = load_compiled(key, general, reroute, other_classes) if key else None
    if compiled is None:
        try:
            t = infer(_wrapper_ir(f, len(argtypes), with_value), argtypes)
            compiled = compile_typing(t, general, reroute, other_classes, cache_key=key)
        except CallSiteFallbackWarning:    # (a filter made it an error: the user's)
            raise
        except Exception:  # noqa: BLE001 - the general path reports (and warns) properly
            return False
    return f.__globals__, compiled.wrapper, compiled.python_wrapper


def register() -> None:
    """Install the fast path in `adjoint.api.FAST_GRADIENTS` (for "llvm" and "auto")."""
    from adjoint import api
    global _RUNNERS, _HOT
    _RUNNERS, _HOT = api.RUNNERS, api.HOT_GRADIENTS
    _GENERAL[:] = [api.general_gradient]
    api.FAST_GRADIENTS["llvm"] = api.FAST_GRADIENTS["auto"] = fast_gradient
