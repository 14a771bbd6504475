"""The IR verifier: `verify(ir)` checks the invariants every stage relies on and raises
`VerifyError` listing each violation with the function, the block and the value.

Invariants (structure; checked first, all errors reported together):
  S1. the function has at least one block, and block ids are unique;
  S2. every block has exactly one terminator (`Goto`, `Branch`, `Return` or `Raise`), the last
      thing in the block, and every jump target is an existing block;
  S3. a block's phis come first: `phis` holds only `Phi`s, `stmts` only `Stmt`s;
  S4. every statement's op is in `ssair.primitives.PRIMITIVES` and its positional
      operand count passes the primitive's `arity_ok`; only `call` has keyword operands
      (and `make_closure`: `defaults=`, `kwdefaults=` computed at run time);
  S5. every operand is a `Var` or a `Const`; a `Branch` condition is a `Var` or a
      bool `Const`;
  S6. every value is defined exactly once (by an argument, a phi or a statement), and
      `ir.next_id` is larger than every value id (so `new_var` cannot collide).
Invariants (control flow and SSA; checked once the structure is sound):
  C1. predecessor and successor lists agree (`ir.predecessors()` is the exact inverse
      of the terminators' successors);
  C2. the entry block has no predecessors and no phis;
  C3. every block is reachable from the entry (unless `allow_unreachable=True`);
  C4. each phi has exactly one incoming operand per predecessor: its set of incoming
      blocks equals the block's predecessor set, nothing missing and nothing extra;
  C5. every use is dominated by its definition: an argument dominates everything; a
      statement or terminator operand must be defined earlier in the same block or in
      a block that strictly dominates it; a phi operand for predecessor P must be
      defined in P or in a block that dominates P (it is read at the end of P).  Uses
      in unreachable blocks are only checked for being defined;
  C6. types, when every argument, phi and statement has one, agree across each phi:
      the phi's type equals the type of each incoming value (`type_eq` may relax it).
Invariants (exception handling; `goto #k unwind #h`, see `ssair.ir`):
  E1. a protected block (the target of an unwind edge) has exactly one predecessor,
      and is not its own handler;
  E2. every edge into a handler block is an unwind edge, and the handler's first
      statement is `caught()`; no other block holds a `caught()`.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from . import cfg
from .ir import IR, Arg, Branch, Const, Goto, Phi, Raise, Return, Stmt, Var
from .primitives import PRIMITIVES
from .printer import format_stmt, format_term


class VerifyError(Exception):
    """The IR broke an invariant; `errors` lists every message, `str()` joins them."""

    def __init__(self, errors: list):
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


def verify(ir: IR, allow_unreachable: bool = False, check_types: bool = True,
           type_eq: Callable[[Any, Any], bool] | None = None) -> None:
    """Check the invariants listed in this module's docstring; raise `VerifyError`."""
    v = _Verifier(ir)
    v.structure()
    v.raise_if_any()
    v.control_flow(allow_unreachable)
    v.raise_if_any()
    v.dominance()
    if check_types:
        v.types(type_eq or (lambda a, b: a == b))
    v.raise_if_any()


def _where(d: Any) -> str:
    if isinstance(d, Arg):
        return f"argument %{d.var.id} {d.name}"
    line = getattr(d, "line", None)
    suffix = "" if line is None else f" (line {line})"
    try:
        if isinstance(d, (Phi, Stmt)):
            return f"`{format_stmt(d)}`{suffix}"
        if isinstance(d, (Goto, Branch, Return, Raise)):
            return f"`{format_term(d, None)[0]}`{suffix}"
    except (TypeError, AttributeError, ValueError):
        pass  # an operand that is not a Var/Const: reported by its own check
    var = getattr(d, "var", None)
    return f"{type(d).__name__} {var!r}{suffix}" if var is not None else f"{type(d).__name__}{suffix}"


class _Verifier:
    def __init__(self, ir: IR):
        self.ir = ir
        self.errors: list = []
        self.defs: dict = {}  # Var -> (block id or None for arguments, index, definition)

    def error(self, block: int | None, what: Any, msg: str) -> None:
        where = f"{self.ir.name}: "
        if block is not None:
            where += f"block #{block}: "
        if what is not None:
            where += _where(what) + ": "
        self.errors.append(where + msg)

    def raise_if_any(self) -> None:
        if self.errors:
            raise VerifyError(self.errors)

    # -- S1-S6 -----------------------------------------------------------------------
    def structure(self) -> None:
        ir = self.ir
        if not ir.blocks:
            self.error(None, None, "function has no blocks")
        ids = Counter(b.id for b in ir.blocks)
        for bid, n in ids.items():
            if n > 1:
                self.error(bid, None, f"block id #{bid} is used by {n} blocks")
        for a in ir.args:
            self.define(a.var, None, -1, a)
        known = set(ids)
        for b in ir.blocks:
            self.block_structure(b, known)
        top = max((v.id for v in self.defs), default=0)
        if ir.next_id <= top:
            self.error(None, None, f"next_id {ir.next_id} is not above the largest value %{top}")

    def define(self, var: Any, block: int | None, index: int, d: Any) -> None:
        if not isinstance(var, Var):
            self.error(block, None, f"{type(d).__name__} defines {var!r}, not a Var")
            return
        if var in self.defs:
            prev = self.defs[var][0]
            place = "the arguments" if prev is None else f"block #{prev}"
            self.error(block, d, f"%{var.id} is defined more than once (also in {place})")
            return
        self.defs[var] = (block, index, d)

    def block_structure(self, b: Any, ids: set) -> None:
        for p in b.phis:
            if not isinstance(p, Phi):
                self.error(b.id, p, "the phi list holds a non-phi (phis come first, alone)")
                continue
            self.define(p.var, b.id, -1, p)
            self.operands(b.id, p, p.operands())
        for i, s in enumerate(b.stmts):
            self.statement(b.id, i, s)
        self.terminator(b, ids)

    def statement(self, bid: int, index: int, s: Any) -> None:
        if isinstance(s, Phi):
            self.error(bid, s, "phi after statements (phis must come first in a block)")
            return
        if isinstance(s, (Goto, Branch, Return, Raise)):
            self.error(bid, s, "terminator in the middle of the block")
            return
        if not isinstance(s, Stmt):
            self.error(bid, s, "not a statement")
            return
        self.define(s.var, bid, index, s)
        self.op_arity(bid, s)
        self.operands(bid, s, s.operands())

    def op_arity(self, bid: int, s: Stmt) -> None:
        prim = PRIMITIVES.get(s.op)
        if prim is None:
            self.error(bid, s, f"unknown op {s.op!r} (not in ssair.primitives.PRIMITIVES)")
            return
        if not prim.arity_ok(len(s.args)):
            self.error(bid, s, f"op {s.op!r} takes {_arity_text(prim.nargs)} operands, "
                               f"got {len(s.args)}")
        if s.kwargs and s.op != "call" and not _closure_keywords(s):
            self.error(bid, s, f"op {s.op!r} has keyword operands (only 'call' may)")

    def operands(self, bid: int, d: Any, ops: list) -> None:
        for a in ops:
            if not isinstance(a, (Var, Const)):
                self.error(bid, d, f"operand {a!r} is not a Var or a Const")

    def terminator(self, b: Any, ids: set) -> None:
        t = b.term
        if t is None:
            self.error(b.id, None, "block has no terminator")
            return
        if not isinstance(t, (Goto, Branch, Return, Raise)):
            self.error(b.id, t, "terminator is not a Goto, Branch, Return or Raise")
            return
        targets = t.successors() if isinstance(t, (Goto, Branch)) else []
        for s in targets:
            if s not in ids:
                self.error(b.id, t, f"jump target #{s} is not a block")
        self.operands(b.id, t, t.operands())
        if isinstance(t, Branch) and isinstance(t.cond, Const) and not isinstance(t.cond.value, bool):
            self.error(b.id, t, f"branch condition {t.cond!r} is a non-bool constant")

    # -- C1-C4 -----------------------------------------------------------------------
    def control_flow(self, allow_unreachable: bool) -> None:
        ir = self.ir
        self.preds = ir.predecessors()
        self.succs = cfg.successors(ir)
        self.pred_succ_agree()
        entry = ir.entry
        if self.preds[entry.id]:
            self.error(entry.id, None, "the entry block has predecessors "
                       + ", ".join(f"#{p}" for p in self.preds[entry.id]))
        for p in entry.phis:
            self.error(entry.id, p, "the entry block has a phi")
        self.live = cfg.reachable(ir)
        if not allow_unreachable:
            for bid in cfg.unreachable(ir):
                self.error(bid, None, "block is unreachable from the entry")
        for b in ir.blocks:
            if b is not entry:
                self.phi_incoming(b)
        self.unwinding()

    def unwinding(self) -> None:
        """E1, E2."""
        protected, handlers = {}, {}
        for b in self.ir.blocks:
            t = b.term
            if isinstance(t, Goto) and t.unwind is not None:
                protected.setdefault(t.target, []).append(b.id)
                handlers.setdefault(t.unwind, set()).add(b.id)
        for k, froms in protected.items():
            if len(self.preds.get(k, ())) != 1:
                self.error(k, None, "a protected block (target of `goto .. unwind`) must "
                           "have exactly one predecessor")
            if any(self.ir.block(f).term.unwind == k for f in froms):
                self.error(k, None, "a protected block is its own handler")
        for b in self.ir.blocks:
            catches = [s for s in b.stmts if s.op == "caught"]
            if b.id not in handlers:
                for s in catches:
                    self.error(b.id, s, "`caught()` outside a handler block")
                continue
            for p in self.preds[b.id]:
                if p not in handlers[b.id]:
                    self.error(b.id, None, f"edge from #{p} into a handler is not an unwind edge")
            if not b.stmts or b.stmts[0].op != "caught" or len(catches) != 1:
                self.error(b.id, None, "a handler block starts with its one `caught()`")

    def pred_succ_agree(self) -> None:
        for b, ss in self.succs.items():
            for s in ss:
                if b not in self.preds.get(s, ()):
                    self.error(s, None, f"predecessor list lacks #{b}, which jumps here")
        for s, ps in self.preds.items():
            for p in ps:
                if s not in self.succs.get(p, ()):
                    self.error(s, None, f"predecessor #{p} does not jump here")

    def phi_incoming(self, b: Any) -> None:
        preds = set(self.preds[b.id])
        for p in b.phis:
            have = set(p.incoming)
            for m in sorted(preds - have):
                self.error(b.id, p, f"no incoming value for predecessor #{m}")
            for x in sorted(have - preds):
                self.error(b.id, p, f"incoming value for #{x}, which is not a predecessor")

    # -- C5, C6 ----------------------------------------------------------------------
    def dominance(self) -> None:
        self.dt = cfg.DomTree(self.ir)
        for b in self.ir.blocks:
            for p in b.phis:
                for pred, a in p.incoming.items():
                    self.check_use(b.id, p, a, at_end_of=pred)
            for i, s in enumerate(b.stmts):
                for a in s.operands():
                    self.check_use(b.id, s, a, index=i)
            for a in b.term.operands():
                self.check_use(b.id, b.term, a, index=len(b.stmts))

    def check_use(self, bid: int, user: Any, a: Any, index: int = 0,
                  at_end_of: int | None = None) -> None:
        if not isinstance(a, Var):
            return
        if a not in self.defs:
            self.error(bid, user, f"uses %{a.id}, which is never defined")
            return
        dblock, dindex, _ = self.defs[a]
        if dblock is None:
            return
        if at_end_of is not None:
            self.check_phi_use(bid, user, a, dblock, at_end_of)
            return
        if bid not in self.live:
            return
        if dblock == bid:
            if dindex >= index:
                self.error(bid, user, f"uses %{a.id} before its definition")
            return
        if not self.dt.strictly_dominates(dblock, bid):
            self.error(bid, user, f"uses %{a.id}, defined in block #{dblock}, "
                                  "which does not dominate this use")

    def check_phi_use(self, bid: int, user: Any, a: Var, dblock: int, pred: int) -> None:
        if pred not in self.live or dblock == pred or self.dt.dominates(dblock, pred):
            return
        self.error(bid, user, f"incoming %{a.id} from #{pred} is defined in block "
                              f"#{dblock}, which does not dominate the end of #{pred}")

    def types(self, type_eq: Callable[[Any, Any], bool]) -> None:
        defs = [d for _, _, d in self.defs.values()]
        if not defs or any(getattr(d, "type", None) is None for d in defs):
            return
        for b in self.ir.blocks:
            for p in b.phis:
                for pred, a in p.incoming.items():
                    if not isinstance(a, Var) or a not in self.defs:
                        continue
                    t = self.defs[a][2].type
                    if not type_eq(p.type, t):
                        self.error(b.id, p, f"incoming %{a.id} from #{pred} has type {t}, "
                                            f"the phi has type {p.type}")


def _arity_text(nargs: Any) -> str:
    if isinstance(nargs, tuple):
        lo, hi = nargs
        return f"at least {lo}" if hi is None else f"{lo} to {hi}"
    return str(nargs)


def _closure_keywords(s) -> bool:
    """`make_closure(...; defaults=%t, kwdefaults=%d)`: run-time default values."""
    return s.op == "make_closure" and set(s.kwargs) <= {"defaults", "kwdefaults"}
