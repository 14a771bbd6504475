"""Gradients for the command line: backend choice, central differences, timing.

`run_pullback(f, args, backend)` picks the compiled adjoint (`backend="llvm"`) when this
build has it and the function types, else the reference interpreter, and says which
and why.  `central_difference` and `per_call_seconds` serve the demo and the papers/
scripts.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from jit.cli.stages import CliError


@dataclass
class GradResult:
    """The value, one gradient entry per argument, the backend that ran, and why the
    compiled one did not (None when it did or was not asked for)."""

    value: Any
    grads: tuple
    backend: str
    reason: str | None


def _llvm_errors() -> tuple:
    """The exceptions meaning "the llvm backend cannot compile this function"."""
    found = []
    try:
        from jit import TypingError
        found.append(TypingError)
    except ImportError:
        pass
    try:
        from adjoint.api import RUNNERS
        found += list(getattr(RUNNERS.get("llvm"), "errors", ()))
    except ImportError:
        pass
    return tuple(found)


def pullback_with(f: Callable, args: tuple, backend: str = "auto") -> tuple:
    """`(y, back, backend used, reason)`: for "auto", llvm when possible, else interp
    with the reason llvm was not used."""
    from adjoint import pullback
    if backend != "auto":
        y, back = pullback(f, *args, backend=backend)
        return y, back, backend, None
    try:
        y, back = pullback(f, *args, backend="llvm")
        return y, back, "llvm", None
    except NotImplementedError:
        reason = "the compiled adjoint (backend llvm) is not in this build yet"
    except _llvm_errors() as e:
        reason = f"backend llvm cannot compile it: {str(e).splitlines()[0]}"
    y, back = pullback(f, *args, backend="interp")
    return y, back, "interp", reason


def is_real_scalar(y: Any) -> bool:
    if isinstance(y, bool):
        return False
    return isinstance(y, (int, float, np.integer, np.floating)) or (
        isinstance(y, np.ndarray) and y.ndim == 0 and y.dtype.kind in "if")


def run_gradient(f: Callable, args: tuple, backend: str = "auto") -> GradResult:
    """Value and gradient of a real-scalar function; CliError otherwise."""
    y, back, used, reason = pullback_with(f, args, backend)
    if not is_real_scalar(y):
        raise CliError(f"{f.__name__} returned a {type(y).__name__}; a gradient needs a real "
                       "scalar result")
    return GradResult(y, back(1.0), used, reason)


def central_difference(f: Callable, args: tuple, i: int, h: float = 1e-6) -> float:
    """d f / d args[i] for a float argument, by a central difference with step
    `h * max(1, |x|)`."""
    x = args[i]
    step = h * max(1.0, abs(x))
    hi = args[:i] + (x + step,) + args[i + 1:]
    lo = args[:i] + (x - step,) + args[i + 1:]
    return (f(*hi) - f(*lo)) / (2 * step)


def relative_error(got: float, want: float) -> float:
    return abs(got - want) / max(1.0, abs(want))


def per_call_seconds(fn: Callable[[], Any], budget: float = 0.05, samples: int = 3) -> float:
    """Best-of-`samples` seconds per call of `fn`, each sample lasting about `budget`."""
    reps = 1
    while True:
        t = _time(fn, reps)
        if t >= budget / 4 or reps >= 1 << 24:
            break
        reps *= 4
    reps = max(1, int(reps * budget / max(t, 1e-9)))
    return min(_time(fn, reps) for _ in range(samples)) / reps


def _time(fn: Callable[[], Any], reps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return time.perf_counter() - t0


def format_seconds(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"
