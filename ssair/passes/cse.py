"""Common subexpression elimination over the dominator tree."""
from __future__ import annotations

from ..cfg import DomTree
from ..ir import IR, Const, Var
from ..primitives import PRIMITIVES
from .scalars import Scalars
from .util import is_literal

# Never merged: new mutable objects (`list`, closures), effects, and operations that
# may consume an iterator passed in (`unpack`, `in`).
NEVER = {"list", "make_closure", "call", "setitem", "unpack", "in", "notin"}
# Results are immutable and carry no identity worth keeping apart.
ALWAYS = {"is", "isnot", "not", "truth", "tuple"}
# Reads of possibly mutable containers.
READS = {"getitem", "getattr"}


def cse(ir: IR) -> IR:
    """Merge identical pure computations when the first dominates the second.

    Requires: a well-formed IR whose uses are dominated by their definitions.
    Guarantees: returns a new IR (the input is untouched) where a statement equal to
    a dominating one (same op, same operands, same keyword operands) is deleted and
    its uses read the dominating value; likewise for two phis of one block with the
    same incoming operands.  Only these statements are merged:
      * `is`, `isnot`, `not`, `truth`, `tuple` (immutable results);
      * other pure foldable primitives whose operands are all known scalars
        (`scalars.Scalars`) or literal constants: an array `x + y` is a new mutable
        array each time and must stay so;
      * `getitem` / `getattr` with scalar or literal indices, and only in functions
        without impure statements (`call`, `setitem`), which could mutate the object
        between the two reads.
    Never merged: `list`, `make_closure`, `unpack`, `in`, `call`, `setitem`.
    """
    ir = ir.copy()
    sc = Scalars(ir)
    has_effects = any(not _pure(s.op) for b in ir.blocks for s in b.stmts)
    mapping: dict = {}

    def visit(block, table: dict) -> list:
        return _visit(block, sc, has_effects, mapping, table)

    _walk_dominator_tree(ir, visit)
    ir.replace_uses(mapping)
    return ir


def _walk_dominator_tree(ir: IR, visit) -> None:
    """Call `visit(block, table)` in dominator-tree preorder; the keys a block adds
    to `table` stay visible to the blocks it dominates and are removed after them."""
    children = DomTree(ir).children
    blocks = ir.block_map()
    table: dict = {}
    stack = [(ir.entry.id, None)]
    while stack:
        bid, undo = stack.pop()
        if undo is not None:
            for key in undo:
                del table[key]
            continue
        stack.append((bid, visit(blocks[bid], table)))
        stack += [(c, None) for c in reversed(children[bid])]


def _visit(block, sc, has_effects, mapping, table) -> list:
    """Merge the phis and statements of `block`; return the keys it added."""
    added = []
    keep_phis = []
    for p in block.phis:
        key = ("φ", block.id, tuple((b, mapping.get(v, v)) for b, v in p.incoming.items()))
        if _record(key, p.var, table, mapping, added):
            keep_phis.append(p)
    block.phis = keep_phis
    keep = []
    for s in block.stmts:
        args = [mapping.get(a, a) for a in s.args]
        kwargs = {k: mapping.get(v, v) for k, v in s.kwargs.items()}
        if not _mergeable(s.op, args, sc, has_effects):
            keep.append(s)
            continue
        key = (s.op, tuple(args), tuple(kwargs.items()))
        if _record(key, s.var, table, mapping, added):
            keep.append(s)
    block.stmts = keep
    return added


def _record(key, var, table, mapping, added) -> bool:
    """Enter `key` (True: keep the definition) or map `var` to its earlier twin."""
    try:
        earlier = table.get(key)
    except TypeError:
        return True
    if earlier is not None:
        mapping[var] = earlier
        return False
    table[key] = var
    added.append(key)
    return True


def _pure(op: str) -> bool:
    prim = PRIMITIVES.get(op)
    return prim is not None and prim.pure


def _mergeable(op: str, args: list, sc: Scalars, has_effects: bool) -> bool:
    prim = PRIMITIVES.get(op)
    if prim is None or not prim.pure or not prim.foldable or op in NEVER:
        return False
    if op in ALWAYS:
        return True
    if op in READS:
        return not has_effects and all(_scalar(a, sc) for a in args[1:])
    return all(_scalar(a, sc) for a in args)


def _scalar(a, sc: Scalars) -> bool:
    if isinstance(a, Const):
        return is_literal(a.value)
    return isinstance(a, Var) and sc.kind(a) is not None
