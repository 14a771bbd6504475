"""`list(...)` and `range(...)` as values in compiled code.

A tuple or list in compiled code has a length known from its type (`TupleT`, `ListT`),
so `list(x)` of one is known entry by entry at compile time:

  * `list(t)` of a tuple or list: a list of the same entries (natively the same
    struct; a named tuple's entries are its fields);
  * `list(d)` of a dict with string keys: the list of its keys, each a constant of the
    signature (`LiteralT`), so `d[keys[k]]` reads the entry at compile time;
  * `list(range(a, b, c))` whose bounds are known at compile time (constants, or
    `len` of a tuple: `STATIC_CALLS`): the list of those ints;
  * `list(a)` of an array: a built list (`BuiltListT`, `jit.library.built_lists`) of
    its entries along the first axis, as numpy iterates: numbers for a 1-D float64 or
    int64 array, views of the rows for more dimensions; `list(xs)` of a built list, a
    new one of the same entries.

`itertools.product`, `combinations`, `permutations` and `combinations_with_replacement` of
ranges and tuples of numbers known at compile time are the tuple of their items, built as
a constant, which a `for` loop reads by position.

`range(...)` itself is a value: with such bounds a constant of no native data, with
int bounds known only at run time a built list of its ints (`sorted(range(n), key=...)`);
`for i in range(n)` is a loop and needs none of this.  Anything else (a list built by
appending, a generator) is refused with a TypingError naming it.  The derivative of
`list(t)` is `adjoint.rules_math.d_tuple`, plain Python the JIT compiles (for an array:
the cotangents of its entries stacked).
"""
from __future__ import annotations

import builtins
import itertools

from llvmlite import ir as L

from jit.codegen.arrays import element_pointer, itemsize, load_element, shape, sub_array
from jit.codegen.function import I64, lltype
from jit.library.built_lists import new_built_list
from jit.library.registry import REGISTRY
from jit.library.slicing import SliceT
from jit.types import BOOL, FLOAT64, INT64, ArrayT, BuiltListT, DictT, ListT, RecordT, TupleT, Type
from jit.typing.infer import Context, LiteralT
from ssair.ir import Const

FAMILY = "shape and slicing"


def _static_int(ctx: Context, operand) -> object:
    """The int value of `operand` known at compile time, else None."""
    v = ctx.engine.static_value(ctx.typing, operand)
    return v if type(v) is int else None


def _t_range(ctx: Context, s, ts: list) -> Type:
    """`range(...)` with bounds known at compile time: a constant of no native data;
    with int bounds known at run time: a built list of its ints (`_cg_range`)."""
    if s.kwargs or not 1 <= len(ts) <= 3:
        ctx.fail(f"range() of {len(ts)} arguments is not compiled")
    bounds = [_static_int(ctx, a) for a in s.args[1:]]
    if None not in bounds:
        if len(bounds) == 3 and bounds[2] == 0:
            ctx.fail("range() arg 3 must not be zero")
        return LiteralT(range(*bounds))
    if not all(t in (INT64, BOOL) or isinstance(t, LiteralT) and type(t.value) in (int, bool)
               for t in ts):
        ctx.fail(f"range() of {', '.join(map(str, ts))} is not compiled (of ints is)")
    return BuiltListT(INT64)


def _cg_range(fc, s, ts):
    """A range as a value: its constant, or a new built list of its ints (at most
    2**26 of them; a longer one deoptimises, as CPython's range is lazy)."""
    if isinstance(s.type, LiteralT):
        return L.Constant(lltype(s.type), None)
    b = fc.b
    vals = [fc.get(a, INT64) for a in s.args[1:]]
    zero, one = L.Constant(I64, 0), L.Constant(I64, 1)
    if len(vals) == 1:
        start, stop, step = zero, vals[0], one
    else:
        start, stop, step = vals[0], vals[1], vals[2] if len(vals) == 3 else one
    fc.raise_if(b.icmp_signed("==", step, zero), ValueError, "range() arg 3 must not be zero")
    big = L.Constant(I64, 1 << 61)        # |start|, |stop| below it: no overflow below
    for v in (start, stop):
        fc.deopt_if(b.icmp_unsigned(">", b.add(v, big), b.add(big, big)),
                    "range() with a bound past 2**61 as a value", OverflowError)
    up = b.icmp_signed(">", step, zero)
    span = b.select(up, b.sub(stop, start), b.sub(start, stop))
    stride = b.select(up, step, b.neg(step))     # step = -2**63 : any span < stride
    stride = b.select(b.icmp_signed("<", stride, zero), L.Constant(I64, (1 << 63) - 1), stride)
    n = b.select(b.icmp_signed(">", span, zero),
                 b.add(b.sdiv(b.sub(span, one), stride), one), zero)
    fc.deopt_if(b.icmp_signed(">", n, L.Constant(I64, 1 << 26)),
                "range() of more than 2**26 ints as a value", MemoryError)
    return new_built_list(fc, n, INT64, lambda k: b.add(start, b.mul(k, step)))


def _combinatoric_items(s, ts: list, number_of) -> tuple:
    """The items of `itertools.product(...)`, `combinations(xs, r)`, ... when its
    sequences (ranges, tuples) and numbers are known at compile time (`number_of(a)`:
    an operand's int value known then, or None), else None."""
    f = s.args[0].value
    seqs = [tuple(t.value) if isinstance(t, LiteralT) and isinstance(t.value, (range, tuple))
            else tuple(a.value) if isinstance(a, Const) and isinstance(a.value, (range, tuple))
            else None for a, t in zip(s.args[1:], ts)]
    if f is itertools.product:
        args, kw = seqs, {k: number_of(v) for k, v in s.kwargs.items()}
        if not args or set(kw) - {"repeat"}:
            return None
    else:
        args, kw = [seqs[0] if seqs else None, *[number_of(a) for a in s.args[2:]]], {}
        if s.kwargs or len(args) > 2:
            return None
    if None in args or None in kw.values():
        return None
    return tuple(f(*args, **kw))


def _t_combinatoric(ctx: Context, s, ts: list) -> Type:
    """`itertools.product(...)`, `combinations(xs, r)`, `permutations(xs[, r])` and
    `combinations_with_replacement` of ranges and tuples of numbers known at compile
    time: the tuple of their items, built as a constant (`_cg_items`)."""
    name = s.args[0].value.__name__
    items = _combinatoric_items(s, ts, lambda a: _static_int(ctx, a))
    if items is None or not all(type(x) in (int, float) for item in items for x in item):
        ctx.fail(f"itertools.{name} is compiled over ranges and tuples of numbers known at "
                 "compile time")
    if len(items) > 4096:
        ctx.fail(f"itertools.{name} of more than 4096 items is not compiled")
    return TupleT(tuple(TupleT(tuple(INT64 if type(x) is int else FLOAT64 for x in item))
                        for item in items))


def _cg_items(fc, s, ts):
    items = _combinatoric_items(s, ts, lambda a: fc.typing.static.get(a, getattr(a, "value",
                                                                                 None)))
    return L.Constant(lltype(s.type), [L.Constant(lltype(t), list(item))
                                       for t, item in zip(s.type.elems, items)])


def _entries(t: Type) -> tuple:
    """The entry types `list(x)` of a value of type `t` has, or None if not compiled."""
    if isinstance(t, LiteralT) and type(t.value) is range:
        return (INT64,) * len(t.value)
    if isinstance(t, DictT):
        return tuple(LiteralT(k) for k in t.keys)
    if isinstance(t, RecordT) and not t.is_tuple or isinstance(t, (BuiltListT, SliceT)):
        return None
    if isinstance(t, TupleT):
        return t.elems
    return None


def _row_type(t: ArrayT) -> Type:
    """The type of an entry of `list(a)` for an array `a`, or None if not compiled."""
    if t.ndim >= 2:
        return ArrayT(t.dtype, t.ndim - 1)
    return t.dtype if t.ndim == 1 and t.dtype in (FLOAT64, INT64) else None


def _t_list(ctx: Context, s, ts: list) -> Type:
    if not ts:
        ctx.fail("list() with no argument is compiled as [] (a list display)")
    if len(ts) == 1 and not s.kwargs and isinstance(ts[0], BuiltListT):
        return ts[0]         # a new list of the same entries
    if len(ts) == 1 and not s.kwargs and isinstance(ts[0], ArrayT):
        row = _row_type(ts[0])
        if row is None:
            ctx.fail(f"list() of a {ts[0]} is not compiled (of a float64 or int64 array, "
                     "or of an array of two or more dimensions, is)")
        return BuiltListT(row)
    elems = _entries(ts[0]) if len(ts) == 1 and not s.kwargs else None
    if elems is None:
        ctx.fail(f"list() of a {ts[0]} is not compiled (of a tuple, a list, a dict's keys, "
                 "an array or a range known at compile time is)")
    return ListT(tuple(elems))


def _cg_rows(fc, arr, t: ArrayT, row: Type) -> L.Value:
    """`list(a)`: a new built list of a[0], a[1], ... (numbers, or views of the rows)."""
    def entry(k):
        if isinstance(row, ArrayT):
            return sub_array(fc, arr, element_pointer(fc, arr, [k], True), 1, t.ndim)
        return load_element(fc, element_pointer(fc, arr, [k], True, itemsize(t.dtype)), t.dtype)
    return new_built_list(fc, shape(fc, arr, 0), row, entry)


def _cg_copy(fc, acc, t: BuiltListT) -> L.Value:
    """`list(xs)` of a built list: a new built list of its entries."""
    et = lltype(t.elem)
    old = fc.b.extract_value(acc, 0)
    return new_built_list(fc, fc.b.extract_value(acc, 1), t.elem, lambda k: fc.b.load(
        fc.b.gep(old, [k], source_etype=et), typ=et))


def _cg_list(fc, s, ts):
    t = ts[0]
    if isinstance(t, BuiltListT):
        return _cg_copy(fc, fc.get(s.args[1]), t)
    if isinstance(t, ArrayT):
        return _cg_rows(fc, fc.get(s.args[1]), t, s.type.elem)
    out = L.Constant(lltype(s.type), L.Undefined)
    if isinstance(t, LiteralT):              # a range: its ints
        for i, v in enumerate(t.value):
            out = fc.b.insert_value(out, L.Constant(I64, v), i)
        return out
    if isinstance(t, DictT):                 # its keys: constants, no native data
        return out
    src = fc.get(s.args[1])
    for i, e in enumerate(t.elems):
        if isinstance(e, LiteralT):
            continue
        out = fc.b.insert_value(out, fc.convert(fc.b.extract_value(src, i), e, s.type.elems[i]), i)
    return out


REGISTRY.declare(itertools.product, itertools.combinations, itertools.permutations,
                 itertools.combinations_with_replacement, family=FAMILY,
                 pattern="ranges and tuples of numbers known at compile time (a constant)",
                 types=_t_combinatoric, lower=_cg_items)
REGISTRY.declare(builtins.range, family=FAMILY, pattern="int bounds (known at compile time: a "
                 "constant; at run time: a built list of ints)", types=_t_range, lower=_cg_range)
REGISTRY.declare(builtins.list, family=FAMILY,
                 pattern="a tuple, list, built list, array, dict (its keys) or constant range",
                 types=_t_list,
                 lower=_cg_list, numpy_too=True)
