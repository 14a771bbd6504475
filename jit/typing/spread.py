"""Calls `f(*t, **d)` whose tuple items and dict keys the lowering could not see
(it emits `call_unpacked(f, t, d)`, `lowering.runtime`): compiled code has no call of
"as many arguments as the tuple has", so once typing knows the tuple's length and
the dict's keys (both part of their types) the statement is rewritten as the call
they make, `f(t[0], ..., t[n-1], k=d["k"], ...)`, and the function is retyped from
the start on that copy (`Engine.infer`, as for `jit.typing.unroll`).  The J
transform is then taken of the rewritten IR, so each item gets its own cotangent.
"""
from __future__ import annotations

from ssair.ir import IR, Const, Stmt, Var

from jit.types import NONE, BuiltListT, DictT, TupleT, TypingError
from jit.typing.unroll import RetypeNeeded


class SpreadNeeded(RetypeNeeded):
    """The `call_unpacked` statement defining `var` is to be spread into a call of
    `count` positional items and the keywords `keys`."""

    def __init__(self, message: str, var: Var, count: int, keys: tuple) -> None:
        super().__init__(message)
        self.var, self.count, self.keys = var, count, keys

    def apply(self, ir: IR) -> bool:
        return spread_call(ir, self.var, self.count, self.keys)


def spread_needed(ctx, s: Stmt, ts: list) -> Exception:
    """What typing `call_unpacked(f, t, d)` raises: the rewrite, or why it cannot."""
    items, kw = ts[2], ts[3]
    if not isinstance(items, TupleT) or isinstance(items, (DictT, BuiltListT)):
        return TypingError(f"f(*x) is compiled for a tuple or list argument x of known "
                           f"length, not {items}")
    if kw != NONE and not isinstance(kw, DictT):
        return TypingError(f"f(**x) is compiled for a dict x with string keys, not {kw}")
    keys = kw.keys if isinstance(kw, DictT) else ()
    return SpreadNeeded("a call f(*t, **d)", s.var, len(items.elems), keys)


def spread_call(ir: IR, var: Var, count: int, keys: tuple) -> bool:
    """Rewrite, in place, the `call_unpacked` statement defining `var`."""
    for b in ir.blocks:
        for k, s in enumerate(b.stmts):
            if s.var != var or s.op != "call":
                continue
            f, items, kw = s.args[1:4]
            made, pos, named = [], [], {}
            for j in range(count):
                made.append(Stmt(ir.new_var(), "getitem", [items, Const(j)], {}, s.line))
                pos.append(made[-1].var)
            for key in keys:
                made.append(Stmt(ir.new_var(), "getitem", [kw, Const(key)], {}, s.line))
                named[key] = made[-1].var
            made.append(Stmt(s.var, "call", [f] + pos, named, s.line, s.name))
            b.stmts[k:k + 1] = made
            return True
    return False
