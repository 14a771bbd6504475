"""Fallback per call site (issue 30, item 1): what one uncompilable helper costs.

    def helper(x):            # a construct the JIT refuses (a try block; a captured
        ...                   # variable rebound after the closure is made)
    def loss(w, X):  return np.sum(np.tanh(X @ w)) + helper(w[0]) ** 2

`gradient(loss, w, X)` with X 200x20, median per call (bench.timing.measure, after
the first call, which compiles and learns the helper's result type):

  * "all interpreted": `backend="interp"` (what a whole-function fallback runs);
  * "per call site": the default backend: loss compiled, helper in the interpreter;
  * "fully compiled": the same loss with the helper's arithmetic written inline.

    python -m bench.fallback_per_call_site [--quick]
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np

from adjoint import gradient
from bench.timing import measure


def helper_try(x):
    try:
        return x * 2.0
    except ValueError:
        return 0.0


def helper_rebound(x):
    k = 0.0
    get = lambda: x * k      # noqa: E731  (k rebound below: not compiled)
    k = 2.0
    return get()


def loss_try(w, X):
    return np.sum(np.tanh(X @ w)) + helper_try(w[0]) ** 2


def loss_rebound(w, X):
    return np.sum(np.tanh(X @ w)) + helper_rebound(w[0]) ** 2


def loss_inline(w, X):
    return np.sum(np.tanh(X @ w)) + (w[0] * 2.0) ** 2


def rnn_try(w, X):
    h = 0.0
    for i in range(X.shape[0]):
        h = np.tanh(X[i] @ w + 0.5 * h)
    return h + helper_try(w[0]) ** 2


def rnn_inline(w, X):
    h = 0.0
    for i in range(X.shape[0]):
        h = np.tanh(X[i] @ w + 0.5 * h)
    return h + (w[0] * 2.0) ** 2


def _row(name: str, fn, quick: bool) -> tuple:
    fn()
    return name, measure(fn, quick=quick, clock="cpu")["median_ns"] / 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    quick = ap.parse_args().quick
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    X, w = rng.standard_normal((200, 20)), rng.standard_normal(20)
    for title, pair in (("loss(w, X) = sum(tanh(X @ w)) + helper(w[0])**2", (loss_try, loss_inline)),
                        ("a loop over the 200 rows of X + helper(w[0])**2", (rnn_try, rnn_inline))):
        f, inline = pair
        for backend in ("interp", "auto"):
            g, r = gradient(f, w, X, backend=backend), gradient(inline, w, X, backend="interp")
            assert all(np.allclose(a, b, rtol=1e-12) for a, b in zip(g, r))
        rows = [_row("all interpreted", lambda: gradient(f, w, X, backend="interp"), quick),
                _row("per call site (helper interpreted)", lambda: gradient(f, w, X), quick),
                _row("fully compiled (helper inline)", lambda: gradient(inline, w, X), quick)]
        _table(title, rows)
    rows = [_row("per call site, try helper", lambda: gradient(loss_try, w, X), quick),
            _row("per call site, rebound-closure helper", lambda: gradient(loss_rebound, w, X),
                 quick)]
    _table("the helper's construct (loss as above)", rows)


def _table(title: str, rows: list) -> None:
    base = rows[0][1]
    print(f"\n| {title}, X 200x20 | median (us) | vs first row |")
    print("|---|---:|---:|")
    for name, us in rows:
        print(f"| {name} | {us:.1f} | {base / us:.2f}x |")


if __name__ == "__main__":
    main()
