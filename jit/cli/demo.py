"""`zygopy demo`: every stage of the pipeline on the two examples of Innes (2018).

For the paper's `pow` (a while loop) and a leaky ReLU (a branch) it prints the lowered
IR, the forward IR (dummy phis that record the edge taken, tape pushes), the adjoint
IR and an excerpt of the LLVM IR; it then checks that CPython, the interpreter and the
JIT agree, evaluates the gradient (compiled when the build has the compiled adjoint,
else interpreted, saying which), compares it with central differences, and times it
next to CPython.  Stages this build lacks are reported as missing, not fatal.
"""
from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jit.cli.gradients import (
    central_difference,
    format_seconds,
    per_call_seconds,
    pullback_with,
    relative_error,
)

FD_TOLERANCE = 1e-6
LLVM_EXCERPT_LINES = 22


def pow(x, n):
    r = 1
    while n > 0:
        n -= 1
        r *= x
    return r


def leaky_relu(x):
    if x > 0:
        return x
    return 0.01 * x


@dataclass(frozen=True)
class Example:
    """One demo function: the arguments its listings use, the inputs its values are
    checked on, the points its gradient is checked at and the call that is timed."""

    func: Callable
    title: str
    show_args: tuple
    inputs: list
    grad_points: list
    timed: tuple


EXAMPLES = [
    Example(pow, "the paper's pow: a while loop", (2.0, 3),
            [(2.0, 3), (3, 40), (1.5, 0)], [(1.5, 10), (0.9, 7)], (1.0001, 100)),
    Example(leaky_relu, "leaky ReLU: a branch", (2.5,),
            [(2.5,), (-4.0,), (0.0,)], [(2.5,), (-4.0,)], (-1.5,)),
]


def section(title: str) -> None:
    print(f"-- {title}")


def _jit() -> Any:
    try:
        import jit
        return jit
    except ImportError:
        return None


def guarded(title: str, step: Callable, *args: Any) -> tuple:
    """(result, True), or (None, False) after printing why `step` failed: a stage this
    build cannot run is reported and the demo goes on."""
    try:
        return step(*args), True
    except Exception as e:  # noqa: BLE001  (any stage's failure is reported, not raised)
        first = str(e).splitlines()[0] if str(e) else ""
        section(f"{title}: FAILED: {type(e).__name__}: {first}")
        return None, False


def show_lowered(ex: Example) -> None:
    import lowering
    section("lowered IR (zygopy show FILE.py:FUNC --stage lowered)")
    print(lowering.code_lowered(ex.func))


def show_adjoint(ex: Example) -> None:
    from adjoint import code_adjoint
    code = code_adjoint(ex.func, *ex.show_args)
    section(f"forward IR for {_call(ex.func, ex.show_args)}: the `edge` phis record which "
            "edge was taken; push() writes what the adjoint needs to the tape")
    print(code.forward)
    section("adjoint IR: pop() reads the tape backwards, branching on the recorded edge")
    print(code.adjoint)


def show_llvm(ex: Example) -> None:
    jit = _jit()
    if jit is None or not hasattr(jit, "code_llvm"):
        section("LLVM IR: not available in this build (no jit.code_llvm)")
        return
    defines = _defines(str(jit.code_llvm(ex.func, *ex.show_args, optimized=False)))
    shown = defines[:1] + [d for d in defines[1:] if "adj" in d[0]][:1]
    for lines in map(_from_first_block, shown):
        more = len(lines) - LLVM_EXCERPT_LINES
        section(f"LLVM IR (excerpt{f', {more} more lines' if more > 0 else ''}; "
                "--stage llvm shows the optimised module)")
        print("\n".join(lines[:LLVM_EXCERPT_LINES]))


def _from_first_block(lines: list) -> list:
    """The `define` line, then the body from the first block of the IR (`b1:`), past
    the entry's recursion-depth guard."""
    start = next((i for i, s in enumerate(lines) if s.startswith("b1")), 1)
    return lines[:1] + lines[start:]


def _defines(text: str) -> list:
    """The `define ... { ... }` functions of an LLVM module, as lists of lines."""
    out, cur = [], None
    for line in text.splitlines():
        if line.startswith("define"):
            cur = [line]
        elif cur is not None:
            cur.append(line)
            if line == "}":
                out.append(cur)
                cur = None
    return out


def _call(f: Callable, args: tuple) -> str:
    return f"{f.__name__}({', '.join(repr(a) for a in args)})"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


def check_values(ex: Example) -> bool:
    """CPython, the IR interpreter and (when present) the JIT on every input.  The JIT
    types `r = 1` joined with floats as float64, so it may return 1.0 where CPython
    returns 1: equal values of another type are shown, not counted as a mismatch."""
    import lowering
    from ssair import interpret
    jit = _jit()
    compiled = jit.jit(ex.func) if jit is not None and hasattr(jit, "jit") else None
    ir, ok = lowering.lower(ex.func), True
    section("values: CPython | interpreter" + (" | JIT" if compiled else ""))
    for args in ex.inputs:
        want = ex.func(*args)
        got = [interpret(ir, *args)] + ([compiled(*args)] if compiled else [])
        verdict = _verdict(want, got)
        ok = ok and verdict != "MISMATCH"
        shown = " | ".join(repr(v) for v in [want] + got)
        print(f"   {_call(ex.func, args):<18} {shown}   {verdict}")
    return ok


def _verdict(want: Any, got: list) -> str:
    if all(_same(want, g) for g in got):
        return "ok"
    if all(g == want for g in got):
        kinds = sorted({type(g).__name__ for g in got} - {type(want).__name__})
        return f"ok (equal value, {'/'.join(kinds)} instead of {type(want).__name__})"
    return "MISMATCH"


def check_gradients(ex: Example) -> tuple:
    """The gradient at each point against central differences; returns (ok, backend)."""
    ok, backend = True, "interp"
    for args in ex.grad_points:
        _, back, backend, reason = pullback_with(ex.func, args, "auto")
        if args == ex.grad_points[0]:
            print("   backend llvm: compiled forward and adjoint" if backend == "llvm" else
                  f"   backend interp: {reason or 'the reference interpreter'}")
        g = back(1.0)[0]
        fd = central_difference(ex.func, args, 0)
        err = relative_error(g, fd)
        good = err <= FD_TOLERANCE
        ok = ok and good
        print(f"   d/dx {_call(ex.func, args):<18} = {g!r:<22} central difference "
              f"{fd:<22.15g} rel. error {err:.1e} {'ok' if good else 'MISMATCH'}")
    return ok, backend


def show_speed(ex: Example, backend: str) -> None:
    """Per-call times of the CPython primal, the compiled primal and the gradient."""
    f, args = ex.func, ex.timed
    rows = [("CPython primal", lambda: f(*args))]
    jit = _jit()
    if jit is not None and hasattr(jit, "jit"):
        compiled = jit.jit(f)
        compiled(*args)
        rows.append(("zygopy primal (llvm)", lambda: compiled(*args)))
    backends = [backend] + (["interp"] if backend != "interp" else [])
    for name in backends:
        rows.append((f"zygopy value+gradient ({name})", _grad_call(f, args, name)))
    base = None
    section(f"speed of {_call(f, args)} (best of 3, per call)")
    for label, fn in rows:
        t = per_call_seconds(fn)
        base = base or t
        print(f"   {label:<32} {format_seconds(t):>10}   {t / base:8.2f}x CPython")


def _grad_call(f: Callable, args: tuple, backend: str) -> Callable:
    from adjoint import value_and_grad

    def grad():
        value_and_grad(f, *args, backend=backend)
    return grad


def run_example(ex: Example, timing: bool) -> bool:
    print(f"== {ex.func.__name__}: {ex.title}")
    print("".join("   " + line for line in inspect.getsourcelines(ex.func)[0]))
    ran = [guarded(title, step, ex)[1] for title, step in (
        ("lowered IR", show_lowered), ("forward and adjoint IR", show_adjoint),
        ("LLVM IR", show_llvm))]
    values_ok, _ = guarded("values", check_values, ex)
    section("gradient, checked against central differences")
    grads, _ = guarded("gradient", check_gradients, ex)
    if timing and grads is not None:
        guarded("speed", show_speed, ex, grads[1])
    print()
    return all(ran) and bool(values_ok) and grads is not None and grads[0]


def run_demo(timing: bool = True) -> int:
    """Run every example; 0 when all values and gradients check out, else 1."""
    print("zygopy demo: Python -> SSA IR -> J transform (forward + adjoint) -> LLVM\n")
    results = [run_example(ex, timing) for ex in EXAMPLES]  # run all, even after a failure
    ok = all(results)
    print("all values agree with CPython and all gradients with central differences"
          if ok else "MISMATCH: some values or gradients disagree (see above)")
    return 0 if ok else 1
