"""A call of a user function the JIT cannot compile: that call site runs in Python,
the code around it stays compiled (`jit.runtime.host_pullbacks`).

    %t = jcall(f, %tape, kwnames, args...)   -> (y, HostPBT)
    %g = jback(%pb, %reader, %dy, %cur)     -> new cotangents of (f, args...)
    %y = call(f, args...)                   (no operand differentiated)

`host_jcall` is the type rule `jit.pullback.jcalls` falls back on when lowering or
typing the callee fails.  The forward host-calls the interpreter's pullback of f and
pushes the handle of its `back` on the tape; the adjoint pops the handle and
host-calls `back(dy)`, whose cotangents join those of the jcall operands.  When no
operand is differentiated the jcall is plain CPython and the tape is not touched.
`host_call` does the same for a plain `call` that cannot be typed
(`jit.typing.infer.CALL_FALLBACKS`): CPython runs it, or the interpreter for a
function zygopy generated (a callee's tangent function in forward mode).

The callee's result type is the one an interpreted run saw (`ResultTypeNeeded` until
then, where the runner can learn it).  Operands and results: numbers, float and int
arrays, tuples of them.  A callee that lowering refuses runs only where no operand is
differentiated (the interpreter cannot differentiate it); elsewhere the lowering's
error stands.  One `CallSiteFallbackWarning` per call site.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llvmlite import ir as L

from ssair.compile_lock import defer_warning
from ssair.ir import Const

from jit.codegen.function import FunctionGen, lltype
from jit.codegen.host_calls import call_host, operand_recipe
from jit.pullback.array_values import unless_none
from jit.pullback.tape_ops import pop_value, push_value
from jit.runtime import host_pullbacks as hp
from jit.runtime.host_calls import HostSite
from jit.library.registry import Impl
from jit.typing.infer import CALL_FALLBACKS, Call, Context, LiteralT
from jit.typing.refusals import names_internals
from jit.typing.unroll import RetypeNeeded
from jit.types import BOOL, FLOAT64, INT64, NONE, ArrayT, FunctionT, TupleT, Type

_WARNED: set = set()
# what typing raises to be retried, not a refusal of the callee
_NOT_REFUSALS = (hp.ResultTypeNeeded, RetypeNeeded)


class CallSiteFallbackWarning(RuntimeWarning):
    """One call site runs in Python (the interpreter or CPython); the function around
    it stays compiled."""


@dataclass(frozen=True, repr=False)
class HostPBT(Type):
    """The pullback token of a jcall run by the interpreter: its handle is on the tape
    when `active`; `grads` are the cotangent types of the jcall operands."""

    name: str
    fid: int
    grads: tuple
    active: bool
    fn: Any = field(compare=False, hash=False, default=None)
    token = True

    def __str__(self) -> str:
        return f"pullback(interpreted {self.name})"


def crosses(t: Type) -> bool:
    """Numbers, float/int/bool arrays and tuples of them: what a host pullback takes."""
    if t in (FLOAT64, INT64, BOOL) or isinstance(t, ArrayT):
        return True
    if isinstance(t, TupleT) and type(t) is TupleT:
        return all(crosses(e) for e in t.elems)
    return False


def host_jcall(ctx: Context, s, ft: Type, why: Exception) -> Type:
    """The type of jcall `s` of the user function `ft.func` run by the interpreter, or
    `why` raised again where that cannot be done."""
    from jit.pullback.cotangents import cotangent_type
    from lowering import UnsupportedError
    if isinstance(why, _NOT_REFUSALS) or not isinstance(ft, FunctionT):
        raise why
    f = ft.func
    kwnames = tuple(ctx.const(s.args[2], ()))
    operands = list(s.args[3:])
    types = [ctx.type_of(a) for a in operands]
    runtime = [t for a, t in zip(operands, types) if not _baked(a, t)]
    active = any(cotangent_type(t) != NONE for t in runtime)
    if active and isinstance(why, UnsupportedError):
        raise why            # the interpreter cannot differentiate it either
    if active and _writes_into_arguments(f, types):
        raise why            # its writes would reach the interpreter's copies only
    y = _result_type(ctx, s, f, operands, types, why)
    ctx.typing.host_pullbacks |= active
    grads = tuple(cotangent_type(t) for t in types)
    return TupleT((y, HostPBT(_name(f), id(f), grads, active, (f, kwnames))))


def _writes_into_arguments(f: Any, types: list) -> bool:
    """May `f` write into an array it is passed (its J transform's in-out arguments)?
    Where that cannot be told, yes."""
    from adjoint.transform import transform
    from jit.pullback.cotangents import cotangent_type
    from adjoint.transform import lower_function as lowered
    active = tuple(0 if cotangent_type(t) == NONE else 2 if isinstance(t, ArrayT) else 1
                   for t in types)
    try:
        return bool(transform(lowered(f), active, tuple(map(str, types))).inout)
    except Exception:       # noqa: BLE001  (the whole function's fallback says why)
        return True


def host_call(ctx: Context, s, ts, why: Exception) -> Type:
    """The type of the plain call `s` (no operand differentiated) of a user function
    that cannot be lowered or typed: CPython runs it (the interpreter a function
    zygopy generated, such as a callee's tangent), or `why` is raised again."""
    if isinstance(why, _NOT_REFUSALS) or not isinstance(ts[0], FunctionT):
        raise why
    f = ts[0].func
    operands = list(s.args[1:]) + list(s.kwargs.values())
    y = _result_type(ctx, s, f, operands, [ctx.type_of(a) for a in operands], why)
    ctx.typing.impls[s.var] = PYTHON_CALL
    return y


def _result_type(ctx: Context, s, f: Any, operands: list, types: list,
                 why: Exception) -> Type:
    """The result type a host call of `f` is compiled for (learned from a run), after
    checking what crosses; warns once for the call site.  Records the call."""
    from adjoint.special_callees import own_rule_code
    runtime = [t for a, t in zip(operands, types) if not _baked(a, t)]
    if not all(crosses(t) for t in runtime) or own_rule_code(f):
        raise why     # (zygopy's own rule code: the whole function's fallback names it)
    y = hp.RESULT_TYPES.get(hp.result_key(f, tuple(_key_type(t) for t in types)))
    if y is None and not hp.can_learn():
        raise why
    _warn(ctx, s, f, why)
    if y is None:
        raise hp.ResultTypeNeeded(f"jit: the result type of {_name(f)} is not known until "
                                  "it has run", (f,))
    if not crosses(y):
        ctx.fail(f"{_name(f)} runs in the interpreter, and its result (a {y}) cannot "
                 "be passed back to compiled code")
    ctx.typing.calls[s.var] = Call(None, operands, f)
    return y


def _baked(a: Any, t: Type) -> bool:
    """An operand `operand_recipe` bakes into the site (a constant)."""
    return isinstance(t, (LiteralT, FunctionT)) or isinstance(a, Const)


def _key_type(t: Type) -> Type:
    """The type `typeof` gives the value of an operand typed `t` (a literal's value's)."""
    from jit.types import TypingError, typeof
    if not isinstance(t, LiteralT):
        return t
    try:
        return typeof(t.value)
    except TypingError:
        return t


def _name(f: Any) -> str:
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", repr(f))


def _warn(ctx: Context, s, f: Any, why: Exception) -> None:
    """Once per call site: where it is, what runs in the interpreter, and why (shown
    at the call's own file and line)."""
    ir = ctx.typing.ir
    caller = _user_name(ir.meta.get("source_name", ir.name))
    file, line = getattr(ir, "file", None) or "?", s.line or ir.firstline or 0
    callee = _user_name(_name(f))
    if (file, line, caller, callee) in _WARNED:
        return
    _WARNED.add((file, line, caller, callee))
    reason = str(why).split("\n")[0].replace(_AUTO_NOTE, "")
    if names_internals(f"{file} {reason}"):     # inside zygopy's own library code
        defer_warning("zygopy: a step of a library function's compiled code runs in "
                      "Python (slower, same result); this is zygopy's limitation, worth "
                      "reporting", CallSiteFallbackWarning)
        return
    # (given when the compilation returns: `ssair.compile_lock.defer_warning`)
    defer_warning(f"zygopy: the call of {callee} in {caller} at {file}:{line} runs in "
                  f"Python (the rest of {caller} stays compiled): {reason}",
                  CallSiteFallbackWarning, file, line)


_AUTO_NOTE = " (backend='auto' runs it in the interpreter)"


def _user_name(name: str) -> str:
    """The user's name of a function zygopy derived (`f_forward`, `f_tangent`)."""
    for suffix in ("_forward", "_tangent"):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


# -- the forward ------------------------------------------------------------------------

def cg_host_jcall(fc: FunctionGen, s, ts) -> L.Value:
    """The host call of the interpreter's forward; its handle pushed on the tape."""
    call = fc.typing.calls[s.var]
    y_t, pb = s.type.elems
    f, kwnames = pb.fn
    if pb.active:
        fn, kwnames = positional(f, len(call.operands) - len(kwnames), kwnames), ()
        result = TupleT((y_t, INT64))
    else:
        fn, result = f, y_t
    recipe, values = operand_recipe(fc, call.operands)
    site = HostSite(hp.forward_caller(fn, pb.name, pb.active, y_t), pb.name, recipe,
                    kwnames, result)
    r = call_host(fc, site, values)
    out = L.Constant(lltype(s.type), L.Undefined)
    if not pb.active:
        return fc.b.insert_value(out, r, 0)
    push_value(fc, fc.get(s.args[1]), fc.b.extract_value(r, 1), INT64)
    return fc.b.insert_value(out, fc.b.extract_value(r, 0), 0)


def positional(f: Any, npos: int, kwnames: tuple) -> Any:
    """`f` as a function of positional parameters only (keywords last, in `kwnames`
    order), so that the interpreter's pullback gives a cotangent to each."""
    if not kwnames:
        return f
    params = [f"a{i}" for i in range(npos)] + [f"k{i}" for i in range(len(kwnames))]
    passed = params[:npos] + [f"{k}=k{i}" for i, k in enumerate(kwnames)]
    ns = {"_callee": f, "__name__": getattr(f, "__module__", None) or "__main__"}
    exec(f"def {f.__name__}({', '.join(params)}):\n"
         f"    return _callee({', '.join(passed)})\n", ns)
    return ns[f.__name__]


def _lower_python_call(fc: FunctionGen, s, ts) -> L.Value:
    f = fc.typing.calls[s.var].callee
    recipe, values = operand_recipe(fc, list(s.args[1:]) + list(s.kwargs.values()))
    fn = hp.forward_caller(_runnable(f), _name(f), False, s.type)
    return call_host(fc, HostSite(fn, _name(f), recipe, tuple(s.kwargs), s.type), values)


def _runnable(f: Any) -> Any:
    """`f`, or the interpreter's run of a function zygopy generated (a stub with IR)."""
    if not getattr(f, "__zygopy_generated__", None):
        return f
    from ssair import interpret
    from jit.typing.infer import lower_function
    return lambda *args: interpret(lower_function(f), *args)


_lower_python_call.native = "host call"
PYTHON_CALL = Impl("a user function the JIT cannot compile, run by Python", None,
                   host_call, _lower_python_call)
CALL_FALLBACKS.append(host_call)


# -- the adjoint ------------------------------------------------------------------------

def t_host_jback(ctx: Context, s, ts) -> Type:
    from jit.pullback.cotangents import accum_type
    pb, cur = ts[0], ts[3]
    grads = pb.grads if pb.active and ts[2] != NONE else (NONE,) * len(pb.grads)
    out = (NONE,) + grads
    curs = cur.elems if isinstance(cur, TupleT) else (NONE,) * len(out)
    try:
        return TupleT(tuple(accum_type(c, g) for c, g in zip(curs, out)))
    except TypeError as e:
        ctx.fail(str(e))


def cg_host_jback(fc: FunctionGen, s, ts) -> L.Value:
    """Pop the handle, host-call `back(dy)`, add its cotangents to the current ones."""
    from jit.pullback.cotangents import accum_values
    pb, dy_t, cur_t = ts[0], ts[2], ts[3]
    parts = [(None, NONE)] * (1 + len(pb.grads))
    if pb.active:
        hid = pop_value(fc, fc.get(s.args[1]), INT64)
        if dy_t != NONE:
            parts = [(None, NONE)] + _cotangents(fc, pb, hid, fc.get(s.args[2]), dy_t)
    cur = fc.get(s.args[3])
    result = L.Constant(lltype(s.type), L.Undefined)
    for i, ((v, vt), want) in enumerate(zip(parts, s.type.elems)):
        c, ct = (fc.b.extract_value(cur, i), cur_t.elems[i]) if isinstance(cur_t, TupleT) \
            else (None, NONE)
        result = fc.b.insert_value(result, accum_values(fc, c, ct, v, vt, want), i)
    return result


def _cotangents(fc: FunctionGen, pb: HostPBT, hid, dy, dy_t: Type) -> list:
    """(value, type) of the cotangent `back(dy)` gives each operand."""
    want = TupleT(pb.grads)
    site = HostSite(hp.backward_caller(pb.name), f"the pullback of {pb.name}",
                    [("slot", INT64), ("slot", dy_t)], (), want, cotangents=True,
                    cotangent_args=(1,))
    g = unless_none(fc, dy_t, dy, lambda: call_host(fc, site, [hid, dy]), want)
    return [(fc.b.extract_value(g, i), e) for i, e in enumerate(want.elems)]
