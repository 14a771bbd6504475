"""`super()` in a method: resolved when lowering, into what CPython would find.

`super().name` (and `super(Cls, self).name`) looks `name` up on the classes that come
after `Cls` in the method resolution order.  Lowering does that lookup itself when
`Cls` is known here (the method's `__class__` cell, or a class constant for the
two-argument form) and the receiver is the method's first argument:

- a plain function becomes a call with the receiver prepended
  (`super().forward(x)` is `Base.forward(self, x)`);
- a `staticmethod` becomes a call of its function;
- a property becomes a call of its getter on the receiver;
- a class-level number, string, bool or None becomes a constant.

Anything else (a classmethod, a descriptor of a library, a name no base class
defines, a `super()` object used as a value) is refused with an `UnsupportedError`.

The lookup follows `Cls.__mro__`.  The receiver's own class may put other classes
between `Cls` and the base that defines `name` (multiple inheritance), so the
lowered code checks, when it runs, that the receiver's class resolves `name` to the
same thing (`lowering.runtime.check_super`: the JIT folds the check away when it
compiles for the receiver's class).  What the lookup read is guarded like globals
(`lowering.guards.super_entries`): rebinding `Base.forward` compiles again.

Bytecode (handled in `lowering.ops_call`): up to 3.11, `super` is called (no
argument, or two) and LOAD_ATTR / LOAD_METHOD reads from its result (`SuperOf`
here); from 3.12, LOAD_SUPER_ATTR takes `super`, the class and the receiver from
the stack.
"""
from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

from ssair.ir import Const

from .runtime import SuperSite, check_super
from .values import Lazy

NUMBERS = (int, float, bool, str, type(None))


class SuperOf:
    """The value of `super()` / `super(Cls, self)` on the stack, waiting for the
    attribute read that follows it."""

    def __init__(self, cls, receiver) -> None:
        self.cls, self.receiver = cls, receiver

    def __repr__(self) -> str:
        return "a super() object"


@dataclass(eq=False)
class SuperMethod(Lazy):
    """`super().name` read without calling it at once (`super().f(*args)`): the
    function and the receiver its call prepends.  Used as a value (`f =
    super().forward`), it is `functools.partial(function, receiver)`."""

    fn: Any = None
    receiver: Any = None


def class_cell(lw):
    """The class in the method's `__class__` cell (what a zero-argument `super()`
    reads), or None.  (`lowering.api` keeps that cell in the function it lowers.)"""
    code = lw.code
    if "__class__" not in code.co_freevars or not lw.func.__closure__:
        return None
    cell = lw.func.__closure__[code.co_freevars.index("__class__")]
    try:
        value = cell.cell_contents
    except ValueError:
        return None
    return value if isinstance(value, type) else None


def receiver_of(lw):
    """The current value of the method's first argument (a zero-argument `super()`'s
    receiver); refused for a function without one."""
    code = lw.code
    if code.co_argcount == 0:           # (CPython: "super(): no arguments")
        lw.refuse("super() in a function without positional parameters")
    name = code.co_varnames[0]
    if name in lw.cell_of:               # `self` captured by a nested function
        return lw.emit("cell_get", lw.cell_of[name], Const(name), Const("local"))
    return lw.load_local(name)


def super_call(lw, args: list) -> None:
    """`super()` or `super(Cls, self)` called (3.10, 3.11): push a `SuperOf`."""
    if not args:
        cls = class_cell(lw)
        if cls is None:
            lw.refuse("super() without a class cell")
        lw.push(SuperOf(cls, receiver_of(lw)))
        return
    if len(args) != 2:
        lw.refuse("super() with one argument")
    lw.push(SuperOf(_known_class(lw, args[0]), lw.operand(args[1])))


def _known_class(lw, value):
    if isinstance(value, Const) and isinstance(value.value, type):
        return value.value
    lw.refuse("super(C, obj) whose class C is not a constant")


def super_of_stack(lw, sup, cls, receiver) -> SuperOf:
    """3.12+: LOAD_SUPER_ATTR's [super, class, receiver] as a `SuperOf`."""
    if not (isinstance(sup, Const) and sup.value is super):
        lw.refuse("super() where `super` is not the builtin")
    return SuperOf(_known_class(lw, cls), lw.operand(receiver))


def super_attribute(lw, sup: SuperOf, name: str):
    """What `getattr(super(cls, receiver), name)` is, resolved on `cls.__mro__`: a
    `SuperMethod` for a plain function, else an operand."""
    owner, value = lookup(sup.cls, name)
    if owner is None:
        lw.refuse(f"super().{name}: no base class of {sup.cls.__qualname__} defines it")
    lw.emit("call", Const(check_super), sup.receiver, Const(SuperSite(sup.cls, name, owner)))
    if type(value) is types.FunctionType:
        return SuperMethod(value, sup.receiver)
    if isinstance(value, staticmethod):
        return Const(value.__func__)
    if isinstance(value, property) and type(value.fget) is types.FunctionType:
        return lw.emit("call", Const(value.fget), sup.receiver)
    if type(value) in NUMBERS:
        return Const(value)
    lw.refuse(f"super().{name} ({type(value).__name__} of {owner.__qualname__})")


def lookup(cls: type, name: str):
    """(the class after `cls` in its MRO that defines `name`, the raw attribute), or
    (None, None)."""
    mro = cls.__mro__
    for c in mro[1:]:
        d = vars(c)
        if name in d:
            return c, d[name]
    return None, None
