"""Gradient checks for the adjoint tests: reverse mode against central differences.

`check_gradient(f, *args)` runs `adjoint.pullback(f, *args)`, checks the value
against CPython's, draws a seeded random cotangent for the output, and compares
`<back(dy), t>` with the central difference of `<dy, f(x + h t)>` along a seeded
random direction `t` over the differentiable arguments (floats, float arrays,
tuples of those); integer arguments must get `None`.  Points where the function is
not smooth (two step sizes disagree) are skipped for the derivative comparison.

Run as a script for a per-case report over the corpus:
    python tests/adjoint_check.py [CATEGORY_OR_ID ...]
"""
from __future__ import annotations

import copy
import signal
import math
import sys
from typing import Any, Callable

import numpy as np

import adjoint
from adjoint.api import _numeric_output as _numeric
from adjoint.transform import is_differentiable

RTOL = 2e-5


class GradientMismatch(AssertionError):
    pass


def _flat(x: Any) -> list:
    """Differentiable leaves of a value as a list of floats."""
    if isinstance(x, (bool, int, np.integer)) or x is None or isinstance(x, str):
        return []
    if isinstance(x, (float, np.floating)):
        return [float(x)]
    if isinstance(x, np.ndarray):
        return [float(v) for v in x.ravel()] if x.dtype.kind == "f" else []
    if isinstance(x, (tuple, list)):
        return [v for e in x for v in _flat(e)]
    return []


def _perturb(x: Any, t: list, h: float) -> Any:
    """x + h * t over the leaves `_flat` lists (t is consumed from the front)."""
    if isinstance(x, (bool, int, np.integer)) or x is None or isinstance(x, str):
        return x
    if isinstance(x, (float, np.floating)):
        return float(x) + h * t.pop(0)
    if isinstance(x, np.ndarray):
        if x.dtype.kind != "f":
            return x.copy()
        d = np.array([t.pop(0) for _ in range(x.size)]).reshape(x.shape)
        return x + h * d
    if isinstance(x, tuple):
        return tuple(_perturb(e, t, h) for e in x)
    if isinstance(x, list):
        return [_perturb(e, t, h) for e in x]
    return x


def _dot(dy: Any, y: Any) -> float:
    a, b = _flat(dy), _flat(y)
    if len(a) != len(b):
        raise GradientMismatch(f"cotangent/value size mismatch {len(a)} vs {len(b)}")
    return float(sum(p * q for p, q in zip(a, b)))


def _random_like(y: Any, rng) -> Any:
    if isinstance(y, (float, np.floating)):
        return float(rng.uniform(0.5, 1.5))
    if isinstance(y, np.ndarray) and y.dtype.kind == "f":
        return rng.uniform(0.5, 1.5, size=y.shape)
    if isinstance(y, tuple):
        return tuple(_random_like(e, rng) for e in y)
    if isinstance(y, (int, np.integer, bool)):
        return None
    return None


def _directional(f: Callable, args: tuple, t: list, dy: Any, h: float) -> float:
    plus = f(*[_perturb(copy.deepcopy(a), list(t_), h) for a, t_ in _split(args, t)])
    minus = f(*[_perturb(copy.deepcopy(a), list(t_), -h) for a, t_ in _split(args, t)])
    return (_dot(dy, plus) - _dot(dy, minus)) / (2 * h)


def _one_sided(f, args, t, dy, h) -> float:
    """(f(x + h t) - f(x)) / h: differs from the central difference at a kink."""
    plus = f(*[_perturb(copy.deepcopy(a), list(t_), h) for a, t_ in _split(args, t)])
    base = f(*copy.deepcopy(args))
    return (_dot(dy, plus) - _dot(dy, base)) / h


def _split(args: tuple, t: list) -> list:
    out, k = [], 0
    for a in args:
        n = len(_flat(a))
        out.append((a, t[k:k + n]))
        k += n
    return out


def check_gradient(f: Callable, *args: Any, seed: int = 0, rtol: float = RTOL) -> tuple:
    """Check value and gradient of `f` at `args`; return the gradients."""
    rng = np.random.default_rng(seed)
    expect = f(*copy.deepcopy(args))
    before = copy.deepcopy(args)
    if not _numeric(expect):     # no derivative: refused with a TypeError on every backend
        try:
            adjoint.pullback(f, *args, backend="interp")
        except TypeError as e:
            if "has no derivative" in str(e):
                return ()
            raise
        raise GradientMismatch(f"{f.__name__}: a {type(expect).__name__} output was "
                               "differentiated without an error")
    y, back = adjoint.pullback(f, *args, backend="interp")
    _check_value(y, expect, f)
    _check_inputs_untouched(args, before, f)
    dy = _random_like(y, rng)
    grads = back(dy)
    _check_shapes(grads, args, f)
    if dy is None or not _flat(y):
        return grads
    n = sum(len(_flat(a)) for a in args)
    if n == 0:
        return grads
    scale = [abs(v) if v != 0 and math.isfinite(v) else 1.0
             for a in args for v in _flat(a)]
    t = [float(u) * c for u, c in zip(rng.uniform(-1, 1, size=n), scale)]
    got = sum(sum(p * q for p, q in zip(_flat_like(g, a), t_))
              for g, (a, t_) in zip(grads, _split(args, t)))
    _compare_fd(f, args, t, dy, got)
    again = back(dy)
    if _flat(again) != _flat(grads):
        raise GradientMismatch(f"{f.__name__}: second back() call differs")
    return grads


def _flat_like(g: Any, a: Any) -> list:
    """Leaves of cotangent `g` aligned with `_flat(a)` (None counts as zeros)."""
    n = len(_flat(a))
    if g is None:
        return [0.0] * n
    if isinstance(a, (tuple, list)):
        parts = g if isinstance(g, (tuple, list)) else [None] * len(a)
        return [v for ge, ae in zip(parts, a) for v in _flat_like(ge, ae)]
    if isinstance(a, np.ndarray):
        return [float(v) for v in np.asarray(g, dtype=float).ravel()] if n else []
    return [float(g)] if n else []


def _compare_fd(f, args, t, dy, got, rtol=RTOL) -> None:
    h1, h2 = 1e-6, 2e-6
    try:
        fd1 = _directional(f, args, t, dy, h1)
        fd2 = _directional(f, args, t, dy, h2)
        kink = _one_sided(f, args, t, dy, 1e-5) - _one_sided(f, args, t, dy, -1e-5)
    except (ValueError, ZeroDivisionError, OverflowError):
        return
    tol = 1e-4 * max(1.0, abs(fd1))
    if not math.isfinite(fd1) or abs(fd1 - fd2) > tol or abs(kink) > 1e-3 * max(1.0, abs(fd1)):
        return   # not smooth here: finite differences are meaningless
    if abs(got - fd1) > rtol * max(1.0, abs(fd1)) * 10 + 1e-7:
        raise GradientMismatch(f"{f.__name__}{args!r}: reverse {got!r} vs central "
                               f"difference {fd1!r}")


def _check_value(y, expect, f) -> None:
    from harness import same
    if not same(y, expect):
        raise GradientMismatch(f"{f.__name__}: value {y!r} differs from CPython {expect!r}")


def _check_inputs_untouched(args, before, f) -> None:
    from harness import same
    if not same(list(args), list(before)):
        raise GradientMismatch(f"{f.__name__}: pullback modified its input arguments")


def _check_shapes(grads, args, f) -> None:
    if len(grads) != len(args):
        raise GradientMismatch(f"{f.__name__}: {len(grads)} cotangents for {len(args)} args")
    for g, a in zip(grads, args):
        if not is_differentiable(a):
            if g is not None:
                raise GradientMismatch(f"{f.__name__}: non-None cotangent {g!r} for {a!r}")
        elif isinstance(a, np.ndarray):
            if not isinstance(g, np.ndarray) or g.shape != a.shape:
                raise GradientMismatch(f"{f.__name__}: cotangent {g!r} for array arg")
        elif isinstance(a, float) and not isinstance(g, float):
            raise GradientMismatch(f"{f.__name__}: cotangent {g!r} for float arg")


def main(argv: list) -> int:
    import corpus
    cases = [c for c in corpus.core_cases() + corpus.extra_cases()
             if not argv or c.category in argv or c.id in argv]
    ok = bad = 0
    for c in cases:
        for args in c.args:
            signal.alarm(20)
            try:
                check_gradient(c.func, *copy.deepcopy(args))
                ok += 1
            except Exception as e:  # noqa: BLE001  (a report, not a test)
                try:
                    c.func(*copy.deepcopy(args))
                except Exception as e2:  # CPython raises too: the same type?
                    if type(e2) is type(e):
                        ok += 1
                        continue
                bad += 1
                print(f"FAIL {c.id}{args!r}: {type(e).__name__}: {str(e)[:300]}")
    print(f"{ok} ok, {bad} failed")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    sys.exit(main(sys.argv[1:]))


def central_differences(f: Callable, args: tuple, k: int, h: float = 1e-6) -> Any:
    """d f / d args[k] by central differences, entry by entry (a float for a number)."""
    args = [np.array(a, dtype=float) if np.ndim(a) else float(a) for a in args]
    x = args[k]
    if np.ndim(x) == 0:
        up, dn = list(args), list(args)
        up[k], dn[k] = x + h, x - h
        return (f(*up) - f(*dn)) / (2 * h)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        up, dn = list(args), list(args)
        up[k], dn[k] = x + e, x - e
        g[i] = (f(*up) - f(*dn)) / (2 * h)
    return g
