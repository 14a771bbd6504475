"""The gradient of an MLP loss with float32 weights and data, compiled, against the same
loss in float64 compiled and against JAX (`jax.jit(jax.grad)`, float32, JAX's default)
where JAX is installed.  Median of warm calls (`bench.timing.measure`, CPU clock).

    python -m bench.dtypes [--quick]

BLAS runs on one thread (set before numpy loads): on a shared machine a threaded BLAS
turns a 0.1 ms product into tens of milliseconds of contention.
"""
from __future__ import annotations

import os
import sys
import warnings

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from adjoint import gradient  # noqa: E402
from bench.timing import format_ns, measure, timed_call  # noqa: E402


def mlp_loss(W1, b1, W2, b2, X, y):
    """A two-layer tanh network's mean squared error."""
    h = np.tanh(X @ W1 + b1)
    r = h @ W2 + b2 - y
    return np.sum(r * r) / y.shape[0]


def problem(dtype, n: int = 256, d: int = 32, width: int = 64) -> tuple:
    rng = np.random.default_rng(0)
    parts = (rng.standard_normal((d, width)) / np.sqrt(d), np.zeros(width),
             rng.standard_normal(width) / 8, np.zeros(1), rng.standard_normal((n, d)),
             rng.standard_normal(n))
    return tuple(p.astype(dtype) for p in parts)


def zygopy_row(dtype) -> tuple:
    args = problem(dtype)
    call = lambda: gradient(mlp_loss, *args, backend="llvm")   # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a fallback is a failure here
        first = timed_call(call)[1]
        got = measure(call, quick=QUICK, clock="cpu")["median_ns"]
    return f"zygopy {np.dtype(dtype).name}", first, got, call()[0].dtype


def jax_row() -> tuple:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None

    def loss(W1, b1, W2, b2, X, y):
        h = jnp.tanh(X @ W1 + b1)
        r = h @ W2 + b2 - y
        return jnp.sum(r * r) / y.shape[0]
    args = [jnp.asarray(a) for a in problem(np.float32)]
    g = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))
    call = lambda: jax.block_until_ready(g(*args))   # noqa: E731
    first = timed_call(call)[1]
    return "jax.jit(grad) float32", first, measure(call, quick=QUICK, clock="cpu")[
        "median_ns"], call()[0].dtype


QUICK = "--quick" in sys.argv


def main() -> None:
    rows = [zygopy_row(np.float32), zygopy_row(np.float64), jax_row()]
    print("MLP loss gradient (X 256x32, hidden 64), all weights and data in one dtype")
    print(f"| {'system':<24} | {'first call':>10} | {'warm median':>11} | gradient dtype |")
    print(f"|{'-' * 26}|{'-' * 12}|{'-' * 13}|{'-' * 16}|")
    for row in rows:
        if row is None:
            print("| jax                      | not installed |")
            continue
        name, first, warm, dt = row
        print(f"| {name:<24} | {format_ns(first):>10} | {format_ns(warm):>11} | {str(dt):<14} |")


if __name__ == "__main__":
    main()
