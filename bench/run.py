"""Run the benchmark suite: every system in its own subprocess pinned to one core, the
gradients cross-checked, one table of medians and one of ratios.

    python -m bench.run                       # everything (several minutes)
    python -m bench.run --quick               # smoke run: few repeats, small budgets
    python -m bench.run --only pow_loop,horner --systems cpython,numba,zygopy
    python -m bench.run --json /tmp/run.json; python -m bench.run --replay /tmp/run.json --markdown

A system that is not installed, a feature that does not exist yet, an error, a crash
or a call over its time budget fills its cells with "n/a" and a footnote; the run
itself goes on.  See bench/README.md for what each column means.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import shutil
import subprocess
import sys
import threading

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import latency, report, systems, verify, workloads
from bench.worker import MARK

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONE_THREAD = {
    "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1", "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "2",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    p.add_argument("--suite", default="bench.workloads",
                   help="module whose WORKLOADS to run (default: bench.workloads)")
    p.add_argument("--only", default="", help="comma-separated workloads (default: all)")
    p.add_argument("--systems", default="", help="comma-separated systems (default: all: "
                   + ",".join(systems.SYSTEMS) + ")")
    p.add_argument("--quick", action="store_true", help="few repeats and small budgets")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds per system and workload and task, 0 = none "
                        "(default 60, --quick 10); CPU seconds with --clock cpu")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="time with perf_counter_ns (wall, default) or the worker's CPU "
                        "time (cpu: steadier when other jobs share the core)")
    p.add_argument("--tape-n", type=int, default=None,
                   help="pow_loop trip count for the tape-memory measurement "
                        "(default 10**7, --quick 10**6; 0 skips it)")
    p.add_argument("--no-overhead", action="store_true",
                   help="skip the per-call overhead line (bench/overhead.py)")
    p.add_argument("--no-latency", action="store_true",
                   help="skip the fresh-process latency table (bench/latency.py; "
                        "--quick skips it too)")
    p.add_argument("--core", type=int, default=1, help="CPU core to pin workers to")
    p.add_argument("--no-pin", action="store_true", help="do not use taskset")
    p.add_argument("--json", metavar="FILE", help="also write every record as JSON")
    p.add_argument("--markdown", action="store_true", help="print Markdown tables")
    p.add_argument("--replay", metavar="FILE",
                   help="print the tables of a run saved with --json, measuring nothing")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    a = p.parse_args(argv)
    a.budget = (10.0 if a.quick else 60.0) if a.budget is None else a.budget
    a.tape_n = (10**6 if a.quick else 10**7) if a.tape_n is None else a.tape_n
    a.suite_map = workloads.load_suite(a.suite)
    a.extra_ratios = list(getattr(importlib.import_module(a.suite), "EXTRA_RATIOS", ()))
    unknown = [r for r in a.extra_ratios if r not in report.EXTRA_RATIOS]
    if unknown:
        p.error(f"{a.suite}.EXTRA_RATIOS: unknown ratio(s) {', '.join(unknown)}; "
                f"known: {', '.join(report.EXTRA_RATIOS)}")
    a.workloads = _pick(a.only, list(a.suite_map), "workload", p)
    a.system_names = _pick(a.systems, list(systems.SYSTEMS), "system", p)
    return a


def _pick(text: str, known: list, what: str, p: argparse.ArgumentParser) -> list:
    chosen = [x for x in text.split(",") if x] or known
    unknown = [x for x in chosen if x not in known]
    if unknown:
        p.error(f"unknown {what}(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return [x for x in known if x in chosen]


def pin_prefix(core: int, no_pin: bool) -> tuple:
    """(command prefix, description) for pinning a worker to `core`."""
    if no_pin:
        return [], "not pinned (--no-pin)"
    if shutil.which("taskset") is None:
        return [], "not pinned (taskset not found)"
    if hasattr(os, "sched_getaffinity") and core not in os.sched_getaffinity(0):
        return [], f"not pinned (core {core} not available)"
    return ["taskset", "-c", str(core)], f"pinned to core {core} (taskset)"


class Runner:
    """Launches workers, restarts one past a workload that killed it, gathers records."""

    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        self.prefix, self.pinning = pin_prefix(a.core, a.no_pin)
        # ZYGOPY_CACHE=0: the "1st" columns time compilation in every run (the disk
        # cache has its own probe, bench/latency.py)
        self.env = {**os.environ, **ONE_THREAD, "ZYGOPY_CACHE": "0",
                    "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.records: list = []

    def say(self, text: str) -> None:
        if not self.a.quiet:
            print(text, file=sys.stderr, flush=True)

    def worker(self, args: list, limit: float) -> tuple:
        """Run one worker; (its records, exit code, last stderr lines)."""
        cmd = self.prefix + [sys.executable, "-m", "bench.worker"] + args
        proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        killed = []
        timer = threading.Timer(limit, lambda: (killed.append(1), proc.kill()))
        if limit > 0:
            timer.start()
        err_lines: list = []
        err_thread = threading.Thread(target=lambda: err_lines.extend(proc.stderr))
        err_thread.start()
        recs = []
        for line in proc.stdout:
            if line.startswith(MARK):
                recs.append(json.loads(line[len(MARK):]))
                self._progress(recs[-1])
        proc.wait()
        err_thread.join()
        timer.cancel()
        err = [x.rstrip() for x in err_lines if x.strip()][-3:]
        if killed:
            err.append(f"killed by the runner after {limit:.0f} s")
        return recs, proc.returncode, err

    def _progress(self, rec: dict) -> None:
        if rec["event"] == "result":
            state = "ok" if rec["ok"] else "n/a: " + rec["error"][:90]
            state += f" ({rec['note'][:90]})" if rec.get("note") else ""
            self.say(f"  {rec['workload']:15s} {rec['kind']:6s} {state}")
        elif rec["event"] == "unavailable":
            self.say("  unavailable: " + rec["reason"])

    def run_system(self, name: str, suite: str = "", names: tuple = ()) -> list:
        """Every record of system `name` on workloads `names` of `suite` (default: the
        command line's)."""
        suite = suite or self.a.suite
        self.say(f"{name} on {suite} ({self.pinning})")
        kinds = systems.kinds_of(name)
        remaining, recs = list(names or self.a.workloads), []
        while remaining:
            args = ["--system", name, "--suite", suite, "--workloads", ",".join(remaining),
                    "--budget", str(self.a.budget), "--clock", self.a.clock]
            args += ["--quick"] if self.a.quick else []
            limit = (self.a.budget * len(kinds) + 60) * len(remaining) + 120
            limit *= 10 if self.a.clock == "cpu" else 1  # a CPU-time budget on a busy core
            got, code, err = self.worker(args, limit if self.a.budget > 0 else 0)
            recs += got
            if code == 0 or any(r["event"] == "unavailable" for r in got):
                break
            remaining = self._after_crash(name, kinds, remaining, got, code, err, recs)
        return recs

    def _after_crash(self, name, kinds, remaining, got, code, err, recs) -> list:
        started = [r["workload"] for r in got if r["event"] == "start"]
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        tail = f"; stderr: {err[-1][:150]}" if err else ""
        if not started:
            recs.append({"event": "unavailable", "reason": f"worker died ({how}){tail}"})
            return []
        crashed = started[-1]
        done = {r["kind"] for r in got if r["event"] == "result" and r["workload"] == crashed}
        for k in kinds:
            if k not in done:
                recs.append({"event": "result", "workload": crashed, "kind": k, "ok": False,
                             "error": f"process died ({how}){tail}"})
        self.say(f"  {crashed}: process died ({how}); restarting after it")
        return remaining[remaining.index(crashed) + 1:]

    def tape(self) -> dict:
        self.say(f"tape memory: pow_loop, n = {self.a.tape_n}, zygopy llvm")
        got, code, err = self.worker(["--tape-memory", str(self.a.tape_n),
                                      "--budget", str(self.a.budget)], 0)
        tape = [r for r in got if r["event"] == "tape"]
        if tape:
            return tape[0]
        return {"event": "tape", "ok": False, "n": self.a.tape_n,
                "error": f"worker died (exit {code}): {err[-1] if err else ''}"}


def collect(a: argparse.Namespace, runner: Runner) -> tuple:
    """Run every system; return (Results, hello records per system)."""
    res = report.Results(systems=a.system_names, workloads=a.workloads)
    hello = {}
    for name in a.system_names:
        for rec in runner.run_system(name):
            rec["system"] = name
            runner.records.append(rec)
            if rec["event"] == "hello":
                hello[name] = rec
            elif rec["event"] == "unavailable":
                res.down[name] = rec["reason"]
            elif rec["event"] == "result":
                res.cells[(name, rec["workload"], rec["kind"])] = rec
    return res, hello


def cross_check(res: report.Results, suite: dict) -> tuple:
    """Values and gradients of every system on every workload; marks failures in `res`."""
    findings, summaries = [], []
    for wname in res.workloads:
        values, grads = {}, {}
        for (system, w, kind), rec in res.cells.items():
            if w != wname or not rec.get("ok"):
                continue
            if rec.get("value") is not None:
                values[f"{system} {kind}"] = rec["value"]
            if rec.get("grads") is not None:
                grads[system] = rec["grads"]
        found, summary = verify.check_workload(suite[wname], values, grads)
        summaries.append(summary)
        for f in found:
            res.bad[(f.system.split()[0], f.workload)] = f.what
        findings += found
    return findings, summaries


def measure_overhead(a: argparse.Namespace, runner: Runner) -> dict:
    """system -> gradient record for `bench.overhead.square`, every gradient system
    but those whose adapter sets `in_overhead = False` (the C adjoint's batched call)."""
    if a.suite == "bench.overhead":
        return {}
    found = {}
    for name in a.system_names:
        adapter = systems.load(name)
        if "grad" not in adapter.kinds or not getattr(adapter, "in_overhead", True):
            continue
        for rec in runner.run_system(name, "bench.overhead", ("square",)):
            rec["system"] = name
            runner.records.append({**rec, "suite": "bench.overhead"})
            if rec["event"] == "unavailable":
                found[name] = {"ok": False, "error": rec["reason"]}
            elif rec["event"] == "result" and rec["kind"] == "grad":
                found[name] = rec
    return found


def measure_latency(a: argparse.Namespace, runner: Runner) -> dict | None:
    """The fresh-process latency probes of the systems run (zygopy, numba), on the
    default suite only, unless --no-latency or --quick."""
    probes = [p for p in latency.PROBES if p in a.system_names]
    if a.no_latency or a.quick or a.suite != "bench.workloads" or not probes:
        return None
    return latency.measure(probes, runner.prefix, runner.env, a.clock, ROOT, say=runner.say)


def environment(a: argparse.Namespace, runner: Runner, hello: dict) -> dict:
    versions = {s: h["version"] for s, h in hello.items()}
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": cpu_model(), "python": platform.python_version(),
            "pinning": runner.pinning, "mode": "quick" if a.quick else "full",
            "clock": a.clock, "zygopy_commit": zygopy_commit(),
            "budget_s": a.budget, "versions": versions}


def zygopy_commit() -> str:
    """The commit measured, "+dirty" when the working tree has changes."""
    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                             check=False)
        return out.stdout.strip() if out.returncode == 0 else ""
    head = git("rev-parse", "--short", "HEAD")
    if not head:
        return "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def measure_all(a: argparse.Namespace) -> dict:
    """Run everything the options ask for; return the payload `report.render_run` prints
    and `--json` writes (gradients left out)."""
    runner = Runner(a)
    res, hello = collect(a, runner)
    findings, summaries = cross_check(res, a.suite_map)
    run_tape = a.tape_n > 0 and "zygopy" in a.system_names and "zygopy" not in res.down
    tape = runner.tape() if run_tape else None
    overhead = {} if a.no_overhead else measure_overhead(a, runner)
    fresh = measure_latency(a, runner)
    slim = [{k: v for k, v in r.items() if k != "grads"} for r in runner.records]
    return {"environment": environment(a, runner, hello), "systems": a.system_names,
            "workloads": a.workloads, "loops": {n: w.loop for n, w in a.suite_map.items()},
            "extra_ratios": a.extra_ratios,
            "records": slim, "summaries": summaries, "tape": tape, "overhead": overhead,
            "latency": fresh,
            "disagreements": [vars(f) for f in findings]}


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.replay:
        with open(a.replay) as f:
            payload = json.load(f)
    else:
        payload = measure_all(a)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(payload, f, indent=1)
    print(report.render_run(payload, a.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
