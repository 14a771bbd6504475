"""`functools.partial(g, *bound, **named)` of a plain user function (or of a library
function with a derivative rule: `partial(np.sum, axis=0)`) as the closure it
stands for: `lambda *rest: g(*bound, *rest, **named)`, a template function whose
captured values are the bound arguments and keyword values.  The JIT types a partial
passed in as that closure (`jit.types.typeof`), and a partial made in differentiated or compiled code becomes
its `make_closure` (`partials_as_closures`, for forward mode; `jit.typing.spread` for
the JIT), so that each bound argument gets its own tangent and cotangent as a
captured value does.
"""
from __future__ import annotations

import functools
import inspect
import types as pytypes
from typing import Any

import numpy as np

from lowering.api import template_of
from ssair import IR, Const, Stmt
from ssair.interpreter import is_user_function

from .rules import lookup_callee


_PARTIALS: dict = {}    # (function, number bound, keywords bound) -> its template, or None
_MAX_BOUND = 10


def partial_template(p: functools.partial) -> Any:
    """For `functools.partial(g, *bound, **named)` of a plain user function `g` (no
    `*args`/`**kwargs`, no closure, no rule of its own), the template of a closure
    over `bound` then `named`'s values calling `g`: `lambda *rest: g(*bound, *rest,
    **named)` spelled with `g`'s own parameter names, defaults and keyword-only
    parameters (a parameter after a keyword-bound one is keyword-only, as in CPython).
    Partials of one function, number of bound arguments and bound keyword names share
    it, and so the code compiled for it; otherwise None.  A call that passes a bound
    keyword again (CPython overrides it) does not bind to the template: refused."""
    g, n, names = p.func, len(p.args), tuple(p.keywords)
    if not 0 < n + len(names) <= _MAX_BOUND:
        return None
    try:
        key = (g, n, names)
        hit = _PARTIALS.get(key, False)
    except TypeError:
        return None
    if hit is False:
        make = _new_partial_template if type(g) is pytypes.FunctionType \
            and lookup_callee(g) is None else _new_library_template
        hit = _PARTIALS[key] = make(g, n, names)
    return hit


def _new_library_template(g: Any, n: int, names: tuple) -> Any:
    """`functools.partial(np.sum, axis=0)` and the like: for a library callable with a
    derivative rule, the closure `lambda a: g(*bound, a, **named)` taking the
    parameters that follow the bound ones and have no default (a ufunc's inputs), so
    that the call stays one of `g`, whose rule differentiates it.  None where the
    signature is not known."""
    if lookup_callee(g) is None or not getattr(g, "__name__", "").isidentifier():
        return None
    if isinstance(g, np.ufunc):
        params = [f"x{k}" for k in range(1, g.nin + 1)][n:]
    else:
        try:
            sig = list(inspect.signature(g).parameters.values())
        except (TypeError, ValueError):
            return None
        if len(sig) < n or any(q.kind not in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)
                               for q in sig[:n]):
            return None
        params = []
        for q in sig[n:]:
            if q.kind not in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD) \
                    or q.default is not q.empty or q.name in names:
                break
            params.append(q.name)
    if any(q.startswith("_zy_") for q in params):
        return None
    bound = [f"_zy_b{k:02d}" for k in range(n + len(names))]
    passed = bound[:n] + params + [f"{q}={b}" for q, b in zip(names, bound[n:])]
    src = (f"def _zy_outer({', '.join(bound)}):\n"
           f"    def {g.__name__}({', '.join(params)}):\n"
           f"        return _zy_callee({', '.join(passed)})\n"
           f"    return {g.__name__}\n")
    scope = {"_zy_callee": g, "__name__": __name__}
    exec(compile(src, f"<functools.partial of {g.__name__}>", "exec"), scope)
    inner = scope["_zy_outer"](*bound)
    inner.__qualname__ = f"functools.partial({getattr(g, '__qualname__', g.__name__)})"
    return template_of(inner)


def partial_captures(p: functools.partial) -> tuple:
    """The values a partial's template captures, in its order: the bound positional
    arguments, then the bound keywords' values."""
    return tuple(p.args) + tuple(p.keywords.values())


def _new_partial_template(g: pytypes.FunctionType, n: int, names: tuple) -> Any:
    code = g.__code__
    params = code.co_varnames[:code.co_argcount]
    kwonly = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    bound = [f"_zy_b{k:02d}" for k in range(n + len(names))]
    if (g.__closure__ or code.co_posonlyargcount or code.co_flags & 0x0C or len(params) < n
            or not is_user_function(g) or lookup_callee(g) is not None
            or set(names) & set(params[:n]) or not set(names) <= set(params) | set(kwonly)
            or any(v.startswith("_zy_") for v in code.co_varnames)):
        return None
    defaults = dict(zip(params[len(params) - len(g.__defaults__ or ()):], g.__defaults__ or ()))
    defaults.update(g.__kwdefaults__ or {})
    rest = [q for q in params[n:] if q not in names]
    first = next((i for i, q in enumerate(params[n:]) if q in names), len(params) - n)
    positional = rest[:first]
    keyword_only = rest[first:] + [q for q in kwonly if q not in names]
    scope = {"_zy_callee": g, "__name__": g.__module__}

    def spelled(q: str) -> str:
        if q not in defaults:
            return q
        scope[f"_zy_d_{q}"] = defaults[q]
        return f"{q}=_zy_d_{q}"
    signature = [spelled(q) for q in positional]
    if keyword_only:
        signature += ["*"] + [spelled(q) for q in keyword_only]
    passed = bound[:n] + positional + [f"{q}={q}" for q in keyword_only] + [
        f"{q}={b}" for q, b in zip(names, bound[n:])]
    src = (f"def _zy_outer({', '.join(bound)}):\n"
           f"    def {g.__name__}({', '.join(signature)}):\n"
           f"        return _zy_callee({', '.join(passed)})\n"
           f"    return {g.__name__}\n")
    exec(compile(src, code.co_filename, "exec"), scope)
    inner = scope["_zy_outer"](*bound)
    inner.__qualname__ = f"functools.partial({g.__qualname__})"
    if list(inner.__code__.co_freevars) != bound:
        return None
    return template_of(inner)


def partials_as_closures(ir: IR) -> IR:
    """A copy of `ir` (or `ir` itself when it makes none) where each
    `call(@functools.partial, @g, a, ..., k=v, ...)` of a plain user function is
    `make_closure(@template, a, ..., v, ...)`."""
    hits = [(b, k) for b in ir.blocks for k, s in enumerate(b.stmts) if _template_for(s)]
    if not hits:
        return ir
    out = ir.copy()
    for b in out.blocks:
        for k, s in enumerate(b.stmts):
            template = _template_for(s)
            if template is not None:
                b.stmts[k] = Stmt(s.var, "make_closure", [Const(template)] + list(s.args[2:])
                                  + list(s.kwargs.values()), {}, s.line, s.name)
    return out


def _template_for(s: Stmt) -> Any:
    """The template of call statement `s` when it makes a partial of a constant plain
    user function, else None."""
    if s.op != "call" or len(s.args) < 2 or len(s.args) + len(s.kwargs) < 3:
        return None
    f, g = s.args[0], s.args[1]
    if not (isinstance(f, Const) and f.value is functools.partial and isinstance(g, Const)):
        return None
    try:
        p = functools.partial(g.value, *[None] * (len(s.args) - 2), **dict.fromkeys(s.kwargs))
    except TypeError:
        return None
    return partial_template(p)
