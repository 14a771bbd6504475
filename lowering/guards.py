"""Globals are live: what compiled code specialised on, and the check that it still holds.

Lowering reads a function's globals (and the attributes of user modules it reads
through them) once and puts their values into the IR as constants; every cache above
(the J transform, forward mode, the JIT's tables and dispatchers) keys on the function
or its IR.  `guard_of(f)` lists what those values came from: `(namespace dict, name,
value)` for each global name the bytecode of `f` (and of the functions nested in it)
loads, for each attribute of a user module read through such a global, and the same,
transitively, for every Python function reached that way (a helper, a closure cell).
`holds(guard)` is true while every name is still bound to the same object (CPython has
no version counter for a dict, so identity); an unbound name is recorded as `MISSING`.
A closure reached through a global is a constant too, captured values included: its
cells are entries of their own (`CellView`), so a `nonlocal` rebinding counts as a
rebound global.  The entries of a code object's globals are recorded once per (code,
globals) (`code_guard`): every function of that code shares one lowering and its
compiled code (`lowering.api.shared_ir`), so a closure made after a rebinding is
checked against the values that code was built with.

When a guard fails, `invalidate()` drops every cache derived from a lowering (each
layer registers its own with `on_invalidate`), and the next call lowers and compiles
the function again with the new values.  An array mutated in place keeps its identity:
compiled and interpreted code read its memory as it is now.
"""
from __future__ import annotations

import dis
import sys
import sysconfig
import types
import weakref

import numpy as np

MISSING = object()     # the value recorded for a name that was not bound

_GUARDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # f -> guard tuple
_CODE_GUARDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # see code_guard
_HOOKS: list = []      # callables that drop the caches of one layer
_BY_CALLABLE: dict = {}   # function without cells -> its guard: the entry points' lookup
_BY_CALLABLE_MAX = 4096   # (a plain dict, faster than a weak one; emptied when full)
_LOADS = {"LOAD_GLOBAL", "LOAD_NAME"}
_ATTRS = {"LOAD_ATTR", "LOAD_METHOD"}


def on_invalidate(hook) -> None:
    """Make `invalidate()` call `hook()` (a layer's cache clearing)."""
    _HOOKS.append(hook)


def invalidate() -> None:
    """Drop every cache that holds code derived from a lowering (a global was rebound,
    or `adjoint.clear_cache()`)."""
    _GUARDS.clear()
    _CODE_GUARDS.clear()
    _REBOUND.clear()
    _BY_CALLABLE.clear()
    BAKED.clear()
    _BAKED_KEYS.clear()
    for hook in _HOOKS:
        hook()


def holds(guard: tuple) -> bool:
    """True while every `(namespace, name, value)` of `guard` is still bound so."""
    for d, n, v in guard:
        if d.get(n, MISSING) is not v:
            return False
    return True


def check(f, args: tuple = ()) -> None:
    """Invalidate every cache if a global that `f`, a function among `args` (compiled
    code specialises on a function argument too) or a function they reach read has
    been rebound since it was lowered, or a class constant compiled code holds
    (`BAKED`) has."""
    if not fresh(f) or not holds(BAKED):
        invalidate()
        return
    for a in args:
        if callable(a) and not fresh(a):
            invalidate()
            return
    for fn in _methods_of_objects(args):   # compiled code calls an object's methods too
        if not fresh(fn):
            invalidate()
            return


_METHODS: dict = {}    # user class -> the Python functions it defines (methods, properties)


# Class-level numbers and strings compiled code holds as constants (`self.eps` read
# through an object: `jit.library.records`), as `(class dict, name, value)` for every
# class on the object's MRO: every entry point checks them (`check`, and `jit.jit`'s
# own), since compiled code is shared between entry points.  Emptied (in place) by
# `invalidate`, when that code is dropped.
BAKED: list = []
_BAKED_KEYS: set = set()


def bake_class_constant(cls: type, name: str) -> None:
    """Record that compiled code holds `name` of `cls` as read now (above)."""
    for c in cls.__mro__:
        d = vars(c)
        if (id(c), name) not in _BAKED_KEYS:
            _BAKED_KEYS.add((id(c), name))
            BAKED.append((d, name, d.get(name, MISSING)))


def _methods_of_objects(args: tuple) -> list:
    """The functions the classes of the user objects among `args` (and their nested
    objects) define."""
    classes: dict = {}
    seen: set = set()
    for a in args:
        _object_classes(a, classes, seen, 0)
    return [fn for cls in classes for fn in _class_functions(cls)]


def user_class(cls: type) -> bool:
    """A class defined in the user's code (not a library's)."""
    return _user_class(cls)


def _object_classes(value, classes: dict, seen: set, depth: int) -> None:
    if isinstance(value, (tuple, list)) and depth <= _OBJECT_DEPTH:
        for v in value:
            _object_classes(v, classes, seen, depth + 1)
        return
    d = _instance_dict(value)
    if d is None or id(value) in seen or depth > _OBJECT_DEPTH:
        return
    seen.add(id(value))
    classes[type(value)] = True
    for v in d.values():
        _object_classes(v, classes, seen, depth + 1)


def _class_functions(cls: type) -> tuple:
    hit = _METHODS.get(cls)
    if hit is None:
        fns = []
        for c in cls.__mro__:
            for v in vars(c).values():
                v = getattr(v, "fget", None) or getattr(v, "__func__", v)
                if type(v) is types.FunctionType and not library_function(v):
                    fns.append(v)
        hit = _METHODS[cls] = tuple(fns)
    return hit


def fresh(fn) -> bool:
    """True while every global the callable `fn` reaches is bound as when it was
    first asked (by an entry point, or lowered)."""
    g = _BY_CALLABLE.get(fn) if type(fn) is types.FunctionType else None
    if g is None:
        target = target_of(fn)
        g = guard_of(target) if target is not None else ()
        if type(fn) is types.FunctionType and fn.__closure__ is None:
            if len(_BY_CALLABLE) >= _BY_CALLABLE_MAX:   # (a closure is not kept alive
                _BY_CALLABLE.clear()                    # here: it may hold big values)
            _BY_CALLABLE[fn] = g
    for d, n, v in g:
        if d.get(n, MISSING) is not v:
            return False
    return True


def target_of(f):
    """The Python function whose globals `f` reads (a bound method's function, a
    partial's, a `jit.jit` wrapper's), or None."""
    for _ in range(8):
        if type(f) is types.FunctionType:
            inner = getattr(f, "__zygopy_function__", None)
            return inner if type(inner) is types.FunctionType else f
        nxt = getattr(f, "__func__", None) or getattr(f, "func", None)
        if nxt is None:
            return None
        f = nxt
    return None


def guard_of(f) -> tuple:
    """The guard of Python function `f` (cached until `invalidate()`)."""
    try:
        g = _GUARDS.get(f)
    except TypeError:
        return ()
    if g is None:
        entries: dict = {}
        _collect(f, entries, set())
        g = tuple(entries.values())
        try:
            _GUARDS[f] = g
        except TypeError:
            pass
    return g


def _collect(f, entries: dict, seen: set, recorded: bool = True) -> None:
    """Add the entries of `f` and of the functions it reaches to `entries`: those of
    its code (as `code_guard` recorded them, or as they are now when not
    `recorded`), then those of the functions in its closure cells."""
    if id(f) in seen or type(f) is not types.FunctionType or library_function(f):
        return
    seen.add(id(f))
    if recorded:
        for key, entry in code_guard(f):
            entries.setdefault(key, entry)
    else:
        _code_entries(f, entries, seen)
        _cell_entries(f, entries)
    for inner in _super_entries(f, entries):
        _collect(inner, entries, seen, recorded)
    for c in f.__closure__ or ():
        try:
            inner = target_of(c.cell_contents)
        except ValueError:
            continue
        if inner is not None:
            _collect(inner, entries, seen, recorded)


def _super_entries(f, entries: dict) -> list:
    """Entries for what `super()` in method `f` was resolved on when lowering
    (`lowering.super_calls`): each name `f`'s code reads, in the namespace of each
    user class after `f`'s class on its MRO (a base class's method rebound, or one
    defined anew in a class between, compiles again).  Returns the functions found
    there, whose own globals are guarded in turn."""
    cls = _class_of_method(f)
    if cls is None:
        return []
    found = []
    for c in cls.__mro__[1:]:
        if not _user_class(c):
            continue
        d = vars(c)
        for name in f.__code__.co_names:
            value = d.get(name, MISSING)
            entries.setdefault((id(c), name), (d, name, value))
            value = getattr(value, "fget", None) or getattr(value, "__func__", value)
            if type(value) is types.FunctionType:
                found.append(value)
    return found


def _class_of_method(f):
    """The class in `f`'s `__class__` cell (a method that may call `super()`), or None."""
    names = f.__code__.co_freevars
    if "__class__" not in names or not f.__closure__:
        return None
    try:
        value = f.__closure__[names.index("__class__")].cell_contents
    except ValueError:
        return None
    return value if isinstance(value, type) else None


class CellView:
    """A closure cell seen as a namespace of one name, so that a guard entry
    `(CellView(cell), "cell", value)` holds while the cell still holds `value`."""

    __slots__ = ("cell",)

    def __init__(self, cell) -> None:
        self.cell = cell

    def get(self, _name: str, default=None):
        try:
            return self.cell.cell_contents
        except ValueError:
            return default


def _cell_entries(f, entries: dict) -> None:
    """Entries for the cells of a closure reached through a global: lowering takes the
    closure as a constant and compiled code its captured values with it, so a cell
    rebound afterwards (`nonlocal`) must rebuild them, as a rebound global does.  (The
    cells of a function passed to `pullback` or `jit` are arguments: not guarded.)"""
    for c in f.__closure__ or ():
        try:
            value = c.cell_contents
        except ValueError:
            value = MISSING
        entries.setdefault((id(c), "cell"), (CellView(c), "cell", value))


def code_guard(f) -> tuple:
    """((key, entry), ...) for the globals the code of `f` reads in `f.__globals__`,
    and, transitively, for the functions those globals hold: recorded the first time
    a function of this code and globals is asked (until `invalidate()`).  Functions
    made anew from one code object share one lowering and compiled code (see
    `lowering.api.shared_ir`), so they share the values that code was built with: a
    closure made after a global was rebound still sees the rebinding."""
    code, g = f.__code__, f.__globals__
    per_code = _CODE_GUARDS.get(code)
    hit = per_code.get(id(g)) if per_code is not None else None
    if hit is not None and hit[0] is g:
        return hit[1]
    entries: dict = {}
    _code_entries(f, entries, {id(f)})
    out = tuple(entries.items())
    if per_code is None:
        per_code = _CODE_GUARDS[code] = {}
    per_code[id(g)] = (g, out)
    return out


def _code_entries(f, entries: dict, seen: set) -> None:
    """The entries of the globals `f`'s code reads now, and of the functions they hold."""
    g = f.__globals__
    reached = []
    rebound = rebound_globals(g)
    for name, chain in loads_of(f.__code__):
        value = g.get(name, MISSING)
        if name in rebound and (value is MISSING or read_live(value)):
            # read when it runs while it holds data: rebinding it to data is no change
            entries.setdefault((id(g), name), (LiveKind(g), name, LiveKind(g).get(name, MISSING)))
            continue
        entries.setdefault((id(g), name), (g, name, value))
        reached.append(value)
        _attribute_entries(value, chain, entries, reached)
    for value in reached:
        inner = target_of(value) if value is not MISSING else None
        if inner is None and isinstance(value, type):    # a class it may construct
            inner = value.__init__ if type(value.__init__) is types.FunctionType else None
            _class_constants(value, entries)
        if inner is not None:
            _collect(inner, entries, seen, recorded=False)


_LOADS_OF: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_STORES_OF: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_REBOUND: dict = {}    # id(globals dict) -> (the dict, its length then, the names)


def rebound_globals(g: dict) -> frozenset:
    """The global names of module namespace `g` that a function of that module (or a
    method of one of its classes, or code nested in them) rebinds or deletes
    (`global n; n = ...`).  Lowering reads and writes those when they run
    (`lowering.runtime.GlobalRef`) rather than as constants, and guards skip them:
    a counter bumped on every call must not recompile every call.  Cached while the
    namespace keeps its length (a function defined later is a new name; a redefined
    one is a rebound global, which `invalidate()`s)."""
    hit = _REBOUND.get(id(g))
    if hit is not None and hit[0] is g and hit[1] == len(g):
        return hit[2]
    names: set = set()
    for value in list(g.values()):
        for fn in _module_functions(value, g):
            names.update(_stores_of(fn.__code__))
    out = frozenset(names)
    _REBOUND[id(g)] = (g, len(g), out)
    return out


def _module_functions(value, g: dict) -> list:
    """`value` if it is a function of namespace `g`; a class's functions (methods,
    static and class methods, property accessors) if it is a class of that module."""
    if type(value) is types.FunctionType:
        return [value] if value.__globals__ is g else []
    if not isinstance(value, type) or value.__module__ != g.get("__name__"):
        return []
    out = []
    for v in vars(value).values():
        for fn in (getattr(v, "__func__", None), getattr(v, "fget", None),
                   getattr(v, "fset", None), v):
            if type(fn) is types.FunctionType and fn.__globals__ is g:
                out.append(fn)
    return out


LIVE = object()     # what `LiveKind.get` gives for a global read when it runs


def read_live(value) -> bool:
    """Is a rebound global holding `value` read when the statement runs (a number, a
    string, None, an array: what compiled code can take from Python at any time)?
    Any other value (a function, a class, a namespace, an object) stays a constant
    guarded by identity, as a global nothing rebinds."""
    return value is None or type(value) in (int, float, bool, str) \
        or isinstance(value, (np.ndarray, np.generic))


class LiveKind:
    """A namespace seen through `read_live`: `get(name)` is `LIVE` while the global
    holds data (so rebinding it to other data recompiles nothing), else the value
    itself (so a rebinding from or to a constant one recompiles)."""

    __slots__ = ("namespace",)

    def __init__(self, namespace: dict) -> None:
        self.namespace = namespace

    def get(self, name: str, default=None):
        value = self.namespace.get(name, MISSING)
        if value is MISSING:
            return default
        return LIVE if read_live(value) else value


def _stores_of(code: types.CodeType) -> frozenset:
    """The global names `code` (and the code nested in it) stores or deletes."""
    out = _STORES_OF.get(code)
    if out is None:
        out = _STORES_OF[code] = frozenset(
            ins.argval for c in _codes(code) if _GLOBAL_STORES & set(c.co_code[::2])
            for ins in dis.get_instructions(c)
            if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"))
    return out


# (every other byte of `co_code` is an opcode: a code without these stores none)
_GLOBAL_STORES = frozenset({dis.opmap["STORE_GLOBAL"], dis.opmap["DELETE_GLOBAL"]})


def loads_of(code: types.CodeType) -> tuple:
    """The global loads of `code` and of the code nested in it (cached per code
    object: a closure made anew per call is guarded without reading its bytecode)."""
    out = _LOADS_OF.get(code)
    if out is None:
        out = _LOADS_OF[code] = tuple(x for c in _codes(code) for x in _global_loads(c))
    return out


def _class_constants(cls: type, entries: dict) -> None:
    """Entries for the class-level numbers and strings of a user class a function
    reaches (its `__init__`, read as a record constructor, may read them through
    `self`: `lowering.constructors`)."""
    if not _user_class(cls):
        return
    mro = [c for c in cls.__mro__ if _user_class(c)]
    names = sorted({k for c in mro for k, v in list(vars(c).items())
                    if type(v) in (int, float, bool, str) and not k.startswith("__")})
    for c in mro:       # each class on the MRO, a name unbound there too (`MISSING`):
        d = vars(c)     # a subclass binding it later shadows its base's
        for k in names:
            entries.setdefault((id(c), k), (d, k, d.get(k, MISSING)))


def _attribute_entries(value, chain: tuple, entries: dict, reached: list) -> None:
    """Entries for what compiled code reads through the global `value`: along the
    attributes `chain` read from it, each attribute of a user module or of a user class
    (used as a namespace); every instance attribute of a user object (a
    `types.SimpleNamespace`, a dataclass), nested objects too, since compiled code holds
    such an object's attributes as constants wherever it is passed."""
    rest = chain
    for attr in chain:
        d = _namespace_dict(value)
        if d is None or attr not in d:
            break
        sub = d[attr]
        entries.setdefault((id(value), attr), (d, attr, sub))
        reached.append(sub)
        value = sub
        rest = rest[1:]
    _object_entries(value, entries, reached, set())
    _dict_entries(value, entries, reached)
    if not (rest and rest[0] in _LIST_WRITERS):
        # (a list the code only appends to, a log, is an object compiled code calls:
        # its items are not read as constants, and guarding them would recompile
        # after every call)
        _sequence_entries(value, entries, reached, set())


_LIST_WRITERS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort",
                           "reverse"})


_OBJECT_DEPTH = 4      # nested objects followed below a global
DICT_ENTRIES_MAX = 64  # a global dict guarded entry by entry (and so read as constants)


class KeysView:
    """A dict seen as a namespace of one name: `get` gives the key tuple recorded
    while the dict has exactly those keys (in that order), so that a guard entry
    `(KeysView(d, keys), "keys", keys)` holds until a key is added or removed."""

    __slots__ = ("mapping", "keys")

    def __init__(self, mapping: dict, keys: tuple) -> None:
        self.mapping, self.keys = mapping, keys

    def get(self, _name: str, default=None):
        m = self.mapping
        if len(m) == len(self.keys) and all(a == b for a, b in zip(m, self.keys)):
            return self.keys
        return default


def _dict_entries(value, entries: dict, reached: list, depth: int = 0) -> None:
    """Entries for a plain dict a function reads through a global (`CONFIG["l2"]`):
    each of its entries, and its keys, so that compiled code may read its entries as
    constants (`sealed_dict` says when that is sound within a call) and an entry
    changed between calls compiles anew.  Nested dicts are followed a little."""
    if type(value) is not dict or len(value) > DICT_ENTRIES_MAX or depth > 2:
        return
    keys = tuple(value)
    entries.setdefault((id(value), "keys"), (KeysView(value, keys), "keys", keys))
    # a dict the program only reads and writes at constant keys is read when it runs
    # (`read_entry`): a number bumped on every call (`STATS["n"] += 1`) must not
    # recompile every call.  Any other dict is guarded by identity, entry by entry.
    uses = dict_uses(value) if not depth else None
    live = uses is not None and "const store" in uses and uses <= {"const read", "const store"}
    view = EntryView(value) if live else value
    for k in keys:
        try:
            entries.setdefault((id(value), k), (view, k, view.get(k, MISSING)))
            v = value[k]
        except (KeyError, TypeError):
            continue
        reached.append(v)
        _dict_entries(v, entries, reached, depth + 1)
        _sequence_entries(v, entries, reached, set(), depth + 1)


class EntryView:
    """A dict written by the program, seen as `LiveKind` sees a namespace: `get(key)`
    is `LIVE` while the entry holds a number, a bool or None (compiled code reads it
    when it runs), else the value itself."""

    __slots__ = ("mapping",)

    def __init__(self, mapping: dict) -> None:
        self.mapping = mapping

    def get(self, key, default=None):
        value = self.mapping.get(key, MISSING)
        if value is MISSING:
            return default
        return LIVE if value is None or type(value) in (int, float, bool) else value


_READ_ATTRS = frozenset({"get", "keys", "values", "items", "copy", "__getitem__",
                         "__contains__"})
_KEY_LOADS = frozenset({"LOAD_FAST", "LOAD_DEREF", "LOAD_GLOBAL", "LOAD_NAME"})
_STORES = frozenset({"STORE_SUBSCR", "DELETE_SUBSCR", "COPY", "DUP_TOP_TWO"})
_USES_OF: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def sealed_dict(d: dict) -> bool:
    """May compiled code read the entries of dict `d`, bound to a global of a user
    module, as constants for the length of a call?  True when every load of a name
    bound to it, in every function of every user module (methods and nested code
    included), only reads it: `d[k]`, `d.get(...)`, `.keys()`, `.values()`,
    `.items()`, `.copy()`, `k in d`.  A store `d[k] = v`, `d[k] += v`, a method that
    writes (`update`, `pop`, ...), or the dict passed or bound anywhere else (where it
    may be written) answers False; so does a dict no module binds.  (Between calls
    the guard of each entry follows changes: `_dict_entries`.)"""
    uses = dict_uses(d)
    return uses is not None and uses <= {"const read", "read"}


def dict_uses(d: dict):
    """How the functions of the user's modules use the global names bound to dict
    `d` (`_uses`): a set of "const read" (`d["k"]`), "read" (another read-only
    use), "const store" (`d["k"] = v`, `+=`, `del`) and "other"; None when no user
    module binds `d`."""
    names: set = set()
    spaces = []
    for m in list(sys.modules.values()):
        if not isinstance(m, types.ModuleType) or m.__name__.partition(".")[0] in _OWN \
                or not (m.__name__ == "__main__" or user_module(m)):
            continue
        ns = vars(m)
        spaces.append(ns)
        names.update(k for k, v in list(ns.items()) if v is d)
    if not names:
        return None
    kinds: set = set()
    for ns in spaces:
        for value in list(ns.values()):
            for fn in _module_functions(value, ns) + _wrapped_functions(value, ns):
                for c in _codes(fn.__code__):
                    for name, k in _uses(c).items():
                        if name in names:
                            kinds |= k
    return frozenset(kinds)


def _wrapped_functions(value, g: dict) -> list:
    """The function of namespace `g` a module-level wrapper stands for (a `jit.jit`
    wrapper, a `functools.wraps` decorator's, a partial, a bound method)."""
    inner = getattr(value, "__wrapped__", None)
    if type(value) is types.FunctionType and type(inner) is not types.FunctionType:
        return []
    fn = inner if type(inner) is types.FunctionType else target_of(value)
    return [fn] if type(fn) is types.FunctionType and fn.__globals__ is g else []


def _uses(code: types.CodeType) -> dict:
    """{global or attribute name: the kinds of use `dict_uses` names} for the loads
    in `code` (cached per code object)."""
    out = _USES_OF.get(code)
    if out is None:
        ins = list(dis.get_instructions(code))
        found: dict = {}
        for i, x in enumerate(ins):
            if x.opname in _LOADS or x.opname in _ATTRS:
                found.setdefault(x.argval, set()).add(_use_kind(ins, i))
        out = _USES_OF[code] = {k: frozenset(v) for k, v in found.items()}
    return out


def _use_kind(ins: list, i: int) -> str:
    """What the instructions after load `ins[i]` do with the loaded value."""
    nxt = ins[i + 1].opname if i + 1 < len(ins) else ""
    after = ins[i + 2].opname if i + 2 < len(ins) else ""
    if nxt == "LOAD_CONST" and after == "BINARY_SUBSCR":
        return "const read"
    if nxt == "LOAD_CONST" and after in _STORES:
        return "const store"
    if nxt in _ATTRS and ins[i + 1].argval in _READ_ATTRS or nxt == "CONTAINS_OP" \
            or nxt in _KEY_LOADS and after == "BINARY_SUBSCR":
        return "read"
    return "other"


def _object_entries(value, entries: dict, reached: list, seen: set, depth: int = 0) -> None:
    d = _instance_dict(value)
    if d is None or id(value) in seen or depth > _OBJECT_DEPTH:
        return
    seen.add(id(value))
    for k, v in list(d.items()):
        entries.setdefault((id(value), k), (d, k, v))
        reached.append(v)
        _object_entries(v, entries, reached, seen, depth + 1)
        _sequence_entries(v, entries, reached, seen, depth + 1)


class ItemsView:
    """A list seen as a namespace of one name: `get` gives the item tuple recorded
    while the list holds exactly those objects, so that a guard entry
    `(ItemsView(lst, items), "items", items)` holds until an item is replaced, added
    or removed (compiled code holds a list read through a global as a constant)."""

    __slots__ = ("seq", "items")

    def __init__(self, seq: list, items: tuple) -> None:
        self.seq, self.items = seq, items

    def get(self, _name: str, default=None):
        seq, items = self.seq, self.items
        if len(seq) == len(items) and all(a is b for a, b in zip(seq, items)):
            return items
        return default


def _sequence_entries(value, entries: dict, reached: list, seen: set, depth: int = 0) -> None:
    """Entries for a list a function reads through a global (`LAYERS[0]`, `net.ws[1]`,
    `CONFIG["sizes"][2]`), and for the lists, dicts and objects inside it or inside a
    tuple: compiled code holds them as constants, and a list written in place keeps
    its identity, so its items are guarded one by one (`ItemsView`)."""
    if type(value) not in (list, tuple) or id(value) in seen or depth > _OBJECT_DEPTH:
        return
    seen.add(id(value))
    items = tuple(value)
    if type(value) is list:
        entries.setdefault((id(value), "items"), (ItemsView(value, items), "items", items))
    for v in items:
        if type(v) in (list, tuple):
            _sequence_entries(v, entries, reached, seen, depth + 1)
        elif type(v) is dict:
            _dict_entries(v, entries, reached, 1)
        elif _instance_dict(v) is not None:
            reached.append(v)
            _object_entries(v, entries, reached, seen, depth + 1)


def _namespace_dict(value):
    """The attribute dict compiled code reads a user module's, a user class's or a user
    object's attributes from (a class's is its live mapping proxy), or None."""
    if isinstance(value, types.ModuleType):
        return vars(value) if user_module(value) else None
    if isinstance(value, type):
        return vars(value) if _user_class(value) else None
    return _instance_dict(value)


def _instance_dict(value):
    """The `__dict__` of a `types.SimpleNamespace` or of an instance of a user class
    (not a function, class or module), or None."""
    if type(value) is types.SimpleNamespace:
        return vars(value)
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType,
                          types.BuiltinFunctionType)) or not _user_class(type(value)):
        return None
    d = getattr(value, "__dict__", None)
    return d if type(d) is dict else None


def _user_class(cls: type) -> bool:
    """A class defined in the user's own code (not zygopy's, a library's or a builtin)."""
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    if module is None or module.__name__.partition(".")[0] in _OWN:
        return False
    path = getattr(module, "__file__", None)
    return path is not None and not _in_library(path) or module.__name__ == "__main__"


def _codes(code: types.CodeType):
    """`code` and the code objects nested in it (inner functions, comprehensions)."""
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


def _global_loads(code: types.CodeType) -> list:
    """(global name, the attributes read from it next, in order) for each global load:
    `cfg.model.W` gives ("cfg", ("model", "W"))."""
    out, pending, chain = [], None, []
    for ins in dis.get_instructions(code):
        if ins.opname in _ATTRS and pending is not None:
            chain.append(ins.argval)
            continue
        if pending is not None:
            out.append((pending, tuple(chain)))
            pending, chain = None, []
        if ins.opname in _LOADS:
            pending = ins.argval
    if pending is not None:
        out.append((pending, tuple(chain)))
    return out


_LIB_DIRS: list = []


def _library_dirs() -> tuple:
    if not _LIB_DIRS:
        paths = sysconfig.get_paths()
        _LIB_DIRS.extend({paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")
                          if k in paths} | {sys.prefix, sys.base_prefix})
    return tuple(_LIB_DIRS)


def _in_library(filename: str) -> bool:
    return bool(filename) and filename.startswith(_library_dirs())


_OWN = {"adjoint", "jit", "lowering", "ssair", "zygopy"}


def library_function(f) -> bool:
    """A function of zygopy, the standard library or an installed package (not
    guarded: `gradient` called inside a loss is not the user's code)."""
    module = (getattr(f, "__module__", None) or "").partition(".")[0]
    return module in _OWN or _in_library(f.__code__.co_filename)


def user_module(m: types.ModuleType) -> bool:
    """A module of the user's own (its attributes are guarded; numpy's and math's are
    not: rebinding `np.sin` is not a case compiled code follows)."""
    path = getattr(m, "__file__", None)
    return path is not None and not _in_library(path)
