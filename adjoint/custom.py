"""Derivatives the user controls: `stop_gradient`, `custom_vjp`, `custom_jvp` and
`jvp_rule`, in JAX's spelling.

    y = f(x) + stop_gradient(g(x))     # g's value, no derivative through it

    @custom_vjp
    def clip(x):  return x
    def clip_fwd(x):  return x, ()            # (y, residuals)
    def clip_bwd(res, dy):  return (np.clip(dy, -1, 1),)   # one cotangent per argument
    clip.defvjp(clip_fwd, clip_bwd)

    @custom_jvp
    def softplus(x):  return np.log1p(np.exp(x))
    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t / (1 + np.exp(-x))

How each is made, with the rule table's own means (so the interpreter, the JIT and
both modes see them as any rule):

  * `stop_gradient` is a library function without a derivative (`nondiff`): its
    result carries no cotangent and no tangent.  It returns its argument with every
    array copied (the alias analysis takes the result of a ruled call as new memory).
  * A `custom_vjp` function is a generated Python function, lowered like any user
    function (so `pullback(f, ...)` itself uses the rule), whose body is
    `y, residuals = FWD(args); return OUT(y, residuals, args)`.  `FWD`
    (`CustomVJPCall`) runs the user's `fwd` and has no derivative; `OUT`
    (`CustomVJPOutput`) returns `y`, and its rule, which reads its operands, is a
    generated function calling the user's `bwd(residuals, dy)` (`dy` with zeros where
    nothing reached a part of `y`: `dense_cotangent`) and checking its result
    (`checked_cotangents`).  `fwd` runs once per call; forward
    mode refuses `OUT`, as JAX does.
  * A `custom_jvp` function is a generated function whose body calls the user's
    function through `CALL` (`CustomJVPCall`), whose rule is the user's jvp rule:
    forward mode calls it with the primals and tangents (zeros where none flows);
    reverse mode transposes it: `ydot` is linear in the tangents, so the cotangents
    are the gradient in the tangents of `<ydot, dy>`, one reverse pass (in the
    interpreter) over the user's rule at zero tangents (exact, as JAX's transposition
    requires the rule to be linear in the tangents).  `jvp_rule(f)` gives the same
    forward-mode rule to a function that has a reverse rule from `@adjoint.rule(f)`,
    so that one function has both.
  * The user's functions may return their arguments (`Rule.keeps_operands`): the
    alias analysis then snapshots what a later write would change.
The generated functions read the user's functions as globals, not through a closure,
so the JIT compiles them like any user function (`jit.pullback.custom_calls`).
"""
from __future__ import annotations

import builtins
import inspect
import threading
import types
from typing import Any, Callable

import numpy as np

from .api import pullback
from .passes.tangent import zero_tangent
from .pytrees import is_record
from .rule_table import Pullback, TangentHelper, defpullback, lookup_callee, nondiff
from .structure import conform
from .transform import clear_cache


# -- stop_gradient -------------------------------------------------------------------------
def stop_gradient(x: Any) -> Any:
    """`x` itself as a value (arrays copied, containers rebuilt), with no derivative:
    gradients and tangents through it are zero, at every order."""
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, tuple):
        out = tuple(stop_gradient(v) for v in x)
        return type(x)._make(out) if hasattr(type(x), "_make") else out
    if isinstance(x, list):
        return [stop_gradient(v) for v in x]
    if isinstance(x, dict):
        return {k: stop_gradient(v) for k, v in x.items()}
    return x


nondiff(stop_gradient)


# -- shared: the user's function, its name, its generated companions ---------------------------
def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _positional_names(fun: Callable, what: str) -> list:
    """The parameter names of `fun`, which may only have positional parameters (with
    defaults): the generated function takes the same."""
    if type(fun) is not types.FunctionType:
        raise TypeError(f"{what}: decorate a Python function (def or lambda), not "
                        f"{type(fun).__name__}")
    names = []
    for p in inspect.signature(fun).parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TypeError(f"{what}: {_name(fun)} has the parameter {p}; a function with "
                            "a custom derivative takes positional parameters only")
        names.append(p.name)
    return names


def _generated(fun: Callable, name: str, params: list, lines: list, env: dict,
               defaults: Any = None) -> types.FunctionType:
    """A Python function `name(params)` running `lines`, in `fun`'s module and file,
    reading `env` as its globals (no closure: the JIT compiles it like any user
    function).  Marked generated (`jit.disk_cache` never stores it)."""
    src = f"def generated({', '.join(params)}):\n" + "".join(f"    {ln}\n" for ln in lines)
    scope: dict = {}
    exec(compile(src, fun.__code__.co_filename, "exec"), scope)
    code = scope["generated"].__code__.replace(co_name=name,
                                               co_firstlineno=fun.__code__.co_firstlineno)
    glob = {"__name__": fun.__module__, "__builtins__": builtins, **env}
    out = types.FunctionType(code, glob, name, defaults)
    out.__qualname__ = fun.__qualname__ if name == fun.__name__ else \
        f"{fun.__qualname__}.{name}"
    out.__zygopy_generated__ = out.__qualname__
    return out


# -- forward-mode rules from the user's jvp ---------------------------------------------------
def user_tangent_rule(rule: Callable, of: str) -> TangentHelper:
    """A user's jvp rule `rule(primals, tangents) -> (y, ydot)` of function `of`, as a
    forward-mode rule object called from tangent IR: the interpreter calls it and
    checks what it returns; the JIT compiles its function, a generated call of the
    user's rule (the rule may be a closure, which the JIT compiles as a value)."""
    call = _generated(rule, f"{rule.__name__}_call", ["primals", "tangents"],
                      ["return __zygopy_rule__(primals, tangents)"], {"__zygopy_rule__": rule})
    helper = TangentHelper(call)
    helper.of, helper.rule = of, rule
    helper.check = _check_pair
    return helper


def _check_pair(helper: TangentHelper, out: Any, args: tuple) -> tuple:
    """A jvp rule's result: a pair (y, ydot), ydot of y's structure."""
    who = f"jvp: the jvp rule {_name(helper.rule)} of {helper.of}"
    if not isinstance(out, tuple) or len(out) != 2:
        raise TypeError(f"{who} must return a pair (y, ydot); got {type(out).__name__}")
    y, t = out
    return y, conform(y, t, f"{who}: ydot")


def _jvp_emitter(helper: TangentHelper) -> Callable:
    """The rule table's `jvp` for a function with a user jvp rule: the tangent of
    `y = f(args)` is `helper(args, tangents)[1]` (a zero for an operand without one)."""
    def jvp(em, s, ts):
        if s.kwargs:
            raise TypeError(f"jvp: {helper.of} is called with keyword arguments "
                            f"({', '.join(s.kwargs)}); a function with a jvp rule takes "
                            "its arguments by position")
        args = em.operands(s)
        tans = [t if t is not None else em.zero(a) for a, t in zip(args, ts)]
        out = em.op("call", helper, em.op("tuple", *args), em.op("tuple", *tans))
        return em.op("getitem", out, 1)
    return jvp


def _transposed(helper: TangentHelper) -> Callable:
    """A reverse rule from a jvp rule: `ydot` is linear in the tangents (`ydot = J t`),
    so `J^T dy` is the gradient in the tangents of `<ydot, dy>`, which reverse mode
    computes in one pass over the user's rule (at zero tangents; exact)."""
    def back(dy: Any, *args: Any) -> tuple:
        wanted = [_has_derivative(a) for a in args]
        if any(h is helper for h, _ in _TRANSPOSING_NOW.stack):
            return _reentered(helper, args, wanted)
        zeros = [zero_tangent(a) for a in args]
        _TRANSPOSING_NOW.stack.append((helper, args))
        try:
            _, pb = pullback(tangent_part, helper, tuple(args), tuple(zeros),
                             backend="interp")
            grads = pb(dy)[2]
        finally:
            _TRANSPOSING_NOW.stack.pop()
        return tuple(g if w else None for w, g in zip(wanted, grads))
    back.__name__ = back.__qualname__ = f"{helper.of}_transposed_jvp"
    back.__module__ = __name__
    return back


class _Transposing(threading.local):
    """(helper, primals) of each transposition under way in this thread, innermost
    last."""
    def __init__(self):
        self.stack: list = []


_TRANSPOSING_NOW = _Transposing()


def _reentered(helper: TangentHelper, args: tuple, wanted: list) -> tuple:
    """f's derived reverse rule met again while its jvp rule is being transposed: the
    rule calls f.  On the primals themselves (`r = f(a, b)` in ydot) the call's
    cotangents go to the primals, which that transposition does not need: zeros,
    exactly.  On other values (`f(t)` of the tangents, a linear f) transposing would
    never end: refused."""
    for h, primals in reversed(_TRANSPOSING_NOW.stack):
        if h is helper and len(primals) == len(args) and \
                all(a is p for a, p in zip(args, primals)):
            return tuple(None for _ in wanted)
    raise TypeError(f"adjoint: the jvp rule of {helper.of} calls {helper.of} on values "
                    f"other than its primals (its tangents?); reverse mode cannot "
                    f"transpose such a rule: give {helper.of} a custom_vjp")


def tangent_part(rule: TangentHelper, primals: tuple, tangents: tuple) -> Any:
    """`ydot` of a jvp rule, as a function of the tangents (transposed above)."""
    return rule.fn(primals, tangents)[1]


def _has_derivative(a: Any) -> bool:
    """Does value `a` hold a float (a number or array the transposed rule gives a
    cotangent)?  Refuses, clearly, the values it cannot transpose yet."""
    if isinstance(a, (bool, int, np.integer)):
        return False
    if isinstance(a, (float, np.floating)):
        return True
    if isinstance(a, np.ndarray):
        if a.dtype.kind == "c":
            _refuse_transposing(a)
        return a.dtype.kind == "f"
    if isinstance(a, (tuple, list)):
        return any([_has_derivative(v) for v in a])    # noqa: C419 (lowered: no generator)
    if isinstance(a, (complex, dict)) or is_record(a):
        _refuse_transposing(a)
    return False


def _refuse_transposing(a: Any) -> None:
    raise TypeError(f"adjoint: the reverse rule derived from a jvp rule does not support "
                    f"{type(a).__name__} arguments yet; give the function a custom_vjp")


def jvp_rule(f: Callable) -> Callable:
    """Decorator: `@adjoint.jvp_rule(f)` on `rule(primals, tangents) -> (y, ydot)`
    gives `f` that forward-mode rule where `f` is called in differentiated code.  With
    a reverse rule from `@adjoint.rule(f)` (registered first), `f` has both; without
    one, reverse mode transposes this rule (see the module docstring)."""
    def deco(rule: Callable) -> Callable:
        _give_jvp(f, rule, _name(f))
        return rule
    return deco


def _give_jvp(key: Any, rule: Callable, of: str, keep_reverse: bool = True) -> None:
    """Register jvp rule `rule` for callee `key` (named `of` in errors), keeping the
    reverse rule it has (with `keep_reverse`), else adding the transposed one."""
    helper = user_tangent_rule(rule, of)
    known = lookup_callee(key)
    if keep_reverse and known is not None and known.pullback is not None:
        known.jvp = _jvp_emitter(helper)       # e.g. a rule from @adjoint.rule
    else:
        pb = Pullback(_transposed(helper))
        pb.of = of
        pb.check = _check_cotangents(f"the reverse rule of {of} (its jvp rule "
                                     f"{_name(rule)} transposed)")
        entry = defpullback(key, pb)
        entry.jvp, entry.keeps_operands = _jvp_emitter(helper), True
    clear_cache()


class CustomJVPCall:
    """The call in the body of a `custom_jvp` function: the user's function, as a
    library callable whose rule is the user's jvp rule (`defjvp`).  The JIT compiles
    the function as a user function (`jit.pullback.custom_calls`)."""

    def __init__(self, fun: Callable):
        self.fun = fun
        self.of = _name(fun)
        self.__name__ = fun.__name__
        self.__qualname__ = fun.__qualname__
        self.__zygopy_symbol__ = f"{fun.__module__}.{fun.__qualname__}.call"

    def __call__(self, *args: Any) -> Any:
        return self.fun(*args)

    def __zygopy_explain__(self, *operands) -> str:
        return f"custom_jvp function {self.of}"

    def __repr__(self) -> str:
        return f"<custom_jvp call of {self.of}>"


def _no_rule_yet(of: str) -> Callable:
    """The rule of a custom_jvp function before its `defjvp`: a clear error."""
    def no_rule(*args: Any) -> None:
        raise TypeError(f"custom_jvp: {of} has no jvp rule yet; give it one with "
                        f"{of}.defjvp(rule) before differentiating it")
    no_rule.__name__ = no_rule.__qualname__ = "custom_jvp_without_rule"
    return no_rule


def custom_jvp(fun: Callable) -> Callable:
    """JAX's `custom_jvp`: a function like `fun`, given `f.defjvp(rule)` with
    `rule(primals, tangents) -> (y, ydot)`.  Forward mode uses the rule; reverse mode
    transposes it (one reverse pass over the rule, see the module docstring)."""
    names = _positional_names(fun, "custom_jvp")
    call = CustomJVPCall(fun)
    f = _generated(fun, fun.__name__, names, [f"return __zygopy_call__({', '.join(names)})"],
                   {"__zygopy_call__": call}, fun.__defaults__)
    f.__doc__, f.__wrapped__ = fun.__doc__, fun
    entry = defpullback(call, _no_rule_yet(call.of))
    entry.jvp, entry.keeps_operands = _no_rule_yet(call.of), True

    def defjvp(rule: Callable) -> Callable:
        _give_jvp(call, rule, call.of, keep_reverse=False)
        return rule
    f.defjvp = defjvp
    return f


# -- custom_vjp ----------------------------------------------------------------------------------
class CustomVJPCall:
    """The first call in the body of a `custom_vjp` function: `fwd(*args) -> (y,
    residuals)`, a library callable without a derivative (what flows back goes
    through `CustomVJPOutput`).  The JIT compiles `fwd` as a user function
    (`jit.pullback.custom_calls`)."""

    def __init__(self, fun: Callable):
        self.of = _name(fun)
        self.fwd = None
        self.__name__ = f"{fun.__name__}_fwd"
        self.__qualname__ = f"{fun.__qualname__}.fwd"
        self.__zygopy_symbol__ = f"{fun.__module__}.{fun.__qualname__}.fwd"

    def __call__(self, *args: Any) -> tuple:
        if self.fwd is None:
            raise TypeError(f"custom_vjp: {self.of} has no rule yet; call "
                            f"{self.of}.defvjp(fwd, bwd) before calling it")
        out = self.fwd(*args)
        if not isinstance(out, tuple) or len(out) != 2:
            raise TypeError(f"custom_vjp: fwd {_name(self.fwd)} of {self.of} must return "
                            f"a pair (y, residuals); got {type(out).__name__}")
        return out

    def __zygopy_explain__(self, *operands) -> str:
        return f"the fwd of custom_vjp function {self.of}"

    def __repr__(self) -> str:
        return f"<custom_vjp fwd of {self.of}>"


class CustomVJPOutput:
    """The second call in the body of a `custom_vjp` function: `out(y, residuals,
    *args)` is `y`; its derivative rule (set by `defvjp`) is the user's `bwd`: the
    cotangents of `args` are `bwd(residuals, dy)`, checked (`checked_cotangents`)."""

    def __init__(self, fun: Callable):
        self.of = _name(fun)
        self.__name__ = f"{fun.__name__}_output"
        self.__qualname__ = f"{fun.__qualname__}.output"
        self.__zygopy_symbol__ = f"{fun.__module__}.{fun.__qualname__}.output"

    def __call__(self, y: Any, residuals: Any, *args: Any) -> Any:
        return y

    def __zygopy_explain__(self, *operands) -> str:
        return f"the output of custom_vjp function {self.of}"

    def __repr__(self) -> str:
        return f"<custom_vjp output of {self.of}>"


def checked_cotangents(g: Any, who: str, *args: Any) -> tuple:
    """What a user's `bwd` returned (`g`), checked: a tuple of one cotangent per
    argument in `args`, each of its argument's structure and shape; errors name the
    user's function (`who`).  (The JIT checks the same, `jit.pullback.custom_calls`.)"""
    n = len(args)
    if not isinstance(g, tuple):
        raise TypeError(f"{who} must return a tuple of {n} cotangent{'s' if n != 1 else ''}"
                        f" (one per argument), got {type(g).__name__}")
    if len(g) != n:
        raise TypeError(f"{who} returned {len(g)} cotangent{'s' if len(g) != 1 else ''} "
                        f"for {n} argument{'s' if n != 1 else ''}")
    return tuple(conform(x, t, f"{who}: cotangent {k}") for k, (x, t) in enumerate(zip(args, g)))


def dense_cotangent(dy: Any, y: Any) -> Any:
    """`dy`, the cotangent of output `y`, with a zero where nothing reached a part of
    it: `bwd` always gets `y`'s structure (JAX instantiates zeros too)."""
    if dy is None:
        return zero_tangent(y)
    if isinstance(y, (tuple, list)) and isinstance(dy, (tuple, list)):
        parts = [dense_cotangent(d, v) for d, v in zip(dy, y)]
        return tuple(parts) if isinstance(dy, tuple) else parts
    return dy


def d_dense_cotangent(g: Any, dy: Any, y: Any) -> tuple:
    """Filling zeros is the identity on what flowed (nested reverse mode)."""
    return (g, None)


defpullback(dense_cotangent, d_dense_cotangent, needs=lambda active: set())


def d_checked_cotangents(dy: Any, g: Any, who: str, *args: Any) -> tuple:
    """The check is the identity on `g` (differentiated again: nested reverse mode)."""
    return (dy, None) + (None,) * len(args)


defpullback(checked_cotangents, d_checked_cotangents, needs=lambda active: set())


def custom_vjp(fun: Callable) -> Callable:
    """JAX's `custom_vjp`: a function like `fun`, given `f.defvjp(fwd, bwd)` with
    `fwd(*args) -> (y, residuals)` and `bwd(residuals, dy) -> tuple` (one cotangent per
    positional argument, None for none).  Calls of it run `fwd` (and drop the
    residuals); reverse mode passes what `fwd` returned to `bwd`; forward mode refuses
    it (give the function a `custom_jvp` instead)."""
    names = _positional_names(fun, "custom_vjp")
    fwd, out = CustomVJPCall(fun), CustomVJPOutput(fun)
    params = ", ".join(names)
    f = _generated(fun, fun.__name__, names,
                   [f"y, residuals = __zygopy_fwd__({params})",
                    f"return __zygopy_out__(y, residuals{''.join(', ' + a for a in names)})"],
                   {"__zygopy_fwd__": fwd, "__zygopy_out__": out}, fun.__defaults__)
    f.__doc__, f.__wrapped__ = fun.__doc__, fun
    nondiff(fwd)
    lookup_callee(fwd).keeps_operands = True     # fwd may return x, as y or a residual

    def defvjp(fwd_rule: Callable, bwd_rule: Callable) -> None:
        fwd.fwd = fwd_rule
        pb = Pullback(_back_of(fun, len(names), bwd_rule))
        pb.of = out.of
        pb.__zygopy_symbol__ = f"{fun.__module__}.{fun.__qualname__}.bwd"
        entry = defpullback(out, pb)
        entry.jvp, entry.keeps_operands = _refuse_forward(out), True   # (its y is fwd's)
        clear_cache()
    f.defvjp = defvjp
    return f


def _back_of(fun: Callable, n: int, bwd: Callable) -> types.FunctionType:
    """The pullback of a custom_vjp function's output call `out(y, residuals, *args)`:
    `bwd(residuals, dy)` checked, one cotangent per operand (None for y and the
    residuals)."""
    args = [f"a{k}" for k in range(n)]
    who = f"custom_vjp: bwd {_name(bwd)} of {_name(fun)}"
    check = ("g = __zygopy_check__(__zygopy_bwd__(residuals, __zygopy_dense__(dy, y)), "
             f"__zygopy_who__{''.join(', ' + a for a in args)})")
    return _generated(fun, "bwd_call", ["dy", "y", "residuals"] + args, [
        check, f"return (None, None{''.join(f', g[{k}]' for k in range(n))})"],
        {"__zygopy_bwd__": bwd, "__zygopy_who__": who, "__zygopy_check__": checked_cotangents,
         "__zygopy_dense__": dense_cotangent})


def _refuse_forward(out: CustomVJPOutput) -> Callable:
    def jvp(em, s, ts):
        raise TypeError(f"jvp: {out.of} is a custom_vjp function, which has no forward-"
                        "mode derivative (as in JAX); give it a custom_jvp rule instead")
    return jvp


def _check_cotangents(who: str) -> Callable:
    """`Pullback.check` for a reverse rule made here: `checked_cotangents`."""
    def check(pb: Pullback, out: tuple, operands: tuple) -> tuple:
        return checked_cotangents(out, who, *operands)
    return check
