"""Which values may share memory with an array that is written after a pullback
reads it (used by `instrument` to decide which alphas are `snapshot`ted).

A pullback records the operands (and sometimes the result) it reads by reference.
When the program later writes into that memory (`t[0:2] = ...`, `t[1] *= v`, a
callee writing into its argument, `out=`), the adjoint would read the new values.
Memory is shared not only by the written name but by every view of it (`t[0:2]`,
`t.T`, `t.reshape(...)`), every container holding it (`(t, b)`, `[t]`, a closure
capturing it), every element taken out of such a container, and every value a user
function returns (it may be its argument; one with a rule from the user too, see
`Rule.keeps_operands`).  `volatile` groups values into classes of possibly shared
memory (union-find; proven numbers never share) and returns the members of the
classes holding a root: a written value, an operand of a call that
may write into it, or an argument that may be an array (a caller may write into it
after this function returns).  Over-approximating costs copies, never gradients.
"""
from __future__ import annotations

from typing import Any

from ssair import IR, Const, Var
from ssair.primitives import INPLACE

from ..rules import lookup_callee

# ops whose result is a new object that shares no memory with an operand
FRESH_OPS = frozenset({
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "neg", "pos",
    "abs", "lt", "le", "gt", "ge", "eq", "ne", "is", "isnot", "in", "notin", "not",
    "truth", "invert", "lshift", "rshift", "bitand", "bitor", "bitxor", "snapshot",
    "accum", "zero", "setitem", "push", "pop", "unbcast", "take_index", "dget"})
# attributes of an array that are data about it, not views of its memory
SHAPE_ATTRS = frozenset({"shape", "ndim", "size", "dtype", "__len__"})
CONTAINER_BUILDS = frozenset({"tuple", "list", "dict"})    # displays: hold their operands
VIEW_NAMES = frozenset({"reshape", "ravel", "transpose", "swapaxes", "moveaxis", "squeeze",
                        "expand_dims", "diagonal", "view", "asarray", "atleast_1d",
                        "atleast_2d", "atleast_3d", "broadcast_to", "flip", "fliplr",
                        "flipud", "real", "imag", "asanyarray", "ascontiguousarray",
                        "rot90", "loop_items"})    # (a loop's sequence: itself)


def volatile(ir: IR, kinds: Any, args: set, classes: Any = None) -> set:
    """Values that may share memory with a value written later (module docstring);
    `args`: the arguments that may be arrays (roots); `classes`: `sharing(ir, kinds)`
    when the caller has it."""
    classes = classes if classes is not None else sharing(ir, kinds)
    roots = set(args) | {w for b in ir.blocks for s in b.stmts
                         for w in written_by(s, classes.defs, kinds)}
    held = {classes[r] for r in roots if isinstance(r, Var)}
    return {v for v in classes if classes[v] in held}


class Sharing(dict):
    """Value -> the representative of its class of possibly shared memory (every
    argument, phi and statement result of an IR); `defs` maps each statement's value
    to the statement.  A value it does not hold (one made later) is its own class."""

    def __init__(self, classes: dict, defs: dict):
        super().__init__(classes)
        self.defs = defs

    def of(self, v: Any) -> Any:
        return self.get(v, v)


def sharing(ir: IR, kinds: Any, keeps: Any = None, containers: bool = True) -> Sharing:
    """The classes of values of `ir` that may share memory (module docstring);
    `keeps(s, defs)`, when given, says whether a call of a function without a rule
    may return (a part of) an operand (without it, every such call may), and an
    in-place operator's result is then its left operand only (a list `a += b` holds
    b's elements, which a write can only reach through indexing: a view).  Without
    `containers`, a tuple, list or dict display is not joined with its elements (it
    holds them; `container_writes` follows that relation on its own)."""
    find, union = _union_find()
    defs = {s.var: s for b in ir.blocks for s in b.stmts}
    for b in ir.blocks:
        for p in b.phis:
            for o in p.operands():
                _join(union, kinds, p.var, o)
        for s in b.stmts:
            if not containers and s.op in CONTAINER_BUILDS:
                continue
            if not _fresh(s, defs) and (keeps is None or not _opaque_call(s, defs)
                                        or keeps(s, defs)):
                for o in _kept(s, kinds, keeps is not None):
                    _join(union, kinds, s.var, o)
    every = {a.var for a in ir.args} | set(defs) | {p.var for b in ir.blocks for p in b.phis}
    return Sharing({v: find(v) for v in every}, defs)


def _kept(s, kinds: Any, left_only: bool = False) -> list:
    """The operands whose memory the result of a statement that makes no new object
    may share: all of them, but for `a += b` on a float array (the result is `a`;
    a list `a` would hold `b`'s elements)."""
    ops = list(s.operands())
    if s.op in INPLACE and (left_only or kinds is not None and kinds.is_float_array(ops[0])):
        return ops[:1]
    return ops


def _union_find():
    parent: dict = {}

    def find(v):
        while parent.get(v, v) != v:
            parent[v] = v = parent.get(parent[v], parent[v])
        return v

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
    return find, union


def _join(union, kinds: Any, v, o) -> None:
    if not isinstance(o, Var) or (kinds is not None and (kinds.is_scalar(v)
                                                         or kinds.is_scalar(o))):
        return
    union(v, o)


def written_by(s, defs: dict, kinds: Any) -> set:
    """Values `s` may write into: a `setitem` target, an `out=` array, the array
    operands of a call without a rule (a user function may write into them)."""
    if s.op == "setitem":
        return {s.args[0]} if isinstance(s.args[0], Var) else set()
    out = {v for k, v in s.kwargs.items() if k == "out" and isinstance(v, Var)} \
        if getattr(s, "kwargs", None) else set()
    if s.op in ("call", "jcall") and not _ruled_call(s, defs):
        out |= {v for v in list(s.operands())[1:] if isinstance(v, Var)
                and not (kinds is not None and kinds.is_scalar(v))}
    return out


def _fresh(s, defs: dict) -> bool:
    """`s` makes a new object (no operand's memory): `a.shape`, `a.size`, ... too (`n =
    a.shape[0]` is a number, not a second name of `a`)."""
    if s.op in FRESH_OPS:
        return True
    if s.op == "getattr" and isinstance(s.args[1], Const) and s.args[1].value in SHAPE_ATTRS:
        return True
    if s.op != "call" or _view_call(s, defs):
        return False
    return _ruled_call(s, defs) and not _keeps_operands(s)


def _opaque_call(s, defs: dict) -> bool:
    """A call whose callee has no rule (a user function: it may return an operand)."""
    return s.op in ("call", "jcall") and not _view_call(s, defs) and not _ruled_call(s, defs)


def _callee_name(s, defs: dict):
    f = s.args[0]
    if isinstance(f, Const):
        return getattr(f.value, "__name__", None)
    m = defs.get(f)
    if m is not None and m.op == "getattr" and isinstance(m.args[1], Const):
        return m.args[1].value
    return None


def _view_call(s, defs: dict) -> bool:
    return _callee_name(s, defs) in VIEW_NAMES


def _keeps_operands(s) -> bool:
    """A call of a user's function with a rule, which may return an operand itself."""
    f = s.args[0]
    try:
        rule = lookup_callee(f.value) if isinstance(f, Const) else None
    except TypeError:
        return False
    return rule is not None and rule.keeps_operands


def _ruled_call(s, defs: dict) -> bool:
    """A library function (or ndarray method) with a derivative rule or none needed:
    it neither keeps nor writes into its operands (`out=` aside)."""
    f = s.args[0]
    if isinstance(f, Const):
        try:
            return lookup_callee(f.value) is not None
        except TypeError:
            return False
    m = defs.get(f)
    if m is None or m.op != "getattr" or not isinstance(m.args[1], Const):
        return False
    from ..rules import METHOD_RULES
    return any(name == m.args[1].value for _, name in METHOD_RULES)
