"""Binding a call's operands to the callee's parameters: positional ones, keywords,
`*args` and `**kwargs` extras packed into one operand each (`Packed`), and defaults
(constants of the function)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ssair.ir import IR, Const, Stmt


@dataclass(eq=False)
class Packed:
    """The operands a call passes to a `*args` parameter: one tuple-typed argument
    (`Engine.operand_type`), built at the call (`FunctionGen.get`); with `keys`, the
    keywords it passes to a `**kwargs` parameter: one dict-typed argument."""
    operands: list
    keys: Optional[tuple] = None


def pack_varargs(ctx: Any, ir: IR, f: Any, args: list) -> list:
    """Positional operands of a call of `ir` with its `*args` extras as one `Packed`
    operand (unchanged when the callee has no `*args`)."""
    packed = ir.meta.get("varargs")
    if packed is None:
        return args
    return args[:packed] + [Packed(args[packed:])]


def bind_call(ctx: Any, ir: IR, f: Any, s: Stmt) -> list:
    """Operands for the callee's non-free parameters: positional (with `*args` extras
    packed into one), keywords (with `**kwargs` extras packed into one), defaults."""
    return bind_operands(ctx, ir, f, list(s.args[1:]), tuple(s.kwargs),
                         list(s.kwargs.values()))[0]


def bind_operands(ctx: Any, ir: IR, f: Any, pos: list, kwnames: tuple,
                  kwvals: list) -> tuple:
    """(operands in parameter order, the parameter each operand binds): an int, or
    `(p, j)` for entry j of the `*args` tuple or the `**kwargs` dict parameter p."""
    params = [a.name for a in ir.args[ir.nfree:]]
    packed = ir.meta.get("varargs")
    if packed is not None and len(pos) >= packed:
        pos = pack_varargs(ctx, ir, f, list(pos))
        extras = [(packed, j) for j in range(len(pos[-1].operands))]
        out, slots = bind_operands(ctx, _WithoutPacking(ir), f, pos, kwnames, kwvals)
        return out, tuple(list(slots[:packed]) + extras + list(slots[packed + 1:]))
    varkw = ir.meta.get("varkw")
    if not kwnames and len(pos) == len(params) and varkw is None:
        return list(pos), tuple(range(len(pos)))
    if len(pos) > (len(params) if varkw is None else varkw):
        ctx.fail(f"{ir.name}() takes {len(params)} positional arguments")
    out = list(pos) + [None] * (len(params) - len(pos))
    slots = list(range(len(pos)))
    extras = {}
    for k, v in zip(kwnames, kwvals):
        if k not in params or params.index(k) == varkw:
            if varkw is None:
                ctx.fail(f"{ir.name}() got an unexpected keyword {k!r}")
            slots.append((varkw, len(extras)))
            extras[k] = v
            continue
        if out[params.index(k)] is not None:
            ctx.fail(f"{ir.name}() got multiple values for argument {k!r}")
        out[params.index(k)] = v
        slots.append(params.index(k))
    if varkw is not None:
        out[varkw] = Packed(list(extras.values()), tuple(extras))
    defaults = _defaults(f, params)
    for i, v in enumerate(out):
        if v is None:
            if params[i] not in defaults:
                ctx.fail(f"{ir.name}() missing argument {params[i]!r}")
            out[i] = Const(defaults[params[i]])
    return out, tuple(slots)


class _WithoutPacking:
    """An IR seen by `bind_operands` once its `*args` extras are packed into one."""

    def __init__(self, ir: IR) -> None:
        self.args, self.nfree, self.name = ir.args, ir.nfree, ir.name
        self.meta = {"varkw": ir.meta["varkw"]} if "varkw" in ir.meta else {}


def _defaults(f: Any, params: list) -> dict:
    f = getattr(f, "func", f)
    d = dict(getattr(f, "__kwdefaults__", None) or {})
    pos = getattr(f, "__defaults__", None) or ()
    if pos:
        n = getattr(getattr(f, "__code__", None), "co_argcount", len(params))
        names = params[:n]
        d.update(zip(names[len(names) - len(pos):], pos))
    return d
