"""Writes a caller cannot see: into an array the function made itself.

A compiled call that meets a division by zero (or an int64 overflow) deoptimises, and
its rerun in Python gives CPython's exact semantics: inf or nan for a numpy scalar,
ZeroDivisionError for a Python number, which compiled code types alike
(`jit.codegen.scalar`).  A function that has written into memory its caller can see
cannot be rerun (the rerun would write twice): `Typing.writes` marks it, and its
deopt raises instead (`jit.api._not_rerun`).  A write into an array the function
allocated itself (`np.zeros(n)`, the result of arithmetic, a copy, or a view of one
of them) dies with the first run, so the rerun is exact and the write does not mark
the function.  `made_here(ir, target)` says which: a walk back from the written value
through views and phis to its allocations.  Anything it does not know (an argument, a
captured or global value, a call's result) counts as visible.
"""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ssair import IR, Const, Var

# numpy functions whose result is always a new array (keywords that could make it share
# memory, `copy=False`, `out=`, are checked at the call)
ALLOCATORS = frozenset({
    np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like,
    np.full_like, np.array, np.copy, np.arange, np.linspace, np.eye, np.identity,
    np.concatenate, np.stack, np.vstack, np.hstack, np.outer, np.tile, np.diag})
# operators whose array result is new memory
NEW_RESULTS = frozenset({"add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                         "matmul", "neg", "pos", "abs"})
# ops whose result is a view of (or an element of) their first operand
VIEWS = frozenset({"getitem"})

_DEFS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # IR -> (defs, phis)


def made_here(ir: IR, target: Any) -> bool:
    """Is `target`, a value of `ir` written into, memory that `ir` allocated itself
    (so that its caller never sees the write)?"""
    defs, phis = _tables(ir)
    seen: set = set()
    todo = [target]
    while todo:
        v = todo.pop()
        if isinstance(v, Const):
            if isinstance(v.value, np.ndarray):
                return False
            continue
        if not isinstance(v, Var) or v in seen:
            if not isinstance(v, Var):
                return False
            continue
        seen.add(v)
        if v in phis:
            todo.extend(phis[v])
            continue
        s = defs.get(v)
        if s is None:                   # an argument (a captured value leads them)
            return False
        if s.op in NEW_RESULTS:
            continue
        if s.op in VIEWS:
            todo.append(s.args[0])
            continue
        if s.op == "call" and isinstance(s.args[0], Const) and \
                _allocates(s.args[0].value, s.kwargs):
            continue
        return False
    return True


def _allocates(f: Any, kwargs: dict) -> bool:
    try:
        known = f in ALLOCATORS
    except TypeError:                   # (an unhashable callee)
        return False
    if not known or "out" in kwargs:
        return False
    copy = kwargs.get("copy")
    return copy is None or isinstance(copy, Const) and copy.value is True


def _tables(ir: IR) -> tuple:
    hit = _DEFS.get(ir)
    if hit is None:
        defs = {s.var: s for b in ir.blocks for s in b.stmts}
        phis = {p.var: p.operands() for b in ir.blocks for p in b.phis}
        hit = _DEFS[ir] = (defs, phis)
    return hit
