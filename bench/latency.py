"""Fresh-process latency (issue 13): what a user waits for in a new `python` process
before the first gradient, against Numba's first compile of the same primal.

Each probe runs in a fresh process (pinned and single-threaded like the workers) and
times its steps in order; numpy is imported first and not counted (both need it):

- "zygopy": `import adjoint`, `import jit`, then the first and a second
  `adjoint.gradient(lotka_volterra, 1.1, 0.4, 0.1, 0.4, 1000)` (the first includes
  the J transform, type inference and the LLVM compilation of forward and adjoint);
  each process has an empty disk cache of its own (`jit.disk_cache`);
- "zygopy-cached": the same steps with the disk cache warm: the processes share one
  cache folder, which the untimed first process filled;
- "numba": `import numba`, then the first and a second call of
  `numba.njit(lotka_volterra)` on the same arguments (the first compiles it).

The runner (`python -m bench.run`, unless `--no-latency` or `--quick`) starts
`RUNS` processes per probe, alternating the probes, and reports each step's median.
The processes write and read Python's bytecode cache, as a user's do
(`with_bytecode_cache`).
One probe on its own prints one JSON line:

    python -m bench.latency --probe zygopy
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import warnings

from bench.timing import CLOCKS

MARK = "@@latency "
RUNS = 5
ARGS = (1.1, 0.4, 0.1, 0.4, 1000)
PROBES = ("zygopy", "numba")
CACHED = "zygopy-cached"      # measured with "zygopy"
LABELS = {
    "import adjoint": "`import adjoint`",
    "import jit": "`import jit` (after adjoint)",
    "first gradient": "first `adjoint.gradient(lotka_volterra, ...)`",
    "second gradient": "second `adjoint.gradient` (steady state, for scale)",
    "cached: import adjoint": "disk cache warm: `import adjoint`",
    "cached: import jit": "disk cache warm: `import jit`",
    "first gradient, cache warm": "disk cache warm: first `adjoint.gradient` "
                                  "(an earlier process compiled it)",
    "import numba": "`import numba`",
    "first njit call": "first `numba.njit(lotka_volterra)(...)` call",
    "second njit call": "second call (steady state, for scale)",
}


def probe(which: str, clock: str) -> dict:
    """Run one probe in this (fresh) process: {"steps": {step: ns}, "numpy": ns, ...}."""
    now = CLOCKS[clock]
    steps: dict = {}

    def timed(step: str, fn):
        t0 = now()
        out = fn()
        steps[step] = now() - t0
        return out

    t0 = now()
    importlib.import_module("numpy")
    numpy_ns = now() - t0
    from bench.workloads import lotka_volterra
    caught: list = []
    if which in ("zygopy", CACHED):
        pre = "cached: " if which == CACHED else ""
        adjoint = timed(pre + "import adjoint", lambda: importlib.import_module("adjoint"))
        timed(pre + "import jit", lambda: importlib.import_module("jit"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            timed("first gradient, cache warm" if pre else "first gradient",
                  lambda: adjoint.gradient(lotka_volterra, *ARGS))
            if not pre:
                timed("second gradient", lambda: adjoint.gradient(lotka_volterra, *ARGS))
    elif which == "numba":
        numba = timed("import numba", lambda: importlib.import_module("numba"))
        compiled = numba.njit(lotka_volterra)
        timed("first njit call", lambda: compiled(*ARGS))
        timed("second njit call", lambda: compiled(*ARGS))
    else:
        raise ValueError(f"bench.latency: unknown probe {which!r} (known: {PROBES})")
    notes = sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0][:120]}"
                    for w in caught})
    return {"steps": steps, "numpy_ns": numpy_ns, "warnings": notes}


def with_bytecode_cache(env: dict) -> dict:
    """`env` with Python's bytecode cache on, as a user's Python has it (this machine
    sets PYTHONDONTWRITEBYTECODE, which makes every import compile its sources: about
    90 ms of `import adjoint` and more of `import numba`); the cache goes under the
    temp directory, not into the source trees."""
    env = dict(env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(),
                                              f"zygopy-bench-pycache-{os.getuid()}")
    return env


def measure(probes: list, prefix: list, env: dict, clock: str, root: str,
            runs: int = RUNS, say=lambda text: None) -> dict:
    """Run each probe in `runs` fresh processes (command prefix `prefix`, e.g. taskset),
    after one untimed process per probe that fills the bytecode cache;
    {"runs", "clock", "probes": {probe: {"samples": [...], "error": ...}}}."""
    if "zygopy" in probes:
        probes = list(probes) + [CACHED]
    found = {p: {"samples": [], "error": ""} for p in probes}
    env = with_bytecode_cache(env)
    caches = tempfile.mkdtemp(prefix="zygopy-bench-caches-")
    try:
        return _measure(probes, prefix, env, clock, root, runs, say, found, caches)
    finally:
        shutil.rmtree(caches, ignore_errors=True)


def _measure(probes, prefix, env, clock, root, runs, say, found, caches) -> dict:
    shared = os.path.join(caches, "shared")

    on = {k: v for k, v in env.items() if k != "ZYGOPY_CACHE"}   # (the workers' is off)

    def env_of(p: str) -> dict:   # the zygopy probes' disk caches: see the docstring
        if p == CACHED:
            return dict(on, ZYGOPY_CACHE_DIR=shared)
        if p == "zygopy":
            return dict(on, ZYGOPY_CACHE_DIR=tempfile.mkdtemp(dir=caches))
        return env
    for p in probes:
        subprocess.run(prefix + [sys.executable, "-m", "bench.latency", "--probe", p],
                       cwd=root, env=env_of(p), capture_output=True, timeout=300, check=False)
    for i in range(runs):
        say(f"fresh-process latency: run {i + 1} of {runs} ({', '.join(probes)})")
        for p in probes:
            if found[p]["error"]:
                continue
            cmd = prefix + [sys.executable, "-m", "bench.latency", "--probe", p,
                            "--clock", clock]
            try:
                out = subprocess.run(cmd, cwd=root, env=env_of(p), capture_output=True,
                                     text=True, timeout=300, check=False)
            except subprocess.TimeoutExpired:
                found[p]["error"] = "a probe took over 300 s"
                continue
            lines = [x for x in out.stdout.splitlines() if x.startswith(MARK)]
            if out.returncode != 0 or not lines:
                tail = [x for x in out.stderr.splitlines() if x.strip()][-1:]
                found[p]["error"] = f"exit code {out.returncode}: {' '.join(tail)[:200]}"
                continue
            found[p]["samples"].append(json.loads(lines[-1][len(MARK):]))
    return {"runs": runs, "clock": clock, "probes": found}


def medians(result: dict) -> dict:
    """probe -> {step: median ns} over the processes that finished."""
    out = {}
    for p, got in result["probes"].items():
        samples = got["samples"]
        if samples:
            out[p] = {step: statistics.median(s["steps"][step] for s in samples)
                      for step in samples[0]["steps"]}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__.split("\n")[0])
    p.add_argument("--probe", choices=PROBES + (CACHED,), required=True)
    p.add_argument("--clock", choices=tuple(CLOCKS), default="wall")
    a = p.parse_args(argv)
    record = probe(a.probe, a.clock)
    print(MARK + json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
