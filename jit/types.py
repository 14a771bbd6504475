"""The JIT's type lattice: what inference assigns to every SSA value.

Types are small frozen values whose `str()` is the spelling `code_typed` prints:

    bool  int64  float64  none
    array(float64, 1d)  array(int64, 2d)        any strides, passed as (data, shape, strides)
    tuple(float64, int64)                        a fixed-length heterogeneous tuple
    list(array(float64, 2d), ...)                a list argument, typed like a tuple
    function(math.sin)                           a function constant (no runtime data)
    closure(inner; float64)                      a nested function plus its captured values

Joining two types (at a phi or at the return) follows Python's numeric tower the way
Numba does: bool < int64 < float64; tuples join element-wise; anything else must agree.
"""
from __future__ import annotations

import functools
import threading
import types as pytypes
import weakref
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from adjoint.partials import partial_captures, partial_template
from ssair.compile_lock import compiling

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


class TypingError(TypeError):
    """A value whose type the JIT cannot infer or does not support.  The message names
    the value, the primitive (or callee) and the source location."""


class Type:
    """Base class of all JIT types."""

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True, repr=False)
class Scalar(Type):
    """`bool`, `int64`, `float64`, `float32`, `int32` or `none`."""

    name: str

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):      # unpickled (the disk cache) as the one instance
        return (scalar_named, (self.name,))


def scalar_named(name: str) -> Scalar:
    return {s.name: s for s in (BOOL, INT64, FLOAT64, FLOAT32, INT32, NONE)}[name]


BOOL = Scalar("bool")
INT64 = Scalar("int64")
FLOAT64 = Scalar("float64")
FLOAT32 = Scalar("float32")
INT32 = Scalar("int32")
NONE = Scalar("none")
NUMERIC = (BOOL, INT64, FLOAT64, FLOAT32, INT32)
_RANK = {BOOL: 0, INT64: 1, FLOAT64: 2, FLOAT32: 1.5, INT32: 0.5}
# The numpy dtype of each numeric type.  float32 and int32 are the narrow ones: a
# number of either is held in a register of its wide kind (double, i64) and rounded
# (wrapped) to its own width after every operation that makes one
# (`jit.codegen.function`), while arrays of them hold 4-byte elements.
NUMPY_DTYPE = {BOOL: np.dtype(np.bool_), INT64: np.dtype(np.int64),
               FLOAT64: np.dtype(np.float64), FLOAT32: np.dtype(np.float32),
               INT32: np.dtype(np.int32)}
_OF_DTYPE = {d: t for t, d in NUMPY_DTYPE.items()}
NARROW = (FLOAT32, INT32)
WIDE = {FLOAT32: FLOAT64, INT32: INT64}


@dataclass(frozen=True, repr=False)
class ArrayT(Type):
    """A numpy array of `dtype` (INT64 or FLOAT64) with `ndim` 1 or 2, any strides."""

    dtype: Scalar
    ndim: int

    def __str__(self) -> str:
        return f"array({self.dtype}, {self.ndim}d)"


@dataclass(frozen=True, repr=False)
class TupleT(Type):
    """A tuple with one type per element."""

    elems: tuple

    def __str__(self) -> str:
        return "tuple(" + ", ".join(str(e) for e in self.elems) + ")"


@dataclass(frozen=True, repr=False)
class ListT(TupleT):
    """A Python list argument: natively a tuple of its elements (its length and their
    types are part of the signature, as JAX pytrees are).  Compiled code reads it
    (indexing, iteration, unpacking) and a returned one is a list again; growing or
    writing into one is not compiled."""

    def __str__(self) -> str:
        return "list(" + ", ".join(str(e) for e in self.elems) + ")"


class ListLiteral(tuple):
    """The value of a list display of constants (`[0, 2, 1]` as an axes argument): a
    constant of compiled code (typed `LiteralT(ListLiteral(...))`), given to Python
    callees as a new list each time."""


@dataclass(frozen=True, repr=False)
class BuiltListT(Type):
    """A list compiled code builds by appending (`acc = []`, `acc.append(v)`, a list
    comprehension): natively {data, length, capacity}, its elements of one type in
    arena memory.  Read by `len`, indexing and iteration, passed to numpy (`np.stack`)
    and to user functions; its cotangent is a built list of the elements' cotangents."""

    elem: Type

    def __str__(self) -> str:
        return f"list[{self.elem}]"


@dataclass(frozen=True, repr=False)
class DictT(TupleT):
    """A dict argument with string keys: natively a tuple of its values in key order
    (the keys, their order and the values' types are part of the signature, as JAX
    pytrees are).  Compiled code reads `d["key"]` with a constant key and passes the
    dict on; a returned one, and the gradient of one, is a dict again."""

    keys: tuple = ()

    def __str__(self) -> str:
        return "dict(" + ", ".join(f"{k!r}: {e}" for k, e in zip(self.keys, self.elems)) + ")"

    def index(self, key: Any) -> Optional[int]:
        """The position of `key` among the values, or None."""
        return self.keys.index(key) if key in self.keys else None


@dataclass(frozen=True, repr=False)
class FormattedT(TupleT):
    """An f-string compiled code made (`lowering.runtime.formatted`): natively the tuple
    of its run-time values, `template.format(*values)` once it reaches Python as an
    argument of `print` or of a call made for its effect (a logger).  Typing refuses
    every other use (`jit.typing.infer.formatted_use`): read as a tuple it would be
    a wrong value."""

    template: str = ""

    def __str__(self) -> str:
        return "str (an f-string)"


@dataclass(frozen=True, repr=False)
class RecordT(TupleT):
    """An object whose attributes compiled code reads: a named tuple, a dataclass, a
    registered class (`adjoint.register_pytree_node`) or another user object.
    Natively a tuple of its attribute values in `keys` order; its class, its attribute
    names and their types (and a registered class's static `aux`) are part of the
    signature, so another class or another field type compiles anew.  `obj.name`
    reads an entry (`jit.library.records`); its cotangent is a tuple in `keys` order,
    which the API turns back into the argument's own type."""

    keys: tuple = ()
    cls: Any = None
    aux: Any = None

    def __str__(self) -> str:
        inner = ", ".join(f"{k}: {e}" for k, e in zip(self.keys, self.elems))
        return f"{self.cls.__name__}({inner})"

    def index(self, key: Any) -> Optional[int]:
        """The position of attribute `key`, or None."""
        return self.keys.index(key) if key in self.keys else None

    @property
    def is_tuple(self) -> bool:
        """A named tuple: indexing, iteration and `len` apply too."""
        return issubclass(self.cls, tuple)


class PythonCallable:
    """A callable the JIT only calls for its effect (a method of a module-level object,
    `LOG.append`, `logger.info`), held by identity (a bound method of a list does not
    hash); see `jit.library.numpy_calls.effect_call`."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __repr__(self) -> str:
        from ssair.printer import object_name
        return object_name(self.fn)


@dataclass(frozen=True, repr=False)
class FunctionT(Type):
    """A known callable (user function, math/numpy function, builtin)."""

    func: Any

    def __str__(self) -> str:
        from ssair.printer import object_name
        return f"function({object_name(self.func)})"


@dataclass(frozen=True, repr=False)
class ClosureT(Type):
    """A nested function `func` closed over values of types `captured` (in the order
    of `func.__code__.co_freevars`)."""

    func: Any
    captured: tuple

    def __str__(self) -> str:
        inner = ", ".join(str(c) for c in self.captured)
        return f"closure({getattr(self.func, '__qualname__', self.func)}; {inner})"


@dataclass(frozen=True, repr=False)
class PartialT(ClosureT):
    """A `functools.partial(g, *bound, **named)` value of a plain user function `g`, as
    a closure (`adjoint.partials.partial_template`) whose captured values are the bound
    arguments then the values of the bound keywords `keys` (`captured`, in order), read
    from the partial's `args` and `keywords` per call."""

    keys: tuple = ()

    def __str__(self) -> str:
        inner = ", ".join(str(c) for c in self.captured)
        return f"partial({getattr(self.func, '__qualname__', self.func)}; {inner})"


@dataclass(frozen=True, repr=False)
class OpaqueT(Type):
    """A runtime object passed by pointer (`tape`, `reader`: see jit.runtime.tape)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, repr=False)
class ObjectT(Type):
    """A Python object compiled code holds by reference (its `PyObject*`, borrowed from
    the caller) and hands back to Python: a random generator whose methods it calls
    (`jit.library.random_draws`)."""

    cls: type

    def __str__(self) -> str:
        return f"object({self.cls.__name__})"


OBJECT_CLASSES = (np.random.Generator, np.random.RandomState)


@dataclass(frozen=True, repr=False)
class StrT(Type):
    """A str known to be one of `values` (constants joined at phis, e.g. a label
    chosen by a branch).  Natively the i64 id of the string in `STRINGS`, so equal
    strings have equal ids whatever the set."""

    values: frozenset

    def __str__(self) -> str:
        return "str"


def known_string(t: Type, default: Any = None) -> Any:
    """The value of a string of type `t` known to be one constant (a key of a dict
    read in a loop over its keys, unrolled), else `default`."""
    if isinstance(t, StrT) and len(t.values) == 1:
        return next(iter(t.values))
    if isinstance(t, CONSTANT_TYPE[0]) and type(t.value) is str:   # a str argument
        return t.value
    return default


STRINGS: list = [None]     # ids start at 1 (`jit.runtime.symbols`)
_STRING_IDS: dict = {}


@compiling
def intern_string(text: str) -> int:
    """The native id of a string constant (see StrT)."""
    k = _STRING_IDS.get(text)
    if k is None:
        k = _STRING_IDS[text] = len(STRINGS)
        STRINGS.append(text)
    return k


TAPE = OpaqueT("tape")
READER = OpaqueT("reader")


def is_numeric(t: Any) -> bool:
    return isinstance(t, Scalar) and t in _RANK


def is_int_like(t: Any) -> bool:
    return t is BOOL or t is INT64 or t == BOOL or t == INT64 or t == INT32


def is_float(t: Any) -> bool:
    """A float number type (float64 or float32)."""
    return t == FLOAT64 or t == FLOAT32


def is_float_dtype_array(t: Any) -> bool:
    """An array of floats (float64 or float32): the arrays that have gradients."""
    return isinstance(t, ArrayT) and is_float(t.dtype)


def wide(t: Scalar) -> Scalar:
    """The register type a number of type `t` is computed in (float32 in double)."""
    return WIDE.get(t, t)


def promote(a: Scalar, b: Scalar) -> Scalar:
    """numpy's result type of an operation on numbers or arrays of types `a` and `b`,
    with NEP 50's rule for Python numbers: bool, int64 and float64 stand for Python's
    bool, int and float, which take the other operand's type where it is of the same
    kind or higher (float32 * 2.0 is float32, int32 + 1 is int32, int32 * 0.5 is
    float64).  Between the narrow types numpy's table applies (int32 + float32 is
    float64)."""
    if a == b:
        return a
    if a in NARROW and b in NARROW:
        return _OF_DTYPE[np.promote_types(NUMPY_DTYPE[a], NUMPY_DTYPE[b])]
    if a in NARROW or b in NARROW:
        narrow, other = (a, b) if a in NARROW else (b, a)
        return narrow if _KIND[narrow] >= _KIND[other] else FLOAT64
    return numeric_join(a, b)


def promote_arrays(a: Scalar, b: Scalar) -> Scalar:
    """numpy's result dtype of two arrays of dtypes `a` and `b` (no weak operands)."""
    return _OF_DTYPE[np.promote_types(NUMPY_DTYPE[a], NUMPY_DTYPE[b])]


_KIND = {BOOL: 0, INT32: 1, INT64: 1, FLOAT32: 2, FLOAT64: 2}


def count_held(t: Any, kind: type) -> int:
    """How many values of type class `kind` a value of type `t` holds: itself, or in
    its tuples (lists and dicts passed in are tuples natively) and closures."""
    if isinstance(t, kind):
        return 1
    parts = t.elems if isinstance(t, TupleT) else t.captured if isinstance(t, ClosureT) else ()
    return sum(count_held(e, kind) for e in parts)


def numeric_join(a: Scalar, b: Scalar) -> Scalar:
    """The wider of two numeric types (bool < int64 < float64; a narrow type joined
    with another follows numpy's table: int32 with int64 is int64, float32 with
    float64 or an int is float64)."""
    if a in NARROW or b in NARROW:
        return promote_arrays(a, b)
    return a if _RANK[a] >= _RANK[b] else b


def join(a: Optional[Type], b: Optional[Type]) -> Optional[Type]:
    """Least upper bound, or raise TypingError when the two cannot be unified.
    `None` stands for "not known yet" and is the identity."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    if is_numeric(a) and is_numeric(b):
        return numeric_join(a, b)
    if isinstance(a, RecordT) or isinstance(b, RecordT):
        return _join_records(a, b)
    if isinstance(a, FormattedT) or isinstance(b, FormattedT):
        return _join_formatted(a, b)
    if isinstance(a, TupleT) and isinstance(b, TupleT) and len(a.elems) == len(b.elems):
        return TupleT(tuple(join(x, y) for x, y in zip(a.elems, b.elems)))
    raise TypingError(f"cannot unify {a} and {b}")


def _join_records(a: Type, b: Type) -> Type:
    """Two objects of one class and attribute names join attribute by attribute."""
    if isinstance(a, RecordT) and isinstance(b, RecordT) and (a.cls, a.keys, a.aux) == (
            b.cls, b.keys, b.aux):
        return RecordT(tuple(join(x, y) for x, y in zip(a.elems, b.elems)), a.keys, a.cls,
                       a.aux)
    raise TypingError(f"cannot unify {a} and {b}")


def _join_formatted(a: Type, b: Type) -> Type:
    """Two f-strings of one template join value by value; anything else does not."""
    if isinstance(a, FormattedT) and isinstance(b, FormattedT) and a.template == b.template:
        return FormattedT(tuple(join(x, y) for x, y in zip(a.elems, b.elems)), a.template)
    raise TypingError(f"cannot unify {a} and {b} (two different f-strings)")


_DTYPES = _OF_DTYPE


def typeof(value: Any) -> Type:
    """The JIT type of a Python value (an argument or a constant)."""
    t = _SIMPLE.get(type(value))
    if t is not None:
        if t is INT64 and not INT64_MIN <= value <= INT64_MAX:
            raise TypingError(f"integer {value} does not fit in int64")
        return t
    if isinstance(value, np.ndarray):
        return _array_type(value)
    if type(value) is str:      # an option (`activation="tanh"`): a constant of the signature
        return CONSTANT_TYPE[0](value)
    if isinstance(value, OBJECT_CLASSES):
        return ObjectT(type(value))
    opaque = getattr(type(value), "__jit_type__", None)
    if isinstance(opaque, OpaqueT):
        return opaque
    record = _record_type(value)
    if record is not None:
        return record
    if isinstance(value, tuple):
        return TupleT(tuple(_entry_type(v) for v in value))
    if type(value) is list:
        return ListT(tuple(_entry_type(v) for v in value))
    if type(value) is dict and all(type(k) is str for k in value):
        return DictT(tuple(_entry_type(v) for v in value.values()), tuple(value))
    if isinstance(value, pytypes.FunctionType) and value.__closure__:
        if hasattr(value, "__zygopy_transform__"):
            raise TypingError(f"{value.__qualname__} is a transformed function held as a "
                              f"value (captured by a closure or passed as an argument), "
                              f"which is not compiled yet; read it as a global")
        return _closure_type(value)
    if type(value) is functools.partial:
        template = partial_template(value)
        if template is not None:
            return PartialT(template, tuple(typeof(a) for a in partial_captures(value)),
                            tuple(value.keywords))
    if callable(value):
        return FunctionT(value)
    if isinstance(value, (complex, np.complexfloating)):
        raise TypingError("complex numbers are not compiled by the JIT (they run in the "
                          "interpreter only)")
    raise TypingError(f"values of type {type(value).__name__} are not supported by the JIT"
                      f"{_register_hint(value)}")


CONSTANT_TYPE: list = []  # [the type of a constant operand], `jit.typing.infer.LiteralT`


def _record_type(value: Any) -> Optional[RecordT]:
    """The RecordT of a named tuple or a user object (`adjoint.pytrees`), or None.  An
    attribute of a type the JIT has no native form for (a string, a label) is a
    constant of the signature (`LiteralT`), so another value compiles anew."""
    if type(value) in _SIMPLE or isinstance(value, (np.ndarray, list, dict)) or (
            type(value) is tuple):
        return None
    from adjoint.pytrees import record_structure
    if callable(value) and not _called_by_its_class(value):
        return None
    parts = record_structure(value)
    if parts is None:
        return None
    keys, values, aux = parts
    typing = getattr(_TYPING, "records", None)
    if typing is None:
        typing = _TYPING.records = set()
    if id(value) in typing:
        raise TypingError(f"a {type(value).__name__} object that contains itself is not "
                          "supported by the JIT")
    typing.add(id(value))
    try:
        elems = tuple(_field_type(v) for v in values)
    finally:
        typing.discard(id(value))
    return RecordT(elems, keys, type(value), aux)


def _called_by_its_class(value: Any) -> bool:
    """A callable object whose class defines `__call__` in Python (a layer)."""
    call = getattr(type(value), "__call__", None)
    return isinstance(call, pytypes.FunctionType)


def _field_type(v: Any) -> Type:
    try:
        return typeof(v)
    except TypingError:
        if isinstance(v, (str, bytes, type(Ellipsis), slice, range)) or isinstance(v, type):
            return CONSTANT_TYPE[0](v)
        raise


def _entry_type(v: Any) -> Type:
    """The type of an entry of a tuple, list or dict: a str is a constant of the
    signature (`LiteralT`: an option passed along in `*args` or `**kwargs`, a label in
    a tuple), as an object's str attribute is; another string compiles anew."""
    return CONSTANT_TYPE[0](v) if type(v) is str else typeof(v)


def _register_hint(value: Any) -> str:
    if isinstance(value, (str, bytes, complex, set, frozenset)) or isinstance(
            value, pytypes.ModuleType):
        return ""
    from adjoint.pytrees import REGISTER_HINT
    return f" ({REGISTER_HINT})"


_TYPING = threading.local()    # .cells: the closures whose cells this thread is typing;
#                                 .records: ids of the objects it is typing (a cycle is refused)


def _closure_type(f: pytypes.FunctionType) -> Type:
    """The type of a closure value: its code's template and its cells' types (the
    last answer for `f` when nothing it depends on has changed: `_ClosureMemo`)."""
    memo = _CLOSURE_MEMO.get(f)
    if memo is not None and memo.holds(f):
        return memo.type
    typing = getattr(_TYPING, "cells", None)
    if typing is None:
        typing = _TYPING.cells = []
    if any(g is f for g in typing):
        raise TypingError(f"{f.__qualname__} captures itself (a recursive inner function "
                          "returned by its enclosing function): not supported by the JIT")
    typing.append(f)
    try:
        contents = tuple(c.cell_contents for c in f.__closure__)
        cells = tuple(map(typeof, contents))
    except ValueError:  # an empty cell: the nested function as a constant
        return FunctionT(f)
    finally:
        typing.pop()
    t = ClosureT(closure_key(f), cells)
    _CLOSURE_MEMO[f] = _ClosureMemo(f, contents, t)
    return t


class _ClosureMemo:
    """A closure's type with what it was computed from, so that a closure called again
    is not typed anew (typing every captured value costs more than a small compiled
    call).  It holds while the function's attributes are the same objects and the
    `_content_key` of each cell's value (whatever object it holds now) is the same."""

    __slots__ = ("attrs", "code", "defaults", "keys", "kwdefaults", "rule", "type")

    def __init__(self, f, contents: tuple, t: Type) -> None:
        from adjoint.rule_table import CALL_RULES, lookup_callee
        _RULES[:] = [CALL_RULES]
        self.code, self.defaults, self.kwdefaults = f.__code__, f.__defaults__, \
            f.__kwdefaults__
        self.attrs, self.rule, self.type = tuple(f.__dict__.items()), CALL_RULES.get(f), t
        self.keys = tuple(_content_key(v) for v in contents)
        if any(k is None for k in self.keys) or lookup_callee(f) is not self.rule:
            self.keys = None    # (a rule found elsewhere than the table of callees)

    def holds(self, f) -> bool:
        keys = self.keys
        if keys is None or f.__code__ is not self.code or f.__defaults__ is not self.defaults \
                or f.__kwdefaults__ is not self.kwdefaults \
                or (f.__dict__ or self.attrs) and not _same_attributes(f, self.attrs) \
                or _RULES[0].get(f) is not self.rule:
            return False
        try:
            for cell, k in zip(f.__closure__, keys):
                now = _content_key(cell.cell_contents)
                if now is not k and now != k:
                    return False
        except ValueError:      # a cell emptied since
            return False
        return True


_RULES: list = []    # [adjoint's table of derivative rules by callee], once a memo is made


def _same_attributes(f, attrs: tuple) -> bool:
    """Does `f` have the attributes (markers, a transform) `attrs`, the same objects?"""
    d = f.__dict__
    return len(d) == len(attrs) and all(k in d and d[k] is v for k, v in attrs)


_BY_VALUE_TYPE = (float, bool, type(None), np.float64, np.int64, np.bool_)
_BY_IDENTITY = (np.ufunc, pytypes.BuiltinFunctionType)


def _content_key(v: Any) -> Any:
    """A cheap key that determines `typeof(v)` (equal keys, equal types), or None
    where there is none: a number by its Python type, a str by its value (it is a
    constant of the signature), an array by dtype and rank, a tuple or list by its
    entries' keys, a plain function, ufunc or builtin by identity, a nested closure by
    its own type.  Dicts and other objects are not keyed (typed anew every call)."""
    tv = type(v)
    if tv in _BY_VALUE_TYPE or tv in OBJECT_CLASSES:
        return tv
    if tv is int:
        return int if INT64_MIN <= v <= INT64_MAX else None
    if tv is str:
        return ("str", v)
    if tv is np.ndarray:
        return (v.dtype, v.ndim)
    if tv is pytypes.FunctionType:
        if not v.__closure__:
            return ("fn", v)
        return None if hasattr(v, "__zygopy_transform__") else _closure_type(v)
    if tv is tuple or tv is list:
        keys = tuple(map(_content_key, v))
        return None if any(k is None for k in keys) else (tv, keys)
    if tv in _BY_IDENTITY:
        return ("fn", v)
    return None


_CLOSURE_MEMO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def closure_key(f: pytypes.FunctionType) -> Any:
    """The function a closure's type names: the template of its code (shared by every
    closure of that code, `lowering.api.template_of`), so that a closure made anew
    reuses the code compiled for an earlier one with captured values of the same types
    (they are passed, never baked in).  A closure that differs from its code in more
    than its cells keeps its own identity: one with defaults (compiled calls bind
    them as constants), attributes, or a derivative rule of its own."""
    from adjoint.rules import lookup_callee
    from lowering.api import template_of
    from lowering.closures import CELLS_ATTR, SELF_ATTR
    if f.__defaults__ or f.__kwdefaults__ or set(f.__dict__) - {CELLS_ATTR, SELF_ATTR}:
        return f
    if lookup_callee(f) is not None:
        return f
    return template_of(f)


def _array_type(a: np.ndarray) -> ArrayT:
    dt = _DTYPES.get(a.dtype)
    if dt is None or not 1 <= a.ndim <= MAX_NDIM:
        raise TypingError(f"arrays of dtype {a.dtype} with {a.ndim} dimensions are not "
                          f"supported by the JIT (float64/float32/int64/int32/bool, 1-D to "
                          f"{MAX_NDIM}-D){_complex_note(a.dtype)}")
    return ArrayT(dt, a.ndim)


def _complex_note(dtype: np.dtype) -> str:
    return "; complex numbers run in the interpreter only" if dtype.kind == "c" else ""


MAX_NDIM = 8    # arrays of 3 or more dimensions: see jit.library.registry (ranks)


_SIMPLE = {
    bool: BOOL, int: INT64, float: FLOAT64, type(None): NONE,
    np.float64: FLOAT64, np.int64: INT64, np.bool_: BOOL,
    np.float32: FLOAT32, np.int32: INT32,
}
