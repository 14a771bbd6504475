"""Pass `canonical_inplace`: in-place operators (`x += y`, lowered to `iadd(x, y)`)
made differentiable, before the J transform.

On a number (or any object without in-place methods) `iOP` *is* `OP`; on a numpy
array it writes the result into `x`, which aliases and the caller see.  The pass
  1. seeds the argument types from the runtime argument values (`arg_types`: a float
     is `float64`, an int `int64`, a bool `bool`, a float array `array(float64, 1d)`)
     on a copy and runs `ssair.passes.inplace`, which turns every `iOP` whose left
     operand is then provably a scalar into `OP` (the common scalar code: `s += a[i]`,
     `r *= x`);
  2. rewrites `%r = iOP(%a, %b)` on a provably float array `%a` (an argument, an
     `np.zeros(n)`, float-array arithmetic: `Scalars.is_float_array`) into
     `%t = OP(%a, %b)`, `setitem(%a, %t, Ellipsis)` and uses `%a` for `%r`;
  3. splits the block of every remaining `%r = iOP(%a, %b)` into a run-time test
         %m = call(@updates_float_array, %a)
         goto #num if not %m
         #arr: %t = OP(%a, %b); setitem(%a, %t, Ellipsis)    (a[...] = a OP b)
         #num: %s = iOP(%a, %b)                                (a number: OP itself)
         #join: %r = φ (#arr => %a, #num => %s)
     so an array update is an ordinary out-of-place op plus a whole-array write,
     which activity analysis, snapshots and the adjoint of `setitem` already handle
     (aliases included), while the value the primal computes is CPython's: for a
     float array `a[...] = a OP b` stores what `a OP= b` does, anything else runs
     `iOP` itself.  The `#num` statement's derivative is `OP`'s (`iOP` rules below).
Requires: nothing.  Guarantees: the same results as the input on every input; every
`iOP` left is alone in a block entered from such a test (a second run adds none).
Returns a new IR; the input is not modified.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from ssair import IR, Branch, Const, Goto, Phi, Stmt, Var
from ssair.passes.inplace import inplace, updates_float_array
from ssair.passes.scalars import Scalars
from ssair.passes.util import use_counts
from ssair.primitives import INPLACE

from ..rules import OP_RULES, Rule, nondiff


def arg_type(x: Any) -> str | None:
    """The type name the scalar analysis reads for a runtime value (None: unknown)."""
    if isinstance(x, (bool, np.bool_)):
        return "bool"
    if isinstance(x, (int, np.integer)):
        return "int64"
    if isinstance(x, (float, np.floating)):
        return "float64"
    if isinstance(x, np.ndarray) and x.dtype.kind in "biuf" and 1 <= x.ndim <= 9:
        kind = {"b": "bool", "i": "int64", "u": "int64", "f": "float64"}[x.dtype.kind]
        return f"array({kind}, {x.ndim}d)"
    return None


def arg_types(values: tuple) -> tuple:
    return tuple(arg_type(v) for v in values)


def canonical_inplace(ir: IR, types: tuple | None = None) -> IR:
    """See the module docstring; `types[k]` is argument k's type name or None."""
    if not _has_inplace(ir):
        return ir
    seeded = ir.copy()
    if not _OWN_CODE or not (ir.file or "").startswith(_OWN_CODE):
        _scatter_adds(seeded)     # (zygopy's own rule code keeps np.add.at: the branch
        #                          that calls it is refused where it runs, if it runs)
    for a, t in zip(seeded.args, types or ()):
        if a.type is None and t is not None:
            a.type = t
    out = inplace(seeded)
    _augmented_subscripts(out)
    arrays = Scalars(out)
    for a, orig in zip(out.args, ir.args):
        a.type = orig.type
    certain = _write_arrays(out, arrays)
    guarded = _split_all(out)
    out.meta["guarded_writes"] = set(guarded)
    _check_aliases(out, certain + guarded, arrays)
    return out


class RefusedWrite:
    """Stands in an in-place update's array branch (`#arr`, module docstring) that
    the adjoint cannot follow (an alias of the array is still live, or the array
    may be a view): raises when that branch runs, so a value that is a number at
    run time (`x += x` on a float) is updated as CPython does.  A library callable,
    never lowered: the JIT decides the branch from the type and never types it."""

    __zygopy_symbol__ = "adjoint.passes.inplace.refused_write"

    def __call__(self, message: str) -> None:
        raise TypeError(message)

    def __zygopy_explain__(self, message) -> str:
        return "an in-place update of an array that reverse mode cannot follow"

    def __repr__(self) -> str:
        return "<adjoint.passes.inplace.refused_write>"


refused_write = RefusedWrite()


def refuse_write(ir: IR, write: Var, message: str) -> None:
    """Raise `message` now when `write` (a `setitem`) always runs; when it is the
    array branch of a split update, make that branch raise it instead."""
    if write not in ir.meta.get("guarded_writes", ()):
        raise TypeError(message)
    for b in ir.blocks:
        for k, s in enumerate(b.stmts):
            if s.var == write:
                b.stmts.insert(k, Stmt(ir.new_var(), "call",
                                       [Const(refused_write), Const(message)], line=s.line))
                return


def _write_arrays(ir: IR, kinds: Scalars) -> list:
    """`%r = iOP(%a, %b)` on a known float array `%a`: `%t = OP(%a, %b)`,
    `setitem(%a, %t, Ellipsis)`, and `%r` is `%a` itself (no new name for the same
    object, so that every alias stays one value)."""
    repl, writes = {}, []
    for b in ir.blocks:
        stmts = []
        for s in b.stmts:
            if s.op not in INPLACE or not kinds.is_float_array(s.args[0]):
                stmts.append(s)
                continue
            t = Stmt(ir.new_var(), INPLACE[s.op], list(s.args), line=s.line, name=s.name)
            stmts += [t, Stmt(ir.new_var(), "setitem", [s.args[0], t.var, Const(Ellipsis)],
                              line=s.line)]
            repl[s.var] = s.args[0]
            writes.append(stmts[-1].var)
        b.stmts = stmts
    if repl:
        ir.replace_uses(repl)
        _drop_trivial_phis(ir)
    return writes


def _augmented_subscripts(ir: IR) -> None:
    """`a[i] OP= b`, lowered to `%t = getitem(%a, i)`, `%r = iOP(%t, %b)`,
    `setitem(%a, %r, i)` (in one block or, where each may raise to a handler, in
    several): when `%t` and `%r` have no other use, `iOP` becomes `OP`.
    The write-back stores the same values either way, and the read `%t` (a view for
    a slice) is then never written into; an advanced index copies, and the
    write-back keeps one update per repeated index, as numpy does."""
    uses = use_counts(ir)
    defs = {s.var: s for b in ir.blocks for s in b.stmts}   # (the three statements may
    for b in ir.blocks:                                     # be in three blocks: a `with`
        for s in b.stmts:                                   # body's may each raise)
            if s.op != "setitem" or not isinstance(s.args[1], Var):
                continue
            op = defs.get(s.args[1])
            if op is None or op.op not in INPLACE or not isinstance(op.args[0], Var):
                continue
            read = defs.get(op.args[0])
            if (read is not None and read.op == "getitem" and read.args[0] == s.args[0]
                    and _same_indices(read.args[1:], s.args[2:], defs) and uses[read.var] == 1
                    and uses[op.var] == 1):
                op.op = INPLACE[op.op]


def _same_indices(xs: list, ys: list, defs: dict) -> bool:
    """Do two index operand lists name the same index?  Python 3.12+ lowers `a[1:] OP=
    b` with the slice built twice (BINARY_SLICE, STORE_SLICE): `slice(...)` calls and
    tuples of the same operands are the same index."""
    return len(xs) == len(ys) and all(_same_index(x, y, defs) for x, y in zip(xs, ys))


def _same_index(x, y, defs: dict) -> bool:
    if x == y:
        return True
    dx, dy = defs.get(x), defs.get(y)
    if dx is None or dy is None or dx.op != dy.op or dx.kwargs or dy.kwargs:
        return False
    if dx.op == "call" and isinstance(dx.args[0], Const) and dx.args[0].value is slice:
        return dx.args == dy.args
    return dx.op == "tuple" and _same_indices(dx.args, dy.args, defs)


def _drop_trivial_phis(ir: IR) -> None:
    """Remove phis that merge one value (ignoring themselves), to a fixpoint."""
    changed = True
    while changed:
        changed = False
        for b in ir.blocks:
            for p in list(b.phis):
                vals = {v for v in p.incoming.values() if v != p.var}
                if len(vals) == 1:
                    b.phis.remove(p)
                    ir.replace_uses({p.var: vals.pop()})
                    changed = True


def _has_inplace(ir: IR) -> bool:
    defs = {s.var: s for b in ir.blocks for s in b.stmts}
    return any(s.op in INPLACE or adds_at(s, defs) for b in ir.blocks for s in b.stmts)


_OWN_CODE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # adjoint/


def adds_at(s: Stmt, defs: dict) -> bool:
    """Is `s` a call `np.add.at(a, indices, values)` (through `getattr(np.add, "at")`
    or the bound method as a constant)?"""
    if s.op != "call" or len(s.args) != 4 or s.kwargs:
        return False
    f = s.args[0]
    m = defs.get(f) if isinstance(f, Var) else None
    if m is not None and m.op == "getattr":
        return isinstance(m.args[0], Const) and m.args[0].value is np.add and \
            m.args[1] == Const("at")
    g = f.value if isinstance(f, Const) else None
    return getattr(g, "__self__", None) is np.add and getattr(g, "__name__", "") == "at"


def _scatter_adds(ir: IR) -> None:
    """`np.add.at(a, i, v)` becomes `%t = scatter_added(a, i, v)`, `a[...] = %t` (in
    place on `ir`): the write into `a` is then an ordinary whole-array write, which
    the rest of this pass and the adjoint of `setitem` handle, aliases included."""
    from ..rules_numpy import scatter_added
    defs = {s.var: s for b in ir.blocks for s in b.stmts}
    for b in ir.blocks:
        stmts = []
        for s in b.stmts:
            if adds_at(s, defs):
                t = ir.new_var()
                stmts.append(Stmt(t, "call", [Const(scatter_added)] + list(s.args[1:]),
                                  line=s.line))
                stmts.append(Stmt(s.var, "setitem", [s.args[1], t, Const(Ellipsis)],
                                  line=s.line))
            else:
                stmts.append(s)
        b.stmts = stmts


def _split_all(ir: IR) -> list:
    k, writes = 0, []
    while k < len(ir.blocks):
        b = ir.blocks[k]
        for i, s in enumerate(b.stmts):
            if s.op in INPLACE and not _already_split(ir, b, s):
                writes.append(_split(ir, k, i))
                break
        k += 1
    return writes


def _already_split(ir: IR, block, s: Stmt) -> bool:
    """`s` is the `#num` statement of an earlier split (a second run keeps it)."""
    if len(block.stmts) != 1:
        return False
    ids = {block.id} | {g.id for g in ir.blocks if isinstance(g.term, Goto) and not g.stmts
                        and g.term.target == block.id and g.term.unwind is not None}
    for p in ir.blocks:
        t = p.term
        if isinstance(t, Branch) and t.else_ in ids and p.stmts:
            test = p.stmts[-1]
            if (test.var == t.cond and test.op == "call" and test.args[1:] == [s.args[0]]
                    and test.args[0] == Const(updates_float_array)):
                return True
    return False


def _split(ir: IR, k: int, i: int) -> Var:
    """Split block `ir.blocks[k]` at its statement `i`, an `iOP` (module docstring);
    returns the value of the `setitem` it adds."""
    b = ir.blocks[k]
    s = b.stmts[i]
    a, rhs = s.args
    base = max(x.id for x in ir.blocks)
    arr, num, join = (ir.add_block(base + n) for n in (1, 2, 3))
    ir.blocks[k + 1:] = [arr, num, join] + [x for x in ir.blocks[k + 1:]
                                            if x not in (arr, num, join)]
    join.stmts, join.term = b.stmts[i + 1:], b.term
    _rename_pred(ir, join.term, b.id, join.id)
    test = ir.new_var()
    b.stmts = b.stmts[:i] + [Stmt(test, "call", [Const(updates_float_array), a], line=s.line)]
    b.term = Branch(test, arr.id, num.id, s.line)
    t = ir.push(arr, INPLACE[s.op], a, rhs, line=s.line)
    write = ir.push(arr, "setitem", a, t, Const(Ellipsis), line=s.line)
    arr.term = Goto(join.id, s.line)
    num.stmts = [Stmt(ir.new_var(), s.op, [a, rhs], line=s.line, name=s.name)]
    num.term = Goto(join.id, s.line)
    join.phis = [Phi(s.var, {arr.id: a, num.id: num.stmts[0].var}, s.line, s.name)]
    _keep_protected(ir, b, (arr, num))
    return write


def _keep_protected(ir: IR, b, parts: tuple) -> None:
    """When `b` was a protected block (`goto #b unwind #h`), each of `parts` is
    entered the same way through an empty block of its own, so that the update
    still raises into #h with the values #h saw from the block before `b`."""
    entry = next((p for p in ir.blocks if isinstance(p.term, Goto)
                  and p.term.target == b.id and p.term.unwind is not None), None)
    if entry is None:
        return
    handler = ir.block(entry.term.unwind)
    for part in parts:
        gate = ir.add_block(max(x.id for x in ir.blocks) + 1)
        ir.blocks.remove(gate)
        ir.blocks.insert(ir.blocks.index(part), gate)
        gate.term = Goto(part.id, part.term.line, handler.id)
        b.term.retarget(part.id, gate.id)
        for phi in handler.phis:
            phi.incoming[gate.id] = phi.incoming[entry.id]


def _check_aliases(ir: IR, writes: list, kinds: Scalars) -> None:
    """Refuse an array write that another name of the same array outlives.

    The adjoint follows an array's cotangent by SSA value; phis joining several
    names of one object (`keep = acc` before a loop that does `acc += ...`, where
    `acc` may be a number at run time) would hide the write from the other name.
    A name proven to hold a number (`kinds`) is never that array: numbers are
    immutable, and the write only happens when the value is an array."""
    if not writes:
        return
    group = _phi_groups(ir)
    live = live_after(ir, set(writes))
    for b in ir.blocks:
        for s in list(b.stmts):
            if s.var not in live:
                continue
            a = s.args[0]
            others = {v for v in live[s.var] if v != a and group.get(v, v) == group.get(a, a)
                      and not kinds.is_scalar(v)}
            if others:
                names = {d.var: getattr(d, "name", None) for d in ir.definitions()}
                other = min(others, key=lambda v: v.id)
                refuse_write(ir, s.var, 
                    f"adjoint: in-place update of {names.get(a) or a} at {ir.file}:{s.line} "
                    f"while the same object is still reachable as {names.get(other) or other} "
                    "(an alias "
                    "through a loop or a branch of a value whose kind is only known at run "
                    "time) is not differentiable; write `x = x + y` instead")


def _phi_groups(ir: IR) -> dict:
    """Var -> representative of the values phis (and copies) join."""
    parent: dict = {}

    def find(v):
        while parent.get(v, v) != v:
            v = parent[v]
        return v
    for b in ir.blocks:
        joins = [(p.var, p.operands()) for p in b.phis]
        joins += [(s.var, s.args) for s in b.stmts if s.op == "copy"]
        for v, ops in joins:
            for o in ops:
                if isinstance(o, Var) and find(o) != find(v):
                    parent[find(o)] = find(v)
    return {v: find(v) for v in parent}


def live_after(ir: IR, stmts: set) -> dict:
    """For each statement value in `stmts`: the Vars live just after it."""
    live_out = _liveness(ir)[1]
    out = {}
    for b in ir.blocks:
        live = set(live_out[b.id]) | {o for o in b.term.operands() if isinstance(o, Var)}
        for s in reversed(b.stmts):
            if s.var in stmts:
                out[s.var] = set(live)
            live.discard(s.var)
            live |= {o for o in s.operands() if isinstance(o, Var)}
    return out


def _liveness(ir: IR) -> tuple:
    """Block live-in / live-out sets of Vars (phi operands live out of their edge)."""
    succ = {b.id: b.successors() for b in ir.blocks}
    blocks = ir.block_map()
    live_in = {b.id: set() for b in ir.blocks}
    live_out = {b.id: set() for b in ir.blocks}
    changed = True
    while changed:
        changed = False
        for b in reversed(ir.blocks):
            out = set()
            for t in succ[b.id]:
                out |= live_in[t] - {p.var for p in blocks[t].phis}
                out |= {p.incoming[b.id] for p in blocks[t].phis
                        if isinstance(p.incoming.get(b.id), Var)}
            new_in = _block_uses(b, out)
            if out != live_out[b.id] or new_in != live_in[b.id]:
                live_out[b.id], live_in[b.id] = out, new_in
                changed = True
    return live_in, live_out


def _block_uses(b, out: set) -> set:
    live = set(out) | {o for o in b.term.operands() if isinstance(o, Var)}
    for s in reversed(b.stmts):
        live.discard(s.var)
        live |= {o for o in s.operands() if isinstance(o, Var)}
    return live | {p.var for p in b.phis}


def _rename_pred(ir: IR, term, old: int, new: int) -> None:
    """The successors of a moved terminator now come from block `new`."""
    for sid in term.successors() if term is not None else ():
        for p in ir.block(sid).phis:
            p.incoming = {(new if k == old else k): v for k, v in p.incoming.items()}


def _alias_rules() -> None:
    """`iOP` on a number is `OP`: the same derivative rule."""
    for iop, op in INPLACE.items():
        base = OP_RULES.get(op)
        if base is not None:
            OP_RULES[iop] = Rule(iop, base.pullback, base.emit, base.needs, base.varied,
                                 base.scalar, partial=base.partial)


nondiff(updates_float_array, refused_write)
_alias_rules()
__all__ = ["arg_type", "arg_types", "canonical_inplace", "live_after", "refuse_write",
           "refused_write"]
