"""Unrolling a loop over the entries of a tuple whose entries differ in type
(`for a in (W, b)` of a 2-D and a 1-D array, as in `[np.ravel(a) for pair in params
for a in pair]`): compiled code has no value that is "a 2-D or a 1-D array", so
the loop runs once per entry, each copy typed for its own entry.

Inference asks for it (`UnrollNeeded`, raised by the type rule of `getitem` when
its index is the counter of such a loop) and retypes the function from the start
on its rewritten IR copy (`Engine.infer`).  The loop must be the lowering's
`for x in t`: a header whose counter phi starts at 0 and steps by 1, bounded by
`len(t)` (known for a tuple), and one body block with no branch.  The unrolled
copies go, straight-line, into the header block, and the exit's phis read the
values of the last copy.
"""
from __future__ import annotations

from typing import Any, Optional

from ssair.ir import IR, Branch, Const, Goto, Stmt, Var

from jit.types import TupleT, TypingError
from jit.typing.unroll_region import unroll_region


class RetypeNeeded(TypingError):
    """Typing found a statement it types only once the IR is rewritten for the types
    it now knows: `apply(ir)` rewrites a copy in place (False: it cannot)."""

    def apply(self, ir: IR) -> bool:
        raise NotImplementedError


class UnrollNeeded(RetypeNeeded):
    """A loop over a tuple of differently typed entries must be unrolled."""

    def __init__(self, message: str, counter: Var, count: int) -> None:
        super().__init__(message)
        self.counter, self.count = counter, count

    def apply(self, ir: IR) -> bool:
        return unroll_counter_loop(ir, self.counter, self.count)


MAX_CARRIED_UNROLL = 64    # entries of a tuple whose loop is unrolled for a carried value


def carried_unroll(ir: IR, header: int, type_of: Any, message: str) -> Optional[UnrollNeeded]:
    """`for x in t` over a tuple of known length whose loop carries a value that
    changes type in the first iteration (`acc = 0`, then `acc = acc + x` of arrays):
    the loop with header block `header` is to be unrolled, so that each copy types
    the value as it is then.  None when the loop is not such a loop."""
    head = ir.block_map().get(header)
    if head is None:
        return None
    for phi in head.phis:
        if Const(0) not in phi.incoming.values():
            continue
        for b in ir.blocks:
            for s in b.stmts:
                if s.op != "getitem" or len(s.args) != 2 or s.args[1] != phi.var:
                    continue
                seq = type_of(s.args[0])
                if isinstance(seq, TupleT) and 0 < len(seq.elems) <= MAX_CARRIED_UNROLL:
                    return UnrollNeeded(message, phi.var, len(seq.elems))
    return None


def unroll_counter_loop(ir: IR, counter: Var, count: int) -> bool:
    """Unroll, in place, the loop whose counter phi is `counter`, `count` times;
    False (nothing changed) when the loop is not of the form described above."""
    blocks = ir.block_map()
    head = next((b for b in ir.blocks if any(p.var == counter for p in b.phis)), None)
    if head is None or not isinstance(head.term, Branch) or len(head.phis) == 0:
        return False
    preds = ir.predecessors()[head.id]
    body_id = next((s for s in head.term.successors() if blocks[s].term is not None
                    and isinstance(blocks[s].term, Goto) and blocks[s].term.target == head.id),
                   None)
    if body_id is None and len(preds) == 2:      # a body of several blocks
        phi = next(p for p in head.phis if p.var == counter)
        outside = [p for p in preds if phi.incoming.get(p) == Const(0)]
        return len(outside) == 1 and unroll_region(ir, head, count, outside[0], _copy, _mapped)
    if body_id is None or len(preds) != 2 or body_id not in preds:
        return False
    body = blocks[body_id]
    exit_id = head.term.else_ if head.term.then == body_id else head.term.then
    entry_pred = preds[0] if preds[1] == body_id else preds[1]
    phi = next(p for p in head.phis if p.var == counter)
    if phi.incoming.get(entry_pred) != Const(0) or len(ir.predecessors()[body_id]) != 1:
        return False
    env = {p.var: p.incoming[entry_pred] for p in head.phis}
    stmts = []
    for _ in range(count):
        for s in list(head.stmts) + list(body.stmts):
            stmts.append(_copy(ir, s, env))
        env = {p.var: _mapped(p.incoming[body_id], env) for p in head.phis}
    head.phis, head.stmts = [], stmts
    copied = {id(x) for x in stmts}
    head.term = Goto(exit_id, head.term.line)
    ir.blocks = [b for b in ir.blocks if b.id != body_id]
    for b in ir.blocks:          # what the loop's phis held at its exit
        for p in b.phis:
            p.incoming = {k: _mapped(v, env) for k, v in p.incoming.items()}
        for s in b.stmts:
            if id(s) not in copied:
                s.map_operands(lambda v: _mapped(v, env))
        if isinstance(b.term, Branch) and isinstance(b.term.cond, Var):
            b.term.cond = _mapped(b.term.cond, env)
        value = getattr(b.term, "value", None)
        if isinstance(value, Var):
            b.term.value = _mapped(value, env)
    return True


def _mapped(v: Any, env: dict) -> Any:
    return env.get(v, v) if isinstance(v, Var) else v


_FOLD = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "lt": lambda a, b: a < b}


def _copy(ir: IR, s: Stmt, env: dict) -> Stmt:
    """A copy of `s` reading the values of this iteration (integer arithmetic on
    constants folded, so that each copy indexes the tuple by a constant)."""
    args = [_mapped(a, env) for a in s.args]
    kwargs = {k: _mapped(v, env) for k, v in s.kwargs.items()}
    folded: Optional[Any] = None
    if s.op in _FOLD and all(isinstance(a, Const) and type(a.value) is int for a in args):
        folded = Const(_FOLD[s.op](args[0].value, args[1].value))
    var = ir.new_var()
    env[s.var] = folded if folded is not None else var
    return Stmt(var, s.op, args, kwargs, s.line, s.name)
