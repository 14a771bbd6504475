"""Pass `instrument`: turn the primal into the forward IR's body and decide, for
every active statement, its pullback and the values that pullback reads (alphas).

Requires: `merge_returns`, `record_branches`, and an `Activity` (to which it adds the
copies of arguments it makes, below).  Guarantees:
  * a leading argument `%tape` is added (`meta["tape"]`);
  * an active call of a user function, a closure or any callee without a static
    rule, `%y = call(f, args..., k=v)`, becomes
        %t  = jcall(f, %tape, ('k',), args..., v)
        %y  = getitem(%t, 0)
        %pb = getitem(%t, 1)
    and `%pb` is its alpha (the callee's pullback data: its env, on the same tape);
  * an array that is written (`a[i] = v`, a callee's write, `out=`) somewhere in the
    function, and every value that may share its memory (a view `a[0:2]`, `a.T`, a
    container holding it, what a user function returns: `adjoint.passes.aliases`),
    is copied with `snapshot` before a pullback records it, so the adjoint sees the
    value the primal read, not a later overwrite (`meta["mutated"]`); so is an
    argument that may be an array (and what shares its memory), which a caller may
    write into after this function returns (`meta["reread"]`; `meta["sharing"]`
    holds the classes of values that may share memory, `aliases.sharing`);
  * such an argument, a float64 array, that enters a phi (the first value of a loop
    variable) and is not written into is copied once on that edge instead: `%c =
    snapshot(%x)` at the end of the predecessor, and the phi reads `%c`, so that the
    pullbacks reading the loop variable record it as it is, without a copy per read
    per iteration;
  * `meta["records"]` maps each block id to its `Record`s in statement order.
A statement without a rule raises `TypeError` naming the primitive or callee and
`file:line`.  Inactive statements are left untouched.  The input IR is not modified.
"""
from __future__ import annotations

import inspect
import types
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ssair import IR, Arg, Const, Stmt, Var

from .activity import Activity, is_user_call, library_write
from .aliases import sharing, volatile
from .container_writes import refuse_alias_writes
from .hidden_writes import refuse_container_changes
from .views import view_name, view_source
from .inplace import refuse_write, refused_write
from .stale_views import refuse_stale_views
from ..rules import (Pullback, Rule, lookup_callee, lookup_op, missing_rule,
                     missing_rule_error, partial_variant, scalar_variant)
from ..special_callees import as_call, own_rule_code, rule_function, special_handler


@dataclass
class Record:
    """One active statement's pullback.

    `var` is the primal result, `kind` is `"rule"` (a `Pullback` call), `"jcall"`
    (a transformed call), or a structural op name (`"getitem"`, `"tuple"`, ...).
    `operands`/`kwargs` are the primal operands (for `jcall`: the callee, then the
    positional and keyword values in jcall order).  `alpha` maps each primal value the
    pullback reads to the forward value recorded for it (a snapshot, `%pb`, or the
    value itself).  `result_alpha` is set when the pullback reads the result.
    """

    var: Var
    kind: str
    block: int
    operands: list
    kwargs: dict = field(default_factory=dict)
    rule: Optional[Rule] = None
    alpha: dict = field(default_factory=dict)
    result_alpha: Optional[Var] = None
    line: Optional[int] = None

    def recorded(self) -> list:
        """Forward values to record for this pullback, in a fixed order."""
        out = list(dict.fromkeys(self.alpha.values()))
        if self.result_alpha is not None and self.result_alpha not in out:
            out.append(self.result_alpha)
        return out


def instrument(ir: IR, act: Activity, kinds: Any = None) -> IR:
    """See the module docstring; `kinds` (an `ssair.passes.scalars.Scalars` of `ir`)
    selects the scalar variants of rules whose operands are proven numbers."""
    out = ir.copy()
    tape = out.new_var()
    out.args.insert(0, Arg(tape, "tape"))
    out.nfree = 0
    out.meta["tape"] = tape
    _refuse_view_writes(out, act, kinds)
    _refuse_out_writes(out, act)
    _refuse_library_writes(out, act)
    refuse_container_changes(out, act.useful, act.varied)
    refuse_stale_views(out, act.varied, kinds)
    refuse_alias_writes(out, act.varied, kinds)
    mutated = volatile(out, kinds, set())
    out.meta["mutated"] = mutated
    _copy_args_into_phis(out, act, _float_array_args(out, kinds) - mutated)
    out.meta["sharing"] = classes = sharing(out, kinds)
    out.meta["reread"] = reread = volatile(out, kinds, _array_args(out, kinds), classes)
    records = {}
    for b in out.blocks:
        stmts, recs = [], []
        for s in b.stmts:
            stmts += _instrument_stmt(out, b.id, s, act, tape, reread, recs, kinds)
        b.stmts = stmts
        records[b.id] = recs
    out.meta["records"] = records
    return out


def _refuse_view_writes(ir: IR, act: Activity, kinds: Any = None) -> None:
    """`row = m[i]; row[0] = v` writes into `m` through a view, which the recorded
    old values cannot follow: refuse it instead of giving a wrong gradient.  A value
    `kinds` proves a number (an element `a[i]` of a 1-D float array) is no view."""
    defs = {s.var: s for b in ir.blocks for s in b.stmts}
    phis = {p.var: p for b in ir.blocks for p in b.phis}
    for b in ir.blocks:
        for s in list(b.stmts):
            if s.op != "setitem" or not isinstance(s.args[0], Var):
                continue
            view = view_source(s.args[0], defs, phis, set(), kinds)
            if view is not None and view in act.varied:
                refuse_write(ir, s.var, f"adjoint: writing into a view of an array (here a value "
                                f"made by {view_name(defs[view])}) is not differentiable "
                                f"yet{where(ir, s.line)}; copy it first (`.copy()`)")


def _refuse_out_writes(ir: IR, act: Activity) -> None:
    """`np.multiply(t, 2.0, out=t)` or `np.exp(x, out=o)` writes a result into an
    array behind the adjoint's back (it follows values, not the memory `out=` names):
    refuse it when the array written or an operand may carry a derivative, instead of
    giving a wrong gradient.  A constant result written into a constant array is only
    a write, which `adjoint.passes.aliases` makes the pullbacks before it copy."""
    params = {a.var for a in ir.args}
    for b in ir.blocks:
        for s in b.stmts:
            t = s.kwargs.get("out") if s.op == "call" else None
            if not isinstance(t, Var):
                continue
            # a parameter may be None (`def total(a, out=None)`): refused when it carries
            # a derivative here, and where it is an array by the rule's `Pullback` (the
            # JIT refuses its type)
            operands = [t] if t in params else list(s.args[1:]) + list(s.kwargs.values())
            if any(isinstance(v, Var) and v in act.varied for v in operands):
                raise TypeError(f"adjoint: {_callee_name(s)}(..., out=...) writes its "
                                f"result into an array, which is not differentiable"
                                f"{where(ir, s.line)}; assign the result instead "
                                "(`o = f(x)` or `o[...] = f(x)`)")


def _refuse_library_writes(ir: IR, act: Activity) -> None:
    """`np.add.at(a, i, v)`, `np.copyto(a, v)`, `np.put(a, i, v)`: numpy writes into
    `a` behind the adjoint's back; refused when an operand may carry a derivative, as
    the interpreter's call does (`transform._refuse_opaque_write`): a call of
    `refused_write` before it raises when it would run, in compiled code too (which
    would otherwise run it as a plain call)."""
    defs = {s.var: s for b in ir.blocks for s in b.stmts}
    for b in ir.blocks:
        for k in reversed(range(len(b.stmts))):
            s = b.stmts[k]
            what = library_write(s, defs)
            if what is not None and any(isinstance(v, Var) and v in act.varied
                                        for v in list(s.args[1:]) + list(s.kwargs.values())):
                message = (f"adjoint: {what} writes into an array argument, which reverse "
                           f"mode cannot follow in a library call{where(ir, s.line)}; "
                           "compute the result out of place instead (e.g. `y = y + v`)")
                # raised when the call would run (a branch that never runs is fine)
                b.stmts.insert(k, Stmt(ir.new_var(), "call", [Const(refused_write),
                                                              Const(message)], line=s.line))


def _callee_name(s: Stmt) -> str:
    """The name a user wrote for the callee of call statement `s` (`np.exp`)."""
    f = s.args[0].value if isinstance(s.args[0], Const) else None
    name = getattr(f, "__name__", None)
    if name is None:
        return "a call"
    return f"np.{name}" if isinstance(f, np.ufunc) or \
        getattr(np, name, None) is f else name


def _array_args(ir: IR, kinds: Any) -> set:
    """Arguments that may be arrays: a caller may write into one after this function
    returns and before its adjoint runs, so a pullback reading one reads a snapshot
    (proven numbers need none)."""
    return {a.var for a in ir.args[1:]
            if kinds is None or not kinds.is_scalar(a.var)}


def _float_array_args(ir: IR, kinds: Any) -> set:
    """Arguments proven float64 arrays (by the types of the values passed)."""
    if kinds is None:
        return set()
    return {a.var for a in ir.args[1:] if kinds.is_float_array(a.var)}


def _copy_args_into_phis(ir: IR, act: Activity, args: set) -> None:
    """Give each phi that takes one of `args` from a predecessor a copy of it made at
    the end of that predecessor (one per predecessor and argument), and add the
    copies to `act`: varied as the argument, useful as the phis."""
    blocks = {b.id: b for b in ir.blocks}
    copies: dict = {}
    for b in ir.blocks:
        for p in b.phis:
            for pred, v in p.incoming.items():
                if v not in args:
                    continue
                c = copies.get((pred, v))
                if c is None:
                    c = copies[pred, v] = ir.new_var()
                    blocks[pred].stmts.append(Stmt(c, "snapshot", [v], line=p.line))
                    if v in act.varied:
                        act.varied.add(c)
                p.incoming[pred] = c
                if p.var in act.useful:
                    act.useful.add(c)


def where(ir: IR, line: Optional[int]) -> str:
    return f" at {ir.file or '?'}:{line}" if line is not None else f" in {ir.name}"


def _is_active_stmt(s: Stmt, act: Activity) -> bool:
    if s.op == "setitem":
        return act.is_active(s.args[0])
    if s.op in ("jcall", "jback"):
        return any(v in act.varied for v in s.operands() if isinstance(v, Var))
    if is_user_call(s) and any(v in act.varied for v in s.operands() if isinstance(v, Var)):
        return s.var in act.useful or any(v in act.useful for v in s.operands()
                                          if isinstance(v, Var))
    return act.is_active(s.var)


def _no_active_operand(s: Stmt, act: Activity) -> bool:
    """A statement with a derivative rule whose result is active only because it
    joins an alias group that is written (`activity._alias_groups`), while none of
    its operands is: its pullback would give cotangents to nothing, and would read
    operands that were not recorded (`reverse.UNREAD`), so it gets no record."""
    if s.op in ("setitem", "jcall", "jback") or is_user_call(s):
        return False
    operands = s.args[1:] if s.op == "call" else s.args
    return not any(act.is_active(a) for a in list(operands) + list(s.kwargs.values()))


def _instrument_stmt(ir, bid, s, act, tape, mutated, recs, kinds=None) -> list:
    if s.op in ("push", "pop"):     # tape ops of a transformed IR (nested AD)
        rec = Record(s.var, s.op, bid, list(s.args), rule=lookup_op(s.op), line=s.line)
        rec.alpha = {s.args[0]: s.args[0]} if isinstance(s.args[0], Var) else {}
        recs.append(rec)
        return [s]
    if not _is_active_stmt(s, act) or _no_active_operand(s, act):
        return [s]
    if s.op in ("jcall", "jback"):  # calls in a transformed IR (nested AD)
        s = as_call(s)
    if s.op == "call":
        return _instrument_call(ir, bid, s, act, tape, mutated, recs)
    rule = lookup_op(s.op)
    if rule is None:
        raise missing_rule_error(f"primitive {s.op}", where(ir, s.line))
    if rule.emit is not None:
        rec = Record(s.var, rule.emit, bid, list(s.args), rule=rule, line=s.line)
        pos = rule.alphas(tuple(act.is_active(a) for a in s.args))
        rec.alpha = {s.args[k]: s.args[k] for k in sorted(pos) if isinstance(s.args[k], Var)}
        recs.append(rec)
        return [s]
    active = tuple(act.is_active(a) for a in s.args)
    if rule.scalar and kinds is not None and not s.kwargs and all(
            kinds.is_scalar(a) for a in s.args):
        rule = scalar_variant(rule, active)
    elif rule.partial and not all(active):
        rule = partial_variant(rule, active)
    return _rule_record(ir, bid, s, rule, list(s.args), {}, mutated, recs, act)


def _rule_record(ir, bid, s, rule, args, kwargs, mutated, recs, act) -> list:
    """Record the operands the pullback reads (`Rule.alphas`; keyword operands are
    always read) and the result when it `uses_result`."""
    for k, v in kwargs.items():
        if isinstance(v, Var) and act.is_active(v) and k not in rule.nondiff_keywords:
            raise TypeError(f"adjoint: the derivative of {rule.pullback.of} gives no gradient "
                            f"for the keyword argument {k}=, which holds a differentiable "
                            f"value{where(ir, s.line)}; pass it positionally")
    rec = Record(s.var, "rule", bid, args, dict(kwargs), rule=rule, line=s.line)
    before, after = [], []
    read = rule.alphas(tuple(act.is_active(a) for a in args))
    needed = [a for k, a in enumerate(args) if k in read] + list(kwargs.values())
    for a in needed:
        if isinstance(a, Var) and a not in rec.alpha:
            rec.alpha[a] = _snap(ir, a, mutated, before, s.line)
    if rule.pullback.uses_result:
        rec.result_alpha = _snap(ir, s.var, mutated, after, s.line)
    recs.append(rec)
    return before + [s] + after


def _snap(ir: IR, v: Var, mutated: set, into: list, line) -> Var:
    if v not in mutated:
        return v
    c = ir.new_var()
    into.append(Stmt(c, "snapshot", [v], line=line))
    return c


def _instrument_call(ir, bid, s, act, tape, mutated, recs) -> list:
    f = s.args[0]
    if isinstance(f, Const):
        rule = lookup_callee(f.value)
        if rule is not None and rule.pullback is not None:
            if any(isinstance(v, Var) and act.is_active(v) for v in s.kwargs.values()):
                args = positional_operands(f.value, list(s.args[1:]), s.kwargs)
                if args is not None:    # `Params(W=w, b=0.5)`: its rule takes positions
                    s = Stmt(s.var, "call", [f, *args], {}, s.line, s.name)
            return _rule_record(ir, bid, s, rule, list(s.args[1:]), s.kwargs, mutated, recs,
                                act)
        if rule is not None:
            return [s]   # non-differentiable: no cotangent reaches its operands
        if rule is None and not _transformable(f.value):
            return [Stmt(s.var, "call", [Const(missing_rule), Const(f"callee {_name(f.value)}"),
                                         Const(where(ir, s.line))], line=s.line, name=s.name)]
    return _jcall(ir, bid, s, tape, recs)


def positional_operands(f: Any, args: list, kwargs: dict) -> Optional[list]:
    """The operands of `f(*args, **kwargs)` all by position, when the keywords name the
    parameters right after the positional ones, with no gap (a dataclass's or a named
    tuple's fields, a function's parameters); else None."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        return None
    out, left = list(args), dict(kwargs)
    for p in params[len(args):]:
        if not left:
            break
        if p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD or p.name not in left:
            return None
        out.append(left.pop(p.name))
    return None if left else out


def _transformable(f: Any) -> bool:
    from ssair.interpreter import Closure, is_user_function
    return (isinstance(f, (IR, Closure, Pullback)) or is_user_function(rule_function(f))
            or own_rule_code(f) or special_handler(f) is not None
            or isinstance(f, types.MethodType))


def _name(f: Any) -> str:
    from ssair.printer import object_name
    return object_name(f)


def _jcall(ir: IR, bid: int, s: Stmt, tape: Var, recs: list) -> list:
    names = tuple(s.kwargs)
    operands = [s.args[0], tape, Const(names)] + list(s.args[1:]) + list(s.kwargs.values())
    t, pb = ir.new_var(), ir.new_var()
    out = [Stmt(t, "jcall", operands, line=s.line),
           Stmt(s.var, "getitem", [t, Const(0)], line=s.line, name=s.name),
           Stmt(pb, "getitem", [t, Const(1)], line=s.line)]
    rec = Record(s.var, "jcall", bid, [s.args[0]] + list(s.args[1:]) + list(s.kwargs.values()),
                 line=s.line)
    rec.alpha = {pb: pb}
    recs.append(rec)
    return out
