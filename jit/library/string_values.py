"""Strings in compiled code: values of a finite set of constants (`jit.types.StrT`),
and f-strings (`jit.types.FormattedT`), formatted where they reach Python.

A label chosen by a branch (`kind = "pos" if x > 0 else "neg"`) is a phi of string
constants; the JIT types it `str` and keeps the string's interned id (an i64), so
`==`, `!=`, truth and returning it to Python work; a method of a string constant
called with constants (`mode.lower() == "train"`, `name.startswith("w")`) is computed
when compiling; other string operations are refused with TypingError.
"""
from __future__ import annotations

import string

from llvmlite import ir as L

from jit.codegen.function import lltype
from jit.library.registry import REGISTRY, Impl
from jit.runtime.host_calls import passable
from jit.typing.infer import UNTYPED_CALLS, Context, LiteralT, string_like
from jit.types import (BOOL, INT64, BuiltListT, DictT, FormattedT, FunctionT, RecordT, StrT,
                       TupleT)
from lowering.runtime import formatted


def _as_id(fc, operand, t) -> L.Value:
    if isinstance(t, StrT):
        return fc.get(operand)
    return fc.mg.string_word(t.value)


def _has_str(ctx, s, ts) -> bool:
    """A StrT operand, or two string constants (an object's str attribute is one:
    `self.act == "tanh"`)."""
    return any(isinstance(t, StrT) for t in ts) or len(ts) == 2 and all(
        string_like(t) for t in ts)


def _is_str(ctx, s, ts) -> bool:
    return isinstance(ts[0], StrT)


def _t_compare(ctx: Context, s, ts):
    if not all(string_like(t) for t in ts):
        ctx.fail(f"comparing a str with a {ts[0] if string_like(ts[1]) else ts[1]}"
                 " is not compiled")
    return BOOL


def _cg_compare(fc, s, ts):
    a, b = (_as_id(fc, x, t) for x, t in zip(s.args, ts))
    return fc.b.icmp_signed("==" if s.op == "eq" else "!=", a, b)


def _in_strings(ctx, s, ts) -> bool:
    """Pattern: a str in a tuple of strs (`mode not in ("sum", "mean")`)."""
    return string_like(ts[0]) and isinstance(ts[1], TupleT) and not isinstance(
        ts[1], (BuiltListT, DictT, RecordT)) and all(string_like(e) for e in ts[1].elems)


def _t_in(ctx: Context, s, ts):
    return BOOL


def _cg_in(fc, s, ts):
    x = _as_id(fc, s.args[0], ts[0])
    tup = None
    found = L.Constant(L.IntType(1), 0)
    for i, e in enumerate(ts[1].elems):
        if isinstance(e, StrT):
            tup = fc.get(s.args[1]) if tup is None else tup
            word = fc.b.extract_value(tup, i)
        else:
            word = fc.mg.string_word(e.value)
        found = fc.b.or_(found, fc.b.icmp_signed("==", x, word))
    return found if s.op == "in" else fc.b.not_(found)


def _t_truth(ctx: Context, s, ts):
    return BOOL


def _cg_truth(fc, s, ts):
    empty = fc.mg.string_word("")
    return fc.b.icmp_signed("!=" if s.op == "truth" else "==", fc.get(s.args[0]), empty)


for _op in ("eq", "ne"):
    REGISTRY.overload(_op, "str", _has_str, _t_compare, _cg_compare, family="strings")
for _op in ("in", "notin"):
    REGISTRY.overload(_op, "str in a tuple of strs", _in_strings, _t_in, _cg_in,
                      family="strings")
for _op in ("truth", "not"):
    REGISTRY.overload(_op, "str", _is_str, _t_truth, _cg_truth, family="strings")


def _t_formatted(ctx: Context, s, ts):
    """`formatted(template, *values)`: the values are kept, formatted by Python where
    the string is printed or logged (see FormattedT); a constant value (a str option
    the function was specialised on) is formatted into the template now."""
    template = _fold_constants(ctx, ctx.const(s.args[1]), ts[1:])
    for t in ts[1:]:
        if not isinstance(t, LiteralT) and not passable(t):
            ctx.fail(f"a {t} inside an f-string is not compiled")
    return FormattedT(tuple(t for t in ts[1:] if not isinstance(t, LiteralT)), template)


def _escaped(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _fold_constants(ctx: Context, template: str, ts: list) -> str:
    """`template` (`lowering.ops_format`'s: fields `{}`, `{!r}`, `{:>10}`, `{!r:{}}`)
    with the fields of constant values (`LiteralT`) formatted in."""
    if not any(isinstance(t, LiteralT) for t in ts):
        return template
    out, k = [], 0
    for text, field, spec, conv in string.Formatter().parse(template):
        out.append(_escaped(text))
        if field is None:
            continue
        t, k = ts[k], k + 1
        if "{" in (spec or ""):          # a spec computed at run time: its own value
            if isinstance(t, LiteralT) or isinstance(ts[k], LiteralT):
                ctx.fail("an f-string field of a constant with a computed format spec is "
                         "not compiled")
            out.append("{" + (f"!{conv}" if conv else "") + ":{}}")
            k += 1
        elif isinstance(t, LiteralT):
            v = {"r": repr, "s": str, "a": ascii}.get(conv, lambda x: x)(t.value)
            out.append(_escaped(format(v, spec or "")))
        else:
            out.append("{" + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}")
    return "".join(out)


def _cg_formatted(fc, s, ts):
    out = L.Constant(lltype(s.type), L.Undefined)
    kept = [a for a, t in zip(s.args[2:], ts[1:]) if not isinstance(t, LiteralT)]
    for i, a in enumerate(kept):
        out = fc.b.insert_value(out, fc.get(a, s.type.elems[i]), i)
    return out


# -- a method of a string constant, called with constants: folded when compiling -----------
STR_METHODS = frozenset({
    "lower", "upper", "casefold", "strip", "lstrip", "rstrip", "title", "capitalize",
    "swapcase", "startswith", "endswith", "replace", "removeprefix", "removesuffix",
    "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper", "find", "count",
    "zfill", "center", "ljust", "rjust"})


class StrMethod:
    """`s.name` of a string constant `s` (the JIT's callee for `s.name(args)`)."""

    def __init__(self, text: str, name: str) -> None:
        self.text, self.name = text, name

    def __repr__(self) -> str:
        return f"{self.text!r}.{self.name}"

    def __eq__(self, other) -> bool:
        return isinstance(other, StrMethod) and (self.text, self.name) == \
            (other.text, other.name)

    def __hash__(self) -> int:
        return hash((self.text, self.name))


def _is_str_method(ctx, s, ts) -> bool:
    name = ctx.const(s.args[1]) if len(s.args) == 2 else None
    return isinstance(ts[0], LiteralT) and type(ts[0].value) is str and name in STR_METHODS


def _t_str_method(ctx: Context, s, ts):
    return FunctionT(StrMethod(ts[0].value, ctx.const(s.args[1])))


def _cg_no_data(fc, s, ts):
    return L.Constant(lltype(s.type), None)


def fold_str_method(ctx: Context, s, ts: list):
    """The type of `s.name(args)` on a string constant with constant arguments (an
    `UNTYPED_CALLS` handler): its result, computed now (a string constant; a bool or
    an int, compiled as a constant).  None for other callees."""
    m = ts[0].func if isinstance(ts[0], FunctionT) else None
    if not isinstance(m, StrMethod):
        return None
    if s.kwargs or not all(ctx.is_const(a) for a in s.args[1:]):
        ctx.fail(f"str.{m.name} of a string constant with arguments computed at run time "
                 "is not compiled")
    value = getattr(m.text, m.name)(*[ctx.const(a) for a in s.args[1:]])
    ctx.typing.impls[s.var] = FOLDED
    ctx.typing.static[s.var] = value
    if type(value) is str:
        return LiteralT(value)
    return BOOL if type(value) is bool else INT64


def _cg_folded(fc, s, ts):
    value = fc.typing.static[s.var]
    if type(value) is str:
        return L.Constant(lltype(s.type), None)
    return L.Constant(lltype(s.type), int(value))


FOLDED = Impl("a string constant's method, with constants (folded)", None, fold_str_method,
              lower=_cg_folded)
UNTYPED_CALLS.insert(0, fold_str_method)
REGISTRY.overload("getattr", "a method of a string constant", _is_str_method, _t_str_method,
                  _cg_no_data, family="strings")


REGISTRY.declare(formatted, family="strings", name="f-string (printed or logged)",
                 pattern="numbers, strings, arrays, tuples", types=_t_formatted,
                 lower=_cg_formatted)
