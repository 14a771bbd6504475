"""The escape hatch: Python called from compiled code for its effect, through the host
callback (`jit.runtime.host_calls`), the rest of the function staying native.

  * `print` of numbers, strings, arrays and tuples (a registry entry);
  * any other callable that has no registry entry (a module-level object's method,
    `LOG.append(v)`, `logger.info(...)`, `time.sleep`), when its result is unused:
    compiled code could not know that result's type before the call, so a use of it
    is refused, saying so (`effect_call`, asked by inference through
    `UNTYPED_CALLS`).  In a differentiated function the J transform's `jcall` of one
    types to a pullback that gives no cotangent (`jit.pullback.jcalls`), as the
    interpreter's `OpaquePB`.
Arguments reach the callee as they reach numpy (numbers, strings, read-only array
views, tuples); the arrays an effect call gets are copies, since it may keep them.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ssair.ir import Const

from jit.codegen.host_calls import call_host, lower_library_call, operand_recipe
from jit.library.numpy_calls import host_rule
from jit.library.registry import REGISTRY, Impl
from jit.runtime.host_calls import HostSite, passable
from jit.typing.infer import UNTYPED_CALLS, Call, Context, LiteralT
from jit.types import NONE, PythonCallable, Type


def _t_print(ctx: Context, s, ts: list) -> Type:
    host_rule("print", "*values, sep=' ', end='\\n', file=None, flush=False",
              lambda a: NONE)(ctx, s, ts)
    if "file" in s.kwargs:
        ctx.fail("print(file=...) is not compiled")
    return NONE


def unwrapped(f: Any) -> Any:
    return f.fn if isinstance(f, PythonCallable) else f


def check_effect_call(ctx: Context, fn: Any, result_used: bool, argtypes: list) -> None:
    """Refuse an effect call whose result compiled code reads, or an argument that
    cannot be passed to Python."""
    if result_used:
        from ssair.printer import object_name
        ctx.fail(f"the JIT has no rule for calling {object_name(fn)}: it calls such a "
                 "function only for its effect, and here its result is used")
    for t in argtypes:
        if not isinstance(t, LiteralT) and not passable(t):
            ctx.fail(f"a {t} cannot be passed to a Python function from compiled code")


def effect_call(ctx: Context, s, ts: list):
    """The type rule of a call of a callable with no registry entry: NONE, the call
    made for its effect; None (not this case) for a value that is not callable."""
    fn = unwrapped(ts[0].func)
    if not callable(fn):
        return None
    check_effect_call(ctx, fn, bool(ctx.typing.use_counts().get(s.var)),
                      list(ts[1:]) + [ctx.type_of(v) for v in s.kwargs.values()])
    _refuse_store(ctx, fn, s)
    ctx.typing.impls[s.var] = EFFECT_CALL
    ctx.typing.calls[s.var] = Call(None, list(s.args[1:]), fn)
    return NONE


def _refuse_store(ctx: Context, fn: Any, s) -> None:
    """An effect call gets copies of its arrays, so a numpy function that stores into
    its array argument (`np.fill_diagonal(a, v)`, `np.add.at(a, i, v)`, `out=a`) would
    store into a copy: refused, naming it, rather than silently doing nothing."""
    from adjoint.transform import WRITES_INTO_ARGUMENT
    from ssair.printer import object_name
    owner = getattr(fn, "__self__", None)
    if any(fn is g for g in WRITES_INTO_ARGUMENT) or isinstance(owner, np.ufunc) \
            or "out" in s.kwargs:
        ctx.fail(f"{object_name(fn)} stores into an array argument, which compiled code "
                 "does not hand to Python (write the result out of place, e.g. "
                 "`a = a + v`, or index the array: `a[i, i] = v`)")


def _lower_effect_call(fc, s, ts):
    from ssair.printer import object_name
    fn = unwrapped(s.args[0].value if isinstance(s.args[0], Const)
                   else fc.type_of(s.args[0]).func)
    recipe, values = operand_recipe(fc, list(s.args[1:]) + list(s.kwargs.values()))
    site = HostSite(_for_effect(fn), object_name(fn), recipe, tuple(s.kwargs), NONE)
    return call_host(fc, site, values)


_lower_effect_call.native = "host call"
EFFECT_CALL = Impl("a Python callable, for its effect", None, effect_call, _lower_effect_call,
                   numpy_too=True)


def _for_effect(fn):
    """`fn` called with copies of the arrays it gets (it may keep them: the views of
    compiled memory die with the call), its result dropped."""
    def call(*args, **kwargs):
        fn(*[_owned(a) for a in args], **{k: _owned(v) for k, v in kwargs.items()})
    return call


def _owned(v):
    if isinstance(v, np.ndarray):
        return v.copy()
    if isinstance(v, (tuple, list)):
        return type(v)(_owned(x) for x in v)
    if isinstance(v, dict):
        return {k: _owned(x) for k, x in v.items()}
    return v


REGISTRY.declare(builtins.print, family="escape hatch", pattern="numbers, strings, "
                 "arrays, tuples", types=_t_print, lower=lower_library_call, numpy_too=True)
UNTYPED_CALLS.append(effect_call)
