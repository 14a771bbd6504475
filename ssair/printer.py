"""The IR printer, in the spirit of Julia's `@code_lowered` / `@code_typed`.

    function pow(%1 x, %2 n) @ demo.py:1
    1 ─      goto #2
    2 ┄ %3 = φ (#1 => 1, #3 => %6)            # r @ 2
    │   %4 = φ (#1 => %2, #3 => %5)           # n @ 1
    │   %5 = gt(%4, 0)                        # @ 3
    └──      goto #4 if not %5                # @ 3
    ...

Grammar (what `ssair.parser` reads back):
  * header: `function NAME[FREE-ARGS](ARGS) @ FILE:LINE`; each arg is `%n name` with an
    optional `::type`; the `[...]` part lists closure free variables and is omitted
    when there are none; ` @ FILE:LINE` is omitted when unknown.
  * a block starts with `K ─` (or `K ┄` when it has several predecessors), further
    lines start with `│`, its last line with `└──`.
  * statements `%n = op(operands, kw=operand)`, phis `%n = φ (#b => operand, ...)`,
    both with an optional `::type`; terminators `goto #k`, `goto #k if not %c` (followed
    by `goto #j` unless the true target is the next block), `goto #k unwind #h`,
    `return operand`, `raise operand`.
  * a trailing `# name @ line` annotation carries the source variable and line.
  * constants: Python literals (`1`, `2.5`, `inf`, `nan`, `True`, `None`, `'s'`,
    tuples), and `@dotted.name` for functions, modules and other objects.
"""
from __future__ import annotations

import math
import types
from typing import Any

from .ir import IR, TEXT_OF, Branch, Const, Goto, Phi, Raise, Return, Var

ANNOT_COLUMN = 40


def format_type(t: Any) -> str:
    """Types are printed with `str`; inference gives them readable names."""
    return str(t)


def format_const(v: Any) -> str:
    """The text of a constant operand."""
    if v is None or isinstance(v, bool):
        return repr(v)
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return repr(v)
    if isinstance(v, (str, bytes)):
        return repr(v)
    if isinstance(v, tuple):
        inner = ", ".join(format_const(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    return "@" + object_name(v)


def object_name(v: Any) -> str:
    """A dotted name for a function, module or other object constant."""
    sym = getattr(v, "__zygopy_symbol__", None)
    if isinstance(sym, str):
        return sym
    if isinstance(v, types.ModuleType):
        return v.__name__
    qual = getattr(v, "__qualname__", None) or getattr(v, "__name__", None)
    if isinstance(v, type) and v.__module__ == "builtins":
        return v.__name__
    if isinstance(qual, str):
        mod = getattr(v, "__module__", None)
        if mod is None and type(v).__name__ == "ufunc":
            mod = "numpy"
        if mod in (None, "builtins"):
            return qual
        return f"{_public_module(mod)}.{qual}"
    return f"<{type(v).__name__}>"


def _public_module(mod: str) -> str:
    """The module path up to its first private part: `numpy._core.multiarray` prints
    as `numpy`, `numpy.linalg._linalg` as `numpy.linalg`; `math` stays `math`."""
    parts = []
    for part in mod.split("."):
        if part.startswith("_"):
            break
        parts.append(part)
    return ".".join(parts) or mod


def format_operand(a: Any) -> str:
    if isinstance(a, Var):
        return f"%{a.id}"
    if isinstance(a, Const):
        return format_const(a.value)
    raise TypeError(f"not an operand: {a!r}")


def _typed(text: str, t: Any) -> str:
    return text if t is None else f"{text}::{format_type(t)}"


def format_stmt(s) -> str:
    """`%n = op(args)` or `%n = φ (...)`, without annotation."""
    if isinstance(s, Phi):
        inc = ", ".join(f"#{b} => {format_operand(v)}" for b, v in s.incoming.items())
        return _typed(f"%{s.var.id} = φ ({inc})", s.type)
    parts = [format_operand(a) for a in s.args]
    parts += [f"{k}={format_operand(v)}" for k, v in s.kwargs.items()]
    return _typed(f"%{s.var.id} = {s.op}({', '.join(parts)})", s.type)


def format_term(t, next_id) -> list:
    if isinstance(t, Goto):
        return [f"goto #{t.target}" + ("" if t.unwind is None else f" unwind #{t.unwind}")]
    if isinstance(t, Branch):
        lines = [f"goto #{t.else_} if not {format_operand(t.cond)}"]
        if t.then != next_id:
            lines.append(f"goto #{t.then}")
        return lines
    if isinstance(t, Return):
        return [f"return {format_operand(t.value)}"]
    if isinstance(t, Raise):
        return [f"raise {format_operand(t.value)}"]
    return ["<no terminator>"]


def _annotation(name, line) -> str:
    if name is None and line is None:
        return ""
    text = "# " + (name or "")
    if line is not None:
        text += ("" if name is None else " ") + f"@ {line}"
    return text


def format_header(ir: IR) -> str:
    def arg(a, star=""):
        return _typed(f"%{a.var.id} {star}{a.name}", a.type)
    free = ir.args[:ir.nfree]
    params = ir.args[ir.nfree:]
    packed = ir.meta.get("varargs")        # `*name`: the tuple of extra positionals
    varkw = ir.meta.get("varkw")           # `**name`: the dict of extra keywords
    text = f"function {ir.name}"
    if free:
        text += "[" + ", ".join(arg(a) for a in free) + "]"
    text += "(" + ", ".join(arg(a, "*" if k == packed else "**" if k == varkw else "")
                            for k, a in enumerate(params)) + ")"
    if ir.file is not None:
        text += f" @ {ir.file}:{ir.firstline if ir.firstline is not None else 0}"
    return text


def format_ir(ir: IR) -> str:
    """The whole listing; `parse(format_ir(ir))` gives an IR that prints identically."""
    preds = ir.predecessors()
    width = max((len(str(b.id)) for b in ir.blocks), default=1)
    out = [format_header(ir)]
    for i, b in enumerate(ir.blocks):
        next_id = ir.blocks[i + 1].id if i + 1 < len(ir.blocks) else None
        rows = [(format_stmt(d), _annotation(d.name, d.line)) for d in b.definitions()]
        tline = getattr(b.term, "line", None)
        rows += [("     " + t, _annotation(None, tline)) for t in format_term(b.term, next_id)]
        glyph = "┄" if len(preds.get(b.id, ())) > 1 else "─"
        for k, (body, ann) in enumerate(rows):
            if k == 0:
                lead = f"{b.id:<{width}} {glyph} "
            elif k == len(rows) - 1:
                lead = "└" + "─" * (width + 1) + " "
            else:
                lead = "│" + " " * (width + 2)
            text = lead + body
            if ann:
                text = text.ljust(ANNOT_COLUMN) + "  " + ann
            out.append(text.rstrip())
    return "\n".join(out)


TEXT_OF["const"] = format_const
TEXT_OF["ir"] = format_ir
