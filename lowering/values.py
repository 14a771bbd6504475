"""Values that live on the simulated operand stack besides SSA operands.

Lazy values (`LazyTuple`, `LazyList`, `LazyCall`, `FuncBuild`) stand for an
expression whose statement is emitted only when it is used as an ordinary operand
(`Lowerer.operand` materialises them once).  Until then a consumer may look inside:
`a[i, j]` indexes with the tuple's elements, `range(...)` followed by GET_ITER
becomes a counter loop, a closure tuple gives the captured values.

Markers (`NULL`, `EXHAUSTED`, `LASTI`, `ExcInfo`, `CaughtPart`, `ForState`) are never operands: they are carried
from block to block in the stack shape rather than through SSA.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ssair.ir import Const


class _Marker:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


NULL = _Marker("NULL")            # CPython's NULL slot next to a callable (3.11+)
EXHAUSTED = _Marker("EXHAUSTED")  # 3.12+: the slot FOR_ITER's exit leaves for END_FOR
LASTI = _Marker("LASTI")          # the instruction offset a 3.11+ handler entry may push


class ExcInfo(_Marker):
    """The slot(s) holding the exception being handled before this one (3.11+:
    PUSH_EXC_INFO's one; 3.10: three), carrying the exception now handled (`exc`, an
    operand) for a bare `raise`."""

    def __init__(self, exc):
        super().__init__("EXC_INFO")
        self.exc = exc


class CaughtPart(_Marker):
    """Python 3.10's traceback and type slots of a handler's stack (`part` is
    "traceback" or "type"). Nearly every handler only pops them or tests the type
    against its `except` clause, which reads `exc` itself; `materialize` emits the
    statement only for a consumer that needs the value (WITH_EXCEPT_START passes
    both to `__exit__`)."""

    def __init__(self, exc, part: str):
        super().__init__(part.upper())
        self.exc = exc
        self.part = part

    def materialize(self, lw):
        if self.part == "type":
            return lw.emit("call", Const(type), self.exc)
        return lw.emit("getattr", self.exc, Const("__traceback__"))


@dataclass(eq=False)
class Lazy:
    """Base of lazy values; `var` caches the materialised operand."""

    var: Any = field(default=None, init=False)


@dataclass(eq=False)
class LazyTuple(Lazy):
    """`(a, b, ...)` built in place (BUILD_TUPLE)."""

    elems: list = field(default_factory=list)


@dataclass(eq=False)
class LazyList(Lazy):
    """`[a, b, ...]` built in place (BUILD_LIST, LIST_EXTEND of a constant)."""

    elems: list = field(default_factory=list)


@dataclass(eq=False)
class LazyDict(Lazy):
    """`{k: v, **d, ...}` built in place (BUILD_MAP, BUILD_CONST_KEY_MAP, DICT_UPDATE,
    DICT_MERGE): `entries` are `(key, value)` pairs and `Starred` dicts, in order."""

    entries: list = field(default_factory=list)


@dataclass(eq=False)
class Starred:
    """`*seq` inside a list or tuple display, or `**d` inside a dict display, whose
    items are only known at run time (an operand)."""

    seq: Any = None


@dataclass(eq=False)
class LazyCall(Lazy):
    """A call of `range`, `enumerate` or `zip` that may turn into a counter loop."""

    callee: Any = None
    args: list = field(default_factory=list)


@dataclass(eq=False)
class ListAppend(Lazy):
    """`name.append` where local `name` holds a list made in this function that
    nothing else refers to (`CodeReader.append_locals`): called with one argument it
    becomes `%l2 = list_append(%l, %v)` and `name` is rebound to `%l2`."""

    obj: Any = None
    name: str = ""


@dataclass(eq=False)
class FuncBuild(Lazy):
    """A nested function being made (MAKE_FUNCTION, SET_FUNCTION_ATTRIBUTE).
    Constant defaults are part of the function; others (`dynamic_defaults`, the tuple
    evaluated when the function is made) go to `make_closure(...; defaults=%t)`."""

    code: Any = None
    qualname: str = ""
    defaults: tuple | None = None
    kwdefaults: dict | None = None
    closure: list = field(default_factory=list)
    dynamic_defaults: Any = None   # an operand: defaults computed at run time
    dynamic_count: int = 0         # how many defaults that tuple holds


@dataclass(eq=False)
class Field:
    """One replacement field of an f-string: `value` (an operand) after its
    conversion ('' none, 'r' repr, 's' str, 'a' ascii), formatted with `spec` (None,
    a constant str, or an operand or `LazyFormat` computed at run time)."""

    value: Any = None
    conversion: str = ""
    spec: Any = None


@dataclass(eq=False)
class Converted(Lazy):
    """3.13's CONVERT_VALUE: `value` (an operand) with its conversion still to apply
    (FORMAT_SIMPLE / FORMAT_WITH_SPEC make it a `Field`)."""

    value: Any = None
    conversion: str = ""


@dataclass(eq=False)
class LazyFormat(Lazy):
    """An f-string built in place (FORMAT_VALUE, BUILD_STRING): `parts` are literal
    strs and `Field`s, in order (`lowering.ops_format`)."""

    parts: list = field(default_factory=list)


@dataclass(eq=False)
class ForState:
    """The iterator of a lowered `for` loop: an integer counter `key` (an SSA
    variable) running from its start by `step` while it is below `stop` (above it
    when `sign` is -1; `sign` None means the step's sign is only known at run time,
    `positive` holds that test).  `seqs` are indexed by the counter (sequence,
    enumerate and zip loops); `offset` is enumerate's start."""

    kind: str
    key: Any
    stop: Any
    step: Any = 1
    sign: int | None = 1
    positive: Any = None
    seqs: list = field(default_factory=list)
    offset: Any = None
