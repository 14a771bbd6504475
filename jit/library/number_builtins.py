"""Builtins on numbers that the JIT compiles outside the primitive table:

  * `round(x, ndigits)` / `round(x, ndigits=n)` of a float: CPython rounds the exact
    binary value half to even (dtoa mode 3) and reads the digits back; glibc's
    `snprintf("%.*f")` rounds the exact value the same way and `strtod` reads it
    correctly, so the compiled result is CPython's.  A negative ndigits deoptimises
    (the call reruns in the interpreter); infinities, NaN and ndigits > 323 return x;
  * `x.item()` of a number (a numpy scalar, or a 0-d array, which the JIT types as
    the number it holds): the number itself, as a closure over the receiver, so
    that its derivative is the identity's;
  * the pullbacks of `min` / `max` of 2 to 4 numbers (adjoint.rules_math.d_min/d_max
    take *args, which the JIT does not lower): one-hot gradients at the first argument
    equal to the result.
"""
from __future__ import annotations

from llvmlite import ir as L

import builtins
import hashlib

from jit.codegen.function import I64
from jit.library.math_builtins import _int_of, _t_round
from jit.library.python_impls import mark
from jit.library import platforms
from jit.library.registry import REGISTRY
from jit.typing.infer import Context
from jit.types import BOOL, FLOAT64, INT64, ClosureT, Type

# -- round(x, ndigits) of a float ----------------------------------------------------------------
# CPython rounds the exact binary value to ndigits decimals, half to even (dtoa mode 3), and
# reads the digits back; glibc's printf("%.*f") rounds the exact value the same way and
# strtod reads correctly.  Negative ndigits deoptimise to the interpreter.
_NDIGITS_MAX = 323   # CPython's NDIGITS_MAX: more digits leave x unchanged
_ROUND_BUF = 720     # sign, 309 integer digits, point, 323 decimals, NUL


def _has_ndigits(ctx, s, ts: list) -> bool:
    return len(ts) == 2 or bool(s.kwargs)


def _t_round_ndigits(ctx: Context, s, ts: list) -> Type:
    if len(ts) == 2 and not s.kwargs and ts[0] == FLOAT64 and ts[1] in (INT64, BOOL):
        return FLOAT64
    kw = dict(s.kwargs)
    if (len(ts) == 1 and set(kw) == {"ndigits"} and ts[0] == FLOAT64
            and ctx.type_of(kw["ndigits"]) in (INT64, BOOL)):
        return FLOAT64
    if s.kwargs:
        ctx.fail("keyword arguments are not supported here")
    ctx.fail(f"round() of {', '.join(map(str, ts))} is not compiled")


def _cg_round_ndigits(fc, s, ts):
    nd = s.args[2] if len(s.args) == 3 else dict(s.kwargs)["ndigits"]
    return _round_float(fc, fc.get(s.args[1], FLOAT64), fc.get(nd, INT64))


def _round_float(fc, x, nd) -> L.Value:
    from jit.codegen.scalar import _isfinite
    b = fc.b
    F64, I8P = L.DoubleType(), L.IntType(8).as_pointer()
    fc.deopt_if(b.icmp_signed("<", nd, L.Constant(I64, 0)), "round() with negative ndigits")
    keep = b.or_(b.not_(_isfinite(fc, x)), b.icmp_signed(">", nd, L.Constant(I64, _NDIGITS_MAX)))
    buf = b.bitcast(fc.alloca(L.ArrayType(L.IntType(8), _ROUND_BUF)), I8P)
    fmt = _cstring(fc, "%.*f")
    printf = fc.mg.module.globals.get("snprintf") or L.Function(
        fc.mg.module, L.FunctionType(L.IntType(32), [I8P, I64, I8P], var_arg=True), "snprintf")
    with b.if_then(b.not_(keep)):
        b.call(printf, [buf, L.Constant(I64, _ROUND_BUF), fmt, b.trunc(nd, L.IntType(32)), x])
    strtod = fc.mg.extern("strtod", F64, [I8P, I8P.as_pointer()])
    parsed = b.select(keep, x, L.Constant(F64, 0.0))
    out = fc.alloca(F64)
    b.store(parsed, out)
    with b.if_then(b.not_(keep)):
        b.store(b.call(strtod, [buf, L.Constant(I8P.as_pointer(), None)]), out)
    return b.load(out)


def _cstring(fc, text: str) -> L.Value:
    data = bytearray(text.encode() + b"\0")
    ty = L.ArrayType(L.IntType(8), len(data))
    name = f"zy_str_{hashlib.sha1(data).hexdigest()[:16]}"   # (the same in every process)
    g = fc.mg.module.globals.get(name)
    if g is None:
        g = L.GlobalVariable(fc.mg.module, ty, name=name)
        g.global_constant, g.initializer, g.linkage = True, L.Constant(ty, data), "internal"
    return fc.b.bitcast(g, L.IntType(8).as_pointer())


# -- pullbacks of min/max of 2 to 4 numbers -----------------------------------------------------
def _hit(v, y):
    """adjoint.rules_math._first_index's test: `v is y or v == y`; a NaN result is
    the first argument itself (nothing compares greater than NaN)."""
    return v == y or (v != v and y != y)


def _d_extreme_n2(dy, y, a, b):
    k = 0 if _hit(a, y) else (1 if _hit(b, y) else 0)
    return (dy if k == 0 else 0.0), (dy if k == 1 else 0.0)


def _d_extreme_n3(dy, y, a, b, c):
    k = 0 if _hit(a, y) else (1 if _hit(b, y) else (2 if _hit(c, y) else 0))
    return (dy if k == 0 else 0.0), (dy if k == 1 else 0.0), (dy if k == 2 else 0.0)


def _d_extreme_n4(dy, y, a, b, c, d):
    k = 0 if _hit(a, y) else (1 if _hit(b, y) else (2 if _hit(c, y) else
                                                    (3 if _hit(d, y) else 0)))
    return ((dy if k == 0 else 0.0), (dy if k == 1 else 0.0), (dy if k == 2 else 0.0),
            (dy if k == 3 else 0.0))


mark(_hit, _d_extreme_n2, _d_extreme_n3, _d_extreme_n4)


def _pick_d_extreme_scalars(argtypes):
    """d_min / d_max of 2 to 4 numbers (not of one sequence): one-hot gradients, 0.0
    where Python's rule returns None (the same gradient once accumulated)."""
    xs = list(argtypes)[2:]
    if len(argtypes) < 2 or argtypes[0] != FLOAT64 or not 2 <= len(xs) <= 4:
        return None
    if not all(t in (FLOAT64, INT64, BOOL) for t in [argtypes[1]] + xs):
        return None
    return {2: _d_extreme_n2, 3: _d_extreme_n3, 4: _d_extreme_n4}[len(xs)]


# -- x.item() of a number ------------------------------------------------------------------------
def _bind_item(x):
    def item():
        return x
    return item


_ITEM = _bind_item(None)
mark(_bind_item, _ITEM)


def _is_number_item(ctx: Context, s, ts: list) -> bool:
    """Pattern: `x.item` of a number."""
    return len(s.args) == 2 and ts[0] in (FLOAT64, INT64, BOOL) \
        and ctx.const(s.args[1]) == "item"


def _t_number_item(ctx: Context, s, ts: list) -> Type:
    return ClosureT(_ITEM, (ts[0],))


def _cg_number_item(fc, s, ts):
    from jit.codegen.function import lltype
    x = fc.get(s.args[0], ts[0])
    return fc.b.insert_value(L.Constant(lltype(s.type), L.Undefined), x, 0)


def _declare() -> None:
    from adjoint import rules_math as M
    REGISTRY.overload("getattr", "number: .item()", _is_number_item, _t_number_item,
                      _cg_number_item, family="math and builtins")
    e = REGISTRY.entry(builtins.round, family="math and builtins",
                       gpu={"cuda": platforms.cuda("roundeven")})
    REGISTRY.add(e, "number", lambda ctx, s, ts: not _has_ndigits(ctx, s, ts), _t_round,
                 _int_of("roundeven"))
    REGISTRY.add(e, "float, int ndigits", _has_ndigits, _t_round_ndigits, _cg_round_ndigits)
    for pb in (M.d_min, M.d_max):
        REGISTRY.declare_pullback(pb, "2 to 4 numbers", _pick_d_extreme_scalars)


_declare()
