"""autograd's `examples/fixed_points.py`, run unchanged, under zygopy and under autograd.

The example differentiates `sqrt(a)`, computed as the fixed point of a gradient-descent
step made by a factory (`grad_descent_sqrt_iter(a)` returns a fresh closure), through
`autograd.misc.fixed_points.fixed_point`: a primitive whose reverse rule takes
pullbacks of fresh closures at every call.  It prints `grad(sqrt)(2.0)` and
`grad(grad(sqrt))(2.0)`.

The source is read at run time from an autograd checkout (a work tree, or a git
directory such as the search tools' mirror); nothing of autograd is copied here.
For zygopy only the import lines are swapped:

    import autograd.numpy as np                      -> import numpy as np
    from autograd import grad                        -> this module's `grad`
    from autograd.misc.fixed_points import fixed_point -> this module's `fixed_point`

`grad(f)` is `lambda *args: adjoint.gradient(f, *args)[0]`; `fixed_point` iterates
`x = f(a)(x)` until `distance(x, x_prev) <= tol`, and its reverse rule
(`@adjoint.rule`) follows the implicit function theorem: the cotangent `w` of the
fixed point solves `w = dy + (d step/dx)^T w`, found by the same iteration on the
pullback of the step at the fixed point, and `a` gets `(d step/da)^T w`.  A second
derivative differentiates that rule's own code, its loop unrolled on the tape (autograd's
rule calls its `fixed_point` primitive again instead): the two second derivatives are
approximations of the same value that differ by about the iteration's tolerance.

Each system runs in its own process (pinned with `taskset -c 1`, single-threaded
BLAS): it runs the example's module body (its prints are dropped), then times
`grad(sqrt)(2.0)` and `grad(grad(sqrt))(2.0)` (medians).  The gradients are checked
against autograd's and against central differences of `sqrt` and of `grad(sqrt)`.

    python -m bench.autograd_fixed_points [AUTOGRAD_CHECKOUT] [--repeat N] [--json FILE]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import time

from adjoint import gradient, pullback

MARK = "@@fixed_points "
MIRROR = "/work/.mirror/HIPS+autograd/repo"
EXAMPLE = "examples/fixed_points.py"
SWAPS = {
    "import autograd.numpy as np": "import numpy as np",
    "from autograd import grad": "from bench.autograd_fixed_points import grad",
    "from autograd.misc.fixed_points import fixed_point":
        "from bench.autograd_fixed_points import fixed_point",
}


# -- zygopy's stand-ins for the two names the example imports from autograd ----------
def grad(fun):
    """autograd's `grad(f)` spelled with `adjoint.gradient`: d f / d (first argument)."""
    return lambda *args: gradient(fun, *args)[0]


def fixed_point(f, a, x0, distance, tol):
    """The x with `distance(f(a)(x), x) <= tol`, iterating from `x0`."""
    step = f(a)
    x, prev = step(x0), x0
    while distance(x, prev) > tol:
        x, prev = step(x), x
    return x


def _fixed_point_back(dy, x_star, f, a, x0, distance, tol):
    """Cotangents of `fixed_point`'s operands for cotangent `dy` of its result
    `x_star`: only `a` gets one (see the module docstring).  Module-level imports
    only: a second derivative differentiates this function (its loop included)."""
    _, back_x = pullback(f(a), x_star)
    prev = 0.0 * dy
    w = dy + back_x(prev)[0]
    while distance(w, prev) > tol:
        w, prev = dy + back_x(w)[0], w
    _, back_a = pullback(lambda a_, x_: f(a_)(x_), a, x_star)
    return (None, back_a(w)[0], None, None, None)


def _register_rule() -> None:
    """The rule, on the `fixed_point` the swapped example imports (this module under
    its own name, also when it runs as `__main__`)."""
    import adjoint
    from bench import autograd_fixed_points as own
    adjoint.rule(own.fixed_point, uses_result=True)(own._fixed_point_back)


# -- reading and running the example ----------------------------------------------------
def example_source(checkout: str) -> str:
    """The example's text from a work tree or a git directory."""
    path = os.path.join(checkout, EXAMPLE)
    if os.path.exists(path):
        with open(path) as fh:
            return fh.read()
    done = subprocess.run(["git", "-C", checkout, "show", f"HEAD:{EXAMPLE}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"no {EXAMPLE} in {checkout}: {done.stderr.strip()}")
    return done.stdout


def for_zygopy(source: str) -> str:
    """`source` with its autograd imports swapped (each must be found, once)."""
    lines = source.splitlines()
    for old, new in SWAPS.items():
        hits = [k for k, line in enumerate(lines) if line.strip() == old]
        if len(hits) != 1:
            raise SystemExit(f"the example's import line {old!r} is not there once")
        lines[hits[0]] = new
    return "\n".join(lines) + "\n"


def run_example(source: str) -> dict:
    """Run the example's module body (prints dropped); its namespace."""
    scope: dict = {"__name__": "fixed_points_example"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(source, EXAMPLE, "exec"), scope)
    return scope


def _median_ms(fn, repeat: int) -> float:
    fn()
    per = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        per.append((time.perf_counter() - t) * 1e3)
    return statistics.median(per)


def probe(system: str, checkout: str, repeat: int) -> dict:
    """One process's run of the example under `system` ("zygopy" or "autograd")."""
    source = example_source(checkout)
    if system == "zygopy":
        import jit  # noqa: F401  (backend "llvm" when zygopy is not pip-installed)
        _register_rule()
        source = for_zygopy(source)
    t = time.perf_counter()
    scope = run_example(source)
    first = time.perf_counter() - t
    sqrt, g = scope["sqrt"], scope["grad"]
    d1, d2 = g(sqrt), g(g(sqrt))
    return {"run_example_s": first, "sqrt": float(sqrt(2.0)),
            "grad": float(d1(2.0)), "grad_grad": float(d2(2.0)),
            "grad_ms": _median_ms(lambda: d1(2.0), repeat),
            "grad_grad_ms": _median_ms(lambda: d2(2.0), max(repeat // 5, 3))}


def central_differences(checkout: str, h: float = 1e-3) -> tuple:
    """Central differences of the example's `sqrt` and of zygopy's `grad(sqrt)` at 2."""
    _register_rule()
    scope = run_example(for_zygopy(example_source(checkout)))
    sqrt, g = scope["sqrt"], scope["grad"]
    d1 = g(sqrt)
    return ((sqrt(2.0 + h) - sqrt(2.0 - h)) / (2 * h),
            (d1(2.0 + h) - d1(2.0 - h)) / (2 * h))


def run_all(checkout: str, repeat: int) -> dict:
    pin = ["taskset", "-c", "1"] if _can_pin() else []
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = {}
    for system in ("zygopy", "autograd"):
        cmd = pin + [sys.executable, "-m", "bench.autograd_fixed_points", checkout,
                     "--probe", system, "--repeat", str(repeat)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        line = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
        out[system] = json.loads(line[-1][len(MARK):]) if line else \
            {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return out


def _can_pin() -> bool:
    from shutil import which
    return which("taskset") is not None and (not hasattr(os, "sched_getaffinity")
                                             or 1 in os.sched_getaffinity(0))


def checks(results: dict, fd: tuple) -> list:
    """(what, zygopy, reference, agrees) for each check of zygopy's gradients: against
    autograd (the same first derivative to 1e-12; second derivatives, made by two
    different iterations, to 1e-3), central differences and the closed forms of
    sqrt's derivatives (to 2e-3: the fixed point is found to a tolerance of 1e-4)."""
    z, a = results.get("zygopy", {}), results.get("autograd", {})
    exact = {"grad": 0.5 / 2.0 ** 0.5, "grad_grad": -0.25 / 2.0 ** 1.5}
    rows = []
    for key, cd, same in (("grad", fd[0], 1e-12), ("grad_grad", fd[1], 1e-3)):
        if key not in z:
            continue
        if key in a:
            rows.append((f"{key} vs autograd", z[key], a[key], abs(z[key] - a[key]) <= same))
        rows.append((f"{key} vs central differences", z[key], cd, abs(z[key] - cd) <= 2e-3))
        rows.append((f"{key} vs closed form", z[key], exact[key],
                     abs(z[key] - exact[key]) <= 2e-3))
    return rows


def table(results: dict, rows: list) -> str:
    z, a = results.get("zygopy", {}), results.get("autograd", {})
    out = ["| | zygopy | autograd | autograd / zygopy |", "|---|---:|---:|---:|"]
    for key, label in (("grad_ms", "`grad(sqrt)(2.0)`"),
                       ("grad_grad_ms", "`grad(grad(sqrt))(2.0)`")):
        zs = f"{z[key]:.3f} ms" if key in z else z.get("error", "n/a")
        as_ = f"{a[key]:.3f} ms" if key in a else a.get("error", "n/a")
        ratio = f"{a[key] / z[key]:.1f}x" if key in z and key in a else "n/a"
        out.append(f"| {label} | {zs} | {as_} | {ratio} |")
    if "run_example_s" in z and "run_example_s" in a:
        zs, as_ = z["run_example_s"] * 1e3, a["run_example_s"] * 1e3
        out.append(f"| the example's body, once (compiles; both orders) | {zs:.1f} ms | "
                   f"{as_:.1f} ms | {as_ / zs:.2f}x |")
    out += ["", "| check | zygopy | reference | agrees |", "|---|---:|---:|---|"]
    out += [f"| {w} | {zv!r} | {rv!r} | {'yes' if ok else 'NO'} |" for w, zv, rv, ok in rows]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.autograd_fixed_points")
    ap.add_argument("checkout", nargs="?", default=MIRROR if os.path.isdir(MIRROR) else None,
                    help="an autograd checkout (work tree or git directory)")
    ap.add_argument("--probe", choices=("zygopy", "autograd"), help=argparse.SUPPRESS)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    if a.checkout is None:
        ap.error("give the path of an autograd checkout")
    if a.probe:
        print(MARK + json.dumps(probe(a.probe, a.checkout, a.repeat)))
        return 0
    results = run_all(a.checkout, a.repeat)
    rows = checks(results, central_differences(a.checkout))
    print(table(results, rows))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"results": results, "checks": rows}, fh, indent=1)
    return 0 if rows and all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
