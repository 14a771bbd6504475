"""`super().__init__(args)` opening an `__init__` that `lowering.constructors` reads as
a record constructor: the base class's `__init__` body is inlined in its place.

`class Dense(Layer): def __init__(self, w, b): super().__init__(w); self.b = b` is
read as if its body were `w' = w; <Layer.__init__'s body, its locals renamed>;
self.b = b`, so the object is still the tuple of its attribute values.  This holds
when the call is the body's first statement, passes its arguments by position or by
name (no `*` or `**`), and the base's `__init__` (the one after the method's class on
the MRO of the class being built) is a plain function of the same module whose
missing arguments have literal defaults; its own body may start with
`super().__init__(...)` in turn.  The base body must then qualify as the rest does
(`lowering.constructors`): otherwise the class keeps its ordinary call.
"""
from __future__ import annotations

import ast
import copy
import types
from collections.abc import Callable

LITERALS = (int, float, bool, str, type(None))
_DEPTH = 8


def class_of(init) -> type | None:
    """The class in `init`'s `__class__` cell, or None."""
    names = init.__code__.co_freevars
    if "__class__" not in names or not init.__closure__:
        return None
    try:
        value = init.__closure__[names.index("__class__")].cell_contents
    except ValueError:
        return None
    return value if isinstance(value, type) else None


def next_init(cls: type, init) -> types.FunctionType | None:
    """The `__init__` that `super().__init__` in `init` reaches for an object of `cls`."""
    owner = class_of(init)
    mro = cls.__mro__
    if owner is None or owner not in mro:
        return None
    for c in mro[mro.index(owner) + 1:]:
        if "__init__" in vars(c):
            found = vars(c)["__init__"]
            return found if type(found) is types.FunctionType else None
    return None


def init_chain(cls: type, init) -> tuple:
    """`init` and the base `__init__`s its `super().__init__` calls reach (what a
    rewritten constructor depends on)."""
    chain = [init]
    while len(chain) < _DEPTH:
        nxt = next_init(cls, chain[-1])
        if nxt is None:
            break
        chain.append(nxt)
    return tuple(chain)


def only_class_cell(init) -> bool:
    """`init` has no closure, or only the `__class__` cell `super()` reads."""
    return init.__closure__ is None or init.__code__.co_freevars == ("__class__",)


def expand(cls: type, init, fdef: ast.FunctionDef, parse: Callable,
           depth: int = 0) -> list | None:
    """`fdef.body` with a leading `super().__init__(args)` replaced by the base
    `__init__`'s body, recursively; None when that cannot be done exactly."""
    call = _super_init_call(fdef)
    if call is None:
        return fdef.body
    base = next_init(cls, init)
    if base is None or depth >= _DEPTH or base.__globals__ is not init.__globals__ \
            or not only_class_cell(base):
        return None
    bdef = parse(base)
    if bdef is None or not bdef.args.args:
        return None
    body = expand(cls, base, bdef, parse, depth + 1)
    prefix = f"__zygopy_base{depth}_"
    binds = _bind(base, bdef, call, prefix) if body is not None else None
    if binds is None:
        return None
    renamer = _Prefix(set(base.__code__.co_varnames), bdef.args.args[0].arg,
                      fdef.args.args[0].arg, prefix)
    return binds + [renamer.visit(copy.deepcopy(s)) for s in body] + fdef.body[1:]


def _super_init_call(fdef: ast.FunctionDef) -> ast.Call | None:
    first = fdef.body[0] if fdef.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Call)):
        return None
    f = first.value.func
    if isinstance(f, ast.Attribute) and f.attr == "__init__" and isinstance(f.value, ast.Call) \
            and isinstance(f.value.func, ast.Name) and f.value.func.id == "super" \
            and not f.value.args and not f.value.keywords:
        return first.value
    return None


def _bind(base, bdef: ast.FunctionDef, call: ast.Call, prefix: str) -> list | None:
    """`prefix+param = <argument>` for each parameter of `base` (but `self`), in the
    order the call evaluates them, then the defaults; None if they do not bind."""
    a = bdef.args
    if a.vararg or a.kwarg or a.posonlyargs or any(isinstance(x, ast.Starred) for x in call.args):
        return None
    params, kwonly = [p.arg for p in a.args[1:]], [p.arg for p in a.kwonlyargs]
    if len(call.args) > len(params) or any(k.arg is None for k in call.keywords):
        return None
    given = list(zip(params, call.args)) + [(k.arg, k.value) for k in call.keywords]
    names = [n for n, _ in given]
    if len(set(names)) != len(names) or not set(names) <= set(params + kwonly):
        return None
    defaults = dict(zip(params[len(params) - len(base.__defaults__ or ()):],
                        base.__defaults__ or ()))
    defaults.update(base.__kwdefaults__ or {})
    for name in params + kwonly:
        if name in names:
            continue
        if name not in defaults or type(defaults[name]) not in LITERALS:
            return None
        given.append((name, ast.Constant(defaults[name])))
    return [ast.copy_location(ast.Assign([ast.Name(prefix + n, ast.Store())], v), call)
            for n, v in given]


class _Prefix(ast.NodeTransformer):
    """The base body in the subclass's `__init__`: its locals get `prefix`, its `self`
    becomes the subclass's."""

    def __init__(self, local: set, base_self: str, self_name: str, prefix: str) -> None:
        self.local, self.base_self = local - {base_self}, base_self
        self.self_name, self.prefix = self_name, prefix

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.base_self:
            node.id = self.self_name
        elif node.id in self.local:
            node.id = self.prefix + node.id
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        if node.arg in self.local:
            node.arg = self.prefix + node.arg
        return node
