"""Nested reverse mode: `gradient(lambda x: gradient(f, x)[0], x)`, `hessian`.

Choice: reverse over reverse, by making the tape operations themselves
differentiable, so that the J transform applies to its own output.

  * A call of `adjoint.gradient(f, *args)` inside differentiated code is run as the
    *gradient program* of f, an IR built here:
        %tape = call(@adjoint.tape.new_tape)
        %t    = call(<f_forward>, %tape, args...)
        %r    = call(@adjoint.tape.reader_of, %tape)
        %g    = call(<f_adjoint>, %r, getitem(%t, 1), 1.0)
        return call(@adjoint.nested.finish_grads, %g, tuple(args...), nfree)
    and the outer transform differentiates that program like any user function:
    its calls of the forward and adjoint IR are transformed in turn.
  * The ops of forward and adjoint IR get rules: `push(tape, v)` and `pop(reader)`
    are always recorded; the adjoint of `pop` is `spush(reader, dy)` (the popped
    value's cotangent goes on the tape's sensitivity stack) and the adjoint of `push`
    is `spop(tape)` (it takes it back off).  The outer reverse pass runs the inner
    adjoint's pops backwards first, then the inner forward's pushes, so the two
    stacks pair up exactly like the tape itself.  `accum`, `dget`, `accum_index`,
    `take_index`, `zero_index`, `snapshot` and `unbcast` are linear and get small
    pullbacks here.
  * A first-order pullback called in an adjoint IR (`call(@...d_sin, %dy, %x)`) is a
    plain Python function: the outer transform lowers `Pullback.fn` and transforms it
    like user code (rules whose code the lowering refuses cannot be nested).
  * `pullback(f, *args)` inside differentiated code returns y and, as `back`, a
    closure over f's captured values and args whose code is the gradient program
    seeded with its argument: calling it is differentiated like any closure call.
  * Calls inside the inner function (`jcall`/`jback` in its forward/adjoint IR) are
    differentiated again through `run_jcall`/`run_jback`; an argument the inner IR
    may write into is seeded with its operand's cotangent, as `CallPB` does.
  * A third level and up: a `gradient` met in a function differentiated twice is
    differentiated by Hessian-vector products (`adjoint.nested_hv`), at any order;
    `f(*t, **d)` there is the call it stands for (`_forward_unpacked_jcall`).
Limits: `pullback` inside a function differentiated twice; `jacobian`/`hessian`
inside differentiated code; nesting through a user function that writes into its
array argument.  Each raises a TypeError that says so.
"""
from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from lowering import UnsupportedError, guards
from lowering.runtime import call_unpacked
from ssair import IR, Const, Return
from ssair.compile_lock import compiling
from ssair import interpreter as interp
from ssair.primitives import register

from . import api
from . import transform as T
from .generated import fixed_arity
from .options import accepts_keyword
from .rule_table import no_operands
from .rules import Pullback, nondiff, pullback_rule, structural
from .rules_complex import holomorphic, on_complex
from .structure import has_complex
from .special_callees import READ_ONLY_CALLEES, SPECIAL_CALLEES, SPECIAL_TYPES, run_jback, run_jcall, special_handler
from .tape import accum, accum_index, fresh, new_tape, reader_of, take_index, unbcast, zero_index


def spush(reader, g) -> None:
    reader.tape.sens.append(g)


def spop(tape):
    return tape.sens.pop()


register("spush", 2, spush, pure=False, foldable=False, symbol="sens.push(g)")
register("spop", 1, spop, pure=False, foldable=False, symbol="sens.pop()")
structural("push", needs=lambda act: {0})
structural("pop", needs=lambda act: {0})
nondiff(new_tape, reader_of, "zero")   # zero(x): zeros of x's shape, constant in x


# -- pullbacks of the cotangent primitives ----------------------------------------------
@pullback_rule("accum")
def d_accum(dz, a, b):
    return dz, dz


@pullback_rule("dget")
def d_dget(dz, t, k, position=None):
    if t is None:
        return (None, None) if position is None else (None, None, None)
    if isinstance(t, dict):
        return ({k: dz},) + (None,) * (1 if position is None else 2)
    parts = [None] * len(t)
    parts[k if position is None else position] = dz
    return (tuple(parts), None) if position is None else (tuple(parts), None, None)


@pullback_rule("accum_index")
def d_accum_index(dz, s, dy, x, *idx):
    return (dz, take_index(dz, *idx), None) + (None,) * len(idx)


@pullback_rule("take_index")
def d_take_index(dz, s, *idx):
    if s is None:
        return (None,) * (1 + len(idx))
    return (accum_index(None, dz, s, *idx),) + (None,) * len(idx)


@pullback_rule("zero_index")
def d_zero_index(dz, s, *idx):
    return (zero_index(fresh(dz), *idx),) + (None,) * len(idx)


@pullback_rule("snapshot", needs=no_operands)
def d_snapshot(dz, x):
    return dz


@pullback_rule("contiguous", needs=no_operands)
def d_contiguous(dz, x):
    return dz


@pullback_rule(("unbcast", unbcast))
def d_unbcast(dz, dy, x):
    if isinstance(dy, np.ndarray) and isinstance(dz, (np.ndarray, float, np.floating)):
        return np.broadcast_to(dz, dy.shape).astype(float), None
    return dz, None


def finish_grads(g, xs, nfree):
    """The cotangents `adjoint.gradient` returns, from the adjoint IR's raw tuple."""
    return tuple(api._finish(v, x) for v, x in zip(g[nfree:], xs[nfree:]))


@pullback_rule(finish_grads)
def d_finish_grads(dz, g, xs, nfree):
    parts = [None] * nfree + [d if T.is_differentiable(x) else None
                              for d, x in zip(dz, xs[nfree:])]
    parts += [None] * (len(g) - len(parts))     # defaults filled in (`omitted_defaults`)
    return tuple(parts), None, None


finish_grads.__zygopy_symbol__ = "adjoint.nested.finish_grads"


def seed_like(y, dy, name):
    """`dy` checked against output `y` of function `name`, as `back` checks it."""
    from .structure import conform
    return conform(y, dy, f"back(dy) of the pullback of {name}: dy")


@pullback_rule(seed_like, needs=lambda active: set())
def d_seed_like(dz, y, dy, name):
    return None, dz, None


seed_like.__zygopy_symbol__ = "adjoint.nested.seed_like"

# complex values (`adjoint.rules_complex`): the pullbacks above are linear with real
# coefficients, the same in every convention, so each real one serves complex values
holomorphic(d_accum, d_dget, d_accum_index, d_take_index, d_zero_index, d_snapshot,
            d_contiguous, d_finish_grads, d_seed_like)


@on_complex(d_unbcast)
def d_unbcast_complex(dz, dy, x):
    if isinstance(dy, np.ndarray) and not isinstance(dz, (tuple, list, dict)):
        return np.array(np.broadcast_to(dz, dy.shape)), None
    return dz, None


# -- the gradient program ---------------------------------------------------------------
_PROGRAMS: dict = {}
guards.on_invalidate(_PROGRAMS.clear)


@compiling
def gradient_program(jf: "T.JFunction", nfree: int, seeded: bool = False,
                     with_value: bool = False, nfilled: int = 0) -> IR:
    """An IR computing the gradient of `jf`'s primal (see the module docstring).
    `seeded`: the IR takes the output's cotangent as one more, last argument (the
    `back` of a nested `pullback`) instead of seeding with 1.0.  `with_value`: it
    returns `(y, gradient)`, as `value_and_grad`.  `nfilled`: the last parameters
    take defaults the call left out (`omitted_defaults`); they get no gradient entry."""
    key = (id(jf), nfree, seeded, with_value, nfilled)
    hit = _PROGRAMS.get(key)
    if hit is not None and hit[0] is jf:
        return hit[1]
    p = jf.primal
    ir = IR(f"{p.name}_{'back' if seeded else 'gradient'}", file=p.file,
            firstline=p.firstline)
    xs = [ir.add_arg(a.name) for a in p.args]
    dy = ir.add_arg("dy") if seeded else Const(1.0)
    if seeded:
        ir.nfree = len(xs)
    b = ir.add_block()
    tape = ir.push(b, "call", Const(new_tape))
    t = ir.push(b, "call", Const(jf.forward), tape, *xs)
    env = ir.push(b, "getitem", t, 1)
    if seeded:    # (the seed of a nested back: checked against the output)
        name = p.meta.get("source_name", p.name)
        dy = ir.push(b, "call", Const(seed_like), ir.push(b, "getitem", t, 0), dy, Const(name))
    r = ir.push(b, "call", Const(reader_of), tape)
    seed = ir.push(b, "tuple", dy, None) if jf.inout else dy
    g = ir.push(b, "call", Const(jf.adjoint), r, env, seed)
    given = ir.push(b, "tuple", *xs[:len(xs) - nfilled])
    out = ir.push(b, "call", Const(finish_grads), g, given, nfree)
    if with_value:
        out = ir.push(b, "tuple", ir.push(b, "getitem", t, 0), out)
    b.term = Return(out)
    _PROGRAMS[key] = (jf, ir)
    return ir


def forward_gradient(state, f, tape, pos: tuple, kw: dict, with_value: bool = False) -> tuple:
    """jcall of `adjoint.gradient(fn, *args)` (or `value_and_grad`): run J(gradient
    program of fn)."""
    fn, args = pos[0], tuple(pos[1:])
    _check_nested_keywords("value_and_grad" if with_value else "gradient", fn, kw)
    fn = fixed_arity(api.as_function(fn, len(args)), len(args))
    ir, free = api._prepare(fn, args)
    _refuse_packed("value_and_grad" if with_value else "gradient", ir.name, ir.meta)
    filled = omitted_defaults(fn, ir, len(free), args)
    all_args = tuple(free) + args + filled
    active = T.activity_of(all_args)
    types = T.arg_types(all_args)
    jf = T.transform(ir, active, types)
    jg = T.transform(gradient_program(jf, len(free), with_value=with_value,
                                      nfilled=len(filled)), active, types)
    y, env = interp._call_ir(state, jg.forward, (tape,) + all_args)
    slots = [None] + [len(free) + k for k in range(len(args))]
    return y, _GradientPB(jg, env, len(free), slots, False)


def _refuse_packed(name: str, fn_name: str, meta: dict) -> None:
    """A closure taking `*args` or `**kwargs` (a plain function has been given the
    caller of its arity, `fixed_arity`), whose parameters a nested gradient would
    not bind one for one: refused by name."""
    if meta.get("varargs") is not None or meta.get("varkw") is not None:
        raise TypeError(f"adjoint: {name}() of {fn_name}, a closure that takes *args "
                        f"or **kwargs, inside a differentiated function is not supported "
                        f"yet; give it named parameters")


def omitted_defaults(fn, ir: IR, nfree: int, args: tuple) -> tuple:
    """The defaults of the trailing parameters (keyword-only ones too) that a nested
    `gradient(fn, *args)` (`pullback`, `value_and_grad`) leaves out: they are passed
    to fn's gradient program as arguments without a gradient entry.  A default
    computed when a nested function was made (`def g(n=x)`) that is differentiable
    is refused, as for a call (`refuse_runtime_defaults`): its cotangent would have
    nowhere to go.  () when nothing is left out, or when a left-out parameter has
    no default (the arity error follows)."""
    if len(ir.args) - nfree <= len(args):
        return ()
    binder = interp._closure_target(fn)[1] if isinstance(fn, interp.Closure) else fn
    try:
        params = list(inspect.signature(binder).parameters.values())
    except (TypeError, ValueError):
        return ()
    rest = params[len(args):]
    if len(params) != len(ir.args) - nfree or any(
            p.default is inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            for p in rest):
        return ()
    filled = tuple(p.default for p in rest)
    if isinstance(fn, interp.Closure) and fn.defaults is not None:
        T.refuse_runtime_defaults(fn, args + filled, list(range(len(args))), 0)
    return filled


class _GradientPB(T.CallPB):
    """A nested `adjoint.gradient(fn, *args)`: the gradient program's arguments are
    fn's captured values, then args.  The captured values' cotangents go to the
    operand `fn` as one tuple (a closure's cotangent, see `adjoint.passes.reverse`)."""

    __slots__ = ()

    def route(self, grads: tuple) -> tuple:
        d_fn = tuple(grads[:self.nfree]) if self.nfree else None
        return (None, d_fn) + tuple(grads[k] for k in self.slots[1:])

    def unroute(self, d, nargs: int):
        if d is None:
            return None
        out = [None] * nargs
        if self.nfree and d[1] is not None:
            out[:self.nfree] = list(d[1])
        for k, g in zip(self.slots[1:], d[2:]):
            out[k] = g
        return tuple(out)


class _UnwrapPB:
    """A transformed pullback whose plain function returned one bare cotangent."""

    __slots__ = ("inner",)

    def __init__(self, inner):
        self.inner = inner

    def back(self, state, reader, dy):
        return self.inner.back(state, reader, None if dy is None else dy[0])


def forward_pullback(state, pb: Pullback, tape, pos: tuple, kw: dict) -> tuple:
    """jcall of a first-order `Pullback`: differentiate its plain-Python function."""
    nops = 1 + len(pos) + len(kw)
    if pos[0] is None:
        return pb(*pos, **kw), T.NondiffPB(nops)
    try:
        y, data = T.call_forward(state, _rule_for(pb, pos, kw), tape, pos, kw, plain=True)
    except UnsupportedError as e:
        raise TypeError(f"adjoint: nested AD (a derivative of a derivative) through "
                        f"{pb.of} is not supported yet: its derivative rule uses "
                        f"{e.construct}") from None
    if isinstance(y, tuple):
        return y, data
    return (y,), _UnwrapPB(data)


def _rule_for(pb: Pullback, pos: tuple, kw: dict) -> Any:
    """The function a call of `pb` runs: its complex form where a complex value flows
    (`Pullback.complex_call`; it takes the real part of each real operand's cotangent
    explicitly where a real value meets a complex one, so differentiating it needs no
    more), refused clearly where it has none."""
    if not (has_complex(pos) or has_complex(tuple(kw.values()))):
        return pb.fn
    if pb.on_complex is None:
        raise TypeError(f"adjoint: the derivative of {pb.of} does not support complex "
                        "numbers yet")
    return pb.on_complex


SPECIAL_TYPES.append((Pullback, forward_pullback))


def forward_pullback_call(state, _fn, tape, pos: tuple, kw: dict) -> tuple:
    """jcall of `adjoint.pullback(fn, *args)`: y from J(fn), and as `back` a closure
    over fn's captured values and args whose code is fn's seeded gradient program,
    so that calling `back(dy)` is differentiated like any closure call."""
    fn, args = pos[0], tuple(pos[1:])
    _check_nested_keywords("pullback", fn, kw)
    fn = fixed_arity(api.as_function(fn, len(args)), len(args))
    ir, free = api._prepare(fn, args)
    _refuse_packed("pullback", ir.name, ir.meta)
    filled = omitted_defaults(fn, ir, len(free), args)
    all_args = tuple(free) + args + filled
    jf = T.transform(ir, T.activity_of(all_args), T.arg_types(all_args))
    y, inner = T.call_forward(state, fn, tape, args, {})
    back = interp.Closure(gradient_program(jf, len(free), seeded=True, nfilled=len(filled)),
                          all_args)
    return (y, back), _PullbackCallPB(inner, len(free), len(args))


class _PullbackCallPB:
    """Outer pullback data of a nested `pullback(fn, *args)`: `(d_y, d_back)` ->
    `(None, d_fn, d_args...)`.  `d_y` goes back through fn's own call; `d_back`, a
    closure's cotangent, holds those of its captured values (fn's, then args)."""

    __slots__ = ("inner", "nfree", "nargs")

    def __init__(self, inner, nfree, nargs):
        self.inner, self.nfree, self.nargs = inner, nfree, nargs

    def back(self, state, reader, dz) -> tuple:
        out = [None] * (2 + self.nargs)
        d_y, d_back = (None, None) if dz is None else dz
        if d_y is not None:
            g = self.inner.back(state, reader, d_y)
            out[1:] = g[:1 + self.nargs]
        if d_back is not None:
            d_free = tuple(d_back[:self.nfree]) if self.nfree else None
            if d_free is not None:
                out[1] = d_free if out[1] is None else tuple(
                    accum(a, b) for a, b in zip(out[1], d_free))
            for k in range(self.nargs):
                out[2 + k] = accum(out[2 + k], d_back[self.nfree + k])
        return tuple(out)


def _check_nested_keywords(name: str, fn, kw: dict) -> None:
    """A nested call always runs in the interpreter: `backend=` is accepted and has
    no effect (unless `fn` takes a keyword of that name: `adjoint.options`);
    keywords for `fn` are not supported here."""
    for k in kw:
        if k != "backend" or accepts_keyword(fn, k):
            raise TypeError(f"adjoint: {name}() inside a differentiated function does not "
                            f"pass keyword arguments to the function yet (got {k}=); "
                            f"bind them with functools.partial")


def _refuse_nested(name: str):
    def refuse(state, _fn, tape, pos, kw):
        raise TypeError(f"adjoint: {name}() inside a differentiated function is not "
                        f"supported yet; use gradient() or pullback() there")
    return refuse


def _forward_value_and_grad(state, f, tape, pos: tuple, kw: dict) -> tuple:
    """jcall of `value_and_grad(fn, *args)`; with nothing after `fn`, the transform
    `value_and_grad(fn)` (`adjoint.transforms.made_inside`)."""
    if len(pos) == 1:
        from .transforms import made_inside, value_and_grad_transform
        return made_inside(state, value_and_grad_transform, tape, pos, kw)
    return forward_gradient(state, f, tape, pos, kw, with_value=True)


def _register_gradient() -> None:
    SPECIAL_CALLEES[id(api.gradient)] = (api.gradient, forward_gradient)
    SPECIAL_CALLEES[id(api.value_and_grad)] = (api.value_and_grad, _forward_value_and_grad)
    SPECIAL_CALLEES[id(api.pullback)] = (api.pullback, forward_pullback_call)
    from .forward import hessian
    for f in (api.jacobian, hessian):
        SPECIAL_CALLEES[id(f)] = (f, _refuse_nested(f.__name__))
    for f in (api.gradient, api.value_and_grad):
        READ_ONLY_CALLEES[id(f)] = f


_register_gradient()


# -- calls inside a transformed IR: jcall / jback differentiated again ----------------------
# (`adjoint.passes.instrument` turns them into calls of `run_jcall` / `run_jback`)
class _NestedPB:
    """Outer pullback data of a differentiated jcall/jback: J of the inner IR, its
    env, and how to map cotangents between the statement and the inner IR.

    `operand_of[k]` is the statement operand that the inner IR's argument k came from
    (a pair `(operand, k')` for a closure's captured value k'), so that an argument
    the inner IR may write into (`jj.inout`) is seeded with its operand's current
    cotangent and has it replaced, as `CallPB` does for first-order calls."""

    __slots__ = ("jj", "env", "to_inner", "from_inner", "operand_of")
    seeds = True

    def __init__(self, jj, env, to_inner, from_inner, operand_of):
        self.jj, self.env, self.to_inner, self.from_inner = jj, env, to_inner, from_inner
        self.operand_of = operand_of

    def back(self, state, reader, dz, cur=None):
        d = self.to_inner(dz)
        replaced, free = set(), set()
        if self.jj.inout:
            seeded = [None] * len(self.operand_of)
            for k in self.jj.inout:
                where = self.operand_of[k]
                if cur is None or where is None:
                    continue
                if isinstance(where, tuple):            # a closure's captured value
                    op, j = where
                    seeded[k] = None if cur[op] is None else cur[op][j]
                    free.add(j)
                elif where not in replaced:
                    seeded[k] = cur[where]
                    replaced.add(where)
            d = (d, tuple(seeded))
        out = self.from_inner(interp._call_ir(state, self.jj.adjoint, (reader, self.env, d)))
        if cur is None:
            return out
        merged = T.combine(out, cur, replaced)
        for op in {w[0] for w in self.operand_of if isinstance(w, tuple)} if free else ():
            if cur[op] is not None and out[op] is not None:
                merged = merged[:op] + (tuple(
                    g if j in free else accum(c, g)
                    for j, (g, c) in enumerate(zip(out[op], cur[op]))),) + merged[op + 1:]
        return merged


def forward_jcall(state, _fn, tape2, pos: tuple, kw: dict) -> tuple:
    f, tape, kwnames = pos[0], pos[1], pos[2]
    rest = pos[3:]
    npos = len(rest) - len(kwnames)
    if f is call_unpacked:
        return _forward_unpacked_jcall(state, _fn, tape2, pos)
    rule = T.lookup_callee(f)
    if rule is not None and rule.pullback is not None:
        return _forward_rule_call(state, f, tape, pos, npos, kwnames)
    if f is api.gradient or f is api.value_and_grad and npos > 1:
        return _forward_rule_call(state, f, tape, pos, npos, kwnames, nested_gradient_call)
    if isinstance(f, Pullback):
        return _forward_pullback_jcall(state, f, tape, tape2, rest, npos, kwnames)
    if special_handler(f) is not None:
        raise TypeError(f"adjoint: adjoint.{f.__name__} inside a function that is differentiated "
                        f"twice (reverse mode of third order) is not supported; gradient() "
                        f"and value_and_grad() are")
    target = T._target(f)
    if target is None:
        raise TypeError(f"adjoint: nested AD through a call of {T._name(f)} (a library "
                        f"callee without a rule) is not supported")
    jf, args, slots, nfree, closure = T.resolve_call(
        target, tuple(rest[:npos]), dict(zip(kwnames, rest[npos:])))
    if closure and f.defaults is not None:
        T.refuse_runtime_defaults(f, args[nfree:], slots, nfree)
    fwd_args = (tape,) + args
    jj = T.transform(jf.forward, T.activity_of(fwd_args), T.arg_types(fwd_args))
    (y, env), env2 = interp._call_ir(state, jj.forward, (tape2,) + fwd_args)
    inner = T.CallPB(jf, env, nfree, slots, closure)

    def from_inner(g):          # (d_tape, d_args...) -> (d_run_jcall, d_f, d_tape, d_kw, d_rest...)
        d = inner.route(g[1:])
        return (None, d[0], None, None) + tuple(d[1:])
    operand_of = [2] + [(1, k) if closure and k < nfree else None for k in range(len(args))]
    for j, k in enumerate(slots):     # (an item of `*args`, slot (i, j), is in a tuple,
        # which is never written into: no seed)
        if type(k) is int and operand_of[1 + k] is None:
            operand_of[1 + k] = 4 + j
    return (y, inner), _NestedPB(jj, env2, lambda dz: dz, from_inner, operand_of)


def _forward_pullback_jcall(state, pb: Pullback, tape, tape2, rest: tuple, npos: int,
                            kwnames: tuple) -> tuple:
    """A jcall of a rule's pullback (`call(@d_exp, dy, y, x)` of an adjoint IR, made a
    jcall when that IR was differentiated), differentiated once more: J of the
    transform of the pullback's plain Python code, as `forward_pullback` runs it one
    level down; a bare cotangent it returns is wrapped in a tuple there
    (`_UnwrapPB`), and here too.  A None `dy` gives Nones, with no derivative."""
    nops = 1 + len(rest)
    args, kw = tuple(rest[:npos]), dict(zip(kwnames, rest[npos:]))
    if not args or args[0] is None:
        return (pb(*args, **kw), T.NondiffPB(nops)), T.NondiffPB(4 + len(rest))
    fn = pb.fn
    jf, params, slots, nfree, _ = T.resolve_call(
        (T.lower_function(fn), fn, T.cells(fn), False), args, kw)
    fwd_args = (tape,) + params
    jj = T.transform(jf.forward, T.activity_of(fwd_args), T.arg_types(fwd_args))
    (y, env), env2 = interp._call_ir(state, jj.forward, (tape2,) + fwd_args)
    inner = T.CallPB(jf, env, nfree, slots, False)
    bare = not isinstance(y, tuple)

    def to_inner(dz):          # (d_y, d_data): a bare y's cotangent is one in a tuple
        if dz is None or not bare:
            return dz
        return (None if dz[0] is None else dz[0][0], dz[1])

    def from_inner(g):          # (d_tape, d_params...) -> (d_run_jcall, d_f, d_tape, d_kw, d_rest...)
        d = inner.route(g[1:])
        return (None, None, None, None) + tuple(d[1:])
    operand_of = [2] + [None] * len(params)
    for j, k in enumerate(slots):
        if type(k) is int:
            operand_of[1 + k] = 4 + j
    data = _UnwrapPB(inner) if bare else inner
    return ((y,) if bare else y, data), _NestedPB(jj, env2, to_inner, from_inner, operand_of)


def _forward_rule_call(state, f, tape, pos, npos, kwnames, call=None) -> tuple:
    """A jcall whose callee has a rule (math.sin passed as a value): y = f(args) and
    its RulePB.  The RulePB's cotangent is `(d_y, d_args...)` for the values it holds
    (see `forward_jback`); both it and d_y reach the args through the rule.  `call`:
    what gives `(y, RulePB)` instead of the rule table (a nested `gradient`)."""
    rest = pos[3:]
    args, kw = tuple(rest[:npos]), dict(zip(kwnames, rest[npos:]))
    if call is not None:
        y, inner = call(f, args, kw)
    else:
        y, inner = T.call_forward(state, f, tape, args, kw, plain=False)
    if not isinstance(inner, T.RulePB):
        raise TypeError(f"adjoint: nested AD through {T._name(f)} is not supported")
    nheld = len(inner.args)     # a bound method's rule holds its receiver first

    def from_outer(dz):
        d_y, d_pb = (None, None) if dz is None else dz
        d_hold = (None,) * (1 + nheld) if d_pb is None else d_pb
        dy_total = accum(d_y, d_hold[0])
        out = inner.back(state, None, dy_total)
        grads = out[:nheld] if inner.bound else out[1:1 + nheld]
        held = tuple(accum(g, h) for g, h in zip(grads, d_hold[1:]))   # (a closure's:
        # the tuple of its captured values' cotangents, added entry by entry)
        d_f, d_args = (held[0], held[1:]) if inner.bound else (None, held)
        return (None, d_f, None, None) + d_args + (None,) * len(kw)
    return (y, inner), _RulePB2(from_outer)


def nested_gradient_call(f, args: tuple, kw: dict) -> tuple:
    """`(y, RulePB)` of `gradient(fn, *xs)` / `value_and_grad(fn, *xs)` met in a function
    differentiated twice: y computed, and the pullback by Hessian-vector products
    (`adjoint.nested_hv`), which is itself differentiable to any order."""
    from .nested_hv import function_parts, gradient_pullback
    fn, xs = args[0], tuple(args[1:])
    _check_nested_keywords(f.__name__, fn, kw)
    parts = function_parts(fn, len(xs))
    if parts is None:
        raise TypeError(f"adjoint: {f.__name__}() of {T._name(fn)} inside a function that is "
                        f"differentiated twice is not supported (a Python function is)")
    py, nfree, captured = parts
    code = py.__code__
    _refuse_packed(f.__name__, py.__qualname__, {"varargs": code.co_flags & 0x0C or None})
    y = f(fn, *xs, backend="interp") if not accepts_keyword(fn, "backend") else f(fn, *xs)
    mask = tuple(T.is_differentiable(x) for x in xs)
    pb = gradient_pullback(py, nfree, mask, T.arg_types(xs), T.arg_types(captured),
                           with_value=f is api.value_and_grad)
    return y, T.RulePB(pb, (fn,) + xs, {}, y, 2 + len(xs), False)


class _RulePB2:
    __slots__ = ("from_outer",)

    def __init__(self, from_outer):
        self.from_outer = from_outer

    def back(self, state, reader, dz):
        return self.from_outer(dz)


def _forward_rule_back(state, inner, tape2, reader, dy, cur) -> tuple:
    """jback of a RulePB, differentiated: its pullback call is transformed."""
    lead = (inner.y,) if inner.pb.uses_result else ()
    grads, data = forward_pullback(state, inner.pb, tape2, (dy,) + lead + inner.args,
                                   inner.kw)
    nargs = len(inner.args)
    head = () if inner.bound else (None,)     # a bound method's receiver is operand 0
    out = T.combine(head + tuple(grads) + (None,) * (inner.nops - len(head) - len(grads)),
                    cur, set())

    def from_inner(g):      # g: (d_fn, d_dy, [d_y], d_args...) -> (None, d_pb, None, d_dy, d_cur)
        g = (None,) * (1 + len(lead) + nargs) if g is None else g[1:]
        d_y = g[1] if lead else None
        return (None, (d_y,) + tuple(g[1 + len(lead):1 + len(lead) + nargs]), None, g[0],
                _dz[0])
    _dz = [None]

    class _Back:
        def back(self, state, reader2, dz):
            _dz[0] = dz
            d = None if dz is None else tuple(dz[len(head):len(head) + len(grads)])
            return from_inner(data.back(state, reader2, d))
    return out, _Back()


def forward_jback(state, _fn, tape2, pos: tuple, kw: dict) -> tuple:
    """jback(pb, reader, dy, cur), differentiated: J of the callee's adjoint IR.  The
    result is `cur + route(grads)`, so `cur` receives the outer cotangent as is."""
    inner, reader, dy, cur = pos
    if isinstance(inner, T.NondiffPB):      # (a rule's pullback called with dy None)
        return T.combine(inner.back(state, reader, dy), cur, set()), _CurOnly()
    if isinstance(inner, T.UnpackedPB):
        return _forward_unpacked_jback(state, _fn, tape2, inner, reader, dy, cur)
    bare = isinstance(inner, _UnwrapPB)     # (a rule's pullback that returned one value)
    if bare:
        inner, dy = inner.inner, None if dy is None else dy[0]
    if isinstance(inner, T.RulePB):
        return _forward_rule_back(state, inner, tape2, reader, dy, cur)
    if not isinstance(inner, T.CallPB):
        raise TypeError("adjoint: nested AD through a library callee without a "
                        "derivative rule is not supported")
    if inner.jf.inout:
        p = inner.jf.primal
        raise TypeError(f"adjoint: nested AD through a call of {p.name} ({p.file}:"
                        f"{p.firstline}), which writes into its array argument, is not "
                        f"supported; return a new array from {p.name} instead")
    args = (reader, inner.env, dy)
    jj = T.transform(inner.jf.adjoint, T.activity_of(args), T.arg_types(args))
    grads, env2 = interp._call_ir(state, jj.forward, (tape2,) + args)
    nargs = len(inner.jf.primal.args)

    seen = [None]

    def keep(dz):
        seen[0] = dz
        return inner.unroute(dz, nargs)

    def from_inner(g):   # (d_reader, d_env, d_dy) -> (d_run_jback, d_pb, d_reader, d_dy, d_cur)
        d_dy = (g[2],) if bare and g[2] is not None else g[2]
        return (None, g[1], None, d_dy, seen[0])
    # (reader, env, dy) came from the operands reader, pb (its env) and dy
    return T.combine(inner.route(grads), cur, set()), _NestedPB(jj, env2, keep, from_inner,
                                                                 (2, 1, 3))


# -- `f(*t, **d)` (a jcall of `call_unpacked`) differentiated again ------------------------
# The call it stands for, `f(t[0], ..., k=d[k])`, is differentiated as any jcall; the
# cotangents of the items go back into one tuple for `t` and one dict for `d`.
def _forward_unpacked_jcall(state, _fn, tape2, pos: tuple) -> tuple:
    tape, kwnames, rest = pos[1], pos[2], pos[3:]
    if kwnames or len(rest) != 3:
        raise TypeError("adjoint: nested AD through f(*args, **kwargs) called with "
                        "keywords of its own is not supported")
    f, t, d = rest
    t, d = tuple(t), dict(d) if d is not None else {}
    keys, n = tuple(d), len(t)
    (y, inner), data = forward_jcall(state, _fn, tape2,
                                     (f, tape, keys) + t + tuple(d.values()), {})
    return (y, T.UnpackedPB(inner, n, keys)), _RepackedPB(data, n, keys)


class _RepackedPB:
    """Outer pullback data of `_forward_unpacked_jcall`: the unpacked jcall's, its
    operands' cotangents put back as `(..., d_f, d_t, d_d)`."""

    __slots__ = ("inner", "n", "keys")
    seeds = True

    def __init__(self, inner, n, keys):
        self.inner, self.n, self.keys = inner, n, keys

    def back(self, state, reader, dz, cur=None):
        n = self.n
        if cur is not None:       # (run_jcall, call_unpacked, tape, kwnames, f, t, d)
            t, d = cur[5], cur[6]
            cur = (cur[0], cur[4], cur[2], cur[3]) + \
                (tuple(t) if t is not None else (None,) * n) + \
                tuple(None if d is None else d.get(k) for k in self.keys)
        out = self.inner.back(state, reader, dz, cur) if getattr(self.inner, "seeds", False) \
            else self.inner.back(state, reader, dz)
        kw = dict(zip(self.keys, out[4 + n:])) if self.keys else None
        return (out[0], None, out[2], out[3], out[1], tuple(out[4:4 + n]), kw)


def _forward_unpacked_jback(state, _fn, tape2, upb, reader, dy, cur) -> tuple:
    """jback of an `UnpackedPB` differentiated: that of the call it stands for, its
    `cur` and result mapped as `UnpackedPB.back` maps them."""
    n, keys = upb.n, upb.keys
    inner_cur = None
    if cur is not None:
        t, d = cur[2], cur[3]
        inner_cur = (cur[1],) + (tuple(t) if t is not None else (None,) * n) + \
            tuple(None if d is None else d.get(k) for k in keys)
    out, data = forward_jback(state, _fn, tape2, (upb.inner, reader, dy, inner_cur), {})
    kw = dict(zip(keys, out[1 + n:])) if keys else None
    packed = (None if cur is None else cur[0], out[0], tuple(out[1:1 + n]), kw)

    class _Back:
        def back(self, state, reader2, dz):
            inner_dz = None
            if dz is not None:
                t, d = dz[2], dz[3]
                inner_dz = (dz[1],) + (tuple(t) if t is not None else (None,) * n) + \
                    tuple(None if d is None else d.get(k) for k in keys)
            g = data.back(state, reader2, inner_dz)
            d_cur = g[4]
            if d_cur is not None:
                d_kw = dict(zip(keys, d_cur[1 + n:])) if keys else None
                d_cur = (None if dz is None else dz[0], d_cur[0], tuple(d_cur[1:1 + n]), d_kw)
            elif dz is not None and dz[0] is not None:
                d_cur = (dz[0], None, None, None)
            return (g[0], g[1], g[2], g[3], d_cur)
    return packed, _Back()


class _CurOnly:
    """Outer pullback data of a jback that adds nothing to `cur`: only `cur` gets dz."""

    __slots__ = ()

    def back(self, state, reader, dz):
        return (None, None, None, None, dz)


SPECIAL_CALLEES[id(run_jcall)] = (run_jcall, forward_jcall)
SPECIAL_CALLEES[id(run_jback)] = (run_jback, forward_jback)
