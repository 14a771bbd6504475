"""Differential checks of compiled pullbacks: `backend="llvm"` against the
interpreter (`backend="interp"`) on the same function and arguments.

`check_llvm(f, *args)` returns "ok", or "refused: <why>" when the JIT raises
TypingError (the case runs in the interpreter under backend="auto"); it raises
`JitMismatch` when the two backends disagree: the value (the interpreter's, up to the value types the JIT documents in
tests/jit_corpus_report.close_enough), the gradients (1e-12 relative), the error type, or when the
native tape outlives `back`.

Run as a script for a per-case report over the corpus:
    python tests/jit_grad_check.py [CATEGORY_OR_ID ...]
"""
from __future__ import annotations

import copy
import gc
import sys
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

import adjoint
from jit.types import TypingError

RTOL = 1e-12


class JitMismatch(AssertionError):
    pass


def close(a: Any, b: Any, rtol: float = RTOL) -> bool:
    """Equal up to `rtol` relative (None and zeros agree: both mean no gradient)."""
    if a is None or b is None:
        other = b if a is None else a
        return other is None or not np.any(np.asarray(other, dtype=float))
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(close(x, y, rtol) for x, y in zip(a, b)))
    if isinstance(a, dict) or isinstance(b, dict):
        return (type(a) is type(b) and list(a) == list(b)
                and all(close(a[k], b[k], rtol) for k in a))
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        return False
    both_nan = np.isnan(x) & np.isnan(y)
    ok = np.isclose(x, y, rtol=rtol, atol=1e-300) | both_nan
    return bool(np.all(ok))


def _run(f: Callable, args: tuple, backend: str) -> tuple:
    try:
        y, back = adjoint.pullback(f, *copy.deepcopy(args), backend=backend)
    except TypingError:
        raise
    except Exception as e:  # noqa: BLE001
        return "error", type(e), None
    dy = _seed(y)
    try:
        return "ok", y, (back(dy), back(dy), back)
    except TypingError:
        raise
    except Exception as e:  # noqa: BLE001
        return "back-error", type(e), None


def _seed(y: Any) -> Any:
    if isinstance(y, (bool, int, np.integer)):
        return None
    if isinstance(y, float):
        return 0.75
    if isinstance(y, np.ndarray) and y.dtype.kind == "f":
        return np.linspace(0.5, 1.5, y.size).reshape(y.shape)
    if isinstance(y, tuple):
        return tuple(_seed(e) for e in y)
    return None


def check_llvm(f: Callable, *args: Any) -> str:
    """Compare backend="llvm" with backend="interp" on `f(*args)` (see module doc)."""
    from jit_corpus_report import close_enough
    ref = _run(f, args, "interp")
    try:
        got = _run(f, args, "llvm")
    except TypingError as e:
        return f"refused: {str(e).splitlines()[0]}"
    name = getattr(f, "__name__", "f")
    if ref[0] != got[0] or (ref[0] != "ok" and ref[1] is not got[1]):
        raise JitMismatch(f"{name}{args!r}: interp {ref[:2]} vs llvm {got[:2]}")
    if ref[0] != "ok":
        return "ok"
    if not close_enough(ref[1], got[1]):
        raise JitMismatch(f"{name}: value {got[1]!r} vs interpreter {ref[1]!r}")
    (g1, g2, back), (r1, _, _) = got[2], ref[2]
    if not close(g1, r1) or not close(g2, g1, 0.0):
        raise JitMismatch(f"{name}{args!r}: gradients {g1!r} vs interpreter {r1!r}")
    env = getattr(back, "env", None)
    if env is None or not hasattr(env, "blk"):
        return "ok"
    alive = weakref.ref(env)
    del env, back, got
    if alive() is not None:  # not freed by reference counting: a cycle, or a leak
        gc.collect()
    if alive() is not None:
        raise JitMismatch(f"{name}: the native tape outlives its pullback")
    return "ok"


def main(argv: list) -> int:
    import corpus
    cases, _ = corpus.load()
    counts = {"ok": 0, "refused": 0, "bad": 0}
    for c in cases:
        if argv and c.category not in argv and c.id not in argv:
            continue
        for args in c.args:
            try:
                r = check_llvm(c.func, *args)
            except Exception as e:  # noqa: BLE001 (a report)
                counts["bad"] += 1
                print(f"BAD {c.id}{args!r}: {type(e).__name__}: {str(e)[:300]}")
                continue
            kind = r.split(":")[0]
            counts[kind] += 1
            if kind == "refused":
                print(f"REFUSED {c.id}: {r[9:200]}")
    print(counts)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    sys.exit(main(sys.argv[1:]))
