"""One benchmark subprocess: runs one system over some workloads and prints one JSON
record per line, each prefixed with `MARK` (libraries may print their own lines).

    python -m bench.worker --system numba --workloads pow_loop,horner [--quick]
                           [--suite MODULE] [--budget SECONDS]
    python -m bench.worker --tape-memory 10000000

Records: `hello` (Python, library version), `unavailable` (the system cannot run at
all, with the reason), `init` (one-time library warm-up), `start` (a workload begins:
if the process dies, the runner knows where), `result` (one per workload and task
kind), `tape` (the tape-memory measurement).
"""
from __future__ import annotations

import argparse
import gc
import importlib.metadata
import json
import math
import sys
import time

from bench import systems, workloads
from bench.timing import (
    CLOCKS,
    BudgetExceeded,
    budget,
    current_rss_bytes,
    measure,
    peak_rss_bytes,
    timed_call,
)

MARK = "@@bench "
PACKAGES = {"cpython": None, "zygopy": "zygopy", "zygopy-interp": "zygopy", "numba": "numba",
            "jax-eager": "jax", "jax-jit": "jax", "autograd": "autograd", "torch": "torch"}


def emit(record: dict) -> None:
    print(MARK + json.dumps(record), flush=True)


def describe(e: BaseException) -> str:
    """One line naming the exception, short enough for a footnote."""
    text = str(e).strip().splitlines()
    line = f"{type(e).__name__}: {text[0]}" if text else type(e).__name__
    return line if len(line) <= 200 else line[:197] + "..."


def version_of(system: str) -> str:
    """The version of the library behind `system`: the adapter's own `version()` when it
    has one (the C adjoint names its compiler), else its package's."""
    own = getattr(systems.load(system), "version", None)
    if own is not None:
        return own()
    package = PACKAGES.get(system)
    if package is None:
        return sys.version.split()[0]
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def run_task(task: systems.Task, quick: bool, seconds: float, clock: str = "wall") -> dict:
    """Time one task under its budget; a failure becomes a record with the reason."""
    record = {"event": "result", "kind": task.kind, "ok": False}
    if task.run is None:
        return {**record, "error": task.missing}
    deadline = CLOCKS[clock]() + 0.8 * seconds * 1e9 if seconds > 0 else math.inf
    try:
        with budget(seconds, clock):
            out, first = timed_call(task.run, clock)
            value, grads = task.result(out)
            stats = measure(task.run, quick, deadline, clock)
    except BudgetExceeded:
        return {**record, "error": f"not finished within the {seconds:g} s budget "
                                   "(rerun with --budget 0 for no limit)"}
    except Exception as e:  # noqa: BLE001 (a failing system fills n/a cells)
        return {**record, "error": describe(e)}
    grads = None if grads is None else [g.tolist() for g in grads]
    note = {"note": task.note} if task.note else {}
    if task.batch > 1:  # one run() is `batch` evaluations: times per evaluation
        first /= task.batch
        stats = {**stats, "median_ns": stats["median_ns"] / task.batch,
                 "min_ns": stats["min_ns"] / task.batch, "batch": task.batch}
    return {**record, "ok": True, "first_ns": first, **stats, "value": value, "grads": grads,
            **note}


def run_system(name: str, suite: dict, names: list, quick: bool, seconds: float,
               clock: str = "wall") -> None:
    emit({"event": "hello", "system": name, "version": version_of(name),
          "python": sys.version.split()[0]})
    system = systems.load(name)
    try:
        system.setup()
    except Exception as e:  # noqa: BLE001 (a failing system fills n/a cells)
        emit({"event": "unavailable", "reason": describe(e)})
        return
    warm_up(system, seconds)
    for wname in names:
        w = suite[wname]
        emit({"event": "start", "workload": wname})
        for record in workload_records(system, w, quick, seconds, clock):
            emit({**record, "workload": wname})


def warm_up(system, seconds: float) -> None:
    warm = getattr(system, "warm", None)
    if warm is None:
        return
    try:
        with budget(seconds):
            _, ns = timed_call(warm)
        emit({"event": "init", "ns": ns})
    except (Exception, BudgetExceeded) as e:  # noqa: BLE001 (a failing system fills n/a cells)
        emit({"event": "init", "error": describe(e)})


def workload_records(system, w: workloads.Workload, quick: bool, seconds: float,
                     clock: str) -> list:
    try:
        tasks = system.tasks(w)
    except Exception as e:  # noqa: BLE001 (a failing system fills n/a cells)
        return [{"event": "result", "kind": k, "ok": False, "error": describe(e)}
                for k in system.kinds]
    return [run_task(t, quick, seconds, clock) for t in tasks]


def tape_memory(n: int, seconds: float) -> dict:
    """Peak RSS growth of `pow_loop(x, n)` under zygopy's compiled pullback and one
    `back(1.0)`, per loop iteration.  The compile happens first (n = 1000) and the
    kernel's peak-RSS mark is reset after it where Linux allows, so that only the
    tape and the values of the big call are counted."""
    record = {"event": "tape", "n": n}
    try:
        import adjoint
        import jit  # noqa: F401  (importing jit registers backend="llvm")
        x = 1.0 + 1.0 / n
        with budget(seconds):
            y, back = adjoint.pullback(workloads.pow_loop, x, 1000, backend="llvm")
            back(1.0)
            del y, back
            gc.collect()
            reset = reset_peak_rss()
            base = current_rss_bytes()
            t0 = time.perf_counter_ns()
            y, back = adjoint.pullback(workloads.pow_loop, x, n, backend="llvm")
            grad = back(1.0)[0]
            elapsed = time.perf_counter_ns() - t0
        peak = peak_rss_now()
    except (Exception, BudgetExceeded) as e:  # noqa: BLE001 (a failing system fills n/a cells)
        return {**record, "ok": False, "error": describe(e)}
    expected = n * x ** (n - 1)
    return {**record, "ok": True, "baseline": base, "peak": peak, "peak_reset": reset,
            "bytes_per_iter": (peak - base) / n, "ns": elapsed, "value": y,
            "grad": grad, "grad_expected": expected}


def reset_peak_rss() -> bool:
    """Reset this process's high-water RSS mark (Linux >= 4.0: clear_refs 5)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_now() -> int:
    """The high-water RSS mark (VmHWM) since the last reset, in bytes."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return peak_rss_bytes()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.worker", description=__doc__.split("\n")[0])
    p.add_argument("--system", choices=list(systems.SYSTEMS))
    p.add_argument("--suite", default="bench.workloads", help="module defining WORKLOADS")
    p.add_argument("--workloads", default="", help="comma-separated (default: all)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--budget", type=float, default=60.0)
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    p.add_argument("--tape-memory", type=int, metavar="N", default=0)
    a = p.parse_args(argv)
    if a.tape_memory:
        emit(tape_memory(a.tape_memory, a.budget))
        return 0
    if a.system is None:
        p.error("--system or --tape-memory is required")
    suite = workloads.load_suite(a.suite)
    names = [n for n in a.workloads.split(",") if n] or list(suite)
    run_system(a.system, suite, names, a.quick, a.budget, a.clock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
