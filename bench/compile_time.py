"""The first gradient of a ~200-line function, with an empty cache (issue 30, item 6).

    python -m bench.compile_time [--profile N] [--repeat K]

Runs `bench.compile_time_program.loss` (a 216-line module of helpers, numpy and
loops with branches, written the way people write a loss) in K fresh processes
(`taskset -c 1` where it can), each with `ZYGOPY_CACHE_DIR` set to a new empty
folder.  Each process times `import jit`, then the first
`adjoint.value_and_grad(loss, *args)` (lowering, J transform, type inference, LLVM),
then a warm call, in wall-clock and CPU seconds.  With `--profile N` the first call
runs under cProfile (timing CPU time, steadier on a shared machine) and the N entries with the largest cumulative time are printed,
with the time per stage (the functions that begin each stage, by cumulative time).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench.autograd_fixed_points import _can_pin

MARK = "@@compile_time "
STAGES = (   # (stage, the function that runs it: path suffix, function name)
    ("lowering", "lowering/api.py", "_lowered"),
    ("J transform", "adjoint/transform.py", "_build"),
    ("type inference", "jit/typing/infer.py", "infer"),
    ("LLVM IR generation (codegen)", "jit/codegen/function.py", "build"),
    ("LLVM optimisation", "jit/runtime/native.py", "optimize"),
    ("LLVM machine code (MCJIT)", "llvmlite/binding/executionengine.py", "finalize_object"),
    ("LLVM machine code (quick tier)", "llvmlite/binding/targets.py", "emit_object"),
)


def probe(profile: int) -> dict:
    """In a fresh process: import, first gradient (maybe profiled), warm gradient."""
    t0, c0 = time.perf_counter(), time.process_time()
    import jit  # noqa: F401
    from adjoint import value_and_grad
    from bench.compile_time_program import inputs, loss
    args = inputs()
    t1, c1 = time.perf_counter(), time.process_time()
    out = {"import_s": t1 - t0}
    if profile:
        import cProfile
        import pstats
        prof = cProfile.Profile(time.process_time)   # CPU time: steadier when shared
        prof.enable()
    value, _ = value_and_grad(loss, *args)
    t2, c2 = time.perf_counter(), time.process_time()
    if profile:
        prof.disable()
        out["profile"] = _profile_lines(pstats.Stats(prof), profile)
        out["stages"] = _stage_times(pstats.Stats(prof))
    t3 = time.perf_counter()
    value_and_grad(loss, *args)
    out.update(first_s=t2 - t1, first_cpu_s=c2 - c1, warm_ms=(time.perf_counter() - t3) * 1e3,
               value=float(value))
    return out


def _profile_lines(stats, n: int) -> list:
    rows = []
    for (path, line, name), (_, calls, _tt, ct, _) in stats.stats.items():
        rows.append((ct, calls, f"{_short(path)}:{line}({name})"))
    rows.sort(reverse=True)
    return [f"{ct:8.3f} s {calls:8d}  {where}" for ct, calls, where in rows[:n]]


def _stage_times(stats) -> dict:
    """Cumulative seconds of each stage's entry function (nested calls counted once)."""
    times = {}
    for stage, suffix, func in STAGES:
        times[stage] = sum(ct for (path, _, name), (_, _, _, ct, _) in stats.stats.items()
                           if path.endswith(suffix) and name == func)
    return times


def _short(path: str) -> str:
    for root in ("site-packages/", os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + "/"):
        if root in path:
            return path.split(root, 1)[1]
    return path


def run_fresh(profile: int) -> dict:
    pin = ["taskset", "-c", "1"] if _can_pin() else []
    with tempfile.TemporaryDirectory(prefix="zygopy-cache-") as cache:
        env = dict(os.environ, ZYGOPY_CACHE_DIR=cache, ZYGOPY_QUIET="1",
                   OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        env.pop("ZYGOPY_CACHE", None)
        done = subprocess.run(pin + [sys.executable, "-m", "bench.compile_time", "--probe",
                                     "--profile", str(profile)],
                              capture_output=True, text=True, env=env)
    line = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
    if not line:
        raise SystemExit(f"the probe failed: {done.stderr.strip()[-2000:]}")
    return json.loads(line[-1][len(MARK):])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.compile_time")
    ap.add_argument("--repeat", type=int, default=1, help="fresh processes (timed)")
    ap.add_argument("--profile", type=int, default=25, help="profile lines (0: none)")
    ap.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    if opts.probe:
        print(MARK + json.dumps(probe(opts.profile)))
        return 0
    runs = [run_fresh(0) for _ in range(opts.repeat)]
    print("| run | import jit s | first value_and_grad s (wall) | (CPU) | warm ms |")
    print("|---|---:|---:|---:|---:|")
    for k, r in enumerate(runs, 1):
        print(f"| {k} | {r['import_s']:.2f} | {r['first_s']:.2f} | {r['first_cpu_s']:.2f} | "
              f"{r['warm_ms']:.2f} |")
    if len(runs) > 1:
        med = {k: statistics.median(r[k] for r in runs)
               for k in ("import_s", "first_s", "first_cpu_s", "warm_ms")}
        print(f"| median | {med['import_s']:.2f} | {med['first_s']:.2f} | "
              f"{med['first_cpu_s']:.2f} | {med['warm_ms']:.2f} |")
    if opts.profile:
        prof = run_fresh(opts.profile)
        print(f"\nprofiled first call: {prof['first_cpu_s']:.2f} s CPU (cProfile adds its own)")
        print("\n| stage | cumulative CPU s |\n|---|---:|")
        for stage, secs in prof["stages"].items():
            print(f"| {stage} | {secs:.2f} |")
        print("\n```")
        print("\n".join(prof["profile"]))
        print("```")
    return 0


if __name__ == "__main__":
    sys.exit(main())
