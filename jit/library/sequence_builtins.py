"""Python's builtins over sequences, compiled: `sum` of a tuple or list, `min` / `max`
of a 1-D array or of a list built by appending, `any` / `all` of a 1-D array, a
tuple or a list.  Each follows CPython's order of operations, so the result is
CPython's bit for bit:

  * `sum(t)` of a tuple or list of known length is `((0 + t[0]) + t[1]) + ...`
    (`start` in place of 0 when given): the statement is rewritten into those
    additions before typing (`jit.typing.spread.RewriteStatement`), so that they
    differentiate as additions do and each entry gets its own cotangent, whatever it
    holds (numbers, arrays);
  * `sum(xs)` of a built list of numbers or of float arrays of one rank (a generator
    expression: `sum(c * x ** i for i, c in enumerate(cs))`) adds in the same order;
    an empty one is the int 0, which compiled code does not return: the call
    deoptimises;
  * `min` / `max` keep the first extreme entry (an entry replaces the best so far
    only when `<` / `>` holds, as CPython compares), and an empty sequence raises
    CPython's ValueError; their derivative sends dy to that entry;
  * `any` / `all` test each entry's truth in order and stop at the first that
    decides;
  * `sorted` of float64 or int64 entries (by a `key=` giving numbers, `reverse=`)
    places each by counting (the order CPython's stable
    sort gives; a NaN, which CPython orders by the comparisons
    its merge happens to make, deoptimises the call), differentiated by
    `adjoint.rules_math.d_sorted` and `adjoint.rules_tangent.j_sorted`, whose
    `sort_order` (the permutation) is compiled the same way.
"""
from __future__ import annotations

import builtins
import math

import numpy as np
from llvmlite import ir as L

from adjoint.tape import unbcast

from jit.library import math_builtins  # noqa: F401  (declares min and max)
from jit.library.builtin_sum import deopt_if_empty
from jit.library.python_impls import impl_call, mark
from jit.library.registry import REGISTRY, called
from jit.types import (BOOL, FLOAT32, FLOAT64, INT32, INT64, NONE, ArrayT, BuiltListT, TupleT,
                       Type, TypingError)
from jit.typing.infer import Context, LiteralT
from jit.typing.spread import RewriteStatement
from ssair.ir import Const, Stmt

FAMILY = "math and builtins"
NUMBERS = (FLOAT64, INT64, BOOL)
ARRAY_DTYPES = {FLOAT64: (FLOAT64, FLOAT32), INT64: (INT64, INT32), BOOL: (BOOL,)}


# -- sum of a tuple or list of known length: the additions it makes ----------------------------
def is_fixed_sequence(ctx: Context, s, ts: list) -> bool:
    """Pattern: a tuple or list (a `TupleT`: its length is known) as the first argument."""
    return bool(ts) and isinstance(ts[0], TupleT) and not isinstance(ts[0], BuiltListT)


def _start(s) -> object:
    if len(s.args) > 2:
        return s.args[2]
    return dict(s.kwargs).get("start", Const(0))


def t_sum_fixed(ctx: Context, s, ts: list) -> Type:
    """Ask for `sum(t[, start])` to be rewritten as its additions, then retyped."""
    if len(s.args) > 3 or set(dict(s.kwargs)) - {"start"}:
        ctx.fail("sum() takes a sequence and a start value")
    n = len(ts[0].elems)
    if n == 0 and _start(s) != Const(0):
        ctx.fail("sum() of an empty tuple with a start value is not compiled")
    raise RewriteStatement("a call of sum", s.var, _sum_additions(n))


def t_prod_fixed(ctx: Context, s, ts: list) -> Type:
    """Ask for `math.prod(t[, start=s])` to be rewritten as its products, then retyped."""
    if len(s.args) > 2 or set(dict(s.kwargs)) - {"start"}:
        ctx.fail("math.prod() takes a sequence and a start value")
    raise RewriteStatement("a call of math.prod", s.var, _prod_products(len(ts[0].elems)))


def _prod_products(n: int):
    """`math.prod(t, start=s)`: `((s * t[0]) * t[1]) * ...`, CPython's order."""
    def build(ir, s) -> list:
        total = dict(s.kwargs).get("start", Const(1))
        made = []
        for j in range(n):
            item = Stmt(ir.new_var(), "getitem", [s.args[1], Const(j)], {}, s.line)
            product = Stmt(ir.new_var(), "mul", [total, item.var], {}, s.line)
            made += [item, product]
            total = product.var
        if not made:
            return [Stmt(s.var, "copy", [total], {}, s.line, s.name)]
        made[-1] = Stmt(s.var, "mul", made[-1].args, {}, s.line, s.name)
        return made
    return build


def _sum_additions(n: int):
    def build(ir, s) -> list:
        if n == 0:
            return [Stmt(s.var, "copy", [Const(0)], {}, s.line, s.name)]
        made, total = [], _start(s)
        for j in range(n):
            item = Stmt(ir.new_var(), "getitem", [s.args[1], Const(j)], {}, s.line)
            total_stmt = Stmt(ir.new_var(), "add", [total, item.var], {}, s.line)
            made += [item, total_stmt]
            total = total_stmt.var
        made[-1] = Stmt(s.var, "add", made[-1].args, {}, s.line, s.name)
        return made
    return build


# -- over a built list or a 1-D array: plain-Python implementations -------------------------------
def _empty_message(extreme) -> str:
    """This Python's message for `min([])` / `max([])` (it changed in 3.12)."""
    try:
        extreme([])
    except ValueError as exc:
        return str(exc)
    return ""


MIN_EMPTY, MAX_EMPTY = _empty_message(builtins.min), _empty_message(builtins.max)


def _sum_built(xs):
    n = len(xs)
    deopt_if_empty(n)
    total = 0 + xs[0]
    for i in range(1, n):
        total = total + xs[i]
    return total


def _prod_built(xs):
    """`math.prod(xs)` of a built list of numbers (an empty one, the int 1, deoptimises)."""
    n = len(xs)
    deopt_if_empty(n)
    total = 1 * xs[0]
    for i in range(1, n):
        total = total * xs[i]
    return total


def _d_prod_built(dy, xs):
    """adjoint.rules_math.d_prod of a built list of float64: dy times the product of
    the entries before each one and of those after it."""
    n = len(xs)
    tail = [1.0]                  # tail[j]: the product of the last j entries
    for k in range(n - 1, -1, -1):
        tail.append(tail[n - 1 - k] * xs[k])
    out = []
    before = 1.0
    for k in range(n):
        out.append(dy * before * tail[n - 1 - k])
        before = before * xs[k]
    return out, dy * tail[n]


def _d_sum_built(dy, xs):
    """adjoint.rules_math.d_sum of a built list of numbers: dy reaches every entry."""
    out = [dy]
    for i in range(1, len(xs)):
        out.append(dy)
    return out


def _d_sum_built_arrays(dy, xs):
    """d_sum of a built list of float arrays: dy, summed down to each entry's shape
    (entries of one rank may broadcast against each other)."""
    out = [unbcast(dy, xs[0])]
    for i in range(1, len(xs)):
        out.append(unbcast(dy, xs[i]))
    return out


def _min_items(xs):
    n = len(xs)
    if n == 0:
        raise ValueError(MIN_EMPTY)
    best = xs[0]
    for i in range(1, n):
        v = xs[i]
        if v < best:
            best = v
    return best


def _max_items(xs):
    n = len(xs)
    if n == 0:
        raise ValueError(MAX_EMPTY)
    best = xs[0]
    for i in range(1, n):
        v = xs[i]
        if v > best:
            best = v
    return best


def _keyed_extreme(xs, key, least):
    """`min(xs, key=key)` (`least`) / `max(xs, key=key)`: the first entry whose key is
    least / greatest."""
    n = len(xs)
    if n == 0:
        if least:
            raise ValueError(MIN_EMPTY)
        raise ValueError(MAX_EMPTY)
    best, best_key = xs[0], key(xs[0])
    for i in range(1, n):
        k = key(xs[i])
        if (k < best_key) if least else (k > best_key):
            best, best_key = xs[i], k
    return best


def _first_at(xs, y):
    """The index of the first entry equal to y (the one min/max returned)."""
    for i in range(len(xs)):
        if xs[i] == y:
            return i
    return 0


def _d_extreme_array(dy, y, xs):
    g = np.zeros_like(xs)
    g[_first_at(xs, y)] = dy
    return g


def _d_extreme_built(dy, y, xs):
    k = _first_at(xs, y)
    out = [dy if k == 0 else 0.0]
    for i in range(1, len(xs)):
        out.append(dy if k == i else 0.0)
    return out


def deopt_if_nan(x: float) -> None:
    """Leave compiled code for the interpreter when `x` is a NaN (CPython's sort
    orders NaNs by the comparisons its merge happens to make)."""


def _t_deopt_if_nan(ctx: Context, s, ts: list) -> Type:
    if len(ts) != 1 or ts[0] not in (FLOAT64, INT64, BOOL):
        ctx.fail(f"bad operand {ts} of a runtime check")
    return NONE


def _cg_deopt_if_nan(fc, s, ts):
    if ts[0] != FLOAT64:                 # an int is never a NaN
        return L.Constant(L.IntType(8), 0)
    x = fc.get(s.args[1], FLOAT64)
    fc.deopt_if(fc.b.fcmp_unordered("uno", x, x), "sorted() of a sequence holding a NaN",
                ValueError)
    return L.Constant(L.IntType(8), 0)


def _sort_order_items(xs, reverse=False):
    """`adjoint.rules_math.sort_order` compiled: the positions of xs's entries in the
    order CPython's stable sort gives (`reverse` keeps equal entries in their order,
    as CPython's does).  Each entry's place is the count of entries before it in that
    order: O(n^2) comparisons and no writes into arrays, so that a NaN's
    deoptimisation reruns the call."""
    n = len(xs)
    places = []
    for i in range(n):
        v = xs[i]
        deopt_if_nan(v)
        before = 0
        for j in range(n):
            w = xs[j]
            if (w > v if reverse else w < v) or (j < i and w == v):
                before += 1
        places.append(before)
    out = []
    for k in range(n):
        for i in range(n):
            if places[i] == k:
                out.append(i)
    return out


def _sorted_items(xs, reverse):
    """`sorted(xs, reverse=reverse)`: the entries in the order `_sort_order_items` finds."""
    out = []
    for i in _sort_order_items(xs, reverse):
        out.append(xs[i])
    return out


def _key_order(xs, reverse, key):
    """`sort_order(xs, reverse, key)`: the positions in the order of the entries' keys."""
    keys = []
    for i in range(len(xs)):
        keys.append(key(xs[i]))
    return _sort_order_items(keys, reverse)


def _sorted_keyed(xs, key, reverse):
    """`sorted(xs, key=key, reverse=reverse)`."""
    out = []
    for i in _key_order(xs, reverse, key):
        out.append(xs[i])
    return out


def _any_items(xs):
    for i in range(len(xs)):
        if xs[i]:
            return True
    return False


def _all_items(xs):
    for i in range(len(xs)):
        if not xs[i]:
            return False
    return True


mark(_keyed_extreme, _sort_order_items, _sorted_items, _key_order, _sorted_keyed,
     _sum_built,
     _prod_built, _d_prod_built, _d_sum_built, _min_items, _max_items,
     _first_at, _d_extreme_array, _d_extreme_built, _any_items, _all_items)


def _items_of(t: Type, elems: tuple = (FLOAT64, INT64)) -> bool:
    """A 1-D array or a built list whose entries are of the types `elems` (an array's
    dtype may be the narrow one of the same kind: float32 for float64, int32 for int64)."""
    if isinstance(t, ArrayT):
        return t.ndim == 1 and any(t.dtype in ARRAY_DTYPES[e] for e in elems)
    return isinstance(t, BuiltListT) and t.elem in elems


def is_number_list(ctx: Context, s, ts: list) -> bool:
    """Pattern: one built list of numbers."""
    return len(ts) == 1 and not s.kwargs and isinstance(ts[0], BuiltListT) \
        and ts[0].elem in (FLOAT64, INT64)


def is_array_list(ctx: Context, s, ts: list) -> bool:
    """Pattern: one built list of float64 arrays (`sum(w * x for w, x in ...)`)."""
    return len(ts) == 1 and not s.kwargs and isinstance(ts[0], BuiltListT) \
        and _float_array(ts[0].elem)


def is_items(ctx: Context, s, ts: list) -> bool:
    """Pattern: one 1-D array of numbers or built list of numbers."""
    return len(ts) == 1 and not s.kwargs and _items_of(ts[0])


def is_truth_items(ctx: Context, s, ts: list) -> bool:
    """Pattern: one 1-D array, built list, tuple or list."""
    return len(ts) == 1 and not s.kwargs and (
        _items_of(ts[0], NUMBERS) or isinstance(ts[0], TupleT)
        and all(e in NUMBERS for e in ts[0].elems))


def is_float_items(ctx: Context, s, ts: list) -> bool:
    """Pattern: one float64 1-D array, built list or tuple of float64."""
    if len(ts) != 1 or s.kwargs:
        return False
    t = ts[0]
    if isinstance(t, ArrayT):        # (a list of float32 entries is not compiled)
        return t.ndim == 1 and t.dtype == FLOAT64
    return _items_of(t, (FLOAT64,)) or isinstance(t, TupleT) and not isinstance(t, BuiltListT) \
        and all(e == FLOAT64 for e in t.elems)


def is_number_items(ctx: Context, s, ts: list) -> bool:
    """Pattern: one 1-D array, built list or tuple of float64 entries or of int64 ones."""
    if len(ts) != 1 or s.kwargs:
        return False
    t = ts[0]
    if isinstance(t, TupleT) and not isinstance(t, BuiltListT):
        return len(set(t.elems)) == 1 and t.elems[0] in (FLOAT64, INT64)
    return is_float_items(ctx, s, ts) or _items_of(t, (INT64,))


def is_float_order(ctx: Context, s, ts: list) -> bool:
    """Pattern: `sort_order(xs)` or `sort_order(xs, reverse)` of float64 entries."""
    return 1 <= len(ts) <= 2 and not s.kwargs and is_float_items(ctx, s, ts[:1]) \
        and all(t in (BOOL, INT64) or isinstance(t, LiteralT) and type(t.value) in (bool, int)
                for t in ts[1:])


def is_keyed_items(ctx: Context, s, ts: list) -> bool:
    """Pattern: `sorted(xs, key=..., reverse=...)` (one keyword at least) of a 1-D
    array, a built list, a tuple of entries of one type or a constant range."""
    if len(ts) != 1 or not s.kwargs or not set(s.kwargs) <= {"key", "reverse"}:
        return False
    t = ts[0]
    if isinstance(t, LiteralT):
        return type(t.value) is range
    if isinstance(t, ArrayT):
        return t.ndim == 1
    return isinstance(t, BuiltListT) or isinstance(t, TupleT) and len(set(t.elems)) <= 1


def _listed_range(ctx: Context, s, ts: list) -> None:
    """A constant range as the sequence of a keyed call: ask for `list(r)` (a tuple of
    its ints) in its place."""
    if isinstance(ts[0], LiteralT):
        def build(ir, st) -> list:
            listed = Stmt(ir.new_var(), "call", [Const(builtins.list), st.args[1]], {}, st.line)
            return [listed, Stmt(st.var, "call", [st.args[0], listed.var, *st.args[2:]],
                                 dict(st.kwargs), st.line, st.name)]
        raise RewriteStatement("a keyed call over a range", s.var, build)


def _t_sorted_keywords(ctx: Context, s, ts: list) -> Type:
    _listed_range(ctx, s, ts)
    kw = dict(s.kwargs)
    key, reverse = kw.get("key", Const(None)), kw.get("reverse", Const(False))
    keyless = isinstance(key, Const) and key.value is None
    if keyless and not is_number_items(ctx, Stmt(s.var, "call", s.args), ts):
        ctx.fail(f"sorted of ({ts[0]}) is not compiled (of float64 or int64 entries, or "
                 "with a key that gives numbers, is)")
    try:
        if keyless:
            return impl_call(ctx, s, _sorted_items, [s.args[1], reverse])
        return impl_call(ctx, s, _sorted_keyed, [s.args[1], key, reverse])
    except TypingError:      # (its detail would name the helper, not the user's code)
        ctx.fail(f"sorted() with key= is compiled where the key gives a number for each "
                 f"entry of the {ts[0]}")


def _t_sorted_plain(ctx: Context, s, ts: list) -> Type:
    return impl_call(ctx, s, _sorted_items, [s.args[1], Const(False)])


def is_keyed_order(ctx: Context, s, ts: list) -> bool:
    """Pattern: `sort_order(xs, reverse, key)` (`d_sorted` with a key)."""
    return len(ts) == 3 and not s.kwargs and is_keyed_items(
        ctx, Stmt(s.var, "call", s.args[:2], {"key": s.args[3]}), ts[:1])


def _calling(impl):
    def rule(ctx: Context, s, ts: list) -> Type:
        return impl_call(ctx, s, impl, list(s.args[1:]))
    return rule


def _t_extreme(ctx: Context, s, ts: list) -> Type:
    impl = _min_items if called(ctx.typing, s) is builtins.min else _max_items
    return impl_call(ctx, s, impl, list(s.args[1:]))


def is_keyed_extreme(ctx: Context, s, ts: list) -> bool:
    """Pattern: `min(xs, key=...)` / `max(xs, key=...)` of a 1-D array, a built list or a
    tuple of entries of one type."""
    return set(s.kwargs) == {"key"} and is_keyed_items(ctx, s, ts)


def _t_extreme_keyed(ctx: Context, s, ts: list) -> Type:
    _listed_range(ctx, s, ts)
    least = called(ctx.typing, s) is builtins.min
    try:
        return impl_call(ctx, s, _keyed_extreme, [s.args[1], s.kwargs["key"], Const(least)])
    except TypingError:      # (its detail would name the helper, not the user's code)
        ctx.fail(f"{'min' if least else 'max'}() with key= is compiled where the key gives a "
                 f"number for each entry of the {ts[0]}")


def pick_d_sum_built(argtypes: list):
    """d_sum of a built list of float64 (dy a float): `_d_sum_built`; of a built list of
    float64 arrays (dy an array of their rank): `_d_sum_built_arrays`; else None."""
    if len(argtypes) != 2 or not isinstance(argtypes[1], BuiltListT):
        return None
    elem = argtypes[1].elem
    if argtypes[0] == FLOAT64 and elem == FLOAT64:
        return _d_sum_built
    if _float_array(elem) and argtypes[0] == elem:
        return _d_sum_built_arrays
    return None


def pick_d_prod_built(argtypes: list):
    """d_prod of a built list of float64 (dy a float, no start): `_d_prod_built`."""
    if len(argtypes) == 2 and argtypes[0] == FLOAT64 and isinstance(argtypes[1], BuiltListT) \
            and argtypes[1].elem == FLOAT64:
        return _d_prod_built
    return None


def _float_array(t) -> bool:
    return isinstance(t, ArrayT) and t.dtype == FLOAT64


def pick_d_extreme_items(argtypes: list):
    """d_min / d_max of one float 1-D array (its cotangent in its dtype) or built list
    of float64, else None."""
    if len(argtypes) != 3 or argtypes[0] not in (FLOAT64, FLOAT32) \
            or argtypes[1] not in (FLOAT64, FLOAT32):
        return None
    xs = argtypes[2]
    if isinstance(xs, ArrayT) and xs.ndim == 1 and xs.dtype in (FLOAT64, FLOAT32):
        return _d_extreme_array
    if argtypes[0] != FLOAT64 or argtypes[1] != FLOAT64:
        return None
    if isinstance(xs, BuiltListT) and xs.elem == FLOAT64:
        return _d_extreme_built
    return None


def _declare() -> None:
    from adjoint import rules_math as M
    total = REGISTRY.get(builtins.sum)          # (declared by jit.library.builtin_sum)
    REGISTRY.add(total, "a tuple or list of known length (its additions)", is_fixed_sequence,
                 t_sum_fixed)
    REGISTRY.add(total, "a built list of numbers", is_number_list, _calling(_sum_built))
    REGISTRY.add(total, "a built list of float arrays", is_array_list, _calling(_sum_built))
    REGISTRY.declare_pullback(M.d_sum, "a built list of float64 or of float64 arrays",
                              pick_d_sum_built)
    REGISTRY.declare(math.prod, family=FAMILY, pattern="a tuple or list of known length (its "
                     "products)", matches=is_fixed_sequence, types=t_prod_fixed)
    REGISTRY.add(REGISTRY.get(math.prod), "a built list of numbers", is_number_list,
                 _calling(_prod_built))
    REGISTRY.declare_pullback(M.d_prod, "a built list of float64", pick_d_prod_built)
    for f, pb in ((builtins.min, M.d_min), (builtins.max, M.d_max)):
        REGISTRY.add(REGISTRY.get(f), "one 1-D array or built list of numbers", is_items,
                     _t_extreme)         # (declared by jit.library.math_builtins)
        REGISTRY.add(REGISTRY.get(f), "key= (giving numbers), over a 1-D array, a list or a "
                     "tuple of one entry type", is_keyed_extreme, _t_extreme_keyed)
        REGISTRY.declare_pullback(pb, "one float 1-D array or built list of float64",
                                  pick_d_extreme_items)
    REGISTRY.declare(deopt_if_nan, family="runtime checks", pattern="float",
                     types=_t_deopt_if_nan, lower=_cg_deopt_if_nan, gpu={"cuda": "inline"})
    REGISTRY.declare(builtins.sorted, family=FAMILY, pattern="one 1-D array, list or tuple of "
                     "float64 or int64", matches=is_number_items, types=_t_sorted_plain)
    REGISTRY.add(REGISTRY.get(builtins.sorted), "key= (giving numbers) or reverse=, over a 1-D "
                 "array, a list or a tuple of one entry type", is_keyed_items, _t_sorted_keywords)
    REGISTRY.declare(M.sort_order, family=FAMILY, pattern="a float64 1-D array, list or tuple, "
                     "and reverse", matches=is_float_order, types=_calling(_sort_order_items))
    REGISTRY.add(REGISTRY.get(M.sort_order), "entries of one type, reverse and a key",
                 is_keyed_order, _calling(_key_order))
    for f, impl in ((builtins.any, _any_items), (builtins.all, _all_items)):
        REGISTRY.declare(f, family=FAMILY, pattern="one 1-D array, list or tuple",
                         matches=is_truth_items, types=_calling(impl), numpy_too=True)


_declare()
