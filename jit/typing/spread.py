"""Calls whose meaning depends on how many items a tuple holds, which the lowering
could not see: `f(*t, **d)` (it emits `call_unpacked(f, t, d)`, `lowering.runtime`),
the loop `for a, b in zip(*t)` (`shortest(t)`, `column(t, i)`), `{**a, **b}` and a
call's `k=v, **d` (`merged(...)`, `keywords(...)`: a dict display once the keys are
known); and `functools.partial(g, a, b)` made in compiled code, which is the closure
over `a, b` that a partial of `g` passed as an argument is
(`adjoint.partials.partial_template`).  Compiled code has no call of "as many
arguments as the tuple has", so once typing knows the
tuple's length and the dict's keys (both part of their types) the statement is
rewritten as what it means for them, `f(t[0], ..., t[n-1], k=d["k"], ...)`,
`min(len(t[0]), ...)`, `(t[0][i], ..., t[n-1][i])`, and the function is retyped from
the start on that copy (`Engine.infer`, as for `jit.typing.unroll`).  The J
transform is then taken of the rewritten IR, so each item gets its own cotangent.
"""
from __future__ import annotations

import functools
from typing import Callable

from ssair.ir import IR, Const, Stmt, Var
from ssair.primitives import operator_primitive

from adjoint.partials import partial_template
from jit.types import NONE, BuiltListT, DictT, FunctionT, TupleT, TypingError
from jit.typing.unroll import RetypeNeeded
from lowering.runtime import call_unpacked, column, keywords, merged, shortest


class RewriteStatement(RetypeNeeded):
    """The statement defining `var` is to become the statements `build(ir, stmt)`
    makes (the last of them defines `var`)."""

    def __init__(self, message: str, var: Var, build: Callable) -> None:
        super().__init__(message)
        self.var, self.build = var, build

    def apply(self, ir: IR) -> bool:
        for b in ir.blocks:
            for k, s in enumerate(b.stmts):
                if s.var == self.var and s.op == "call":
                    b.stmts[k:k + 1] = self.build(ir, s)
                    return True
        return False


def _count(t) -> int:
    if not isinstance(t, TupleT) or isinstance(t, (DictT, BuiltListT)):
        raise TypingError(f"f(*x) and zip(*x) are compiled for a tuple or list x of known "
                          f"length, not {t}")
    return len(t.elems)


def _emit(ir: IR, out: list, op: str, args: list, line) -> Var:
    out.append(Stmt(ir.new_var(), op, args, {}, line))
    return out[-1].var


def _spread(ts: list) -> Callable:
    count = _count(ts[2])
    if ts[3] != NONE and not isinstance(ts[3], DictT):
        raise TypingError(f"f(**x) is compiled for a dict x with string keys, not {ts[3]}")
    keys = ts[3].keys if isinstance(ts[3], DictT) else ()

    def build(ir: IR, s: Stmt) -> list:
        f, items, kw = s.args[1:4]
        made = []
        pos = [_emit(ir, made, "getitem", [items, Const(j)], s.line) for j in range(count)]
        named = {k: _emit(ir, made, "getitem", [kw, Const(k)], s.line) for k in keys}
        return made + [Stmt(s.var, "call", [f] + pos, named, s.line, s.name)]
    return build


def _shortest(ts: list) -> Callable:
    count = _count(ts[1])

    def build(ir: IR, s: Stmt) -> list:
        made = []
        lens = [_emit(ir, made, "call", [Const(len), _emit(ir, made, "getitem",
                                                          [s.args[1], Const(j)], s.line)],
                      s.line) for j in range(count)]
        if count == 0:
            return [Stmt(s.var, "copy", [Const(0)], {}, s.line, s.name)]
        if count == 1:
            return made + [Stmt(s.var, "copy", [lens[0]], {}, s.line, s.name)]
        return made + [Stmt(s.var, "call", [Const(min)] + lens, {}, s.line, s.name)]
    return build


def _column(ts: list) -> Callable:
    count = _count(ts[1])

    def build(ir: IR, s: Stmt) -> list:
        seqs, i = s.args[1], s.args[2]
        made = []
        items = [_emit(ir, made, "getitem", [_emit(ir, made, "getitem", [seqs, Const(j)],
                                                    s.line), i], s.line)
                 for j in range(count)]
        return made + [Stmt(s.var, "tuple", items, {}, s.line, s.name)]
    return build


def _partial(ts: list, names: tuple) -> Callable:
    """`functools.partial(g, *bound, **named)` of a plain user function `g`:
    `make_closure` of the template that a partial of `g` binding as many arguments
    and the same keywords types as (its captured values: `bound`, then `named`'s)."""
    g = ts[1].func if len(ts) > 1 and isinstance(ts[1], FunctionT) else None
    template = partial_template(functools.partial(g, *ts[2:len(ts) - len(names)],
                                                  **dict.fromkeys(names))) \
        if callable(g) else None
    if template is None:
        raise TypingError("functools.partial is compiled for a plain Python function "
                          "(no closure, no *args or **kwargs) and for a library function "
                          "with a derivative rule whose signature Python knows")

    def build(ir: IR, s: Stmt) -> list:
        return [Stmt(s.var, "make_closure", [Const(template)] + list(s.args[2:])
                     + [s.kwargs[k] for k in names], {}, s.line, s.name)]
    return build


def _merge(ts: list, checked: bool) -> Callable:
    """`merged(a, b, ...)` (`{**a, **b}`) and `keywords(...)` (a call's `k=v, **d`)
    of dicts whose keys typing knows: the dict display of every part's entries in
    order (the display keeps a repeated key's last value, at its first place).
    `keywords` with a key given twice is CPython's TypeError at run time: refused."""
    for t in ts[1:]:
        if not isinstance(t, DictT):
            raise TypingError(f"{{**d}} is compiled for a dict d with string keys, not {t}")
    keys = [(j, k) for j, t in enumerate(ts[1:]) for k in t.keys]
    if checked and len({k for _, k in keys}) < len(keys):
        raise TypingError("a keyword argument given twice (CPython raises TypeError)")

    def build(ir: IR, s: Stmt) -> list:
        made: list = []
        args: list = []
        for j, k in keys:
            args += [Const(k), _emit(ir, made, "getitem", [s.args[1 + j], Const(k)], s.line)]
        return made + [Stmt(s.var, "dict", args, {}, s.line, s.name)]
    return build


_BUILDERS = {call_unpacked: _spread, shortest: _shortest, column: _column,
             merged: lambda ts: _merge(ts, False), keywords: lambda ts: _merge(ts, True)}


def _as_primitive(op: str) -> Callable:
    def build(ir: IR, s: Stmt) -> list:
        return [Stmt(s.var, op, list(s.args[1:]), {}, s.line, s.name)]
    return build


def rewrite_needed(f, s: Stmt, ts: list):
    """For a call of one of the helpers above: the rewrite to retype with (or the
    TypingError saying why it cannot be compiled).  For a call of a function value
    that is an `operator` function (`g(x, y)` with `g = operator.mul`, known once
    typed): the primitive it is, as lowering emits where it sees the function.
    None for any other callee."""
    op = operator_primitive(f)
    if op is not None and not s.kwargs and len(s.args) - 1 == op[1]:
        return RewriteStatement(f"a call of operator.{op[0]}", s.var, _as_primitive(op[0]))
    if f is functools.partial:
        make = lambda ts: _partial(ts, tuple(s.kwargs))   # noqa: E731
    else:
        make = next((m for g, m in _BUILDERS.items() if g is f), None)
    if make is None:
        return None
    try:
        return RewriteStatement(f"a call of {f.__name__}", s.var, make(ts))
    except TypingError as e:
        return e
