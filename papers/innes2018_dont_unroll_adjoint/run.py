"""Innes (2018), "Don't Unroll Adjoint: Differentiating SSA-Form Programs", through zygopy.

Part 1 prints the paper's two running examples, `pow` (a while loop) and a branch,
as our lowered, forward and adjoint IR, and checks what the paper claims of them: the
gradient is right, and the adjoint is not unrolled (its IR is the same whatever the
trip count).  Part 2 rebuilds the paper's benchmark table (table 1: SinCos, Loop,
LogSumExp, LogisticRegression, a 2-layer MLP) in Python: every gradient is checked
against central differences (asserted), then our primal and gradient are timed (and
PyTorch's gradient where it is installed) and our gradient/primal ratio is printed
beside the paper's (reported, not asserted).  Exits 1 when a check fails.

    python papers/innes2018_dont_unroll_adjoint/run.py [--quick]    (--quick: no timing)
"""
from __future__ import annotations

import argparse
import sys

import benchmarks as B
import numpy as np

import lowering
from adjoint import code_adjoint
from jit.cli.gradients import format_seconds, per_call_seconds, pullback_with

FD_TOL = 1e-6     # relative error of the directional derivative
FD_STEP = 1e-6

# Gradient time over primal time for Zygote, as the paper reports them.
PAPER_RATIOS = {"sincos": 1.3, "loop": 7.1, "logsumexp": 1.3, "logistic_regression": 3.8,
                "mlp": 7.5}
BENCHMARKS = [("sincos", "SinCos", B.sincos, B.sincos_args),
              ("loop", "Loop", B.loop, B.loop_args),
              ("logsumexp", "LogSumExp", B.logsumexp, B.logsumexp_args),
              ("logistic_regression", "LogisticRegression", B.logistic_regression,
               B.logistic_regression_args),
              ("mlp", "2-layer MLP", B.mlp, B.mlp_args)]


def pow(x, n):
    r = 1
    while n > 0:
        n -= 1
        r *= x
    return r


def relu_branch(x):
    if x > 0:
        return x
    return 0.01 * x


# -- part 1: the running examples ------------------------------------------------------

CAPTIONS = {
    ("pow", "lowered"): "SSA form: `n` and `r` become phi nodes of the loop block #2; "
                        "control flow is gotos between basic blocks",
    ("pow", "forward"): "the primal instrumented: the `edge` phis are the paper's dummy "
                        "phis, saying which predecessor ran; block #2 runs many times, so "
                        "its edge and the alpha of `r *= x` are pushed on the tape",
    ("pow", "adjoint"): "blocks in reverse: pop() reads each iteration's edge and alpha "
                        "back, the loop-carried sensitivity of `r` is a phi, the "
                        "sensitivity of `x` accumulates",
    ("relu_branch", "lowered"): "the `if` is a conditional goto; each arm returns",
    ("relu_branch", "forward"): "returns merged into one exit whose dummy phi records the "
                                "arm taken; a block that runs once needs no tape: the "
                                "edge travels in the returned environment",
    ("relu_branch", "adjoint"): "branches on the recorded edge: the sensitivity reaches "
                                "`x` through `0.01 * x` only when that arm ran",
}


def call(f, args: tuple) -> str:
    return f"{f.__name__}({', '.join(repr(a) for a in args)})"


def show_example(f, args: tuple, other: tuple) -> list:
    """Print the three listings; check the adjoint does not depend on the trip count."""
    code = code_adjoint(f, *args)
    print(f"== {call(f, args)}")
    for stage, ir in (("lowered", lowering.lower(f)), ("forward", code.forward),
                      ("adjoint", code.adjoint)):
        print(f"-- {stage}: {CAPTIONS[f.__name__, stage]}")
        print(ir)
    bad = []
    if str(code_adjoint(f, *other)) != str(code):
        bad.append(f"{f.__name__}: the forward/adjoint IR for {other} differs from {args}")
    sizes = [len(list(ir.definitions())) for ir in (lowering.lower(f), code.forward,
                                                     code.adjoint)]
    print(f"-- sizes (values defined): primal {sizes[0]}, forward {sizes[1]}, adjoint "
          f"{sizes[2]}; identical for {call(f, other)}: "
          f"{'yes' if not bad else 'NO'} (not unrolled)\n")
    return bad


def attempt(step, *args) -> tuple:
    """(result, None), or (None, "Type: message") when `step` raises: one failing
    check is reported and the others still run."""
    try:
        return step(*args), None
    except Exception as e:  # noqa: BLE001  (reported as a failed check)
        first = str(e).splitlines()[0] if str(e) else ""
        return None, f"{type(e).__name__}: {first}"


def check_derivative(f, args: tuple, want: float) -> list:
    got = pullback_with(f, args)[1](1.0)[0]
    return [] if abs(got - want) <= 1e-12 else [f"d/dx {call(f, args)} = {got}, want {want}"]


def check_examples() -> list:
    bad = []
    for step, args in ((show_example, (pow, (2.0, 3), (2.0, 1000))),
                       (show_example, (relu_branch, (2.5,), (-4.0,))),
                       (check_derivative, (pow, (2.0, 3), 12.0)),
                       (check_derivative, (relu_branch, (2.5,), 1.0)),
                       (check_derivative, (relu_branch, (-4.0,), 0.01))):
        found, err = attempt(step, *args)
        bad += found if err is None else [f"{call(args[0], args[1])}: {err}"]
    return bad


# -- part 2: the benchmark table -------------------------------------------------------

def is_float_arg(a) -> bool:
    return isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype == np.float64)


def directional_check(f, args: tuple, grads: tuple) -> tuple:
    """(<grad, d>, central difference along a seeded random direction d)."""
    rng = np.random.default_rng(7)
    dirs = [rng.standard_normal(np.shape(a)) if is_float_arg(a) else None for a in args]
    ad = sum(float(np.sum(np.asarray(g) * d)) for g, d in zip(grads, dirs) if d is not None)

    def shifted(t: float) -> tuple:
        return tuple(a + t * d if d is not None else a for a, d in zip(args, dirs))
    fd = (f(*shifted(FD_STEP)) - f(*shifted(-FD_STEP))) / (2 * FD_STEP)
    return ad, fd


def check_gradient(name: str, f, args: tuple) -> tuple:
    y, back, backend, reason = pullback_with(f, args)
    grads = back(1.0)
    ad, fd = directional_check(f, args, grads)
    err = abs(ad - fd) / max(1.0, abs(fd))
    ok = err <= FD_TOL and y == f(*args)
    print(f"   {name:<20} value {y:<22.17g} <grad, d> {ad:<22.15g} central difference "
          f"{fd:<22.15g} rel. error {err:.1e} {'ok' if ok else 'MISMATCH'}")
    return ok, backend, reason


def compiled_primal(f):
    try:
        import jit
        g = jit.jit(f)
        return g, "llvm"
    except ImportError:
        return f, "CPython"


def time_row(key: str, f, args: tuple, backend: str, torch_fns: dict) -> dict:
    prim, how = compiled_primal(f)
    prim(*args)
    row = {"cpython": per_call_seconds(lambda: f(*args)),
           "primal": per_call_seconds(lambda: prim(*args)), "primal_how": how}
    row["grad"] = per_call_seconds(lambda: pullback_with(f, args, backend)[1](1.0))
    row["torch"] = torch_grad_time(torch_fns.get(key), args)
    return row


def torch_grad_time(tf, args: tuple):
    if tf is None:
        return None
    import torch

    def run():
        leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=is_float_arg(a))
                  if is_float_arg(a) else a for a in args]
        tf(*leaves).backward()
    return per_call_seconds(run)


def load_torch() -> dict:
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(1)
    return B.torch_versions(torch)


def print_table(rows: dict, backends: dict, torch_fns: dict) -> None:
    print(f"\n   PyTorch: {'installed' if torch_fns else 'not installed (column n/a)'}")
    head = ("benchmark", "CPython", "zy primal", "zy grad", "backend", "grad/primal",
            "paper", "PyTorch grad")
    print("   " + "".join(f"{h:>13}" if i else f"{h:<20}" for i, h in enumerate(head)))
    for key, label, _, _ in BENCHMARKS:
        r = rows.get(key)
        if r is None:
            print(f"   {label:<20}" + f"{'n/a':>13}" * 4 + f"{'n/a':>13}"
                  f"{PAPER_RATIOS[key]:>12.1f}x{'n/a':>13}")
            continue
        cells = [format_seconds(r["cpython"]), format_seconds(r["primal"]),
                 format_seconds(r["grad"]), backends[key], f"{r['grad'] / r['primal']:.1f}x",
                 f"{PAPER_RATIOS[key]:.1f}x",
                 "n/a" if r["torch"] is None else format_seconds(r["torch"])]
        print(f"   {label:<20}" + "".join(f"{c:>13}" for c in cells))
    print("   (zy primal: compiled with jit.jit; grad/primal: zy grad over zy primal; "
          "paper: Zygote's gradient over Julia's primal)")


def run_benchmarks(timing: bool) -> list:
    print("== the benchmark table (paper, table 1), rebuilt in Python")
    bad, backends, rows = [], {}, {}
    for key, label, f, make in BENCHMARKS:
        res, err = attempt(check_gradient, label, f, make())
        if err is not None or not res[0]:
            bad.append(f"{label}: " + (err or "gradient disagrees with central differences"))
            continue
        backends[key] = res[1]
        if res[2]:
            print(f"   ({label}: backend interp, {res[2]})")
    if not timing:
        return bad
    torch_fns = load_torch()
    for key, label, f, make in BENCHMARKS:
        if key in backends:
            rows[key], err = attempt(time_row, key, f, make(), backends[key], torch_fns)
            bad += [f"{label}: timing failed: {err}"] if err else []
    print_table(rows, backends, torch_fns)
    return bad


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="check only; no timing")
    a = p.parse_args(argv)
    bad = check_examples() + run_benchmarks(timing=not a.quick)
    for line in bad:
        print(f"MISMATCH: {line}")
    print("innes2018_dont_unroll_adjoint: " + ("all checks pass" if not bad else "FAILED"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
