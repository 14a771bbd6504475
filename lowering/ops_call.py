"""Handlers for globals, attributes, calls and nested function creation.

Globals, builtins and module attributes are resolved when lowering (`math.sin`,
`np.dot`, `math.pi` become constants).  A call of a constant user function (or of
a closure made here) gets its keywords and defaults bound to positional operands;
other calls keep their keywords.  `range`, `enumerate` and `zip` calls stay lazy
so that a following GET_ITER can lower the loop to an integer counter.
"""
from __future__ import annotations

import builtins
import functools
import inspect
import sys
import types

from ssair.ir import Const
from ssair.primitives import operator_primitive

from .closures import RUNTIME_DEFAULTS_ATTR
from .constructors import fields_constructor
from .handlers import handles
from .loops import as_sequence
from .materialize import joined_dict
from .ops_basic import static_items
from .guards import read_live, rebound_globals
from .runtime import GlobalRef, call_unpacked, keywords, read_global, write_global
from .super_calls import SuperMethod, SuperOf, super_attribute, super_call, super_of_stack
from .function_builtins import PYTHON_VERSIONS
from .values import NULL, FuncBuild, Lazy, LazyCall, LazyDict, LazyTuple, ListAppend, Starred

PY = sys.version_info[:2]
LOOPABLE = (range, enumerate, zip, reversed)
# builtins that iterate their first argument (a dict: its keys), read as a loop reads it
ITERATING = (list, tuple, sorted, sum, max, min, any, all, set, frozenset)


def stands_for(value):
    """What compiled and differentiated code calls for `value`: the Python function a
    wrapper names in `__zygopy_function__` (a `jit.jit` function: its callers compile
    and differentiate its code, not the wrapper's), the Python version of a builtin
    that calls a function (`lowering.function_builtins`), else `value` itself."""
    inner = getattr(value, "__zygopy_function__", None)
    if isinstance(inner, types.FunctionType):
        return inner
    try:
        return PYTHON_VERSIONS.get(value, value)   # `map`, `functools.reduce`: their code
    except TypeError:                              # (an unhashable value)
        return value


def resolve_global(lw, name: str):
    g = lw.func.__globals__
    if name in g:
        return stands_for(g[name])
    b = getattr(lw.func, "__builtins__", None) or g.get("__builtins__", builtins)
    b = b if isinstance(b, dict) else vars(b)
    if name in b:
        return stands_for(b[name])
    return lw.raise_when_run(NameError, f"name {name!r} is not defined").value


def push_callable(lw, value, with_null: bool) -> None:
    """Push a callable with CPython's NULL slot: before it up to 3.12, after in 3.13."""
    if with_null and PY < (3, 13):
        lw.push(NULL)
    lw.push(value)
    if with_null and PY >= (3, 13):
        lw.push(NULL)


@handles("LOAD_GLOBAL")
def op_load_global(lw, ins):
    with_null, name = ins.arg if isinstance(ins.arg, tuple) else (False, ins.arg)
    g = lw.func.__globals__
    if name in rebound_globals(g) and read_live(g.get(name)):   # the program rebinds it:
        #                                                   read it when this runs
        value = lw.emit("call", Const(read_global), Const(GlobalRef(g, name)))
    else:
        value = Const(resolve_global(lw, name))
    push_callable(lw, value, with_null)


@handles("STORE_GLOBAL")
def op_store_global(lw, ins):
    value = lw.operand(lw.pop())
    lw.emit("call", Const(write_global), Const(GlobalRef(lw.func.__globals__, ins.arg)), value)


def attribute(lw, obj, name: str):
    obj = lw.operand(obj)
    local = lw.last_local
    if name == "append" and local is not None and local[1] is obj \
            and local[0] in lw.reader.append_locals:
        return ListAppend(obj=obj, name=local[0])
    if isinstance(obj, Const) and isinstance(obj.value, types.ModuleType):
        try:
            return Const(stands_for(getattr(obj.value, name)))
        except AttributeError:
            return lw.raise_when_run(AttributeError, f"module {obj.value.__name__!r} "
                                     f"has no attribute {name!r}")
    return lw.emit("getattr", obj, Const(name))


@handles("LOAD_ATTR")
def op_load_attr(lw, ins):
    method, name = ins.arg if isinstance(ins.arg, tuple) else (False, ins.arg)
    load_attribute(lw, lw.pop(), name, method)


@handles("LOAD_METHOD")
def op_load_method(lw, ins):
    load_attribute(lw, lw.pop(), ins.arg, True)


@handles("LOAD_SUPER_ATTR")
def op_load_super_attr(lw, ins):
    """3.12+: [super, class, receiver] -> `super(class, receiver).name`."""
    method, _two_args, name = ins.arg
    receiver, cls, sup = lw.pop(), lw.pop(), lw.pop()
    load_attribute(lw, super_of_stack(lw, sup, cls, receiver), name, method)


def load_attribute(lw, obj, name: str, method: bool) -> None:
    """Push `obj.name` (`method`: with CPython's NULL or receiver slot)."""
    value = super_attribute(lw, obj, name) if isinstance(obj, SuperOf) \
        else attribute(lw, obj, name)
    if isinstance(value, SuperMethod) and method:     # [function, receiver], any version
        lw.push(Const(value.fn))
        lw.push(value.receiver)
        return
    if isinstance(value, SuperMethod):
        lw.push(value)
        return
    push_callable(lw, value, method)


@handles("PUSH_NULL")
def op_push_null(lw, ins):
    lw.push(NULL)


@handles("KW_NAMES")
def op_kw_names(lw, ins):
    lw.kwnames = tuple(ins.arg)


@handles("CALL_FUNCTION")
def op_call_function(lw, ins):
    args = lw.popn(ins.arg)
    call(lw, lw.pop(), args, ())


@handles("CALL_FUNCTION_KW")
def op_call_function_kw(lw, ins):
    names = lw.pop().value
    args = lw.popn(ins.arg)
    call(lw, lw.pop(), args, names)


@handles("CALL_METHOD", "CALL")
def op_call(lw, ins):
    names, lw.kwnames = lw.kwnames or (), None
    call_with_null(lw, ins.arg, names)


@handles("CALL_KW")
def op_call_kw(lw, ins):
    names = lw.pop().value
    call_with_null(lw, ins.arg, names)


def call_with_null(lw, argc: int, names: tuple) -> None:
    """CALL's stack: [NULL|method, callable|self, args] up to 3.12,
    [callable, self|NULL, args] from 3.13."""
    args = lw.popn(argc)
    b, a = lw.pop(), lw.pop()
    if PY >= (3, 13):
        callee, self_ = a, b
    else:
        callee, self_ = (b, NULL) if a is NULL else (a, b)
    call(lw, callee, args if self_ is NULL else [self_] + args, names)


@handles("CALL_FUNCTION_EX")
def op_call_function_ex(lw, ins):
    """`f(*t, **d)`: a plain call when the items of `t` and the keys of `d` are known
    here (displays, constants); otherwise `call_unpacked(f, t, d)`, which the JIT
    turns into a plain call once it knows the tuple's length and the dict's keys."""
    kw = lw.pop() if ins.arg & 1 else None
    args = lw.pop()
    if PY >= (3, 13):
        top = lw.pop()
        callee = lw.pop() if top is NULL else top
    else:
        callee = lw.pop()
        if lw.stack and lw.stack[-1] is NULL:
            lw.pop()
    items = static_items(args)
    if items is None:
        items = [Starred(lw.operand(args))]
    if isinstance(callee, SuperMethod):      # `super().f(*args)`: f(self, *args)
        callee, items = Const(callee.fn), [callee.receiver] + items
    entries = [] if kw is None else kw.entries if isinstance(kw, LazyDict) and kw.var is None \
        else [Starred(lw.operand(kw))]
    if len(entries) > 1 and any(isinstance(e, Starred) for e in entries):
        entries = [Starred(joined_dict(lw, entries, keywords))]   # `k=v, **d`, checked
    if value_of(callee) is zip and not entries:    # `for a, b in zip(*t)`: see loops
        lw.push(LazyCall(callee=zip, args=items))
        return
    static = not any(isinstance(e, Starred) for e in items + entries)
    if static and all(isinstance(k, Const) and type(k.value) is str for k, _ in entries):
        names = tuple(k.value for k, _ in entries)
        if len(set(names)) == len(names):
            call(lw, callee, items + [v for _, v in entries], names)
            return
    t = lw.operand(LazyTuple(elems=items))
    d = Const(None) if not entries else entries[0].seq \
        if len(entries) == 1 and isinstance(entries[0], Starred) else lw.operand(kw) \
        if static else joined_dict(lw, entries, keywords)    # a keyword given twice
    lw.push(lw.emit("call", Const(call_unpacked), lw.operand(callee), t, d))


def value_of(v):
    return v.value if isinstance(v, Const) else None


def call(lw, callee, args: list, names: tuple) -> None:
    kwargs = {}
    if names:
        kwargs = dict(zip(names, args[len(args) - len(names):]))
        args = args[:len(args) - len(names)]
    if isinstance(callee, ListAppend) and callee.var is None and len(args) == 1 and not kwargs:
        new = lw.emit("list_append", callee.obj, lw.operand(args[0]))
        lw.store_local(callee.name, new)
        lw.push(Const(None))
        return
    if isinstance(callee, SuperMethod):  # `f = super().f; f(x)` is f(self, x)
        call(lw, Const(callee.fn), [callee.receiver] + list(args) + list(kwargs.values()),
             tuple(kwargs))
        return
    value = value_of(callee)
    if value is super:      # resolved with the frame's class cell and `self`
        if kwargs:
            lw.refuse("super() with keywords")
        super_call(lw, list(args))
        return
    ctor = fields_constructor(value) if isinstance(value, type) else None
    if ctor is not None:                 # `Model(w, b)`: its __init__ returning the object
        callee, value = Const(ctor), ctor
    if _user_callable_object(value):     # `model(x)`, model a global: model.__call__(x)
        callee, value = attribute(lw, callee, "__call__"), None
    if type(value) is functools.partial:    # a constant partial: the call it makes
        kw = {**{k: Const(v) for k, v in value.keywords.items()}, **kwargs}
        call(lw, Const(value.func), [Const(a) for a in value.args] + list(args) + list(kw.values()),
             tuple(kw))
        return
    operator_op = operator_primitive(value) if value is not None and not kwargs else None
    if operator_op is not None and len(args) == operator_op[1]:
        lw.push(lw.emit(operator_op[0], *args))   # operator.add(a, b) is a + b
        return
    if value is enumerate and len(args) == 1 and set(kwargs) == {"start"}:
        args, kwargs = list(args) + [kwargs["start"]], {}     # enumerate(s, start=1)
    if any(value is f for f in LOOPABLE) and not kwargs:
        lw.push(LazyCall(callee=value, args=args))
        return
    callee = lw.operand(callee)
    if any(value is f for f in ITERATING) and args and not isinstance(args[0], Starred) \
            and (len(args) == 1 or value not in (max, min)):
        args = [as_sequence(lw, lw.operand(args[0]))] + list(args[1:])
    fn = value if isinstance(value, types.FunctionType) else lw.known_funcs.get(callee)
    bound = bind(fn, args, kwargs, lw.known_defaults.get(callee), lw) if fn is not None else None
    if bound is not None:
        args, kwargs = bound
    elif getattr(fn, RUNTIME_DEFAULTS_ATTR, False):
        lw.refuse(f"a recursive call of {fn.__name__} that leaves out an argument whose "
                  "default is computed at run time")
    v = lw.emit("call", callee, *args, kwargs=kwargs)
    if value is len:
        lw.ints.add(v)
    elif value is isinstance:
        lw.bools.add(v)
    lw.push(v)


def bind(fn, args: list, kwargs: dict, runtime_defaults=None, lw=None):
    """Operands for a call of user function `fn` with defaults bound: positional
    parameters become positional operands, keyword-only ones stay keywords (with
    their defaults filled in).  `runtime_defaults`: (the tuple operand, its length)
    of a nested function whose defaults were computed when it was made; a default
    taken from it is an operand `getitem(tuple, k)` (emitted with `lw`), so that
    it is an argument of the call like any other, with its own cotangent.  None
    when the call does not bind; it then stays as written and fails at run time as
    CPython would."""
    if not _is_user_function(fn):
        return None
    code = fn.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None
    if len(args) > code.co_argcount:
        return None
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    defaults = fn.__defaults__ or ()
    if runtime_defaults is not None:
        tup, count = runtime_defaults
        defaults = tuple(_DefaultAt(tup, k) for k in range(count))
    kwdefaults = fn.__kwdefaults__ or {}
    first_default = code.co_argcount - len(defaults)
    out, rest, kw = list(args), dict(kwargs), {}
    for k in range(len(args), len(names)):
        name = names[k]
        dest = out if k < code.co_argcount else kw
        value = rest.pop(name) if name in rest and k >= code.co_posonlyargcount else None
        if value is None and first_default <= k < code.co_argcount:
            value = defaults[k - first_default]
            value = lw.emit("getitem", value.tup, Const(value.k)) \
                if isinstance(value, _DefaultAt) else Const(value)
        if value is None and name in kwdefaults:
            value = Const(kwdefaults[name])
        if value is None:
            return None
        if dest is out:
            out.append(value)
        else:
            kw[name] = value
    return None if rest else (out, kw)


class _DefaultAt:
    """Entry k of a run-time defaults tuple (`bind`)."""

    __slots__ = ("tup", "k")

    def __init__(self, tup, k: int) -> None:
        self.tup, self.k = tup, k


def _user_callable_object(value) -> bool:
    """An instance of a user's class whose `__call__` is the user's Python function
    (not a class, a function, or an object of zygopy's or a library's)."""
    if value is None or isinstance(value, (type, types.FunctionType, types.MethodType,
                                           types.BuiltinFunctionType, functools.partial)):
        return False
    call_fn = inspect.getattr_static(type(value), "__call__", None)
    if type(call_fn) is not types.FunctionType:
        return False
    from .guards import library_function
    return not library_function(call_fn)


def _is_user_function(fn) -> bool:
    try:
        from ssair.interpreter import is_user_function
    except ImportError:
        return type(fn) is types.FunctionType
    return is_user_function(fn)


@handles("MAKE_FUNCTION")
def op_make_function(lw, ins):
    if PY >= (3, 13):
        code = lw.pop().value
        lw.push(FuncBuild(code=code, qualname=code.co_qualname))
        return
    qualname = lw.pop().value if PY == (3, 10) else None
    code = lw.pop().value
    fb = FuncBuild(code=code, qualname=qualname or code.co_qualname)
    for flag in (8, 4, 2, 1):
        if ins.arg & flag:
            set_attribute(lw, fb, flag, lw.pop())
    lw.push(fb)


@handles("SET_FUNCTION_ATTRIBUTE")
def op_set_function_attribute(lw, ins):
    fb, value = lw.pop(), lw.pop()
    set_attribute(lw, fb, int(ins.arg), value)
    lw.push(fb)


def set_attribute(lw, fb: FuncBuild, flag: int, value) -> None:
    if flag == 8:
        fb.closure = [lw.operand(v) for v in _elements(lw, value)]
    elif flag == 1:
        set_defaults(lw, fb, value)
    elif flag == 2:
        set_kwdefaults(lw, fb, value)
    elif flag != 4:
        lw.refuse(f"function attribute {flag}")


def _elements(lw, value) -> list:
    if isinstance(value, LazyTuple) and value.var is None:
        return value.elems
    if isinstance(value, Const) and isinstance(value.value, tuple):
        return [Const(x) for x in value.value]
    lw.refuse("closure of unexpected shape")


def set_kwdefaults(lw, fb: FuncBuild, value) -> None:
    """Keyword-only defaults (`def scale(v, *, k=2.0)`): constants become part of the
    function, as positional ones do; one computed at run time is refused."""
    entries = value.entries if isinstance(value, LazyDict) and value.var is None else None
    if entries is None or not all(isinstance(k, Const) and isinstance(v, Const)
                                  for k, v in entries):
        lw.refuse("keyword-only defaults computed at run time in a nested function")
    fb.kwdefaults = {k.value: v.value for k, v in entries}


def set_defaults(lw, fb: FuncBuild, value) -> None:
    """Positional defaults: constants become part of the function; others are the
    tuple evaluated now (MAKE_FUNCTION time), passed to `make_closure`."""
    if isinstance(value, Const) and isinstance(value.value, tuple):
        fb.defaults = value.value
        return
    elems = [lw.operand(e) if isinstance(e, Lazy) else e for e in _elements(lw, value)]
    if all(isinstance(e, Const) for e in elems):
        fb.defaults = tuple(e.value for e in elems)
        return
    fb.dynamic_defaults = lw.emit("tuple", *elems)
    fb.dynamic_count = len(elems)
