"""Forward mode called in user code: `jvp` and `hvp` become calls of tangent functions.

`jvp(f, primals, tangents)` is, as a function of the primals and the tangents, f's
tangent function (`adjoint.forward.tangent_function`): `tf(captured..., xs..., ts...)`
returns `(y, J t)`.  `hvp(f, x, v, *args)` is the gradient in x of f's directional
derivative: `gradient(tf_only, captured..., x, args..., v)` at x's position.  This
pass rewrites each such call where the lowering sees it, when f is known there (a
function constant, a library function with a rule, or a closure made in the same
function) and the primals and tangents are tuples written at the call.  The result
is ordinary code: a call of a user function (whose IR is the tangent IR) or a nested
`gradient`, which reverse mode, forward mode and the JIT differentiate and compile as
they do any call, to any order: reverse over forward, forward over forward, and (by
`hvp`) reverse over forward over reverse.

What is not rewritten keeps its meaning: `jvp`'s own code runs, and differentiating
through it raises an error naming what is not supported (never a wrong number).
A tangent given for an int argument is carried as given (the top-level `jvp` drops
it): pass None there.
"""
from __future__ import annotations

import types
from typing import Any, Optional

from ssair import IR, Const, Stmt, Var

_VARARGS = 0x04 | 0x08      # CO_VARARGS | CO_VARKEYWORDS


def rewrite_forward_calls(ir: IR) -> None:
    """Rewrite the `jvp` / `hvp` calls of `ir` in place (see the module docstring)."""
    from ..forward import hvp, jvp
    defs: Optional[dict] = None
    for b in ir.blocks:
        out, changed = [], False
        for s in b.stmts:
            f = s.args[0].value if s.op == "call" and s.args and \
                isinstance(s.args[0], Const) else None
            got = None
            if (f is jvp or f is hvp) and set(s.kwargs) <= {"backend"}:
                if defs is None:
                    defs = ir.defs_by_var()
                try:
                    got = (_jvp_call if f is jvp else _hvp_call)(ir, s, defs)
                except Exception:       # (f's tangent cannot be built: jvp's own code runs)
                    got = None
            out.extend(got or [s])
            changed = changed or got is not None
        if changed:
            b.stmts = out


def _jvp_call(ir: IR, s: Stmt, defs: dict) -> Optional[list]:
    """`jvp(F, (xs...), (ts...))` -> `tf(captured..., xs..., ts without None...)`."""
    from ..forward import tangent_function
    if len(s.args) != 4:
        return None
    xs, ts = _elements(s.args[2], defs), _elements(s.args[3], defs)
    if xs is None or ts is None or len(xs) != len(ts):
        return None
    mask = tuple(not (isinstance(t, Const) and t.value is None) for t in ts)
    if not any(mask):
        return None
    callee = _static_callee(s.args[1], len(xs), defs, ir)
    if callee is None:
        return None
    fn, captured = callee
    tf = _tangent(tangent_function, fn, mask, captured, only=False)
    given = [t for t, m in zip(ts, mask) if m]
    return [Stmt(s.var, "call", [Const(tf), *captured, *xs, *given], line=s.line,
                 name=s.name)]


def _hvp_call(ir: IR, s: Stmt, defs: dict) -> Optional[list]:
    """`hvp(F, x, v, *args)` -> `gradient(tf_only, captured..., x, args..., v)[nfree]`."""
    from ..api import gradient
    from ..forward import tangent_function
    if len(s.args) < 4:
        return None
    x, v, rest = s.args[2], s.args[3], list(s.args[4:])
    callee = _static_callee(s.args[1], 1 + len(rest), defs, ir)
    if callee is None:
        return None
    fn, captured = callee
    tf = _tangent(tangent_function, fn, (True,) + (False,) * len(rest), captured, only=True)
    g = Stmt(ir.new_var(), "call", [Const(gradient), Const(tf), *captured, x, *rest, v],
             line=s.line)
    pick = Stmt(s.var, "getitem", [g.var, Const(len(captured))], line=s.line, name=s.name)
    return [g, pick]


def _tangent(tangent_function: Any, fn: Any, mask: tuple, captured: list, only: bool) -> Any:
    """fn's tangent function for `mask`, its captured values leading arguments held
    without a tangent (their cotangents still flow: they are arguments)."""
    types_ = (None,) * len(mask)
    if captured:
        return tangent_function(fn, mask, types_, captured=(False,) * len(captured),
                                captured_types=(None,) * len(captured), only=only)
    return tangent_function(fn, mask, types_, only=only)


def _elements(a: Any, defs: dict) -> Optional[list]:
    """The operands of a tuple written at the call (`(x,)`, or a constant tuple)."""
    if isinstance(a, Const):
        return [Const(e) for e in a.value] if type(a.value) is tuple else None
    d = defs.get(a) if isinstance(a, Var) else None
    if isinstance(d, Stmt) and d.op == "tuple" and not d.kwargs:
        return list(d.args)
    return None


def _static_callee(f: Any, nargs: int, defs: dict, ir: IR) -> Optional[tuple]:
    """(Python function, captured operands) of a function operand known where the IR
    is built, called with `nargs` positional arguments, all of them parameters; None
    otherwise (a bound method, defaults left out, `*args`, a function value)."""
    from ..nested_hv import static_function
    got = static_function(f, nargs, defs, ir)
    if got is None:
        return None
    fn, captured = got
    code = fn.__code__
    if type(fn) is not types.FunctionType or code.co_flags & _VARARGS or \
            code.co_kwonlyargcount or code.co_argcount != nargs:
        return None
    return fn, captured
