"""Pairwise kernels written with `None` indexing (issue 30, item 3): the gradient of an
RBF kernel form and of a GP negative log marginal likelihood, both starting with
`X[:, None, :] - X[None, :, :]`, on 64 points in 3 dimensions.

Systems, in this one process: "zygopy" (`backend="llvm"`, compiled), "zygopy-interp"
(`backend="interp"`), "autograd" (its `grad`, when installed), and "numpy" (the loss
alone, no gradient: the floor).  Each cell is the median of warm calls
(`bench.timing.measure`); the first call (compilation included) is shown beside it.
The gradients of every system are checked against zygopy's before timing.

    python -m bench.pairwise_kernels [--n 64] [--d 3] [--clock cpu] [--quick]
"""
from __future__ import annotations

import argparse

import numpy as np

from bench.timing import format_ns, measure, timed_call


def rbf_form(X, alpha, lengthscale):
    d = X[:, None, :] - X[None, :, :]
    K = np.exp(-0.5 * np.sum(d ** 2, axis=-1) / lengthscale ** 2)
    return alpha @ K @ alpha


def gp_nll(X, y, log_ls, log_sf, log_sn):
    ls, sf2, sn2 = np.exp(log_ls), np.exp(2.0 * log_sf), np.exp(2.0 * log_sn)
    diff = (X[:, np.newaxis, :] - X[np.newaxis, :, :]) / ls
    K = sf2 * np.exp(-0.5 * np.sum(diff * diff, axis=2)) + sn2 * np.eye(X.shape[0])
    alpha = np.linalg.solve(K, y)
    _sign, logdet = np.linalg.slogdet(K)
    return 0.5 * y @ alpha + 0.5 * logdet + 0.5 * X.shape[0] * np.log(2.0 * np.pi)


def _programs(n: int, d: int) -> dict:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    return {"rbf kernel form": (rbf_form, (X, rng.normal(size=n), 0.8)),
            "GP marginal likelihood": (gp_nll, (X, np.sin(X[:, 0]), 0.2, 0.1, -1.0))}


def _systems(fn, args: tuple) -> dict:
    from adjoint import gradient
    out = {"zygopy": lambda: gradient(fn, *args, backend="llvm"),
           "zygopy-interp": lambda: gradient(fn, *args, backend="interp")}
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        return out | {"numpy": lambda: fn(*args)}
    g = autograd.grad(_with_numpy(fn, anp), 0)
    out["autograd"] = lambda: g(*args)
    return out | {"numpy": lambda: fn(*args)}


def _with_numpy(fn, module):
    """fn with its global `np` bound to `module` (autograd's numpy)."""
    import types
    return types.FunctionType(fn.__code__, dict(fn.__globals__, np=module), fn.__name__)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--quick", action="store_true")
    opts = ap.parse_args(argv)
    print(f"| program ({opts.n}x{opts.d}) | system | first call | median warm call | "
          "vs zygopy |")
    print("|---|---|---|---|---|")
    for name, (fn, args) in _programs(opts.n, opts.d).items():
        runs = _systems(fn, args)
        want, first_compiled = timed_call(runs["zygopy"])
        rows = {}
        for system, run in runs.items():
            got, first = timed_call(run)
            first = first_compiled if system == "zygopy" else first
            if system not in ("numpy", "zygopy"):
                g = got[0] if isinstance(got, tuple) else got
                np.testing.assert_allclose(g, want[0], rtol=1e-8, atol=1e-10)
            rows[system] = (first, measure(run, opts.quick, clock=opts.clock)["median_ns"])
        base = rows["zygopy"][1]
        for system, (first, med) in rows.items():
            print(f"| {name} | {system} | {format_ns(first)} | {format_ns(med)} | "
                  f"{med / base:.2f}x |")


if __name__ == "__main__":
    main()
