"""Lists compiled code builds by appending (`BuiltListT`): `acc = []` then
`acc.append(v)` in a loop, and list comprehensions, lower to `list_append(acc, v)` on a
fresh local list (`lowering.values.ListAppend`).

Natively a built list is {data, length, capacity}: its elements, of one type, stored
one after the other in arena memory, as the LLVM values they are (numbers, arrays,
tuples of those: each a whole number of 8-byte words, the layout host calls use).
`list_append` stores in place and doubles the capacity when it is full, as CPython's
list does; a value of the list taken before an append still reads the elements it
had.  `len(acc)` (`jit.library.math_builtins`), `acc[i]`, `acc[a:b:c]` (a new list, as
CPython's) and iteration are native; numpy (`np.stack(acc)`) gets a Python list
through the host callback.

The cotangent of a built list is a built list of its elements' cotangents; the
derivative of `list_append` (`adjoint.rules.d_list_append`) takes the last entry off
it, here in O(1) (`list_init`, `list_last`).
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir as L

from ssair.ir import Stmt

from adjoint.rules import lookup_op
from jit.codegen.arrays import ZERO, allocate_words, count_loop, index_operands
from jit.codegen.function import I64, PTR, FunctionGen, lltype, zero_of
from jit.library.python_impls import mark
from jit.library.index_plans import SliceT
from jit.library.registry import REGISTRY
from jit.library.slicing import slice_bounds
from jit.typing.infer import IR_REWRITES, Context, empty_list
from jit.typing.unroll import RetypeNeeded
from jit.types import (BOOL, FLOAT64, INT64, ArrayT, BuiltListT, ListT, ObjectT, StrT, TupleT,
                       Type, is_int_like, numeric_join)

FAMILY = "built lists"
ONE = L.Constant(I64, 1)


def storable(t: Type) -> bool:
    """Element types whose native value is a whole number of 8-byte words."""
    if t in (FLOAT64, INT64) or isinstance(t, (ArrayT, StrT, ObjectT, BuiltListT)):
        return True
    return isinstance(t, TupleT) and all(storable(e) for e in t.elems)


def _words(t: Type) -> int:
    from jit.runtime.host_calls import slot_count
    return slot_count(t)


# -- list_append -------------------------------------------------------------------------
def _is_append(ctx: Context, s, ts: list) -> bool:
    return empty_list(ts[0]) or isinstance(ts[0], (BuiltListT, ListT))


def _t_append(ctx: Context, s, ts: list) -> Type:
    acc, v = ts
    if v == BOOL:
        v = INT64          # stored as a word (numpy makes an int array of them too)
    if isinstance(acc, ListT):       # `[first]`, then appends: its entries must agree
        if not all(e == v for e in acc.elems):
            ctx.fail(f"appending a {v} to a {acc} is not compiled (entries of one type)")
        acc = BuiltListT(v)
    if not storable(v):
        ctx.fail(f"a list of {v} values is not compiled (numbers, arrays, tuples of them)")
    if isinstance(acc, BuiltListT) and acc.elem != v:
        if acc.elem in (FLOAT64, INT64) and v in (FLOAT64, INT64):
            return BuiltListT(numeric_join(acc.elem, v))
        msg = (f"appending a {v} to a list of {acc.elem} is not compiled "
               "(outside a list made by appends in straight-line code)")
        raise _loop_unroll(ctx, s, msg) or FixedListNeeded(msg, s.var)
    return BuiltListT(v)


def _cg_append(fc: FunctionGen, s, ts) -> L.Value:
    b = fc.b
    et, elem = lltype(s.type.elem), s.type.elem
    size = L.Constant(I64, 8 * _words(elem))
    acc = fc.get(s.args[0], s.type)
    data, n, cap = (b.extract_value(acc, k) for k in range(3))
    slots = fc.alloca(L.LiteralStructType([PTR, I64]))
    b.store(data, b.gep(slots, [ZERO, L.Constant(L.IntType(32), 0)]))
    b.store(cap, b.gep(slots, [ZERO, L.Constant(L.IntType(32), 1)]))
    with b.if_then(b.icmp_signed("==", n, cap), likely=False):
        grown = b.select(b.icmp_signed("==", cap, ZERO), L.Constant(I64, 4),
                         b.mul(cap, L.Constant(I64, 2)))
        new = allocate_words(fc, b.mul(grown, size))
        count_loop(fc, n, lambda j: b.store(
            b.load(b.gep(data, [j], source_etype=et), typ=et), b.gep(new, [j], source_etype=et)))
        b.store(new, b.gep(slots, [ZERO, L.Constant(L.IntType(32), 0)]))
        b.store(grown, b.gep(slots, [ZERO, L.Constant(L.IntType(32), 1)]))
    data = b.load(b.gep(slots, [ZERO, L.Constant(L.IntType(32), 0)]), typ=PTR)
    cap = b.load(b.gep(slots, [ZERO, L.Constant(L.IntType(32), 1)]), typ=I64)
    b.store(fc.get(s.args[1], elem), b.gep(data, [n], source_etype=et))
    out = L.Constant(lltype(s.type), L.Undefined)
    for k, v in enumerate((data, b.add(n, ONE), cap)):
        out = b.insert_value(out, v, k)
    return out


# -- reading -------------------------------------------------------------------------------
def _is_read(ctx: Context, s, ts: list) -> bool:
    return isinstance(ts[0], BuiltListT) or empty_list(ts[0])


def _t_getitem(ctx: Context, s, ts: list) -> Type:
    if empty_list(ts[0]):
        return None      # not known until the loop that appends is typed
    if len(ts) == 2 and isinstance(ts[1], SliceT):
        return ts[0]     # a new list of the entries the slice picks
    if len(ts) != 2 or not is_int_like(ts[1]):
        ctx.fail(f"indexing a {ts[0]} by {', '.join(map(str, ts[1:]))} is not compiled "
                 "(one integer or a slice)")
    return ts[0].elem


def _cg_getitem(fc: FunctionGen, s, ts) -> L.Value:
    b = fc.b
    acc = fc.get(s.args[0])
    n = b.extract_value(acc, 1)
    if isinstance(ts[1], SliceT):
        return _slice_copy(fc, acc, fc.get(s.args[1]), ts[1], s.type.elem)
    i = index_operands(fc, s.args[1:])[0]
    j = b.select(b.icmp_signed("<", i, ZERO), b.add(i, n), i)
    fc.raise_if(b.or_(b.icmp_signed("<", j, ZERO), b.icmp_signed(">=", j, n)), IndexError,
                "list index out of range")
    et = lltype(s.type)
    return b.load(b.gep(b.extract_value(acc, 0), [j], source_etype=et), typ=et)


def _slice_copy(fc: FunctionGen, acc, sl, st: SliceT, elem: Type) -> L.Value:
    """`acc[sl]`: a new built list of the entries the slice picks (CPython's bounds)."""
    b = fc.b
    et = lltype(elem)
    start, step, length = slice_bounds(fc, sl, st, b.extract_value(acc, 1))
    data = b.extract_value(acc, 0)
    return new_built_list(fc, length, elem, lambda k: b.load(
        b.gep(data, [b.add(start, b.mul(k, step))], source_etype=et), typ=et))


def new_built_list(fc: FunctionGen, n, elem: Type, entry) -> L.Value:
    """A new built list of `n` entries of type `elem`, entry k the value `entry(k)`
    (emitted in a loop); its memory is never empty (so a list of none is not NULL)."""
    b = fc.b
    et = lltype(elem)
    words = b.mul(b.select(b.icmp_signed(">", n, ZERO), n, ONE), L.Constant(I64, 8 * _words(elem)))
    data = allocate_words(fc, words)
    count_loop(fc, n, lambda k: b.store(entry(k), b.gep(data, [k], source_etype=et)))
    out = L.Constant(lltype(BuiltListT(elem)), L.Undefined)
    for k, v in enumerate((data, n, n)):
        out = b.insert_value(out, v, k)
    return out


# -- the derivative of list_append: the cotangent list without its last entry, and it ----
def list_init(xs):
    """All but the last entry of a built list (a view: no copy)."""
    raise TypeError("jit.library.built_lists.list_init runs only in compiled code")


def list_last(xs):
    """The last entry of a built list (its zero when the list is empty)."""
    raise TypeError("jit.library.built_lists.list_last runs only in compiled code")


def _t_list_part(ctx: Context, s, ts: list) -> Type:
    if len(ts) != 1 or not isinstance(ts[0], BuiltListT):
        ctx.fail(f"{s.args[0].value.__name__} of {ts} is not compiled")
    return ts[0] if s.args[0].value is list_init else ts[0].elem


def _cg_list_init(fc: FunctionGen, s, ts) -> L.Value:
    b = fc.b
    acc = fc.get(s.args[1])
    n = b.extract_value(acc, 1)
    return b.insert_value(acc, b.select(b.icmp_signed(">", n, ZERO), b.sub(n, ONE), ZERO), 1)


def _cg_list_last(fc: FunctionGen, s, ts) -> L.Value:
    b = fc.b
    acc = fc.get(s.args[1])
    n = b.extract_value(acc, 1)
    et = lltype(s.type)
    out = fc.alloca(et)
    b.store(zero_of(s.type), out)
    with b.if_then(b.icmp_signed(">", n, ZERO)):
        b.store(b.load(b.gep(b.extract_value(acc, 0), [b.sub(n, ONE)], source_etype=et),
                       typ=et), out)
    return b.load(out, typ=et)


def _d_list_append(dy, xs, x):
    return list_init(dy), list_last(dy)


mark(_d_list_append)


def _pick_d_append(argtypes: list):
    return _d_list_append if argtypes and isinstance(argtypes[0], BuiltListT) else None


def _loop_unroll(ctx: Context, s, msg: str):
    """The unrolling of the loop over a tuple or list of known length whose carried list
    `s` appends to (its header's phi), so that each copy appends one entry in
    straight-line code; None when `s` is not in such a loop."""
    from jit.typing.unroll import carried_unroll
    ir = ctx.typing.ir
    defs = {x.var: x for b in ir.blocks for x in b.stmts}
    acc = s.args[0]
    while acc in defs and defs[acc].op == "list_append":     # back to the list's phi
        acc = defs[acc].args[0]
    head = next((b for b in ir.blocks if any(p.var == acc for p in b.phis)), None)
    if head is None:
        return None
    return carried_unroll(ctx.typing.ir, head.id, ctx.type_of, msg)


class FixedListNeeded(RetypeNeeded):
    """Entries of different types appended to one list: where the appends run once
    each, in straight-line code, the list is the display of its entries."""

    def __init__(self, message: str, var) -> None:
        super().__init__(message)
        self.var = var

    def apply(self, ir) -> bool:
        return appends_as_display(ir, self.var)


def appends_as_display(ir, var) -> bool:
    """Rewrite, in place, the chain `%l0 = list(a)`, `%l1 = list_append(%l0, b)`, ...
    through the append defining `var`, as the one display `list(a, b, ...)` at the
    last append: a list of known length, whose entries may differ in type (a 2-D
    and a 1-D array), as `[a, b]` is.  The chain must run straight (no block of it in
    a loop) and each list but the last be read only by the next append; False when
    it does not."""
    from ssair.cfg import blocks_in_cycles
    defs = {s.var: (b, s) for b in ir.blocks for s in b.stmts}
    uses: dict = {}
    for user, a in ir.uses():
        uses.setdefault(a, []).append(user)
    chain = _chain_back(defs, var)
    if chain is None:
        return False
    while True:       # on to the last append of the list
        after = uses.get(chain[-1][1].var, [])
        if len(after) != 1 or getattr(after[0], "op", None) != "list_append" \
                or after[0].args[0] != chain[-1][1].var:
            break
        chain.append(defs[after[0].var])
    loops = blocks_in_cycles(ir)
    if any(b.id in loops for b, _ in chain) or \
            any(len(uses.get(s.var, [])) != 1 for _, s in chain[:-1]):
        return False
    values = list(chain[0][1].args) + [s.args[1] for _, s in chain[1:]]
    dropped = {id(s) for _, s in chain[:-1]}
    for b in {id(b): b for b, _ in chain}.values():
        b.stmts = [x for x in b.stmts if id(x) not in dropped]
    block, last = chain[-1]
    k = block.stmts.index(last)
    block.stmts[k] = Stmt(last.var, "list", values, {}, last.line, last.name)
    return True


def _chain_back(defs: dict, var) -> Optional[list]:
    """[(block, stmt)] from the list display a chain of appends starts at to the
    append defining `var`, or None."""
    chain = []
    while var in defs and defs[var][1].op == "list_append":
        chain.append(defs[var])
        var = defs[var][1].args[0]
    if var not in defs or defs[var][1].op != "list" or not chain:
        return None
    chain.append(defs[var])
    return chain[::-1]


def displays_as_appends(ir) -> None:
    """Rewrite each list display `%l = list(a, b)` that a `list_append` grows (directly
    or through phis) as `list()` then one `list_append` per entry, in place, so that
    the list is a built list from the start (a typed IR copy, before inference)."""
    from ssair.ir import Stmt, Var
    grown = {s.args[0] for b in ir.blocks for s in b.stmts
             if s.op == "list_append" and isinstance(s.args[0], Var)}
    changed = True
    while changed:
        changed = False
        for b in ir.blocks:
            for p in b.phis:
                if p.var in grown:
                    new = {v for v in p.incoming.values() if isinstance(v, Var)} - grown
                    grown |= new
                    changed |= bool(new)
    for b in ir.blocks:
        out = []
        for s in b.stmts:
            if s.op != "list" or not s.args or s.var not in grown:
                out.append(s)
                continue
            acc = ir.new_var()
            out.append(Stmt(acc, "list", [], line=s.line, name=s.name))
            for k, v in enumerate(s.args):
                var = s.var if k == len(s.args) - 1 else ir.new_var()
                out.append(Stmt(var, "list_append", [acc, v], line=s.line, name=s.name))
                acc = var
        b.stmts = out


def _is_built(ctx: Context, s, ts: list) -> bool:
    return isinstance(ts[0], BuiltListT)


def _t_truth(ctx: Context, s, ts: list) -> Type:
    return BOOL


def _cg_truth(fc: FunctionGen, s, ts) -> L.Value:
    """`if xs:` / `not xs` of a built list: whether it has an entry."""
    n = fc.b.extract_value(fc.get(s.args[0]), 1)
    return fc.b.icmp_signed("!=" if s.op == "truth" else "==", n, ZERO)


def _declare() -> None:
    IR_REWRITES.append(displays_as_appends)
    for op in ("truth", "not"):
        REGISTRY.overload(op, "a built list (its length)", _is_built, _t_truth, _cg_truth,
                          family=FAMILY, numpy_too=True)
    o = REGISTRY.overload
    o("list_append", "[] or a built list, a number, array or tuple", _is_append, _t_append,
      _cg_append, family=FAMILY, numpy_too=True)
    o("getitem", "a built list, an integer or a slice", _is_read, _t_getitem, _cg_getitem,
      family=FAMILY,
      numpy_too=True)
    REGISTRY.declare(list_init, family="derivatives", pattern="a built list",
                     types=_t_list_part, lower=_cg_list_init, numpy_too=True)
    REGISTRY.declare(list_last, family="derivatives", pattern="a built list",
                     types=_t_list_part, lower=_cg_list_last, numpy_too=True)
    REGISTRY.declare_pullback(lookup_op("list_append").pullback, "a built list's cotangent",
                              _pick_d_append)


_declare()
