"""How many of HIPS/autograd's systematic numpy tests zygopy passes.

    python -m bench.autograd_systematic                      # every test, both backends
    python -m bench.autograd_systematic --only test_sum,test_dot --markdown
    python -m bench.autograd_systematic --json /tmp/systematic.json
    python -m bench.autograd_systematic --autograd-repo ~/src/autograd   # a checkout

autograd's tests/test_systematic.py and tests/numpy_utils.py are read at run time (git
mirror or checkout; nothing of them is copied here) and run against a stand-in
`autograd` whose numpy is numpy and whose `combo_check` records each `check(*arg_lists,
**kwarg_lists)` as the cases autograd would test (product of the argument lists, then
of the keyword values).  Cases with a complex argument are skipped and counted.  Each
real case becomes the source of a scalar loss as a user would write it, e.g.

    def loss(x0, w):
        return np.sum(np.transpose(x0, axes=[0, 2, 1]) * w)

(numbers, strings and tuples/lists of them inline, other values as arguments; `w` a
fixed random weight: a float for a scalar output, a tuple `ws` for a list output),
imported from a temporary module; `adjoint.pullback(loss, *args, backend=be)` and
`back(1.0)` (gradient() plus the value) run for be = interp and llvm.  A case passes
when the value equals CPython's and each differentiated argument's gradient matches
central differences of the CPython loss and (when importable) autograd's gradient of
the same source run with autograd.numpy.  A test passes when all its real cases do.
"""
from __future__ import annotations

import argparse
import ast
import copy
import importlib.util
import itertools
import json
import operator
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import types
import warnings
from collections import Counter

import numpy as np

MIRROR = "/work/.mirror/HIPS+autograd/repo"
TEST_FILES = ("tests/numpy_utils.py", "tests/test_systematic.py")
BACKENDS = ("interp", "llvm")
FD_STEP, FD_RTOL, FD_ATOL = 1e-6, 1e-5, 1e-6
AG_RTOL, AG_ATOL = 1e-7, 1e-9
VALUE_RTOL, VALUE_ATOL = 1e-9, 1e-12
# operator functions the tests pass as `fun`, as source text
OPERATORS = {operator.add: "({0} + {1})", operator.sub: "({0} - {1})",
             operator.mul: "({0} * {1})", operator.truediv: "({0} / {1})",
             operator.mod: "({0} % {1})", operator.pow: "({0} ** {1})"}


# ---------------------------------------------------------------- collecting the cases

def read_sources(repo: str) -> dict:
    """{basename: text} of the two test files, from a checkout or a bare git dir."""
    out = {}
    for path in TEST_FILES:
        if os.path.isfile(os.path.join(repo, path)):
            with open(os.path.join(repo, path)) as f:
                out[os.path.basename(path)] = f.read()
        else:
            out[os.path.basename(path)] = subprocess.run(
                ["git", "--git-dir", repo, "show", f"HEAD:{path}"],
                check=True, capture_output=True, text=True).stdout
    return out


def exec_module(name: str, source: str) -> types.ModuleType:
    """Run `source` as module `name` (registered, so that the test file imports it)."""
    mod = types.ModuleType(name)
    mod.__file__ = name + ".py"
    sys.modules[name] = mod
    exec(compile(source, mod.__file__, "exec"), mod.__dict__)  # noqa: S102 (autograd's tests)
    return mod


def load_tests(sources: dict, combo_check) -> types.ModuleType:
    """test_systematic as a module, imported with the stand-in autograd in place
    (sys.modules is left as it was)."""
    ag, util = types.ModuleType("autograd"), types.ModuleType("autograd.test_util")
    ag.__path__, ag.numpy, ag.test_util, util.combo_check = [], np, util, combo_check
    fakes = {"autograd": ag, "autograd.numpy": np, "autograd.numpy.random": np.random,
             "autograd.test_util": util}
    saved = {k: sys.modules.get(k) for k in [*fakes, "numpy_utils", "test_systematic"]}
    np.random.seed(0)
    try:
        sys.modules.update(fakes)
        exec_module("numpy_utils", sources["numpy_utils.py"])
        tests = exec_module("test_systematic", sources["test_systematic.py"])
    finally:
        for k, v in saved.items():
            sys.modules.pop(k, None) if v is None else sys.modules.__setitem__(k, v)
    return tests


def collect(sources: dict) -> tuple:
    """Run every test_* function once with a combo_check that records the cases.
    Returns (test names in file order, cases, {test: collection error})."""
    cases, test = [], [None]     # (test, fun, argnums, args, kwargs); the current test

    def combo_check(fun, argnums, *_, **__):
        def check(*arg_lists, **kwarg_lists):
            keys = list(kwarg_lists)
            for args in itertools.product(*arg_lists):
                for vals in itertools.product(*(kwarg_lists[k] for k in keys)):
                    cases.append((test[0], fun, tuple(argnums), args, dict(zip(keys, vals))))
        return check
    tests = load_tests(sources, combo_check)
    names = [n for n, v in vars(tests).items() if n.startswith("test_") and callable(v)]
    errors = {}
    for name in names:
        test[0] = name
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                getattr(tests, name)()
        except Exception as exc:  # noqa: BLE001 (the test then fails, saying why)
            errors[name] = "collection: " + describe(exc)
    return names, cases, errors


def is_complex(v) -> bool:
    if isinstance(v, (list, tuple)):
        return any(is_complex(e) for e in v)
    return isinstance(v, (complex, np.complexfloating)) or (
        isinstance(v, np.ndarray) and np.iscomplexobj(v))


def complex_case(case: tuple) -> bool:
    return is_complex(list(case[3]) + list(case[4].values()))


# ---------------------------------------------------------------- writing a loss

def literal(v) -> str | None:
    """Source text of a value a user would write inline, else None."""
    if v is None or v is Ellipsis or isinstance(v, (bool, int, str)):
        return repr(v)
    if isinstance(v, (float, np.floating)) and np.isfinite(v):
        return repr(float(v))
    if isinstance(v, np.integer):
        return repr(int(v))
    if isinstance(v, (list, tuple)):
        parts = [literal(e) for e in v]
        if None in parts:
            return None
        inner = ", ".join(parts) + ("," if isinstance(v, tuple) and len(v) == 1 else "")
        return f"[{inner}]" if isinstance(v, list) else f"({inner})"
    return None


def as_input(v):
    """Numbers stay Python floats; containers and arrays are copied."""
    if isinstance(v, (np.floating, np.ndarray)) and np.ndim(v) == 0 and v.dtype.kind == "f":
        return float(v)
    if isinstance(v, (list, tuple)):
        return type(v)(as_input(e) for e in v)
    return v.copy() if isinstance(v, np.ndarray) else v


class FunText:
    """Source text of a call of a test's `fun`: np.<name>(...), an operator
    expression, or the body of a lambda written in the test file."""

    def __init__(self, sources: dict):
        self.trees = {name: ast.parse(src) for name, src in sources.items()}
        self.np_names = {}
        for n in dir(np):
            self.np_names.setdefault(id(getattr(np, n)), []).append(n)

    def call(self, fun, test: str, args: list, kwargs: dict) -> str:
        if fun in OPERATORS and not kwargs:
            return OPERATORS[fun].format(*args)
        if getattr(fun, "__name__", "") == "<lambda>" and not kwargs:
            return "(" + self.lambda_body(fun, args) + ")"
        kw = [f"{k}={v}" for k, v in kwargs.items()]
        return f"np.{self.np_name(fun, test)}({', '.join(list(args) + kw)})"

    def np_name(self, fun, test: str) -> str:
        """The test's own spelling (np.abs, not np.absolute) when it is one."""
        names = self.np_names.get(id(fun), [])
        for want in (test[len("test_"):], getattr(fun, "__name__", "")):
            if want in names:
                return want
        return names[0] if names else getattr(fun, "__name__", "unknown")

    def lambda_body(self, fun, args: list) -> str:
        code = fun.__code__
        params = code.co_varnames[:code.co_argcount]
        for node in ast.walk(self.trees[os.path.basename(code.co_filename)]):
            if (isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno
                    and tuple(a.arg for a in node.args.args) == params):
                body = copy.deepcopy(node.body)
                for name in ast.walk(body):     # a Name's id is printed as it is
                    if isinstance(name, ast.Name) and name.id in params:
                        text = args[params.index(name.id)]
                        name.id = text if text.isidentifier() else f"({text})"
                return ast.unparse(body)
        raise LookupError(f"no source for the lambda at line {code.co_firstlineno}")


def write_loss(case: tuple, funtext: FunText, rng) -> tuple:
    """(source of `loss`, its inputs, positions of the differentiated inputs)."""
    test, fun, argnums, args, kwargs = case
    params, inputs, diff = [], [], []

    def operand(name, v, differentiated):
        text = None if differentiated else literal(v)
        if text is not None:
            return text
        if differentiated:
            diff.append(len(params))
        params.append(name)
        inputs.append(as_input(v))
        return name

    argtext = [operand(f"x{i}" if i in argnums else f"a{i}", a, i in argnums)
               for i, a in enumerate(args)]
    kwtext = {k: operand(f"k_{k}", v, False) for k, v in kwargs.items()}
    call = funtext.call(fun, test, argtext, kwtext)
    out = fun(*args, **kwargs)
    if isinstance(out, (list, tuple)):      # split family: one weight per piece
        params.append("ws")
        inputs.append(tuple(rng.standard_normal(np.shape(p)) for p in out))
        terms = " + ".join(f"np.sum(parts[{k}] * ws[{k}])" for k in range(len(out)))
        body = f"    parts = {call}\n    return {terms or '0.0'}\n"
    elif np.ndim(out) == 0:
        params.append("w")
        inputs.append(float(rng.standard_normal()))
        body = f"    return {call} * w\n"
    else:
        params.append("w")
        inputs.append(rng.standard_normal(np.shape(out)))
        body = f"    return np.sum({call} * w)\n"
    return f"def loss({', '.join(params)}):\n{body}", inputs, diff


# ---------------------------------------------------------------- references

def flat(v) -> np.ndarray:
    if isinstance(v, (list, tuple)):
        return np.concatenate([flat(e) for e in v]) if v else np.zeros(0)
    return np.ravel(np.asarray(v, dtype=float))


def rebuild(like, vec: np.ndarray):
    """A value shaped like `like` holding the numbers of `vec`."""
    if isinstance(like, (list, tuple)):
        ends = np.cumsum([0] + [flat(e).size for e in like])
        return type(like)(rebuild(e, vec[a:b]) for e, a, b in zip(like, ends, ends[1:]))
    return vec.reshape(like.shape).copy() if isinstance(like, np.ndarray) else float(vec[0])


def central_differences(loss, inputs: list, pos: int) -> np.ndarray:
    base = flat(inputs[pos])

    def at(j, step):
        vec = base.copy()
        vec[j] += step
        return float(loss(*inputs[:pos], rebuild(inputs[pos], vec), *inputs[pos + 1:]))
    return np.array([(at(j, FD_STEP) - at(j, -FD_STEP)) / (2 * FD_STEP)
                     for j in range(base.size)])


def autograd_grads(ag, body: str, inputs: list, diff: list):
    """autograd's gradient of each differentiated input, or None if it fails."""
    if ag is None:
        return None
    grad, scope = ag[0], {"np": ag[1]}
    try:
        exec(body, scope)  # noqa: S102 (the loss we wrote)
        return {p: flat(grad(scope["loss"], p)(*inputs)) for p in diff}
    except Exception:  # noqa: BLE001 (then no autograd reference for this case)
        return None


# ---------------------------------------------------------------- running zygopy

def describe(exc: BaseException, tmp: str = "") -> str:
    """'Type: first line of the message', the temporary module's path as loss.py."""
    text = str(exc).strip()
    if tmp:
        text = re.sub(re.escape(tmp) + r"/zy_systematic_\d+\.py", "loss.py", text)
    return f"{type(exc).__name__}: {(text.splitlines() or [''])[0]}"[:120]


def run_backend(loss, inputs: list, diff: list, ref: dict, backend: str, tmp: str) -> str | None:
    """None when value and gradients are right, else why not."""
    from adjoint import pullback
    try:
        y, back = pullback(loss, *as_input(inputs), backend=backend)
        grads = back(1.0)
    except Exception as exc:  # noqa: BLE001 (any failure is a finding)
        return describe(exc, tmp)
    try:
        if not np.allclose(float(y), ref["value"], rtol=VALUE_RTOL, atol=VALUE_ATOL):
            return "wrong value"
        got = {p: flat(grads[p]) for p in diff}
    except (TypeError, ValueError, IndexError):
        return "wrong value or gradient type"
    for p, g in got.items():
        if g.shape != ref["fd"][p].shape or not np.allclose(g, ref["fd"][p], FD_RTOL, FD_ATOL):
            return "wrong gradient"
        if ref["ag"] is not None and not np.allclose(g, ref["ag"][p], AG_RTOL, AG_ATOL):
            return "differs from autograd"
    return None


def run_case(n: int, case: tuple, funtext: FunText, tmp: str, ag) -> dict:
    """One case on every backend, warnings silenced; never raises."""
    record = {"test": case[0], "source": None, "autograd": None}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            body, inputs, diff = write_loss(case, funtext, np.random.default_rng(n))
            record["source"], name = body, f"zy_systematic_{n}"
            with open(os.path.join(tmp, name + ".py"), "w") as f:
                f.write("import numpy as np\n\n\n" + body)
            spec = importlib.util.spec_from_file_location(name, f.name)
            mod = sys.modules[name] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            ref = {"value": float(mod.loss(*inputs)),
                   "fd": {p: central_differences(mod.loss, inputs, p) for p in diff},
                   "ag": autograd_grads(ag, body, inputs, diff)}
            record["autograd"] = ref["ag"] is not None
            for be in BACKENDS:
                record[be] = run_backend(mod.loss, inputs, diff, ref, be, tmp)
            sys.modules.pop(name, None)
        except Exception as exc:  # noqa: BLE001 (one bad case must not stop the run)
            for be in BACKENDS:
                record.setdefault(be, "harness: " + describe(exc, tmp))
    return record


# ---------------------------------------------------------------- summary and output

def summarise(names: list, cases: list, errors: dict, records: dict) -> list:
    rows = []
    for name in names:
        mine = [c for c in cases if c[0] == name]
        real = [records[id(c)] for c in mine if id(c) in records]
        row = {"test": name, "cases": len(real), "complex": sum(map(complex_case, mine))}
        for be in BACKENDS:
            fails = [r[be] for r in real if r[be] is not None]
            first = errors.get(name) or (fails[0] if fails else None)
            if not real and first is None:
                first = "no real cases"
            row[be] = {"passed": len(real) - len(fails), "ok": first is None, "reason": first}
        rows.append(row)
    return rows


def table(headers: list, rows: list, markdown: bool) -> str:
    cells = [[str(c) for c in r] for r in rows]
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        return "\n".join(lines + ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |"
                                   for r in cells])
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in cells])


def report(rows: list, records: list, markdown: bool, has_ag: bool) -> str:
    verdict = lambda cell, n: "pass" if cell["ok"] else f"{cell['passed']}/{n}"
    out = [table(["test", "cases", "complex", "interp", "llvm", "first llvm failure"],
                 [[r["test"], r["cases"], r["complex"], verdict(r["interp"], r["cases"]),
                   verdict(r["llvm"], r["cases"]), r["llvm"]["reason"] or ""]
                  for r in rows], markdown)]
    ok = {be: sum(r[be]["ok"] for r in rows) for be in BACKENDS}
    case_ok = {be: sum(rec[be] is None for rec in records) for be in BACKENDS}
    out.append(f"\ninterp: {ok['interp']}/{len(rows)} test functions, "
               f"llvm: {ok['llvm']}/{len(rows)}")
    out.append(f"cases: interp {case_ok['interp']}/{len(records)}, llvm {case_ok['llvm']}/"
               f"{len(records)}; {sum(r['complex'] for r in rows)} complex cases skipped; "
               f"reference: central differences"
               f"{' and autograd' if has_ag else ' only (autograd not importable)'}")
    return "\n".join(out + histogram(rows, records, markdown))


def normalise(reason: str) -> str:
    return re.sub(r"\d+", "N", reason)


def kind(reason: str) -> str:
    """Coarser: callee names and IR statements masked too."""
    return re.sub(r"%N = .*", "<statement>", re.sub(r"numpy\.\w+", "numpy.<f>", normalise(reason)))


def histogram(rows: list, records: list, markdown: bool) -> list:
    """llvm failure reasons, by kind, then in full (numbers stripped)."""
    out = []
    for title, key in (("by kind", kind), ("in full, numbers stripped", normalise)):
        tests = Counter(key(r["llvm"]["reason"]) for r in rows if not r["llvm"]["ok"])
        cases = Counter(key(rec["llvm"]) for rec in records if rec["llvm"])
        shown = sorted(set(tests) | (set(cases) if key is kind else set()),
                       key=lambda k: (-tests[k], -cases[k], k))
        out.append(f"\nllvm failure reasons, {title} (tests: first failure of a test; "
                   "cases: every failing case)\n")
        out.append(table(["tests", "cases", "reason"], [[tests[k], cases[k], k] for k in shown],
                         markdown))
        rest = [k for k in cases if k not in shown]
        if rest:
            out.append(f"\n(+{len(rest)} reasons that are no test's first failure, "
                       f"{sum(cases[k] for k in rest)} cases: see --json)")
    return out


# ---------------------------------------------------------------- command

def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.autograd_systematic",
                                description=__doc__.split("\n")[0])
    p.add_argument("--autograd-repo", default=MIRROR,
                   help=f"autograd checkout or bare git dir (default {MIRROR})")
    p.add_argument("--only", default="", help="comma-separated test functions (default: all)")
    p.add_argument("--json", metavar="FILE", help="also write every case and verdict as JSON")
    p.add_argument("--markdown", action="store_true", help="print Markdown tables")
    return p.parse_args(argv)


def main(argv=None) -> int:
    opts = parse_args(argv)
    try:    # the real autograd, imported before collect() puts its stand-in in place
        import autograd
        import autograd.numpy as agnp
        ag = (autograd.grad, agnp)
    except ImportError:
        ag = None
    sources = read_sources(os.path.expanduser(opts.autograd_repo))
    names, cases, errors = collect(sources)     # all of them: same random inputs
    if opts.only:
        wanted = opts.only.split(",")
        if set(wanted) - set(names):
            sys.exit(f"unknown test functions: {', '.join(sorted(set(wanted) - set(names)))}")
        names = [n for n in names if n in wanted]
    try:
        import jit  # noqa: F401  registers backend="llvm", entry point or not
    except ImportError as exc:
        print(f"note: import jit failed ({describe(exc)}); llvm cases will fail", file=sys.stderr)
    funtext, tmp = FunText(sources), tempfile.mkdtemp(prefix="zy_systematic_")
    records, start = {}, time.time()
    try:
        for name in names:
            mine = [c for c in cases if c[0] == name and not complex_case(c)]
            for c in mine if name not in errors else []:
                records[id(c)] = run_case(len(records), c, funtext, tmp, ag)
            print(f"[{time.time() - start:6.1f}s] {name}: {len(mine)} cases",
                  file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = summarise(names, cases, errors, records)
    print(report(rows, list(records.values()), opts.markdown, ag is not None))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"autograd": ag is not None, "tests": rows,
                       "cases": list(records.values())}, f, indent=1)
    return 0


if __name__ == "__main__":
    if __package__ in (None, ""):     # python bench/autograd_systematic.py
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
