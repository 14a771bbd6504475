"""Strings in compiled code: values of a finite set of constants (`jit.types.StrT`).

A label chosen by a branch (`kind = "pos" if x > 0 else "neg"`) is a phi of string
constants; the JIT types it `str` and keeps the string's interned id (an i64), so
`==`, `!=`, truth and returning it to Python work; other string operations are
refused with TypingError.
"""
from __future__ import annotations

from llvmlite import ir as L

from jit.codegen import scalar as codegen_scalar  # noqa: F401  (the plain rules are wrapped below)
from jit.codegen.function import CODEGEN, I64
from jit.typing.infer import RULES, Context, string_like
from jit.types import BOOL, StrT, intern_string


def _as_id(fc, operand, t) -> L.Value:
    if isinstance(t, StrT):
        return fc.get(operand)
    return L.Constant(I64, intern_string(t.value))


def _wrap_compare() -> None:
    for op in ("eq", "ne"):
        plain_rule, plain_cg = RULES[op], CODEGEN[op]

        def rule(ctx: Context, s, ts, plain_rule=plain_rule):
            if any(isinstance(t, StrT) for t in ts):
                if not all(string_like(t) for t in ts):
                    ctx.fail(f"comparing a str with a {ts[0] if string_like(ts[1]) else ts[1]}"
                             " is not compiled")
                return BOOL
            return plain_rule(ctx, s, ts)

        def cg(fc, s, ts, plain_cg=plain_cg):
            if not any(isinstance(t, StrT) for t in ts):
                return plain_cg(fc, s, ts)
            a, b = (_as_id(fc, x, t) for x, t in zip(s.args, ts))
            return fc.b.icmp_signed("==" if s.op == "eq" else "!=", a, b)
        RULES[op], CODEGEN[op] = rule, cg


def _wrap_truth() -> None:
    for op in ("truth", "not"):
        plain_rule, plain_cg = RULES[op], CODEGEN.get(op)

        def rule(ctx: Context, s, ts, plain_rule=plain_rule):
            return BOOL if isinstance(ts[0], StrT) else plain_rule(ctx, s, ts)

        def cg(fc, s, ts, plain_cg=plain_cg):
            if not isinstance(ts[0], StrT):
                return plain_cg(fc, s, ts)
            empty = L.Constant(I64, intern_string(""))
            return fc.b.icmp_signed("!=" if s.op == "truth" else "==", fc.get(s.args[0]), empty)
        RULES[op], CODEGEN[op] = rule, cg


_wrap_compare()
_wrap_truth()
