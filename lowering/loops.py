"""`for` loops as integer counter loops (no iterator objects).

GET_ITER turns `range(...)` into a counter from start to stop by step, with
CPython's checks kept: bounds that are not known integers go through
`operator.index` (TypeError for floats), a constant zero step calls `range` itself
(ValueError), a dynamic step goes through `lowering.runtime.range_step` and the loop
test is chosen by its sign at run time.  Anything else is iterated by index:
`len(s)` then `getitem(s, i)`; `enumerate(s[, start])`, `zip(a, b, ...)`,
`enumerate(zip(a, b, ...))` and `reversed(s)` likewise.  Each sequence is read through
`lowering.runtime.loop_items`, so that a dict (or a set, a dict view) is iterated as
CPython iterates it: its keys, in order, never indexed by position.
"""
from __future__ import annotations

import operator
import sys

from ssair.ir import Branch, Const, Var

from .handlers import handles
from .runtime import column, loop_items, range_step, shortest
from .values import EXHAUSTED, ForState, LazyCall, LazyTuple, Starred

PY = sys.version_info[:2]


def as_index(lw, v):
    v = lw.operand(v)
    if lw.is_int(v):
        return v
    if isinstance(v, Const) and isinstance(v.value, bool):
        return Const(int(v.value))
    r = lw.emit("call", Const(operator.index), v)
    lw.ints.add(r)
    return r


def new_counter(lw, start) -> tuple:
    lw.counters += 1
    key = ("$it", lw.counters)
    lw.ssa.write(key, lw.block, start)
    return key


def range_state(lw, args: list) -> ForState:
    if not 1 <= len(args) <= 3:
        lw.refuse(f"range() with {len(args)} arguments")
    idx = [as_index(lw, a) for a in args[:2]]
    start, stop = (Const(0), idx[0]) if len(args) == 1 else idx
    if len(args) < 3:
        return ForState("range", new_counter(lw, start), stop, Const(1))
    step = lw.operand(args[2])
    if isinstance(step, Const) and type(step.value) in (int, bool):
        if step.value == 0:
            lw.emit("call", Const(range), start, stop, step)
        sign = 1 if step.value >= 0 else -1
        return ForState("range", new_counter(lw, start), stop, Const(int(step.value)), sign)
    step = lw.emit("call", Const(range_step), step)
    lw.ints.add(step)
    positive = lw.emit("gt", step, Const(0))
    return ForState("range", new_counter(lw, start), stop, step, None, positive)


def seq_state(lw, kind: str, seqs: list, offset=None) -> ForState:
    seqs = [as_sequence(lw, lw.operand(s)) for s in seqs]
    lens = [lw.emit("call", Const(len), s) for s in seqs]
    n = lens[0] if len(lens) == 1 else lw.emit("call", Const(min), *lens)
    lw.ints.update(lens + [n])
    return ForState(kind, new_counter(lw, Const(0)), n, Const(1), 1, seqs=seqs,
                    offset=offset)


DISPLAYS = frozenset({"tuple", "list"})


def as_sequence(lw, v):
    """`loop_items(v)`: the sequence that `for x in v` reads by position (a dict's
    keys, a set's items, a dict view's entries; anything else itself,
    `lowering.runtime.loop_items`).  A constant that is not a dict or set, and a
    tuple or list display, are sequences already."""
    if isinstance(v, Const) and not isinstance(v.value, (dict, set, frozenset)):
        return v
    made = lw.def_of.get(v) if isinstance(v, Var) else None
    if made is not None and made.op in DISPLAYS:
        return v
    return lw.emit("call", Const(loop_items), v)


def columns_state(lw, args: list) -> ForState:
    """`zip(*t)` (with other sequences around `*t`, maybe): the tuple of sequences,
    counted to `shortest(seqs)`, item i being `column(seqs, i)`."""
    seqs = lw.operand(LazyTuple(elems=args))
    n = lw.emit("call", Const(shortest), seqs)
    lw.ints.add(n)
    return ForState("columns", new_counter(lw, Const(0)), n, Const(1), 1, seqs=[seqs])


def _short_range(v) -> bool:
    """Is `v` a lazy `range(stop)` or `range(start, stop)`?"""
    return isinstance(v, LazyCall) and v.callee is range and v.var is None and \
        len(v.args) in (1, 2)


def reversed_range_state(lw, args: list) -> ForState:
    """`reversed(range(a, b))`: the counter runs from b - 1 down to a."""
    idx = [as_index(lw, a) for a in args]
    start, stop = (Const(0), idx[0]) if len(args) == 1 else idx
    first = lw.emit("sub", stop, Const(1))
    last = lw.emit("sub", start, Const(1))
    lw.ints.update([first, last])
    return ForState("range", new_counter(lw, first), last, Const(-1), -1)


def reversed_state(lw, seq) -> ForState:
    """`reversed(s)` for a sequence (or a dict: its keys): the counter runs from
    len(s) - 1 down to 0."""
    seq = as_sequence(lw, lw.operand(seq))
    n = lw.emit("call", Const(len), seq)
    start = lw.emit("sub", n, Const(1))
    lw.ints.update([n, start])
    return ForState("seq", new_counter(lw, start), Const(-1), Const(-1), -1, seqs=[seq])


@handles("GET_ITER")
def op_get_iter(lw, ins):
    x = lw.pop()
    if not (isinstance(x, LazyCall) and x.var is None):
        lw.push(seq_state(lw, "seq", [x]))
    elif x.callee is range:
        lw.push(range_state(lw, x.args))
    elif x.callee is enumerate and len(x.args) in (1, 2):
        offset = lw.operand(x.args[1]) if len(x.args) == 2 else None
        inner = x.args[0]
        if plain_zip(inner):    # `enumerate(zip(a, b))`: items (i, (a[i], b[i]))
            lw.push(seq_state(lw, "enumerate_zip", inner.args, offset))
        else:
            lw.push(seq_state(lw, "enumerate", x.args[:1], offset))
    elif x.callee is reversed and len(x.args) == 1 and _short_range(x.args[0]):
        lw.push(reversed_range_state(lw, x.args[0].args))
    elif x.callee is reversed and len(x.args) == 1:
        lw.push(reversed_state(lw, x.args[0]))
    elif x.callee is zip and any(isinstance(a, Starred) for a in x.args):
        lw.push(columns_state(lw, x.args))
    elif x.callee is zip and x.args:
        lw.push(seq_state(lw, "zip", x.args))
    else:
        lw.push(seq_state(lw, "seq", [x]))


@handles("FOR_ITER")
def op_for_iter(lw, ins):
    st = lw.stack[-1]
    if not isinstance(st, ForState):
        lw.refuse("iteration over an iterator object")
    bb = lw.reader.blocks[lw.bindex]
    exit_stack = lw.stack[:-1] if PY < (3, 12) else lw.stack + [EXHAUSTED]
    i = lw.ssa.read(st.key, lw.block)
    lw.ints.add(i)
    tests = [(lw.block, "lt" if st.sign == 1 else "gt")]
    if st.sign is None:
        tests = split_on_sign(lw, st)
    lw.pending[bb.target] += len(tests) - 1
    lw.pending[bb.fall] += len(tests) - 1
    for blk, op in tests:
        lw.block = blk
        cond = lw.emit(op, i, st.stop)      # may move on to a protected block
        body = lw.edge(bb.fall, lw.stack)
        lw.block.term = Branch(cond, body, lw.edge(bb.target, exit_stack), lw.line)
    lw.prologues[bb.fall] = lambda: loop_body_entry(lw, st)


def loop_body_entry(lw, st: ForState) -> None:
    """At the head of the loop body: push the loop value and step the counter."""
    i = lw.ssa.read(st.key, lw.block)
    lw.push(next_value(lw, st, i))
    nxt = lw.emit("add", i, st.step)
    lw.ints.add(nxt)
    lw.ssa.write(st.key, lw.block, nxt)


def split_on_sign(lw, st: ForState) -> list:
    """Two loop tests chosen by the sign of a dynamic step."""
    head = lw.block
    up, down = lw.new_block(head), lw.new_block(head)
    head.term = Branch(st.positive, up.id, down.id, lw.line)
    return [(up, "lt"), (down, "gt")]


def next_value(lw, st: ForState, i):
    if st.kind == "range":
        return i
    if st.kind == "columns":
        return lw.emit("call", Const(column), st.seqs[0], i)
    items = [lw.emit("getitem", s, i) for s in st.seqs]
    if st.kind == "seq":
        return items[0]
    if st.kind == "zip":
        return LazyTuple(elems=items)
    k = i if st.offset is None else lw.emit("add", i, st.offset)
    if st.kind == "enumerate_zip":
        return LazyTuple(elems=[k, LazyTuple(elems=items)])
    return LazyTuple(elems=[k] + items)


def plain_zip(x) -> bool:
    """Is `x` a lazy `zip(a, b, ...)` call (no `*t`), iterable by one counter?"""
    return isinstance(x, LazyCall) and x.var is None and x.callee is zip and bool(x.args) \
        and not any(isinstance(a, Starred) for a in x.args)
