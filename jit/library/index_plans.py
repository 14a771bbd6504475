"""numpy's reading of an index, from the types of its parts alone.

`x[i, 1:, None, ..., idx]` lowers to `getitem(x, i, %s, None, @<ellipsis>, idx)` (or to
`getitem(x, key)` with one tuple `key`).  `plan_index` says, for an array of rank n,
what each part does, how many axes of x it uses, the rank of the result and where
the dimensions of advanced indices go, following numpy's rules:

  * an integer uses one axis and drops it; a slice uses one axis and keeps it;
    `None` uses none and adds one of length 1; a lone boolean (`x[True]`) uses none
    and adds one of length 1 or 0; `...` stands for as many full slices as the other
    parts leave axes;
  * an integer array uses one axis, a boolean mask as many axes as it has; when any
    is present (an *advanced* index), integers and lone booleans count as advanced
    too, and the advanced parts' dimensions (the broadcast of the integer arrays, one
    for each mask) replace them: in place when the advanced parts are adjacent,
    first when something else separates them.

The JIT compiles an index with no array among its parts as a view
(`jit.library.slicing`) and one with arrays through numpy (`jit.library.advanced_index`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jit.types import BOOL, FLOAT64, INT64, NONE, ArrayT, ListLiteral, TupleT, Type

MAX_RANK = 8       # the JIT's largest array (jit.types.MAX_NDIM)


@dataclass(frozen=True, repr=False)
class SliceT(TupleT):
    """A `slice(start, stop, step)` value; `elems` are the three parts' types (int64,
    bool or none), `values` the parts themselves when all are known at compile time
    (tuple slicing needs them: jit.library.tuple_slicing).  A tuple natively, but a distinct
    type."""

    values: tuple | None = None

    def __str__(self) -> str:
        return "slice(" + ", ".join(str(e) for e in self.elems) + ")"


class IndexRefused(Exception):
    """An index numpy refuses (or that has no compiled meaning): the message names the
    index kind, in numpy's words where numpy has them."""


@dataclass(frozen=True)
class IndexPlan:
    """What each index part does ("int", "bool", "slice", "new", "ellipsis", "array"),
    the axes of the array it uses, and the result."""

    kinds: tuple
    spans: tuple
    ndim: int            # the rank of the result (0: one element)
    advanced: bool       # an integer array or a boolean mask among the parts
    adv_ndim: int        # the rank of the advanced parts' broadcast
    adv_first: bool      # advanced parts separated: their dimensions go first

    @property
    def basic(self) -> bool:
        """A view of the array, with something other than integers (those take the
        core rule: an element or a sub-array)."""
        return not self.advanced and any(k != "int" for k in self.kinds)


def is_ellipsis(t: Type) -> bool:
    return getattr(t, "value", None) is Ellipsis and type(t).__name__ == "LiteralT"


def index_parts(ts: list) -> list:
    """The index parts of `x[ts...]`: one tuple operand (not a slice) is the index; a
    list display of constants (`x[[0, 2]]`) is the array numpy makes of it."""
    if len(ts) == 1 and isinstance(ts[0], TupleT) and not isinstance(ts[0], SliceT):
        ts = ts[0].elems
    return [_listed_array(t) for t in ts]


def _listed_array(t: Type) -> Type:
    value = getattr(t, "value", None)
    if type(t).__name__ != "LiteralT" or not isinstance(value, ListLiteral):
        return t
    a = np.asarray(list(value))
    if a.size == 0:         # numpy reads `[]` as an empty integer index
        return ArrayT(INT64, 1)
    return ArrayT({"b": BOOL, "i": INT64, "u": INT64}.get(a.dtype.kind, FLOAT64), a.ndim)


def _kind(t: Type) -> str:
    if isinstance(t, SliceT):
        return "slice"
    if t == INT64:
        return "int"
    if t == BOOL:
        return "bool"
    if t == NONE:
        return "new"
    if is_ellipsis(t):
        return "ellipsis"
    if isinstance(t, ArrayT):
        if t.dtype == FLOAT64:
            raise IndexRefused("arrays used as indices must be of integer (or boolean) type, "
                               f"not {t}")
        return "array"
    raise IndexRefused(f"an index of type {t} is not valid: only integers, slices (`:`), "
                       "ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean "
                       "arrays are valid indices")


def _span(kind: str, t: Type) -> int:
    if kind in ("int", "slice"):
        return 1
    if kind == "array":
        return t.ndim if t.dtype == BOOL else 1
    return 0


def plan_index(x: ArrayT, ts: list) -> IndexPlan:
    """numpy's plan for indexing an array of type x by parts of types ts (IndexRefused
    when numpy would raise IndexError)."""
    kinds = [_kind(t) for t in ts]
    if kinds.count("ellipsis") > 1:
        raise IndexRefused("an index can only have a single ellipsis ('...')")
    spans = [_span(k, t) for k, t in zip(kinds, ts)]
    used = sum(spans)
    if used > x.ndim:
        raise IndexRefused(f"too many indices for array: array is {x.ndim}-dimensional, "
                           f"but {used} were indexed")
    spans = [x.ndim - used if k == "ellipsis" else n for k, n in zip(kinds, spans)]
    advanced = "array" in kinds
    adv_at = [p for p, k in enumerate(kinds) if k in ("array", "int", "bool")] \
        if advanced else []
    adv_ndim = max([_adv_rank(k, t) for k, t in zip(kinds, ts) if k in ("array", "bool")],
                   default=0)
    basic = sum(n for k, n in zip(kinds, spans) if k in ("slice", "ellipsis")) \
        + sum(1 for k in kinds if k == "new" or k == "bool" and not advanced)
    ndim = basic + (adv_ndim if advanced else 0) + x.ndim - sum(spans)
    if ndim > MAX_RANK:
        raise IndexRefused(f"indexing {x} gives {ndim} dimensions; the JIT compiles arrays "
                           f"of at most {MAX_RANK}")
    separated = bool(adv_at) and adv_at[-1] - adv_at[0] + 1 != len(adv_at)
    return IndexPlan(tuple(kinds), tuple(spans), ndim, advanced, adv_ndim, separated)


def _adv_rank(kind: str, t: Type) -> int:
    """The rank an advanced part adds to the broadcast: an integer array its own, a
    mask (or a lone boolean) one."""
    return t.ndim if kind == "array" and t.dtype != BOOL else 1


__all__ = ["IndexPlan", "IndexRefused", "SliceT", "index_parts", "is_ellipsis", "plan_index"]
