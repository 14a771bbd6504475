"""Type rules and LLVM lowering of `jcall` / `jback`: calls between J-transformed
functions, compiled as native calls on one shared tape (see adjoint.transform for
their interpreter semantics).

    %t = jcall(f, %tape, kwnames, args...)   -> tuple(y, pb)
    %g = jback(%pb, %reader, %dy, %cur)     -> new cotangents of (f, args...)

The callee is resolved at compile time from the type of its operand (a function
constant, a `function(...)` value or a closure).  Its forward IR (for the activity
its argument types imply) is compiled for `(tape, captured..., params...)`; it
returns `(y, env)`.  The compiled `jcall` pushes that env onto the tape right after
the callee's own pushes and yields a `pb` token of type `CallPBT`, which carries no
data: the callee's env lives on the tape, so a recursive function's env stays a
finite type.  `jback` pops the env back (the adjoint pops in exact reverse order,
so the reader stands right behind it), calls the callee's adjoint with the same
reader, routes its per-parameter cotangents to the jcall operands and adds the
current ones `cur`.

A user function that cannot be lowered or typed becomes a call into the interpreter
from compiled code (`jit.pullback.host_jcalls`): only that call site leaves native code.

Not compiled (TypingError, so backend="auto" falls back to the interpreter): a callee
with a derivative rule called through a value, library callees without rules, and callees that write into array arguments (in-out cotangents).
A nested `gradient` / `value_and_grad` call compiles as a call with a rule whose
pullback is a Hessian-vector product (`_t_gradient_jcall`, `adjoint.nested_hv`).
"""
from __future__ import annotations

import functools
import types as pytypes
from dataclasses import dataclass, field
from typing import Any, Optional

from llvmlite import ir as L

from adjoint.options import accepts_keyword
from lowering import UnsupportedError
from lowering.guards import on_invalidate
from ssair.compile_lock import compiling
from ssair.ir import IR, Const

from jit.codegen.function import FunctionGen, codegen, lltype
from jit.pullback.array_values import unless_none
from jit.pullback.host_jcalls import HostPBT, cg_host_jback, cg_host_jcall, host_jcall, t_host_jback
from jit.pullback.tape_ops import pop_value, push_value, static_phis
from jit.typing.infer import (Call, Context, Packed, bind_operands,
                              call_argument_type, is_user_function, lower_function,
                              option_type, rule)
from jit.types import (
    BOOL,
    FLOAT32,
    FLOAT64,
    INT64,
    NONE,
    READER,
    TAPE,
    ArrayT,
    BuiltListT,
    ClosureT,
    FunctionT,
    PythonCallable,
    RecordT,
    TupleT,
    Type,
    TypingError,
)
from jit.library.records import RECEIVER, object_call


@dataclass(frozen=True, repr=False)
class CallPBT(Type):
    """The pullback token of a compiled jcall: which callee J (`jid`, the id of its
    `JFunction`) with which argument types, and how the jcall operands map onto the
    callee's parameters (`slots`, `nfree`, `closure`).  No runtime data (`token`)."""

    jid: int
    argtypes: tuple
    slots: tuple
    nfree: int
    closure: bool
    jf: Any = field(compare=False, hash=False, default=None)
    token = True

    def __str__(self) -> str:
        return f"pullback({self.jf.primal.name if self.jf else self.jid})"


def type_activity(t: Type) -> int:
    """`adjoint.transform.activity_of` computed from a JIT type."""
    if t == FLOAT64 or t == FLOAT32:
        return 1
    if isinstance(t, ArrayT):
        return 2 if t.dtype in (FLOAT64, FLOAT32) else 0
    if isinstance(t, BuiltListT):
        return 1 if type_activity(t.elem) else 0
    if isinstance(t, TupleT):
        return 1 if any(type_activity(e) for e in t.elems) else 0
    if isinstance(t, ClosureT):
        return 1 if any(type_activity(e) for e in t.captured) else 0
    return 0


def _callee(ctx: Context, ft: Type, nargs: Optional[int] = None) -> tuple:
    """(function or IR, captured types, is a closure) of a jcall's callee operand
    (called with `nargs` positional operands, None: with keywords).  A rule's
    pullback called by a tangent function is its Python code's caller
    (`adjoint.generated.pullback_caller`), differentiated like user code."""
    from adjoint.rules import lookup_callee
    from adjoint.generated import pullback_caller
    from adjoint.rule_table import Pullback
    from adjoint.transform import _special, own_rule_code, rule_function
    if isinstance(ft, ClosureT):
        return ft.func, list(ft.captured), True
    call = object_call(ft)
    if call is not None:     # `layer(x)`: its class's `__call__`, the object captured
        return call, [ft], RECEIVER
    if not isinstance(ft, FunctionT):
        ctx.fail(f"jcall of a value of type {ft} is not supported")
    f = rule_function(ft.func)     # forward mode's rule object: its Python function
    if isinstance(f, functools.partial):
        ctx.fail(f"a functools.partial of {getattr(f.func, '__qualname__', f.func)} "
                 "passed as a value is not compiled yet")
    if _nested_gradient(f):
        return f, None, False   # by its Hessian-vector rule (`_t_gradient_jcall`)
    if isinstance(f, Pullback) and nargs is not None:
        return pullback_caller(f, nargs), [], False
    if _special(f) is not None:
        ctx.fail("nested differentiation (gradient/pullback inside differentiated code) "
                 "is not compiled")
    if lookup_callee(f) is not None:
        return f, None, False   # a rule of the table (math.sin passed as a value)
    if isinstance(f, IR) or (type(f) is pytypes.FunctionType
                             and (is_user_function(f) or own_rule_code(f))):
        return f, [], False
    if isinstance(f, PythonCallable) or callable(f):
        return f, None, False   # called for its effect (see _t_effect_jcall)
    ctx.fail(f"{ft} has no derivative rule and is not a Python function")


@rule("jcall")
def _t_jcall(ctx: Context, s, ts) -> Type:
    if ts[1] != TAPE:
        ctx.fail(f"jcall on a {ts[1]}, not a tape")
    f, captured, closure = _callee(ctx, ts[0], None if ctx.const(s.args[2], ()) else
                                   len(s.args) - 3)
    if captured is None:
        return _t_rule_jcall(ctx, s, f)
    try:
        return _t_user_jcall(ctx, s, ts, f, captured, closure)
    except (TypingError, UnsupportedError) as why:
        if isinstance(f, IR) or captured or closure:
            raise
        return host_jcall(ctx, s, ts[0], why)


def _t_user_jcall(ctx: Context, s, ts, f: Any, captured: list, closure: Any) -> Type:
    """The jcall of a user function compiled with its caller (on the same tape)."""
    from adjoint.passes.hidden_writes import refuse_hidden_writes, view_operands
    from adjoint.transform import lower_function as lowered, transform
    ir = f if isinstance(f, IR) else lowered(f)     # the transform's input, as lowered
    kwnames = tuple(ctx.const(s.args[2], ()))
    rest = list(s.args[3:])
    npos = len(rest) - len(kwnames)
    operands, slots = bind_operands(ctx, ir, f, rest[:npos], kwnames, rest[npos:])
    options = getattr(f, "__zygopy_options__", ())    # a bound array method's (infer)
    names = [a.name for a in ir.args[ir.nfree:]]
    argtypes = tuple(captured) + tuple(
        option_type(ctx, a) if k < len(names) and names[k] in options
        else call_argument_type(ctx, a) for k, a in enumerate(operands))
    ir = _unrolled(ctx, ir, argtypes)
    jf = transform(ir, tuple(type_activity(t) for t in argtypes),
                   tuple(str(t) for t in argtypes))
    refuse_hidden_writes(f, jf, [False] * len(captured) + view_operands(
        ctx.typing.ir, operands, lambda v: isinstance(ctx.type_of(v), TupleT)),
        [t in (FLOAT64, FLOAT32, INT64, BOOL) for t in argtypes],
        f" at {ctx.typing.ir.file}:{s.line}")
    if closure and any(writes_into(ctx.engine, ctx.engine.infer(ir, argtypes), k)
                       for k in jf.inout if k < len(captured)):
        ctx.fail(f"{ir.name} writes into an array it captured; such closures are not "
                 "compiled yet")
    target = ctx.engine.infer(jf.forward, (TAPE,) + argtypes)
    ctx.typing.host_pullbacks |= target.host_pullbacks
    ctx.typing.calls[s.var] = Call(target, operands, f)
    y = _result_type(ctx, ir, argtypes, target)
    if y is None:
        return None
    pb = CallPBT(id(jf), argtypes, slots, len(captured), closure, jf)
    return TupleT((y, pb))


def writes_into(engine: Any, t: Any, k: int, seen: Optional[set] = None) -> bool:
    """May the function typed `t` write into its parameter `k`, or a view of it, itself
    or through the user functions it calls?  (The transform's `inout` counts every
    array passed to a user call; a closure that only reads what it captured is
    compiled.)  Values computed from the parameter count as views of it."""
    seen = set() if seen is None else seen
    if (id(t), k) in seen:
        return False      # a recursive call: the other paths decide
    seen.add((id(t), k))
    derived = {t.ir.args[k].var}
    changed = True
    while changed:
        changed = False
        for b in t.ir.blocks:
            for d in list(b.phis) + list(b.stmts):
                ops = d.incoming.values() if hasattr(d, "incoming") else d.operands()
                if d.var not in derived and any(_derived(o, derived) for o in ops) \
                        and isinstance(t.types.get(d.var), (ArrayT, TupleT, ClosureT)):
                    derived.add(d.var)
                    changed = True
    for b in t.ir.blocks:
        for s in b.stmts:
            if s.op == "setitem" and _derived(s.args[0], derived):
                return True
            call = t.calls.get(s.var)
            if call is None or call.target is None:
                continue           # a library call: numpy reads what it is given
            target = engine.table.get(call.target.key, call.target)
            if any(_derived(o, derived) and writes_into(engine, target, j, seen)
                   for j, o in enumerate(call.operands)):
                return True
    return False


def _derived(o: Any, derived: set) -> bool:
    from ssair.ir import Var
    if isinstance(o, Packed):
        return any(_derived(x, derived) for x in o.operands)
    return isinstance(o, Var) and o in derived


def _unrolled(ctx: Context, ir: IR, argtypes: tuple) -> IR:
    """The callee's IR to differentiate: with the loops over tuples of differently typed
    entries that its typing unrolled, unrolled (the forward then records, and the
    adjoint reads, one entry's values per copy)."""
    try:
        return ctx.engine.infer(ir, argtypes).unrolled or ir
    except Exception:       # noqa: BLE001  (the forward's typing reports what fails)
        return ir


def _result_type(ctx: Context, ir: IR, argtypes: tuple, forward: Any) -> Any:
    """The callee's result type: the primal's (its typing converges through
    recursion, as it does not carry the pullback tokens), else the forward's."""
    from jit.types import TypingError
    try:
        return ctx.engine.infer(ir, argtypes).ret
    except TypingError:
        ret = forward.ret
        return ret.elems[0] if isinstance(ret, TupleT) else None


@dataclass(frozen=True, repr=False)
class RulePBT(Type):
    """The pullback token of a jcall of a function with a derivative rule: the values
    its rule reads (`saved`: the result when the rule uses it, then the arguments)
    are pushed on the tape; `jback` pops them and calls the rule."""

    fid: int
    saved: tuple
    nops: int
    rule: Any = field(compare=False, hash=False, default=None)
    token = True

    def __str__(self) -> str:
        return "pullback(rule)"


def _fake_call(s, f, operands: list, var=None):
    from ssair.ir import Stmt
    return Stmt(s.var if var is None else var, "call", [Const(f)] + list(operands),
                line=s.line)


def _nested_gradient(f: Any) -> bool:
    """Is `f` `gradient` or `value_and_grad`, whose jcall `_t_gradient_jcall` types?"""
    from adjoint import api
    return f is api.gradient or f is api.value_and_grad


def _type_name(t: Type):
    """The scalar analysis' type name of a JIT type (`adjoint.passes.inplace.arg_type`)."""
    if t in (FLOAT64, INT64, BOOL) or isinstance(t, ArrayT):
        return str(t)
    return None


def _nested_argument(t: Type) -> bool:
    """A type a nested gradient's argument may have: a number, an array, or a tuple,
    dict or named tuple of those (a pytree of parameters)."""
    if t in (FLOAT64, INT64, BOOL) or isinstance(t, ArrayT):
        return True
    return isinstance(t, TupleT) and all(_nested_argument(e) for e in t.elems)


def _t_gradient_jcall(ctx: Context, s, f: Any, operands: list, argtypes: tuple) -> Type:
    """A nested `gradient(f, *xs)` / `value_and_grad(f, *xs)` jcall, typed as a call
    with a rule: its primal is the nested gradient compiled in place (for the key
    `("nested", var)`, `jit.pullback.nested_gradient`); f and xs go on the tape; its
    adjoint calls the rule `adjoint.nested_hv.gradient_pullback` generates for f's
    code and these types (`H dz`, one more nested gradient, of f's tangent function),
    plain Python compiled like any rule; a closure's captured values get their
    cotangents through it (`captured_values`).  Refused (a TypingError): keywords and
    a callee that is not a Python function."""
    from adjoint.generated import fixed_arity, library_caller
    from adjoint.nested_hv import gradient_pullback, library_callee
    from jit.library.registry import REGISTRY
    nops = 1 + len(operands)
    ft = argtypes[0]
    operands, argtypes = _without_options(ctx, s, f, operands, argtypes)
    if isinstance(ft, ClosureT) and type(ft.func) is pytypes.FunctionType:
        fn, captured = ft.func, tuple(ft.captured)
    elif isinstance(ft, FunctionT) and type(ft.func) is pytypes.FunctionType \
            and not ft.func.__closure__:
        fn, captured = fixed_arity(ft.func, len(argtypes) - 1), ()
    elif isinstance(ft, FunctionT) and library_callee(ft.func):     # gradient(math.tanh, x)
        fn, captured = library_caller(ft.func, len(argtypes) - 1), ()
    else:
        ctx.fail(f"{f.__name__}() of a {ft} inside differentiated code is not compiled "
                 "(of a Python function is)")
    xs = argtypes[1:]
    from adjoint import api
    simple = [t in (FLOAT64, INT64, BOOL) or isinstance(t, ArrayT) for t in xs]
    if not all(simple) and (f is not api.gradient or not all(map(_nested_argument, xs))):
        also = " (gradient(): and tuples and dicts of them)" if f is api.gradient else ""
        ctx.fail(f"{f.__name__}() inside differentiated code is compiled for numbers and "
                 f"arrays{also}, not {', '.join(str(t) for t in xs)}")
    entry = REGISTRY.for_callee(f)
    fake = _fake_call(s, f, operands, ("nested", s.var))
    impl = entry.pick(ctx, fake, list(argtypes))
    impl, y = _primal_type(ctx, entry, impl, fake, list(argtypes))
    ctx.typing.impls[("primal", s.var)] = impl
    mask = tuple(bool(type_activity(t)) for t in xs)
    pb = gradient_pullback(fn, len(captured), mask, tuple(_type_name(t) for t in xs),
                           tuple(_type_name(t) for t in captured),
                           with_value=f is api.value_and_grad)
    ctx.typing.calls[s.var] = Call(None, operands, f)
    return TupleT((y, RulePBT(id(pb), tuple(argtypes), nops, pb)))


def _without_options(ctx: Context, s, f: Any, operands: list, argtypes: tuple) -> tuple:
    """(operands, types) of a nested `gradient` jcall without its keyword arguments,
    which may only be `backend=` for a callee that takes no keyword of that name: the
    API's option (`adjoint.options`), of no effect in compiled code (a `**kwargs`
    wrapper passes it along: `lambda *a, **kw: gradient(g, *a, **kw)`).  Other keywords
    are refused."""
    kwnames = tuple(ctx.const(s.args[2], ()) or ())
    if not kwnames:
        return operands, argtypes
    fn = getattr(argtypes[0], "func", None)
    if any(k != "backend" or fn is None or accepts_keyword(fn, k) for k in kwnames):
        ctx.fail(f"{f.__name__}() with keyword arguments inside differentiated code is not "
                 "compiled")
    npos = len(operands) - len(kwnames)
    return operands[:npos], argtypes[:npos]



def _t_rule_jcall(ctx: Context, s, f: Any) -> Type:
    from adjoint.rules import lookup_callee

    from jit.library.registry import REGISTRY
    operands = list(s.args[3:])
    argtypes = tuple(ctx.type_of(a) for a in operands)
    if _nested_gradient(f):
        return _t_gradient_jcall(ctx, s, f, operands, argtypes)
    if lookup_callee(f) is None:
        return _t_effect_jcall(ctx, s, f, operands, argtypes)
    if ctx.const(s.args[2], ()):
        ctx.fail("keyword arguments in a call of a function value with a rule")
    entry = REGISTRY.for_callee(f)
    fake = _fake_call(s, f, operands)
    impl = entry.pick(ctx, fake, list(argtypes)) if entry is not None else None
    if impl is None:
        ctx.fail(f"the JIT cannot call {getattr(f, '__name__', f)}")
    impl, y = _primal_type(ctx, entry, impl, fake, list(argtypes))
    ctx.typing.impls[("primal", s.var)] = impl
    if y is None:
        return None
    if impl.lower is None:     # plain Python: the call of it impl.types recorded
        ctx.typing.calls[("primal", s.var)] = ctx.typing.calls[s.var]
    pb = lookup_callee(f).pullback
    saved = ((y,) if pb is not None and pb.uses_result else ()) + argtypes
    ctx.typing.calls[s.var] = Call(None, operands, f)
    return TupleT((y, RulePBT(id(pb), saved, 1 + len(operands), pb)))


def _primal_type(ctx: Context, entry: Any, impl: Any, fake, argtypes: list) -> tuple:
    """(impl, type) of the primal call: by `impl`, or by the entry's host call when
    `impl`'s type rule refuses the argument types (as `Registry.type_with` does)."""
    fallback = entry.fallback(impl)
    try:
        return impl, impl.types(ctx, fake, argtypes)
    except TypingError as exc:
        if fallback is None:
            raise
        try:
            return fallback, fallback.types(ctx, fake, argtypes)
        except TypingError:
            raise exc from None


def _t_effect_jcall(ctx: Context, s, f: Any, operands: list, argtypes: tuple) -> Type:
    """A jcall of a callable without a rule, called for its effect (its result unused):
    the call from compiled code (`jit.library.escape_hatch`), and a pullback that gives
    no cotangent, as the interpreter's `OpaquePB`.  A method that may store a
    differentiated value (a list's `append`) is refused, as the J transform refuses it:
    a value read back from it would carry no gradient."""
    from adjoint.transform import MUTABLE_RECEIVERS
    from ssair.printer import object_name

    from jit.library.escape_hatch import check_effect_call, unwrapped
    fn = unwrapped(f)
    if isinstance(getattr(fn, "__self__", None), MUTABLE_RECEIVERS) and any(
            type_activity(t) for t in argtypes):
        ctx.fail(f"{object_name(fn)} would store a differentiated value, whose gradient "
                 "reverse mode cannot follow")
    uses = ctx.typing.use_counts()
    used = any(st.op == "getitem" and st.args[0] == s.var and uses.get(st.var)
               and getattr(st.args[1], "value", None) == 0
               for b in ctx.typing.ir.blocks for st in b.stmts)
    check_effect_call(ctx, fn, used, list(argtypes))
    ctx.typing.calls[s.var] = Call(None, operands, f)
    return TupleT((NONE, RulePBT(0, (), 1 + len(operands), None)))


def _cg_effect_jcall(fc: FunctionGen, s, ts):
    """The call, made for its effect; nothing goes on the tape (see `_t_effect_jcall`)."""
    from ssair.ir import Stmt

    from jit.library.escape_hatch import EFFECT_CALL
    call = fc.typing.calls[s.var]
    kwnames = tuple(s.args[2].value) if isinstance(s.args[2], Const) else ()
    npos = len(call.operands) - len(kwnames)
    primal = Stmt(s.var, "call", [Const(call.callee)] + list(call.operands[:npos]),
                  dict(zip(kwnames, call.operands[npos:])), s.line)
    primal.type = NONE
    EFFECT_CALL.lower(fc, primal, [fc.type_of(a) for a in call.operands])
    return L.Constant(lltype(s.type), L.Undefined)


def _cg_rule_jcall(fc: FunctionGen, s, ts):
    call = fc.typing.calls[s.var]
    pbt = s.type.elems[1]
    impl = fc.typing.impls[("primal", s.var)]
    primal = _fake_call(s, call.callee, call.operands,
                        ("nested", s.var) if _nested_gradient(call.callee) else None)
    primal.type = s.type.elems[0]    # lowerings read their statement's result type
    if impl.lower is None:
        python_impl = fc.typing.calls[("primal", s.var)]
        y = fc.call_user(python_impl.target, python_impl.operands, [])
    else:
        y = impl.lower(fc, primal, [fc.type_of(a) for a in call.operands])
    y = fc.convert(y, s.type.elems[0], s.type.elems[0])
    values = ([y] if len(pbt.saved) > len(call.operands) else []) + \
        [fc.get(a) for a in call.operands]
    tup = L.Constant(lltype(TupleT(pbt.saved)), L.Undefined)
    for i, v in enumerate(values):
        tup = fc.b.insert_value(tup, v, i)
    push_value(fc, fc.get(s.args[1]), tup, TupleT(pbt.saved))
    return fc.b.insert_value(L.Constant(lltype(s.type), L.Undefined), y, 0)


@codegen("jcall")
def _cg_jcall(fc: FunctionGen, s, ts):
    if isinstance(s.type.elems[1], HostPBT):
        return cg_host_jcall(fc, s, ts)
    if isinstance(s.type.elems[1], RulePBT):
        if s.type.elems[1].rule is None and s.type.elems[1].fid == 0:
            return _cg_effect_jcall(fc, s, ts)
        return _cg_rule_jcall(fc, s, ts)
    call = fc.typing.calls[s.var]
    tape = fc.get(s.args[1])
    lead = [tape]
    if isinstance(ts[0], ClosureT):
        clo = fc.get(s.args[0])
        lead += [fc.b.extract_value(clo, i) for i in range(len(ts[0].captured))]
    elif isinstance(ts[0], RecordT):        # the object called is `__call__`'s receiver
        lead.append(fc.get(s.args[0]))
    res = fc.call_user(call.target, call.operands, lead)
    target = fc.mg.engine.table.get(call.target.key, call.target)
    push_value(fc, tape, fc.b.extract_value(res, 1), target.ret.elems[1])
    y = fc.convert(fc.b.extract_value(res, 0), target.ret.elems[0], s.type.elems[0])
    out = L.Constant(lltype(s.type), L.Undefined)
    return fc.b.insert_value(out, y, 0)


# -- jback -------------------------------------------------------------------------------
_ADJOINTS: dict = {}
on_invalidate(_ADJOINTS.clear)


@compiling
def adjoint_ir(jf: Any, fwd: Any) -> IR:
    """The adjoint IR of `jf` for the typed forward `fwd`: a copy whose
    `meta["pop_types"]` gives every pop the type of the value its push recorded
    (one copy per forward signature, so that the engine caches them apart)."""
    key = (id(jf), fwd.argtypes)
    hit = _ADJOINTS.get(key)
    if hit is not None and hit[0] is jf:
        return hit[1]
    from ssair.ir import Var
    adj = jf.adjoint.copy()
    pop_of = jf.adjoint.meta.get("pop_of")
    if pop_of is None and _has_pops(adj):
        raise _typing_error(f"jit: the adjoint of {jf.primal.name} does not record which "
                            "push each pop reads (meta['pop_of'])")
    types, static = {}, {}
    edges = static_phis(fwd)
    for pid, fid in (pop_of or {}).items():
        t = fwd.types.get(Var(fid))
        if t is not None:
            types[pid] = t
        if fid in edges:
            static[pid] = edges[fid]
    adj.meta["pop_types"] = types
    adj.meta["pop_static"] = static
    adj.meta["env_static"] = _env_static(fwd, edges)
    adj.meta["forward_key"] = fwd.key  # whose dead tape slots its pops skip
    _ADJOINTS[key] = (jf, adj)
    return adj


def _env_static(fwd: Any, edges: dict) -> dict:
    """Index -> value of the forward's env entries known at compile time (a branch's
    edge that only one path reaches for these types, recorded in the env outside
    loops): the adjoint's branch on it is then decided as the forward's was."""
    from ssair.ir import Const, Return, Var
    defs = {s.var: s for b in fwd.ir.blocks for s in b.stmts}
    out = {}
    for b in fwd.ir.blocks:
        if not isinstance(b.term, Return) or not isinstance(b.term.value, Var):
            continue
        pair = defs.get(b.term.value)
        env = defs.get(pair.args[1]) if pair is not None and pair.op == "tuple" and \
            len(pair.args) == 2 and isinstance(pair.args[1], Var) else None
        if env is None or env.op != "tuple":
            continue
        for k, v in enumerate(env.args):
            if isinstance(v, Var) and v.id in edges:
                out[k] = edges[v.id]
            elif isinstance(v, Const) and type(v.value) is int:
                out[k] = v.value
    return out


def _has_pops(ir: IR) -> bool:
    return any(s.op == "pop" for b in ir.blocks for s in b.stmts)


def _typing_error(msg: str) -> Exception:
    from jit.types import TypingError
    return TypingError(msg)


def forward_typing(engine: Any, pb: CallPBT) -> Any:
    return engine.infer(pb.jf.forward, (TAPE,) + pb.argtypes)


@rule("jback")
def _t_jback(ctx: Context, s, ts) -> Type:
    from jit.pullback.cotangents import accum_type
    pb, cur = ts[0], ts[3]
    if isinstance(pb, RulePBT):
        return _t_rule_jback(ctx, s, ts)
    if isinstance(pb, HostPBT):
        return t_host_jback(ctx, s, ts)
    if pb == NONE and isinstance(cur, TupleT):
        return cur      # the data of a jcall on a path never taken: nothing to add
    if not isinstance(pb, CallPBT):
        ctx.fail(f"jback of a {pb} (only compiled jcalls are supported)")
    if ts[1] != READER:
        ctx.fail(f"jback reads a {ts[1]}, not a tape reader")
    fwd = forward_typing(ctx.engine, pb)
    if fwd.ret is None:
        return None
    env = fwd.ret.elems[1]
    curs = cur.elems if isinstance(cur, TupleT) else (NONE,) * (1 + len(pb.slots))
    seeds, replaced = seeding(pb, curs)
    dy_t = ts[2] if not pb.jf.inout else TupleT((ts[2], TupleT(tuple(seeds))))
    target = ctx.engine.infer(adjoint_ir(pb.jf, fwd), (READER, env, dy_t))
    ctx.typing.calls[s.var] = Call(target, [s.args[2]], pb)
    if target.ret is None:
        return None
    out = route_types(pb, target.ret)
    try:
        return TupleT(tuple(g if k in replaced else accum_type(c, g)
                            for k, (c, g) in enumerate(zip(curs, out))))
    except TypeError as e:
        ctx.fail(str(e))


def seeding(pb: CallPBT, curs: tuple) -> tuple:
    """(types of the initial adjoints of the callee's arguments, jcall operands whose
    cotangent is replaced rather than accumulated): an array argument the callee
    writes into starts its adjoint with the caller's cotangent of that operand (the
    first operand bound to it), as `adjoint.transform.CallPB._seed` does."""
    seeds = [NONE] * len(pb.argtypes)
    replaced, taken = set(), set()
    if not pb.jf.inout:
        return seeds, replaced
    for k, slot in enumerate(pb.slots):
        if isinstance(slot, tuple):      # an element of a `*args` tuple: never seeded
            continue
        p = pb.nfree + slot
        if p in pb.jf.inout and p not in taken:
            seeds[p] = curs[k + 1]
            taken.add(p)
            replaced.add(k + 1)
    return seeds, replaced


def _t_rule_jback(ctx: Context, s, ts) -> Type:
    from jit.pullback.cotangents import accum_type
    pb, dy, cur = ts[0], ts[2], ts[3]
    grads = ()
    if pb.rule is not None and dy != NONE:
        from jit.library.registry import REGISTRY  # the JIT's version of a rule, if any
        fn = REGISTRY.pullback_impl(pb.rule, (dy,) + pb.saved) or pb.rule.fn
        try:
            target = ctx.engine.infer(lower_function(fn), (dy,) + pb.saved)
        except (TypingError, UnsupportedError) as exc:   # its Python is not compiled
            grads = _host_rule_grads(ctx, s, pb, dy, exc)
        else:
            ctx.typing.calls[s.var] = Call(target, [], pb.rule)
            if target.ret is None:
                return None
            grads = target.ret.elems if isinstance(target.ret, TupleT) else (target.ret,)
    out = ((NONE,) + tuple(grads) + (NONE,) * pb.nops)[:pb.nops]
    curs = cur.elems if isinstance(cur, TupleT) else (NONE,) * pb.nops
    try:
        return TupleT(tuple(accum_type(c, g) for c, g in zip(curs, out)))
    except TypeError as e:
        ctx.fail(str(e))


def _host_rule_grads(ctx: Context, s, pb: RulePBT, dy: Type, why: Exception) -> tuple:
    """A rule the JIT cannot compile runs as Python, called from the compiled adjoint
    (as `cotangents._host_pullback` does for a direct call): its cotangents have the
    types of its operands."""
    from jit.pullback.cotangents import cotangent_type
    from jit.runtime.host_calls import passable
    if not all(passable(t) for t in (dy,) + pb.saved):
        raise why
    operands = pb.saved[1:] if pb.rule.uses_result else pb.saved
    grads = tuple(cotangent_type(t) for t in operands)
    ctx.typing.calls[s.var] = Call(None, [], pb.rule)
    ctx.typing.impls[("host", s.var)] = TupleT(grads)
    return grads


def _host_rule_parts(fc: FunctionGen, s, pb: RulePBT, dy_t: Type, saved) -> list:
    """(value, type) of each cotangent the host-called rule returns."""
    from jit.codegen.host_calls import call_host
    from jit.runtime.host_calls import HostSite
    want = fc.typing.impls[("host", s.var)]
    types = (dy_t,) + pb.saved
    values = [fc.get(s.args[2])] + [fc.b.extract_value(saved, i) for i in range(len(pb.saved))]
    site = HostSite(pb.rule, f"the derivative of {pb.rule.of}", [("slot", t) for t in types],
                    (), want, cotangents=True)
    g = unless_none(fc, dy_t, values[0], lambda: call_host(fc, site, values), want)
    return [(fc.b.extract_value(g, i), e) for i, e in enumerate(want.elems)]


def _cg_rule_jback(fc: FunctionGen, s, ts):
    from jit.pullback.cotangents import accum_values
    pb, cur_t = ts[0], ts[3]
    saved = pop_value(fc, fc.get(s.args[1]), TupleT(pb.saved))
    call = fc.typing.calls.get(s.var)
    parts = [(None, NONE)]
    if fc.typing.impls.get(("host", s.var)) is not None:
        parts += _host_rule_parts(fc, s, pb, ts[2], saved)
    elif call is not None and call.target is not None:
        target = fc.mg.engine.table.get(call.target.key, call.target)
        lead = [fc.get(s.args[2])] + [fc.b.extract_value(saved, i) for i in range(len(pb.saved))]
        g = unless_none(fc, ts[2], lead[0], lambda: fc.call_user(call.target, [], lead),
                        target.ret)
        if isinstance(target.ret, TupleT):
            parts += [(fc.b.extract_value(g, i), e) for i, e in enumerate(target.ret.elems)]
        else:
            parts.append((g, target.ret))
    parts = (parts + [(None, NONE)] * pb.nops)[:pb.nops]
    cur = fc.get(s.args[3])
    result = L.Constant(lltype(s.type), L.Undefined)
    for i, ((v, vt), want) in enumerate(zip(parts, s.type.elems)):
        c, ct = (fc.b.extract_value(cur, i), cur_t.elems[i]) if isinstance(cur_t, TupleT) \
            else (None, NONE)
        result = fc.b.insert_value(result, accum_values(fc, c, ct, v, vt, want), i)
    return result


def route_types(pb: CallPBT, grads: TupleT) -> tuple:
    """The callee's per-argument cotangent types -> one per jcall operand."""
    g = grads.elems
    df = g[0] if pb.closure == RECEIVER else TupleT(tuple(g[:pb.nfree])) if pb.closure \
        else NONE
    return (df,) + tuple(_slot_of(g, pb.nfree, k) for k in pb.slots)


def _slot_of(g: tuple, nfree: int, slot) -> Type:
    """The cotangent type of the operand bound to `slot` (an int, or (p, j) for element
    j of a `*args` tuple parameter p)."""
    if not isinstance(slot, tuple):
        return g[nfree + slot]
    t = g[nfree + slot[0]]
    return t.elems[slot[1]] if isinstance(t, TupleT) else NONE


@codegen("jback")
def _cg_jback(fc: FunctionGen, s, ts):
    from jit.pullback.cotangents import accum_values
    pb = ts[0]
    if isinstance(pb, RulePBT):
        return _cg_rule_jback(fc, s, ts)
    if isinstance(pb, HostPBT):
        return cg_host_jback(fc, s, ts)
    if pb == NONE:      # (a jcall on a path never taken, see `_t_jback`)
        return fc.get(s.args[3])
    call = fc.typing.calls[s.var]
    target = fc.mg.engine.table.get(call.target.key, call.target)
    reader = fc.get(s.args[1])
    env = pop_value(fc, reader, target.argtypes[1])
    cur_t, cur = ts[3], fc.get(s.args[3])
    curs = cur_t.elems if isinstance(cur_t, TupleT) else (NONE,) * (1 + len(pb.slots))
    seeds, replaced = seeding(pb, curs)
    if pb.jf.inout:
        dy = _seeded_dy(fc, fc.get(s.args[2]), cur, pb, seeds, target.argtypes[2])
        grads = fc.call_user(call.target, [], [reader, env, dy])
    else:
        grads = fc.call_user(call.target, call.operands, [reader, env])
    g = target.ret.elems
    b = fc.b
    parts = [b.extract_value(grads, i) for i in range(len(g))]
    outs = [(parts[0], g[0]) if pb.closure == RECEIVER else
            (_tuple_of(fc, parts[:pb.nfree], g[:pb.nfree]), TupleT(tuple(g[:pb.nfree])))
            if pb.closure else (None, NONE)]
    for k in pb.slots:
        if not isinstance(k, tuple):
            outs.append((parts[pb.nfree + k], g[pb.nfree + k]))
        elif isinstance(g[pb.nfree + k[0]], TupleT):
            outs.append((b.extract_value(parts[pb.nfree + k[0]], k[1]),
                         g[pb.nfree + k[0]].elems[k[1]]))
        else:
            outs.append((None, NONE))
    result = L.Constant(lltype(s.type), L.Undefined)
    for i, ((v, vt), want) in enumerate(zip(outs, s.type.elems)):
        if isinstance(cur_t, TupleT) and i not in replaced:
            c, ct = b.extract_value(cur, i), cur_t.elems[i]
        else:
            c, ct = None, NONE
        result = b.insert_value(result, accum_values(fc, c, ct, v, vt, want), i)
    return result


def _seeded_dy(fc: FunctionGen, dy, cur, pb: CallPBT, seeds: list, want: TupleT):
    """The pair (dy, initial adjoints of the callee's arguments) an in-out callee's
    adjoint takes."""
    b = fc.b
    init = L.Constant(lltype(want.elems[1]), L.Undefined)
    for p, t in enumerate(seeds):
        if t == NONE:
            continue
        k = next(k for k, slot in enumerate(pb.slots)
                 if not isinstance(slot, tuple) and pb.nfree + slot == p)
        init = b.insert_value(init, b.extract_value(cur, k + 1), p)
    out = L.Constant(lltype(want), L.Undefined)
    out = b.insert_value(out, dy, 0)
    return b.insert_value(out, init, 1)


def _tuple_of(fc: FunctionGen, values: list, types: tuple):
    out = L.Constant(lltype(TupleT(tuple(types))), L.Undefined)
    for i, v in enumerate(values):
        out = fc.b.insert_value(out, v, i)
    return out
