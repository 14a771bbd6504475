"""Many inputs on every core (issue 14, part 3): `adjoint.gradient(f, X, batch=0)` over
10,000 rows on one thread against every core, and against a Python loop of
`gradient` calls.

Workloads:
  * "lv_sweep": 10,000 parameter rows (4 each) of `lotka_volterra` with 1,000 Euler
    steps: a gradient of the final population per parameter row;
  * "rosenbrock_rows": the loop form of the Rosenbrock function on 10,000 rows of 100
    variables.

Each (workload, system) runs in its own process, pinned to the cores the machine
lends (`taskset -c 0-<k-1>`), single-threaded BLAS: "threads=1" and "threads=k" are
`jit.batch.batched(f, (X,), (0,), "gradient", workers)` (what `gradient(f, X, batch=0)`
runs), "python loop" is `[adjoint.gradient(f, x) for x in X]`.  Cells are wall-clock
medians (the threads run at once, so CPU time would add them up), after one warm-up
call; the results are checked equal bit for bit before they are timed.  Run:

    python -m bench.batching [--rows N] [--quick] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

from bench.workloads import lotka_volterra

MARK = "@@batch "
WORKLOADS = ("lv_sweep", "rosenbrock_rows")


def lv_sweep(p):
    return lotka_volterra(p[0], p[1], p[2], p[3], 1000)


def rosenbrock_rows(x):
    s = 0.0
    for i in range(len(x) - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def inputs(name: str, rows: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    if name == "lv_sweep":
        return np.array([1.0, 0.1, 0.075, 1.5]) * (1.0 + 0.1 * rng.random((rows, 4)))
    return rng.normal(size=(rows, 100))


def probe(name: str, system: str, rows: int, quick: bool = False) -> dict:
    import adjoint
    from bench.timing import measure
    from jit.batch import batched, workers_available
    f = {"lv_sweep": lv_sweep, "rosenbrock_rows": rosenbrock_rows}[name]
    X = inputs(name, rows)
    if system == "python loop":
        def run():
            return np.array([adjoint.gradient(f, x)[0] for x in X])
    else:
        workers = 1 if system == "threads=1" else workers_available()

        def run():
            return batched(f, (X,), (0,), "gradient", workers)[0]
    got = run()
    ns = measure(run, quick=quick, clock="wall")
    import hashlib
    return {"median_ns": ns["median_ns"], "cpu_share": ns.get("cpu_share"),
            "digest": hashlib.sha256(got.tobytes()).hexdigest(),
            "workers": workers_available()}


def run_all(rows: int, quick: bool = False) -> dict:
    cores = _cores()
    pin = ["taskset", "-c", ",".join(map(str, cores))] if cores else []
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out: dict = {}
    for name in WORKLOADS:
        for system in ("threads=1", "threads=all", "python loop"):
            cmd = pin + [sys.executable, "-m", "bench.batching", "--probe", name,
                         "--system", system, "--rows", str(rows)] + ["--quick"] * quick
            done = subprocess.run(cmd, capture_output=True, text=True, env=env)
            line = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
            out.setdefault(name, {})[system] = json.loads(line[-1][len(MARK):]) if line \
                else {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return out


def _cores() -> list:
    from shutil import which
    if which("taskset") is None or not hasattr(os, "sched_getaffinity"):
        return []
    return sorted(os.sched_getaffinity(0))


def table(results: dict, rows: int) -> str:
    from bench.timing import format_ns
    lines = [f"| workload ({rows:,} rows) | python loop | threads=1 | threads=all | "
             "speedup over one thread | same bits |", "|---|---:|---:|---:|---:|---|"]
    for name, r in results.items():
        one, many, loop = r.get("threads=1", {}), r.get("threads=all", {}), \
            r.get("python loop", {})
        if any("error" in x for x in (one, many, loop)):
            lines.append(f"| {name} | {loop.get('error', '')} | {one.get('error', '')} | "
                         f"{many.get('error', '')} | | |")
            continue
        same = one["digest"] == many["digest"] == loop["digest"]
        lines.append(f"| {name} | {format_ns(loop['median_ns'])} | "
                     f"{format_ns(one['median_ns'])} | {format_ns(many['median_ns'])} "
                     f"({many['workers']} threads) | "
                     f"{one['median_ns'] / many['median_ns']:.2f}x | "
                     f"{'yes' if same else 'NO'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.batching")
    ap.add_argument("--probe", choices=WORKLOADS, help=argparse.SUPPRESS)
    ap.add_argument("--system", help=argparse.SUPPRESS)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--quick", action="store_true", help="fewer, shorter samples")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    if a.probe:
        print(MARK + json.dumps(probe(a.probe, a.system, a.rows, a.quick)))
        return 0
    results = run_all(a.rows, a.quick)
    print(table(results, a.rows))
    bad = [n for n, r in results.items()
           if len({x.get("digest") for x in r.values()}) != 1]
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"clock": "wall", "rows": a.rows, "results": results,
                       "mismatches": bad}, fh, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
