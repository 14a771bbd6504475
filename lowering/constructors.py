"""`Model(w, b)` of a plain user class: its `__init__` read as a function that returns the
object it builds.

A class whose `__init__` only stores attributes (`self.mu = mu`, `self.scale =
np.exp(log_scale)`, `self.n = len(x)`) is, to a differentiated program, a record
constructor, as a dataclass is: the object is the tuple of its attribute values.  So
`C(args)` is lowered as a call of `fields_constructor(C)`: a Python function made from
the source of `C.__init__`, with the same parameters but `self`, in which every
`self.name` is a local variable; it ends by returning `RecordMaker(C, names)(values)`,
which makes the object without running `__init__` again (`object.__new__` and its
attributes).  The maker is a constant of that function's code, so the derivative rules
and the JIT see it: the cotangent of the object goes back to the values that filled
its attributes (`adjoint.pytrees`), and compiled code holds the object as a record
(`jit.library.records`).

`__init__` qualifies when it is a plain Python function of the user's own (its source
readable, no closure but the `__class__` cell), and `self` appears only as `self.name`:
assigned (also `+=`) by a statement of the function body's top level (so every
attribute is set on every path that reaches the end), read only after such an
assignment, and none of them a property or other data descriptor of the class.  It
has no `return` and no `yield`, and no class of its MRO has a `__new__`,
`__setattr__`, `__getattr__` or non-empty `__slots__` to bypass (nor is it abstract).
A first statement `super().__init__(args)` is replaced by the base's body
(`lowering.base_inits`); `super()` anywhere else leaves the class alone.  Any other
class is called as before (its call is a callee like any other).
"""
from __future__ import annotations

import ast
import inspect
import textwrap
import types
import warnings
import weakref
from typing import Any, Optional

from .base_inits import expand, init_chain, only_class_cell

_MADE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # class -> (init, ctor)


class RecordMaker:
    """`maker(*values)`: an object of `cls` whose attributes `fields` hold `values`, made
    without calling `__init__` (the end of a `fields_constructor`)."""

    __slots__ = ("cls", "fields", "__zygopy_symbol__", "__weakref__")

    def __init__(self, cls: type, fields: tuple) -> None:
        self.cls = cls
        self.fields = fields
        self.__zygopy_symbol__ = f"{cls.__module__}.{cls.__qualname__}"

    def __call__(self, *values: Any) -> Any:
        obj = object.__new__(self.cls)
        for name, v in zip(self.fields, values):
            object.__setattr__(obj, name, v)
        return obj

    def __repr__(self) -> str:
        return f"<fields of {self.__zygopy_symbol__}>"


def fields_constructor(cls: Any) -> Optional[types.FunctionType]:
    """The function `C(args)` is lowered to, for a class `C` whose `__init__` only
    stores attributes (see the module docstring); None for any other value."""
    if not isinstance(cls, type) or not _plain_class(cls):
        return None
    init = cls.__dict__.get("__init__") if "__init__" in cls.__dict__ else \
        getattr(cls, "__init__", None)
    if type(init) is not types.FunctionType:
        return None
    chain = init_chain(cls, init)
    hit = _MADE.get(cls)
    if hit is not None and len(hit[0]) == len(chain) and all(
            a is b for a, b in zip(hit[0], chain)):
        return hit[1]
    ctor = _rewrite(cls, init)
    _MADE[cls] = (chain, ctor)
    return ctor


def _plain_class(cls: type) -> bool:
    from .guards import library_function
    if cls.__module__ == "builtins" or issubclass(cls, BaseException):
        return False
    if getattr(cls, "__abstractmethods__", None):
        return False                  # (CPython refuses to make one)
    for c in cls.__mro__[:-1]:
        d = c.__dict__
        if any(k in d for k in ("__new__", "__setattr__", "__getattr__", "__getattribute__")) \
                or d.get("__slots__", ()) != ():
            return False
    init = getattr(cls, "__init__", None)
    return type(init) is types.FunctionType and not library_function(init) \
        and only_class_cell(init)


def _parse(init: types.FunctionType) -> Optional[ast.Module]:
    """The module holding `init`'s definition alone, at its lines in its file."""
    try:
        lines, first = inspect.getsourcelines(init)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef) or not fdef.args.args or fdef.args.posonlyargs:
        return None
    return ast.increment_lineno(tree, first - 1)


def _parse_def(init: types.FunctionType) -> Optional[ast.FunctionDef]:
    tree = _parse(init)
    return tree.body[0] if tree is not None else None


def _rewrite(cls: type, init: types.FunctionType) -> Optional[types.FunctionType]:
    tree = _parse(init)
    if tree is None:
        return None
    fdef = tree.body[0]
    body = expand(cls, init, fdef, _parse_def)      # `super().__init__(...)` first
    if body is None:
        return None
    fdef.body = body
    names = _stored_names(fdef)
    if names is None:
        return None
    self_name = fdef.args.args[0].arg
    fields = tuple(names)
    if any(hasattr(type(inspect.getattr_static(cls, n, None)), "__set__") for n in fields):
        return None         # `self.x = v` runs a property's setter: not a plain store
    body = _Renamer(cls, self_name, fields).rewrite(fdef)
    if body is None:
        return None
    end = fdef.body[-1]
    ret = ast.Return(ast.Call(ast.Constant(_MAKER_SLOT),
                              [ast.Name(_local(n), ast.Load()) for n in fields], []))
    ast.copy_location(ret, end)
    ast.fix_missing_locations(ret)
    fdef.body = body + [ret]
    fdef.args.args = fdef.args.args[1:]
    fdef.args.defaults = []
    fdef.args.kw_defaults = [None] * len(fdef.args.kwonlyargs)
    fdef.decorator_list = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # ("'str' object is not callable")
            code = compile(ast.fix_missing_locations(tree), init.__code__.co_filename, "exec")
    except (SyntaxError, ValueError, TypeError):
        return None
    inner = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    maker = RecordMaker(cls, fields)      # a constant of the code: lowered as `Const`
    slots = {_MAKER_SLOT: maker, _CLASS_SLOT: cls}
    inner = inner.replace(co_consts=tuple(slots.get(c, c) if type(c) is str else c
                                          for c in inner.co_consts))
    ctor = types.FunctionType(inner, init.__globals__, init.__name__, init.__defaults__)
    ctor.__kwdefaults__ = init.__kwdefaults__
    ctor.__qualname__ = init.__qualname__
    ctor.__module__ = init.__module__
    # the IR prints it by a name that parses back to it (`Class.__zygopy_fields__`)
    ctor.__zygopy_symbol__ = f"{cls.__module__}.{cls.__qualname__}.{_ATTR}"
    try:
        setattr(cls, _ATTR, staticmethod(ctor))
    except (AttributeError, TypeError):
        pass
    return ctor


_ATTR = "__zygopy_fields__"


_MAKER_SLOT = "zygopy: the record maker"
_CLASS_SLOT = "zygopy: the class"


def _local(name: str) -> str:
    return f"__zygopy_self_{name}"


def _stored_names(fdef: ast.FunctionDef) -> Optional[list]:
    """The attribute names the body's top-level statements store into `self`, in order
    of first store; None when `__init__` returns, yields, or stores an attribute of
    `self` anywhere else."""
    self_name = fdef.args.args[0].arg
    names: list = []
    for stmt in fdef.body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await,
                                 ast.Global, ast.Nonlocal)):
                return None
        for target in _targets(stmt):
            if _is_self_attr(target, self_name):
                if target.attr not in names:
                    names.append(target.attr)
        for node in ast.walk(stmt):
            stored = isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and _is_self_attr(node, self_name)
            if stored and not any(node is t for t in _targets(stmt)):
                return None       # a store below the top level (a branch, a loop)
    return names


def _targets(stmt: ast.stmt) -> list:
    if isinstance(stmt, ast.Assign):
        return [t for t in stmt.targets]
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return [stmt.target]
    return []


def _is_self_attr(node: ast.AST, self_name: str) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
        and node.value.id == self_name


class _Renamer(ast.NodeTransformer):
    """`self.name` -> the local of `name`, or the class's attribute where it is read
    before it is stored (a class-level constant: `self.eps`); any other use of `self`,
    or a read of a method or of an attribute nothing set, leaves the class alone
    (`rewrite` returns None)."""

    def __init__(self, cls: type, self_name: str, fields: tuple) -> None:
        self.cls = cls
        self.self_name = self_name
        self.fields = fields
        self.stored: set = set()
        self.bad = False

    def rewrite(self, fdef: ast.FunctionDef) -> Optional[list]:
        body = []
        for stmt in fdef.body:
            targets = [t.attr for t in _targets(stmt) if _is_self_attr(t, self.self_name)]
            if isinstance(stmt, ast.AugAssign) and targets:
                self._need(targets[0])
            if isinstance(stmt, ast.AnnAssign) and stmt.value is None and targets:
                continue              # `self.x: float` alone stores nothing
            new = self.visit(stmt)
            self.stored.update(targets)
            body.append(new)
        return None if self.bad else body

    def _need(self, name: str) -> None:
        if name not in self.stored:
            self.bad = True

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if _is_self_attr(node, self.self_name):
            if isinstance(node.ctx, ast.Load) and node.attr not in self.stored:
                return self._class_attribute(node)
            return ast.copy_location(ast.Name(_local(node.attr), node.ctx), node)
        return self.generic_visit(node)

    def _class_attribute(self, node: ast.Attribute) -> ast.AST:
        found = inspect.getattr_static(self.cls, node.attr, _CLASS_SLOT)
        if found is _CLASS_SLOT or hasattr(type(found), "__get__"):
            self.bad = True           # nothing set, or a method / property
            return node
        return ast.copy_location(ast.Attribute(ast.Constant(_CLASS_SLOT), node.attr,
                                               ast.Load()), node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in (self.self_name, "super", "__class__"):   # `self` used as a value,
            self.bad = True                # or `super()` left: not a record
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        target = self.visit(node.target)
        value = self.visit(node.value) if node.value is not None else None
        return ast.copy_location(ast.Assign([target], value), node)
