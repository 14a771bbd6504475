"""Activity analysis: which values need an adjoint (and their statements a pullback).

A value is *active* when it is *varied* (it may depend on a differentiable argument)
and *useful* (it may reach the returned value).  Only active values get adjoint
variables; only statements whose result is active get pullbacks, and only the alphas
of those pullbacks are recorded.

Varied (forward, to a fixpoint), given which arguments are differentiable (the
caller decides from the runtime values: floats, float arrays, tuples and closures
holding them; ints, bools, None and strings are not):
  * constants are never varied;
  * a phi is varied when an incoming value is;
  * a statement is varied when an operand is, unless its rule is non-differentiable
    (comparisons, `not`, bitwise ops, `//`, `len`, `int`, `range`, `floor`,
    `np.zeros`, ...) or it reads a shape attribute (`a.shape`, `a.ndim`, ...).  So
    values provably int/bool (int constants, `len`, comparisons, range counters and
    integer arithmetic on those) are never varied; anything else is treated as
    potentially differentiable, since types are unknown before inference;
  * `a[i] = v` with a varied `v` makes `a` varied, and with it every value that may
    alias the same array (phis and copies connected to `a`);
  * a call of a user function with a varied operand may write into array operands,
    so containers passed to it (`np.zeros(...)` results, lists) become varied.

Useful (backward from the return value, and from arguments the function writes
into, which its caller sees): the operands of a useful varied statement
or phi are useful; `a[i] = v` with a useful `a` makes `v` useful; a user-function
call is useful when its result, any operand, or any value captured by a closure
operand is (it may write into them).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ssair import IR, Const, Phi, Return, Var

from ..rules import lookup_callee, lookup_op
from .aliases import SHAPE_ATTRS

CONTAINER_CALLS = ("zeros", "ones", "empty", "zeros_like", "ones_like", "empty_like",
                   "full", "array", "copy")


@dataclass
class Activity:
    """The result: `varied`, `useful` and `active` (their intersection) sets of Vars."""

    varied: set = field(default_factory=set)
    useful: set = field(default_factory=set)

    @property
    def active(self) -> set:
        return self.varied & self.useful

    def is_active(self, v) -> bool:
        return isinstance(v, Var) and v in self.varied and v in self.useful


def analyze(ir: IR, active_args: tuple) -> Activity:
    """Activity of every value of `ir`; `active_args[k]` says whether argument k is
    differentiable."""
    act = Activity()
    act.varied = {a.var for a, on in zip(ir.args, active_args) if on}
    _varied(ir, act.varied)
    act.useful = _useful(ir, act.varied)
    return act


def _vars(ops) -> list:
    return [a for a in ops if isinstance(a, Var)]


def stmt_kills_variation(s) -> bool:
    """True when the statement's result never carries a cotangent."""
    if s.op == "getattr":
        name = s.args[1]
        return isinstance(name, Const) and name.value in SHAPE_ATTRS
    if s.op == "call":
        f = s.args[0]
        if isinstance(f, Const):
            r = lookup_callee(f.value)
            return r is not None and not r.varied
        return False
    r = lookup_op(s.op)
    return r is not None and not r.varied


def is_user_call(s) -> bool:
    """A `call` whose callee is not known to have a rule (so it is transformed), or
    a `jcall`/`jback` of a transformed IR that is differentiated again."""
    if s.op in ("jcall", "jback"):
        return True
    if s.op != "call":
        return False
    f = s.args[0]
    return not (isinstance(f, Const) and lookup_callee(f.value) is not None)


def _containers(ir: IR) -> set:
    """Lists and arrays made in the function, and their bound methods (`acc.append`
    stores its argument into `acc`)."""
    out = set()
    for b in ir.blocks:
        for s in b.stmts:
            if s.op == "list":
                out.add(s.var)
            if s.op == "call" and isinstance(s.args[0], Const):
                name = getattr(s.args[0].value, "__name__", "")
                if name in CONTAINER_CALLS:
                    out.add(s.var)
            if _method_of(s) in out:
                out.add(s.var)
    return out


def _method_of(s):
    """The receiver `obj` of `%m = getattr(obj, 'name')` (a bound method or other
    attribute that may write into `obj`), or None."""
    if s.op != "getattr" or not isinstance(s.args[0], Var):
        return None
    name = s.args[1]
    if isinstance(name, Const) and name.value in SHAPE_ATTRS:
        return None
    return s.args[0]


def _alias_groups(ir: IR) -> dict:
    """Var -> representative, joining phis and copies with their operands."""
    parent: dict = {}

    def find(v):
        while parent.get(v, v) != v:
            v = parent[v]
        return v

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
    for b in ir.blocks:
        for p in b.phis:
            for v in _vars(p.operands()):
                union(p.var, v)
        for s in b.stmts:
            if s.op == "copy" and isinstance(s.args[0], Var):
                union(s.var, s.args[0])
            receiver = _method_of(s)
            if receiver is not None:    # writing through a method writes the receiver
                union(s.var, receiver)
    return {v: find(v) for v in list(parent)}


def _varied(ir: IR, varied: set) -> None:
    groups = _alias_groups(ir)
    containers = _containers(ir)
    changed = True
    while changed:
        changed = False
        new, mutated = set(), set()
        for b in ir.blocks:
            for d in b.definitions():
                _varied_step(d, varied, containers, new, mutated)
        roots = {groups.get(v, v) for v in mutated}
        new |= mutated | roots | {v for v, g in groups.items() if g in roots}
        if not new <= varied:
            varied |= new
            changed = True


def _varied_step(d, varied: set, containers: set, new: set, mutated: set) -> None:
    """Add to `new` what `d` makes varied; arrays written with varied values (and
    containers passed to user calls) go to `mutated`, which spreads to aliases."""
    if not isinstance(d, Phi) and d.op == "pop":
        new.add(d.var)      # tape values of a transformed IR (nested AD)
        return
    ops = _vars(d.operands())
    if not any(v in varied for v in _carrying(d, ops)):
        return
    if isinstance(d, Phi):
        new.add(d.var)
        return
    if d.op == "setitem":
        if _is_var_in(d.args[1], varied) and isinstance(d.args[0], Var):
            mutated.add(d.args[0])
        return
    if not stmt_kills_variation(d):
        new.add(d.var)
    if is_user_call(d):
        mutated |= {v for v in ops if v in containers}


def _carrying(d, ops: list) -> list:
    """The operands of `d` through which variation can reach its result: all but the
    keyword operands its rule says carry none (`Rule.nondiff_keywords`)."""
    if isinstance(d, Phi) or d.op != "call" or not d.kwargs or not isinstance(d.args[0], Const):
        return ops
    r = lookup_callee(d.args[0].value)
    if r is None or not r.nondiff_keywords:
        return ops
    return _vars(list(d.args[1:]) + [v for k, v in d.kwargs.items()
                                     if k not in r.nondiff_keywords])


def _is_var_in(a, s: set) -> bool:
    return isinstance(a, Var) and a in s


def _useful(ir: IR, varied: set) -> set:
    useful = set()
    args = {a.var for a in ir.args}
    defs = {s.var: s for b in ir.blocks for s in b.stmts}
    for b in ir.blocks:
        if isinstance(b.term, Return) and isinstance(b.term.value, Var):
            useful.add(b.term.value)
        for s in b.stmts:   # arguments written into: the caller sees them
            useful |= {v for v in written_in_place(s, defs) if v in args}
    captured = {s.var: _vars(s.args[1:]) for b in ir.blocks for s in b.stmts
                if s.op == "make_closure"}
    captured.update({s.var: [_method_of(s)] for b in ir.blocks for s in b.stmts
                     if _method_of(s) is not None})
    for v, held in list(captured.items()):     # (a view captured: the array it views)
        captured[v] = held + [u for h in held for u in _viewed(h, defs)]
    changed = True
    while changed:
        changed = False
        for b in reversed(ir.blocks):
            for d in reversed(list(b.definitions())):
                add = _useful_step(d, varied, useful, captured, defs)
                if not add <= useful:
                    useful |= add
                    changed = True
    return useful


def _useful_step(d, varied: set, useful: set, captured: dict, defs: dict) -> set:
    ops = _vars(d.operands())
    if isinstance(d, Phi):
        return set(ops) if d.var in useful and d.var in varied else set()
    if d.op == "setitem":
        return set(ops) if _is_var_in(d.args[0], useful) else set()
    if d.op == "push":
        return set(ops)
    if is_user_call(d) and any(v in varied for v in ops):
        reach = ops + [c for v in ops for c in captured.get(v, ())]
        reach += [u for v in reach for u in _viewed(v, defs)]   # a view passed: its
        # callee may write into the array it views, which is read later
        if d.var in useful or any(v in useful for v in reach):
            return set(ops) | {d.var}
        return set()
    if d.var in useful and d.var in varied:
        return set(ops)
    return set()


# ndarray methods that write into their receiver
ARRAY_WRITING_METHODS = frozenset({
    "fill", "sort", "partition", "put", "itemset", "resize", "setfield", "byteswap",
    "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__",
    "__ifloordiv__", "__imod__", "__imatmul__"})
# numpy functions (without a derivative rule) that write into their first argument
WRITES_INTO_ARGUMENT = (np.copyto, np.put, np.place, np.putmask, np.fill_diagonal,
                        np.put_along_axis)


def written_in_place(s, defs: dict) -> list:
    """The operands statement `s` writes into by a store, an array-writing method
    (`a.fill(v)`, `a.sort()`), a numpy function that writes into its argument
    (`np.copyto(a, v)`, `np.add.at(a, i, v)`) or `out=`."""
    if s.op == "setitem":
        return [s.args[0]]
    if s.op != "call":
        return []
    out = [s.kwargs["out"]] if isinstance(s.kwargs.get("out"), Var) else []
    if library_write(s, defs) is not None:
        return out + [s.args[1]]
    f = s.args[0]
    m = defs.get(f) if isinstance(f, Var) else None
    if m is not None and m.op == "getattr" and isinstance(m.args[1], Const) and \
            m.args[1].value in ARRAY_WRITING_METHODS:
        return out + [m.args[0]]
    return out


def library_write(s, defs: dict):
    """The name of the numpy function call `s` is, when it writes into its first
    argument (`np.copyto(a, v)`, `np.add.at(a, i, v)`: `WRITES_INTO_ARGUMENT` and
    a ufunc's `at`), else None."""
    if s.op != "call" or len(s.args) < 2:
        return None
    f = s.args[0]
    m = defs.get(f) if isinstance(f, Var) else None
    if m is not None and m.op == "getattr" and isinstance(m.args[0], Const) and \
            isinstance(m.args[0].value, np.ufunc) and m.args[1] == Const("at"):
        return f"numpy.{m.args[0].value.__name__}.at"
    g = f.value if isinstance(f, Const) else None
    if isinstance(getattr(g, "__self__", None), np.ufunc) and getattr(g, "__name__", "") == "at":
        return f"numpy.{g.__self__.__name__}.at"
    if any(g is w for w in WRITES_INTO_ARGUMENT):
        return f"numpy.{g.__name__}"
    return None


def _viewed(v, defs: dict) -> list:
    """The values `v` may be a part of: what it was indexed, sliced, viewed or read
    as an attribute out of, through chains of those (a view passed to a callee may be
    written into, and that write reaches them)."""
    from .aliases import _view_call
    out = []
    for _ in range(64):
        s = defs.get(v) if isinstance(v, Var) else None
        if s is None or not (s.op in ("getitem", "copy") or s.op == "getattr" and not (
                isinstance(s.args[1], Const) and s.args[1].value in SHAPE_ATTRS)
                or s.op == "call" and _view_call(s, defs)):
            return out
        if s.op != "call":
            v = s.args[0]
        elif isinstance(s.args[0], Var):          # `t.reshape(2, 2)`: the receiver
            v = defs[s.args[0]].args[0]
        else:                                     # `np.reshape(t, ...)`
            v = s.args[1] if len(s.args) > 1 else None
        if not isinstance(v, Var):
            return out
        out.append(v)
    return out
