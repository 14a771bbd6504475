"""`d.get(k, v)`, `d.items()`, `d.values()` and `d.keys()` of a dict with string keys
(`DictT`: its keys are part of its type), compiled as what they are for those keys:
reads of constant keys.  The type rule of `getattr(d, 'get')` asks for its calls to be
rewritten (`DictMethodCalls`, a `RetypeNeeded` as `jit.typing.spread`'s rewrites) and
the function is retyped on the rewritten copy, which the J transform then takes, so
each entry read gets its cotangent or tangent as `d[k]` does.  The views Python
returns are tuples here (iterated over, measured and indexed alike; a loop over
entries of different types is unrolled, `jit.typing.unroll`).  The interpreter's
version of the same methods is `adjoint.container_methods`.

`loop_items(s)`, the sequence every `for x in s` reads (`lowering.runtime`), is
likewise rewritten by type: for a dict, the tuple of its constant keys; for anything
else (an array, a list, a tuple: the dict views are tuples here), `s` itself, so
compiled code, its J transform and its aliasing checks see the loop read `s` directly.
"""
from __future__ import annotations

from typing import Callable

from lowering.runtime import loop_items, with_entry
from ssair.ir import IR, Const, Stmt, Var

from jit.library.registry import REGISTRY
from jit.typing.infer import Context, LiteralT
from jit.typing.spread import RewriteStatement
from jit.typing.unroll import RetypeNeeded
from jit.types import DictT, Type, known_string

METHODS = ("get", "items", "values", "keys")


class DictMethodCalls(RetypeNeeded):
    """The statement `%m = getattr(d, name)` goes; each call of `%m` becomes the
    statements `plans[call var](ir, call)` makes (the last defines the call's var)."""

    def __init__(self, message: str, var: Var, plans: dict) -> None:
        super().__init__(message)
        self.var, self.plans = var, plans

    def apply(self, ir: IR) -> bool:
        found = False
        for b in ir.blocks:
            out = []
            for s in b.stmts:
                plan = self.plans.get(s.var) if s.op == "call" else None
                if plan is not None:
                    out += plan(ir, s)
                    found = True
                elif not (s.var == self.var and s.op == "getattr"):
                    out.append(s)
            b.stmts = out
        return found


def _is_method(ctx: Context, s, ts: list) -> bool:
    return isinstance(ts[0], DictT) and ctx.const(s.args[1]) in METHODS


def _t_method(ctx: Context, s, ts: list) -> Type:
    d, name = s.args[0], ctx.const(s.args[1])
    plans = {}
    for b in ctx.typing.ir.blocks:
        for u in b.stmts:
            if s.var not in u.operands():
                continue
            if u.op != "call" or u.args[0] != s.var or s.var in u.args[1:] or \
                    s.var in u.kwargs.values():
                ctx.fail(f"the method {name!r} of a dict is compiled where it is called, "
                         "not passed on")
            plans[u.var] = _plan(ctx, ts[0], d, name, u)
    if not plans:
        ctx.fail(f"the method {name!r} of a dict is compiled where it is called")
    raise DictMethodCalls(f"a call of dict.{name}", s.var, plans)


def _plan(ctx: Context, t: DictT, d, name: str, call: Stmt) -> Callable:
    """How one call of `d.<name>` is rewritten, for the keys of `t`."""
    args = list(call.args[1:])
    if call.kwargs or len(args) > (2 if name == "get" else 0) or (name == "get" and not args):
        ctx.fail(f"dict.{name} called with these arguments is not compiled")
    if name == "get":
        return _get_plan(ctx, t, d, args)

    def build(ir: IR, s: Stmt) -> list:
        made, entries = [], []
        for k in t.keys:
            made.append(Stmt(ir.new_var(), "getitem", [d, Const(k)], {}, s.line))
            value = made[-1].var
            if name == "items":
                made.append(Stmt(ir.new_var(), "tuple", [Const(k), value], {}, s.line))
            entries.append(Const(k) if name == "keys" else made[-1].var)
        if name == "keys":
            made = []
        return made + [Stmt(s.var, "tuple", entries, {}, s.line, s.name)]
    return build


def _get_plan(ctx: Context, t: DictT, d, args: list) -> Callable:
    key = ctx.const(args[0], _MISSING)
    if key is _MISSING:
        ctx.fail("dict.get with a computed key is not compiled (a constant key of the dict)")
    default = args[1] if len(args) == 2 else Const(None)

    def build(ir: IR, s: Stmt) -> list:
        if key in t.keys:
            return [Stmt(s.var, "getitem", [d, Const(key)], {}, s.line, s.name)]
        return [Stmt(s.var, "copy", [default], {}, s.line, s.name)]
    return build


_MISSING = object()
REGISTRY.overload("getattr", "a dict's get, items, values, keys (rewritten into reads of "
                  "its constant keys)", _is_method, _t_method, family="containers")


def _keys_tuple(keys: tuple) -> Callable:
    def build(ir: IR, s: Stmt) -> list:
        return [Stmt(s.var, "tuple", [Const(k) for k in keys], {}, s.line, s.name)]
    return build


class ReadsItself(RetypeNeeded):
    """`%s = loop_items(%v)` goes and every use of `%s` reads `%v` (no copy, whose
    cotangent would be summed apart from `%v`'s)."""

    def __init__(self, var: Var) -> None:
        super().__init__("a loop over a sequence")
        self.var = var

    def apply(self, ir: IR) -> bool:
        for b in ir.blocks:
            for k, s in enumerate(b.stmts):
                if s.var == self.var and s.op == "call":
                    del b.stmts[k]
                    ir.replace_uses({s.var: s.args[1]})
                    return True
        return False


def _t_loop_items(ctx: Context, s, ts: list) -> Type:
    """A dict's keys at once (a tuple of constants, retyped); any other sequence is
    itself, rewritten with the function's other loops once it is typed."""
    if isinstance(ts[0], DictT):
        raise RewriteStatement("a loop over a dict", s.var, _keys_tuple(ts[0].keys))
    if isinstance(ts[0], LiteralT) and isinstance(ts[0].value, (set, frozenset)):
        raise RewriteStatement("a loop over a set", s.var, _keys_tuple(tuple(ts[0].value)))
    ctx.typing.deferred[s.var] = ReadsItself(s.var)
    return ts[0]


def _cg_loop_items(fc, s, ts):
    return fc.get(s.args[1], s.type)


REGISTRY.declare(loop_items, family="containers", pattern="a loop's sequence",
                 types=_t_loop_items, lower=_cg_loop_items, numpy_too=True)


def _t_with_entry(ctx: Context, s, ts: list) -> Type:
    """`with_entry(d, key, value)` (`d[key] = value` into a dict only its local refers
    to, and a dict comprehension's step: `lowering.dict_stores`) with a key known at
    compile time: rewritten into the dict display of d's entries and the new one, so
    typing, the J transform and code generation see reads of constant keys."""
    d, key = ts[0], ctx.const(s.args[2], known_string(ts[1], _MISSING))
    if not isinstance(d, DictT) or type(key) is not str:
        ctx.fail(f"storing an entry into a {d} under a key of type {ts[1]} is not compiled "
                 "(a dict with str keys known at compile time is: `d[\"w\"] = x`, or keys "
                 "of a loop over a tuple of str, which is unrolled)")
    raise RewriteStatement("an entry stored into a dict", s.var,
                           _display_with(d.keys, s.args[1], key, s.args[3]))


def _display_with(keys: tuple, d, key: str, value) -> Callable:
    def build(ir: IR, s: Stmt) -> list:
        made, args = [], []
        for k in keys:          # (an existing key keeps its place, as in Python)
            if k == key:
                args += [Const(k), value]
                continue
            made.append(Stmt(ir.new_var(), "getitem", [d, Const(k)], {}, s.line))
            args += [Const(k), made[-1].var]
        if key not in keys:
            args += [Const(key), value]
        return made + [Stmt(s.var, "dict", args, {}, s.line, s.name)]
    return build


REGISTRY.declare(with_entry, family="containers", pattern="a dict with str keys, a key "
                 "known at compile time (rewritten into a dict display)",
                 types=_t_with_entry, numpy_too=True)
