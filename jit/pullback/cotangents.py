"""Type rules and LLVM lowering of the cotangent primitives of adjoint IR (see
adjoint/tape.py for their Python semantics): `accum(a, b)`, `zero(x)`, `dget(t, k)`,
calls of `adjoint.tape.unbcast`, and calls of `adjoint.rules.Pullback` objects (the
rule's plain-Python function compiled as user code, or the JIT's own implementation
of it from `REGISTRY.pullback_impl`).  `None` is the zero cotangent: in IR
marked `meta["none_is_zero"]` it joins with float64/int64/tuples/arrays at phis (see
`jit.typing.infer.cotangent_join`) and converts to the zero of the joined type (a
NULL array for arrays, see jit.pullback.array_values).  Array cotangent primitives
live in jit.pullback.array_cotangents, `jcall`/`jback` in jit.pullback.jcalls.
"""
from __future__ import annotations

from llvmlite import ir as L

from lowering import UnsupportedError
from adjoint.passes.reverse import UNREAD
from adjoint.rules import Pullback
from adjoint.tape import accum as tape_accum
from adjoint.tape import fresh as tape_fresh
from adjoint.tape import unbcast

from jit.codegen.function import FunctionGen, codegen, lltype, narrowed
from jit.codegen.host_calls import call_host, operand_recipe
from jit.pullback.array_values import (_copy_or_null, add_arrays, check_same_shape, unless_none,
                                       zeros_like)
from jit.library.elementwise import is_unbcast_of_array, t_unbcast_array
from jit.library.elementwise_nd import NDIM
from jit.library.linalg import is_getattr_pullback, t_getattr_pullback
from jit.library.registry import REGISTRY, numpy_only
from jit.runtime import host_calls as host
from jit.typing.infer import Call, Context, LiteralT, cotangent_join, rule, user_call
from jit.types import (BOOL, FLOAT32, FLOAT64, INT32, INT64, NONE, ArrayT, BuiltListT, DictT,
                       FunctionT, ListT, RecordT, StrT, TupleT, Type, TypingError, is_float,
                       is_numeric)


def accum_type(a: Type, b: Type) -> Type:
    """The type of `accum(a, b)`: None is the identity; numbers add; tuples by element."""
    if a == NONE:
        return b
    if b == NONE:
        return a
    if isinstance(a, TupleT) and isinstance(b, TupleT) and len(a.elems) == len(b.elems):
        return TupleT(tuple(accum_type(x, y) for x, y in zip(a.elems, b.elems)))
    if is_numeric(a) and is_numeric(b):
        out = cotangent_join(a, b)
        return INT64 if out == BOOL else out
    if isinstance(a, ArrayT) and a == b and is_float(a.dtype):
        return a
    if isinstance(a, BuiltListT) and a == b:
        return a
    if isinstance(b, BuiltListT) and _fixed_list(a):    # (a rule compiled, another not:
        return TupleT(tuple(accum_type(e, b.elem) for e in a.elems))  # one cotangent each)
    if isinstance(a, BuiltListT) and _fixed_list(b):
        return TupleT(tuple(accum_type(a.elem, e) for e in b.elems))
    raise TypeError(f"cannot accumulate {a} and {b}")


def _fixed_list(t: Type) -> bool:
    """A tuple or list of known length (not a dict's or an object's entries)."""
    return isinstance(t, TupleT) and not isinstance(t, (DictT, RecordT))


def zero_type(t: Type) -> Type:
    if is_float(t):
        return t
    if isinstance(t, TupleT):
        return TupleT(tuple(zero_type(e) for e in t.elems))
    if t in (INT64, BOOL, NONE, INT32) or isinstance(t, StrT):     # (a string is a label)
        return NONE
    if isinstance(t, ArrayT):
        return t if is_float(t.dtype) else NONE
    if isinstance(t, BuiltListT):
        return cotangent_type(t)
    raise TypeError(f"the zero cotangent of {t} is not supported yet")


@rule("accum")
def _t_accum(ctx: Context, s, ts) -> Type:
    try:
        return accum_type(ts[0], ts[1])
    except TypeError as e:
        ctx.fail(str(e))


@rule("zero")
def _t_zero(ctx: Context, s, ts) -> Type:
    try:
        return zero_type(ts[0])
    except TypeError as e:
        ctx.fail(str(e))


@rule("dget")
def _t_dget(ctx: Context, s, ts) -> Type:
    k = ctx.const(s.args[1])
    if ts[0] == NONE:
        return NONE
    if isinstance(ts[0], BuiltListT) and isinstance(k, int):
        return ts[0].elem       # the cotangent of a display's entry, once appended to
    if isinstance(ts[0], DictT):
        k = ts[0].index(k)
    elif len(s.args) == 3:          # a dict display's cotangent: its values' tuple
        k = ctx.const(s.args[2])
    if isinstance(ts[0], TupleT) and isinstance(k, int) and -len(ts[0].elems) <= k < len(
            ts[0].elems):
        return ts[0].elems[k]
    ctx.fail(f"dget({ts[0]}, {k!r}) is not supported")


def _t_unbcast(ctx: Context, s, ts) -> Type:
    if len(ts) == 2 and (is_numeric(ts[0]) or ts[0] == NONE) and is_numeric(ts[1]):
        return ts[0]
    if len(ts) == 2 and is_numeric(ts[0]) and ts[1] == NONE:
        # onto a number whose tape slot the JIT dropped (a number has one shape)
        return ts[0]
    if len(ts) == 2 and ts[0] == NONE:
        return NONE
    if len(ts) == 2 and isinstance(ts[0], ArrayT) and ts[1] == NONE:
        # onto an operand whose tape slot is never written (the adjoint of a branch
        # the forward's typing found dead): there is no operand, so no cotangent
        return NONE
    if len(ts) == 2 and isinstance(ts[0], ArrayT) and ts[0] == ts[1]:
        return ts[0]
    if len(ts) == 2 and isinstance(ts[1], ArrayT) and is_numeric(ts[0]):
        return ts[0]
    ctx.fail(f"unbcast of {ts[0] if ts else '?'} to {ts[1] if len(ts) > 1 else '?'} "
             "(arrays) is not supported yet")


def add_values(fc: FunctionGen, a, b, t: Type) -> L.Value:
    if isinstance(t, TupleT):
        out = L.Constant(lltype(t), L.Undefined)
        for i, e in enumerate(t.elems):
            x, y = fc.b.extract_value(a, i), fc.b.extract_value(b, i)
            out = fc.b.insert_value(out, add_values(fc, x, y, e), i)
        return out
    if t == FLOAT64:
        return fc.b.fadd(a, b)
    if t == FLOAT32:
        return narrowed(fc.b, fc.b.fadd(a, b), t)
    if t == NONE:
        return a
    if isinstance(t, ArrayT):
        return add_arrays(fc, a, b, t)
    if isinstance(t, BuiltListT):      # entry by entry, by adjoint.tape.accum
        recipe = [("slot", t), ("slot", t)]
        site = host.HostSite(tape_accum, "adding list cotangents", recipe, (), t,
                             cotangents=True, cotangent_args=(0, 1))
        return call_host(fc, site, [a, b])
    return fc.b.add(a, b)


@codegen("accum")
def _cg_accum(fc: FunctionGen, s, ts):
    if ts[0] == NONE:       # the first write of an adjoint: it must own its arrays
        return owned_copy(fc, fc.get(s.args[1]), ts[1])
    if ts[1] == NONE:
        return fc.get(s.args[0])
    return add_values(fc, _cotangent(fc, s.args[0], ts[0], s.type),
                      _cotangent(fc, s.args[1], ts[1], s.type), s.type)


def owned_copy(fc: FunctionGen, v, t: Type) -> L.Value:
    """`v` with its arrays copied (NULL stays NULL), as `adjoint.tape.fresh`: the
    reverse pass keeps `accum(None, g)` only for an adjoint that is later updated in
    place (`accum_index`, `zero_index`: `adjoint.passes.reverse._drop_copies`), and
    `g` may be the very array a rule handed to another operand too (`d_add` gives
    `dy` to both), so updating it in place would change that operand's gradient."""
    if isinstance(t, ArrayT):
        return _copy_or_null(fc, v, t)
    if isinstance(t, TupleT):
        out = v
        for i, e in enumerate(t.elems):
            if _has_array(e) or isinstance(e, BuiltListT):
                out = fc.b.insert_value(out, owned_copy(fc, fc.b.extract_value(v, i), e), i)
        return out
    if isinstance(t, BuiltListT):      # entry by entry, by adjoint.tape.fresh
        site = host.HostSite(tape_fresh, "copying a list cotangent", [("slot", t)], (), t,
                             cotangents=True, cotangent_args=(0,))
        return call_host(fc, site, [v])
    return v


def _cotangent(fc: FunctionGen, operand, have: Type, want: Type) -> L.Value:
    """An operand as a value of `want`, its None parts as zeros (a built list's entries
    as the entries of a tuple of its length, which `accum_type` checked)."""
    v = fc.get(operand)
    if isinstance(have, BuiltListT) and isinstance(want, TupleT):
        return _entries_of(fc, v, have, want)
    if isinstance(have, TupleT):
        out = L.Constant(lltype(want), L.Undefined)
        for i, (h, w) in enumerate(zip(have.elems, want.elems)):
            part = fc.b.extract_value(v, i)
            part = _zero_or(fc, part, h, w)
            out = fc.b.insert_value(out, part, i)
        return out
    return _zero_or(fc, v, have, want)


def _entries_of(fc: FunctionGen, v, have: BuiltListT, want: TupleT) -> L.Value:
    """The built list `v` as the tuple `want` of its entries (its length is the
    argument's, whose cotangents both are: a mismatch is an internal error)."""
    n = len(want.elems)
    fc.raise_if(fc.b.icmp_signed("!=", fc.b.extract_value(v, 1), L.Constant(L.IntType(64), n)),
                ValueError, f"a list cotangent does not have the {n} entries of its argument")
    et = lltype(have.elem)
    data = fc.b.extract_value(v, 0)
    out = L.Constant(lltype(want), L.Undefined)
    for i, w in enumerate(want.elems):
        entry = fc.b.load(fc.b.gep(data, [L.Constant(L.IntType(64), i)], source_etype=et), typ=et)
        out = fc.b.insert_value(out, _zero_or(fc, entry, have.elem, w), i)
    return out


def _zero_or(fc: FunctionGen, v, have: Type, want: Type) -> L.Value:
    from jit.codegen.function import zero_of
    if have == NONE and want != NONE:
        return zero_of(want)
    if isinstance(have, TupleT):
        out = L.Constant(lltype(want), L.Undefined)
        for i, (h, w) in enumerate(zip(have.elems, want.elems)):
            out = fc.b.insert_value(out, _zero_or(fc, fc.b.extract_value(v, i), h, w), i)
        return out
    return fc.convert(v, have, want)


@codegen("zero")
def _cg_zero(fc: FunctionGen, s, ts):
    from jit.codegen.function import zero_of
    if isinstance(s.type, ArrayT):
        return zeros_like(fc, fc.get(s.args[0]), s.type)
    if isinstance(s.type, TupleT) and _has_array(s.type):
        raise TypingError(f"jit: zero of {s.type} (arrays in tuples) is not compiled")
    return zero_of(s.type)


def _has_array(t: Type) -> bool:
    return isinstance(t, ArrayT) or isinstance(t, TupleT) and any(map(_has_array, t.elems))


@codegen("dget")
def _cg_dget(fc: FunctionGen, s, ts):
    if ts[0] == NONE:
        return L.Constant(L.IntType(8), 0)
    if isinstance(ts[0], BuiltListT):
        return _list_entry(fc, fc.get(s.args[0]), s.args[1].value, s.type)
    n, k = len(ts[0].elems), s.args[1].value
    k = ts[0].index(k) if isinstance(ts[0], DictT) else s.args[2].value if len(s.args) == 3 \
        else k
    return fc.b.extract_value(fc.get(s.args[0]), k % n)


def _list_entry(fc: FunctionGen, acc, k: int, t: Type) -> L.Value:
    """Entry k of a built list cotangent (its zero when the list is shorter or None)."""
    from jit.codegen.function import zero_of
    b = fc.b
    et = lltype(t)
    n = b.extract_value(acc, 1)
    kk = L.Constant(L.IntType(64), k) if k >= 0 else b.add(n, L.Constant(L.IntType(64), k))
    out = fc.alloca(et)
    b.store(zero_of(t), out)
    inside = b.and_(b.icmp_signed(">=", kk, L.Constant(L.IntType(64), 0)),
                    b.icmp_signed("<", kk, n))
    with b.if_then(inside):
        b.store(b.load(b.gep(b.extract_value(acc, 0), [kk], source_etype=et), typ=et), out)
    return b.load(out, typ=et)


def _cg_unbcast(fc: FunctionGen, s, ts):
    if s.type == NONE:
        return L.Constant(L.IntType(8), 0)
    if isinstance(ts[0], ArrayT):
        check_same_shape(fc, fc.get(s.args[1]), fc.get(s.args[2]), ts[0].ndim)
    return fc.get(s.args[1])


def _t_unbcast_numpy_only(ctx: Context, s, ts) -> Type:
    """unbcast(dy, x) with an array of 3 or more dimensions: adjoint.tape.unbcast itself
    (numpy sums dy back to x's shape), called from compiled code."""
    if len(ts) != 2 or not isinstance(ts[0], ArrayT):
        ctx.fail(f"unbcast of {', '.join(map(str, ts))} is not compiled")
    return cotangent_type(ts[1]) if ts[1] != NONE else ts[0]


REGISTRY.declare(unbcast, family="derivatives", pattern="a float64 array summed to a shape",
                 matches=is_unbcast_of_array, types=t_unbcast_array, ndim_max=NDIM)
REGISTRY.add(REGISTRY.get(unbcast), "a cotangent already of the shape", None, _t_unbcast,
             _cg_unbcast)
def _cg_unbcast_numpy_only(fc: FunctionGen, s, ts):
    recipe, values = operand_recipe(fc, list(s.args[1:]))
    site = host.HostSite(unbcast, "the derivative of broadcasting", recipe, (), s.type,
                         cotangents=True)
    return call_host(fc, site, values)


_cg_unbcast_numpy_only.native = "host call"
REGISTRY.add(REGISTRY.get(unbcast), "arrays of 3 or more dimensions or of booleans",
             lambda ctx, s, ts: numpy_only(ts), _t_unbcast_numpy_only, _cg_unbcast_numpy_only,
             numpy_too=True)


# -- adjoint.rules.Pullback: `pb(dy, *args)` is `(None,) * n` for a None dy, else
# `fn(dy, *args)` as a tuple.

def _t_pullback(ctx: Context, s, ts) -> Type:
    pb = s.args[0].value
    nout = len(s.args) - 2 - int(pb.uses_result)
    if ts[1] == NONE:
        ctx.typing.calls[s.var] = Call(None, [], pb)
        return TupleT((NONE,) * nout)
    fn = REGISTRY.pullback_impl(pb, ts[1:]) or pb.fn
    try:
        if getattr(fn, "__closure__", None):
            ctx.fail(f"the derivative rule of {pb.of} reads variables of an enclosing "
                     "function (a closure), which the JIT does not compile")
        ret = user_call(ctx, s, fn)
    except (TypingError, UnsupportedError) as exc:   # its Python is not compiled
        return _host_pullback(ctx, s, pb, ts, exc)
    ctx.typing.calls[s.var].callee = pb
    out = ret if ret is None or isinstance(ret, TupleT) else TupleT((ret,))
    if out is not None and _widens(out, ts[len(ts) - nout:]):
        return _host_pullback(ctx, s, pb, ts, TypingError(
            f"the derivative of {pb.of} gives float64 cotangents for float32 operands"))
    return out


def _widens(out: TupleT, operands: list) -> bool:
    """Does a compiled rule give a float64 array cotangent for a float32 array operand?
    Then the rule runs as Python, which casts a cotangent to its operand's dtype
    (`adjoint.rule_table.in_dtype_of`), as JAX gives a cotangent its primal's dtype."""
    return any(isinstance(g, ArrayT) and isinstance(x, ArrayT) and g.dtype == FLOAT64
               and x.dtype == FLOAT32 for g, x in zip(out.elems, operands))


def _host_pullback(ctx: Context, s, pb, ts: list, why: Exception) -> Type:
    """A rule the JIT cannot compile runs as Python, called from the compiled adjoint
    (`jit.runtime.host_calls`): its cotangents have the types of its arguments."""
    nout = len(s.args) - 2 - int(pb.uses_result)
    argtypes = [_operand_type(a, t, ts[1]) for a, t in zip(s.args[len(s.args) - nout:],
                                                           ts[len(ts) - nout:])]
    kwtypes = [ctx.type_of(v) for v in s.kwargs.values()]
    if not all(host.passable(t) or _known(t) for t in list(ts) + kwtypes):
        raise why
    ctx.typing.calls[s.var] = Call(None, [], pb)
    ctx.typing.impls[("host", s.var)] = True
    return TupleT(tuple(cotangent_type(t) for t in argtypes))


def _operand_type(operand, t: Type, dy: Type) -> Type:
    """The type whose cotangent a host-called rule returns for `operand`.  An operand
    the rule does not read (`UNREAD`, see `Rule.needs`) is a placeholder, not its
    value: such a rule can only give that operand a cotangent of the result's form
    (the elementwise functions that read only their result), so dy's type."""
    return dy if operand is UNREAD else t


def _known(t: Type) -> bool:
    return isinstance(t, (LiteralT, FunctionT))


def cotangent_type(t: Type) -> Type:
    """The type of the cotangent of a value of type `t` (None where it has none): a
    float's or float array's own type (a float32 value's cotangent is float32)."""
    if is_float(t) or isinstance(t, ArrayT) and is_float(t.dtype):
        return t
    if isinstance(t, ListT):
        return ListT(tuple(cotangent_type(e) for e in t.elems))
    if isinstance(t, BuiltListT):
        e = cotangent_type(t.elem)
        return NONE if e == NONE else BuiltListT(e)
    if isinstance(t, TupleT):    # a dict's too: its values' cotangents in key order
        return TupleT(tuple(cotangent_type(e) for e in t.elems))
    return NONE


def _cg_pullback(fc: FunctionGen, s, ts):
    call = fc.typing.calls[s.var]
    if fc.typing.impls.get(("host", s.var)):
        return unless_none(fc, ts[0], fc.get(s.args[1]), lambda: _host_call_pullback(fc, s),
                           s.type)
    if call.target is None:
        return L.Constant(lltype(s.type), None)
    # ts: the operands after the rule object (dy first)
    return unless_none(fc, ts[0], fc.get(s.args[1]), lambda: _call_pullback(fc, call, s), s.type)


def _host_call_pullback(fc: FunctionGen, s) -> L.Value:
    pb = s.args[0].value
    recipe, values = operand_recipe(fc, list(s.args[1:]) + list(s.kwargs.values()))
    site = host.HostSite(pb, f"the derivative of {pb.of}", recipe, tuple(s.kwargs), s.type,
                         cotangents=True)
    return call_host(fc, site, values)


def _call_pullback(fc: FunctionGen, call: Call, s) -> L.Value:
    v = fc.call_user(call.target, call.operands, [])
    if isinstance(call.target.ret, TupleT):
        return v
    return fc.b.insert_value(L.Constant(lltype(s.type), L.Undefined), v, 0)


RULE_OBJECTS = REGISTRY.entry(Pullback, family="derivatives", name="adjoint rule object",
                     by_class=True)
REGISTRY.add(RULE_OBJECTS, "d_getattr of an array method or .T", is_getattr_pullback,
             t_getattr_pullback, _cg_pullback, numpy_too=True)


# -- d_getattr of an object (`jit.types.RecordT`): a stored attribute's cotangent goes to
# its entry of the object's cotangent tuple; a method's (a closure over the object) is
# the object's own.

def _record_attribute(ctx: Context, s, ts) -> bool:
    from adjoint.rules_math import d_getattr
    return s.args[0].value is d_getattr and len(s.args) == 4 and isinstance(ts[2], RecordT) \
        and not record_property(ctx, s, ts)


def record_property(ctx: Context, s, ts) -> bool:
    """Pattern: d_getattr of a property of an object, with a cotangent (its impl is
    `jit.pullback.nested_gradient`'s: the getter's gradient)."""
    from adjoint.rules_math import d_getattr
    from jit.library.records import property_getter
    return s.args[0].value is d_getattr and len(s.args) == 4 and isinstance(ts[2], RecordT) \
        and ts[1] != NONE and property_getter(ts[2], ctx.const(s.args[3])) is not None


def _t_record_pullback(ctx: Context, s, ts) -> Type:
    dy, x, name = ts[1], ts[2], ctx.const(s.args[3])
    k = x.index(name)
    if dy == NONE or k is None and class_data(x.cls, name):
        return TupleT((NONE, NONE))      # (a number of the class: a constant)
    if k is not None:
        return TupleT((TupleT(tuple(dy if i == k else NONE for i in range(len(x.elems)))),
                       NONE))
    if isinstance(dy, TupleT) and len(dy.elems) == 1:     # a bound method's
        return TupleT((dy.elems[0], NONE))
    if x.index(name) is None and not isinstance(dy, TupleT):
        from adjoint.pytrees import computed_attribute_error
        ctx.fail(str(computed_attribute_error(x.cls.__name__, name)))
    ctx.fail(f"the cotangent {dy} of attribute {name!r} of {x} is not supported")


def class_data(cls: type, name: str) -> bool:
    """Is `name` a number or string of class `cls` (`jit.library.records`)?"""
    from jit.library.records import CLASS_DATA, class_attribute
    return type(class_attribute(cls, name)) in CLASS_DATA


def _cg_record_pullback(fc: FunctionGen, s, ts):
    out = L.Constant(lltype(s.type), L.Undefined)
    if ts[0] == NONE or s.type.elems[0] == NONE:
        return L.Constant(lltype(s.type), None)
    dy = fc.get(s.args[1])
    k = ts[1].index(s.args[3].value)
    if k is None:
        part = fc.b.extract_value(dy, 0)
    else:
        inner = s.type.elems[0]
        part = L.Constant(lltype(inner), None)
        part = fc.b.insert_value(part, fc.convert(dy, ts[0], inner.elems[k]), k)
    return fc.b.insert_value(fc.b.insert_value(out, part, 0), L.Constant(L.IntType(8), 0), 1)


def _constructor_pullback(ctx: Context, s, ts) -> bool:
    """Pattern: the pullback of `Point(x, y)` (a named tuple or dataclass built)."""
    fields = getattr(s.args[0].value, "fields", None)
    return fields is not None and (ts[1] == NONE or isinstance(ts[1], TupleT) and len(
        ts[1].elems) == len(fields))


def _field_positions(s) -> list:
    """The field index of each cotangent `d_construct` returns: the positional
    operands in order, then the keywords by name."""
    fields = s.args[0].value.fields
    npos = len(s.args) - 2
    return list(range(npos)) + [fields.index(k) for k in s.kwargs]


def _t_constructor_pullback(ctx: Context, s, ts) -> Type:
    dy = ts[1]
    return TupleT(tuple(NONE if dy == NONE else dy.elems[k] for k in _field_positions(s)))


def _cg_constructor_pullback(fc: FunctionGen, s, ts):
    out = L.Constant(lltype(s.type), None)
    if ts[0] == NONE:
        return out
    dy = fc.get(s.args[1])
    for i, k in enumerate(_field_positions(s)):
        if s.type.elems[i] != NONE:
            out = fc.b.insert_value(out, fc.b.extract_value(dy, k), i)
    return out


REGISTRY.add(RULE_OBJECTS, "the constructor of a named tuple or dataclass", _constructor_pullback,
             _t_constructor_pullback, _cg_constructor_pullback, numpy_too=True)
REGISTRY.add(RULE_OBJECTS, "d_getattr of an object's attribute or method", _record_attribute,
             _t_record_pullback, _cg_record_pullback, numpy_too=True)
REGISTRY.add(RULE_OBJECTS, "any derivative rule (its plain-Python function, or the JIT's version)",
             None, _t_pullback, _cg_pullback, numpy_too=True)


def accum_values(fc: FunctionGen, a, at: Type, b, bt: Type, want: Type) -> L.Value:
    """`accum(a, b)` of LLVM values typed `at`, `bt` as a value of `want` (`a` may be
    Python None when `at` is none)."""
    from jit.codegen.function import zero_of
    if at == NONE and bt == NONE:
        return zero_of(want) if want != NONE else L.Constant(L.IntType(8), 0)
    if at == NONE:
        return _zero_or(fc, b, bt, want)
    if bt == NONE:
        return _zero_or(fc, a, at, want)
    if isinstance(want, TupleT):
        out = L.Constant(lltype(want), L.Undefined)
        for i, w in enumerate(want.elems):
            x, y = fc.b.extract_value(a, i), fc.b.extract_value(b, i)
            out = fc.b.insert_value(out, accum_values(fc, x, at.elems[i], y, bt.elems[i], w), i)
        return out
    return add_values(fc, _zero_or(fc, a, at, want), _zero_or(fc, b, bt, want), want)
