"""Forward-mode checks: `jvp` against reverse mode by the dot-product identity
`<J v, w> = <v, J^T w>` (random seeded v and w), and its value against CPython's.

`check_jvp(f, *args, backend=...)` returns None when it passes and raises
`JvpMismatch` otherwise.  Run as a script for a per-case report over the corpus:
    python tests/forward_check.py [interp|llvm]
"""
from __future__ import annotations

import copy
import sys
from typing import Any

import numpy as np

import adjoint
from adjoint.forward import jvp
from adjoint.transform import is_differentiable
from adjoint_check import _flat

RTOL = 1e-7


class JvpMismatch(AssertionError):
    pass


def _like(x: Any, rng: np.random.Generator) -> Any:
    """A random tangent (or cotangent) with the structure of x (None for ints)."""
    if isinstance(x, (bool, np.bool_)) or x is None or isinstance(x, (int, np.integer, str)):
        return None
    if isinstance(x, (float, np.floating)):
        return float(rng.standard_normal())
    if isinstance(x, np.ndarray):
        return rng.standard_normal(x.shape) if x.dtype.kind == "f" else None
    if isinstance(x, tuple):
        return tuple(_like(e, rng) for e in x)
    if isinstance(x, list):
        return [_like(e, rng) for e in x]
    if isinstance(x, dict):
        return {k: _like(v, rng) for k, v in x.items()}
    return None


def _dot(a: Any, b: Any) -> float:
    """Sum of products over matching leaves (None on either side is zero)."""
    if a is None or b is None:
        return 0.0
    if isinstance(a, dict):
        return sum(_dot(a[k], b.get(k) if isinstance(b, dict) else None) for k in a)
    if isinstance(a, (tuple, list)):
        return sum(_dot(x, y) for x, y in zip(a, b))
    return float(np.sum(np.asarray(a, dtype=float) * np.asarray(b, dtype=float)))


def check_jvp(f, *args, backend: str = "interp", seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    expect = f(*copy.deepcopy(args))
    y, back = adjoint.pullback(f, *copy.deepcopy(args), backend="interp")
    v = tuple(_like(a, rng) if is_differentiable(a) else None for a in args)
    w = _like(y, rng)
    ys, ydot = jvp(f, copy.deepcopy(args), v, backend=backend)
    if _flat(ys) != _flat(expect) and not np.allclose(_flat(ys), _flat(expect),
                                                      rtol=1e-12, equal_nan=True):
        raise JvpMismatch(f"value {ys!r}, CPython {expect!r}")
    grads = back(w)
    lhs, rhs = _dot(ydot, w), _dot(v, grads)
    if not (abs(lhs - rhs) <= RTOL * (1.0 + abs(lhs) + abs(rhs)) or lhs == rhs
            or lhs != lhs and rhs != rhs):
        raise JvpMismatch(f"<J v, w> = {lhs!r} but <v, J^T w> = {rhs!r}")


if __name__ == "__main__":
    import corpus
    backend = sys.argv[1] if len(sys.argv) > 1 else "interp"
    cases, _ = corpus.load()
    bad = 0
    total = 0
    for c in cases:
        for args in c.args:
            try:
                y, back = adjoint.pullback(c.func, *copy.deepcopy(args), backend="interp")
                back(_like(y, np.random.default_rng(0)))
            except Exception:   # noqa: BLE001 - reverse mode does not pass: not compared
                continue
            total += 1
            try:
                check_jvp(c.func, *args, backend=backend)
            except Exception as e:  # noqa: BLE001 - the report
                bad += 1
                print(f"{c.id}{args!r}: {type(e).__name__}: {str(e)[:200]}")
    print(f"{total - bad}/{total} pass")
