"""Functions made at run time (issue 29, item 2): the cost of differentiating a closure
made anew for each call against one made once and reused.

The closure is autograd's fixed_points step, `make(a) = lambda x: x - 0.05 * (x**2 - a)`.
Tasks, per call:

  * "new closure": `y, back = pullback(make(a), x)` then `back(1.0)`, with `a` a new
    float each call (the first closure is compiled before timing: this is the cost from
    the second closure on);
  * "reused closure": the same on one closure made before timing;
  * "new closure to a helper": `gradient(apply, make(a), x)` with
    `apply(g, x) = g(x) * x` (a function value passed to a higher-order helper);
  * "new partial": `gradient(functools.partial(shifted, a), x)` with
    `shifted(a, x) = x - 0.05 * (x**2 - a)`.

Systems, each in its own process (pinned with `taskset -c 1`, single-threaded, the disk
cache off): "zygopy" (the default backend), "zygopy-interp" (`backend="interp"`) and,
when it is installed, "autograd" (`grad` of the same functions; its `make_vjp` for the
pullback tasks).  The target is "new closure" within 2x of "reused closure".

    python -m bench.closures [--clock cpu] [--quick] [--json FILE]
"""
from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import subprocess
import sys

from bench.timing import measure

MARK = "@@closures "
SYSTEMS = ("zygopy", "zygopy-interp", "autograd")
TASKS = ("new closure", "reused closure", "new closure to a helper", "new partial")
ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
X = 0.7


def make(a):
    return lambda x: x - 0.05 * (x ** 2 - a)


def apply(g, x):
    return g(x) * x


def shifted(a, x):
    return x - 0.05 * (x ** 2 - a)


def zygopy_tasks(backend: str) -> dict:
    import jit  # noqa: F401  (backend "llvm" when zygopy is not pip-installed)
    from adjoint import gradient, pullback
    fresh = itertools.count(1)
    reused = make(2.0)

    def round_trip(f):
        _, back = pullback(f, X, backend=backend)
        return back(1.0)[0]
    return {
        "new closure": lambda: round_trip(make(float(next(fresh)))),
        "reused closure": lambda: round_trip(reused),
        "new closure to a helper":
            lambda: gradient(apply, make(float(next(fresh))), X, backend=backend)[1],
        "new partial":
            lambda: gradient(functools.partial(shifted, float(next(fresh))), X,
                             backend=backend)[0],
    }


def autograd_tasks() -> dict:
    from autograd import grad, make_vjp
    fresh = itertools.count(1)
    reused = make(2.0)

    def round_trip(f):
        back, _ = make_vjp(f)(X)
        return back(1.0)
    return {
        "new closure": lambda: round_trip(make(float(next(fresh)))),
        "reused closure": lambda: round_trip(reused),
        "new closure to a helper": lambda: grad(apply, 1)(make(float(next(fresh))), X),
        "new partial": lambda: grad(functools.partial(shifted, float(next(fresh))))(X),
    }


def probe(system: str, clock: str, quick: bool) -> dict:
    """Time every task of `system` in this process: {task: {"median_ns", "value"}}."""
    if system == "autograd":
        tasks = autograd_tasks()
    else:
        tasks = zygopy_tasks("interp" if system == "zygopy-interp" else "auto")
    out = {}
    for name, fn in tasks.items():
        value = float(fn())               # the first closure: compiles
        out[name] = {**measure(fn, quick=quick, clock=clock), "value": value}
    return out


def run_all(clock: str, quick: bool) -> dict:
    prefix = ["taskset", "-c", "1"] if _can_pin() else []
    env = {**os.environ, **ONE_THREAD, "ZYGOPY_CACHE": "0"}
    results = {}
    for system in SYSTEMS:
        cmd = prefix + [sys.executable, "-m", "bench.closures", "--probe", system,
                        "--clock", clock] + (["--quick"] if quick else [])
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        line = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
        results[system] = json.loads(line[-1][len(MARK):]) if line else \
            {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return results


def _can_pin() -> bool:
    from shutil import which
    return which("taskset") is not None and (not hasattr(os, "sched_getaffinity")
                                             or 1 in os.sched_getaffinity(0))


def _cell(r: dict, task: str) -> str:
    if "error" in r:
        return "n/a"
    return f"{r[task]['median_ns'] / 1e3:.1f} us" if task in r else "n/a"


def table(results: dict) -> str:
    rows = ["| task | " + " | ".join(SYSTEMS) + " |", "|---|" + "---:|" * len(SYSTEMS)]
    for task in TASKS:
        rows.append(f"| {task} | " + " | ".join(_cell(results[s], task) for s in SYSTEMS)
                    + " |")
    ratios = []
    for s in SYSTEMS:
        r = results[s]
        ok = "error" not in r and all(t in r for t in TASKS[:2])
        ratios.append(f"{r['new closure']['median_ns'] / r['reused closure']['median_ns']:.2f}x"
                      if ok else "n/a")
    rows.append("| new / reused | " + " | ".join(ratios) + " |")
    notes = [f"{s}: {results[s]['error']}" for s in SYSTEMS if "error" in results[s]]
    return "\n".join(rows + ([""] + notes if notes else []))


def check(results: dict) -> list:
    """Tasks whose value is not the closed form d/dx = 1 - 0.1 x (the helper's depends
    on each closure's own `a`, and is checked by tests/test_closures_compiled_once)."""
    want = 1 - 0.1 * X
    bad = []
    for s, r in results.items():
        for task in ("new closure", "reused closure", "new partial"):
            if task in r and abs(r[task]["value"] - want) > 1e-12:
                bad.append(f"{s}: {task} = {r[task]['value']!r}, want {want!r}")
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.closures")
    ap.add_argument("--probe", choices=SYSTEMS, help=argparse.SUPPRESS)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--quick", action="store_true", help="short samples")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    if a.probe:
        print(MARK + json.dumps(probe(a.probe, a.clock, a.quick)))
        return 0
    results = run_all(a.clock, a.quick)
    print(table(results))
    bad = check(results)
    for line in bad:
        print("WRONG:", line)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"clock": a.clock, "results": results, "wrong": bad}, fh, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
