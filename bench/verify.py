"""Cross-checks run on the values and gradients every system returned on its first call,
before its timing loop: a timing only means something when the computation is right.

- values: every system's value against CPython's, computed here (relative 1e-12);
- gradients: every system's gradient against the element-wise median of all systems'
  gradients on that workload (normwise relative 1e-8), and its directional derivative
  along a seeded random direction against a central difference of the CPython function
  (relative 1e-5), so that a wrong consensus cannot hide.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench.workloads import SEED, Workload, leaves, rebuild

VALUE_RTOL = 1e-12
GRAD_RTOL = 1e-8
FD_RTOL = 1e-5
FD_STEP = 1e-6


@dataclass
class Finding:
    """One disagreement: which system, on which workload, what and by how much."""

    workload: str
    system: str
    what: str

    def __str__(self) -> str:
        return f"{self.workload} / {self.system}: {self.what}"


def check_workload(w: Workload, values: dict, grads: dict) -> tuple:
    """`values` and `grads` map system name -> value / list of gradient arrays.
    Returns (findings, summary line)."""
    findings = list(_check_values(w, values))
    if not grads:
        return findings, f"{w.name}: {len(values)} values checked, no gradients"
    flat = {s: _flatten(g) for s, g in grads.items()}
    findings += _check_consensus(w, flat)
    fd, direction = directional_fd(w)
    findings += _check_fd(w, flat, fd, direction)
    summary = (f"{w.name}: {len(values)} values vs CPython, {len(grads)} gradients vs their "
               f"median and vs a central difference ({fd:.6g} along a seeded direction)")
    return findings, summary


def _check_values(w: Workload, values: dict):
    expected = float(w.func(*w.args()))
    for system, v in values.items():
        if v is None:
            continue
        err = abs(v - expected) / max(abs(expected), 1e-300)
        if not err <= VALUE_RTOL:
            yield Finding(w.name, system, f"value {v!r} differs from CPython's {expected!r} "
                                          f"(relative {err:.2e})")


def _check_consensus(w: Workload, flat: dict):
    sizes = {s: g.size for s, g in flat.items()}
    size = int(np.median(list(sizes.values())))
    same = {s: g for s, g in flat.items() if g.size == size}
    for s in set(flat) - set(same):
        yield Finding(w.name, s, f"gradient has {sizes[s]} entries, the others {size}")
    median = np.median(np.stack(list(same.values())), axis=0)
    scale = max(float(np.max(np.abs(median))), 1e-300)
    for s, g in same.items():
        err = float(np.max(np.abs(g - median))) / scale
        if not err <= GRAD_RTOL:
            yield Finding(w.name, s, f"gradient differs from the median of {len(same)} "
                                     f"systems (normwise relative {err:.2e})")


def _check_fd(w: Workload, flat: dict, fd: float, direction: np.ndarray):
    for s, g in flat.items():
        if g.size != direction.size:
            continue
        terms = g * direction
        dd = float(np.sum(terms))
        err = abs(dd - fd) / max(abs(fd), 1e-6 * float(np.sum(np.abs(terms))), 1e-300)
        if not err <= FD_RTOL:
            yield Finding(w.name, s, f"directional derivative {dd:.10g} vs central "
                                     f"difference {fd:.10g} (relative {err:.2e})")


def directional_fd(w: Workload) -> tuple:
    """Central difference of the CPython function along a seeded direction scaled by
    the inputs (so every input moves by about FD_STEP relative); returns
    (the difference quotient, the direction flattened like the gradients).  A
    structured argument (a list of (W, b) tuples) gets one direction per leaf, in
    `bench.workloads.leaves` order, as its gradient is flattened."""
    args = w.args()
    rng = np.random.default_rng(SEED + 1)
    dirs = {i: [rng.standard_normal(np.shape(x)) * np.maximum(np.abs(x), 1e-3)
                for x in leaves(args[i])] for i in w.wrt}
    plus, minus = list(args), list(args)
    for i, d in dirs.items():
        xs = leaves(args[i])
        plus[i] = _shift_tree(args[i], xs, d, FD_STEP)
        minus[i] = _shift_tree(args[i], xs, d, -FD_STEP)
    fd = (w.func(*plus) - w.func(*minus)) / (2 * FD_STEP)
    return fd, _flatten([d for i in w.wrt for d in dirs[i]])


def _shift_tree(arg, xs: list, d: list, t: float):
    shifted = [_shift(x, dx, t) for x, dx in zip(xs, d)]
    return shifted[0] if len(xs) == 1 and xs[0] is arg else rebuild(arg, shifted)


def _shift(x, d, t: float):
    return float(x + t * d) if np.ndim(x) == 0 else x + t * d


def _flatten(grads: list) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(g, dtype=np.float64)) for g in grads])
