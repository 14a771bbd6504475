"""The runtime of the J transform: the tape, its readers, cotangent arithmetic, and
the primitives the forward and adjoint IR use (registered in `ssair.primitives`).

Cotangents.  The zero cotangent is `None` everywhere (an adjoint variable nobody
has written yet); a float's cotangent is a float, an array's an array of its shape,
a tuple's a tuple of cotangents (entries may be `None`), a closure's the tuple of
its captured values' cotangents, a dict's a dict of its values' cotangents.
Integers and booleans have no cotangent.

Primitives (all typeable from their operands, so the JIT can compile them):
  * `push(tape, v)`            append `v` to the tape (impure; returns None);
  * `tape_mark(tape)`, `tape_cut(tape, m)`  the tape's length; truncate it back to
                               `m` (a handler entered by an exception, `adjoint.passes.unwind`);
  * `ckpt_tape()`, `ckpt_reader(t)`, `ckpt_spent(t, r)`, `ckpt_rewind(t, r, s)`,
    `ckpt_copy(x)`, `ckpt_copy_joint(where, x...)`, `ckpt_free(t)`  the scratch
                               tape a checkpointed loop's segments are recomputed
                               onto during `back`, and the copies of the state a
                               segment starts from (`adjoint.passes.checkpoint`);
  * `pop(reader)`              the next value backwards from a reader's cursor;
                               reading never changes the tape, so `back` may run
                               many times, each with its own `Tape.reader()`;
  * `accum(a, b)`              a + b with None as zero, tuples elementwise; an array
                               result is always a fresh array (never an alias of
                               `a` or `b`), so `accum_index` may update it in place;
  * `zero(x)`                  the zero cotangent of x's type (0.0, zeros, tuple of
                               zeros, None for ints/bools);
  * `dget(t, k)`               entry k of a tuple cotangent (None stays None);
  * `unbcast(dy, x)`           sum `dy` down to the shape of `x` (broadcasting);
  * `accum_index(s, dy, x, i...)` s[i] += dy where s is the cotangent of x (created
                               as zeros of x's shape when None; a tuple or a dict
                               is rebuilt; an advanced index adds once per use);
  * `take_index(s, i...)`      s[i] copied out (None when s is None);
  * `zero_index(s, i...)`      s[i] = 0 in place (the adjoint of an overwrite);
  * `snapshot(x)`              a copy of an array that is mutated later (alphas);
  * `contiguous(x)`            x itself when C-contiguous, else a C-contiguous copy
                               (the top-level form of an entry snapshot: see
                               `adjoint.passes.stacks.entry_forward`);
  * `jcall(f, tape, kwnames, args...)` call f's forward on the same tape:
                               returns `(y, pb)`; the last len(kwnames) args are
                               keywords; see `adjoint.transform.jcall`;
  * `jback(pb, reader, dy, cur)` run the adjoint recorded in pb with the same reader:
                               returns the new (d_f, d_arg1, ...), one per jcall
                               operand, given their current cotangents `cur`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ssair.interpreter import Closure
from ssair.primitives import register


class Tape:
    """One shared LIFO tape per pullback: forwards of all nested calls push here."""

    __slots__ = ("items", "sens")

    def __init__(self) -> None:
        self.items: list = []
        self.sens: list = []    # cotangents of popped values (nested AD, see adjoint.nested)

    def push(self, v: Any) -> None:
        self.items.append(v)

    def reader(self) -> "Reader":
        return Reader(self.items, self)

    def __len__(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        return f"<Tape of {len(self.items)} values>"


class Reader:
    """A cursor that walks a tape backwards without consuming it."""

    __slots__ = ("items", "pos", "tape")

    def __init__(self, items: list, tape: "Tape" = None) -> None:
        self.items = items
        self.pos = len(items)
        self.tape = tape

    def pop(self) -> Any:
        self.pos -= 1
        if self.pos < 0:
            raise RuntimeError("adjoint: tape read past its start (forward and adjoint "
                               "disagree)")
        return self.items[self.pos]

    def __repr__(self) -> str:
        return f"<Reader at {self.pos} of {len(self.items)}>"


def new_tape() -> Tape:
    return Tape()


def reader_of(tape: Tape) -> Reader:
    return tape.reader()


new_tape.__zygopy_symbol__ = "adjoint.tape.new_tape"
reader_of.__zygopy_symbol__ = "adjoint.tape.reader_of"


def tape_mark(tape: Tape) -> int:
    """The tape's length: where a protected statement's pushes begin."""
    return len(tape.items)


def tape_cut(tape: Tape, mark: int) -> None:
    """Drop what a statement that raised pushed after `mark` (`adjoint.passes.unwind`)."""
    del tape.items[mark:]


class ScratchTape(Tape):
    """The tape the adjoint recomputes a checkpointed loop's segments onto
    (`adjoint.passes.checkpoint`); `start` is the header visit the segment it holds
    starts at, -1 before the first."""

    __slots__ = ("start",)


def ckpt_tape() -> ScratchTape:
    t = ScratchTape()
    t.start = -1
    return t


def ckpt_reader(t: ScratchTape) -> Reader:
    return Reader(t.items, t)


def ckpt_spent(t: ScratchTape, r: Reader) -> bool:
    """Is every record of the segment read, with an earlier segment left?"""
    return r.pos == 0 and t.start != 0


def ckpt_rewind(t: ScratchTape, r: Reader, start: int) -> None:
    """Point `r` at the end of the segment just recomputed, which starts at `start`."""
    r.pos = len(t.items)
    t.start = start


def ckpt_copy(x: Any, memo: Any = None) -> Any:
    """A copy of a snapshot value the loop may write into, or whose memory a later
    write may change (an array, or a list, dict or tuple holding one), so that a
    segment starts from the state it had, however often it is recomputed (a closure's
    captured values are copied too).  An object
    met twice (`memo`: id -> copy) is copied once."""
    memo = {} if memo is None else memo
    if id(x) in memo:
        return memo[id(x)]
    if isinstance(x, np.ndarray):
        out: Any = x.copy()
    elif isinstance(x, list):
        out = memo[id(x)] = []
        out.extend(ckpt_copy(v, memo) for v in x)
    elif isinstance(x, dict):
        out = memo[id(x)] = {}
        out.update((k, ckpt_copy(v, memo)) for k, v in x.items())
    elif type(x) is tuple:
        out = tuple(ckpt_copy(v, memo) for v in x)
    elif isinstance(x, Closure):
        out = Closure(x.func, ckpt_copy(x.values, memo), x.defaults, x.kwdefaults)
    else:
        return x
    memo[id(x)] = out
    return out


def ckpt_copy_joint(where: str, *xs: Any) -> tuple:
    """Copies of state values that may share memory the loop writes into, taken
    together: a value held twice stays one value.  Two distinct arrays that share
    memory (a view and its base) cannot be copied apart: a clear error."""
    arrays = {id(a): a for a in _arrays_in(xs)}
    found = list(arrays.values())
    for i, a in enumerate(found):
        for b in found[i + 1:]:
            if np.shares_memory(a, b):
                raise TypeError(f"pullback: checkpoint= does not support a loop that writes "
                                f"into an array it also reads through another name (a view "
                                f"or a container) yet (in {where})")
    memo: dict = {}
    return tuple(ckpt_copy(x, memo) for x in xs)


def _arrays_in(x: Any) -> list:
    """The arrays `x` holds (itself, or in its lists, dicts, tuples and closures)."""
    if isinstance(x, np.ndarray):
        return [x]
    if isinstance(x, Closure):
        x = x.values
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, (list, tuple)):
        return [a for v in x for a in _arrays_in(v)]
    return []


def ckpt_free(t: ScratchTape) -> None:
    t.items.clear()


def push(tape: Tape, v: Any) -> None:
    tape.items.append(v)


def pop(reader: Reader) -> Any:
    return reader.pop()


def is_array(x: Any) -> bool:
    return isinstance(x, np.ndarray)


def fresh(x: Any) -> Any:
    """A cotangent that no other adjoint variable shares."""
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, tuple):
        return tuple(fresh(v) for v in x)
    if isinstance(x, list):
        return [fresh(v) for v in x]
    if isinstance(x, dict):
        return {k: fresh(v) for k, v in x.items()}
    return x


def accum(a: Any, b: Any) -> Any:
    if a is None:
        return fresh(b)
    if b is None:
        return a
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return _accum_tuples(a, b)
    if isinstance(a, dict):
        return {k: accum(a.get(k), b.get(k)) for k in {**a, **b}}
    return a + b


def _accum_tuples(a: Any, b: Any) -> Any:
    if isinstance(a, np.ndarray):
        return a + np.asarray(_dense(b, a))
    if isinstance(b, np.ndarray):
        return b + np.asarray(_dense(a, b))
    if len(a) != len(b):
        raise ValueError(f"adjoint: cotangents of different lengths {len(a)} and {len(b)}")
    out = [accum(x, y) for x, y in zip(a, b)]
    return out if isinstance(a, list) else tuple(out)


def _dense(t: tuple, like: np.ndarray) -> list:
    return [np.zeros(like.shape[1:]) if v is None else v for v in t]


def zero(x: Any) -> Any:
    if isinstance(x, (bool, int, np.integer, np.bool_)) or x is None:
        return None
    if isinstance(x, np.ndarray):
        if x.dtype.kind in "fc":
            return np.zeros_like(x)
        return None
    if isinstance(x, (tuple, list)):
        return tuple(zero(v) for v in x)
    if isinstance(x, dict):
        return {k: zero(v) for k, v in x.items()}
    if isinstance(x, complex):
        return 0j
    if isinstance(x, (float, np.floating)):
        return 0.0
    return None


def dget(t: Any, k: Any, position: Any = None) -> Any:
    """Entry `k` of cotangent `t`; a dict's cotangent is a dict here and, compiled, the
    tuple of its values' cotangents, read at `position`."""
    if t is None:
        return None
    if isinstance(t, dict):
        return t.get(k)
    return t[k if position is None else position]


def unbcast(dy: Any, x: Any) -> Any:
    """Sum `dy` over the axes along which `x` was broadcast."""
    if dy is None or not isinstance(dy, np.ndarray):
        return dy
    if not isinstance(x, np.ndarray):
        if isinstance(x, tuple):
            return dy
        total = dy.sum()
        return complex(total) if total.dtype.kind == "c" else float(total)
    if dy.shape == x.shape:
        return dy
    extra = dy.ndim - x.ndim
    g = dy.sum(axis=tuple(range(extra))) if extra > 0 else dy
    axes = tuple(k for k, n in enumerate(x.shape) if n == 1 and g.shape[k] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def _key(idx: tuple) -> Any:
    return idx[0] if len(idx) == 1 else tuple(idx)


def _fancy(key: Any) -> bool:
    """Does index `key` select with integer or boolean arrays (numpy's advanced
    indexing), so that one element may be selected more than once?"""
    parts = key if isinstance(key, tuple) else (key,)
    return any(isinstance(p, (np.ndarray, list)) for p in parts)


def accum_index(s: Any, dy: Any, x: Any, *idx: Any) -> Any:
    if dy is None:
        return s
    if isinstance(x, np.ndarray):
        if s is None:
            s = np.zeros(x.shape, dtype=np.result_type(x.dtype, float))
        key = _key(idx)
        if _fancy(key):
            np.add.at(s, key, dy)     # a repeated index adds once per time it was read
        else:
            s[key] += dy
        return s
    if isinstance(x, (tuple, list)):
        base = list(s) if s is not None else [None] * len(x)
        k = _key(idx)
        if isinstance(k, slice):
            positions = range(len(x))[k]
            for p, g in zip(positions, dy):
                base[p] = accum(base[p], g)
        else:
            base[k] = accum(base[k], dy)
        return base if isinstance(x, list) else tuple(base)
    if isinstance(x, dict):
        base = dict(s) if s is not None else {}
        k = _key(idx)
        base[k] = accum(base.get(k), dy)
        return base
    raise TypeError(f"adjoint: cannot index the cotangent of a {type(x).__name__}")


def take_index(s: Any, *idx: Any) -> Any:
    """The cotangent of the value `x[idx] = v` wrote: `s[idx]`, where a position of an
    advanced index whose write a later duplicate overwrote gets zero."""
    if s is None:
        return None
    key = _key(idx)
    if isinstance(s, dict):
        return fresh(s.get(key))
    v = s[key]
    if isinstance(s, np.ndarray) and _fancy(key):
        return np.where(_landed(s.shape, key), v, 0.0)
    return v.copy() if isinstance(v, np.ndarray) else v


def _landed(shape: tuple, key: Any) -> np.ndarray:
    """For each position of the selection `a[key]` of an array of `shape`: did the
    assignment `a[key] = v` keep its value?  numpy's own assignment decides, by
    writing each position's number and reading back which numbers stayed."""
    owner = np.full(shape, -1, dtype=np.intp)
    picked = owner[key].shape
    ids = np.arange(int(np.prod(picked)), dtype=np.intp).reshape(picked)
    owner[key] = ids
    return owner[key] == ids


def zero_index(s: Any, *idx: Any) -> Any:
    if s is None:
        return None
    if isinstance(s, dict):
        return {k: v for k, v in s.items() if k != _key(idx)}
    if isinstance(s, tuple):        # a list's cotangent in tuple form: a new tuple
        key = _key(idx)
        cleared = list(s)
        cleared[key] = None if isinstance(key, int) else [None] * len(cleared[key])
        return tuple(cleared)
    s[_key(idx)] = 0
    return s


def snapshot(x: Any) -> Any:
    """A copy of an array that keeps its memory layout (`np.ravel(.., order="K")` of a
    snapshot of a view reads the elements in the view's order); a tuple or list is
    rebuilt around snapshots of its items (a rule's residuals may hold arrays that
    are written later)."""
    if isinstance(x, np.ndarray):
        return x.copy(order="K")
    if type(x) is tuple:
        return tuple([snapshot(v) for v in x])
    if type(x) is list:
        return [snapshot(v) for v in x]
    return x


def contiguous(x: Any) -> Any:
    return np.ascontiguousarray(x) if isinstance(x, np.ndarray) else x


register("push", 2, push, pure=False, foldable=False, symbol="tape.push(v)")
register("tape_mark", 1, tape_mark, pure=False, foldable=False, symbol="len(tape)")
register("tape_cut", 2, tape_cut, pure=False, foldable=False, symbol="del tape[m:]")
register("ckpt_tape", 0, ckpt_tape, pure=False, foldable=False, symbol="ScratchTape()")
register("ckpt_reader", 1, ckpt_reader, pure=False, foldable=False, symbol="t.reader()")
register("ckpt_spent", 2, ckpt_spent, pure=False, foldable=False,
         symbol="r.pos == 0 and t.start != 0")
register("ckpt_rewind", 3, ckpt_rewind, pure=False, foldable=False,
         symbol="r.pos = len(t); t.start = s")
register("ckpt_copy", 1, ckpt_copy, pure=False, foldable=False, symbol="copy(x)")
register("ckpt_copy_joint", (1, None), ckpt_copy_joint, pure=False, foldable=False,
         symbol="copies of (x, y, ...) together")
register("ckpt_free", 1, ckpt_free, pure=False, foldable=False, symbol="t.clear()")
register("pop", 1, pop, pure=False, foldable=False, symbol="reader.pop()")
register("accum", 2, accum, foldable=False, symbol="a + b")
register("zero", 1, zero, foldable=False, symbol="zero(x)")
register("dget", (2, 3), dget, symbol="t[k]")
register("unbcast", 2, unbcast, foldable=False, symbol="unbroadcast(dy, x)")
register("accum_index", (4, None), accum_index, pure=False, foldable=False,
         symbol="s[i] += dy")
register("take_index", (2, None), take_index, pure=False, foldable=False, symbol="s[i]")
register("zero_index", (2, None), zero_index, pure=False, foldable=False, symbol="s[i] = 0")
register("snapshot", 1, snapshot, pure=False, foldable=False, symbol="copy(x)")
register("contiguous", 1, contiguous, pure=False, foldable=False, symbol="contiguous(x)")
