"""Derivatives of a nested `gradient(f, *xs)` by Hessian-vector products, at any order.

`g = gradient(f, *xs)` is the vector `grad f` at `xs`.  Its derivatives are products
with f's Hessian, which is symmetric, so one program gives both:

  * its pullback:  dz -> H dz  (the cotangents of xs, and of the values f captures);
  * its tangent:   dx -> H dx  (forward mode, `tangent_rule`).

`H v` is the gradient, in every argument of f, of the directional derivative
`<grad_xs f, v>`, which f's tangent IR computes (`only=True`): reverse over forward,
as `hvp` does.  That gradient is an ordinary `gradient` call of a tangent function, so
differentiating it again (a third order) meets a `gradient` call once more, of a
function with one `gradient` call fewer in its tangent's reverse pass: the recursion
ends, and no order has a limit.  The interpreter and the JIT run the same generated
pullback (`gradient_pullback`, a plain Python function the JIT compiles), so both
backends compile or interpret every order alike.

f's captured values (a closure's, or a Python function's cells) are leading
arguments of the tangent function without a tangent: the gradient gives their
cotangents as well, which go to f as one tuple (a closure's cotangent).
"""
from __future__ import annotations

import types
from typing import Any, Optional

import numpy as np

from ssair.interpreter import Closure, closure_template

from .custom import dense_cotangent
from .generated import fixed_arity, generated_function, library_caller
from .rule_table import Pullback, pullback_rule
from .rules_complex import holomorphic

_PULLBACKS: dict = {}    # (function, nfree, mask, types, ctypes, kind) -> Pullback


def function_parts(f: Any, nargs: Optional[int] = None) -> Optional[tuple]:
    """(Python function, number of captured values, captured values) of a function
    value given to `gradient`: a library callee with a derivative rule (`math.tanh`)
    called with `nargs` arguments is the Python function that calls it
    (`library_caller`).  None for anything else (an IR closure)."""
    if nargs is not None and library_callee(f):
        return library_caller(f, nargs), 0, ()
    if isinstance(f, Closure):
        fn = f.func
        if isinstance(fn, types.CodeType):
            fn = closure_template(fn, {})
        if type(fn) is not types.FunctionType:
            return None
        return fn, len(f.values), tuple(f.values)
    if type(f) is types.FunctionType:
        cells = tuple(c.cell_contents for c in f.__closure__ or ())
        return (f if nargs is None else fixed_arity(f, nargs)), len(cells), cells
    return None


def library_callee(f: Any) -> bool:
    """Is `f` a library function with a derivative rule (not Python code of its own)?"""
    from .rules import lookup_callee
    return type(f) is not types.FunctionType and not isinstance(f, Closure) and \
        lookup_callee(f) is not None


def captured_values(f: Any) -> tuple:
    """The values function `f` captured (a Closure's, or a Python function's cells)."""
    parts = function_parts(f)
    return () if parts is None else parts[2]


@pullback_rule(captured_values)
def d_captured_values(dz, f):
    return (None if dz is None else tuple(dz),)


holomorphic(d_captured_values)      # (linear: complex values pass as they are)


def tangent_of_gradient(fn: Any, nfree: int, mask: tuple, types_: tuple,
                        ctypes: tuple) -> Any:
    """The function `(captured..., xs..., v...) -> <grad_xs fn, v>` (v: one tangent for
    each xs with `mask`): fn's tangent IR returning the tangent alone."""
    from .forward import tangent_function
    if nfree:
        return tangent_function(fn, mask, types_, captured=(False,) * nfree,
                                captured_types=ctypes, only=True)
    return tangent_function(fn, mask, types_, only=True)


def gradient_pullback(fn: Any, nfree: int, mask: tuple, types_: tuple, ctypes: tuple,
                      with_value: bool = False) -> Pullback:
    """The pullback of `gradient(f, x0, ...)` (of `value_and_grad` with `with_value`)
    for f running `fn` over `nfree` captured values; `mask[k]`: x_k is differentiable.
    A generated Python function `d(dz, f, x0, ...)` (cached) returning `(d_f, d_x0,
    ...)`: `H dz` by the gradient of the tangent function, plus `dy * grad f` for
    value_and_grad's `dy`."""
    key = (fn, fn.__code__, nfree, tuple(mask), tuple(types_), tuple(ctypes), with_value)
    hit = _PULLBACKS.get(key)
    if hit is not None:
        return hit
    n = len(mask)
    filled = _left_out_defaults(fn, n)      # (passed to the tangent function, constant)
    tf = tangent_of_gradient(fn, nfree, tuple(mask) + (False,) * len(filled),
                             tuple(types_) + tuple(_value_type(v) for v in filled),
                             tuple(ctypes))
    xs = [f"x{k}" for k in range(n)]
    given = xs + [f"__default{k}__" for k in range(len(filled))]
    cs = [f"c[{j}]" for j in range(nfree)]
    lines = []
    if nfree:
        lines.append("c = __captured__(f)")
    zero = "(" + ", ".join(["None"] * (1 + n)) + ",)"
    lines += ["if dz is None:", f"    return {zero}"]
    if with_value:
        lines += ["dy, dg = dz", "if dg is None:",
                  "    dg = (" + "".join(["None, "] * n) + ")"]
    dg = "dg" if with_value else "dz"
    vs = [f"__dense__({dg}[{k}], x{k})" for k in range(n) if mask[k]]
    # (compiled code ignores `backend`; the interpreter keeps to itself)
    lines.append(f"h = __gradient__(__tangent__, {', '.join(cs + given + vs)}, "
                 "backend='interp')")
    d_f = "(" + "".join(f"h[{j}], " for j in range(nfree)) + ")" if nfree else "None"
    outs = [f"h[{nfree + k}]" for k in range(n)]
    env = {}
    if with_value:     # value_and_grad: (dy, dg); dy reaches xs through grad f
        lines.append("if dy is not None:")
        if nfree:      # ... and the captured values through their gradient
            lines += _value_cotangents(fn, nfree, mask, types_, ctypes, filled, env)
        else:
            lines.append(f"    g = __gradient__(f, {', '.join(xs)}, backend='interp')")
            lines.append("    return (" + ", ".join(
                [d_f] + [f"{o} + dy * g[{k}]" if mask[k] else o for k, o in enumerate(outs)])
                + ",)")
    lines.append("return (" + ", ".join([d_f] + outs) + ",)")
    from . import api
    env.update({"__gradient__": api.gradient, "__tangent__": tf, "__dense__": dense_cotangent,
                "__captured__": captured_values,
                **{f"__default{k}__": v for k, v in enumerate(filled)}})
    tail = fn.__name__ if fn.__name__.isidentifier() else "lambda"
    name = f"d_{'value_and_grad' if with_value else 'gradient'}_of_{tail}"
    pb = Pullback(generated_function(name, ["dz", "f"] + xs, lines, env, fn))
    pb.of = f"gradient({fn.__qualname__})"
    _PULLBACKS[key] = pb
    return pb


DIFFERENTIABLE_TYPES = ("float64", "array(float64, ")


def _value_cotangents(fn: Any, nfree: int, mask: tuple, types_: tuple, ctypes: tuple,
                      filled: tuple, env: dict) -> list:
    """Lines of value_and_grad's pullback for a function with captured values, under
    `if dy is not None:`: `dy * grad f` in the captured values and the xs, added to the
    `H dz` parts, returned.  grad f is the gradient of f's tangent function with a
    tangent for every captured float or float array and every differentiable x, taken
    in those tangents (the tangent is linear in them, so any point gives grad f: the
    values themselves are passed).  A captured value of another kind, differentiable
    at run time (a tuple of arrays), is refused there rather than given no cotangent."""
    from .forward import tangent_function
    n = len(mask)
    cmask = tuple(t is not None and t.startswith(DIFFERENTIABLE_TYPES) for t in ctypes)
    env["__value_tangent__"] = tangent_function(
        fn, tuple(mask) + (False,) * len(filled),
        tuple(types_) + tuple(_value_type(v) for v in filled),
        captured=cmask, captured_types=tuple(ctypes), only=True)
    env["__refuse_unknown__"] = refuse_unknown_capture
    given = [f"x{k}" for k in range(n)] + [f"__default{k}__" for k in range(len(filled))]
    tangents = [f"c[{j}]" for j in range(nfree) if cmask[j]] + \
        [f"x{k}" for k in range(n) if mask[k]]
    lines = [f"    __refuse_unknown__(c[{j}], {fn.__qualname__!r})"
             for j in range(nfree) if ctypes[j] is None]
    lines.append("    g = __gradient__(__value_tangent__, " + ", ".join(
        [f"c[{j}]" for j in range(nfree)] + given + tangents) + ", backend='interp')")
    at = nfree + len(given)       # the first tangent's position among the arguments
    parts = []
    for j in range(nfree):
        parts.append(f"h[{j}] + dy * g[{at}]" if cmask[j] else f"h[{j}]")
        at += cmask[j]
    outs = []
    for k in range(n):
        outs.append(f"h[{nfree + k}] + dy * g[{at}]" if mask[k] else f"h[{nfree + k}]")
        at += bool(mask[k])
    lines.append("    return ((" + "".join(p + ", " for p in parts) + "), " +
                 ", ".join(outs) + ",)")
    return lines


def refuse_unknown_capture(value: Any, name: str) -> None:
    """value_and_grad's pullback of a function capturing `value`, of a kind whose
    gradient it does not take (not a float or a float array): refused when the value
    is differentiable, since its share of the value's cotangent would be lost."""
    if isinstance(value, (bool, int, np.integer, str)) or value is None:
        return
    if isinstance(value, np.ndarray) and value.dtype.kind in "biu":
        return
    raise TypeError(f"adjoint: value_and_grad() of {name}, which captures a "
                    f"{type(value).__name__} value, inside a differentiated function: the "
                    "value's gradient in what it captures is taken for floats and float "
                    "arrays; pass the value as an argument")


def _left_out_defaults(fn: Any, n: int) -> tuple:
    """The defaults of fn's positional parameters after the first `n` (what a call
    `gradient(fn, x0, ..., x_{n-1})` leaves out)."""
    code, defaults = fn.__code__, fn.__defaults__ or ()
    missing = code.co_argcount - n
    if missing <= 0 or missing > len(defaults):
        return ()
    return tuple(defaults[len(defaults) - missing:])


def _value_type(v: Any) -> Optional[str]:
    """The scalar analysis' type name of a constant argument (`passes.inplace`)."""
    return "bool" if isinstance(v, bool) else "int64" if isinstance(v, int) else \
        "float64" if isinstance(v, float) else None


# -- forward mode: the tangent of a nested gradient ----------------------------------------
def tangent_rule(em: Any, s: Any, ts: list, tan: dict, kinds: Any, defs: dict,
                 ir: Any) -> Optional[list]:
    """`call(gradient, f, xs...)` in a function forward mode differentiates: its tangent
    is `H dx` (and, for value_and_grad, `<grad f, dx>` for y), one `gradient` call of
    f's tangent function emitted after it.  f must be known where the IR is built (a
    function, or a closure made in this function over values without a tangent)."""
    from ssair import Const
    from . import api
    with_value = s.args[0].value is api.value_and_grad
    xs, txs = list(s.args[2:]), list(ts[1:])
    if not any(t is not None for t in txs):
        return None
    name = "value_and_grad" if with_value else "gradient"
    where = f"in {ir.meta.get('source_name', ir.name)} at {ir.file}:{s.line or ir.firstline}"
    if s.kwargs or len(s.args) < 3:
        raise TypeError(f"jvp: {name}() with keyword arguments, or without arguments, is "
                        f"not differentiated in forward mode yet ({where})")
    if ts[0] is not None:
        raise TypeError(f"jvp: {name}() of a function that reads differentiated values of "
                        f"its enclosing function is not differentiated in forward mode yet "
                        f"({where}); pass those values as arguments")
    fn, captured = _static_function(s, s.args[1], defs, ir, name, where)
    from .passes.tangent import _type_name
    mask = tuple(t is not None for t in txs)
    tf = tangent_of_gradient(fn, len(captured), mask,
                             tuple(_type_name(kinds, a) for a in xs),
                             tuple(_type_name(kinds, a) for a in captured))
    em.into = em.post
    given = [t for t in txs if t is not None]
    h = em.op("call", Const(api.gradient), Const(tf), *captured, *xs, *given)
    dg = em.op("tuple", *[em.op("getitem", h, Const(len(captured) + k))
                          for k in range(len(xs))])
    if with_value:
        dy = em.op("call", Const(tf), *captured, *xs, *given)
        dg = em.op("tuple", dy, dg)
    tan[s.var] = dg
    return [s] + em.post


def _static_function(s: Any, f: Any, defs: dict, ir: Any, name: str, where: str) -> tuple:
    """(Python function, captured operands) of the function operand of a nested
    gradient in IR being built: a function constant, or a closure made here."""
    got = static_function(f, len(s.args) - 2, defs, ir)
    if got is None:
        raise TypeError(f"jvp: {name}() of a function known only at run time is not "
                        f"differentiated in forward mode yet ({where})")
    return got


def static_function(f: Any, nargs: int, defs: dict, ir: Any) -> Optional[tuple]:
    """(Python function, captured operands) of function operand `f` (called with
    `nargs` arguments) known where IR `ir` is built: a function constant (its cells
    captured constants; a library function with a rule: the function calling it), or
    a closure made in `ir`.  None otherwise."""
    from ssair import Const
    if isinstance(f, Const):
        parts = function_parts(f.value, nargs)
        if parts is not None:
            return parts[0], [Const(c) for c in parts[2]]
        return None
    made = defs.get(f)
    if made is not None and getattr(made, "op", None) == "make_closure" and \
            isinstance(made.args[0], Const) and not made.kwargs:
        fn = made.args[0].value
        if isinstance(fn, types.CodeType):
            fn = closure_template(fn, getattr(ir.func, "__globals__", {}))
        if type(fn) is types.FunctionType:
            return fn, list(made.args[1:])
    return None


def _register() -> None:
    from . import api
    from .rules_tangent import linear
    from .special_callees import SPECIAL_TANGENTS
    for f in (api.gradient, api.value_and_grad):
        SPECIAL_TANGENTS[id(f)] = (f, tangent_rule)
    # forward mode over an adjoint IR (the tangent function of a gradient's gradient,
    # a fourth order and up): a cotangent's entry is linear in the cotangent
    linear(["dget"])


_register()
