"""Python functions made for the derivatives of derivatives: plain code that the
transforms (reverse and forward mode) and the JIT read like a user's.

  * `library_caller(f, n)`: `def tanh(x0): return f(x0)` for a library callee with a
    rule, so that `gradient(math.tanh, x)` nested in differentiated code is a
    Python function's gradient (`adjoint.nested_hv`); `fixed_arity(f, n)`, the same
    for a Python function taking `*args` or defaults;
  * `pullback_caller(pb, n)`: what calling a rule's `Pullback` does (Nones for a
    None cotangent, one result put in a tuple), so that forward mode can
    differentiate an adjoint IR's pullback call (a fourth order and up).
"""
from __future__ import annotations

import builtins
import types
from typing import Any

_LIBRARY_CALLERS: dict = {}


def library_caller(f: Any, nargs: int) -> types.FunctionType:
    """`def tanh(x0, ...): return f(x0, ...)` for library callee `f`: a Python function
    whose tangent function and gradient are those of f's rules, so a nested
    `gradient(math.tanh, x)` differentiates to any order as a Python function's does."""
    key = (f, nargs)
    hit = _LIBRARY_CALLERS.get(key)
    if hit is None:
        ps = ", ".join(f"x{k}" for k in range(nargs))
        name = getattr(f, "__name__", "function")
        name = name if name.isidentifier() else "function"
        hit = generated_function(name, [f"x{k}" for k in range(nargs)],
                                 [f"return __f__({ps})"], {"__f__": f}, None)
        _LIBRARY_CALLERS[key] = hit
    return hit


def fixed_arity(f: Any, nargs: int) -> Any:
    """`f`, or for a plain Python function without captured values whose parameters
    a call with `nargs` positional arguments does not fill one for one (`*args`,
    defaults, keyword-only ones), `def f(x0, ...): return f(x0, ...)`: the Python
    function that Hessian-vector products differentiate (`adjoint.nested_hv`) passes
    each argument as one parameter of its own."""
    code = getattr(f, "__code__", None)
    if type(f) is not types.FunctionType or f.__closure__ or (
            not code.co_flags & 0x0C and not code.co_kwonlyargcount
            and code.co_argcount == nargs):
        return f
    return library_caller(f, nargs)


_CALLERS: dict = {}    # (Pullback, number of operands) -> its plain-Python caller


def pullback_caller(pb: Any, nargs: int) -> types.FunctionType:
    """A plain Python function doing what calling rule pullback `pb` (a `Pullback`)
    with `nargs` positional operands does: Nones for a None cotangent, a bare result
    put in a tuple."""
    key = (pb, nargs)
    hit = _CALLERS.get(key)
    if hit is not None:
        return hit
    ps = [f"a{k}" for k in range(nargs - 1)]
    nones = "(" + "None, " * (nargs - 1 - pb.uses_result) + ")"
    lines = ["if dy is None:", f"    return {nones}",
             f"out = __rule__(dy, {', '.join(ps)})"]
    tuples = _returns_tuples(pb.fn)     # (known from the code: one type for the JIT)
    lines += ["return out"] if tuples else ["return (out,)"] if tuples is False else \
        ["if isinstance(out, tuple):", "    return out", "return (out,)"]
    out = generated_function(f"call_{pb.fn.__name__}", ["dy"] + ps, lines,
                             {"__rule__": pb.fn}, pb.fn)
    _CALLERS[key] = out
    return out


def _returns_tuples(fn: Any, _depth: int = 0) -> Any:
    """True when every `return` of `fn` returns a tuple display, False when none
    does, None when mixed or unknown."""
    import lowering
    from ssair import Const, Return, Var
    try:
        ir = lowering.lower(fn)
    except Exception:       # noqa: BLE001  (unknown: decided at run time)
        return None
    defs = ir.defs_by_var()
    kinds = set()
    for b in ir.blocks:
        if isinstance(b.term, Return):
            v = b.term.value
            if isinstance(v, Const):
                kinds.add(True if isinstance(v.value, tuple) else False
                          if isinstance(v.value, (int, float)) else None)
                continue
            d = defs.get(v) if isinstance(v, Var) else None
            op = getattr(d, "op", None)
            if op == "call" and _depth < 3:     # a helper's result: read its code too
                kinds.add(_call_returns_tuples(d, _depth))
                continue
            kinds.add(True if op == "tuple" else False if op in _NUMBER_OPS and not any(
                _tuple_value(a, defs) for a in d.args) else None)
    return kinds.pop() if len(kinds) == 1 else None


def _call_returns_tuples(d: Any, depth: int) -> Any:
    """Does call statement `d` return a tuple (True), never (False), or unknown?  A
    numpy function's result never is; a Python helper's: read from its code."""
    import numpy as np
    from ssair import Const
    f = d.args[0]
    if not isinstance(f, Const):
        return None
    if isinstance(f.value, np.ufunc) or getattr(f.value, "__module__", None) == "math":
        return False
    if type(f.value) is types.FunctionType and (f.value.__module__ or "").startswith(
            "adjoint."):
        return _returns_tuples(f.value, depth + 1)
    return None


def _tuple_value(a: Any, defs: dict) -> bool:
    """May operand `a` be a tuple (a tuple constant, a display, anything but a number
    computed here)?"""
    from ssair import Const, Var
    if isinstance(a, Const):
        return isinstance(a.value, tuple)
    d = defs.get(a) if isinstance(a, Var) else None
    op = getattr(d, "op", "arg")        # (a rule's parameters: numbers and arrays)
    if op == "call":
        return _call_returns_tuples(d, 3) is not False
    return op not in _NUMBER_OPS and op != "arg"


# operators whose result is never a tuple when no operand is one (of numbers and arrays: what rules return)
_NUMBER_OPS = frozenset({"add", "sub", "mul", "truediv", "neg", "pow", "matmul", "pos",
                         "floordiv", "mod"})


def generated_function(name: str, params: list, lines: list, env: dict,
                       of: Any) -> types.FunctionType:
    """A Python function `name(params)` running `lines` with globals `env`, placed in
    the module and file of `of` (so that errors name the user's function; with `of`
    None, named `name` alone), marked generated (never stored by the JIT's disk cache)."""
    src = f"def {name}({', '.join(params)}):\n" + "".join(f"    {ln}\n" for ln in lines)
    scope: dict = {}
    exec(compile(src, f"<{name}>" if of is None else of.__code__.co_filename, "exec"), scope)
    code = scope[name].__code__
    if of is not None:
        code = code.replace(co_firstlineno=of.__code__.co_firstlineno)
    glob = {"__name__": __name__, "__builtins__": builtins, **env}
    out = types.FunctionType(code, glob, name)
    out.__qualname__ = name if of is None else f"{of.__qualname__}.{name}"
    out.__module__ = __name__
    out.__zygopy_generated__ = out.__qualname__
    return out
