"""Handlers for loads and stores, stack shuffles, operators, subscripts, tuples
and lists."""
from __future__ import annotations

import sys
import types

from ssair.ir import Const

from .closures import check_capture
from .handlers import handles
from .guards import DICT_ENTRIES_MAX, sealed_dict
from .runtime import UNBOUND, EntryRef, check_star_length, read_entry, with_entry, with_member
from .values import LazyDict, LazyList, LazyTuple, Starred

PY = sys.version_info[:2]
BINARY_NAMES = {
    "ADD": "add", "SUBTRACT": "sub", "MULTIPLY": "mul", "TRUE_DIVIDE": "truediv",
    "FLOOR_DIVIDE": "floordiv", "REMAINDER": "mod", "MODULO": "mod", "POWER": "pow",
    "MATRIX_MULTIPLY": "matmul", "LSHIFT": "lshift", "RSHIFT": "rshift", "AND": "bitand",
    "OR": "bitor", "XOR": "bitxor",
}
INT_CLOSED = {"add", "sub", "mul", "floordiv", "mod", "lshift", "bitand", "bitor", "bitxor"}
UNARY = {"UNARY_NEGATIVE": "neg", "UNARY_POSITIVE": "pos", "UNARY_INVERT": "invert",
         "UNARY_NOT": "not"}


def _name(arg) -> str:
    return arg if isinstance(arg, str) else arg.name


@handles("NOP", "RESUME", "PRECALL", "COPY_FREE_VARS", "MAKE_CELL", "GEN_START",
         "EXTENDED_ARG", "CACHE", "NOT_TAKEN")
def op_nop(lw, ins):
    pass


@handles("LOAD_CONST")
def op_load_const(lw, ins):
    lw.push(Const(ins.arg))


@handles("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_BORROW")
def op_load_fast(lw, ins):
    lw.push(load_fast(lw, ins.arg))


def load_fast(lw, arg):
    """A local, or (3.13, building a closure tuple) a cell or free variable's
    capture (`lowering.closures.check_capture`)."""
    name = _name(arg)
    if (type(arg).__name__ in ("CellVar", "FreeVar") or name in lw.reader.cellvars
            or name in lw.code.co_freevars):
        return check_capture(lw, name)
    return lw.load_local(name)


@handles("LOAD_FAST_AND_CLEAR")
def op_load_fast_and_clear(lw, ins):
    """3.12+, entering an inlined comprehension: save the local (UNBOUND when it has
    no value) and unbind it; a STORE_FAST of the saved value restores it."""
    name = _name(ins.arg)
    saved = lw.ssa.read(name, lw.block)
    lw.restores[name] = (saved, name in lw.assigned)
    lw.push(saved)
    lw.ssa.write(name, lw.block, Const(UNBOUND))
    lw.assigned.discard(name)


@handles("LIST_APPEND")
def op_list_append(lw, ins):
    """`[... for ...]`'s append: `list_append(%l, %v)` is the list with `%v` added
    (its list operand is read by nothing else)."""
    v = lw.pop()
    k = len(lw.stack) - ins.arg
    if isinstance(lw.stack[k], LazyList) and lw.stack[k].var is None:   # `[*t, v]`
        lw.stack[k].elems.append(v)
        return
    lw.stack[k] = lw.emit("list_append", lw.operand(lw.stack[k]), v)


@handles("MAP_ADD")
def op_map_add(lw, ins):
    """`{k: v for ...}`'s step: `with_entry(%d, %k, %v)` is the dict with the entry
    set (its dict operand is read by nothing else)."""
    value, key = lw.pop(), lw.pop()
    k = len(lw.stack) - ins.arg
    lw.stack[k] = lw.emit("call", Const(with_entry), lw.operand(lw.stack[k]), key, value)


@handles("SET_ADD")
def op_set_add(lw, ins):
    """`{v for ...}`'s step: `with_member(%s, %v)`, as MAP_ADD."""
    value = lw.pop()
    k = len(lw.stack) - ins.arg
    lw.stack[k] = lw.emit("call", Const(with_member), lw.operand(lw.stack[k]), value)


@handles("BUILD_SET")
def op_build_set(lw, ins):
    """`{a, b}` (and a set comprehension's empty start): `set((a, b))`."""
    items = lw.operand(LazyTuple(elems=lw.popn(ins.arg)))
    lw.push(lw.emit("call", Const(set), items))


@handles("LOAD_FAST_LOAD_FAST", "LOAD_FAST_BORROW_LOAD_FAST_BORROW")
def op_load_fast_pair(lw, ins):
    for n in ins.arg:
        lw.push(load_fast(lw, n))


@handles("STORE_FAST")
def op_store_fast(lw, ins):
    name, v = _name(ins.arg), lw.pop()
    lw.store_local(name, v)
    saved, was_assigned = lw.restores.get(name, (None, True))
    if v is saved and not was_assigned:     # restored to a value that may be unbound
        lw.assigned.discard(name)


@handles("STORE_FAST_STORE_FAST")
def op_store_fast_pair(lw, ins):
    for n in ins.arg:
        lw.store_local(_name(n), lw.pop())


@handles("STORE_FAST_LOAD_FAST")
def op_store_load(lw, ins):
    store, load = ins.arg
    lw.store_local(_name(store), lw.pop())
    lw.push(lw.load_local(_name(load)))


@handles("POP_TOP")
def op_pop_top(lw, ins):
    lw.pop()


@handles("END_FOR")
def op_end_for(lw, ins):
    lw.popn(2 if PY == (3, 12) else 1)


@handles("DUP_TOP")
def op_dup_top(lw, ins):
    lw.push(lw.stack[-1])


@handles("DUP_TOP_TWO")
def op_dup_top_two(lw, ins):
    lw.stack.extend(lw.stack[-2:])


@handles("COPY")
def op_copy(lw, ins):
    lw.push(lw.stack[-ins.arg])


@handles("SWAP")
def op_swap(lw, ins):
    s, n = lw.stack, ins.arg
    s[-1], s[-n] = s[-n], s[-1]


@handles("ROT_TWO", "ROT_THREE", "ROT_FOUR", "ROT_N")
def op_rot(lw, ins):
    n = {"ROT_TWO": 2, "ROT_THREE": 3, "ROT_FOUR": 4}.get(ins.name, ins.arg)
    top = lw.pop()
    lw.stack.insert(len(lw.stack) - (n - 1), top)


def binary(lw, op: str, inplace: bool = False):
    """`a OP b`, or `a OP= b` when `inplace`: that is `iOP(a, b)` (it updates a
    mutable `a` in place), unless `a` is a known int or bool, which has no in-place
    method, so that Python computes `a OP b` instead."""
    b, a = lw.pop(), lw.pop()
    ints = lw.is_int(lw.operand(a)) and lw.is_int(lw.operand(b))
    if inplace and not is_immutable_scalar(lw, lw.operand(a)):
        op = "i" + op
    v = lw.emit(op, a, b)
    if op in INT_CLOSED and ints:
        lw.ints.add(v)
    lw.push(v)


def is_immutable_scalar(lw, v) -> bool:
    """True when `v` is certainly an int, bool or float (no `__iadd__` and friends)."""
    if isinstance(v, Const):
        return type(v.value) in (int, bool, float)
    return lw.is_int(v) or v in lw.bools


@handles("BINARY_OP")
def op_binary_op(lw, ins):
    name = ins.arg.name if hasattr(ins.arg, "name") else str(ins.arg)
    inplace = name.startswith("INPLACE_")
    name = name.replace("INPLACE_", "")
    if name not in BINARY_NAMES:
        lw.refuse(f"operator {name}")
    binary(lw, BINARY_NAMES[name], inplace)


def _legacy_binary(lw, ins):
    name = ins.name.replace("BINARY_", "").replace("INPLACE_", "")
    binary(lw, BINARY_NAMES[name], ins.name.startswith("INPLACE_"))


for _op in BINARY_NAMES:
    handles(f"BINARY_{_op}", f"INPLACE_{_op}")(_legacy_binary)


@handles("COMPARE_OP")
def op_compare(lw, ins):
    name = ins.arg.name if hasattr(ins.arg, "name") else str(ins.arg)
    binary(lw, name.split("_")[0].lower())


@handles("IS_OP")
def op_is(lw, ins):
    binary(lw, "isnot" if ins.arg else "is")


@handles("CONTAINS_OP")
def op_contains(lw, ins):
    binary(lw, "notin" if ins.arg else "in")


@handles(*UNARY)
def op_unary(lw, ins):
    lw.push(lw.emit(UNARY[ins.name], lw.pop()))


@handles("CALL_INTRINSIC_1")
def op_intrinsic(lw, ins):
    name = getattr(ins.arg, "name", str(ins.arg))
    if name == "INTRINSIC_LIST_TO_TUPLE":
        op_list_to_tuple(lw, ins)
        return
    if name != "INTRINSIC_UNARY_POSITIVE":
        lw.refuse(f"intrinsic {name}")
    lw.push(lw.emit("pos", lw.pop()))


@handles("TO_BOOL")
def op_to_bool(lw, ins):
    lw.push(lw.as_bool(lw.pop()))


def index_operands(lw, idx) -> list:
    """`a[i, j]` indexes with the in-place tuple's elements (variadic getitem)."""
    if isinstance(idx, LazyTuple) and idx.var is None and len(idx.elems) >= 2:
        return list(idx.elems)
    if isinstance(idx, Const) and type(idx.value) is tuple and len(idx.value) >= 2:
        return [Const(x) for x in idx.value]
    return [idx]


@handles("BINARY_SUBSCR")
def op_binary_subscr(lw, ins):
    idx, obj = lw.pop(), lw.pop()
    entry = global_dict_entry(obj, idx)
    if entry is not None:
        lw.push(entry if isinstance(entry, Const) else lw.emit("call", *entry))
        return
    lw.push(lw.emit("getitem", obj, *index_operands(lw, idx)))


def global_dict_entry(obj, idx):
    """`CONFIG["act"]`, a constant key of a plain dict read from a global (a constant
    of the lowering, its entries guarded by `lowering.guards`), holding a number, a
    string, None or a function: the entry as a constant when no code of the program
    writes into the dict (`guards.sealed_dict`), else the operands of a call that
    reads the entry when it runs (`read_entry`); None for any other subscript."""
    if not (isinstance(obj, Const) and type(obj.value) is dict and isinstance(idx, Const)):
        return None
    d, key = obj.value, idx.value
    if len(d) > DICT_ENTRIES_MAX or type(key) not in (str, int, bool, float, tuple):
        return None
    try:
        value = d[key]
    except (KeyError, TypeError):
        return None
    data = value is None or type(value) in (int, float, bool, str)
    if not (data or type(value) is types.FunctionType):
        return None
    if sealed_dict(d):
        return Const(value)
    return (Const(read_entry), Const(EntryRef(d, key))) if data else None


@handles("STORE_SUBSCR")
def op_store_subscr(lw, ins):
    idx, obj, val = lw.pop(), lw.pop(), lw.pop()
    into = lw.reader.entry_stores.get(id(ins))
    if into is not None and into[0] is ins:     # a dict only this local refers to
        new = lw.emit("call", Const(with_entry), lw.operand(obj), lw.operand(idx),
                      lw.operand(val))
        lw.store_local(into[1], new)
        return
    lw.emit("setitem", obj, val, *index_operands(lw, idx))


@handles("BUILD_SLICE")
def op_build_slice(lw, ins):
    lw.push(lw.emit("call", Const(slice), *lw.popn(ins.arg)))


@handles("BINARY_SLICE")
def op_binary_slice(lw, ins):
    stop, start, obj = lw.pop(), lw.pop(), lw.pop()
    lw.push(lw.emit("getitem", obj, lw.emit("call", Const(slice), start, stop)))


@handles("STORE_SLICE")
def op_store_slice(lw, ins):
    stop, start, obj, val = lw.pop(), lw.pop(), lw.pop(), lw.pop()
    lw.emit("setitem", obj, val, lw.emit("call", Const(slice), start, stop))


@handles("BUILD_TUPLE")
def op_build_tuple(lw, ins):
    lw.push(LazyTuple(elems=lw.popn(ins.arg)))


@handles("BUILD_LIST")
def op_build_list(lw, ins):
    lw.push(LazyList(elems=lw.popn(ins.arg)))


def static_items(v):
    """The items of a tuple or list display, or of a constant tuple or list, as
    operands (`Starred` for a `*seq` inside a display); None for any other value."""
    if isinstance(v, (LazyTuple, LazyList)) and v.var is None:
        return list(v.elems)
    if isinstance(v, Const) and type(v.value) in (tuple, list):
        return [Const(x) for x in v.value]
    return None


@handles("LIST_EXTEND")
def op_list_extend(lw, ins):
    seq = lw.pop()
    target = lw.stack[-ins.arg]
    if not (isinstance(target, LazyList) and target.var is None):
        lw.refuse("starred expression in a list")
    items = static_items(seq)
    target.elems.extend(items if items is not None else [Starred(lw.operand(seq))])


@handles("LIST_TO_TUPLE")
def op_list_to_tuple(lw, ins):
    v = lw.pop()
    items = static_items(v)
    if items is None:
        lw.push(lw.emit("call", Const(tuple), v))
        return
    lw.push(LazyTuple(elems=items))


@handles("BUILD_MAP")
def op_build_map(lw, ins):
    items = lw.popn(2 * ins.arg)
    lw.push(LazyDict(entries=[(items[k], items[k + 1]) for k in range(0, len(items), 2)]))


@handles("BUILD_CONST_KEY_MAP")
def op_build_const_key_map(lw, ins):
    keys = lw.pop().value
    values = lw.popn(ins.arg)
    lw.push(LazyDict(entries=[(Const(k), v) for k, v in zip(keys, values)]))


@handles("DICT_UPDATE", "DICT_MERGE")
def op_dict_update(lw, ins):
    """`{**d, ...}` (DICT_UPDATE) and the `**d` of a call (DICT_MERGE, whose repeated
    keywords the call's binding refuses, as CPython's TypeError does)."""
    other = lw.pop()
    target = lw.stack[-ins.arg]
    if not (isinstance(target, LazyDict) and target.var is None):
        lw.refuse("dict update")
    if isinstance(other, LazyDict) and other.var is None:
        target.entries.extend(other.entries)
    elif isinstance(other, Const) and type(other.value) is dict:
        target.entries.extend((Const(k), Const(v)) for k, v in other.value.items())
    else:
        target.entries.append(Starred(lw.operand(other)))


@handles("UNPACK_SEQUENCE")
def op_unpack(lw, ins):
    v, n = lw.pop(), ins.arg
    if isinstance(v, (LazyTuple, LazyList)) and v.var is None and len(v.elems) == n:
        lw.stack.extend(reversed(v.elems))
        return
    if isinstance(v, Const) and isinstance(v.value, tuple) and len(v.value) == n:
        lw.stack.extend(Const(x) for x in reversed(v.value))
        return
    u = lw.emit("unpack", v, Const(n))
    items = [lw.emit("getitem", u, Const(k)) for k in range(n)]
    lw.stack.extend(reversed(items))


@handles("UNPACK_EX")
def op_unpack_ex(lw, ins):
    """`a, *b, c = t`: `items = list(t)`, CPython's check of its length, then
    `items[0]`, ..., `list(items[before:-after])`, ..., `items[-1]`: reads of a list,
    which every backend differentiates and compiles as it does written out."""
    before, after = ins.arg & 0xFF, ins.arg >> 8
    items = lw.emit("call", Const(list), lw.operand(lw.pop()))
    n = lw.emit("call", Const(len), items)
    lw.ints.add(n)
    lw.emit("call", Const(check_star_length), n, Const(before), Const(after))
    middle = lw.emit("call", Const(list), lw.emit(
        "getitem", items, lw.emit("call", Const(slice), Const(before),
                                  Const(-after if after else None))))
    parts = [lw.emit("getitem", items, Const(k)) for k in range(before)] + [middle] + \
        [lw.emit("getitem", items, Const(k - after)) for k in range(after)]
    lw.stack.extend(reversed(parts))
