"""Compiled forward mode: `adjoint.forward.jvp`'s tangent IR compiled as a function.

The tangent IR is ordinary IR (the primal's statements, each followed by the
statements of its tangent, calls of plain-Python tangent rules and of other functions'
tangent functions), so it is typed and compiled like any function: once per (tangent
IR, argument types).  What the JIT refuses runs in the interpreter under
`backend="auto"` and raises under `backend="llvm"`.
"""
from __future__ import annotations

import inspect
import types as pytypes
import warnings
from typing import Any

from lowering.guards import on_invalidate
from adjoint.passes.tangent import HELPERS
from adjoint.rule_table import TangentHelper
from ssair import Const
from ssair.compile_lock import built_once
from jit.pullback.host_jcalls import CallSiteFallbackWarning
from jit.library.records import class_call
from jit.library.registry import REGISTRY
from jit.pullback.backend import JitFallbackWarning
from jit.runtime.host_pullbacks import ResultTypeNeeded, learning, observing
from ssair.interpreter import interpret
from jit.library.python_impls import impl_call
from jit.typing.infer import (Call, call_argument_type, is_user_function, lower_function,
                              user_call)
from jit.codegen.function import codegen, zero_of
from jit.pullback.array_values import zeros_like
from jit.pullback.cotangents import zero_type
from jit.typing.infer import rule
from jit.types import (BOOL, FLOAT64, INT64, NONE, ArrayT, ClosureT, FunctionT, RecordT, TupleT, Type,
                       TypingError, typeof)

_TABLE: dict = {}     # (tangent IR, argument types) -> compiled wrapper, or the refusal
_HOT: dict = {}       # tangent IR -> the wrapper compiled last for it (it checks the
                      # classes of its arguments and sends others to `_typed`)
_HOT_MAX = 4096
on_invalidate(_TABLE.clear)
on_invalidate(_HOT.clear)
_WARNED: set = set()  # the reasons already given in a JitFallbackWarning


def run(ir: Any, args: tuple, strict: bool = False) -> Any:
    """`(y, dy)` from the compiled tangent IR, or None where the JIT refuses it (the
    refusal raised when `strict`)."""
    hot = _HOT.get(ir)
    if hot is not None:
        return hot(*args)
    return _typed(ir, args, strict)


def _typed(ir: Any, args: tuple, strict: bool) -> Any:
    try:
        argtypes = tuple(typeof(a) for a in args)
    except TypingError:
        if strict:
            raise
        return None
    key = (ir, argtypes)
    entry = _TABLE.get(key)
    if entry is None:
        entry = built_once(_TABLE, key, _build, ir, argtypes)
    if isinstance(entry, ResultTypeNeeded):     # learned from this run: not kept
        _TABLE.pop(key, None)
        with observing(entry.functions):
            return interpret(ir, *args)
    if isinstance(entry, Exception):
        if strict:
            raise entry
        why = str(entry).splitlines()[0] if str(entry) else type(entry).__name__
        if why not in _WARNED:
            _WARNED.add(why)
            warnings.warn(f"zygopy: jvp runs in the interpreter, the JIT cannot compile "
                          f"it: {why}", JitFallbackWarning, stacklevel=4)
        return None
    if len(_HOT) >= _HOT_MAX:
        _HOT.clear()
    if not any(map(_holds_function, argtypes)):
        _HOT[ir] = entry      # (its wrapper checks classes: all functions share one)
    return entry(*args)


def _holds_function(t: Type) -> bool:
    """A function or closure value, whose compiled code is that function's only."""
    if isinstance(t, (FunctionT, ClosureT)):
        return True
    return isinstance(t, TupleT) and any(map(_holds_function, t.elems))


def _build(ir: Any, argtypes: tuple) -> Any:
    from jit.api import compile_typing
    from jit.typing.infer import infer
    from ssair.interpreter import interpret

    def general(*args: Any) -> Any:       # what the native code hands back (a big int)
        return interpret(ir, *args)

    def reroute(args: tuple) -> Any:      # arguments of other types (their own compile)
        got = _typed(ir, args, False)
        return got if got is not None else interpret(ir, *args)
    try:
        with learning():
            return compile_typing(infer(ir, argtypes), general, reroute).wrapper
    except CallSiteFallbackWarning:    # (a filter made it an error: the user's)
        raise
    except Exception as e:  # noqa: BLE001 - kept, raised under backend="llvm"
        return e


def register() -> None:
    """Make `adjoint.forward.jvp` run compiled tangent IR (backends "llvm", "auto")."""
    from adjoint import forward
    forward.TANGENT_RUNNERS["llvm"] = run


# -- adjoint.rule_table.TangentHelper: a forward-mode rule's plain-Python function,
# compiled as user code (no host-call fallback: a rule the JIT cannot compile sends the
# whole tangent function to the interpreter under backend="auto").

def _t_helper(ctx: Any, s: Any, ts: list) -> Any:
    helper = s.args[0].value
    if helper is HELPERS.get("call_value"):
        return _t_call_value(ctx, s, ts, helper)
    if helper is HELPERS.get("call_method"):
        return _t_call_method(ctx, s, ts, helper)
    if helper.interpreted:
        ctx.fail(helper.interpreted)
    return user_call(ctx, s, helper.fn, helper.options)


def _t_call_value(ctx: Any, s: Any, ts: list, helper: Any) -> Any:
    """`call(@j_call_value, f, n, args..., tangents...)`: the JIT knows the function
    value f from its type, so this is a call of f's tangent function, typed like any
    user call: a closure's captured values lead (taken from the closure value), a
    Python function's cells are passed as constants, a library function gets a
    one-call tangent function."""
    from adjoint.forward import library_tangent, tangent_function
    ft, n = ts[1], s.args[2].value
    args, tans = list(s.args[3:3 + n]), list(s.args[3 + n:])
    mask = tuple(ctx.type_of(t) != NONE for t in tans)
    names = tuple(_type_name(ctx.type_of(a)) for a in args)
    operands = args + [t for t, m in zip(tans, mask) if m]
    f = getattr(ft, "func", None)
    try:
        if isinstance(ft, ClosureT) and isinstance(f, pytypes.FunctionType):
            captured = tuple(ft.captured)
            tf = tangent_function(f, mask, names, (False,) * len(captured),
                                  tuple(_type_name(t) for t in captured))
            target = ctx.engine.infer(lower_function(tf), captured + tuple(
                call_argument_type(ctx, a) for a in operands))
            ctx.typing.calls[s.var] = Call(target, [s.args[1]] * len(captured) + operands, tf)
            ctx.typing.writes |= target.writes
            return target.ret
        call = class_call(ft)
        if call is not None:        # `layer(x)`: `__call__` with the object held constant
            tf = tangent_function(call, (False,) + mask, (None,) + names)
            return impl_call(ctx, s, tf, [s.args[1]] + operands)
        if isinstance(ft, FunctionT) and is_user_function(f):
            cells = [Const(c.cell_contents) for c in f.__closure__ or ()]
            tf = tangent_function(f, mask, names, (False,) * len(cells) if cells else None,
                                  (None,) * len(cells))
            return impl_call(ctx, s, tf, cells + operands)
        if isinstance(ft, FunctionT) and f is not None:
            return impl_call(ctx, s, library_tangent(f, n, mask, names), operands)
    except TypeError as e:
        ctx.fail(str(e))
    ctx.fail(f"{helper.interpreted} (here {ft})")


def _t_call_method(ctx: Any, s: Any, ts: list, helper: Any) -> Any:
    """`call(@j_call_method, obj, name, where, n, args..., tobj, targs...)` for an
    object (`RecordT`) whose class defines `name` as a Python function: a call of that
    function's tangent function, `obj` (with its tangent) its first argument."""
    from adjoint.forward import tangent_function
    objt, name, n = ts[1], s.args[2].value, s.args[4].value
    fn = inspect.getattr_static(objt.cls, name, None) if isinstance(objt, RecordT) else None
    if type(fn) is not pytypes.FunctionType or objt.index(name) is not None:
        ctx.fail(f"{helper.interpreted} (here {objt}.{name})")
    args, tans = [s.args[1]] + list(s.args[5:5 + n]), list(s.args[5 + n:])
    mask = tuple(ctx.type_of(t) != NONE for t in tans)
    names = tuple(_type_name(ctx.type_of(a)) for a in args)
    try:
        tf = tangent_function(fn, mask, names)
    except TypeError as e:
        ctx.fail(str(e))
    return impl_call(ctx, s, tf, args + [t for t, m in zip(tans, mask) if m])


def _type_name(t: Any) -> Any:
    """The scalar analysis' name of a number type (None for the others)."""
    return {FLOAT64: "float64", INT64: "int64", BOOL: "bool"}.get(t)


def _cg_helper(fc: Any, s: Any, ts: list) -> Any:
    call = fc.typing.calls[s.var]
    lead = []
    ft = next((t for t in ts[:2] if isinstance(t, ClosureT)), None)
    if s.args[0].value is HELPERS.get("call_value") and ft is not None:
        clo = fc.get(s.args[1], ft)             # a closure's captured values lead
        lead = [fc.b.extract_value(clo, i) for i in range(len(ft.captured))]
    return fc.call_user(call.target, call.operands[len(lead):], lead)


# -- `zero_tangent(x)` (adjoint.passes.tangent): forward mode's zero of a value whose
# kind its transform does not know: a float zero for any number (an int's too).

def tangent_zero_type(t: Type) -> Type:
    """The type of `zero_tangent(x)` for x of type `t`: float64 for a number, a float
    array for an array, the same by entry for a tuple, else the cotangent zero's."""
    if t in (FLOAT64, INT64, BOOL):
        return FLOAT64
    if isinstance(t, TupleT):
        return TupleT(tuple(tangent_zero_type(e) for e in t.elems))
    if isinstance(t, ArrayT):
        return ArrayT(FLOAT64, t.ndim)
    return zero_type(t)


@rule("zero_tangent")
def _t_zero_tangent(ctx: Any, s: Any, ts: list) -> Type:
    try:
        return tangent_zero_type(ts[0])
    except TypeError as e:
        ctx.fail(str(e))


@codegen("zero_tangent")
def _cg_zero_tangent(fc: Any, s: Any, ts: list) -> Any:
    if isinstance(s.type, ArrayT):
        return zeros_like(fc, fc.get(s.args[0]), s.type)
    if isinstance(s.type, TupleT) and any(isinstance(e, ArrayT) for e in s.type.elems):
        raise TypingError(f"jit: a zero tangent of {s.type} (arrays in tuples) is not "
                          "compiled")
    return zero_of(s.type)


_HELPER = REGISTRY.entry(TangentHelper, family="derivatives", name="forward-mode rule object",
                         by_class=True)
REGISTRY.add(_HELPER, "any forward-mode rule (its plain-Python function)", None, _t_helper,
             _cg_helper, numpy_too=True)


# -- `j_field(t, y, name)` of an object `y` (`RecordT`): the entry of its tangent `t`
# (an object of the same attributes, or a tuple of their tangents) at the attribute.

def _is_object_field(ctx: Any, s: Any, ts: list) -> bool:
    from adjoint.rules_tangent import j_field
    return s.args[0].value is j_field and isinstance(ts[2], RecordT) and \
        ts[2].index(ctx.const(s.args[3])) is not None and (
            ts[1] == NONE or isinstance(ts[1], TupleT) and len(ts[1].elems) == len(ts[2].elems))


def _t_object_field(ctx: Any, s: Any, ts: list) -> Any:
    return NONE if ts[1] == NONE else ts[1].elems[ts[2].index(ctx.const(s.args[3]))]


def _cg_object_field(fc: Any, s: Any, ts: list) -> Any:
    if ts[0] == NONE:
        return zero_of(s.type)
    return fc.b.extract_value(fc.get(s.args[1]), ts[1].index(s.args[3].value))


REGISTRY.add(_HELPER, "the tangent of an object's attribute", _is_object_field,
             _t_object_field, _cg_object_field, numpy_too=True)
