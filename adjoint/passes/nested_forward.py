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

import numpy as np

from ssair import IR, Const, Stmt, Var

_VARARGS = 0x04 | 0x08      # CO_VARARGS | CO_VARKEYWORDS


def rewrite_forward_calls(ir: IR) -> None:
    """Rewrite the `jvp` / `hvp` calls of `ir` in place (see the module docstring)."""
    if not _REWRITES:
        _fill_rewrites()
    defs: Optional[dict] = None
    for b in ir.blocks:
        out, changed = [], False
        for s in b.stmts:
            f = s.args[0].value if s.op == "call" and s.args and \
                isinstance(s.args[0], Const) else None
            got = None
            rewrite = _REWRITES.get(id(f)) if f is not None else None
            if rewrite is not None and rewrite[0] is f and set(s.kwargs) <= rewrite[1]:
                if defs is None:
                    defs = ir.defs_by_var()
                try:
                    got = rewrite[2](ir, s, defs)
                except Exception:       # (f's tangent cannot be built: jvp's own code runs)
                    got = None
            out.extend(got or [s])
            changed = changed or got is not None
        if changed:
            b.stmts = out


_REWRITES: dict = {}     # id(callee) -> (callee, keywords allowed, rewrite)


def not_rewritten(name: str, mode: str) -> str:
    """Why a call of `name` (jvp, hvp, jacfwd, hessian) left as it is cannot be
    differentiated: the forms this pass rewrites."""
    return (f"adjoint: {name}() inside a function that {mode} differentiates is "
            f"supported where its function is known there (a global function, a "
            f"library function with a rule, or a lambda or def made in that function; "
            f"not one passed in as a value or read from an enclosing function), called "
            f"without *args or defaults left out, and, for jvp, with the primals and "
            f"tangents written as tuples at the call; this call is not of that form")


def refuse_in_reverse(name: str):
    """The reverse-mode handler (`SPECIAL_CALLEES`) of a call left as it is."""
    def refuse(state, _fn, tape, pos, kw):
        raise TypeError(not_rewritten(name, "reverse mode"))
    return refuse


def refuse_in_forward(name: str):
    """The forward-mode emitter (`SPECIAL_TANGENTS`) of a call left as it is."""
    def refuse(em, s, ts, tan, kinds, defs, ir):
        if not any(t is not None for t in ts):
            return None
        where = f"{ir.meta.get('source_name', ir.name)} at {ir.file}:{s.line or ir.firstline}"
        raise TypeError(not_rewritten(name, "forward mode") + f" ({where})")
    return refuse


def _fill_rewrites() -> None:
    from ..forward import hessian, hvp, jacfwd, jvp
    _REWRITES.update({id(jvp): (jvp, {"backend"}, _jvp_call),
                      id(hvp): (hvp, {"backend"}, _hvp_call),
                      id(jacfwd): (jacfwd, {"backend", "argnums"}, _jacfwd_call),
                      id(hessian): (hessian, {"backend"}, _hessian_call)})


def _jvp_call(ir: IR, s: Stmt, defs: dict) -> Optional[list]:
    """`jvp(F, (xs...), (ts...))` -> `tf(captured..., xs..., ts without None...)`."""
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
    jf = jvp_function(fn, len(captured), mask)
    given = [t for t, m in zip(ts, mask) if m]
    return [Stmt(s.var, "call", [Const(jf), *captured, *xs, *given], line=s.line,
                 name=s.name)]


def jvp_function(fn: Any, nfree: int, mask: tuple) -> Any:
    """`(captured..., xs..., ts...) -> (y, J t)` (ts: the tangents of the xs with
    `mask`): fn's tangent function, called with a zero tangent for an int or a bool
    argument, whose tangent `jvp` ignores."""
    from ..forward import tangent_function
    key = (fn, fn.__code__, "jvp", nfree, mask)
    hit = _MADE.get(key)
    if hit is not None:
        return hit
    cs = [f"c{j}" for j in range(nfree)]
    xs = [f"x{k}" for k in range(len(mask))]
    ts = [f"t{k}" for k in range(len(mask)) if mask[k]]
    lines = []
    for k in range(len(mask)):
        if mask[k]:
            lines += [f"if isinstance(x{k}, int):", f"    t{k} = 0.0"]
    lines.append(f"return __tangent__({', '.join(cs + xs + ts)})")
    env = {"__tangent__": _tangent(tangent_function, fn, mask, cs, only=False)}
    out = _generated(f"jvp_of_{_tail(fn)}", cs + xs + ts, lines, env, fn)
    _MADE[key] = out
    return out


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


def _jacfwd_call(ir: IR, s: Stmt, defs: dict) -> Optional[list]:
    """`jacfwd(F, *args, argnums=...)` -> a call of a generated function building each
    wanted Jacobian from columns of F's tangent function (`jacobian_function`)."""
    args = list(s.args[2:])
    wanted = s.kwargs.get("argnums", Const(None))
    if not isinstance(wanted, Const):
        return None
    wanted = wanted.value
    wanted = tuple(range(len(args))) if wanted is None else \
        (wanted,) if type(wanted) is int else wanted
    if type(wanted) is not tuple or any(type(k) is not int or not 0 <= k < len(args)
                                        for k in wanted):
        return None
    callee = _static_callee(s.args[1], len(args), defs, ir)
    if callee is None:
        return None
    fn, captured = callee
    jf = jacobian_function(fn, len(captured), len(args), frozenset(wanted))
    return [Stmt(s.var, "call", [Const(jf), *captured, *args], line=s.line, name=s.name)]


def _hessian_call(ir: IR, s: Stmt, defs: dict) -> Optional[list]:
    """`hessian(F, x)` -> a call of a generated function stacking the columns `H e_j`,
    each a Hessian-vector product (`hessian_function`)."""
    if len(s.args) != 3:
        return None
    callee = _static_callee(s.args[1], 1, defs, ir)
    if callee is None:
        return None
    fn, captured = callee
    hf = hessian_function(fn, len(captured))
    return [Stmt(s.var, "call", [Const(hf), *captured, s.args[2]], line=s.line, name=s.name)]


_MADE: dict = {}     # (function, code, what...) -> its generated jacobian / hessian function


def _columns(name: str, x: str, column: str, shape: str) -> list:
    """Lines setting `name` to the Jacobian in argument `x`, from `column(e)`, the
    derivative in direction e (in x's structure): one call for a float, else one per
    entry of x, stacked last and shaped `shape + shape(x)` (`shape`: None: the
    columns' own shape)."""
    lead = f"np.shape(__cols_{name}[0])" if shape is None else shape
    return [f"if isinstance({x}, bool) or isinstance({x}, int):",
            f"    {name} = None",
            f"elif isinstance({x}, float):",
            f"    {name} = {column.format('1.0')}",
            "else:",
            f"    __e_{name} = np.eye({x}.size)",
            f"    __cols_{name} = [{column.format(f'np.reshape(__e_{name}[j], np.shape({x}))')} "
            f"for j in range({x}.size)]",
            f"    {name} = np.reshape(np.stack(__cols_{name}, axis=-1), {lead} + np.shape({x}))"]


def jacobian_function(fn: Any, nfree: int, nargs: int, wanted: frozenset) -> Any:
    """`(captured..., x0, ...) -> (J0, ...)`: what `jacfwd(fn, x0, ..., argnums=wanted)`
    returns (None for an argument not wanted, or an int), as plain Python calling fn's
    tangent functions, which the transforms and the JIT read like user code."""
    from ..forward import tangent_function
    key = (fn, fn.__code__, "jacfwd", nfree, nargs, wanted)
    hit = _MADE.get(key)
    if hit is not None:
        return hit
    cs = [f"c{j}" for j in range(nfree)]
    xs = [f"x{k}" for k in range(nargs)]
    env, lines = {"np": np}, []
    for k in range(nargs):
        if k not in wanted:
            lines.append(f"J{k} = None")
            continue
        mask = tuple(j == k for j in range(nargs))
        env[f"__tangent{k}__"] = _tangent(tangent_function, fn, mask, cs, only=False)
        column = f"__tangent{k}__({', '.join(cs + xs)}, {{}})[1]"
        lines += _columns(f"J{k}", f"x{k}", column, None)
    lines.append("return (" + "".join(f"J{k}, " for k in range(nargs)) + ")")
    out = _generated(f"jacfwd_of_{_tail(fn)}", cs + xs, lines, env, fn)
    _MADE[key] = out
    return out


def hessian_function(fn: Any, nfree: int) -> Any:
    """`(captured..., x) -> H`: what `hessian(fn, x)` returns, its columns `H e_j` the
    gradients of fn's directional derivative (reverse over forward, as `hvp`)."""
    from ..api import gradient
    from ..forward import tangent_function
    key = (fn, fn.__code__, "hessian", nfree)
    hit = _MADE.get(key)
    if hit is not None:
        return hit
    cs = [f"c{j}" for j in range(nfree)]
    env = {"np": np, "__gradient__": gradient,
           "__tangent__": _tangent(tangent_function, fn, (True,), cs, only=True)}
    column = f"__gradient__(__tangent__, {''.join(c + ', ' for c in cs)}x, {{}})[{nfree}]"
    lines = _columns("H", "x", column, "np.shape(x)") + ["return H"]
    out = _generated(f"hessian_of_{_tail(fn)}", cs + ["x"], lines, env, fn)
    _MADE[key] = out
    return out


def _tail(fn: Any) -> str:
    return fn.__name__ if fn.__name__.isidentifier() else "lambda"


def _generated(name: str, params: list, lines: list, env: dict, fn: Any) -> Any:
    """A generated function that the interpreter and the JIT run through its IR, as
    they run the user's code (`__zygopy_lowered__`)."""
    from ..generated import generated_function
    out = generated_function(name, params, lines, env, fn)
    out.__zygopy_lowered__ = True
    return out


def _register() -> None:
    """Rewrite the calls where each function is lowered; refuse those left as they are."""
    from lowering.api import CALL_REWRITES
    from .. import api
    from ..forward import hessian, hvp, jacfwd, jvp
    from ..special_callees import SPECIAL_CALLEES, SPECIAL_TANGENTS
    CALL_REWRITES.append(rewrite_forward_calls)
    for f in (jvp, hvp, jacfwd, hessian):
        SPECIAL_CALLEES[id(f)] = (f, refuse_in_reverse(f.__name__))
        SPECIAL_TANGENTS[id(f)] = (f, refuse_in_forward(f.__name__))
    for f in (api.pullback, api.jacobian):
        SPECIAL_TANGENTS[id(f)] = (f, refuse_in_forward(f.__name__))


_register()
