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

# The order constraints above as data, the way Go's compiler keeps `passOrder`:
# (a, b, why) in ORDER means every run of b has a run of a before it (a prepares
# for b); in CLEANUPS, some run of b follows the last run of a (b cleans up after
# a).  `check_order` holds a pipeline to them; a test runs it on `PIPELINE`.
ORDER: list = [
    ("simplifycfg", "cse", "unreachable blocks are gone before the dominator tree"),
    ("inplace", "constfold", "iadd on scalars becomes add, which folding knows"),
    ("constfold", "algebraic", "algebraic rules look for literal operands"),
    ("algebraic", "cse", "one form per expression, so that more of them compare equal"),
]
CLEANUPS: list = [
    ("cse", "dce", "cse leaves definitions without uses"),
    ("algebraic", "dce", "algebraic leaves definitions without uses"),
    ("constfold", "simplifycfg", "constant branch conditions fold only afterwards"),
    ("dce", "simplifycfg", "dce empties blocks, which only then merge or vanish"),
]


def check_order(pipeline: Sequence) -> list:
    """The constraints of ORDER and CLEANUPS that `pipeline` ((name, fn) pairs, in
    order) breaks, as messages; a constraint on a pass that does not run is moot."""
    names = [n for n, _ in pipeline]
    at = {n: [k for k, m in enumerate(names) if m == n] for n in names}
    broken = []
    for a, b, why in ORDER:
        if a in at and b in at and not all(any(i < j for i in at[a]) for j in at[b]):
            broken.append(f"{a} must run before every {b}: {why}")
    for a, b, why in CLEANUPS:
        if a in at and b in at and not max(at[b]) > max(at[a]):
            broken.append(f"{b} must run after the last {a}: {why}")
    return broken

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
    "CLEANUPS",
    "ORDER",
    "check_order",
    "optimize",
    "run_pass",
    "simplifycfg",
]
