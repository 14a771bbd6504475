"""`functools.partial(g, *bound)` of a plain user function as the closure it stands for:
`lambda *rest: g(*bound, *rest)`, a template function whose captured values are the
bound arguments.  The JIT types a partial passed in as that closure
(`jit.types.typeof`), and a partial made in differentiated or compiled code becomes
its `make_closure` (`partials_as_closures`, for forward mode; `jit.typing.spread` for
the JIT), so that each bound argument gets its own tangent and cotangent as a
captured value does.
"""
from __future__ import annotations

import functools
import types as pytypes
from typing import Any

from lowering.api import template_of
from ssair import IR, Const, Stmt
from ssair.interpreter import is_user_function

from .rules import lookup_callee


_PARTIALS: dict = {}    # (function, number bound) -> its partial template, or None
_MAX_BOUND = 10


def partial_template(p: functools.partial) -> Any:
    """For `functools.partial(g, *bound)` of a plain user function `g` (positional
    parameters only, no defaults, no rule of its own, no keywords bound), the template
    of a closure over `bound` calling `g`: `lambda *rest: g(*bound, *rest)` spelled
    with `g`'s own parameter names.  Partials of one function and number of bound
    arguments share it, and so the code compiled for it; otherwise None."""
    g, n = p.func, len(p.args)
    if p.keywords or type(g) is not pytypes.FunctionType or not 0 < n <= _MAX_BOUND:
        return None
    try:
        key = (g, n)
        hit = _PARTIALS.get(key, False)
    except TypeError:
        return None
    if hit is False:
        hit = _PARTIALS[key] = _new_partial_template(g, n)
    return hit


def _new_partial_template(g: pytypes.FunctionType, n: int) -> Any:
    code = g.__code__
    params = code.co_varnames[:code.co_argcount]
    bound = [f"_zy_b{k}" for k in range(n)]
    if (g.__closure__ or g.__defaults__ or g.__kwdefaults__ or code.co_kwonlyargcount
            or code.co_posonlyargcount or code.co_flags & 0x0C or len(params) < n
            or not is_user_function(g) or lookup_callee(g) is not None
            or {"_zy_callee", *bound} & set(code.co_varnames)):
        return None
    rest = list(params[n:])
    src = (f"def _zy_outer({', '.join(bound)}):\n"
           f"    def {g.__name__}({', '.join(rest)}):\n"
           f"        return _zy_callee({', '.join(bound + rest)})\n"
           f"    return {g.__name__}\n")
    scope = {"_zy_callee": g, "__name__": g.__module__}
    exec(compile(src, code.co_filename, "exec"), scope)
    inner = scope["_zy_outer"](*bound)
    inner.__qualname__ = f"functools.partial({g.__qualname__})"
    if list(inner.__code__.co_freevars) != bound:
        return None
    return template_of(inner)


def partials_as_closures(ir: IR) -> IR:
    """A copy of `ir` (or `ir` itself when it makes none) where each
    `call(@functools.partial, @g, a, ...)` binding a plain user function by position
    is `make_closure(@template, a, ...)`."""
    hits = [(b, k) for b in ir.blocks for k, s in enumerate(b.stmts) if _template_for(s)]
    if not hits:
        return ir
    out = ir.copy()
    for b in out.blocks:
        for k, s in enumerate(b.stmts):
            template = _template_for(s)
            if template is not None:
                b.stmts[k] = Stmt(s.var, "make_closure", [Const(template)] + list(s.args[2:]),
                                  {}, s.line, s.name)
    return out


def _template_for(s: Stmt) -> Any:
    """The template of call statement `s` when it makes a partial of a constant plain
    user function by position, else None."""
    if s.op != "call" or s.kwargs or len(s.args) < 3:
        return None
    f, g = s.args[0], s.args[1]
    if not (isinstance(f, Const) and f.value is functools.partial and isinstance(g, Const)):
        return None
    return partial_template(functools.partial(g.value, *[None] * (len(s.args) - 2)))
