"""Writes into memory that a caller reads under another name, which the adjoint of a
call cannot follow.

The adjoint follows an array's cotangent by value.  A callee that writes into its
argument gets that argument's cotangent passed in (`adjoint.transform.inout_args`),
which is right when the caller passed the array itself.  Two kinds of write escape
this, and were silent wrong gradients (a zero for the value written):
  * a caller passes a *view* (`h(t[1:])`, `h(m[i])`, `h(t.reshape(2, 2))`, a row of a
    loop over a matrix) and the callee writes into it: the caller's later reads of
    `t` never reach the callee's adjoint;
  * a callee writes into an *attribute, element or view of* its parameter
    (`self.w[1:] *= b` in a method, `ws[0][i] = v`, `p.T[0] = v`, or passes one on to
    a callee that writes into it): the cotangent passed in is the parameter's, and the
    callee's adjoint has no way to route it to the value written.
Both are refused with a TypeError naming the callee, as a write into a view is in
the function itself (`instrument`): `param_writes` finds the writes into parameters in a
callee's primal (kept on its J function), and `refuse_hidden_writes`
checks a call against both, with the values passed (the interpreter) or with the
statements that made them (compiled code, `view_operands`).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ssair import IR, Const, Var

from .activity import SHAPE_ATTRS
from .aliases import _view_call
from .views import view_source


def param_writes(ir: IR, kinds: Any = None) -> tuple:
    """`(direct, derived)`: the `(parameter index, line)` of each write in `ir` into a
    parameter itself (`direct`), and into a value computed from one by an attribute
    read, indexing or a view (`derived`).  A write is a `setitem` (what in-place
    operators on arrays become, `canonical_inplace`), or an operand of a user call
    whose callee's code surely writes into it (`container_writes.surely_written`,
    in-place operators included).  `kinds` (`ssair.passes.scalars.Scalars`) proves
    numbers, which share no memory."""
    from .container_writes import _ruled, surely_written
    params = {a.var: k for k, a in enumerate(ir.args)}
    derived = _derived_from_params(ir, params, kinds)
    direct_found, derived_found = [], []
    for b in ir.blocks:
        for s in b.stmts:
            targets = []
            if s.op == "setitem":
                targets = [s.args[0]]
            elif s.op == "call" and isinstance(s.args[0], Const) and not s.kwargs \
                    and not _ruled(s.args[0].value):
                ws = surely_written(s.args[0].value, len(s.args) - 1, set(), inplace=True)
                targets = [v for k, v in enumerate(s.args[1:]) if k in ws]
            for t in targets:
                if not isinstance(t, Var):
                    continue
                if t in params:
                    direct_found.append((params[t], s.line))
                derived_found += [(k, s.line) for k in sorted(derived.get(t, ()))]
    return tuple(dict.fromkeys(direct_found)), tuple(dict.fromkeys(derived_found))


def _derived_from_params(ir: IR, params: dict, kinds: Any) -> dict:
    """Value -> the parameter indices it may be part of (an attribute, an element, a
    view of one), through phis and copies; parameters themselves are not included."""
    defs = {s.var: s for b in ir.blocks for s in b.stmts}
    out: dict = {}

    def source(v):
        if v in params:
            return {params[v]}
        return out.get(v, set())
    changed = True
    while changed:
        changed = False
        for b in ir.blocks:
            steps = [(p.var, list(p.operands())) for p in b.phis]
            steps += [(s.var, s.args[:1]) for s in b.stmts if _part_of(s, defs)]
            for var, ops in steps:
                if kinds is not None and kinds.is_scalar(var):
                    continue
                got = set().union(*[source(o) for o in ops if isinstance(o, Var)])
                if got - out.get(var, set()):
                    out.setdefault(var, set()).update(got)
                    changed = True
    return out


def _part_of(s: Any, defs: dict) -> bool:
    """Is the result of `s` part of the memory of its first operand?"""
    if s.op in ("getitem", "copy", "unpack"):
        return True
    if s.op == "getattr":
        return not (isinstance(s.args[1], Const) and s.args[1].value in SHAPE_ATTRS)
    return s.op == "call" and _view_call(s, defs)


def view_operands(ir: IR, operands: Iterable, element: Any) -> list:
    """For each operand, whether a statement of `ir` may make it a view of another
    array (indexing, `.T`, a reshape: `views.view_source`), through phis;
    `element(v)`: is `v` a tuple or list (indexing one gives an element, no view)."""
    defs = {s.var: s for b in ir.blocks for s in b.stmts}
    phis = {p.var: p for b in ir.blocks for p in b.phis}

    def viewed(v):
        made = defs.get(view_source(v, defs, phis, set()))
        return made is not None and not (made.op == "getitem" and element(made.args[0]))
    return [isinstance(v, Var) and viewed(v) for v in operands]


def refuse_hidden_writes(callee: Any, jf: Any, views: list, numbers: list,
                         where: str = "") -> None:
    """Refuse the call of `callee` (J function `jf`, over captured values then
    parameters) when it writes into an attribute, element or view of a parameter
    (`jf.hidden_writes`), or into a parameter (`jf.param_writes`) that `views` (one
    entry per J argument) says is passed a view of another array; `numbers` says
    which arguments are numbers."""
    names = [a.name for a in jf.primal.args]
    label = _label(callee, jf)
    for k, line in jf.hidden_writes:      # (a number has no memory to write into: the
        if jf.active_args[k] and not numbers[k]:    # write is in a branch for arrays)
            raise TypeError(
                f"adjoint: {label} writes into an attribute, element or view of its "
                f"argument {names[k]!r} at {jf.primal.file}:{line}, which its caller "
                f"may read afterwards{where}; reverse mode cannot follow such a write "
                "into a caller's value: return the new value instead, or write into "
                "the array by its own name")
    for k, line in jf.param_writes:      # (a number's in-place operator rebinds it)
        if k < len(views) and views[k] and jf.active_args[k] and not numbers[k]:
            raise TypeError(
                f"adjoint: {label} writes into its argument {names[k]!r}, which is "
                f"passed a view of another array here (made by indexing, a slice, .T "
                f"or a reshape){where}; reverse mode cannot follow that write into the "
                "viewed array: pass a copy (`.copy()`) and use the result, or write "
                "into the array by its own name")


def is_number(value: Any) -> bool:
    """A Python or numpy number (`in-place` operators on it rebind, never write)."""
    return isinstance(value, (int, float, complex, np.number, np.bool_))


def is_view(value: Any) -> bool:
    """A float (or complex) numpy array that views another one's memory."""
    return isinstance(value, np.ndarray) and value.base is not None and \
        value.dtype.kind in "fc"


def _label(callee: Any, jf: Any) -> str:
    name = getattr(callee, "__qualname__", None) or jf.primal.meta.get(
        "source_name", jf.primal.name)
    return f"a call of {name}"


# methods of lists and dicts that change them in place
CONTAINER_METHODS = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
    "popitem", "sort", "reverse", "__setitem__", "__delitem__", "__iadd__"})
_CHANGED: dict = {}    # function -> (its code, the parameters its code changes that way)


def refuse_container_changes(ir: IR, useful: set, varied: set) -> None:
    """`push(acc, v)` with `def push(lst, v): lst.append(v)`, where the caller reads
    `acc` afterwards: the callee changes the list behind the adjoint's back (it
    follows a list by value: the appended entry would get no gradient).  Refused
    when the list is read afterwards (`useful`) and a value involved may carry a
    derivative (`varied`).  Only calls of a Python function named by a constant are
    read (a function value's code is not known here)."""
    names = {d.var: getattr(d, "name", None) for d in ir.definitions()}
    names.update({a.var: a.name for a in ir.args})
    for b in ir.blocks:
        for s in b.stmts:
            if s.op != "call" or not isinstance(s.args[0], Const) or s.kwargs:
                continue
            changed = _changed_params(s.args[0].value, len(s.args) - 1)
            for k, (method, line) in changed.items():
                v = s.args[1 + k]
                if isinstance(v, Var) and v in useful and any(
                        isinstance(o, Var) and o in varied for o in s.args[1:]):
                    what = names.get(v)
                    raise TypeError(
                        f"adjoint: a call of {_qualname(s.args[0].value)} changes its "
                        f"argument {repr(what) if what else ''} in place (.{method}() at "
                        f"line {line}) and it is read afterwards{_at(ir, s.line)}; reverse "
                        "mode cannot follow that change of a list or dict: return the new "
                        "value from the function instead")


def _changed_params(f: Any, nargs: int) -> dict:
    """{parameter index: (method, line)} of the lists or dicts Python function `f`
    (called with `nargs` positional arguments) changes by a method call; {} when its
    code cannot be read."""
    import types
    code = getattr(f, "__code__", None)
    if type(f) is not types.FunctionType or code is None or code.co_flags & 0x0C or \
            nargs != code.co_argcount:
        return {}
    hit = _CHANGED.get(f)
    if hit is not None and hit[0] is code:
        return hit[1]
    import lowering
    try:
        fir = lowering.lower(f)
    except Exception:      # noqa: BLE001 (not lowered: the call is refused elsewhere)
        return {}
    params = {a.var: k for k, a in enumerate(fir.args)}
    derived = _derived_from_params(fir, params, None)
    defs = {st.var: st for blk in fir.blocks for st in blk.stmts}
    out: dict = {}
    for blk in fir.blocks:
        for st in blk.stmts:
            m = defs.get(st.args[0]) if st.op == "call" and isinstance(st.args[0], Var) \
                else None
            if m is None or m.op != "getattr" or not isinstance(m.args[1], Const) or \
                    m.args[1].value not in CONTAINER_METHODS or not isinstance(m.args[0], Var):
                continue
            recv = m.args[0]
            for k in ({params[recv]} if recv in params else derived.get(recv, set())):
                out.setdefault(k, (m.args[1].value, st.line))
    _CHANGED[f] = (code, out)
    return out


def _qualname(f: Any) -> str:
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", "a function")


def _at(ir: IR, line: Any) -> str:
    return f" at {ir.file}:{line}" if line is not None else ""
