"""Forward mode side by side (issue 14): `jacfwd` against `jacobian` on a function with
few inputs and many outputs, and `hvp` against the gradient it is built on.

Workloads:
  * "euler": an explicit Euler integration, 100 steps of a 1,000-vector state with 4
    parameters: the Jacobian of the final state in the parameters (1,000 x 4);
  * "rosenbrock": the loop form of the Rosenbrock function of 1,000 variables: its
    gradient, and its Hessian times a vector.

Systems, each in its own process (pinned with `taskset` and single-threaded like the
main runner's workers):
  * "zygopy": `adjoint.jacfwd(euler, p, y0, 100, argnums=0)`, `adjoint.jacobian` (the
    same Jacobian row by row: 1,000 pullbacks), `adjoint.gradient(rosenbrock, x)`,
    `adjoint.hvp(rosenbrock, x, v)` and `adjoint.jvp(rosenbrock, (x,), (v,))`;
  * "jax": `jax.jit` of `jax.jacfwd`, `jax.grad` and of the forward-over-reverse hvp
    (`jax.jvp` of `jax.grad`), on the idiomatic rewrites (the Euler loop unrolled by
    tracing, the vectorised Rosenbrock).  Not `jax.jacrev` of euler: one call took
    127 s in the run of 2026-11-26 (the 1,000 rows vmapped through 100 unrolled steps).

Each cell is the median per call (`bench.timing.measure`); the results are checked
against each other before they are timed.  Run:

    python -m bench.forward_mode [--json FILE] [--clock cpu|wall]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

from bench.timing import format_ns, measure

MARK = "@@forward "
STEPS = 100
SYSTEMS = ("zygopy", "jax")
ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def euler(p, y0, steps):
    y = y0.copy()
    for _ in range(steps):
        y = y + 0.01 * (p[0] * y - p[1] * y * y + p[2] * np.sin(y) + p[3])
    return y


def rosenbrock(x):
    s = 0.0
    for i in range(len(x) - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def inputs() -> dict:
    rng = np.random.default_rng(14)
    return {"p": np.array([0.5, 0.2, 0.1, 0.3]), "y0": np.linspace(0.0, 1.0, 1000),
            "x": rng.uniform(-1.0, 1.0, 1000), "v": rng.standard_normal(1000)}


def zygopy_tasks(d: dict) -> dict:
    import adjoint
    p, y0, x, v = d["p"], d["y0"], d["x"], d["v"]
    return {
        "euler: jacfwd": lambda: adjoint.jacfwd(euler, p, y0, STEPS, argnums=0)[0],
        "euler: jacobian (reverse)": lambda: adjoint.jacobian(euler, p, y0, STEPS)[0],
        "rosenbrock: gradient": lambda: adjoint.gradient(rosenbrock, x)[0],
        "rosenbrock: hvp": lambda: adjoint.hvp(rosenbrock, x, v),
        "rosenbrock: jvp": lambda: adjoint.jvp(rosenbrock, (x,), (v,))[1],
    }


def jax_tasks(d: dict) -> dict:
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)

    def euler_j(p, y0):
        y = y0
        for _ in range(STEPS):
            y = y + 0.01 * (p[0] * y - p[1] * y * y + p[2] * jnp.sin(y) + p[3])
        return y

    def rosen_j(x):
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    fwd = jax.jit(jax.jacfwd(euler_j))
    grad = jax.jit(jax.grad(rosen_j))
    hvp = jax.jit(lambda x, v: jax.jvp(jax.grad(rosen_j), (x,), (v,))[1])
    jvp = jax.jit(lambda x, v: jax.jvp(rosen_j, (x,), (v,))[1])
    p, y0, x, v = (jnp.asarray(d[k]) for k in ("p", "y0", "x", "v"))

    def ready(f):
        return lambda: np.asarray(jax.block_until_ready(f()))
    return {
        "euler: jacfwd": ready(lambda: fwd(p, y0)),
        "rosenbrock: gradient": ready(lambda: grad(x)),
        "rosenbrock: hvp": ready(lambda: hvp(x, v)),
        "rosenbrock: jvp": ready(lambda: jvp(x, v)),
    }


def probe(system: str, clock: str) -> dict:
    """Time every task of `system` in this process: {task: {"median_ns", "value"}}."""
    d = inputs()
    tasks = (zygopy_tasks if system == "zygopy" else jax_tasks)(d)
    out = {}
    for name, fn in tasks.items():
        value = np.asarray(fn(), dtype=float)          # the first call: compiles
        out[name] = {**measure(fn, clock=clock), "checksum": float(np.sum(value)),
                     "first": float(value.ravel()[0])}
    return out


def run_all(clock: str) -> dict:
    prefix = ["taskset", "-c", "1"] if _can_pin() else []
    env = {**os.environ, **ONE_THREAD, "ZYGOPY_CACHE": "0"}
    results = {}
    for system in SYSTEMS:
        cmd = prefix + [sys.executable, "-m", "bench.forward_mode", "--probe", system,
                        "--clock", clock]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        line = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
        results[system] = json.loads(line[-1][len(MARK):]) if line else \
            {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return results


def _can_pin() -> bool:
    from shutil import which
    return which("taskset") is not None and (not hasattr(os, "sched_getaffinity")
                                             or 1 in os.sched_getaffinity(0))


def table(results: dict) -> str:
    zy, jx = results.get("zygopy", {}), results.get("jax", {})
    rows = ["| task | zygopy | jax.jit | zygopy/jax |", "|---|---:|---:|---:|"]
    for task in zy if "error" not in zy else jx:
        a, b = zy.get(task), jx.get(task)
        cell = (lambda r: format_ns(r["median_ns"]) if r else "n/a")
        ratio = f"{a['median_ns'] / b['median_ns']:.2f}x" if a and b else "n/a"
        rows.append(f"| {task} | {cell(a)} | {cell(b)} | {ratio} |")
    extra = []
    if all(k in zy for k in ("euler: jacfwd", "euler: jacobian (reverse)")):
        r = zy["euler: jacobian (reverse)"]["median_ns"] / zy["euler: jacfwd"]["median_ns"]
        extra.append(f"zygopy jacobian / jacfwd on euler: {r:.0f}x")
    if all(k in zy for k in ("rosenbrock: hvp", "rosenbrock: gradient")):
        r = zy["rosenbrock: hvp"]["median_ns"] / zy["rosenbrock: gradient"]["median_ns"]
        extra.append(f"zygopy hvp / gradient on rosenbrock: {r:.2f}x")
    for system, res in results.items():
        if "error" in res:
            extra.append(f"{system}: {res['error']}")
    return "\n".join(rows + [""] + extra)


def check(results: dict) -> list:
    """Tasks whose checksums differ between the systems (relative 1e-9)."""
    zy, jx = results.get("zygopy", {}), results.get("jax", {})
    bad = []
    for task in set(zy) & set(jx):
        if "checksum" in zy[task] and "checksum" in jx[task]:
            a, b = zy[task]["checksum"], jx[task]["checksum"]
            if abs(a - b) > 1e-9 * (1.0 + abs(a) + abs(b)):
                bad.append(f"{task}: zygopy {a!r}, jax {b!r}")
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.forward_mode")
    ap.add_argument("--probe", choices=SYSTEMS, help=argparse.SUPPRESS)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    if a.probe:
        print(MARK + json.dumps(probe(a.probe, a.clock)))
        return 0
    results = run_all(a.clock)
    print(table(results))
    bad = check(results)
    for line in bad:
        print("MISMATCH", line)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"clock": a.clock, "results": results, "mismatches": bad}, fh,
                      indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
