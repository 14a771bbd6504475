"""Handlers for f-strings: FORMAT_VALUE (3.10-3.12), CONVERT_VALUE, FORMAT_SIMPLE and
FORMAT_WITH_SPEC (3.13), BUILD_STRING.

An f-string is gathered as a `LazyFormat` of literal text and fields, and lowered as
one call `formatted(template, *values)` (`lowering.runtime.formatted`), `template`
being a `str.format` template: the literal text with its braces doubled, each field
`{}`, `{!r}`, `{:>10}` (a constant spec written in), or `{!r:{}}` (a spec computed at
run time, passed after its value).  `str.format` formats each value with `format`
after its conversion, as the f-string does.  A field whose value and spec are
constants of the literal types is formatted here, and an f-string without run-time
fields is a constant.  The string is a constant of differentiation (no gradient).
"""
from __future__ import annotations

from ssair.ir import Const

from .handlers import handles
from .runtime import formatted
from .values import Converted, Field, LazyFormat

CONVERSIONS = {0: "", 1: "s", 2: "r", 3: "a"}
LITERALS = (int, float, complex, str, bool, type(None))
APPLY = {"": lambda v: v, "s": str, "r": repr, "a": ascii}


def _conversion(arg) -> str:
    return CONVERSIONS[int(getattr(arg, "value", arg)) & 3]


@handles("FORMAT_VALUE")
def op_format_value(lw, ins):
    flags = int(getattr(ins.arg, "value", ins.arg))
    spec = lw.pop() if flags & 4 else None
    lw.push(field_format(lw, lw.pop(), _conversion(flags), spec))


@handles("CONVERT_VALUE")
def op_convert_value(lw, ins):
    lw.push(Converted(value=lw.operand(lw.pop()), conversion=_conversion(ins.arg)))


@handles("FORMAT_SIMPLE")
def op_format_simple(lw, ins):
    value = lw.pop()
    if isinstance(value, LazyFormat) and value.var is None:
        lw.push(value)                     # a str formatted with no spec is itself
        return
    lw.push(_field_of(lw, value, None))


@handles("FORMAT_WITH_SPEC")
def op_format_with_spec(lw, ins):
    spec = lw.pop()
    lw.push(_field_of(lw, lw.pop(), spec))


def _field_of(lw, value, spec):
    if isinstance(value, Converted):
        return field_format(lw, value.value, value.conversion, spec)
    return field_format(lw, value, "", spec)


def field_format(lw, value, conversion: str, spec):
    """The f-string of one field (a constant when its value and spec are)."""
    if isinstance(spec, Const):
        spec = spec.value
    if isinstance(spec, LazyFormat) and spec.var is None \
            and all(type(p) is str for p in spec.parts):
        spec = "".join(spec.parts)        # `{v:{8}.{3}f}`: a constant spec
    if not (spec is None or type(spec) is str or isinstance(spec, LazyFormat)):
        spec = lw.operand(spec)
    value = lw.operand(value)
    if isinstance(value, Const) and type(value.value) in LITERALS and \
            (spec is None or type(spec) is str):
        return LazyFormat(parts=[format(APPLY[conversion](value.value), spec or "")])
    return LazyFormat(parts=[Field(value, conversion, spec)])


@handles("BUILD_STRING")
def op_build_string(lw, ins):
    parts = []
    for item in lw.popn(ins.arg):
        if isinstance(item, LazyFormat) and item.var is None:
            parts += item.parts
        elif isinstance(item, Const) and type(item.value) is str:
            parts.append(item.value)
        else:
            parts.append(Field(lw.operand(item), "", None))
    lw.push(LazyFormat(parts=parts))


def materialize_format(lw, v: LazyFormat):
    """`formatted(template, *values)`, or the constant string."""
    template, values = [], []
    for p in v.parts:
        if isinstance(p, str):
            template.append(p.replace("{", "{{").replace("}", "}}"))
            continue
        conv = f"!{p.conversion}" if p.conversion else ""
        values.append(p.value)
        if p.spec is None or p.spec == "":
            template.append("{" + conv + "}")
        elif type(p.spec) is str and "{" not in p.spec and "}" not in p.spec:
            template.append("{" + conv + ":" + p.spec + "}")
        else:
            template.append("{" + conv + ":{}}")
            values.append(Const(p.spec) if type(p.spec) is str else lw.operand(p.spec))
    text = "".join(template)
    if not values:
        return Const(text.replace("{{", "{").replace("}}", "}"))
    return lw.emit("call", Const(formatted), Const(text), *values)

