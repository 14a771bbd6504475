"""Checkpointed loops (issue 14, part 2): the gradient of a loop of 10^8 iterations
with the whole tape against `adjoint.checkpoint(f, 64)` (a 64 MiB budget).

Workloads (bench.workloads):
  * "pow_loop": `r = r * x`, n times (one tape word an iteration: 800 MB at 10^8);
  * "euler_lv": `lotka_volterra`, an explicit Euler integration of the Lotka-Volterra
    equations with 4 parameters (four words an iteration: 3.2 GB at 10^8).

Each (workload, mode) runs in its own process, pinned with `taskset -c 1`: it
compiles on a short run, reads its peak resident memory (the baseline), then times
`adjoint.gradient` at n (the median of `--repeat` runs, CPU time) and reads the peak
again.  "peak over baseline" is the difference.  The gradients of the two modes are
compared bit for bit (their float.hex).  Run:

    python -m bench.checkpointing [--n N] [--repeat R] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

MARK = "@@checkpoint "
MODES = {"tape": None, "checkpoint=64": 64.0}
WORKLOADS = ("pow_loop", "euler_lv")


def _workload(name: str) -> tuple:
    from bench.workloads import lotka_volterra, pow_loop
    if name == "pow_loop":
        return pow_loop, (1.0000000001,)
    return lotka_volterra, (0.1, 0.02, 0.01, 0.1)


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # (KiB on Linux)


def probe(name: str, mode: str, n: int, repeat: int) -> dict:
    """One process's measurement (see the module docstring)."""
    import adjoint
    f, args = _workload(name)
    budget = MODES[mode]
    if budget is not None:      # the tape of each outer loop bounded to `budget` MiB
        f = adjoint.checkpoint(f, budget)
    adjoint.gradient(f, *args, 1000)      # compile
    base = _peak_mib()
    times, grad = [], None
    for _ in range(repeat):
        t = time.process_time()
        grad = adjoint.gradient(f, *args, n)
        times.append(time.process_time() - t)
    return {"seconds": statistics.median(times), "runs": times,
            "peak_over_baseline_mib": _peak_mib() - base,
            "gradient": [g.hex() if isinstance(g, float) else g for g in grad]}


def run_all(n: int, repeat: int) -> dict:
    pin = ["taskset", "-c", "1"] if _can_pin() else []
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out: dict = {}
    for name in WORKLOADS:
        for mode in MODES:
            cmd = pin + [sys.executable, "-m", "bench.checkpointing", "--probe", name,
                         "--mode", mode, "--n", str(n), "--repeat", str(repeat)]
            done = subprocess.run(cmd, capture_output=True, text=True, env=env)
            line = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
            out.setdefault(name, {})[mode] = json.loads(line[-1][len(MARK):]) if line else \
                {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return out


def _can_pin() -> bool:
    from shutil import which
    return which("taskset") is not None and (not hasattr(os, "sched_getaffinity")
                                             or 1 in os.sched_getaffinity(0))


def table(results: dict, n: int) -> str:
    rows = [f"| workload (n = {n:.0e}) | tape: time | tape: peak over baseline | "
            "checkpoint=64: time | checkpoint=64: peak over baseline | time ratio | "
            "same gradient bits |", "|---|---:|---:|---:|---:|---:|---|"]
    for name, modes in results.items():
        a, b = modes.get("tape", {}), modes.get("checkpoint=64", {})
        if "error" in a or "error" in b:
            rows.append(f"| {name} | {a.get('error', '')} | | {b.get('error', '')} | | | |")
            continue
        rows.append(
            f"| {name} | {a['seconds']:.3f} s | {a['peak_over_baseline_mib']:.0f} MiB | "
            f"{b['seconds']:.3f} s | {b['peak_over_baseline_mib']:.0f} MiB | "
            f"{b['seconds'] / a['seconds']:.2f}x | "
            f"{'yes' if a['gradient'] == b['gradient'] else 'NO'} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.checkpointing")
    ap.add_argument("--probe", choices=WORKLOADS, help=argparse.SUPPRESS)
    ap.add_argument("--mode", choices=tuple(MODES), help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=10**8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    if a.probe:
        print(MARK + json.dumps(probe(a.probe, a.mode, a.n, a.repeat)))
        return 0
    results = run_all(a.n, a.repeat)
    print(table(results, a.n))
    bad = [name for name, m in results.items()
           if m.get("tape", {}).get("gradient") != m.get("checkpoint=64", {}).get("gradient")]
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"clock": "cpu", "n": a.n, "results": results, "mismatches": bad}, fh,
                      indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
