"""Which arguments a call may write into, read from the callee's code.

Reverse mode passes an argument's cotangent *in* to a callee's adjoint when the
callee may write into that argument (`adjoint.transform.inout_args`).  Assuming
that of every user call is safe but costly: each derivative of such a function is
then one "that writes into its array argument", which nested differentiation
refuses.  Here a Python callee's IR is read instead (cached per function): a
parameter is written when a value that may share its memory (anything computed
from it except by an operator that makes a new value) is the target of `a[i] = v`,
an in-place operator, `list.append`, `out=`, a method call, or an argument a
callee may write into (recursively; a callee met again while it is read is
assumed to write all its parameters).  Anything unknown writes everything.
"""
from __future__ import annotations

import types
from typing import Any, Optional

from ssair import IR, Const, Var
from ssair.primitives import INPLACE

from ..rules import lookup_callee
from ..special_callees import READ_ONLY_CALLEES, own_rule_code, rule_function
from .aliases import FRESH_OPS

_WRITTEN: dict = {}      # function -> frozenset of parameter indices it may write into
_GUESS: dict = {}        # function being read -> what it is assumed to write so far


def call_written_operands(s: Any) -> Optional[frozenset]:
    """Indices k (into `s.args[1:]`) of the operands call `s` may write into; None:
    any operand (a callee not read here, keywords, a jcall)."""
    if s.op != "call" or s.kwargs or not isinstance(s.args[0], Const):
        return None
    return written_params(s.args[0].value, len(s.args) - 1)


def written_params(f: Any, nargs: int) -> Optional[frozenset]:
    """Parameter indices callee `f`, called with `nargs` positional arguments, may
    write into (see the module docstring); None: unknown, any of them."""
    from ..rule_table import Pullback
    if isinstance(f, Pullback) or READ_ONLY_CALLEES.get(id(f)) is f:
        return frozenset()          # rules compute out of place; gradient() reads only
    fn = rule_function(f)
    code = getattr(fn, "__code__", None)
    if type(fn) is not types.FunctionType or code.co_flags & 0x0C or \
            code.co_kwonlyargcount or nargs != code.co_argcount:
        return None
    from ssair.interpreter import is_user_function
    if not (is_user_function(fn) or own_rule_code(fn)) or lookup_callee(fn) is not None:
        return None
    if fn in _GUESS:            # recursion: the current guess (a fixpoint below)
        return _GUESS[fn]
    hit = _WRITTEN.get(fn)
    if hit is not None and hit[0] is code:
        return hit[1]
    got = _fixpoint(fn)
    if got is not None and not _GUESS and not fn.__closure__:
        _WRITTEN[fn] = (code, got)      # (results found under a guess are not kept)
    return got


def _fixpoint(fn: types.FunctionType) -> Optional[frozenset]:
    """`fn`'s written parameters, guessing none for its recursive calls and growing
    the guess until it holds."""
    import lowering
    try:
        ir = lowering.lower(fn)
    except Exception:      # (a function the lowering refuses: its call is refused later)
        return None
    _GUESS[fn] = frozenset()
    try:
        while True:
            got = _written_args(ir)
            if got is None or got == _GUESS[fn]:
                return got
            _GUESS[fn] = got
    finally:
        del _GUESS[fn]


def _written_args(ir: IR) -> Optional[frozenset]:
    """Indices of `ir`'s arguments its statements may write into."""
    shares = {a.var: {k} for k, a in enumerate(ir.args)}    # var -> args it may be
    holds: dict = {}      # var -> args its elements may be (a list, a tuple, a dict)
    changed = True
    while changed:              # (to a fixpoint: phis may come before their operands)
        changed = False
        for b in ir.blocks:
            for var, ops, op in [(p.var, p.operands(), "phi") for p in b.phis] + \
                    [(s.var, s.operands(), s.op) for s in b.stmts]:
                if op in FRESH_OPS:
                    continue
                got, held = _flow(op, [v for v in ops if isinstance(v, Var)], shares, holds)
                for table, new in ((shares, got), (holds, held)):
                    if new - table.get(var, set()):
                        table.setdefault(var, set()).update(new)
                        changed = True
    written: set = set()
    for b in ir.blocks:
        for s in b.stmts:
            targets = _targets(s)
            if targets is None:
                return None
            for v in targets:
                if isinstance(v, Var):
                    written |= shares.get(v, set())
    return frozenset(written)


def _flow(op: str, ops: list, shares: dict, holds: dict) -> tuple:
    """(args the result may be, args its elements may be) of a statement `op(ops)`."""
    def of(table, vs):
        return set().union(*[table.get(v, set()) for v in vs])
    if op in ("tuple", "list", "dict"):            # a display holds its operands
        return set(), of(shares, ops) | of(holds, ops)
    if op in ("list_append", "setitem"):           # the container, one more element
        return of(shares, ops[:1]), of(holds, ops[:1]) | of(shares, ops[1:]) | \
            of(holds, ops[1:])
    if op == "phi":
        return of(shares, ops), of(holds, ops)
    everything = of(shares, ops) | of(holds, ops)  # (getitem: an element, a view, ...)
    return everything, everything


def _targets(s: Any) -> Optional[list]:
    """The operands statement `s` may write into (None: it may write anywhere)."""
    if s.op in ("setitem", "list_append") or s.op in INPLACE:
        return [s.args[0]]
    if s.op in ("jcall", "jback"):
        return None
    if s.op != "call":
        return []
    f = s.args[0]
    out = [s.kwargs["out"]] if "out" in s.kwargs else []
    if isinstance(f, Var):      # a method (`x.sort()`) or a function value: it may write
        return list(s.operands())      # into its receiver (which shares f) and operands
    rule = lookup_callee(f.value)
    if rule is not None:
        return out
    ws = call_written_operands(s)
    if ws is None:
        return [v for v in s.operands()[1:]]
    return out + [v for k, v in enumerate(s.args[1:]) if k in ws]
