"""A refusal of reverse mode: a view of an array read after an in-place update of that
array.

    v = z[1:]        # a view of z
    z *= x           # z updated in place: v sees the new values
    return v @ v     # reverse mode records v as it was, without x in it

Reverse mode records and differentiates values, and a view taken before an in-place
update of its base changes without a statement of its own, so the gradient through it
would silently be lost.  `refuse_stale_views` raises a TypeError naming the view and
the update instead, when a view (a slice `a[i:j]`, `a[..., k]`, `a.T`, `a.reshape(...)`,
...) of an array that the function updates in place (`a[...] = v`, `a += v`, ...) is
made before the update and read after it.  An element `a[i]` read as a number is no
view.  Forward mode needs no such refusal: the tangent of a view is the same view of
the tangent, which the update reaches (`adjoint.passes.tangent`).
"""
from __future__ import annotations

from typing import Any

from ssair import IR, Const, Var
from ssair.cfg import successors
from ssair.primitives import INPLACE

WRITES = frozenset({"setitem"}) | frozenset(INPLACE)    # `a[i] = v`, `a op= v`
VIEW_ATTRS = frozenset({"T", "real", "imag", "mT"})
VIEW_METHODS = frozenset({"reshape", "ravel", "transpose", "swapaxes", "squeeze",
                          "diagonal", "view"})


def refuse_stale_views(ir: IR, varied: set, kinds: Any = None) -> None:
    """Raise TypeError for a view read after an in-place update of its base (see the
    module docstring); `varied`: the values that may depend on a differentiated
    argument; `kinds`: the scalar analysis (its numbers are no views)."""
    defs = {s.var: s for b in ir.blocks for s in b.stmts}
    where = {s.var: (b.id, k) for b in ir.blocks for k, s in enumerate(b.stmts)}
    views: dict = {}          # base -> view statements
    for s in defs.values():
        base = _view_base(s, defs, kinds)
        if base is not None:
            views.setdefault(base, []).append(s)
    if not views:
        return
    reach = _reachable(ir)
    uses = _uses(ir)
    for b in ir.blocks:
        for k, w in enumerate(b.stmts):
            if w.op not in WRITES or not isinstance(w.args[0], Var):
                continue
            if not (w.args[0] in varied or any(a in varied for a in w.args[1:2])):
                continue
            for v in views.get(w.args[0], ()):
                vb, vk = where[v.var]
                before = (vb == b.id and vk < k) or (vb != b.id and b.id in reach[vb]
                                                     and vb not in reach[b.id])
                if before and _read_after(uses.get(v.var, ()), b.id, k, reach):
                    raise TypeError(
                        f"adjoint: a view of an array (made at line {v.line}) is read after "
                        f"an in-place update of that array (line {w.line}) in {ir.name}"
                        f"{_at(ir, w.line)}; reverse mode does not follow the update into "
                        "the view yet: take the view after the update, or copy it "
                        "(`.copy()`)")


def _view_base(s, defs: dict, kinds: Any):
    """The array `s` makes a view of, or None."""
    if kinds is not None and kinds.is_scalar(s.var):
        return None
    if s.op == "getitem" and isinstance(s.args[0], Var) and len(s.args) >= 2 \
            and any(_slicing(a, defs) for a in s.args[1:]):
        return s.args[0]
    if s.op == "getattr" and isinstance(s.args[0], Var) and isinstance(s.args[1], Const) \
            and s.args[1].value in VIEW_ATTRS:
        return s.args[0]
    if s.op == "call" and isinstance(s.args[0], Var):
        m = defs.get(s.args[0])
        if m is not None and m.op == "getattr" and isinstance(m.args[0], Var) and \
                isinstance(m.args[1], Const) and m.args[1].value in VIEW_METHODS:
            return m.args[0]
    return None


def _slicing(a, defs: dict) -> bool:
    """Is index operand `a` a slice, `...`, `None`, or a tuple holding one?"""
    if isinstance(a, Const):
        v = a.value
        items = v if isinstance(v, tuple) else (v,)
        return any(x is Ellipsis or x is None or isinstance(x, slice) for x in items)
    made = defs.get(a)
    if made is None:
        return False
    if made.op == "call" and isinstance(made.args[0], Const) and made.args[0].value is slice:
        return True
    return made.op == "tuple" and any(_slicing(x, defs) for x in made.args)


def _reachable(ir: IR) -> dict:
    """Block id -> the ids of the blocks reachable from it by one or more edges."""
    succ = successors(ir)
    out = {}
    for b in ir.blocks:
        seen, todo = set(), list(succ.get(b.id, ()))
        while todo:
            x = todo.pop()
            if x not in seen:
                seen.add(x)
                todo.extend(succ.get(x, ()))
        out[b.id] = seen
    return out


def _uses(ir: IR) -> dict:
    """Var -> [(block id, statement index)] of its uses (a terminator: index len)."""
    out: dict = {}
    for b in ir.blocks:
        for k, d in enumerate(list(b.phis) + list(b.stmts)):
            for a in d.operands():
                if isinstance(a, Var):
                    out.setdefault(a, []).append((b.id, k - len(b.phis)))
        for a in b.term.operands():
            if isinstance(a, Var):
                out.setdefault(a, []).append((b.id, len(b.stmts)))
    return out


def _read_after(uses, block: int, k: int, reach: dict) -> bool:
    return any((ub == block and uk > k) or (ub != block and ub in reach[block])
               for ub, uk in uses)


def _at(ir: IR, line) -> str:
    return f" at {ir.file}:{line}" if ir.file and line else ""
