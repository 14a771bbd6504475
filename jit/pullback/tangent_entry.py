"""Compiled forward mode: `adjoint.forward.jvp`'s tangent IR compiled as a function.

The tangent IR is ordinary IR (the primal's statements, each followed by the
statements of its tangent, calls of plain-Python tangent rules and of other functions'
tangent functions), so it is typed and compiled like any function: once per (tangent
IR, argument types).  What the JIT refuses runs in the interpreter under
`backend="auto"` and raises under `backend="llvm"`.
"""
from __future__ import annotations

import warnings
from typing import Any

from adjoint.rule_table import TangentHelper
from jit.library.registry import REGISTRY
from jit.pullback.backend import JitFallbackWarning
from jit.typing.infer import user_call
from jit.types import TypingError, typeof

_TABLE: dict = {}     # (tangent IR, argument types) -> compiled wrapper, or the refusal
_HOT: dict = {}       # tangent IR -> the wrapper compiled last for it (it checks the
                      # classes of its arguments and sends others to `_typed`)
_HOT_MAX = 4096
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
        entry = _TABLE[key] = _build(ir, argtypes)
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
    _HOT[ir] = entry
    return entry(*args)


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
        return compile_typing(infer(ir, argtypes), general, reroute).wrapper
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
    if helper.interpreted:
        ctx.fail(helper.interpreted)
    return user_call(ctx, s, helper.fn)


def _cg_helper(fc: Any, s: Any, ts: list) -> Any:
    call = fc.typing.calls[s.var]
    return fc.call_user(call.target, call.operands, [])


_HELPER = REGISTRY.entry(TangentHelper, family="derivatives", name="forward-mode rule object",
                         by_class=True)
REGISTRY.add(_HELPER, "any forward-mode rule (its plain-Python function)", None, _t_helper,
             _cg_helper, numpy_too=True)
