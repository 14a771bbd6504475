"""The examples of MindSpore's IR article (MindIR), through zygopy.

The article shows its graph IR for a small straight-line function with a call, a
recursive fibonacci, a higher-order function `g(f, x) = f(x) * f(x)` and a closure.
For each we print our lowered IR (with the IR of every user function it calls or
builds), check the value against CPython (and the JIT when present), and check the
gradient against its closed form and central differences.  Exits 1 on a
disagreement beyond the tolerances below.

    python papers/mindir_examples/run.py
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

import lowering
from adjoint import pullback
from ssair import Const
from ssair.interpreter import is_user_function

FD_STEP = 1e-6
FD_TOL = 1e-6       # relative, central differences
EXACT_TOL = 1e-12   # relative, closed forms


def func(x, y):
    return x / y


def test_f(x, y):
    a = x - 1
    b = a + y
    c = b * func(a, b)
    return c


def fibonacci(n):
    if n < 1:
        return 0
    if n == 1:
        return 1
    return fibonacci(n - 1) + fibonacci(n - 2)


def hof(x):
    def f(x):
        return x + 3

    def g(function, x):
        return function(x) * function(x)
    res = g(f, x)
    return res


def func_outer(a, b):
    def func_inner(c):
        return a * b + c
    return func_inner


def closure_example(a, b, c):
    closure = func_outer(a, b)
    out = closure(c)
    return out


@dataclass(frozen=True)
class Example:
    """A function of the article, its arguments, and the value and gradient they
    must give (None for an integer argument)."""

    title: str
    func: Callable
    args: tuple
    value: object
    grads: tuple


EXAMPLES = [
    Example("straight-line code with a call (c = b * func(a, b) = x - 1)", test_f,
            (3.0, 2.0), 2.0, (1.0, 0.0)),
    Example("recursion: fibonacci (integer: no gradient)", fibonacci, (10,), 55, (None,)),
    Example("higher-order: g(f, x) = f(x) * f(x), f(x) = x + 3", hof, (1.0,), 16.0, (8.0,)),
    Example("closure: func_outer(a, b) returns func_inner(c) = a * b + c", closure_example,
            (1.0, 2.0, 3.0), 5.0, (2.0, 1.0, 1.0)),
]


def callees(ir) -> list:
    """User functions among an IR's constant operands (called, passed as arguments,
    or closed over), in order of appearance."""
    out = []
    for _, operand in ir.uses():
        fn = operand.value if isinstance(operand, Const) else None
        if fn is not None and is_user_function(fn) and fn not in out:
            out.append(fn)
    return out


def print_irs(fn: Callable) -> None:
    """The IR of `fn` and of every user function reachable from it, once each."""
    todo, seen = [fn], []
    while todo:
        cur = todo.pop(0)
        if cur in seen:
            continue
        seen.append(cur)
        ir = lowering.lower(cur)
        print(ir)
        todo += [c for c in callees(ir) if c not in seen]


def close(got, want, tol: float) -> bool:
    return abs(got - want) <= tol * max(1.0, abs(want))


def central(f: Callable, args: tuple, i: int) -> float:
    step = FD_STEP * max(1.0, abs(args[i]))
    hi = args[:i] + (args[i] + step,) + args[i + 1:]
    lo = args[:i] + (args[i] - step,) + args[i + 1:]
    return (f(*hi) - f(*lo)) / (2 * step)


def check_gradients(ex: Example, grads: tuple) -> list:
    bad = []
    for i, (got, want) in enumerate(zip(grads, ex.grads)):
        if want is None:
            if got is not None:
                bad.append(f"argument {i} is an int but got gradient {got!r}")
            continue
        fd = central(ex.func, ex.args, i)
        print(f"   d/d{ex.func.__code__.co_varnames[i]} = {got!r:<22} closed form "
              f"{want!r:<6} central difference {fd:.12g}")
        if got is None or not close(got, want, EXACT_TOL) or not close(got, fd, FD_TOL):
            bad.append(f"gradient {i} is {got!r}, want {want!r} (central difference {fd!r})")
    return bad


def check_value(ex: Example, y) -> list:
    bad = []
    want = ex.func(*ex.args)
    if y != want or want != ex.value:
        bad.append(f"value {y!r}, CPython {want!r}, article {ex.value!r}")
    try:
        import jit
        compiled = jit.jit(ex.func)(*ex.args)
    except ImportError:
        return bad
    print(f"   value {y!r} (CPython {want!r}, JIT {compiled!r})")
    if compiled != want:
        bad.append(f"JIT value {compiled!r}, CPython {want!r}")
    return bad


def run_example(ex: Example) -> list:
    print(f"== {ex.title}")
    print_irs(ex.func)
    y, back = pullback(ex.func, *ex.args)
    bad = check_value(ex, y) + check_gradients(ex, back(1.0))
    for line in bad:
        print(f"MISMATCH ({ex.func.__name__}): {line}")
    print()
    return bad


def attempt(ex: Example) -> list:
    """The disagreements of one example; an exception is one (the others still run)."""
    try:
        return run_example(ex)
    except Exception as e:  # noqa: BLE001  (reported as a failed example)
        first = str(e).splitlines()[0] if str(e) else ""
        print(f"MISMATCH ({ex.func.__name__}): {type(e).__name__}: {first}\n")
        return [f"{ex.func.__name__}: {type(e).__name__}: {first}"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="accepted for uniformity with the other papers/ scripts (no timing here)")
    p.parse_args(argv)
    bad = [line for ex in EXAMPLES for line in attempt(ex)]
    print("mindir_examples: " + ("all values and gradients agree" if not bad else "FAILED"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
