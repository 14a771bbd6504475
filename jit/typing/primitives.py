"""Type rules of the primitives, keyed by primitive name (`jit.typing.infer.RULES`):
arithmetic with Python's int/float promotion (int + float -> float, int / int ->
float, int // int -> int, int ** negative constant -> float), comparisons, logic,
tuples and array indexing.  Calls are typed in jit.typing.infer (user functions) and
jit.library.registry (library callables).
"""
from __future__ import annotations

import inspect
import types as pytypes

from ssair.ir import Const, Stmt, Var

from jit.typing.infer import Context, LiteralT, rule
from jit.typing.unroll import UnrollNeeded
from jit.typing.local_arrays import made_here
from jit.types import (BOOL, FLOAT32, FLOAT64, INT32, INT64, NONE, ArrayT, DictT, FunctionT,
                       ListLiteral, ListT, PythonCallable, RecordT, Scalar, StrT, TupleT, Type,
                       is_float, is_int_like, is_numeric, known_string, promote, typeof)

# ---------------------------------------------------------------------------
# Arithmetic, comparisons, logic.

def _numeric(ts: list) -> bool:
    return all(is_numeric(x) for x in ts)


def _arith_result(ts: list) -> Scalar:
    """numpy's and Python's result type (`jit.types.promote`: a Python number
    takes a float32 or int32 operand's type)."""
    out = promote(ts[0], ts[1])
    return INT64 if out == BOOL else out


@rule("add", "sub", "mul")
def _t_arith(ctx: Context, s: Stmt, ts: list) -> Type:
    if _numeric(ts):
        return _arith_result(ts)
    if s.op == "add" and all(isinstance(x, TupleT) for x in ts):
        return TupleT(ts[0].elems + ts[1].elems)
    ctx.fail(f"unsupported operand types {ts[0]} and {ts[1]}")


@rule("truediv")
def _t_truediv(ctx: Context, s: Stmt, ts: list) -> Type:
    if not _numeric(ts):
        ctx.fail(f"unsupported operand types {ts[0]} and {ts[1]}")
    out = promote(ts[0], ts[1])
    return out if out == FLOAT32 else FLOAT64


@rule("floordiv", "mod")
def _t_floordiv(ctx: Context, s: Stmt, ts: list) -> Type:
    if not _numeric(ts):
        ctx.fail(f"unsupported operand types {ts[0]} and {ts[1]}")
    return _arith_result(ts)


@rule("pow")
def _t_pow(ctx: Context, s: Stmt, ts: list) -> Type:
    if not _numeric(ts):
        ctx.fail(f"unsupported operand types {ts[0]} and {ts[1]}")
    if FLOAT32 in ts or INT32 in ts:
        return _arith_result(ts)
    if FLOAT64 in ts:
        return FLOAT64
    e = ctx.const(s.args[1])
    if isinstance(e, int) and e < 0:
        return FLOAT64
    return INT64  # a negative runtime exponent falls back to the interpreter


@rule("lshift", "rshift", "bitand", "bitor", "bitxor")
def _t_bits(ctx: Context, s: Stmt, ts: list) -> Type:
    if not all(is_int_like(x) for x in ts):
        ctx.fail(f"unsupported operand types {ts[0]} and {ts[1]}")
    if ts[0] == BOOL and ts[1] == BOOL and s.op in ("bitand", "bitor", "bitxor"):
        return BOOL
    return INT64


@rule("neg", "pos")
def _t_neg(ctx: Context, s: Stmt, ts: list) -> Type:
    if not is_numeric(ts[0]):
        ctx.fail(f"bad operand type {ts[0]}")
    return INT64 if ts[0] == BOOL else ts[0]


@rule("invert")
def _t_invert(ctx: Context, s: Stmt, ts: list) -> Type:
    if not is_int_like(ts[0]):
        ctx.fail(f"bad operand type {ts[0]}")
    return INT64


@rule("not", "truth")
def _t_truth(ctx: Context, s: Stmt, ts: list) -> Type:
    if is_numeric(ts[0]) or ts[0] == NONE or isinstance(ts[0], TupleT):
        return BOOL
    if isinstance(ts[0], LiteralT) and isinstance(ts[0].value, bool):
        return BOOL      # a flag the caller passed as a constant (see _note_static)
    ctx.fail(f"truth value of {ts[0]} is not supported")


def literal_numbers(ts: list) -> list:
    """`ts` with a constant number the caller passed (`LiteralT(1)`: an `axis=` option)
    as the type of its value, so it compares with a run-time number."""
    return [INT64 if isinstance(t, LiteralT) and type(t.value) is int else
            FLOAT64 if isinstance(t, LiteralT) and type(t.value) is float else t for t in ts]


@rule("lt", "le", "gt", "ge")
def _t_order(ctx: Context, s: Stmt, ts: list) -> Type:
    ts = literal_numbers(ts)
    if not _numeric(ts):
        ctx.fail(f"cannot order {ts[0]} and {ts[1]}")
    return BOOL


@rule("eq", "ne")
def _t_eq(ctx: Context, s: Stmt, ts: list) -> Type:
    ts = literal_numbers(ts)
    if _numeric(ts) or NONE in ts and all(isinstance(x, (Scalar, TupleT)) for x in ts):
        return BOOL
    if all(number_tuple(t) for t in ts):      # `x.shape == (3,)`: entry by entry
        return BOOL
    ctx.fail(f"cannot compare {ts[0]} and {ts[1]}")


def number_tuple(t: Type) -> bool:
    """A tuple or list of known length whose entries are numbers (or such tuples)."""
    from jit.types import BuiltListT, DictT, RecordT
    if not isinstance(t, TupleT) or isinstance(t, (BuiltListT, DictT, RecordT)):
        return False
    return all(is_numeric(e) or number_tuple(e) for e in literal_numbers(list(t.elems)))


@rule("is", "isnot")
def _t_is(ctx: Context, s: Stmt, ts: list) -> Type:
    if NONE in ts or ts[0] == BOOL and ts[1] == BOOL:
        return BOOL
    ctx.fail(f"'is' between {ts[0]} and {ts[1]} is only supported against None or bools")


@rule("in", "notin")
def _t_in(ctx: Context, s: Stmt, ts: list) -> Type:
    if is_numeric(ts[0]) and isinstance(ts[1], TupleT) and _numeric(list(ts[1].elems)):
        return BOOL
    ctx.fail(f"'in' is supported for a number in a tuple of numbers, not {ts[1]}")


@rule("copy")
def _t_copy(ctx: Context, s: Stmt, ts: list) -> Type:
    return ts[0]


# ---------------------------------------------------------------------------
# Tuples and arrays.

def _option_literal(v) -> bool:
    """A bool, an int or a tuple of ints (the literals `infer.option_type` and
    `infer.call_argument_type` specialise a callee on)."""
    return type(v) in (bool, int) or type(v) is tuple and all(type(x) is int for x in v)


@rule("tuple")
def _t_tuple(ctx: Context, s: Stmt, ts: list) -> Type:
    for x in ts:       # a list literal, or a constant option a function was specialised
        # on (`keepdims=False`, `axis=0`), is carried by its type (the forward's saved values)
        if isinstance(x, LiteralT) and not isinstance(x.value, ListLiteral) \
                and not _option_literal(x.value) and type(x.value) is not str:
            ctx.fail(f"tuple element {x} is not supported")
    return TupleT(tuple(StrT(frozenset((x.value,))) if isinstance(x, LiteralT) and
                        type(x.value) is str else x for x in ts))


@rule("dict")
def _t_dict(ctx: Context, s: Stmt, ts: list) -> Type:
    """A dict display with constant string keys: natively a tuple of its values in
    the order the keys first appear (a repeated key keeps its last value)."""
    if not all(isinstance(a, Const) and type(a.value) is str for a in s.args[0::2]):
        ctx.fail("a dict display is compiled with constant string keys only")
    last = dict(zip((a.value for a in s.args[0::2]), ts[1::2]))
    for t in last.values():
        if isinstance(t, LiteralT) and not isinstance(t.value, ListLiteral):
            ctx.fail(f"dict value {t} is not supported")
    return DictT(tuple(last.values()), keys=tuple(last))


def _list_literal(t: Type) -> bool:
    return isinstance(t, LiteralT) and isinstance(t.value, ListLiteral)


@rule("list")
def _t_list(ctx: Context, s: Stmt, ts: list) -> Type:
    """A list display: of constants, a literal; else a list of its elements' types,
    natively a tuple (`ListT`: read, iterated and passed, not grown)."""
    if all(ctx.is_const(a) or _list_literal(t) for a, t in zip(s.args, ts)):
        return LiteralT(ListLiteral(ctx.const(a) for a in s.args))
    for x in ts:
        if isinstance(x, LiteralT):
            ctx.fail(f"list element {x} is not supported")
    return ListT(tuple(ts))


@rule("unpack")
def _t_unpack(ctx: Context, s: Stmt, ts: list) -> Type:
    n = ctx.const(s.args[1])
    refuse_object_as_sequence(ctx, ts[0], "iterable")
    if isinstance(ts[0], TupleT) and len(ts[0].elems) == n:
        return ts[0]
    if isinstance(ts[0], TupleT):
        ctx.fail(f"cannot unpack {ts[0]} into {n} values")
    if isinstance(ts[0], ArrayT):
        inner = ts[0].dtype if ts[0].ndim == 1 else ArrayT(ts[0].dtype, ts[0].ndim - 1)
        return TupleT((inner,) * n)
    ctx.fail(f"cannot unpack {ts[0]}")


_NO_KEY = object()


def refuse_object_as_sequence(ctx: Context, t: Type, what: str) -> None:
    """An object other than a named tuple (natively a tuple too) is not a sequence:
    CPython's TypeError, at compile time."""
    if isinstance(t, RecordT) and not t.is_tuple:
        ctx.fail(f"'{t.cls.__name__}' object is not {what}")


def index_types(ctx: Context, ts: list) -> list:
    """Flatten `a[i, j]` given as one tuple operand or as several operands."""
    if len(ts) == 1 and isinstance(ts[0], TupleT):
        return list(ts[0].elems)
    return list(ts)


@rule("getitem")
def _t_getitem(ctx: Context, s: Stmt, ts: list) -> Type:
    obj, idx = ts[0], index_types(ctx, ts[1:])
    refuse_object_as_sequence(ctx, obj, "subscriptable")
    if isinstance(obj, TupleT):
        return _tuple_item(ctx, s, obj, idx)
    seq = constant_sequence_type(obj)
    if seq is not None:         # `data = [1, 2, 3]; for d in data:` (a variable index)
        return _tuple_item(ctx, s, seq, idx)
    if not isinstance(obj, ArrayT):
        ctx.fail(f"indexing {obj} is not supported")
    if not all(is_int_like(i) for i in idx):
        ctx.fail(f"array index of type {', '.join(map(str, idx))} is not supported "
                 "(only integer indices)")
    if len(idx) > obj.ndim:
        ctx.fail(f"too many indices for {obj}")
    if len(idx) == obj.ndim:
        return obj.dtype
    return ArrayT(obj.dtype, obj.ndim - len(idx))


def constant_sequence_type(t: Type):
    """The tuple type of a list display of numbers held as a constant (`LiteralT` of a
    `ListLiteral`), read at a variable index; None for anything else."""
    if not (isinstance(t, LiteralT) and isinstance(t.value, ListLiteral)):
        return None
    if not all(type(v) in (int, float, bool) for v in t.value):
        return None
    return typeof(tuple(t.value))


def _tuple_item(ctx: Context, s: Stmt, obj: TupleT, idx: list) -> Type:
    if isinstance(obj, DictT):
        key = ctx.const(s.args[1], _NO_KEY) if len(s.args) == 2 else _NO_KEY
        if key is _NO_KEY and len(idx) == 1:        # a string known to be one constant
            key = known_string(idx[0], _NO_KEY)
        if key is _NO_KEY:
            ctx.fail(f"{obj}[a computed key] is not compiled (a constant key of the dict)")
        if obj.index(key) is None:
            ctx.fail(f"{key!r} is not among the keys {obj.keys!r} of the dict")
        return obj.elems[obj.index(key)]
    if len(idx) != 1 or not (is_int_like(idx[0]) or type(ctx.const(s.args[1])) is int):
        ctx.fail(f"tuple index must be one integer, got {idx}")
    k = ctx.const(s.args[1])
    if isinstance(k, int):
        n = len(obj.elems)
        if not -n <= k < n:
            ctx.fail(f"tuple index {k} out of range for {obj}")
        return obj.elems[k]
    if obj.elems and all(e == obj.elems[0] for e in obj.elems):
        return obj.elems[0]     # homogeneous: numbers, arrays, tuples of arrays (layers)
    why = f"a variable index into the heterogeneous {obj} is not supported"
    if isinstance(s.args[1], Var):     # the counter of `for x in t`: unroll that loop
        raise UnrollNeeded(why, s.args[1], len(obj.elems))
    ctx.fail(why)


@rule("setitem")
def _t_setitem(ctx: Context, s: Stmt, ts: list) -> Type:
    obj, val, idx = ts[0], ts[1], index_types(ctx, ts[2:])
    if not isinstance(obj, ArrayT):
        ctx.fail(f"item assignment into {obj} is not supported")
    if len(idx) != obj.ndim or not all(is_int_like(i) for i in idx):
        ctx.fail(f"assignment to {obj} needs {obj.ndim} integer indices")
    if not is_numeric(val) or is_float(val) and not is_float(obj.dtype) and obj.dtype != BOOL:
        ctx.fail(f"cannot store {val} into {obj}")
    if not made_here(ctx.typing.ir, s.args[0]):    # (a write the caller sees)
        ctx.typing.writes = True
    return NONE


ARRAY_ATTRS = {
    "shape": lambda a: TupleT((INT64,) * a.ndim),
    "ndim": lambda a: INT64,
    "size": lambda a: INT64,
    "strides": lambda a: TupleT((INT64,) * a.ndim),
}


@rule("getattr")
def _t_getattr(ctx: Context, s: Stmt, ts: list) -> Type:
    name = ctx.const(s.args[1])
    if isinstance(ts[0], ArrayT) and name in ARRAY_ATTRS:
        return ARRAY_ATTRS[name](ts[0])
    obj = s.args[0].value if isinstance(s.args[0], Const) else None
    if obj is not None and isinstance(name, str) and not isinstance(obj, pytypes.ModuleType):
        found = inspect.getattr_static(obj, name, None)     # (no property runs here)
        if callable(found) or isinstance(found, (staticmethod, classmethod)):
            # a module-level object's method, called for its effect (`LOG.append(v)`)
            return FunctionT(_method_of(obj, name))
    ctx.fail(f"attribute {name!r} of {ts[0]} is not supported")



_METHODS: dict = {}    # (id(obj), name) -> (obj, its method): one type per method


def _method_of(obj, name: str) -> PythonCallable:
    key = (id(obj), name)
    hit = _METHODS.get(key)
    if hit is None or hit[0] is not obj:
        hit = _METHODS[key] = (obj, PythonCallable(getattr(obj, name)))
    return hit[1]


# ---------------------------------------------------------------------------
# In-place operators (`x += y` lowers to `iadd`): on numbers and tuples, which have no
# in-place methods, Python computes the plain operator; arrays would be updated in
# place, which the JIT does not compile.

def plain_inplace(s: Stmt) -> Stmt:
    """`iOP(x, y)` as the statement `OP(x, y)` (same value, operands and type)."""
    from ssair.primitives import INPLACE
    return Stmt(s.var, INPLACE[s.op], s.args, s.kwargs, s.line, s.name, s.type)


def _t_inplace(ctx: Context, s: Stmt, ts: list) -> Type:
    from jit.typing.infer import RULES
    if not (is_numeric(ts[0]) or isinstance(ts[0], TupleT)):
        from ssair.primitives import primitive
        ctx.fail(f"in-place operator {primitive(s.op).symbol!r} on {ts[0]} is not supported "
                 "(the JIT compiles in-place operators on numbers only)")
    return RULES[plain_inplace(s).op](ctx, plain_inplace(s), ts)


def _register_inplace() -> None:
    from ssair.primitives import INPLACE
    rule(*INPLACE)(_t_inplace)


_register_inplace()
