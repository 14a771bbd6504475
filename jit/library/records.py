"""Attribute reads of objects (`jit.types.RecordT`: named tuples, dataclasses, registered
and other user objects) and of constant objects that hold functions (a namespace, a
class, a module attribute the lowering left as a read).

  * `obj.name` of a stored attribute is the entry of the record's native tuple;
  * `obj.method` of a function defined by the class is a closure over the receiver
    (`ClosureT(bound, (record,))`, `bound` calling the method with the receiver first):
    called, it compiles and differentiates like any closure, and its cotangent is the
    receiver's (`jit.pullback.cotangents`, d_getattr of a record);
  * `obj.prop` of a `property` calls its getter on the receiver (compiled as user
    code; its pullback is the getter's gradient, `jit.pullback.nested_gradient`);
  * `obj.f` of a staticmethod, or of a plain function stored on the class, is that
    function; a classmethod is a closure over the class;
  * `ns.f` on a constant object (`types.SimpleNamespace`, a class used as a namespace)
    is the function it holds, compiled as the function it is; the lowering's guards
    see a rebinding of the global and of the attribute (`lowering.guards`).
"""
from __future__ import annotations

import inspect
import types as pytypes
from typing import Any

import numpy as np
from llvmlite import ir as L

from adjoint.rules_tangent import field_position, has_field
from lowering.constructors import RecordMaker
from ssair.ir import Const
from jit.codegen.function import lltype
from jit.library.python_impls import impl_call
from jit.library.registry import REGISTRY, Impl
from jit.typing.infer import (OBJECT_CALLS, STATIC_CALLS, UNTYPED_CALLS, Call, Context, LiteralT,
                              is_user_function)
from jit.types import (BOOL, BuiltListT, ClosureT, DictT, FunctionT, RecordT, StrT, TupleT, Type,
                       known_string, typeof)

_BOUND: dict = {}     # method function -> (it, the closure that binds a receiver to it)


def bound_function(func: Any) -> Any:
    """A closure `name(<func's parameters after the first>)` that calls `func` with its
    captured receiver first: the native form of a bound method (cached per function).
    Its code names `func`'s file and first line, where errors inside it point."""
    hit = _BOUND.get(id(func))
    if hit is not None and hit[0] is func:
        return hit[1]
    params, args, env = _signature_text(func)
    name = func.__name__ if func.__name__.isidentifier() else "method"
    src = (f"def _bind(self):\n    def {name}({params}):\n"
           f"        return _F(self{', ' + args if args else ''})\n    return {name}\n")
    env["_F"] = func
    code = compile("\n" * max(func.__code__.co_firstlineno - 2, 0) + src,
                   func.__code__.co_filename, "exec")
    exec(code, env)
    fn = env["_bind"](None)
    fn.__qualname__ = func.__qualname__
    fn.__module__ = func.__module__
    _BOUND[id(func)] = (func, fn)
    return fn


def _signature_text(func: Any) -> tuple:
    """(parameter list, call arguments, defaults namespace) of `func` without its first
    parameter."""
    sig = inspect.signature(func)
    params, args, env = [], [], {}
    kinds = inspect.Parameter
    seen_star = False
    for k, p in enumerate(list(sig.parameters.values())[1:]):
        d = "" if p.default is kinds.empty else f"=_D{k}"
        if d:
            env[f"_D{k}"] = p.default
        if p.kind is kinds.VAR_POSITIONAL:
            params.append(f"*{p.name}")
            args.append(f"*{p.name}")
            seen_star = True
        elif p.kind is kinds.VAR_KEYWORD:
            params.append(f"**{p.name}")
            args.append(f"**{p.name}")
        elif p.kind is kinds.KEYWORD_ONLY:
            if not seen_star:
                params.append("*")
                seen_star = True
            params.append(p.name + d)
            args.append(f"{p.name}={p.name}")
        else:
            params.append(p.name + d)
            args.append(p.name)
    return ", ".join(params), ", ".join(args), env


def _name(ctx: Context, s) -> Any:
    return ctx.const(s.args[1]) if len(s.args) == 2 else None


def class_attribute(cls: type, name: str) -> Any:
    """What `cls` (or a base) defines under `name`, without running a descriptor."""
    return inspect.getattr_static(cls, name, None)


# -- a record's stored attribute ---------------------------------------------------------------
def _is_field(ctx: Context, s, ts) -> bool:
    return isinstance(ts[0], RecordT) and ts[0].index(_name(ctx, s)) is not None


def _t_field(ctx: Context, s, ts) -> Type:
    return ts[0].elems[ts[0].index(_name(ctx, s))]


def _cg_field(fc, s, ts):
    k = ts[0].index(s.args[1].value)
    field = ts[0].elems[k]
    if isinstance(field, LiteralT):     # a constant of the signature (a str joins as StrT)
        return fc.mg.string_word(field.value) if isinstance(s.type, StrT) else \
            L.Constant(lltype(s.type), None)
    return fc.b.extract_value(fc.get(s.args[0]), k)


# -- a method, property or function of a record's class ----------------------------------------
def _class_member(ctx: Context, s, ts) -> Any:
    if not isinstance(ts[0], RecordT) or ts[0].index(_name(ctx, s)) is not None:
        return None
    name = _name(ctx, s)
    return class_attribute(ts[0].cls, name) if isinstance(name, str) else None


def _is_method(ctx: Context, s, ts) -> bool:
    found = _class_member(ctx, s, ts)
    return (isinstance(found, pytypes.FunctionType) and is_user_function(found)) or \
        isinstance(found, classmethod)


def _t_method(ctx: Context, s, ts) -> Type:
    found = _class_member(ctx, s, ts)
    if isinstance(found, classmethod):
        return ClosureT(bound_function(found.__func__), (FunctionT(ts[0].cls),))
    return ClosureT(bound_function(found), (ts[0],))


def _cg_method(fc, s, ts):
    if isinstance(s.type.captured[0], FunctionT):
        return L.Constant(lltype(s.type), None)
    return fc.b.insert_value(L.Constant(lltype(s.type), L.Undefined), fc.get(s.args[0]), 0)


def _is_property(ctx: Context, s, ts) -> bool:
    found = _class_member(ctx, s, ts)
    return isinstance(found, property) and is_user_function(found.fget)


def _t_property(ctx: Context, s, ts) -> Type:
    return impl_call(ctx, s, _class_member(ctx, s, ts).fget, [s.args[0]])


def property_getter(t: Type, name: Any) -> Any:
    """The Python getter of property `name` of objects of type `t`, or None."""
    if not isinstance(t, RecordT) or not isinstance(name, str) or t.index(name) is not None:
        return None
    found = class_attribute(t.cls, name)
    getter = getattr(found, "fget", None) if isinstance(found, property) else None
    return getter if isinstance(getter, pytypes.FunctionType) else None


def _is_static(ctx: Context, s, ts) -> bool:
    return isinstance(_class_member(ctx, s, ts), staticmethod)


def _t_static(ctx: Context, s, ts) -> Type:
    return FunctionT(_class_member(ctx, s, ts).__func__)


CLASS_DATA = (int, float, bool, str)


def _is_class_data(ctx: Context, s, ts) -> bool:
    """`self.eps` where `eps = 1e-8` is a number or string of the object's class (or a
    base): a constant, which every entry point checks (`lowering.guards.BAKED`:
    rebinding it compiles again)."""
    return type(_class_member(ctx, s, ts)) in CLASS_DATA and user_class(ts[0].cls)


def _t_class_data(ctx: Context, s, ts) -> Type:
    from lowering.guards import bake_class_constant
    value = _class_member(ctx, s, ts)
    bake_class_constant(ts[0].cls, _name(ctx, s))
    return LiteralT(value) if type(value) is str else typeof(value)


def _cg_class_data(fc, s, ts):
    from jit.codegen.function import const_value
    value = class_attribute(ts[0].cls, s.args[1].value)
    if isinstance(s.type, StrT) or isinstance(s.type, LiteralT):
        return fc.mg.string_word(value) if isinstance(s.type, StrT) else \
            L.Constant(lltype(s.type), None)
    return const_value(value, s.type)


def user_class(cls: type) -> bool:
    from lowering.guards import user_class as defined_by_user
    return defined_by_user(cls)


def _cg_no_data(fc, s, ts):
    return L.Constant(L.IntType(8), 0)


# -- a function held by a constant object ----------------------------------------------------
def held_function(obj: Any, name: Any) -> Any:
    """The Python function constant object `obj` holds under `name` (an attribute of a
    namespace, a class's function, staticmethod or classmethod), or None."""
    if not isinstance(name, str) or isinstance(obj, pytypes.ModuleType) and \
            not _user_module(obj):
        return None
    found = inspect.getattr_static(obj, name, None)
    if isinstance(found, staticmethod):
        found = found.__func__
    elif isinstance(found, classmethod) and isinstance(obj, type):
        return None if not is_user_function(found.__func__) else found
    elif isinstance(found, pytypes.FunctionType) and not isinstance(obj, type) and \
            name not in getattr(obj, "__dict__", {}):
        return None          # a method of an instance: bound, not this function
    return found if isinstance(found, pytypes.FunctionType) and is_user_function(found) \
        else None


def _user_module(m: Any) -> bool:
    from lowering.guards import user_module
    return user_module(m)


def _is_held(ctx: Context, s, ts) -> bool:
    obj = _constant_object(ctx, s.args[0])
    return obj is not None and not isinstance(ts[0], RecordT) and \
        held_function(obj, _name(ctx, s)) is not None


def _t_held(ctx: Context, s, ts) -> Type:
    obj = _constant_object(ctx, s.args[0])
    found = held_function(obj, _name(ctx, s))
    if isinstance(found, classmethod):
        return ClosureT(bound_function(found.__func__), (FunctionT(obj),))
    return FunctionT(found)


def _cg_held(fc, s, ts):
    return L.Constant(lltype(s.type), None)


def class_call(t: Type) -> Any:
    """The Python `__call__` function of the class of objects of type `t`, or None."""
    if not isinstance(t, RecordT):
        return None
    found = class_attribute(t.cls, "__call__")
    return found if isinstance(found, pytypes.FunctionType) else None


def object_call(t: Type) -> Any:
    """The function a call of an object of type `t` runs: its class's Python `__call__`
    bound to it (`bound_function`), or None."""
    found = class_call(t)
    return bound_function(found) if found is not None else None


RECEIVER = "receiver"    # a jcall's `closure` flag when the callee is an object (`layer(x)`):
# its one captured value is the object, whose cotangent is the callee's


# -- `Point(x, y)`: a named tuple or plain dataclass built in compiled code -------------------
def construct(ctx: Context, s, ts) -> Any:
    """The RecordT of a call of a named tuple class or of a dataclass whose generated
    `__init__` stores its arguments (`adjoint.pytrees.constructor_fields`), else None.
    Its operands, in field order (defaults as constants), are the call's."""
    from adjoint.pytrees import constructor_fields
    cls = getattr(ts[0], "func", None)
    fields = constructor_fields(cls) if isinstance(ts[0], FunctionT) else None
    if fields is None or not _all_fields(cls, fields):
        return None
    pos, kw = list(s.args[1:]), dict(s.kwargs)
    if len(pos) > len(fields) or any(k not in fields for k in kw):
        ctx.fail(f"{cls.__name__}() takes the fields {fields}")
    operands = []
    for k, name in enumerate(fields):
        op = pos[k] if k < len(pos) else kw.get(name, _default(cls, name))
        if op is None:
            ctx.fail(f"{cls.__name__}() is missing the field {name!r}")
        operands.append(op)
    ctx.typing.impls[s.var] = CONSTRUCT
    ctx.typing.calls[s.var] = Call(None, operands, cls)
    made = cls.cls if isinstance(cls, RecordMaker) else cls   # (a plain class's __init__)
    return RecordT(tuple(ctx.type_of(op) for op in operands), fields, made)


def _all_fields(cls: type, fields: tuple) -> bool:
    """Every attribute of an instance is a constructor field (no `init=False` one)."""
    import dataclasses
    return not dataclasses.is_dataclass(cls) or \
        tuple(f.name for f in dataclasses.fields(cls)) == fields


def _default(cls: type, name: str) -> Any:
    """The default of field `name` as a constant operand, or None."""
    import dataclasses
    if dataclasses.is_dataclass(cls):
        f = next(f for f in dataclasses.fields(cls) if f.name == name)
        return None if f.default is dataclasses.MISSING else Const(f.default)
    defaults = getattr(cls, "_field_defaults", {})
    return Const(defaults[name]) if name in defaults else None


def _cg_construct(fc, s, ts):
    out = L.Constant(lltype(s.type), L.Undefined)
    for k, (op, t) in enumerate(zip(fc.typing.calls[s.var].operands, s.type.elems)):
        if not isinstance(t, LiteralT):
            out = fc.b.insert_value(out, fc.get(op, t), k)
    return out


CONSTRUCT = Impl("a named tuple or dataclass built from its fields", None, construct,
                 _cg_construct, numpy_too=True)


# -- a data attribute of an object read from a global ------------------------------------------
def _const_data(ctx: Context, s) -> Any:
    """(value, its type) of the instance attribute that `s` reads from a constant
    object (a global `cfg.lr`, `ns.scale`), or None; a function or an untyped value is
    not data."""
    obj = _constant_object(ctx, s.args[0])
    name = _name(ctx, s)
    d = getattr(obj, "__dict__", None) if obj is not None else None
    if isinstance(obj, type) and isinstance(name, str):
        # a class-level number or string, of the class or a base (`self.eps` in a plain
        # __init__, a base's __init__ inlined for a subclass: guarded with each class
        # on the MRO, lowering.guards)
        owner = next((vars(c) for c in obj.__mro__ if name in vars(c)), {})
        if type(owner.get(name)) in (int, float, bool, str):
            d = {name: owner[name]}
    if not isinstance(name, str) or type(d) is not dict or name not in d or \
            isinstance(obj, pytypes.ModuleType):
        return None
    value = d[name]
    if callable(value) and not isinstance(value, (np.ndarray, np.generic)):
        return None
    try:
        t = typeof(value)
    except TypeError:
        return None
    return (value, LiteralT(value)) if isinstance(t, RecordT) and not t.is_tuple else \
        (value, t)


def _is_const_data(ctx: Context, s, ts) -> bool:
    return not isinstance(ts[0], RecordT) and _const_data(ctx, s) is not None


def _t_const_data(ctx: Context, s, ts) -> Type:
    obj = _constant_object(ctx, s.args[0])
    if isinstance(obj, type):     # checked by every entry point (`cls.eps` too)
        from lowering.guards import bake_class_constant
        bake_class_constant(obj, _name(ctx, s))
    return _const_data(ctx, s)[1]


def _cg_const_data(fc, s, ts):
    from jit.codegen.function import const_value
    obj = s.args[0].value if isinstance(s.args[0], Const) else \
        ts[0].func if isinstance(ts[0], FunctionT) else ts[0].value
    name = s.args[1].value
    if isinstance(obj, type):      # (the class or the base that defines it)
        return const_value(next(vars(c)[name] for c in obj.__mro__ if name in vars(c)),
                           s.type)
    return const_value(vars(obj)[name], s.type)


def _constant_object(ctx: Context, operand: Any) -> Any:
    """The object a constant operand holds (a global, or an attribute of one; a
    classmethod's `cls`), or None."""
    if isinstance(operand, Const):
        return operand.value
    t = ctx.type_of(operand)
    if isinstance(t, FunctionT) and isinstance(t.func, type):
        return t.func
    return t.value if isinstance(t, LiteralT) else None


# -- forward mode's `y.name` of a record's tangent (`adjoint.rules_tangent._field`):
# the entry's position, decided by the types
def _field_at(ctx: Context, s, ts) -> int:
    t, y, name = ts[0], ts[1], ctx.const(s.args[3], known_string(ts[2]))
    if not isinstance(t, TupleT) or isinstance(t, (DictT, BuiltListT)) or \
            isinstance(t, RecordT) and not t.is_tuple:
        return -1
    if not isinstance(y, RecordT) or not isinstance(name, str):
        ctx.fail(f"the tangent of an attribute of a {y} is not compiled")
    fields = y.cls._fields if y.is_tuple else y.keys
    return list(fields).index(name) if name in fields else -1


def _t_field_position(ctx: Context, s, ts) -> Type:
    return LiteralT(_field_at(ctx, s, ts))


def _t_has_field(ctx: Context, s, ts) -> Type:
    _field_at(ctx, s, ts)
    return BOOL


def _static_has_field(engine, t, s) -> Any:
    ts = [engine.operand_type(t, a) for a in s.args[1:]]
    name = s.args[3].value if isinstance(s.args[3], Const) else known_string(ts[2])
    if len(ts) != 3 or not isinstance(ts[1], RecordT) or name is None:
        return None
    try:
        return _field_at(Context(engine, t, s), s, ts) >= 0
    except Exception:      # noqa: BLE001  (the type rule reports it)
        return None


def _cg_field_position(fc, s, ts):
    return L.Constant(L.IntType(8), 0)


def _cg_has_field(fc, s, ts):
    return L.Constant(L.IntType(1), int(bool(_static_has_field(fc.mg.engine, fc.typing, s))))


def _declare() -> None:
    OBJECT_CALLS[:] = [object_call]
    UNTYPED_CALLS.insert(0, construct)
    family = "objects"
    REGISTRY.overload("getattr", "a stored attribute of an object", _is_field, _t_field,
                      _cg_field, family=family, numpy_too=True)
    REGISTRY.overload("getattr", "a method of an object's class (a closure over it)",
                      _is_method, _t_method, _cg_method, family=family, numpy_too=True)
    REGISTRY.overload("getattr", "a property of an object's class (its getter)",
                      _is_property, _t_property, None, family=family, numpy_too=True)
    REGISTRY.overload("getattr", "a number or string of an object's class", _is_class_data,
                      _t_class_data, _cg_class_data, family=family, numpy_too=True)
    REGISTRY.overload("getattr", "a staticmethod of an object's class", _is_static,
                      _t_static, _cg_no_data, family=family, numpy_too=True)
    REGISTRY.overload("getattr", "a function held by a constant namespace, class or module",
                      _is_held, _t_held, _cg_held, family=family, numpy_too=True)
    REGISTRY.overload("getattr", "a data attribute of an object read from a global",
                      _is_const_data, _t_const_data, _cg_const_data, family=family,
                      numpy_too=True)
    REGISTRY.declare(field_position, family=family, pattern="tangent, record, constant name",
                     types=_t_field_position, lower=_cg_field_position, numpy_too=True)
    REGISTRY.declare(has_field, family=family, pattern="tangent, record, constant name",
                     types=_t_has_field, lower=_cg_has_field, numpy_too=True)
    STATIC_CALLS[has_field] = _static_has_field


_declare()
