"""Small run-time helpers that lowered code calls (the interpreter calls them as
ordinary Python functions; the JIT may implement them natively)."""
from __future__ import annotations

import itertools

import builtins
import operator

from ssair.ir import Const


class _Unbound:
    """The value of a local variable read before any assignment reaches it."""

    __zygopy_symbol__ = "lowering.runtime.UNBOUND"

    def __repr__(self) -> str:
        return "UNBOUND"


UNBOUND = _Unbound()


class GlobalRef:
    """A global name that the program itself rebinds (`global n; n += 1`, anywhere in
    its module): lowered code reads and writes it when the statement runs, as CPython
    does, instead of taking its value as a constant (`lowering.guards.rebound_globals`)."""

    __slots__ = ("namespace", "name", "__zygopy_symbol__")

    def __init__(self, namespace: dict, name: str) -> None:
        self.namespace = namespace
        self.name = name
        self.__zygopy_symbol__ = f"<global {namespace.get('__name__', '?')}.{name}>"

    def __eq__(self, other) -> bool:
        return type(other) is GlobalRef and other.namespace is self.namespace \
            and other.name == self.name

    def __hash__(self) -> int:
        return hash((id(self.namespace), self.name))


def read_global(ref: GlobalRef):
    """The value `ref` names now (its module's, else a builtin), or CPython's NameError."""
    try:
        return ref.namespace[ref.name]
    except KeyError:
        pass
    b = ref.namespace.get("__builtins__", builtins)
    b = b if isinstance(b, dict) else vars(b)
    if ref.name in b:
        return b[ref.name]
    raise NameError(f"name {ref.name!r} is not defined")


class EntryRef:
    """An entry `d[key]` of a dict held by a global that some code of the program may
    write into while it runs (`lowering.guards.sealed_dict` cannot rule it out):
    lowered code reads the entry when the statement runs (`read_entry`) instead of
    taking its value as a constant."""

    __slots__ = ("mapping", "key", "__zygopy_symbol__")

    def __init__(self, mapping: dict, key) -> None:
        self.mapping = mapping
        self.key = key
        self.__zygopy_symbol__ = f"<entry {key!r} of a global dict>"

    def __eq__(self, other) -> bool:
        return type(other) is EntryRef and other.mapping is self.mapping \
            and other.key == self.key

    def __hash__(self) -> int:
        return hash((id(self.mapping), self.key))


def read_entry(ref: EntryRef):
    """`d[key]` now (CPython's KeyError if the entry was removed)."""
    return ref.mapping[ref.key]


def write_global(ref: GlobalRef, value) -> None:
    """`global name; name = value`."""
    ref.namespace[ref.name] = value


def range_step(step):
    """`range`'s check of a dynamic step: an integer (via __index__), never zero."""
    step = operator.index(step)
    if step == 0:
        raise ValueError("range() arg 3 must not be zero")
    return step


def check_star_length(n: int, before: int, after: int) -> None:
    """CPython's ValueError of `a, *b, c = seq` when `seq` has fewer than `before +
    after` items (`n`)."""
    if n < before + after:
        raise ValueError(f"not enough values to unpack (expected at least "
                         f"{before + after}, got {n})")


def call_unpacked(f, args, kwargs=None):
    """`f(*args, **kwargs)` where the lowering does not know the items of `args` or
    the keys of `kwargs` (the JIT types it as the plain call they make)."""
    return f(*args, **kwargs) if kwargs is not None else f(*args)


def merged(*parts) -> dict:
    """`{**a, **b, ...}`: a new dict of the parts' entries in order, a later part's
    value winning for a key two parts share (the lowering passes the `k: v` runs of
    a display as dicts of their own)."""
    out: dict = {}
    for p in parts:
        if not hasattr(p, "keys"):
            raise TypeError(f"'{type(p).__name__}' object is not a mapping")
        out.update(p)
    return out


def keywords(*parts) -> dict:
    """The keyword arguments of `f(k=v, **d, ...)`: like `merged`, with CPython's
    TypeError for a key given twice or a key that is not a string."""
    out: dict = {}
    for p in parts:
        if not hasattr(p, "keys"):
            raise TypeError(f"argument after ** must be a mapping, not {type(p).__name__}")
        names = p.keys()            # what CPython's `**p` reads, then p[k]
        for k in names:
            if type(k) is not str:
                raise TypeError("keywords must be strings")
            if k in out:
                raise TypeError(f"got multiple values for keyword argument {k!r}")
            out[k] = p[k]
    return out


def with_entry(d: dict, key, value) -> dict:
    """A dict comprehension's step: `d` (the comprehension's own dict, read by
    nothing else) with `key` set to `value`."""
    d[key] = value
    return d


def with_member(s: set, value) -> set:
    """A set comprehension's step: `s` (read by nothing else) with `value` added."""
    s.add(value)
    return s


def formatted(template: str, *values) -> str:
    """An f-string: `template.format(*values)` (see `lowering.ops_format`)."""
    return template.format(*values)


def shortest(seqs) -> int:
    """The number of items of `zip(*seqs)` (the shortest sequence's length)."""
    return min((len(s) for s in seqs), default=0)


_KEYED = (dict, set, frozenset, type({}.keys()), type({}.values()), type({}.items()))


def loop_items(v):
    """What `for x in v` reads by position: a dict's keys, a set's items or a dict
    view's entries as a tuple, in CPython's iteration order; the items of a finite
    iterator (`itertools.product(...)`, `zip`, `reversed`, `map`) as a tuple, drawn
    before the loop runs; any other value (an array, a list, a tuple, a string) as it
    is; an iterator of no length (`itertools.count()`, a generator) is refused.  Every
    loop over a sequence reads its sequence through this (the JIT rewrites it away by
    type)."""
    if isinstance(v, _KEYED) or type(v) in _FINITE_ITERATORS:
        return tuple(v)
    if hasattr(type(v), "__next__") and not hasattr(type(v), "__len__"):
        raise TypeError(f"zygopy: a for loop over a {type(v).__name__} iterator (no length: "
                        "lazy or endless) is not supported; loop over a list of its items")
    return v


# iterators that end when their (finite) inputs do, drawn before the loop runs (`map`
# and `filter` call their function then, not between the loop's steps: the same values
# for a function without effects); `itertools.count`, `cycle`, `repeat` are refused
_FINITE_ITERATORS = frozenset(
    getattr(itertools, name) for name in ("product", "permutations", "combinations",
                                          "combinations_with_replacement", "chain",
                                          "pairwise", "zip_longest", "islice", "compress")
    if hasattr(itertools, name)) | {zip, reversed, enumerate, map, filter}


def keys_of(v) -> bool:
    """Is `loop_items(v)` a dict's keys or a set's items (values without a derivative,
    whatever the dict's values are)?"""
    return isinstance(v, (dict, set, frozenset))


def column(seqs, i) -> tuple:
    """Item `i` of `zip(*seqs)`."""
    return tuple(s[i] for s in seqs)


def unbound_local(name: str):
    """Raise what CPython raises when a local is read before assignment."""
    raise UnboundLocalError(
        f"cannot access local variable {name!r} where it is not associated with a value")


def missing_name(kind: type, message: str):
    """Raise what CPython raises reading a global that is not defined (NameError) or a
    module attribute that does not exist (AttributeError).  The lowering finds the name
    missing; the error is raised only where the read runs."""
    raise kind(message)


def raised_by_missing_name(block) -> bool:
    """Does IR `block` end in the `raise` of a `missing_name` call's result (the
    lowering's `raise_when_run`)?  That call raises itself, so the `raise` never runs."""
    last = block.stmts[-1] if block.stmts else None
    return (last is not None and last.op == "call" and isinstance(last.args[0], Const)
            and last.args[0].value is missing_name and block.term.value == last.var)


def check_bound(value, name: str, bound: bool = True):
    """`value`, unless it is UNBOUND (a path on which local `name` was never assigned).
    `bound` is the flag compiled code keeps beside such a value (`jit.unbound`)."""
    if value is UNBOUND or not bound:
        unbound_local(name)
    return value


def exception_matches(exc, kinds) -> bool:
    """`except kinds:` for the exception (or exception class) `exc`, with CPython's
    TypeError when `kinds` holds something that is not an exception class."""
    for k in kinds if isinstance(kinds, tuple) else (kinds,):
        if not (isinstance(k, type) and issubclass(k, BaseException)):
            raise TypeError("catching classes that do not inherit from BaseException "
                            "is not allowed")
    return issubclass(exc if isinstance(exc, type) else type(exc), kinds)


def _instance(x):
    """An exception class is raised as its instance, `raise E` as `raise E()`."""
    return x() if isinstance(x, type) and issubclass(x, BaseException) else x


def raise_from(exc, cause):
    """The exception `raise exc from cause` raises (classes are instantiated)."""
    exc, cause = _instance(exc), _instance(cause)
    if not isinstance(exc, BaseException):
        raise TypeError("exceptions must derive from BaseException")
    if cause is not None and not isinstance(cause, BaseException):
        raise TypeError("exception causes must derive from BaseException")
    exc.__cause__ = cause
    return exc


check_bound.__zygopy_explain__ = (
    lambda value, name, bound=True: f"reading local variable {name!r}, which some path leaves unassigned")
missing_name.__zygopy_explain__ = lambda kind, message: f"reading a missing name ({message})"
merged.__zygopy_explain__ = lambda *parts: "a dict display with **"
formatted.__zygopy_explain__ = lambda template, *values: "an f-string"
keywords.__zygopy_explain__ = lambda *parts: "keyword arguments passed with **"
with_entry.__zygopy_explain__ = lambda d, key, value: \
    "a dict entry store (d[k] = v, or a dict comprehension)"
with_member.__zygopy_explain__ = lambda s, value: "a set comprehension"
unbound_local.__zygopy_explain__ = (
    lambda name: f"reading local variable {name!r} before it is assigned")


call_unpacked.__zygopy_symbol__ = "lowering.runtime.call_unpacked"
shortest.__zygopy_symbol__ = "lowering.runtime.shortest"
column.__zygopy_symbol__ = "lowering.runtime.column"
merged.__zygopy_symbol__ = "lowering.runtime.merged"
formatted.__zygopy_symbol__ = "lowering.runtime.formatted"
keywords.__zygopy_symbol__ = "lowering.runtime.keywords"
with_entry.__zygopy_symbol__ = "lowering.runtime.with_entry"
with_member.__zygopy_symbol__ = "lowering.runtime.with_member"
loop_items.__zygopy_symbol__ = "lowering.runtime.loop_items"
check_bound.__zygopy_symbol__ = "lowering.runtime.check_bound"
check_star_length.__zygopy_symbol__ = "lowering.runtime.check_star_length"
check_star_length.__zygopy_explain__ = lambda *_: "the check of a starred unpacking's length"
range_step.__zygopy_symbol__ = "lowering.runtime.range_step"
unbound_local.__zygopy_symbol__ = "lowering.runtime.unbound_local"
missing_name.__zygopy_symbol__ = "lowering.runtime.missing_name"
exception_matches.__zygopy_symbol__ = "lowering.runtime.exception_matches"
raise_from.__zygopy_symbol__ = "lowering.runtime.raise_from"


class SuperSite:
    """What lowering resolved `super(cls, receiver).name` to: the base class `owner`
    found after `cls` on `cls.__mro__` (`lowering.super_calls`)."""

    __slots__ = ("__zygopy_symbol__", "cls", "name", "owner")

    def __init__(self, cls: type, name: str, owner: type) -> None:
        self.cls, self.name, self.owner = cls, name, owner
        self.__zygopy_symbol__ = f"<super({cls.__qualname__}).{name}>"

    def __eq__(self, other) -> bool:
        return type(other) is SuperSite and (other.cls, other.name, other.owner) == (
            self.cls, self.name, self.owner)

    def __hash__(self) -> int:
        return hash((id(self.cls), self.name, id(self.owner)))

    def mismatch(self, receiver_cls: type):
        """None when `super(cls, x).name`, for an `x` of class `receiver_cls`, finds the
        attribute on `owner` as lowering did; else what goes wrong, in words."""
        if not issubclass(receiver_cls, self.cls):
            return (f"super({self.cls.__qualname__}, obj): obj is a "
                    f"{receiver_cls.__qualname__}, not an instance of {self.cls.__qualname__}")
        mro = receiver_cls.__mro__
        for c in mro[mro.index(self.cls) + 1:]:
            if self.name in vars(c):
                if c is self.owner:
                    return None
                break
        return (f"super().{self.name} in a method of {self.cls.__qualname__}: for a "
                f"{receiver_cls.__qualname__} it is not {self.owner.__qualname__}'s (multiple "
                f"inheritance puts another class first); compiled code does not follow "
                f"that, call the base class's function with `self` instead")


def check_super(receiver, site: SuperSite) -> None:
    """Raise TypeError where `super(site.cls, receiver).name` is not what lowering
    resolved it to (the receiver's class orders its bases otherwise)."""
    problem = site.mismatch(type(receiver))
    if problem is not None:
        raise TypeError(problem)


check_super.__zygopy_symbol__ = "lowering.runtime.check_super"
