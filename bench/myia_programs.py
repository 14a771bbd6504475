"""zygopy on myia's test programs, read from a myia checkout when it runs.

    python -m bench.myia_programs PATH_TO_MYIA          # a checkout, or a bare mirror
    python -m bench.myia_programs PATH --only test_if,mlp --json out.json

Which programs (the rule, applied by reading the sources with `ast`):

1. every function of myia's tests/test_grad.py decorated with its gradient test
   helper (the function `myia_function_test(..., id="grad")` decorates, directly or
   inside `mt(...)`), with every argument list the decorators give it;
2. every function defined inside a tests/test_grad.py test and passed to myia's
   `grad`/`value_and_grad` there, at the arguments of its first such call (the test
   body is run up to that call);
3. the function each of examples/{mlp,rnn,lstm,vae,policy_gradient}.py passes to
   `value_and_grad`, at the arguments of the example's first training step (its
   `test_run()`, else `run()`; policy_gradient, whose episodes need `gym`, gets one
   batch of observations, one-hot actions and discounted rewards made here).

Excluded, with the reason printed: a program whose code calls a myia-only operation
(myia's functional random state: `random_initialize`, `random_uint32`, `uniform`,
`array_cast`), and a rule-2 program whose arguments are all Python ints (a Python int
carries no derivative).  That leaves 40 programs.

Each program runs unchanged: only its imports are routed to `bench.myia_standins`.
For each, zygopy's gradient w.r.t. every positional argument (`gradient`, or
`pullback` and `back(ones)` for an array output, whose sum is then the objective)
is taken with the default backend and with `backend="interp"`, and checked against
central differences (`bench.myia_check`).  "compiled" means the default backend ran
without a `JitFallbackWarning`.  Times: the first call (lowering and compiling
included; the disk cache is off; wall-clock) and the median CPU time
(`time.process_time`) of later calls.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import types
import warnings

os.environ.setdefault("ZYGOPY_CACHE", "0")

import numpy as np  # noqa: E402

from bench import myia_standins as standins  # noqa: E402
from bench.myia_check import fd_check  # noqa: E402

EXAMPLES = ("mlp", "rnn", "lstm", "vae", "policy_gradient")
EXTRA_FILES = ("tests/test_model.py", "tests/test_algos.py",
               "tests/operations/test_raise_assert.py")
MYIA_ONLY = ("random_initialize", "random_uint32", "uniform", "array_cast")
TIMEOUT_S = 120


# ---------------------------------------------------------------------------------
# reading the checkout


class Checkout:
    """Files of a myia checkout, or of a bare git mirror (read with `git show`)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.bare = not os.path.isdir(os.path.join(path, "tests")) and \
            os.path.isfile(os.path.join(path, "HEAD"))

    def read(self, rel: str) -> str:
        if self.bare:
            return subprocess.run(["git", "--git-dir", self.path, "show", f"HEAD:{rel}"],
                                  check=True, capture_output=True, text=True).stdout
        with open(os.path.join(self.path, rel), encoding="utf-8") as fh:
            return fh.read()


# ---------------------------------------------------------------------------------
# finding the programs in the sources


def _called_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        f = node.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    return None


def _calls(tree: ast.AST) -> set:
    return {_called_name(n) for n in ast.walk(tree) if isinstance(n, ast.Call)} - {None}


def grad_helper_name(tree: ast.Module) -> str:
    """The name of the test helper that `myia_function_test(..., id="grad")` makes."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                if _called_name(d) == "myia_function_test" and any(
                        k.arg == "id" and getattr(k.value, "value", None) == "grad"
                        for k in d.keywords):
                    return node.name
    raise SystemExit("tests/test_grad.py: no myia_function_test(..., id='grad') helper")


def decorated_programs(tree: ast.Module, helper: str) -> list:
    """[(name, [argument source, ...])] of the functions decorated with `helper`."""
    out = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        cases = []
        for d in node.decorator_list:
            inner = d.args if _called_name(d) == "mt" else [d]
            cases += [ast.unparse(c)[len(helper):] for c in inner if _called_name(c) == helper]
        if cases:
            out.append((node.name, cases, node))
    return out


def inbody_programs(tree: ast.Module, skip: set) -> list:
    """[(test name, inner function name)]: a function defined in a test's body and
    passed to `grad`/`value_and_grad` there."""
    out = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name in skip:
            continue
        local = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        for n in ast.walk(node):
            if _called_name(n) in ("grad", "value_and_grad") and n.args and \
                    isinstance(n.args[0], ast.Name) and n.args[0].id in local:
                out.append((node.name, n.args[0].id))
                break
    return out


def _banned_reason(banned: set):
    return f"calls myia-only {', '.join(sorted(banned))}" if banned else None


def myia_only_calls(tree: ast.AST) -> set:
    """The myia-only operations `tree` calls, and `array_reduce` where a call of it is
    not the sum to () that the stand-in is written for."""
    found = _calls(tree) & set(MYIA_ONLY)
    for n in ast.walk(tree):
        if _called_name(n) == "array_reduce" and not (
                len(n.args) == 3 and getattr(n.args[0], "id", None) == "scalar_add"
                and isinstance(n.args[2], ast.Tuple) and not n.args[2].elts):
            found.add("array_reduce (other than a sum to ())")
    return found


# ---------------------------------------------------------------------------------
# loading a source as a module


def load_module(name: str, source: str, folder: str, package: str = "") -> types.ModuleType:
    """Execute `source` as module `name` (its file written under `folder`, so that
    tracebacks and zygopy's messages have lines)."""
    path = os.path.join(folder, name.replace(".", "_") + ".py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(source)
    mod = types.ModuleType(name)
    mod.__file__ = path
    mod.__package__ = package or name.rpartition(".")[0]
    sys.modules[name] = mod
    exec(compile(source, path, "exec"), mod.__dict__)
    return mod


def capture(run):
    """(fn, args) of the first myia grad call `run()` makes, or None."""
    try:
        run()
    except standins.Captured as c:
        return c.fn, c.args
    return None


class Program:
    """One differentiated function and the argument lists it is checked at."""

    def __init__(self, name: str, origin: str, fn=None, cases=(), excluded=None) -> None:
        self.name, self.origin, self.fn = name, origin, fn
        self.cases = list(cases)        # [(args, checked flags)]
        self.excluded = excluded


def _case(args: tuple) -> tuple:
    checked = tuple(not isinstance(a, standins.NoTestGrad) for a in args)
    return tuple(a.value if isinstance(a, standins.NoTestGrad) else a for a in args), checked


def test_grad_programs(src: str, folder: str) -> list:
    tree = ast.parse(src)
    helper = grad_helper_name(tree)
    mod = load_module("myia_tests.test_grad", src, folder)
    progs = []
    decorated = decorated_programs(tree, helper)
    for name, _, node in decorated:
        fn = getattr(mod, name)
        banned = myia_only_calls(node)
        progs.append(Program(name, "tests/test_grad.py", fn,
                             [_case(c.args) for c in fn.__dict__.get("myia_grad_cases", [])],
                             f"calls myia-only {', '.join(sorted(banned))}" if banned else None))
    for test, inner in inbody_programs(tree, {n for n, _, _ in decorated}):
        got = capture(lambda: getattr(mod, test)(backend="stand-in"))
        label = f"{test}.{inner}"
        if got is None:
            progs.append(Program(label, "tests/test_grad.py", excluded="no grad call reached"))
            continue
        fn, args = got
        ints = all(type(a) is int for a in args)
        progs.append(Program(label, "tests/test_grad.py", fn, [_case(args)],
                             "its arguments are Python ints" if ints else None))
    return progs


def example_program(name: str, src: str, folder: str) -> Program:
    tree = ast.parse(src)
    origin = f"examples/{name}.py"
    banned = myia_only_calls(tree)
    if banned:
        return Program(name, origin, excluded=f"calls myia-only {', '.join(sorted(banned))}")
    mod = load_module(f"myia_examples.{name}", src, folder)
    driver = getattr(mod, "test_run", None) or getattr(mod, "run", None) or \
        (lambda: one_policy_batch(mod))
    got = capture(driver)
    if got is None:
        return Program(name, origin, excluded="no value_and_grad call reached")
    fn, args = got
    return Program(f"{name}.{fn.__name__}", origin, fn, [_case(args)])


def one_policy_batch(mod) -> None:
    """policy_gradient's update step on one episode of 12 steps: observations,
    one-hot actions and discounted rewards (rewards of 1, its GAMMA), float32 as
    its run_episode makes them."""
    rng = np.random.default_rng(3)
    steps = 12
    xs = rng.uniform(-0.2, 0.2, (steps, mod.INPUT_SIZE)).astype("float32")
    ys = np.eye(mod.OUTPUT_SIZE, dtype="float32")[rng.integers(0, mod.OUTPUT_SIZE, steps)]
    adv = np.array([[sum(mod.GAMMA ** k for k in range(steps - t))] for t in range(steps)],
                   dtype="float32")
    mod.step_update(mod.model, xs, ys, adv)


def extra_programs(checkout: Checkout, folder: str) -> list:
    """With --extra: the functions that other test files decorate with test_grad's
    helper (imported from it), as rule 1 takes them.  Not among the 40."""
    progs = []
    for rel in EXTRA_FILES:
        src = checkout.read(rel)
        tree = ast.parse(src)
        name = "myia_tests." + rel[len("tests/"):-len(".py")].replace("/", ".")
        package = name.rpartition(".")[0]
        for node in ast.walk(tree):     # sibling test modules it imports: placeholders
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
                if target not in sys.modules:
                    sys.modules[target] = standins.StandinModule(target, {})
        mod = load_module(name, src, folder, package)
        for fname, _, node in decorated_programs(tree, "gradient"):
            fn = getattr(mod, fname)
            banned = myia_only_calls(node)
            progs.append(Program(fname, rel, fn,
                                 [_case(c.args) for c in fn.__dict__.get("myia_grad_cases", [])],
                                 _banned_reason(banned)))
    return progs


def collect(checkout: Checkout, folder: str, extra: bool = False) -> list:
    standins.install(checkout.read("myia/testing/common.py"))
    for pkg in ("myia_tests", "myia_tests.operations", "myia_examples"):
        sys.modules.setdefault(pkg, types.ModuleType(pkg)).__path__ = []
    progs = test_grad_programs(checkout.read("tests/test_grad.py"), folder)
    for name in EXAMPLES:
        progs.append(example_program(name, checkout.read(f"examples/{name}.py"), folder))
    if extra:
        progs += extra_programs(checkout, folder)
    return progs


# ---------------------------------------------------------------------------------
# differentiating and checking


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout(f"over {TIMEOUT_S} s")


def zygopy_gradient(fn, args: tuple, backend: str) -> tuple:
    """zygopy's gradient of total(fn(*args)) w.r.t. each positional argument."""
    from adjoint import gradient, pullback
    y = fn(*args)
    if isinstance(y, (float, int, np.floating)) or (isinstance(y, np.ndarray) and y.ndim == 0):
        return gradient(fn, *args, backend=backend)
    out, back = pullback(fn, *args, backend=backend)
    return back(np.ones_like(out))


def run_backend(fn, args: tuple, backend: str) -> tuple:
    """(gradient or None, error or None, fell back?, first-call ms)."""
    from jit.pullback.backend import BACKEND, JitFallbackWarning
    BACKEND.warned.clear()      # it warns once per reason: every program is asked anew
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        try:
            g, err = zygopy_gradient(fn, args, backend), None
        except Exception as exc:  # noqa: BLE001 (every failure is a table row)
            g, err = None, f"{type(exc).__name__}: {exc}"
        ms = (time.perf_counter() - t0) * 1e3
    fell = [w for w in seen if issubclass(w.category, JitFallbackWarning)]
    return g, err, (str(fell[0].message) if fell else None), ms


def backend_refuses(fn, args: tuple) -> str | None:
    """Why `backend="llvm"` (which never falls back) refuses the program, or None."""
    try:
        zygopy_gradient(fn, args, "llvm")
    except Exception as exc:  # noqa: BLE001
        return f"llvm: {type(exc).__name__}: {exc}"
    return None


def steady_ms(fn, args: tuple, budget_s: float = 0.3) -> float:
    times, start = [], time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # check() recorded whether it fell back
        return _median_ms(fn, args, budget_s)


def _median_ms(fn, args: tuple, budget_s: float) -> float:
    times, start = [], time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < budget_s and len(times) < 200):
        t0 = time.process_time()        # CPU time: steadier on a shared machine
        zygopy_gradient(fn, args, "auto")
        times.append(time.process_time() - t0)
    return statistics.median(times) * 1e3


def check(prog: Program) -> dict:
    row = {"program": prog.name, "origin": prog.origin, "right": True, "interp": True,
           "compiled": True, "error": None, "first_ms": None, "call_ms": None}
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT_S)
    try:
        for k, (args, checked) in enumerate(prog.cases):
            g, err, fell, ms = run_backend(prog.fn, args, "auto")
            if k == 0:
                row["first_ms"] = ms
            if not fell and backend_refuses(prog.fn, args):
                fell = backend_refuses(prog.fn, args)
            if fell:
                row["compiled"] = False
                row["fallback"] = fell
            why = err or fd_check(prog.fn, args, checked, g)
            if why and row["right"]:
                row["right"] = False
                row["error"] = f"case {k}: {why}" if len(prog.cases) > 1 else why
            gi, erri, _, _ = run_backend(prog.fn, args, "interp")
            whyi = erri or fd_check(prog.fn, args, checked, gi)
            if whyi and row["interp"]:
                row["interp"] = False
                row["interp_error"] = whyi
        if row["right"]:
            row["call_ms"] = steady_ms(prog.fn, prog.cases[0][0])
    except Timeout as exc:
        row.update(right=False, interp=False, error=f"Timeout: {exc}")
    finally:
        signal.alarm(0)
    if not row["right"]:
        row["compiled"] = row["compiled"] and not row["error"]
    return row


# ---------------------------------------------------------------------------------
# the table


def _short(text, width: int = 90) -> str:
    text = (text or "").replace("\n", " ")
    return text if len(text) <= width else text[:width - 3] + "..."


def print_table(rows: list, excluded: list, markdown: bool) -> None:
    head = ("program", "right", "interp", "compiled", "first ms", "call ms", "error")
    lines = []
    for r in rows:
        note = r["error"] or (("fallback: " + r["fallback"]) if r.get("fallback") else "")
        lines.append((r["program"], "yes" if r["right"] else "NO",
                      "yes" if r["interp"] else "NO", "yes" if r["compiled"] else "no",
                      f"{r['first_ms']:.1f}" if r["first_ms"] is not None else "-",
                      f"{r['call_ms']:.3f}" if r["call_ms"] is not None else "-",
                      _short(note)))
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for ln in lines:
            print("| " + " | ".join(ln) + " |")
    else:
        widths = [max(len(h), *(len(ln[i]) for ln in lines)) for i, h in enumerate(head)]
        fmt = "  ".join(f"{{:{w}}}" for w in widths[:-1]) + "  {}"
        print(fmt.format(*head))
        for ln in lines:
            print(fmt.format(*ln))
    n = len(rows)
    print(f"\nright by default {sum(r['right'] for r in rows)}/{n}, "
          f"compiled {sum(r['right'] and r['compiled'] for r in rows)}/{n}, "
          f"right in the interpreter {sum(r['interp'] for r in rows)}/{n}")
    for p in excluded:
        print(f"excluded: {p.name} ({p.origin}): {p.excluded}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("myia", help="a myia checkout, or a bare git mirror of one")
    ap.add_argument("--only", help="comma-separated program names (prefixes)")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--extra", action="store_true",
                    help="also the programs of test_model, test_algos and test_raise_assert "
                         "(a second table, not among the 40)")
    opts = ap.parse_args(argv)
    import jit  # noqa: F401  (registers backend="llvm" where zygopy is not installed)
    with tempfile.TemporaryDirectory(prefix="myia_programs_") as folder:
        progs = collect(Checkout(opts.myia), folder, opts.extra)
        chosen = [p for p in progs if p.excluded is None]
        if opts.only:
            keys = opts.only.split(",")
            chosen = [p for p in chosen if any(p.name.startswith(k) for k in keys)]
        rows = []
        for p in chosen:
            rows.append(check(p))
            print(f"  {p.name}: {'ok' if rows[-1]['right'] else 'WRONG'}", file=sys.stderr)
        main_rows = [r for r in rows if r["origin"] not in EXTRA_FILES]
        print_table(main_rows, [p for p in progs if p.excluded and p.origin not in EXTRA_FILES],
                    opts.markdown)
        if len(main_rows) < len(rows):
            print("\nother test files (--extra):")
            print_table([r for r in rows if r["origin"] in EXTRA_FILES],
                        [p for p in progs if p.excluded and p.origin in EXTRA_FILES],
                        opts.markdown)
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
