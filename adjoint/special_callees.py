"""Callees the J transform runs by handlers of their own instead of a rule or its
transform, and the rule modules' own code.

  * `SPECIAL_CALLEES`: `id(callee) -> (callee, handler)` (`adjoint.gradient` and
    `adjoint.pullback` called in differentiated code, `run_jcall` / `run_jback`);
  * `SPECIAL_TYPES`: `(type, handler)` for callees of a type (first-order `Pullback`s).
`adjoint.nested` fills both (and `adjoint.nested_hv` fills `SPECIAL_TANGENTS`); a handler is `handler(state, f, tape, pos, kw) ->
(y, pullback data)` (see `adjoint.transform.call_forward`).  `run_jcall` /
`run_jback` stand for a `jcall` / `jback` statement of a transformed IR when that IR
is differentiated again (`as_call`).
"""
from __future__ import annotations

import types
from typing import Any

from ssair import Const, Stmt

SPECIAL_CALLEES: dict = {}   # id(callee) -> (callee, handler): adjoint.gradient (nested)
SPECIAL_TYPES: list = []     # (type, handler): first-order Pullbacks (nested)
# id(callee) -> (callee, emitter): forward mode of a nested `gradient` (adjoint.nested_hv);
# emitter(em, s, ts, tan, kinds, defs, ir) -> the statements replacing s, or None
SPECIAL_TANGENTS: dict = {}


# ids of callees that never write into their operands, though reverse mode transforms
# their calls (`adjoint.gradient`: it calls f, whose own writes are refused there)
READ_ONLY_CALLEES: dict = {}


def special_tangent(f: Any):
    """The forward-mode emitter of callee `f` (`SPECIAL_TANGENTS`), or None."""
    hit = SPECIAL_TANGENTS.get(id(f))
    return hit[1] if hit is not None and hit[0] is f else None


def special_handler(f: Any):
    """The handler of callee `f` from the tables above, or None."""
    hit = SPECIAL_CALLEES.get(id(f))
    if hit is not None and hit[0] is f:
        return hit[1]
    for cls, handler in SPECIAL_TYPES:
        if isinstance(f, cls):
            return handler
    return None


def own_rule_code(f: Any) -> bool:
    """Plain-Python helpers of the rule modules: lowered when differentiated again
    (forward mode's rule objects too, whose function is lowered: `rule_function`)."""
    f = rule_function(f)
    return type(f) is types.FunctionType and (f.__module__ or "").startswith("adjoint.")


def rule_function(f: Any) -> Any:
    """The plain-Python function of a forward-mode rule object, else f itself."""
    from .rule_table import TangentHelper
    return f.fn if isinstance(f, TangentHelper) else f


def run_jcall(f, tape, kwnames, *args):
    """`jcall` as a callee (what a `jcall` statement becomes when its IR is
    differentiated; only ever run through `adjoint.nested.forward_jcall`)."""
    raise RuntimeError("adjoint: run_jcall is only called by the J transform")


def run_jback(pb, reader, dy, cur):
    """`jback` as a callee (run through `adjoint.nested.forward_jback`)."""
    raise RuntimeError("adjoint: run_jback is only called by the J transform")


def as_call(s: Stmt) -> Stmt:
    """`%t = jcall(f, %tape, kw, args...)` -> `%t = call(@run_jcall, f, %tape, kw, args...)`."""
    fn = run_jcall if s.op == "jcall" else run_jback
    return Stmt(s.var, "call", [Const(fn)] + list(s.args), line=s.line, name=s.name)
