"""LLVM lowering of scalar primitives with Python's semantics.

  * int64 `+ - *`, unary minus, `abs`, `<<` and `**` are overflow-checked: an overflow
    returns DEOPT (the wrapper reruns the call with exact Python integers);
  * `//` and `%` round toward minus infinity (the remainder takes the divisor's sign),
    for ints and floats exactly as CPython's `float_divmod`/`float_rem` do;
  * division or modulo by zero deopts (`FunctionGen.zero_division_if`): CPython
    raises ZeroDivisionError for Python numbers, but a numpy scalar read from an
    array gives inf/nan (or 0 for np.int64), and both are one JIT type; `int / int`
    is exact for operands up to 2**53 and deopts beyond (CPython rounds the exact
    quotient);
  * float `**` follows `float_pow`: 0.0 ** negative deopts as division by zero, a negative
    base with a fractional exponent (a complex result) deopts, an overflow raises
    OverflowError;
  * comparisons between int64 and float64 are exact, as in CPython (no rounding of
    the int).
No fast-math flag is ever set: results equal CPython's bit for bit.
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir as L

from jit.codegen.function import F64, I1, I64, FunctionGen, codegen, const_operand
from jit.typing.infer import LiteralT
from jit.types import BOOL, FLOAT32, FLOAT64, INT32, INT64, NONE, TupleT, wide

INT_MIN = L.Constant(I64, -(1 << 63))
ZERO_I, ONE_I = L.Constant(I64, 0), L.Constant(I64, 1)
ZERO_F, ONE_F = L.Constant(F64, 0.0), L.Constant(F64, 1.0)
TWO53 = L.Constant(I64, 1 << 53)


def operands(fc: FunctionGen, s, want) -> tuple:
    return fc.get(s.args[0], want), fc.get(s.args[1], want)


def fintrinsic(fc: FunctionGen, name: str, *args) -> L.Value:
    fn = fc.mg.intrinsic(f"llvm.{name}.f64", F64, [F64] * len(args))
    return fc.b.call(fn, list(args))


def checked(fc: FunctionGen, op: str, a, b) -> L.Value:
    """`a op b` on int64 with llvm.s<op>.with.overflow; DEOPT on overflow."""
    res = fc.b.call(fc.mg.intrinsic(f"llvm.s{op}.with.overflow.i64",
                                    L.LiteralStructType([I64, I1]), [I64, I64]), [a, b])
    fc.deopt_if(fc.b.extract_value(res, 1), "integer overflow")
    return fc.b.extract_value(res, 0)


# ---------------------------------------------------------------------------
# + - * /

@codegen("add", "sub", "mul")
def _cg_arith(fc: FunctionGen, s, ts):
    if isinstance(s.type, TupleT):
        return _tuple_concat(fc, s, ts)
    a, b = operands(fc, s, s.type)
    if wide(s.type) == FLOAT64:
        return {"add": fc.b.fadd, "sub": fc.b.fsub, "mul": fc.b.fmul}[s.op](a, b)
    if s.type == INT32:    # wraps as numpy's int32 does (the statement narrows it)
        return {"add": fc.b.add, "sub": fc.b.sub, "mul": fc.b.mul}[s.op](a, b)
    if s.var.id in fc.ir.meta.get("exact_ints", ()):  # a value the forward computed
        return {"add": fc.b.add, "sub": fc.b.sub, "mul": fc.b.mul}[s.op](a, b, flags=["nsw"])
    return checked(fc, s.op, a, b)


def _tuple_concat(fc: FunctionGen, s, ts):
    x, y = fc.get(s.args[0]), fc.get(s.args[1])
    out = L.Constant(fc_lltype(s.type), L.Undefined)
    k = 0
    for v, t in ((x, ts[0]), (y, ts[1])):
        for i in range(len(t.elems)):
            out = fc.b.insert_value(out, fc.b.extract_value(v, i), k)
            k += 1
    return out


def fc_lltype(t):
    from jit.codegen.function import lltype
    return lltype(t)


@codegen("truediv")
def _cg_truediv(fc: FunctionGen, s, ts):
    if s.type == FLOAT32 or INT32 in ts:     # numpy's scalars: inf or nan, no error
        a, b = operands(fc, s, s.type)
        return fc.b.fdiv(a, b)
    if FLOAT64 in ts:
        a, b = operands(fc, s, FLOAT64)
        fc.zero_division_if(fc.b.fcmp_ordered("==", b, ZERO_F), "float division by zero")
        return fc.b.fdiv(a, b)
    a, b = operands(fc, s, INT64)
    fc.zero_division_if(fc.b.icmp_signed("==", b, ZERO_I), "division by zero")
    fc.deopt_if(fc.b.or_(_too_big(fc, a), _too_big(fc, b)), "int/int beyond 2**53")
    return fc.b.fdiv(fc.b.sitofp(a, F64), fc.b.sitofp(b, F64))


def _too_big(fc: FunctionGen, a) -> L.Value:
    neg = fc.b.icmp_signed("<", a, ZERO_I)
    mag = fc.b.select(neg, fc.b.neg(a), a)  # INT_MIN stays negative: caught below
    return fc.b.or_(fc.b.icmp_signed(">", mag, TWO53), fc.b.icmp_signed("<", mag, ZERO_I))


# ---------------------------------------------------------------------------
# // and %

@codegen("floordiv")
def _cg_floordiv(fc: FunctionGen, s, ts):
    a, b = operands(fc, s, s.type)
    return floordiv_values(fc, a, b, wide(s.type))


@codegen("mod")
def _cg_mod(fc: FunctionGen, s, ts):
    a, b = operands(fc, s, s.type)
    return mod_values(fc, a, b, wide(s.type))


def floordiv_values(fc: FunctionGen, a, b, t) -> L.Value:
    """Python's `a // b` for two int64 or two float64 values."""
    if t == FLOAT64:
        fc.zero_division_if(fc.b.fcmp_ordered("==", b, ZERO_F), "float floor division by zero")
        return float_divmod(fc, a, b)[0]
    _int_div_guard(fc, a, b)
    q = fc.b.sdiv(a, b)
    r = fc.b.srem(a, b)
    return fc.b.sub(q, fc.b.zext(_needs_fix(fc, r, b), I64))


def mod_values(fc: FunctionGen, a, b, t) -> L.Value:
    """Python's `a % b` (the result has the divisor's sign)."""
    if t == FLOAT64:
        fc.zero_division_if(fc.b.fcmp_ordered("==", b, ZERO_F), "float modulo")
        return float_divmod(fc, a, b)[1]
    fc.zero_division_if(fc.b.icmp_signed("==", b, ZERO_I), "integer division or modulo by zero")
    safe_b = fc.b.select(fc.b.icmp_signed("==", b, L.Constant(I64, -1)), ONE_I, b)
    r = fc.b.srem(a, safe_b)
    return fc.b.select(_needs_fix(fc, r, b), fc.b.add(r, b), r)


def _int_div_guard(fc: FunctionGen, a, b) -> None:
    fc.zero_division_if(fc.b.icmp_signed("==", b, ZERO_I), "integer division or modulo by zero")
    fc.deopt_if(fc.b.and_(fc.b.icmp_signed("==", a, INT_MIN),
                          fc.b.icmp_signed("==", b, L.Constant(I64, -1))), "integer overflow")


def _needs_fix(fc: FunctionGen, r, b) -> L.Value:
    """A nonzero remainder whose sign differs from the divisor's."""
    nonzero = fc.b.icmp_signed("!=", r, ZERO_I)
    return fc.b.and_(nonzero, fc.b.icmp_signed("<", fc.b.xor(r, b), ZERO_I))


def float_divmod(fc: FunctionGen, vx, wx) -> tuple:
    """(floordiv, mod) of two floats, step for step as CPython's _float_div_mod."""
    b = fc.b
    mod0 = b.frem(vx, wx)
    div0 = b.fdiv(b.fsub(vx, mod0), wx)
    nonzero = b.fcmp_unordered("!=", mod0, ZERO_F)
    flip = b.xor(b.fcmp_ordered("<", wx, ZERO_F), b.fcmp_ordered("<", mod0, ZERO_F))
    fix = b.and_(nonzero, flip)
    mod1 = b.select(fix, b.fadd(mod0, wx), mod0)
    div1 = b.select(fix, b.fsub(div0, ONE_F), div0)
    mod = b.select(nonzero, mod1, fintrinsic(fc, "copysign", ZERO_F, wx))
    fl = fintrinsic(fc, "floor", div1)
    up = b.fcmp_ordered(">", b.fsub(div1, fl), L.Constant(F64, 0.5))
    fl = b.select(up, b.fadd(fl, ONE_F), fl)
    zero_div = fintrinsic(fc, "copysign", ZERO_F, b.fdiv(vx, wx))
    div = b.select(b.fcmp_unordered("!=", div1, ZERO_F), fl, zero_div)
    return div, mod


# ---------------------------------------------------------------------------
# **

@codegen("pow")
def _cg_pow(fc: FunctionGen, s, ts):
    if s.type == FLOAT32:      # numpy's float32 power: no error, inf or nan
        a, b = operands(fc, s, FLOAT32)
        return fc.b.call(fc.mg.extern("pow", F64, [F64, F64]), [a, b])
    if s.type == FLOAT64:
        a, b = operands(fc, s, FLOAT64)
        if s.var.id in fc.ir.meta.get("exact_ints", ()):   # recomputed: it did not raise
            return fc.b.call(fc.mg.extern("pow", F64, [F64, F64]), [a, b])
        return float_pow(fc, a, b, getattr(s.args[1], "value", None))
    a, b = operands(fc, s, INT64)
    fc.deopt_if(fc.b.icmp_signed("<", b, ZERO_I), "negative integer exponent")
    return int_pow(fc, a, b)


def float_pow(fc: FunctionGen, iv, iw, w: Any = None) -> L.Value:
    """`iv ** iw` on floats with CPython's errors; `w` is the exponent when it is a
    constant (a natural number needs no ZeroDivisionError or complex-result test)."""
    b = fc.b
    finite = b.and_(_isfinite(fc, iv), _isfinite(fc, iw))
    natural = type(w) in (int, float) and w >= 0 and w == int(w)
    if not natural:
        zero_neg = b.and_(b.fcmp_ordered("==", iv, ZERO_F), b.fcmp_ordered("<", iw, ZERO_F))
        fc.zero_division_if(b.and_(zero_neg, _isfinite(fc, iw)),
                            "0.0 cannot be raised to a negative power")
        fractional = b.fcmp_unordered("!=", iw, fintrinsic(fc, "floor", iw))
        fc.deopt_if(b.and_(b.and_(finite, b.fcmp_ordered("<", iv, ZERO_F)), fractional),
                    "negative number raised to a fractional power is complex")
    r = b.call(fc.mg.extern("pow", F64, [F64, F64]), [iv, iw])

    with b.if_then(maybe_nonfinite(fc, r), likely=False):  # the exact test, off the hot path
        fc.raise_if(b.and_(finite, _isinf(fc, r)), OverflowError,
                    "(34, 'Numerical result out of range')")
    return r


def maybe_nonfinite(fc: FunctionGen, r) -> L.Value:
    """True when `r` is infinite or NaN, as `r * 0.0` unordered: one multiply and one
    compare in SSE registers (LLVM turns `fabs(r) == inf` into integer bit tests)."""
    z = fc.b.fmul(r, ZERO_F)
    return fc.b.fcmp_unordered("uno", z, z)


def _isfinite(fc: FunctionGen, x) -> L.Value:
    return fc.b.fcmp_ordered("<", fintrinsic(fc, "fabs", x), L.Constant(F64, float("inf")))


def _isinf(fc: FunctionGen, x) -> L.Value:
    return fc.b.fcmp_ordered("==", fintrinsic(fc, "fabs", x), L.Constant(F64, float("inf")))


def int_pow(fc: FunctionGen, base, exp) -> L.Value:
    """Square-and-multiply with overflow checks; `exp >= 0`."""
    b = fc.b
    head = fc.fn.append_basic_block("ipow.head")
    body = fc.fn.append_basic_block("ipow.body")
    done = fc.fn.append_basic_block("ipow.done")
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    res = b.phi(I64)
    bas = b.phi(I64)
    e = b.phi(I64)
    res.add_incoming(ONE_I, pre)
    bas.add_incoming(base, pre)
    e.add_incoming(exp, pre)
    b.cbranch(b.icmp_signed(">", e, ZERO_I), body, done)
    b.position_at_end(body)
    odd = b.icmp_signed("!=", b.and_(e, ONE_I), ZERO_I)
    mul = checked(fc, "mul", res, b.select(odd, bas, ONE_I))
    e2 = b.ashr(e, ONE_I)
    sq = checked(fc, "mul", bas, b.select(b.icmp_signed(">", e2, ZERO_I), bas, ONE_I))
    res.add_incoming(mul, b.block)
    bas.add_incoming(sq, b.block)
    e.add_incoming(e2, b.block)
    b.branch(head)
    b.position_at_end(done)
    return res


# ---------------------------------------------------------------------------
# bits

@codegen("bitand", "bitor", "bitxor")
def _cg_bits(fc: FunctionGen, s, ts):
    a, b = operands(fc, s, s.type)
    return {"bitand": fc.b.and_, "bitor": fc.b.or_, "bitxor": fc.b.xor}[s.op](a, b)


@codegen("lshift", "rshift")
def _cg_shift(fc: FunctionGen, s, ts):
    a, n = operands(fc, s, INT64)
    b = fc.b
    fc.raise_if(b.icmp_signed("<", n, ZERO_I), ValueError, "negative shift count")
    big = b.icmp_signed(">=", n, L.Constant(I64, 64))
    safe_n = b.select(big, L.Constant(I64, 63), n)
    if s.op == "rshift":
        return b.ashr(a, safe_n)
    fc.deopt_if(b.and_(big, b.icmp_signed("!=", a, ZERO_I)), "integer overflow")
    r = b.shl(a, safe_n)
    fc.deopt_if(b.icmp_signed("!=", b.ashr(r, safe_n), a), "integer overflow")
    return b.select(big, ZERO_I, r)


# ---------------------------------------------------------------------------
# unary

@codegen("neg")
def _cg_neg(fc: FunctionGen, s, ts):
    a = fc.get(s.args[0], s.type)
    if wide(s.type) == FLOAT64:
        return fc.b.fneg(a)
    if s.type == INT32:
        return fc.b.sub(ZERO_I, a)
    return checked(fc, "sub", ZERO_I, a)


@codegen("pos")
def _cg_pos(fc: FunctionGen, s, ts):
    return fc.get(s.args[0], s.type)


@codegen("invert")
def _cg_invert(fc: FunctionGen, s, ts):
    return fc.b.xor(fc.get(s.args[0], INT64), L.Constant(I64, -1))


def truth(fc: FunctionGen, v, t) -> L.Value:
    if t == BOOL:
        return v
    if isinstance(t, LiteralT):      # a constant flag
        return L.Constant(I1, int(bool(t.value)))
    if wide(t) == INT64:
        return fc.b.icmp_signed("!=", v, ZERO_I)
    if wide(t) == FLOAT64:
        return fc.b.fcmp_unordered("!=", v, ZERO_F)
    if t == NONE:
        return L.Constant(I1, 0)
    return L.Constant(I1, int(len(t.elems) > 0))


@codegen("truth")
def _cg_truth(fc: FunctionGen, s, ts):
    return truth(fc, fc.get(s.args[0]), ts[0])


@codegen("not")
def _cg_not(fc: FunctionGen, s, ts):
    return fc.b.not_(truth(fc, fc.get(s.args[0]), ts[0]))


# ---------------------------------------------------------------------------
# comparisons

_SIGNED = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


@codegen("lt", "le", "gt", "ge", "eq", "ne")
def _cg_compare(fc: FunctionGen, s, ts):
    if NONE in ts:
        same = ts[0] == ts[1]
        return L.Constant(I1, int(same == (s.op == "eq")))
    if isinstance(ts[0], TupleT):
        same = tuples_equal(fc, fc.get(s.args[0]), ts[0], fc.get(s.args[1]), ts[1])
        return same if s.op == "eq" else fc.b.not_(same)
    a, b = (_number(fc, op, t) for op, t in zip(s.args, ts))
    return compare_values(fc, s.op, *a, *b)


def tuples_equal(fc: FunctionGen, a, ta: TupleT, b, tb: TupleT) -> L.Value:
    """`a == b` for tuples (or lists) of numbers, as CPython compares them: a tuple is
    never equal to a list, nor to one of another length; else entry by entry."""
    from jit.types import ListT
    if isinstance(ta, ListT) != isinstance(tb, ListT) or len(ta.elems) != len(tb.elems):
        return L.Constant(I1, 0)
    out = L.Constant(I1, 1)
    for k, (ea, eb) in enumerate(zip(ta.elems, tb.elems)):
        x, y = fc.b.extract_value(a, k), fc.b.extract_value(b, k)
        if isinstance(ea, TupleT):
            same = tuples_equal(fc, x, ea, y, eb)
        else:
            (x, ea), (y, eb) = _literal(x, ea), _literal(y, eb)
            same = compare_values(fc, "eq", x, ea, y, eb)
        out = fc.b.and_(out, same)
    return out


def _literal(v, t) -> tuple:
    """(value, type) of `v` of type `t`, a constant number (`LiteralT`) as an LLVM one."""
    if isinstance(t, LiteralT) and type(t.value) in (int, float):
        return (L.Constant(I64, t.value), INT64) if type(t.value) is int else \
            (L.Constant(F64, t.value), FLOAT64)
    return v, t


def _number(fc: FunctionGen, operand, t) -> tuple:
    """(value, type) of a comparison operand: a constant number the caller passed
    (`LiteralT`, see `jit.typing.primitives.literal_numbers`) as an LLVM constant."""
    if isinstance(t, LiteralT) and type(t.value) in (int, float):
        return _literal(None, t)
    return fc.get(operand), t


def float_compare(fc: FunctionGen, op: str, a, b) -> L.Value:
    if op == "ne":
        return fc.b.fcmp_unordered("!=", a, b)
    return fc.b.fcmp_ordered(_SIGNED[op], a, b)


def mixed_compare(fc: FunctionGen, op: str, i, f) -> L.Value:
    """`i op f` for int64 i and float64 f, exactly (CPython compares the true values).

    Rounding is monotone, so when float(i) != f the float comparison is right; when
    they are equal f is integral and the ints are compared (f = 2**63 exceeds all)."""
    b = fc.b
    fi = b.sitofp(i, F64)
    approx = float_compare(fc, op, fi, f)
    same = b.fcmp_ordered("==", fi, f)
    huge = b.fcmp_ordered(">=", f, L.Constant(F64, 2.0 ** 63))
    as_int = b.fptosi(b.select(huge, ZERO_F, f), I64)
    exact = b.icmp_signed(_SIGNED[op], i, as_int)
    big_res = L.Constant(I1, int(op in ("lt", "le", "ne")))
    exact = b.select(huge, big_res, exact)
    return b.select(same, exact, approx)


def compare_values(fc: FunctionGen, op: str, a, ta, b, tb) -> L.Value:
    """`a op b` for two numeric values of types ta, tb (exact for int/float mixes;
    float32 and int32 numbers are compared as the doubles and i64s that hold them)."""
    ta, tb = wide(ta), wide(tb)
    if ta == FLOAT64 and tb == FLOAT64:
        return float_compare(fc, op, a, b)
    if FLOAT64 not in (ta, tb):
        return fc.b.icmp_signed(_SIGNED[op], fc.convert(a, ta, INT64), fc.convert(b, tb, INT64))
    if ta == FLOAT64:
        flipped = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(op, op)
        return mixed_compare(fc, flipped, fc.convert(b, tb, INT64), a)
    return mixed_compare(fc, op, fc.convert(a, ta, INT64), b)


@codegen("in", "notin")
def _cg_in(fc: FunctionGen, s, ts):
    x, tup = fc.get(s.args[0]), fc.get(s.args[1])
    found = L.Constant(I1, 0)
    for i, e in enumerate(ts[1].elems):
        hit = compare_values(fc, "eq", x, ts[0], fc.b.extract_value(tup, i), e)
        found = fc.b.or_(found, hit)
    return found if s.op == "in" else fc.b.not_(found)


@codegen("is", "isnot")
def _cg_is(fc: FunctionGen, s, ts):
    if ts[0] == BOOL and ts[1] == BOOL:
        a, b = operands(fc, s, BOOL)
        return fc.b.icmp_unsigned("==" if s.op == "is" else "!=", a, b)
    same = ts[0] == NONE and ts[1] == NONE
    return L.Constant(I1, int(same == (s.op == "is")))


def const_int(operand):
    v = const_operand(operand)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _cg_inplace(fc: FunctionGen, s, ts):
    """`iOP` typed on numbers or tuples (see `jit.typing.primitives._t_inplace`) is `OP`."""
    from jit.typing.primitives import plain_inplace
    plain = plain_inplace(s)
    return fc.mg.lowering(plain.op)(fc, plain, ts)


def _register_inplace() -> None:
    from ssair.primitives import INPLACE
    codegen(*INPLACE)(_cg_inplace)


_register_inplace()
