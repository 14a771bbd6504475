"""The derivative rule table and the helpers that fill it: one entry per primitive op name (`"mul"`) or callee
object (`math.sin`, `np.sum`, a user function registered with `@rule`).

A `Rule` is one of
  * non-differentiable (`pullback is None and emit is None`): the result carries no
    cotangent and, for activity analysis, never depends on a differentiable input
    (comparisons, `len`, `int`, `floor`, `np.zeros`, ...);
  * a pullback: a small plain-Python function `pb(dy, *args, **kw)` (or
    `pb(dy, y, *args, **kw)` with `uses_result=True`) returning one cotangent per
    positional argument.  In the adjoint IR it appears as
    `%g = call(@adjoint.rules_elementary.d_sin, %dy, %x)`: the call target is a `Pullback`
    object (called directly by the interpreter; the JIT may lower `Pullback.fn`, which
    is plain Python) and its result is read with `dget(%g, k)`;
  * structural (`emit`): a few ops are emitted directly as IR (tuple building and
    indexing, array element reads and writes, closures), see `adjoint.passes.reverse`.

`needs(active)` says which positional operands the pullback reads (its *alphas*),
given which operands are active; the transform records only those (and the result
when `uses_result`) and passes `None` for the others.  A rule may carry a `scalar`
variant (`scalar_rule`): the pullback used when every operand is a proven number
(`ssair.passes.scalars`), which needs no unbroadcasting and reads only what its
formula reads (`add`: nothing, `mul`: the other operand), and `partial` variants
(`partial_rule`) for an operand without a cotangent, whatever the types (`2.0 * u`
does not reduce dy * u to a number it would throw away).  Helpers: `nondiff`,
`linear`, `defpullback`, `scalar_rule`, `partial_rule`, and `other_operand` /
`no_operands` for the common `needs`; users call `@adjoint.rule(f)`
(`adjoint.api.rule`) on a pullback `(dy, *args) -> tuple` to register it for their
function `f`.

The rule modules (`rules_math`, `rules_numpy`, `nested`) fill the table with these
helpers; `adjoint.rules` imports them, so look rules up through `adjoint.rules`.
"""
from __future__ import annotations

import contextvars
import inspect
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from ssair.primitives import operator_primitive

from .pytrees import construct_jvp, construct_pullback, constructor_fields


class Pullback:
    """A plain-Python pullback, callable by the interpreter as a library function.

    `fn(dy, [y,] *args, **kw)` returns a tuple with one cotangent per positional
    argument; when `dy` is None (zero) the Pullback returns Nones without calling
    `fn`.  Prints as `@module.name`.
    """

    def __init__(self, fn: Callable, uses_result: bool = False):
        self.fn = fn
        self.uses_result = uses_result
        self.of = fn.__name__          # the differentiated callable, named for errors
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__zygopy_symbol__ = f"{fn.__module__}.{fn.__name__}"
        self.keywords = _keywords(fn)
        # the pullback for complex values (`adjoint.rules_complex`); None: refused
        self.on_complex: Optional[Callable] = None
        # check(self, out, operands) -> out: a user's rule's result checked (adjoint.api)
        self.check: Optional[Callable] = None

    def __call__(self, dy: Any, *args: Any, **kw: Any) -> tuple:
        if kw and ("out" in kw or "dtype" in kw):
            kw = self.without_defaults(kw)
        if kw and self.keywords is not None:
            self.check_keywords(kw)
        if dy is None:
            return (None,) * (len(args) - self.uses_result)
        narrow = False
        for v in (dy, *args):      # (inline: this runs for every rule call)
            if type(v) not in _REAL:
                if _is_complex(v):
                    return self.complex_call(dy, args, kw)
                narrow = narrow or _is_narrow_float(v)
        out = self.fn(dy, *args, **kw)
        out = out if isinstance(out, tuple) else (out,)
        if narrow:
            out = tuple(in_dtype_of(g, a) for g, a in zip(out, args[self.uses_result:]))
        return out if self.check is None else self.check(self, out, args[self.uses_result:])

    def complex_call(self, dy: Any, args: tuple, kw: dict) -> tuple:
        """The pullback where a complex number flows: `on_complex` (zygopy's convention,
        see `adjoint.rules_complex`), each real operand's cotangent its real part."""
        if IN_FORWARD_MODE.get():
            raise TypeError(f"{FORWARD_REFUSAL} (met in the derivative of {self.of})")
        if self.on_complex is None:
            raise TypeError(f"adjoint: the derivative of {self.of} does not support "
                            "complex numbers yet")
        out = self.on_complex(dy, *args, **kw)
        out = out if isinstance(out, tuple) else (out,)
        y = args[0] if self.uses_result else None
        return tuple(_real_part_for(g, a, y) for g, a in zip(out, args[self.uses_result:]))

    def without_defaults(self, kw: dict) -> dict:
        """`kw` without `out=None` and `dtype=float64` (or None), which change nothing
        a derivative reads; an array given as `out=` is refused."""
        if kw.get("out") is not None:
            raise TypeError(f"adjoint: {self.of}(..., out=...) wrote its result into an "
                            "array, which is not differentiable; assign the result instead "
                            "(`o = f(x)` or `o[...] = f(x)`)")
        dtype = kw.get("dtype")
        plain = dtype is None or _is_float64(dtype)
        return {k: v for k, v in kw.items() if k != "out" and (k != "dtype" or not plain)}

    def check_keywords(self, kw: dict) -> None:
        """Refuse, naming the function, a keyword its derivative does not take."""
        for k in kw:
            if k not in self.keywords:
                raise TypeError(f"adjoint: the derivative of {self.of} does not support "
                                f"the keyword argument {k}= yet")

    def __zygopy_explain__(self, *operands) -> str:
        return f"the derivative of {self.of}"

    def __repr__(self) -> str:
        return f"<pullback {self.__zygopy_symbol__}>"


# True while `adjoint.forward.jvp` or `hvp` runs: forward mode calls pullbacks as jvps
# (J t for an elementwise function), which the complex forms of the non-holomorphic ones
# (abs, .real, ...) are not, and its helpers (`TangentHelper`) assume real values
IN_FORWARD_MODE: contextvars.ContextVar = contextvars.ContextVar("zygopy_forward_mode",
                                                                 default=False)
FORWARD_REFUSAL = "forward mode does not support complex numbers yet (jvp, jacfwd, hvp)"
_REAL = {float, int, bool, type(None), np.float64, np.int64, np.bool_}


def _is_float64(dtype: Any) -> bool:
    try:
        return np.dtype(dtype) == np.float64
    except TypeError:
        return False


def _is_complex(v: Any) -> bool:
    if isinstance(v, np.ndarray):
        return v.dtype.kind == "c"
    return isinstance(v, (complex, np.complexfloating))


def _is_narrow_float(v: Any) -> bool:
    """A float array or numpy float scalar of less than double precision."""
    dt = getattr(v, "dtype", None)      # (a numpy type itself, `np.float32`, has none)
    return isinstance(dt, np.dtype) and dt.kind == "f" and dt.itemsize < 8


def in_dtype_of(g: Any, x: Any) -> Any:
    """Cotangent `g` of operand `x` in `x`'s dtype where `x` is a float32 (or other
    narrow float) array or numpy scalar: a cotangent has its primal's dtype, as in JAX,
    so a float32 argument gets a float32 gradient."""
    if g is None or not _is_narrow_float(x):
        return g
    dt = x.dtype
    if isinstance(g, np.ndarray):
        return g if g.dtype == dt or g.dtype.kind not in "fiub" else g.astype(dt)
    if isinstance(g, (float, int, np.floating, np.integer)):
        return dt.type(g)
    return g


def _real_part_for(g: Any, x: Any, y: Any = None) -> Any:
    """Cotangent `g` of operand `x`: its real part when `x` is a real number or array
    (a real value's cotangent is real), else `g` itself.  An operand the pullback does
    not read arrives as None or 0.0 (`adjoint.passes.reverse.UNREAD`): then the
    result `y` (a `uses_result` rule's, of a function real on the reals) decides, and
    without one `g` stays as it is: its imaginary part never reaches a real part
    (a real value's cotangent meets complex values only through rules that take
    the real part of `dy`), and `adjoint.api` keeps the real part of an input's."""
    if g is None or not _is_complex(g):
        return g
    if x is None or (type(x) is float and x == 0.0):
        x = y
    if x is None or _is_complex(x):
        return g
    if not isinstance(x, (numbers.Number, np.number, np.ndarray)):
        return g
    return g.real if isinstance(g, (complex, np.complexfloating)) else np.real(g).copy()


class TangentHelper:
    """A plain-Python function of forward mode's rules (`adjoint.rules_tangent`),
    called from tangent IR: the interpreter calls it as a library function, the JIT
    compiles it as user code (it takes None for a zero tangent).  Prints as
    `@module.name`."""

    def __init__(self, fn: Callable, interpreted: str = "", options: tuple = (),
                 real_only: bool = False):
        self.fn = fn
        # whether the rule assumes real values (a comparison, |x|, x.T for x^H): a
        # complex operand is refused (see IN_FORWARD_MODE)
        self.real_only = real_only
        self.interpreted = interpreted    # why the JIT does not compile it, if so
        # parameters the JIT specialises the compiled rule on when the call passes a
        # constant (an axis: the numpy calls inside need it at compile time)
        self.options = tuple(options)
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__zygopy_symbol__ = f"{fn.__module__}.{fn.__name__}"
        # check(self, out, args) -> out: a user's jvp rule's result checked (adjoint.custom)
        self.check: Optional[Callable] = None

    def __call__(self, *args: Any, **kw: Any) -> Any:
        if self.real_only:
            for a in args:
                if type(a) not in _REAL and _is_complex(a):
                    raise TypeError(FORWARD_REFUSAL)
        out = self.fn(*args, **kw)
        return out if self.check is None else self.check(self, out, args)

    def __zygopy_explain__(self, *operands) -> str:
        return "the forward-mode derivative of the operation on this line"

    def __repr__(self) -> str:
        return f"<tangent rule {self.__zygopy_symbol__}>"


def _keywords(fn: Callable) -> Optional[frozenset]:
    """The keyword names `fn` accepts, or None when it takes `**kwargs`."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params
                     if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


@dataclass
class Rule:
    """How to differentiate one primitive or callee (see the module docstring)."""

    key: Any
    pullback: Optional[Pullback] = None
    emit: Optional[str] = None
    needs: Optional[Callable] = None   # (active mask: tuple of bool) -> set of positions
    varied: bool = True                # False: the result never carries a cotangent
    scalar: tuple = ()                 # variants for operands that are numbers
    when: Optional[Callable] = None    # a variant's condition on the active mask
    partial: tuple = ()                # variants for an operand without a cotangent
    jvp: Optional[Callable] = None     # forward mode's emitter (adjoint.rules_tangent)
    # the callee may return its operands or views of them (a user's function with a
    # rule): its result shares their memory (adjoint.passes.aliases)
    keeps_operands: bool = False
    # keyword operands that never carry a cotangent (sorted's key=: the order it gives
    # is piecewise constant), even when they hold a differentiable value
    nondiff_keywords: frozenset = frozenset()

    @property
    def differentiable(self) -> bool:
        return self.varied and (self.pullback is not None or self.emit is not None)

    def alphas(self, active: tuple) -> set:
        """Positions of the operands the pullback reads."""
        if self.emit is not None and self.needs is None:
            return set()
        if self.needs is None:
            return set(range(len(active)))
        return set(self.needs(active))


OP_RULES: dict = {}      # primitive op name -> Rule
CALL_RULES: dict = {}    # callee object -> Rule
_BY_ID: dict = {}        # id(callee) -> Rule, for unhashable callees


def _store(key: Any, rule: Rule) -> Rule:
    if isinstance(key, str):
        OP_RULES[key] = rule
        return rule
    try:
        CALL_RULES[key] = rule
    except TypeError:
        _BY_ID[id(key)] = (key, rule)
    return rule


def lookup_op(op: str) -> Optional[Rule]:
    return OP_RULES.get(op)


def lookup_callee(f: Any) -> Optional[Rule]:
    """The rule for callee object `f`, if any (bound ndarray methods included)."""
    try:
        r = CALL_RULES.get(f)
    except TypeError:
        r = None
    if r is not None:
        return r
    hit = _BY_ID.get(id(f))
    if hit is not None and hit[0] is f:
        return hit[1]
    return _method_rule(f) or _constructor_rule(f) or _exception_rule(f) or _operator_rule(f)


def _exception_rule(cls: Any) -> Optional[Rule]:
    """An exception class called to make the exception a `raise` raises: nothing
    differentiable comes out of it (what raises has no result to differentiate)."""
    if not (inspect.isclass(cls) and issubclass(cls, BaseException)):
        return None
    return _store(cls, Rule(cls, varied=False))


def _operator_rule(f: Any) -> Optional[Rule]:
    """`operator.add` and friends called as values (`g = operator.mul; g(x, y)`): the
    rule of the primitive they are (lowering emits the primitive itself where it sees
    the function at the call).  A primitive differentiated only by emitted IR has no
    pullback to run on values: None (the caller reports the missing rule)."""
    op = operator_primitive(f)
    rule = OP_RULES.get(op[0]) if op is not None else None
    if rule is None or (rule.varied and rule.pullback is None):
        return None
    return rule


def _constructor_rule(cls: Any) -> Optional[Rule]:
    """A named tuple class or plain dataclass called as a constructor: its fields'
    cotangents go back to the arguments that filled them (`adjoint.pytrees`)."""
    fields = constructor_fields(cls)
    if fields is None:
        return None
    pb = Pullback(construct_pullback(fields))
    made = getattr(cls, "cls", cls)     # (a RecordMaker: the class it makes)
    pb.of = f"{made.__module__}.{made.__qualname__}"
    pb.fields = fields          # (compiled code routes the cotangents by field itself)
    rule = Rule(cls, pb, needs=lambda active: set())
    rule.jvp = construct_jvp(cls, fields)
    return _store(cls, rule)


METHOD_RULES: dict = {}   # (type, method name) -> Rule, for bound methods


def method_key(f: Any) -> tuple:
    """The `METHOD_RULES` key of bound method `f`: (its object's type, its name); a
    numpy scalar's method (`np.float64(x).sum()`) is its ndarray twin's."""
    owner = getattr(f, "__self__", None)
    cls = np.ndarray if isinstance(owner, np.generic) else type(owner)
    return cls, getattr(f, "__name__", None)


def _method_rule(f: Any) -> Optional[Rule]:
    owner = getattr(f, "__self__", None)
    name = getattr(f, "__name__", None)
    if owner is None or name is None or isinstance(owner, type(__import__("math"))):
        return None
    return METHOD_RULES.get(method_key(f))


def nondiff(*keys: Any) -> None:
    """Register `keys` as having no derivative (their results carry none)."""
    for k in keys:
        _store(k, Rule(k, varied=False))


def defpullback(key: Any, fn: Callable, uses_result: bool = False,
                needs: Optional[Callable] = None) -> Rule:
    """Register plain-Python pullback `fn` for op name or callee `key`."""
    pb = fn if isinstance(fn, Pullback) else Pullback(fn, uses_result)
    return _store(key, Rule(key, pullback=pb, needs=needs))


def defmethod(cls: type, name: str, fn: Callable, uses_result: bool = False) -> Rule:
    """Register a pullback for the bound method `obj.name` of instances of `cls`; the
    pullback receives the object as its first argument."""
    rule = Rule((cls, name), pullback=Pullback(fn, uses_result))
    METHOD_RULES[(cls, name)] = rule
    return rule


def _add_variant(kind: str, key: Any, needs: Callable, when: Optional[Callable]):
    """Decorator: add to the `kind` variants ("scalar" or "partial") of the rule of op
    name `key` (defined before) one reading the operands `needs(active)`, for the
    active masks where `when(active)` holds (None: every mask)."""
    def deco(fn: Callable) -> Pullback:
        pb = Pullback(fn)
        rule = OP_RULES[key]
        variant = Rule(key, pullback=pb, needs=needs, when=when)
        setattr(rule, kind, getattr(rule, kind) + (variant,))
        return pb
    return deco


def _variant(variants: tuple, rule: Rule, active: tuple) -> Rule:
    """The first of `variants` that applies to this active mask, or `rule` itself."""
    for v in variants:
        if v.when is None or v.when(active):
            return v
    return rule


def scalar_rule(key: Any, needs: Callable, when: Optional[Callable] = None):
    """Decorator: a scalar variant of the rule of op name `key`, for operands that are
    all proven numbers; the first that applies is used."""
    return _add_variant("scalar", key, needs, when)


def scalar_variant(rule: Rule, active: tuple) -> Rule:
    """The scalar variant of `rule` for this active mask, or `rule` itself."""
    return _variant(rule.scalar, rule, active)


def partial_rule(key: Any, needs: Callable, when: Callable):
    """Decorator: a variant of the rule of op name `key` for the active masks where
    `when(active)` holds, whatever the operands' types: one that does not compute the
    cotangent of an operand that has none (`2.0 * u`: no reduction of dy * u to a
    number), returning None for it."""
    return _add_variant("partial", key, needs, when)


def partial_variant(rule: Rule, active: tuple) -> Rule:
    """The variant of `rule` for an active mask with inactive operands, or `rule`."""
    return _variant(rule.partial, rule, active)


def no_operands(active: tuple) -> set:
    """`needs` of a pullback that reads no operand (`add`, `exp` with its result)."""
    return set()


def other_operand(active: tuple) -> set:
    """`needs` of a bilinear pullback: each active operand reads the other one."""
    return {1 - k for k, on in enumerate(active[:2]) if on}


def structural(op: str, needs: Optional[Callable] = None) -> Rule:
    """An op whose adjoint `adjoint.passes.reverse` emits as IR directly."""
    return _store(op, Rule(op, emit=op, needs=needs))


def pullback_rule(key: Any, uses_result: bool = False, needs: Optional[Callable] = None,
                  nondiff_keywords: tuple = ()):
    """Decorator form of `defpullback` for rule modules: `@pullback_rule(math.sin)`.
    The decorated name is bound to the `Pullback` object (so the adjoint IR prints
    and parses it as `@module.name`). `nondiff_keywords` names the keyword operands
    that carry no cotangent (`Rule.nondiff_keywords`)."""
    def deco(fn: Callable) -> Pullback:
        pb = Pullback(fn, uses_result)
        keys = key if isinstance(key, (list, tuple)) else (key,)
        pb.of = callee_name(keys[0])
        for k in keys:
            defpullback(k, pb, uses_result, needs).nondiff_keywords = frozenset(nondiff_keywords)
        return pb
    return deco


def callee_name(key: Any) -> str:
    """How error messages name op name or callee `key`."""
    if isinstance(key, str):
        return f"the operator {key}"
    from ssair.printer import object_name
    return object_name(key)


def linear(key: Any, fn: Callable) -> Rule:
    """A linear function: its pullback is its transpose `fn(dy, *args)`, so the same
    `defpullback`; kept as a separate name for readability of the tables."""
    return defpullback(key, fn)
