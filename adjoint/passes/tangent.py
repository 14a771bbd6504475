"""Pass `tangent`: the forward-mode (jvp) transform of a primal IR.

Requires: `merge_returns` and `canonical_inplace` (run by `tangent_ir`).  Given which
arguments carry a tangent, it returns an IR with the primal's arguments followed by one
tangent argument per such argument (named `d<name>`), the primal's blocks and
statements unchanged, and after each statement whose result is *varied* (it may
depend on a tangent argument: `activity.analyze`) the statements that compute its
tangent, from the rule table's `jvp` entries (`adjoint.rules_tangent`).  It returns
the tuple `(y, dy)`.

  * a phi that is varied gets a tangent phi; an incoming value without a tangent
    enters as a zero (a constant, or `zero_tangent` emitted at the end of the
    predecessor: 0.0 for any number, an int's too, where the cotangent `zero` gives
    None);
  * a varied value whose statement has no varied operand (an array allocated by
    `np.zeros` that the function later writes a varied value into) gets a zero tangent
    of its shape right after it, which the writes then update in place, views included
    (the tangent of `a[1:]` is `da[1:]`, a view of `da`);
  * in-place operators compute the tangent from the operands before the update;
  * a call of a user function calls its tangent function, whose IR is this transform
    of the callee's (so recursion and loops in callees need nothing else); it returns
    `(y, dy)`;
  * a method linear in its object (`x.sum()`, `x.reshape(...)`, a dict's `items`) is
    the same method of the object's tangent, or its numpy function (`np.sum`) where
    that takes the same operands (a numpy scalar's tangent is a float);
    `append`/`extend`/`insert` store the value's tangent; the other array methods
    (`x.dot`, `x.max`) are the numpy function of the same name;
  * a method no array has (`obj.energy(x)`) is called through `j_call_method`, which
    runs its class's function with `obj` and obj's tangent as its first argument (an
    object's tangent is a tuple of its attributes' tangents: `adjoint.structure`).
Nothing is recorded: a loop's tangent runs in the primal's own iterations.  A
statement with a varied operand and no rule raises TypeError naming it and `file:line`.
"""
from __future__ import annotations

import types as pytypes
from typing import Any, Callable, Optional

import numpy as np

from lowering.runtime import UNBOUND
from ssair import IR, Const, Phi, Return, Stmt, Var
from ssair.cfg import reverse_postorder
from ssair.passes.scalars import Scalars
from ssair.primitives import INPLACE, operator_primitive, register

from .activity import analyze
from ..rule_table import Pullback
from ..special_callees import own_rule_code, rule_function, special_tangent

# array methods linear in the array: the tangent is the same method of its tangent
LINEAR_METHODS = frozenset({
    "sum", "mean", "reshape", "transpose", "ravel", "flatten", "cumsum", "squeeze",
    "trace", "diagonal", "swapaxes", "take", "repeat", "copy", "conjugate", "conj",
    "items", "values", "get", "pop"})
# the linear methods whose second operand is a default returned where the key is
# missing (`d.get(k, v)`, `d.pop(k, v)`): the tangent's default is v's tangent
DEFAULTED_METHODS = frozenset({"get", "pop"})
# the linear array methods whose numpy function takes the same operands, the array
# first (no list or dict method has these names): the tangent is that function of the
# tangent, also where the object is a numpy scalar (`np.float64(x).sum()`) whose
# tangent is a float
LINEAR_FUNCTIONS = {name: getattr(np, name) for name in (
    "sum", "mean", "cumsum", "squeeze", "trace", "diagonal", "swapaxes", "take", "repeat",
    "ravel", "conjugate", "conj")}
# methods of lists that store a value: the same method of the tangent list, with the
# tangent of the value (at these operand positions)
STORING_METHODS = {"append": (0,), "extend": (0,), "insert": (1,)}
# methods whose result has no tangent
NONDIFF_METHODS = frozenset({"argmin", "argmax", "argsort", "nonzero", "any", "all",
                             "keys", "index", "count"})
# the others: the numpy function of the same name, with the array first
METHODS = {name: getattr(np, name) for name in (
    "dot", "clip", "prod", "max", "min", "std", "var", "cumprod")}


def zero_tangent(x: Any) -> Any:
    """The zero tangent of a value: 0.0 for a number (an int's tangent is a float zero,
    as JAX's float0 is to a gradient), float zeros for an array, and the same for each
    entry of a container; None for anything else."""
    if isinstance(x, (bool, int, float, np.integer, np.floating, np.bool_)):
        return 0.0
    if isinstance(x, np.ndarray):
        return np.zeros(x.shape) if x.dtype.kind in "biuf" else None
    if isinstance(x, tuple):
        return tuple([zero_tangent(v) for v in x])
    if isinstance(x, list):
        return [zero_tangent(v) for v in x]
    if isinstance(x, dict):
        out = {}
        for k in x:
            out[k] = zero_tangent(x[k])
        return out
    return None


# the zero tangent of a value whose kind the transform does not know (the cotangent
# primitive `zero` gives None for an int, which would reach the rules' arithmetic)
register("zero_tangent", 1, zero_tangent, foldable=False, symbol="zero_tangent(x)")


class Emitter:
    """What a `jvp` rule emits through: new statements around the current one."""

    def __init__(self, out: IR, kinds: Scalars, line: Optional[int],
                 defs: Optional[dict] = None):
        self.out, self.kinds = out, kinds
        self.defs = defs or {}
        self.pre: list = []
        self.post: list = []
        self.into = self.post
        self.line = line
        self.tangents: dict = {}     # the tangents made so far (keyword operands' too)

    def op(self, op: str, *args: Any, **kwargs: Any) -> Var:
        v = self.out.new_var()
        ops = [a if isinstance(a, (Var, Const)) else Const(a) for a in args]
        kw = {k: a if isinstance(a, (Var, Const)) else Const(a) for k, a in kwargs.items()}
        self.into.append(Stmt(v, op, ops, kw, self.line))
        return v

    def after(self, fn: Callable) -> Any:
        """Emit `fn()` after the primal statement."""
        saved, self.into = self.into, self.post
        try:
            return fn()
        finally:
            self.into = saved

    def operands(self, s: Stmt) -> list:
        return list(s.args[1:]) if s.op == "call" else list(s.args)

    def same(self, s: Stmt, args: list) -> Var:
        """`s`'s operation on other operands (keywords kept)."""
        if s.op == "call":
            return self.op("call", s.args[0], *args, **s.kwargs)
        return self.op(s.op, *args, **s.kwargs)

    def rule_of(self, s: Stmt):
        from ..rules import lookup_callee, lookup_op
        return lookup_callee(s.args[0].value) if s.op == "call" else lookup_op(s.op)

    def is_number(self, a: Any) -> bool:
        if isinstance(a, Const):
            return isinstance(a.value, (int, float)) and not isinstance(a.value, bool)
        return self.kinds.is_scalar(a)

    def is_tuple(self, a: Any) -> bool:
        """Is `a` certainly a tuple (a constant one, or one built here)?"""
        if isinstance(a, Const):
            return isinstance(a.value, tuple)
        made = self.defs.get(a)
        return made is not None and made.op == "tuple"

    def zero(self, a: Any) -> Any:
        """The zero tangent of operand `a`: a container that may be appended to or
        written into is made anew (a list literal as a list of zeros)."""
        if isinstance(a, Const):
            return Const(zero_tangent(a.value))
        if self.is_number(a):
            return Const(0.0)
        made = self.defs.get(a)
        if made is not None and made.op in ("list", "dict", "tuple"):
            return self.op(made.op, *[x if made.op == "dict" and k % 2 == 0 else self.zero(x)
                                      for k, x in enumerate(made.args)])
        if made is not None and made.op == "call" and isinstance(made.args[0], Const) \
                and made.args[0].value in (list, dict):
            return self.op("call", _helper("zero"), a)
        return self.op("zero_tangent", a)

    def or_none(self, t: Any) -> Any:
        return Const(None) if t is None else t

    def tuple(self, items: list) -> Var:
        return self.op("tuple", *[Const(None) if t is None else t for t in items])


def tangent(ir: IR, active: tuple, types: Optional[tuple], callee_tangent: Callable,
            only_tangent: bool = False) -> IR:
    """The tangent IR of `ir` (see the module docstring).  `active[k]`: argument k has
    a tangent; `types`: the scalar analysis' argument type names (or None);
    `only_tangent`: return `dy` alone (a directional derivative, for `hvp`);
    `callee_tangent(f, active, types_of_operands)` gives the tangent function of a user
    function `f` called with tangents on the operands `active`."""
    from ..rules import lookup_callee, lookup_op
    act = analyze(ir, active)
    varied = act.varied
    seeded = ir.copy()
    for a, t in zip(seeded.args, types or ()):
        if a.type is None and t is not None:
            a.type = t
    kinds = Scalars(seeded)
    out = ir.copy()
    out.name = f"{ir.name}_tangent"
    out.meta = {k: v for k, v in ir.meta.items() if k in ("source_name",)}
    out.meta.setdefault("source_name", ir.meta.get("source_name", ir.name))
    tan: dict = {}
    for a, on in zip(list(out.args), active):
        if on:
            tan[a.var] = out.add_arg("d" + a.name)
    defs = {s.var: s for b in out.blocks for s in b.stmts}
    uses: dict = {}
    for user, a in out.uses():
        if isinstance(a, Var):
            uses.setdefault(a, []).append(user)
    phi_tangents: list = []
    for b in out.blocks:
        new = []
        for p in b.phis:
            if p.var in varied:
                tp = Phi(out.new_var(), {}, p.line, None if p.name is None else "d" + p.name)
                phi_tangents.append((b, p, tp))
                tan[p.var] = tp.var
                new.append(tp)
        b.phis.extend(new)
    ends: dict = {}     # block id -> statements appended before its terminator
    order = reverse_postorder(out)      # a value's tangent is made before its uses
    by_id = {b.id: b for b in out.blocks}
    rest = [b for b in out.blocks if b.id not in set(order)]
    for b in [by_id[k] for k in order] + rest:
        stmts = []
        for s in b.stmts:
            if s.var not in varied and not _writes_varied(s, varied):
                stmts.append(s)
                continue
            em = Emitter(out, kinds, s.line, defs)
            em.tangents = tan
            ts = [tan.get(a) if isinstance(a, Var) else None for a in em.operands(s)]
            replaced = _user_call(em, s, ts, tan, kinds, callee_tangent, lookup_callee, defs,
                                  out)
            if replaced is not None:
                stmts.extend(replaced)
                continue
            method = s.op == "call" and isinstance(s.args[0], Var) and \
                isinstance(getattr(defs.get(s.args[0]), "args", [None])[0], Var) and \
                defs[s.args[0]].args[0] in varied
            if s.var in varied and not any(t is not None for t in ts) and not method \
                    and s.op not in ("setitem", "list", "tuple", "dict"):
                stmts.append(s)
                em.into = stmts
                tan[s.var] = em.zero(s.var)
                continue
            t = _emit(em, s, ts, tan, defs, lookup_callee, lookup_op, uses)
            stmts.extend(em.pre)
            stmts.append(s)
            stmts.extend(em.post)
            if t is not None and s.var in varied:
                tan[s.var] = t
            elif s.var in varied and s.op == "call" and any(
                    getattr(u, "op", None) == "setitem" and u.args[0] == s.var
                    for u in uses.get(s.var, ())):
                # a result with no derivative (`np.zeros_like(h)`) that a differentiated
                # value is written into later: its tangent starts at zero, and the
                # write's tangent goes into it (it had none, and the write was lost)
                em.into = stmts
                tan[s.var] = em.zero(s.var)
        b.stmts = stmts
    for b, p, tp in phi_tangents:
        for pred, v in p.incoming.items():
            t = tan.get(v) if isinstance(v, Var) else None
            if t is None:
                if isinstance(v, Const) and v.value is UNBOUND:
                    t = v                # a local not yet assigned: its tangent neither
                elif isinstance(v, Const):
                    t = Const(zero_tangent(v.value))
                else:
                    em = Emitter(out, kinds, p.line, defs)
                    em.into = ends.setdefault(pred, [])
                    t = em.zero(v)
            tp.incoming[pred] = t
    for b in out.blocks:
        b.stmts.extend(ends.get(b.id, []))
        if isinstance(b.term, Return):
            v = b.term.value
            t = tan.get(v) if isinstance(v, Var) else None
            em = Emitter(out, kinds, None, defs)
            em.into = b.stmts
            if t is None:
                t = em.zero(v)
            b.term = Return(t if only_tangent else em.op("tuple", v, t))
    return out


def _writes_varied(s: Stmt, varied: set) -> bool:
    """`a[i] = v` (or `xs.append(v)`) into a varied container."""
    return s.op in ("setitem", "list_append") and isinstance(s.args[0], Var) \
        and s.args[0] in varied


def _user_call(em: Emitter, s: Stmt, ts: list, tan: dict, kinds: Scalars,
               callee_tangent: Callable, lookup_callee: Callable, defs: dict,
               ir: IR) -> Optional[list]:
    """A call of a user function: `%r = call(tangent of f, args..., tangents...)`, the
    primal's value `%y = getitem(%r, 0)` and its tangent `getitem(%r, 1)`.  A closure
    made here (`make_closure(@inner, captured...)`) is called as its inner function
    with the captured values (and their tangents) as leading arguments; any other
    function value goes through `j_call_value` at run time."""
    if s.op != "call":
        return None
    f = s.args[0]
    if isinstance(f, Const) and special_tangent(f.value) is not None:
        return special_tangent(f.value)(em, s, ts, tan, kinds, defs, ir)
    args = em.operands(s)
    captured: list = []
    if isinstance(f, Const) and isinstance(f.value, Pullback) and not s.kwargs:
        from ..generated import pullback_caller     # a rule's pullback in an adjoint IR
        fn = pullback_caller(f.value, len(args))
    elif isinstance(f, Const):
        fn = rule_function(f.value)     # forward mode's own helper: its Python code, so
        from ssair.interpreter import is_user_function  # forward over forward works
        if not (type(fn) is pytypes.FunctionType and (is_user_function(fn) or
                                                      own_rule_code(f.value))) or \
                lookup_callee(fn) is not None or lookup_callee(f.value) is not None:
            return None
    else:
        made = defs.get(f)
        if made is not None and made.op == "getattr":
            if isinstance(made.args[1], Const) and made.args[1].value not in _ARRAY_METHODS:
                return _object_method_call(em, s, ts, tan, made)
            return None                 # an array's method (`_method_call`)
        if made is None or made.op != "make_closure" or not isinstance(made.args[0], Const) \
                or set(made.kwargs) - {"defaults"}:
            return _dynamic_call(em, s, ts, tan)
        fn = made.args[0].value
        if isinstance(fn, pytypes.CodeType):
            from ssair.interpreter import closure_template
            fn = closure_template(fn, getattr(ir.func, "__globals__", {}))
        if made.kwargs and not _binds(fn, args, s.kwargs):
            return _dynamic_call(em, s, ts, tan)    # (it refuses the call at run time)
        captured = list(made.args[1:])
    kwts = [tan.get(v) if isinstance(v, Var) else None for v in s.kwargs.values()]
    args, ts = bind_parameters(fn, args, dict(s.kwargs), list(ts) + kwts, Const,
                               lambda kind, vs, vts, keys: _pack(em, kind, vs, vts, keys))
    tcaptured = [tan.get(c) if isinstance(c, Var) else None for c in captured]
    mask = tuple(t is not None for t in ts)
    argtypes = tuple(_type_name(kinds, a) for a in args)
    if captured:
        cmask = tuple(t is not None for t in tcaptured)
        ctypes = tuple(_type_name(kinds, a) for a in captured)
        target = callee_tangent(fn, mask, argtypes, cmask, ctypes)
    else:
        target = callee_tangent(fn, mask, argtypes)
    em.into = em.post
    r = em.op("call", target, *captured, *args,
              *[t for t in tcaptured + list(ts) if t is not None])
    tan[s.var] = em.op("getitem", r, 1)
    return _after_call(em.post, r, Stmt(s.var, "getitem", [r, Const(0)], {}, s.line, s.name))


def bind_parameters(fn: Any, args: list, kwargs: dict, ts: list, wrap: Callable,
                    pack: Optional[Callable] = None) -> tuple:
    """(one operand per parameter of `fn`, in order, and their tangents) for a call
    `fn(*args, **kwargs)`: defaults filled in (as `wrap(value)`, without a tangent),
    keyword arguments placed, and the values of a `*args` (`**kwargs`) parameter packed
    by `pack("tuple" or "dict", values, keys) -> (value, tangent)` (`ts[k]` is the
    tangent of args[k], then of each keyword's value; None: none)."""
    code = getattr(fn, "__code__", None)
    if code is not None and not kwargs and len(args) == code.co_argcount \
            and not code.co_kwonlyargcount and not code.co_flags & 0x0C:
        return list(args), list(ts)
    import inspect
    sig = inspect.signature(fn)
    marks = [_Mark(k) for k in range(len(args) + len(kwargs))]
    allts = list(ts) + [None] * (len(marks) - len(ts))
    bound = sig.bind(*marks[:len(args)], **dict(zip(kwargs, marks[len(args):])))
    bound.apply_defaults()
    values = list(args) + list(kwargs.values())
    outs, touts = [], []
    for name, v in bound.arguments.items():
        kind = sig.parameters[name].kind
        if isinstance(v, _Mark):
            outs.append(values[v.k])
            touts.append(allts[v.k])
        elif kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            ms = list(v) if kind is inspect.Parameter.VAR_POSITIONAL else list(v.values())
            keys = None if kind is inspect.Parameter.VAR_POSITIONAL else list(v)
            packed, tpacked = pack("tuple" if keys is None else "dict",
                                   [values[m.k] for m in ms], [allts[m.k] for m in ms], keys)
            outs.append(packed)
            touts.append(tpacked)
        else:
            outs.append(wrap(v))
            touts.append(None)
    return outs, touts


def _binds(fn: Any, args: list, kwargs: dict) -> bool:
    """Does the call give every parameter of `fn` without its defaults?  The lowering
    passes a closure's run-time defaults (`def g(n=x)`) as operands where it is
    made, so its calls there do: the defaults' tangents come with them."""
    import inspect
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return False
    return True


class _Mark:
    __slots__ = ("k",)

    def __init__(self, k: int):
        self.k = k


def _pack(em: Emitter, kind: str, values: list, tangents: list, keys: Optional[list]) -> tuple:
    """The tuple (dict) a `*args` (`**kwargs`) parameter receives, and its tangent
    (None when no entry has one)."""
    if keys is not None:
        flat = [x for k, v in zip(keys, values) for x in (Const(k), v)]
        tflat = [x for k, v, t in zip(keys, values, tangents)
                 for x in (Const(k), t if t is not None else em.zero(v))]
    else:
        flat, tflat = values, [t if t is not None else em.zero(v)
                               for v, t in zip(values, tangents)]
    packed = em.op(kind, *flat)
    return packed, (em.op(kind, *tflat) if any(t is not None for t in tangents) else None)


def _after_call(stmts: list, r: Var, primal: Stmt) -> list:
    """`stmts` with the primal's value `primal` (read from the call's result `r`) placed
    right after the call."""
    k = next(i for i, d in enumerate(stmts) if d.var == r)
    return stmts[:k + 1] + [primal] + stmts[k + 1:]


_ARRAY_METHODS = frozenset(METHODS) | LINEAR_METHODS | NONDIFF_METHODS | \
    frozenset(STORING_METHODS) | {"astype"}


def _object_method_call(em: Emitter, s: Stmt, ts: list, tan: dict, made: Stmt) -> list:
    """`obj.name(args)` for a method no array has: `call(@j_call_method, obj, name,
    where, n, args..., tangent of obj, tangents of args)`, which runs the method's
    function with `obj` and its tangent first (`self` is an argument like any other)."""
    if s.kwargs:
        raise TypeError(f"jvp: a method call with keyword arguments is not supported in "
                        f"forward mode yet ({_where(em, s)})")
    obj = made.args[0]
    tobj = tan.get(obj) if isinstance(obj, Var) else None
    em.into = em.post
    args = em.operands(s)
    r = em.op("call", _helper("call_method"), obj, made.args[1], _where(em, s), len(args),
              *args, em.or_none(tobj), *[em.or_none(t) for t in ts])
    tan[s.var] = em.op("getitem", r, 1)
    return _after_call(em.post, r, Stmt(s.var, "getitem", [r, Const(0)], {}, s.line, s.name))


def _dynamic_call(em: Emitter, s: Stmt, ts: list, tan: dict) -> list:
    """`f(args)` for a function value known only at run time (an argument, a choice
    between functions): `call(@j_call_value, f, n, args..., tangents or None...)`,
    which the interpreter runs by `jvp` of f and the JIT compiles as a call of f's
    tangent function (it knows f from its type)."""
    if s.kwargs:
        raise TypeError(f"jvp: a call of a computed function with keyword arguments is "
                        f"not supported in forward mode yet ({_where(em, s)})")
    if isinstance(s.args[0], Var) and tan.get(s.args[0]) is not None:
        raise TypeError(f"jvp: a call of a value that carries a tangent (an object called "
                        f"through `__call__`, a bound method of one) is not supported in "
                        f"forward mode yet ({_where(em, s)}); use reverse mode "
                        "(gradient, pullback)")
    em.into = em.post
    args = em.operands(s)
    r = em.op("call", _helper("call_value"), s.args[0], len(args), *args,
              *[em.or_none(t) for t in ts])
    tan[s.var] = em.op("getitem", r, 1)
    return _after_call(em.post, r, Stmt(s.var, "getitem", [r, Const(0)], {}, s.line, s.name))


def _type_name(kinds: Scalars, a: Any) -> Optional[str]:
    if isinstance(a, Const):
        v = a.value
        return "bool" if isinstance(v, bool) else "int64" if isinstance(v, int) else \
            "float64" if isinstance(v, float) else None
    k = kinds.kind(a)
    return {int: "int64", float: "float64", bool: "bool"}.get(k) if k is not None else None


def _where(em: Emitter, s: Stmt) -> str:
    """`in f at file:line` for an error message."""
    name = em.out.meta.get("source_name", em.out.name)
    return f"in {name} at {em.out.file}:{s.line or em.out.firstline}"


def _escapes(v: Var, defs: dict, uses: dict, lookup_callee: Optional[Callable] = None) -> bool:
    """Is closure `v` used other than as the callee of a call (or a phi's operand),
    or as a keyword operand that carries no derivative (`Rule.nondiff_keywords`:
    sorted's key=, which then gets the primal closure)?"""
    return any(not (getattr(u, "op", None) == "call" and u.args[0] == v and v not in u.args[1:]
                    and v not in u.kwargs.values()) and not _nondiff_keyword(u, v, lookup_callee)
               for u in uses.get(v, ()))


def _nondiff_keyword(u, v: Var, lookup_callee: Optional[Callable]) -> bool:
    """Is `v` only a keyword operand without a derivative of library call `u`?"""
    if lookup_callee is None or getattr(u, "op", None) != "call" \
            or not isinstance(u.args[0], Const) or v in u.args[1:]:
        return False
    rule = lookup_callee(u.args[0].value)
    return rule is not None and all(k in rule.nondiff_keywords
                                    for k, a in u.kwargs.items() if a == v)


def _emit(em: Emitter, s: Stmt, ts: list, tan: dict, defs: dict, lookup_callee: Callable,
          lookup_op: Callable, ir_uses: dict) -> Any:
    if s.op == "setitem":            # setitem(a, value, index): the tangent's entry too
        a, v = s.args[0], s.args[1]
        ta = tan.get(a) if isinstance(a, Var) else None
        if ta is None:
            return None
        tv = ts[1] if ts[1] is not None else em.zero(v)
        em.op("setitem", ta, tv, *s.args[2:])
        return None
    if s.op == "list_append":        # its value is the list: the tangent's is its tangent
        ta = ts[0]
        if ta is None:
            return None
        return em.op("list_append", ta, ts[1] if ts[1] is not None else em.zero(s.args[1]))
    if s.op in ("tuple", "list"):
        return em.op(s.op, *[t if t is not None else em.zero(a) for a, t in zip(s.args, ts)])
    if s.op == "dict":
        return em.op("dict", *[t if t is not None else (em.zero(a) if k % 2 else a)
                               for k, (a, t) in enumerate(zip(s.args, ts))])
    if s.op == "make_closure":      # called where it is made: see _user_call
        if _escapes(s.var, defs, ir_uses, lookup_callee):
            raise TypeError(f"jvp: a function that reads differentiated values from its "
                            f"enclosing function is passed on or stored ({_where(em, s)}); "
                            "forward mode follows such a closure only where it is called "
                            "in the function that makes it")
        return None
    if s.op == "getitem":
        if ts[0] is None:
            return None
        return em.op("getitem", ts[0], *s.args[1:])
    if s.op == "getattr" and ir_uses.get(s.var) and not _escapes(s.var, defs, ir_uses):
        return None                  # a method, only called: see _user_call
    if s.op == "getattr" and isinstance(s.args[1], Const) and \
            (s.args[1].value in METHODS or s.args[1].value in LINEAR_METHODS
             or s.args[1].value in NONDIFF_METHODS or s.args[1].value in STORING_METHODS
             or s.args[1].value == "astype"):
        return None                  # a bound method: its call (below) differentiates it
    out = s.kwargs.get("out") if s.op == "call" else None
    if isinstance(out, Var) and any(isinstance(v, Var) and tan.get(v) is not None
                                    for v in list(s.args[1:]) + list(s.kwargs.values())):
        raise TypeError(f"jvp: writing a result into an array with out= ({_where(em, s)}) "
                        "is not differentiable yet; assign the result instead (`o = f(x)` "
                        "or `o[...] = f(x)`)")
    if s.op == "call" and isinstance(s.args[0], Const) and not s.kwargs:
        op = operator_primitive(s.args[0].value)     # operator.mul(a, b) is a * b
        if op is not None and len(s.args) - 1 == op[1]:
            s = Stmt(s.var, op[0], list(s.args[1:]), {}, s.line, s.name)
    if s.op == "call":
        f = s.args[0]
        if isinstance(f, Var):
            return _method_call(em, s, ts, tan, defs, lookup_callee)
        rule = lookup_callee(f.value)
        what = f"the call of {getattr(f.value, '__qualname__', f.value)!r}"
    else:
        rule = lookup_op(s.op)
        what = f"the operator {s.op}"
    if rule is not None and not rule.varied:
        return None         # (np.zeros_like(x) where x varies: a constant all the same)
    if rule is None or not rule.differentiable:
        raise TypeError(f"jvp: no derivative rule for {what} ({_where(em, s)}) in "
                        "forward mode")
    if s.op in INPLACE:
        em.into = em.pre
    jvp = getattr(rule, "jvp", None)
    if jvp is not None:
        return jvp(em, s, ts)
    if rule.pullback is None:
        raise TypeError(f"jvp: no forward-mode rule for {what} ({_where(em, s)})")
    return _helper("rows")(em, s, ts)


def _method_call(em: Emitter, s: Stmt, ts: list, tan: dict, defs: dict,
                 lookup_callee: Callable) -> Any:
    """`x.name(args)`: the same method of x's tangent for a method linear in x (with
    the tangents of args, which are parameters, ignored), else the tangent of
    `np.name(x, args)`."""
    m = defs.get(s.args[0])
    name = m.args[1].value if m is not None and m.op == "getattr" and \
        isinstance(m.args[1], Const) else None
    if name == "keys":               # labels: no tangent at all
        return None
    if name in NONDIFF_METHODS:
        return em.zero(s.var)
    if name == "astype" and name is not None:
        obj = m.args[0]
        tobj = tan.get(obj) if isinstance(obj, Var) else None
        return None if tobj is None else em.op("call", _helper("astype"), tobj, *s.args[1:])
    if name not in METHODS and name not in LINEAR_METHODS and name not in STORING_METHODS:
        raise TypeError(f"jvp: forward mode has no rule for the method {name!r} "
                        f"({_where(em, s)}) yet")
    obj = m.args[0]
    tobj = tan.get(obj) if isinstance(obj, Var) else None
    if name in LINEAR_METHODS:
        if tobj is None:
            return None
        if name in LINEAR_FUNCTIONS:
            return em.op("call", LINEAR_FUNCTIONS[name], tobj, *s.args[1:], **s.kwargs)
        args = list(s.args[1:])
        if name in DEFAULTED_METHODS and len(args) == 2:     # `d.get(k, v)`: v's tangent
            args[1] = ts[1] if ts[1] is not None else em.zero(args[1])
        return em.op("call", em.op("getattr", tobj, name), *args, **s.kwargs)
    if name in STORING_METHODS:
        if tobj is None:
            return None
        args = list(s.args[1:])
        for k in STORING_METHODS[name]:
            if k < len(args):
                args[k] = ts[k] if ts[k] is not None else em.zero(args[k])
        return em.op("call", em.op("getattr", tobj, name), *args, **s.kwargs)
    fn = METHODS[name]
    rule = lookup_callee(fn)
    view = Stmt(s.var, "call", [Const(fn), obj] + list(s.args[1:]), dict(s.kwargs), s.line)
    if getattr(rule, "jvp", None) is not None:
        return rule.jvp(em, view, [tobj] + list(ts))
    return _helper("rows")(em, view, [tobj] + list(ts))


# What the pass emits calls of, from the rule module (`adjoint.rules_tangent` fills it
# when imported, as the rule modules fill the rule table): "rows" (the exact fallback
# emitter for a rule without a jvp), "astype", "call_value" (a function value known
# at run time), "zero" (the zero tangent of a container made at run time).
HELPERS: dict = {}


def _helper(name: str) -> Any:
    got = HELPERS.get(name)
    if got is None:
        raise RuntimeError("adjoint.passes.tangent: the forward-mode rules are not loaded "
                           "(import adjoint.rules_tangent, as adjoint.forward does)")
    return got
