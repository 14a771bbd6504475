"""Writes into an array reached through another name of it (`pair[0][i] = v`,
`u, _ = pair; u[i] = v`, `for row in (t,): row[i] = v`).

The adjoint follows an array's cotangent by SSA value: the adjoint of `a[i] = v`
clears the cotangent of the value `a` names and hands it to `v`.  When `a` is a
second name of an array `t` (an element taken out of a tuple, what a user function
returned, a value of a list), the reads of `t` after the write add their cotangent
to `t`'s own adjoint, which the write's adjoint never clears: a silent wrong
gradient.  So, before activity analysis and instrumentation:
  * `forward_tuple_elements`: a write target that is provably a tuple's element (a
    constant index into a `tuple`, through `unpack` and nested tuples) is that
    element itself: every use of the alias becomes the element, so the write is a
    write into the array's own value (exact; a tuple never changes);
  * `refuse_alias_writes`: a write into `a` while another value that may share its
    memory (`aliases.sharing`) is still used afterwards (read, returned or passed
    on) raises a TypeError naming the line; what is only read before the write is
    fine (its pullback runs after the write's adjoint, on the old values).
"""
from __future__ import annotations

from typing import Any

from ssair import IR, Const, Return, Var
from ssair.primitives import INPLACE

from ..rules import lookup_callee
from .aliases import CONTAINER_BUILDS, sharing
from .inplace import live_after, refuse_write


def forward_tuple_elements(ir: IR) -> IR:
    """In a function that writes into arrays, replace each constant-index read of a
    tuple's element by the element (above), write targets and reads alike;
    before activity analysis, so that the write counts as one into the element.
    Returns a new IR when it changes anything; the input is not modified."""
    defs = {s.var: s for b in ir.blocks for s in b.stmts}
    if not any(s.op == "setitem" for s in defs.values()):
        return ir
    repl = {}
    for v, s in defs.items():
        if s.op == "getitem":
            root = element_root(v, defs)
            if root != v:
                repl[v] = root
    if not repl:
        return ir
    out = ir.copy()
    out.replace_uses(repl)
    for b in out.blocks:     # the reads are gone: they no longer keep the tuple live
        b.stmts = [s for s in b.stmts if s.var not in repl]
    return out


def element_root(v: Any, defs: dict) -> Any:
    """The value `v` is, following constant-index reads of tuples (and `unpack`)."""
    for _ in range(64):
        s = defs.get(v) if isinstance(v, Var) else None
        if s is None or s.op != "getitem" or len(s.args) != 2:
            return v
        k = s.args[1].value if isinstance(s.args[1], Const) else None
        elements = _tuple_elements(s.args[0], defs)
        if elements is None or type(k) is not int or not -len(elements) <= k < len(elements):
            return v
        v = elements[k]
    return v


def _tuple_elements(c: Any, defs: dict):
    """The operands of the tuple `c` is (directly, `unpack`ed, or itself an element)."""
    made = defs.get(element_root(c, defs)) if isinstance(c, Var) else None
    if made is not None and made.op == "unpack" and isinstance(made.args[0], Var):
        made = defs.get(element_root(made.args[0], defs))
    return made.args if made is not None and made.op == "tuple" else None


def refuse_alias_writes(ir: IR, varied: set, kinds: Any = None) -> None:
    """Refuse a write into an array that another live name of it outlives (above):
    `a[i] = v`, and a call of a user function whose code writes into its argument
    `a` (`helper(t[1])` with `def helper(r): r[0] = 5.0`: the callee's adjoint clears
    the cotangent of its argument, the view, never `t`'s); `varied`: the values
    that may carry a derivative; `kinds`: proven numbers."""
    writes = {s.var: (s, [s.args[0]], [s.args[1]]) for b in ir.blocks for s in b.stmts
              if s.op == "setitem" and isinstance(s.args[0], Var)}
    writes.update(_callee_writes(ir))
    if not writes:
        return
    memory = sharing(ir, kinds, _returns_operand, containers=False)
    live = live_after(ir, set(writes))
    names = {d.var: getattr(d, "name", None) for d in ir.definitions()}
    names.update({a.var: a.name for a in ir.args})
    for w, (s, targets, values) in writes.items():
        for a in targets:
            reach = _holding(ir, memory, memory.of(a))
            others = {v for v in live.get(w, ()) if v not in (a, w) and memory.of(v) in reach
                      and not (kinds is not None and kinds.is_scalar(v))}   # (w: what the
            # call returns is made after its writes; its callee's adjoint follows it)
            if others and (others | {a, *values}) & varied:
                other = min(others, key=lambda v: v.id)
                what = names.get(other)
                how = "writing into an array" if s.op == "setitem" else \
                    f"a call of {_callee_label(s)} that writes into its argument"
                refuse_write(ir, w, f"adjoint: {how} at {ir.file}:{s.line} while "
                             f"it is still used afterwards under another name "
                             f"({repr(what) if what else 'a container or a value holding it'}"
                             ") is not differentiable; write into the array by its own "
                             "name, or copy it first (`.copy()`)")


def _callee_writes(ir: IR) -> dict:
    """{call value: (the call, the operands its callee surely writes into, the other
    operands)} for calls of user functions whose code stores into an argument
    (`surely_written`); a callee that may write in other ways is left to the reverse
    pass, as before (a refusal must not be a guess)."""
    out = {}
    for b in ir.blocks:
        for s in b.stmts:
            if s.op != "call" or not isinstance(s.args[0], Const) or _ruled(s.args[0].value):
                continue
            ops = list(s.args[1:])
            written = surely_written(s.args[0].value, len(ops), set())
            targets = [ops[k] for k in sorted(written)
                       if k < len(ops) and isinstance(ops[k], Var)]
            if targets:
                out[s.var] = (s, targets, [o for o in ops if o not in targets])
    return out


def surely_written(f: Any, nargs: int, seen: set, inplace: bool = False) -> frozenset:
    """Positions of the parameters of Python function `f` (called with `nargs`
    positional arguments) that its code stores into: `p[i] = v` on a parameter, a
    view or element of one (`p[0][1] = v`, `p.T[0] = v`, through branches), or a
    callee's such parameter; with `inplace`, also an in-place operator on one
    (`p += v`, a write when `p` is an array); empty when unsure."""
    code = getattr(f, "__code__", None)
    if code is None or f in seen or code.co_flags & 0x0C or nargs != code.co_argcount:
        return frozenset()
    import lowering
    try:
        fir = lowering.lower(f)
    except Exception:      # noqa: BLE001 (not lowered: the call is refused elsewhere)
        return frozenset()
    seen = seen | {f}
    shares = {a.var: {k} for k, a in enumerate(fir.args)}
    defs = {st.var: st for blk in fir.blocks for st in blk.stmts}
    for _ in range(len(defs) + 2):           # (to a fixpoint: phis may come first)
        grew = False
        for blk in fir.blocks:
            flows = [(p.var, list(p.operands())) for p in blk.phis]
            flows += [(st.var, st.args[:1]) for st in blk.stmts if st.op == "getitem"
                      or st.op == "call" and _is_view_call(st, defs)]
            for var, ops in flows:
                got = set().union(*[shares.get(o, set()) for o in ops if isinstance(o, Var)])
                if got - shares.get(var, set()):
                    shares.setdefault(var, set()).update(got)
                    grew = True
        if not grew:
            break
    written: set = set()
    for blk in fir.blocks:
        for st in blk.stmts:
            if (st.op == "setitem" or inplace and st.op in INPLACE) and \
                    isinstance(st.args[0], Var):
                written |= shares.get(st.args[0], set())
            elif st.op == "call" and isinstance(st.args[0], Const) and \
                    not _ruled(st.args[0].value):
                inner = list(st.args[1:])
                for k in surely_written(st.args[0].value, len(inner), seen, inplace):
                    if k < len(inner) and isinstance(inner[k], Var):
                        written |= shares.get(inner[k], set())
    return frozenset(written)


def _is_view_call(st, defs: dict) -> bool:
    from .aliases import _view_call
    return _view_call(st, defs)


def _ruled(f: Any) -> bool:
    try:
        return lookup_callee(f) is not None
    except TypeError:           # (an unhashable constant: not a rule's callee)
        return False


def _callee_label(s) -> str:
    f = s.args[0].value
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or "a function"


def _holding(ir: IR, memory: Any, target: Any) -> set:
    """The memory classes a write into class `target` may reach: `target`; the
    elements of a container `target` was read out of (`l[0]`, `for row in (t,)`: any
    of them may be the array written), at any depth; and every container built with
    an operand of one of those classes, at any depth.  (Two arrays put in one tuple do
    not share memory: `(c, a)` holds both, and neither is a name of the other.)"""
    builds = [s for b in ir.blocks for s in b.stmts if s.op in CONTAINER_BUILDS]
    written = _grow({target}, builds, lambda s, reach: memory.of(s.var) in reach,
                    lambda s: {memory.of(o) for o in s.operands() if isinstance(o, Var)})
    return _grow(written, builds,
                 lambda s, reach: any(isinstance(o, Var) and memory.of(o) in reach
                                      for o in s.operands()),
                 lambda s: {memory.of(s.var)})


def _grow(reach: set, builds: list, applies: Any, adds: Any) -> set:
    """`reach` grown by `adds(s)` for each build `s` that `applies(s, reach)`, to a
    fixed point."""
    reach, grew = set(reach), True
    while grew:
        grew = False
        for s in builds:
            if applies(s, reach):
                new = adds(s) - reach
                if new:
                    reach |= new
                    grew = True
    return reach


_RETURNS_ARG: dict = {}


def _returns_operand(s, defs: dict) -> bool:
    """Whether the call `s` of a function without a rule may return an operand:
    its callee's code returns a value sharing memory with an argument (a callee
    that is not a known Python function, or does not lower, may)."""
    f = s.args[0]
    code = getattr(f.value, "__code__", None) if isinstance(f, Const) else None
    if code is None:
        return True
    if code not in _RETURNS_ARG:
        _RETURNS_ARG[code] = _may_return_argument(f.value)
    return _RETURNS_ARG[code]


def _may_return_argument(f: Any) -> bool:
    from lowering.api import lower
    try:
        ir = lower(f)
    except Exception:       # noqa: BLE001 (unknown code: assume it may)
        return True
    classes = sharing(ir, None, lambda s, defs: True)    # (`s += x`: `s` alone)
    args = {classes.of(a.var) for a in ir.args}
    return any(isinstance(o, Var) and classes.of(o) in args for b in ir.blocks
               if isinstance(b.term, Return) for o in b.term.operands())
