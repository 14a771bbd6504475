"""A compiled training loop written with `pullback` and `back`, against the same loop
written with `value_and_grad` (`adjoint.passes.nested_pullback`).

    y, back = pullback(loss, w, X, Y)      # rewritten: y = loss(...), back(dy) a gradient
    g = back(1.0)[0]

The rewrite runs `loss` once for `y` and once more inside `back(1.0)`, so the pullback
loop does one forward pass more per step than the value_and_grad loop.  This reports the
median time of a warm call of each loop (`bench.timing.measure`, CPU clock) and the ratio.

    taskset -c 1 python -m bench.nested_pullback [--steps 50]
"""
from __future__ import annotations

import argparse

import numpy as np

import jit
from adjoint import pullback, value_and_grad
from bench.timing import format_ns, measure

RNG = np.random.default_rng(0)
X = RNG.normal(size=(64, 16))
Y = np.tanh(X @ RNG.normal(size=16))


def loss(w, data, target):
    return np.mean((np.tanh(data @ w) - target) ** 2)


def train_with_pullback(w, data, target, steps):
    for _ in range(steps):
        y, back = pullback(loss, w, data, target)
        w = w - 0.1 * back(1.0)[0]
    return w


def train_with_value_and_grad(w, data, target, steps):
    for _ in range(steps):
        y, g = value_and_grad(loss, w, data, target)
        w = w - 0.1 * g[0]
    return w


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.nested_pullback")
    ap.add_argument("--steps", type=int, default=50)
    opts = ap.parse_args(argv)
    w0 = np.zeros(16)
    rows = []
    for name, fn in (("pullback + back", train_with_pullback),
                     ("value_and_grad", train_with_value_and_grad)):
        compiled = jit.jit(fn)
        out = compiled(w0, X, Y, opts.steps)
        np.testing.assert_allclose(out, fn(w0, X, Y, opts.steps), rtol=1e-12)
        rows.append((name, measure(lambda: compiled(w0, X, Y, opts.steps), clock="cpu")))
    base = rows[1][1]["median_ns"]
    print(f"compiled training loop, {opts.steps} steps, 64x16 least squares")
    print("| loop | median per call | ratio to value_and_grad |")
    print("|---|---:|---:|")
    for name, m in rows:
        print(f"| {name} | {format_ns(m['median_ns'])} | {m['median_ns'] / base:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
