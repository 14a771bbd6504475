"""Checking a gradient of a pytree of arguments against central differences.

The arguments of myia's programs are floats, float arrays (float64 or float32), and
tuples, lists, dicts and dataclasses of those.  Every float leaf is checked: one with
at most `SMALL` elements element by element, a larger one along a few seeded random
directions.  Differences are taken on float64 copies of the arguments (a float32
model would drown them in rounding); the gradient under test is the one computed on
the arguments as given.  A gradient that is `None`, or lacks an entry, where a float
leaf exists is wrong.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

SMALL = 12
DIRECTIONS = 3


def is_float_leaf(x) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, (float, np.floating)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind == "f"


def children(x):
    """[(key, child)] of a container (tuple, list, dict, dataclass), else None."""
    if isinstance(x, (tuple, list)):
        return list(enumerate(x))
    if isinstance(x, dict):
        return list(x.items())
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [(f.name, getattr(x, f.name)) for f in dataclasses.fields(x)]
    return None


def leaves(x, path=()):
    """[(path, leaf)] of the float leaves of `x`."""
    if is_float_leaf(x):
        return [(path, x)]
    kids = children(x)
    if kids is None:
        return []
    return [item for k, v in kids for item in leaves(v, path + (k,))]


def lookup(g, path):
    """The entry of gradient `g` at `path` (None where it has none)."""
    for k in path:
        if g is None:
            return None
        if isinstance(g, (tuple, list)):
            g = g[k] if isinstance(k, int) and k < len(g) else None
        elif isinstance(g, dict):
            g = g.get(k)
        else:
            g = getattr(g, k, None)
    return g


def replace_at(x, path, value):
    """A copy of `x` with the leaf at `path` replaced (containers rebuilt)."""
    if not path:
        return value
    k, rest = path[0], path[1:]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[replace_at(v, rest, value) if i == k else v for i, v in enumerate(x)])
    if isinstance(x, (tuple, list)):
        return type(x)(replace_at(v, rest, value) if i == k else v for i, v in enumerate(x))
    if isinstance(x, dict):
        return {kk: replace_at(v, rest, value) if kk == k else v for kk, v in x.items()}
    new = object.__new__(type(x))     # a dataclass, frozen or not
    for f in dataclasses.fields(x):
        v = getattr(x, f.name)
        object.__setattr__(new, f.name, replace_at(v, rest, value) if f.name == k else v)
    return new


def to_float64(x):
    """`x` with every float leaf in float64."""
    for path, leaf in leaves(x):
        x = replace_at(x, path, np.asarray(leaf, dtype=np.float64)
                       if isinstance(leaf, np.ndarray) else float(leaf))
    return x


def total(y) -> float:
    """The scalar a gradient is taken of: the output, or the sum of an array output."""
    return float(np.sum(y))


def fd_check(f, args: tuple, checked: tuple, grads: tuple) -> str | None:
    """None when `grads` (one entry per argument) matches central differences of
    total(f(*args)) on every float leaf of the checked arguments; else why not."""
    wide = tuple(to_float64(a) for a in args)
    low = any(isinstance(leaf, (np.ndarray, np.floating)) and leaf.dtype == np.float32
              for a in args for _, leaf in leaves(a))
    rtol = 2e-3 if low else 1e-4
    if grads is None or len(grads) != len(args):
        got = None if grads is None else len(grads)
        return f"gradient has {got} entries for {len(args)} arguments"
    rng = np.random.default_rng(7)
    for i, (a, ok) in enumerate(zip(wide, checked)):
        if not ok:
            continue
        for path, leaf in leaves(a):
            where = f"arg {i}" + "".join(f"[{k!r}]" for k in path)
            g = lookup(grads[i], path)
            if g is None:
                return f"None gradient for {where}"
            g = np.asarray(g, dtype=np.float64)
            if g.shape != np.shape(leaf):
                return f"gradient of {where} has shape {g.shape}, not {np.shape(leaf)}"
            for d in _directions(leaf, rng):
                fd = _central(f, wide, i, path, leaf, d)
                got = float(np.sum(g * d))
                scale = 1e-2 + np.sqrt(np.sum(g * g))
                if not math.isclose(got, fd, rel_tol=rtol, abs_tol=rtol * scale):
                    return f"{where}: gradient·d = {got:.6g}, central difference {fd:.6g}"
    return None


def _directions(leaf, rng):
    shape = np.shape(leaf)
    n = int(np.prod(shape))
    if n <= SMALL:
        for k in range(n):
            e = np.zeros(n)
            e[k] = 1.0
            yield e.reshape(shape)
    else:
        for _ in range(DIRECTIONS):
            d = rng.standard_normal(shape)
            yield d / np.sqrt(np.sum(d * d))


def _central(f, wide, i, path, leaf, d) -> float:
    scale = max(1.0, float(np.max(np.abs(leaf)))) if np.size(leaf) else 1.0
    h = 1e-6 * scale
    def at(step):
        moved = leaf + step * d
        moved = float(moved) if not isinstance(leaf, np.ndarray) else moved
        args = wide[:i] + (replace_at(wide[i], path, moved),) + wide[i + 1:]
        return total(f(*args))
    return (at(h) - at(-h)) / (2 * h)
