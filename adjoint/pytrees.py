"""Python objects as pytrees: dataclasses, named tuples and other user objects.

Inside the adjoint, the cotangent of an object is structural:

  * a named tuple's is a tuple, entry by entry (as for any tuple), so that `p[0]` and
    `p.w` add into the same place;
  * a dataclass's or another user object's is a dict from attribute name to that
    attribute's cotangent (`getattr`'s pullback, `attr_cotangent`).

At the API boundary (`finish`) the gradient takes the argument's own type: a named
tuple for a named tuple, a dataclass for a dataclass (fields that cannot be
differentiated are None; built without calling `__init__`, so frozen classes and
`__post_init__` checks are no obstacle), and a `types.SimpleNamespace` of attribute
gradients for any other user object.  An attribute computed by the class (a property)
is not differentiated: reading one that carries a gradient is refused with an error.

A class whose state is not its instance attributes (C extension types, `__getattr__`
proxies, caches kept in slots) is registered with `register_pytree_node(cls, flatten,
unflatten)`: `flatten(obj)` returns `(children, aux)`, `children` a dict from attribute
name to value (the attributes `obj.name` reads and the gradient holds), `aux` hashable
static data; `unflatten(aux, children)` rebuilds an object (the gradient is one, its
children the attributes' gradients).
"""
from __future__ import annotations

import dataclasses
import types
from typing import Any, Callable, Optional

import numpy as np

from lowering.constructors import RecordMaker
from ssair import Const, Var

# classes of these packages are zygopy's own or numpy's: never user records
_OWN_PACKAGES = ("ssair", "lowering", "adjoint", "jit", "numpy", "builtins")


_REGISTERED: dict = {}     # class -> (flatten, unflatten)
PULLBACK: list = []        # [adjoint.api.pullback], which fills it


def register_pytree_node(cls: type, flatten: Callable, unflatten: Callable) -> None:
    """Make instances of `cls` pytrees (see the module docstring): `flatten(obj) ->
    (children, aux)` with `children` a dict {attribute name: value}, `unflatten(aux,
    children) -> obj`.  Compiled code reads `obj.name` for each child."""
    if not isinstance(cls, type):
        raise TypeError(f"register_pytree_node: {cls!r} is not a class")
    _REGISTERED[cls] = (flatten, unflatten)


def is_registered_class(cls: Any) -> bool:
    return cls in _REGISTERED


def unflatten_registered(cls: type, aux: Any, children: dict) -> Any:
    """An instance of registered class `cls` from its static data and children."""
    return _REGISTERED[cls][1](aux, children)


def registered(x: Any) -> Any:
    """(flatten, unflatten) of `x`'s registered class, or None."""
    return _REGISTERED.get(type(x)) if _REGISTERED else None


def flatten_registered(x: Any) -> tuple:
    """(children as a dict, aux) of an instance of a registered class."""
    children, aux = registered(x)[0](x)
    if not isinstance(children, dict) or not all(type(k) is str for k in children):
        raise TypeError(f"the flatten function registered for {type(x).__name__} must "
                        f"return (a dict of attribute name to value, aux), not "
                        f"({type(children).__name__}, ...)")
    return children, aux


REGISTER_HINT = "register its class with adjoint.register_pytree_node(cls, flatten, unflatten)"


def is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_dataclass_instance(x: Any) -> bool:
    return _kind(type(x)) == "dataclass"


def is_user_object(x: Any) -> bool:
    """An instance of a user class with instance attributes: not a function, class or
    module, and not a subclass of a builtin value type (a float subclass is a float)."""
    return _kind(type(x)) == "object"


_KINDS: dict = {}     # class -> "dataclass", "object" (another user object) or None


def _kind(cls: type) -> Any:
    """What instances of `cls` are, as records (decided once per class)."""
    try:
        return _KINDS[cls]
    except KeyError:
        pass
    except TypeError:       # an unhashable class object: decided each time
        return _decide_kind(cls)
    kind = _KINDS[cls] = _decide_kind(cls)
    return kind


def _decide_kind(cls: type) -> Any:
    if issubclass(cls, type):
        return None
    if dataclasses.is_dataclass(cls):
        return "dataclass"
    if issubclass(cls, (types.ModuleType, types.FunctionType, types.MethodType,
                        types.BuiltinFunctionType, tuple, list, dict, set, frozenset,
                        int, float, complex, str, bytes, np.ndarray, np.generic)):
        return None
    module = (getattr(cls, "__module__", None) or "").split(".")[0]
    if module in _OWN_PACKAGES:
        return None
    has_dict = any("__dict__" in vars(c) for c in cls.__mro__ if c is not object)
    return "object" if has_dict or _slot_names(cls) else None


def is_record(x: Any) -> bool:
    """A dataclass instance, an instance of a registered class, or another user object
    (named tuples are tuples)."""
    return registered(x) is not None or is_dataclass_instance(x) or is_user_object(x)


def record_fields(x: Any) -> list:
    """(name, value) of the attributes that make up record `x`'s state."""
    if registered(x) is not None:
        return list(flatten_registered(x)[0].items())
    fields, slots = _class_layout(type(x))
    if fields is not None:      # a dataclass
        return [(n, getattr(x, n)) for n in fields if hasattr(x, n)]
    out = [(n, getattr(x, n)) for n in slots if hasattr(x, n)] if slots else []
    return out + list(getattr(x, "__dict__", {}).items())


_LAYOUTS: dict = {}     # class -> (dataclass field names or None, slot names)


def _class_layout(cls: type) -> tuple:
    """(a dataclass's field names, or None; the names of its slots), per class."""
    hit = _LAYOUTS.get(cls)
    if hit is None:
        fields = tuple(f.name for f in dataclasses.fields(cls)) \
            if dataclasses.is_dataclass(cls) else None
        hit = _LAYOUTS[cls] = (fields, tuple(_slot_names(cls)))
    return hit


def _slot_names(cls: type) -> list:
    names = []
    for c in cls.__mro__:
        slots = c.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else [
            n for n in slots if n not in ("__dict__", "__weakref__")]
    return names


def record_differentiable(x: Any, leaf: Callable, seen: set) -> bool:
    """Whether some attribute of record `x` is differentiable (`leaf` decides for the
    attribute values; `seen` breaks cycles of objects)."""
    if id(x) in seen:
        return False
    seen.add(id(x))
    try:
        return any(leaf(v) for _, v in record_fields(x))
    finally:
        seen.discard(id(x))


def copy_record(x: Any, copy: Callable) -> Any:
    """A copy of dataclass `x` whose fields are `copy(field)` (arrays copied, so that
    `f` may write into them); other user objects are passed as they are."""
    if not is_dataclass_instance(x):
        return x
    new = object.__new__(type(x))
    if hasattr(x, "__dict__"):
        object.__setattr__(new, "__dict__", dict(x.__dict__))
    for name, v in record_fields(x):
        object.__setattr__(new, name, copy(v))
    return new


def attr_cotangent(x: Any, name: str, dy: Any) -> Any:
    """The cotangent of object `x` when `x.name` has cotangent `dy`: a tuple with
    `dy` at the field's position for a named tuple, a dict `{name: dy}` for a record.
    Not a record, or a bound method: `dy` itself (a method's pullback returns the
    object's cotangent as its own).  None where `dy` is None."""
    if dy is None:
        return None
    if is_namedtuple(x) and name in type(x)._fields:
        out = [None] * len(x)
        out[type(x)._fields.index(name)] = dy
        return tuple(out)
    getter = _computing_function(x, name)
    if getter is not None:          # a property (of a named tuple too), a cached_property
        return property_cotangent(getter, x, dy)
    if not is_record(x):
        return dy
    value = getattr(x, name)
    if isinstance(value, types.MethodType) and value.__self__ is x:
        return dy
    if name not in dict(record_fields(x)):
        if _class_constant(_class_attribute(x, name)):
            return None     # shared by the class, not a part of `x`
        raise computed_attribute_error(type(x).__name__, name)
    return {name: dy}


_ABSENT = object()


def _class_attribute(x: Any, name: str) -> Any:
    import inspect
    return inspect.getattr_static(type(x), name, _ABSENT)


def _class_constant(found: Any) -> bool:
    """Whether a class defines `found` as plain data (`eps = 1e-8` in its body): a
    value no descriptor computes, which no instance holds."""
    return found is not _ABSENT and not hasattr(type(found), "__get__") and \
        not callable(found)


def _computing_function(x: Any, name: str) -> Optional[Callable]:
    """The Python function that x's class computes attribute `name` with (a property's
    getter, a `functools.cached_property`'s function, even once its value is cached
    in x), or None."""
    import functools
    found = _class_attribute(x, name)
    if isinstance(found, functools.cached_property):
        found = found.func
    else:
        found = getattr(found, "fget", None)
    return found if isinstance(found, types.FunctionType) else None


def property_cotangent(getter: Callable, x: Any, dy: Any) -> Any:
    """The cotangent of object `x` when its property (computed by `getter`) has
    cotangent `dy`: the getter's pullback, run again (in the interpreter) at `x`."""
    _, back = PULLBACK[0](getter, x, backend="interp")
    return as_cotangent(back(dy)[0])


def computed_attribute_error(cls_name: str, name: str) -> TypeError:
    """The error for a gradient through attribute `name` that a class computes."""
    return TypeError(
        f"the gradient of attribute {name!r} of a {cls_name} object is not "
        f"supported: it is computed by its class (a property or a class attribute), "
        f"not stored in the object; read the stored attributes it is made of instead, "
        f"or {REGISTER_HINT}")


def finish_record(g: Any, x: Any, finish: Callable) -> Any:
    """The gradient handed to the user for record `x` from its dict cotangent `g` (a
    compiled backend's: a tuple in `record_fields` order): a dataclass of the same
    class, the registered class's `unflatten`, or a `types.SimpleNamespace`."""
    fields = record_fields(x)
    if isinstance(g, tuple) and len(g) == len(fields):
        g = {name: part for (name, _), part in zip(fields, g)}
    elif type(g) is type(x) and is_record(g):    # (the form a nested gradient returns)
        g = dict(record_fields(g))
    parts = g if isinstance(g, dict) else {}
    grads = {name: finish(parts.get(name), v) for name, v in fields}
    if registered(x) is not None:
        return registered(x)[1](flatten_registered(x)[1], grads)
    if not is_dataclass_instance(x):
        return types.SimpleNamespace(**grads)
    new = object.__new__(type(x))
    for name, v in grads.items():
        object.__setattr__(new, name, v)
    return new


def as_cotangent(dy: Any) -> Any:
    """A cotangent given to `back` in the user's structure, as the adjoint holds it:
    dataclasses and namespaces (the form `finish` returns) become dicts of their
    attributes' cotangents, named tuples plain tuples, at any depth."""
    if isinstance(dy, (tuple, list)):
        out = [as_cotangent(v) for v in dy]
        return out if isinstance(dy, list) else tuple(out)
    if isinstance(dy, dict):
        return {k: as_cotangent(v) for k, v in dy.items()}
    if is_record(dy):
        return {name: as_cotangent(v) for name, v in record_fields(dy)}
    return dy


def constructor_fields(cls: Any) -> Any:
    """The fields that `cls(...)` takes, in order, when `cls` is a named tuple class, a
    dataclass whose generated `__init__` stores its arguments unchanged (no
    `__post_init__`) or the `lowering.constructors.RecordMaker` a plain class's
    `__init__` ends with; else None (such a call is differentiated, or refused, as any
    other callee)."""
    if isinstance(cls, RecordMaker):    # a plain class's __init__, read as a record
        return cls.fields
    if not isinstance(cls, type):
        return None
    if issubclass(cls, tuple) and hasattr(cls, "_fields") and \
            getattr(cls.__new__, "__code__", None) is not None and \
            cls.__new__.__code__.co_filename == "<string>":
        return tuple(cls._fields)
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        return None
    init = getattr(cls.__init__, "__code__", None)
    if init is None or init.co_filename != "<string>":    # the user's own __init__
        return None
    return tuple(f.name for f in dataclasses.fields(cls) if f.init)


def construct_pullback(fields: tuple) -> Callable:
    """The pullback of `cls(*args, **kw)` for a class whose constructor takes
    `fields`: each argument gets the cotangent of the field it fills (the cotangent
    of a record is a dict, of a named tuple a tuple)."""
    def d_construct(dy: Any, *args: Any, **kw: Any) -> tuple:
        if isinstance(dy, dict):
            parts = [dy.get(name) for name in fields]
        elif isinstance(dy, tuple):
            parts = list(dy) + [None] * (len(fields) - len(dy))
        else:
            parts = [getattr(dy, name, None) for name in fields]
        by_name = dict(zip(fields, parts))
        return tuple(parts[:len(args)]) + tuple(by_name.get(k) for k in kw)
    return d_construct


def construct_jvp(cls: type, fields: tuple) -> Callable:
    """The forward-mode rule of `cls(*args, **kw)` for a class whose constructor takes
    `fields`: the tangent of the object made is the tuple of its attributes' tangents
    (the form the IR holds an object's tangent in), each the tangent of the argument
    that fills it (a zero for one without)."""
    every = tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) \
        else fields
    defaults = {f.name: f.default for f in dataclasses.fields(cls)} \
        if dataclasses.is_dataclass(cls) else dict(getattr(cls, "_field_defaults", {}))

    def jvp(em: Any, s: Any, ts: list) -> Any:
        given = dict(zip(fields, zip(em.operands(s), ts)))
        for k, v in s.kwargs.items():
            given[k] = (v, em.tangents.get(v) if isinstance(v, Var) else None)
        parts = []
        for name in every:
            if name in given:
                value, t = given[name]
                parts.append(t if t is not None else em.zero(value))
            else:       # a default: a constant (a factory's value: None, its zero)
                default = defaults.get(name, dataclasses.MISSING)
                parts.append(Const(None) if default is dataclasses.MISSING
                             else em.zero(Const(default)))
        return em.op("tuple", *parts)
    return jvp


def refuse_shadowed_fields(value: Any, constant_names: frozenset, seen: Any = None) -> None:
    """Raise if an object inside `value` keeps a differentiable value under one of
    `constant_names` (`size`, `shape`, ...): the activity analysis reads those
    attributes as an array's constant shape, so its gradient would be a silent zero."""
    seen = set() if seen is None else seen
    if id(value) in seen or isinstance(value, (np.ndarray, str, bytes, int, float)):
        return
    seen.add(id(value))
    if isinstance(value, (tuple, list)):
        items = list(value)
        if is_namedtuple(value):
            _refuse_names(value, list(zip(type(value)._fields, value)), constant_names)
    elif isinstance(value, dict):
        items = list(value.values())
    elif is_record(value):
        fields = record_fields(value)
        _refuse_names(value, fields, constant_names)
        items = [v for _, v in fields]
    else:
        return
    for v in items:
        refuse_shadowed_fields(v, constant_names, seen)


def _refuse_names(obj: Any, fields: list, constant_names: frozenset) -> None:
    for name, v in fields:
        if name in constant_names and isinstance(v, (float, complex, np.ndarray)) and \
                not isinstance(v, bool):
            raise TypeError(
                f"the attribute {name!r} of a {type(obj).__name__} object cannot be "
                f"differentiated: zygopy reads `.{name}` as an array's constant shape "
                f"information; rename the attribute")


def build_record(cls: type, names: tuple, values: tuple, aux: Any = None) -> Any:
    """An object of `cls` whose attributes `names` hold `values` (what compiled code
    built or returned): the named tuple, the registered class's `unflatten`, a
    `types.SimpleNamespace`, or an instance made without calling `__init__`."""
    if issubclass(cls, tuple):
        return cls._make(values)
    if cls in _REGISTERED:
        return _REGISTERED[cls][1](aux, dict(zip(names, values)))
    if cls is types.SimpleNamespace:
        return types.SimpleNamespace(**dict(zip(names, values)))
    new = object.__new__(cls)
    for k, v in zip(names, values):
        object.__setattr__(new, k, v)
    return new


def record_structure(x: Any) -> Any:
    """(attribute names, their values, static data) of a named tuple or a record, or
    None: what compiled code specialises on (the static data is a registered class's
    hashable `aux`, else None)."""
    if is_namedtuple(x):
        return tuple(type(x)._fields), tuple(x), None
    if not is_record(x):
        return None
    if registered(x) is not None:
        children, aux = flatten_registered(x)
        return tuple(children), tuple(children.values()), aux
    fields = record_fields(x)
    return tuple(n for n, _ in fields), tuple(v for _, v in fields), None
