"""Differential-test helpers shared by the foundation tests.

`check_lowering(f, *args)` runs one function through the whole foundation:

    lower -> verify -> print -> parse -> print (identical) -> source lines present
          -> interpret == CPython
          (and the parsed IR too, when all its constants resolve)
          -> optimize -> verify -> print/parse round trip -> interpret == CPython

Results are compared strictly: same type, floats bit-for-bit (NaN equals NaN, -0.0
differs from 0.0), arrays by dtype, shape and `np.array_equal`, containers
element-wise.  An exception matches when its type is the same.  Every run gets a
fresh deep copy of the arguments, and the arguments' final state (a function may
write into an input array) is compared as well.

Run as a script for a per-case report over the corpus:
    python tests/harness.py [--all] [CATEGORY_OR_ID ...]
"""
from __future__ import annotations

import copy
import inspect
import math
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import lowering
import ssair
from ssair.parser import Symbol, parse
from ssair.passes import optimize


class CheckFailure(AssertionError):
    """A differential check failed; `stage` names the step of the pipeline."""

    def __init__(self, stage: str, func: Callable, message: str):
        self.stage = stage
        self.func = func
        name = getattr(func, "__qualname__", repr(func))
        super().__init__(f"[{stage}] {name}: {message}")


# -- comparing values -------------------------------------------------------------

def same(a: Any, b: Any) -> bool:
    """Strict equality: same type and same value (floats exactly, NaN == NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return _same_array(a, b)
    if isinstance(a, (float, np.floating)):
        return _same_float(float(a), float(b))
    if isinstance(a, (complex, np.complexfloating)):
        return _same_float(a.real, b.real) and _same_float(a.imag, b.imag)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - any exception is an outcome to compare
        return a is b


def _same_float(x: float, y: float) -> bool:
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y and math.copysign(1.0, x) == math.copysign(1.0, y)


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True)
                    and np.array_equal(np.signbit(a.real), np.signbit(b.real)))
    if a.dtype.kind == "O":
        return all(same(x, y) for x, y in zip(a.ravel(), b.ravel()))
    return bool(np.array_equal(a, b))


def describe(outcome: tuple) -> str:
    kind, value = outcome
    if kind == "raise":
        return f"raised {type(value).__name__}: {value}"
    return f"returned {value!r} ({type(value).__name__})"


# -- running ----------------------------------------------------------------------

def run_python(f: Callable, args: tuple) -> tuple:
    """(("return", value) | ("raise", exc), args after the run), on a deep copy."""
    mine = copy.deepcopy(args)
    try:
        return ("return", f(*mine)), mine
    except Exception as e:  # noqa: BLE001 - any exception is an outcome to compare
        return ("raise", e), mine


def closure_values(f: Callable) -> tuple:
    """The captured values a lowered closure takes as its leading arguments."""
    cells = getattr(f, "__closure__", None) or ()
    return tuple(c.cell_contents for c in cells)


def run_ir(ir: ssair.IR, f: Callable, args: tuple) -> tuple:
    """Like `run_python`, interpreting `ir` (captured values prepended for closures)."""
    mine = copy.deepcopy(args)
    free = closure_values(f) if ir.nfree else ()
    try:
        return ("return", ssair.interpret(ir, *free, *mine)), mine
    except Exception as e:  # noqa: BLE001 - any exception is an outcome to compare
        return ("raise", e), mine


def same_outcome(a: tuple, b: tuple) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "raise":
        return type(a[1]) is type(b[1])
    return same(a[1], b[1])


def compare_runs(stage: str, f: Callable, ir: ssair.IR, args: tuple) -> None:
    """Run CPython and the interpreter on `args`; fail naming the stage on mismatch."""
    want, want_args = run_python(f, args)
    got, got_args = run_ir(ir, f, args)
    if not same_outcome(want, got):
        extra = ""
        if got[0] == "raise" and want[0] != "raise":
            extra = "\n" + "".join(traceback.format_exception(
                type(got[1]), got[1], got[1].__traceback__)[-6:])
        raise CheckFailure(stage, f, f"args {args!r}: CPython {describe(want)}, "
                           f"interpreter {describe(got)}{extra}")
    if not same(want_args, got_args):
        raise CheckFailure(stage, f, f"args {args!r}: inputs after the run differ: "
                           f"CPython {want_args!r}, interpreter {got_args!r}")


# -- the pipeline -----------------------------------------------------------------

def check_roundtrip(stage: str, f: Callable, ir: ssair.IR) -> ssair.IR:
    """verify, then print -> parse -> print must be identical; returns the parsed IR."""
    try:
        ssair.verify(ir)
    except ssair.VerifyError as e:
        raise CheckFailure(f"verify{stage}", f, f"{e}\n{ir}") from None
    text = ssair.format_ir(ir)
    try:
        parsed = parse(text)
        again = ssair.format_ir(parsed)
    except Exception as e:  # noqa: BLE001 - any exception is an outcome to compare
        raise CheckFailure(f"parse{stage}", f, f"{type(e).__name__}: {e}\n{text}") from None
    if again != text:
        raise CheckFailure(f"roundtrip{stage}", f, "print -> parse -> print differs:\n"
                           + _first_difference(text, again))
    return parsed


def fully_resolved(ir: ssair.IR) -> bool:
    """True when every object constant of a parsed IR resolved to a real object (nested
    functions print as names that cannot be imported and parse as `Symbol`s)."""
    return not any(isinstance(a, ssair.Const) and isinstance(a.value, Symbol)
                   for _, a in ir.uses())


def _first_difference(a: str, b: str) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}:\n  printed: {x}\n  reparsed: {y}"
    return f"lengths differ: {len(la)} vs {len(lb)} lines"


def check_lines(f: Callable, ir: ssair.IR) -> None:
    """Every phi, statement and terminator of the lowered IR carries a source line
    inside the function's own lines."""
    try:
        lines, first = inspect.getsourcelines(f)
    except (OSError, TypeError):
        return
    last = first + len(lines) - 1
    for b in ir.blocks:
        for d in [*b.definitions(), b.term]:
            if d.line is None or not first <= d.line <= last:
                what = getattr(d, "var", None) or type(d).__name__
                raise CheckFailure("lines", f, f"block #{b.id} {what}: line {d.line} "
                                   f"outside {first}-{last}\n{ir}")


def lower(f: Callable) -> ssair.IR:
    try:
        return lowering.lower(f)
    except lowering.UnsupportedError as e:
        raise CheckFailure("lower", f, f"refused: {e}") from None
    except Exception as e:  # noqa: BLE001 - any exception is an outcome to compare
        raise CheckFailure("lower", f, f"{type(e).__name__}: {e}\n"
                           + traceback.format_exc(limit=-4)) from None


def check_lowering(f: Callable, *arglists: tuple) -> ssair.IR:
    """The full differential check of `f` on each argument tuple; returns the
    optimised IR.  Raises `CheckFailure` naming the first stage that failed."""
    ir = lower(f)
    text = ssair.format_ir(ir)
    parsed = check_roundtrip("", f, ir)
    check_lines(f, ir)
    for args in arglists:
        compare_runs("interpret", f, ir, args)
    if ssair.format_ir(ir) != text:
        raise CheckFailure("interpret", f, "interpreting modified the IR")
    if fully_resolved(parsed):
        for args in arglists:
            compare_runs("interpret-parsed", f, parsed, args)
    try:
        opt = optimize(ir)
    except Exception as e:  # noqa: BLE001 - any exception is an outcome to compare
        raise CheckFailure("optimize", f, f"{type(e).__name__}: {e}\n"
                           + traceback.format_exc(limit=-4)) from None
    if ssair.format_ir(ir) != text:
        raise CheckFailure("optimize", f, "optimize modified its input IR")
    check_roundtrip("-opt", f, opt)
    for args in arglists:
        compare_runs("interpret-opt", f, opt, args)
    return opt


# -- corpus report (script) -------------------------------------------------------

@dataclass
class Outcome:
    case_id: str
    ok: bool
    stage: str = ""
    message: str = ""


def run_case(case: Any) -> Outcome:
    try:
        check_lowering(case.func, *case.args)
    except CheckFailure as e:
        return Outcome(case.id, False, e.stage, str(e))
    except Exception as e:  # noqa: BLE001 - any exception is an outcome to compare
        return Outcome(case.id, False, "harness", f"{type(e).__name__}: {e}")
    return Outcome(case.id, True)


def report(cases: list, verbose: bool = True) -> list:
    outcomes = [run_case(c) for c in cases]
    for o in outcomes:
        if not o.ok and verbose:
            print(f"FAIL {o.case_id} [{o.stage}]\n    "
                  + "\n    ".join(o.message.splitlines()[:12]))
    return outcomes


def _summary(label: str, outcomes: list) -> None:
    n = len(outcomes)
    ok = sum(o.ok for o in outcomes)
    pct = 100.0 * ok / n if n else 0.0
    print(f"{label}: {ok}/{n} passed ({pct:.1f}%)")


def main(argv: list) -> int:
    import corpus
    selected = [a for a in argv if not a.startswith("-")]
    cases = corpus.core_cases() + (corpus.extra_cases() if "--all" in argv else [])
    if selected:
        cases = [c for c in cases if c.category in selected or c.id in selected]
    outcomes = report(cases)
    by_cat: dict = {}
    for c, o in zip(cases, outcomes):
        by_cat.setdefault(c.category, []).append(o)
    for cat, outs in by_cat.items():
        _summary(f"  {cat}", outs)
    _summary(f"Python {sys.version.split()[0]}, total", outcomes)
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.path.insert(0, __import__("os").path.dirname(__file__))
    sys.exit(main(sys.argv[1:]))
