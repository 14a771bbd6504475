"""The optimisation passes and the pipeline that runs them.

Every pass is a function `IR -> IR` that returns a new IR and leaves its input
untouched; each one's docstring says what it requires and guarantees.

Order constraints of `PIPELINE` (one round; `optimize` repeats rounds until the
listing stops changing, at most `MAX_ROUNDS` times):
  1. `simplifycfg` first: it drops unreachable blocks, so that the dominator tree
     used by `cse` covers every block that is left.
  2. `inplace` before the arithmetic passes: it turns `iadd(x, y)` on a scalar `x`
     into `add(x, y)`, which they know (an `iadd` is impure: it may mutate an array).
  3. `constfold` before `algebraic`: the rules of `algebraic` look for literal
     operands (`x * 1`), which folding and propagation expose.
  4. `algebraic` before `cse`: rewrites such as `0 - x -> neg(x)` bring expressions
     to one form, so that more of them compare equal.
  5. `cse` and `algebraic` before `dce`: both leave definitions without uses.
  6. `simplifycfg` last: `constfold` turns branch conditions into constants and
     `dce` empties blocks, which only then can be folded, merged or bypassed.

Debugging: `ZYGOPY_DUMP=constfold` (a comma-separated list of pass names, or `all`)
prints the IR before and after that pass to stderr.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from ..ir import IR
from ..printer import format_ir
from .algebraic import algebraic
from .constfold import constfold
from .cse import cse
from .dce import dce
from .inplace import inplace
from .simplifycfg import simplifycfg

PIPELINE: list = [
    ("simplifycfg", simplifycfg),
    ("inplace", inplace),
    ("constfold", constfold),
    ("algebraic", algebraic),
    ("cse", cse),
    ("dce", dce),
    ("simplifycfg", simplifycfg),
]
PASSES: dict = dict(PIPELINE)
MAX_ROUNDS = 4


def _dump_wanted(name: str) -> bool:
    wanted = os.environ.get("ZYGOPY_DUMP", "")
    names = {w.strip() for w in wanted.split(",") if w.strip()}
    return "all" in names or name in names


def run_pass(name: str, fn: Callable, ir: IR) -> IR:
    """Run one pass, printing the IR around it when `ZYGOPY_DUMP` asks for it."""
    dump = _dump_wanted(name)
    if dump:
        print(f"--- before {name}: {ir.name}\n{format_ir(ir)}", file=sys.stderr)
    out = fn(ir)
    if dump:
        print(f"--- after {name}: {ir.name}\n{format_ir(out)}", file=sys.stderr)
    return out


def optimize(ir: IR, passes: Sequence | None = None, rounds: int = MAX_ROUNDS) -> IR:
    """Run the pipeline (or `passes`: names or (name, function) pairs) in rounds until
    the printed IR stops changing, at most `rounds` times.  Returns a new IR; the
    input is untouched."""
    table = _resolve(passes) if passes is not None else PIPELINE
    text = format_ir(ir)
    for _ in range(rounds):
        for name, fn in table:
            ir = run_pass(name, fn, ir)
        new_text = format_ir(ir)
        if new_text == text:
            break
        text = new_text
    return ir


def _resolve(passes: Sequence) -> list:
    table = []
    for p in passes:
        if isinstance(p, str):
            if p not in PASSES:
                raise KeyError(f"optimize: unknown pass {p!r} (known: {', '.join(PASSES)})")
            table.append((p, PASSES[p]))
        else:
            table.append(tuple(p))
    return table


__all__ = [
    "PASSES",
    "PIPELINE",
    "algebraic",
    "constfold",
    "cse",
    "dce",
    "inplace",
    "optimize",
    "run_pass",
    "simplifycfg",
]
