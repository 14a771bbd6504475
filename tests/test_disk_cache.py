"""The disk cache of compiled code (jit/disk_cache.py, jit/runtime/symbols.py).

Each test runs fresh Python processes on a cache folder of its own, as a user who
starts a script twice does: the second process loads the object code the first one
wrote, and must give what it gave (values, gradients, errors with their messages and
lines).  A change to a callee in another module, or to a global the code reads, gives
a new key; a corrupt entry is ignored with a warning and written again; processes
writing the same entry at once leave one valid entry."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(folder: str, script: str, cache: str, env: dict = None) -> dict:
    """Run `script` (it prints one JSON line last) in a fresh process."""
    folder = str(folder)
    path = os.path.join(folder, "main.py")
    with open(path, "w") as fh:
        fh.write(script)
    full = dict(os.environ, ZYGOPY_CACHE_DIR=cache, PYTHONPATH=ROOT + os.pathsep + folder)
    full.pop("ZYGOPY_CACHE", None)
    full.update(env or {})
    out = subprocess.run([sys.executable, path], capture_output=True, text=True, env=full,
                         cwd=folder, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


_REPORT = """
import json, warnings
from jit import disk_cache
def report(**values):
    print(json.dumps(dict(values, stats=disk_cache.STATS)))
"""

_PROGRAM = _REPORT + """
import math
import adjoint, jit
from helpers import scale

def loss(x, y):
    s = 0.0
    for i in range(4):
        s = s + scale(x) * y ** 2 / (i + 1.0)
    return s

@jit.jit
def ratio(a, b):
    return a / b if b != 0.0 else math.log(b)   # a domain error: its site is cached too

def check(a, b):
    try:
        return ["ok", ratio(a, b)]
    except ValueError as e:
        return ["ValueError", str(e)]

with warnings.catch_warnings():
    warnings.simplefilter("error")      # a CacheWarning would fail the run
    report(grad=adjoint.gradient(loss, 1.5, 2.0),
           value=adjoint.value_and_grad(loss, 1.5, 2.0)[0],
           ok=check(1.0, 4.0), error=check(1.0, 0.0))
"""


def _write(folder: str, name: str, text: str) -> None:
    with open(os.path.join(folder, name), "w") as fh:
        fh.write(textwrap.dedent(text))


def test_a_second_process_loads_what_the_first_compiled(tmp_path):
    cache = str(tmp_path / "cache")
    _write(tmp_path, "helpers.py", "def scale(x):\n    return 2.0 * x\n")
    first = _run(tmp_path, _PROGRAM, cache)
    second = _run(tmp_path, _PROGRAM, cache)
    # 3 entries: loss's gradient, its value_and_grad, ratio's primal (+ runtime modules)
    assert first["stats"]["written"] >= 3 and first["stats"]["loaded"] == 0
    assert second["stats"]["written"] == 0 and second["stats"]["loaded"] >= 3
    h = sum(1.0 / (i + 1.0) for i in range(4))      # loss = 2x y^2 h
    assert first["grad"] == pytest.approx([2.0 * 2.0 ** 2 * h, 2.0 * 1.5 * 2 * 2.0 * h])
    assert first["ok"] == ["ok", 0.25]
    assert first["error"][0] == "ValueError" and "main.py" in first["error"][1]
    for k in ("grad", "value", "ok", "error"):   # the error's message and line too
        assert second[k] == first[k], k


def test_a_changed_callee_in_another_module_is_compiled_again(tmp_path):
    cache = str(tmp_path / "cache")
    _write(tmp_path, "helpers.py", "def scale(x):\n    return 2.0 * x\n")
    before = _run(tmp_path, _PROGRAM, cache)
    _write(tmp_path, "helpers.py", "def scale(x):\n    return 3.0 * x * x\n")
    after = _run(tmp_path, _PROGRAM, cache)
    h = sum(1.0 / (i + 1.0) for i in range(4))      # loss = 3x^2 y^2 h
    assert after["grad"] == pytest.approx([6.0 * 1.5 * 2.0 ** 2 * h, 3.0 * 1.5 ** 2 * 2 * 2.0 * h])
    assert after["grad"] != before["grad"]
    assert after["stats"]["written"] >= 2       # loss's entries again; ratio's is loaded
    assert after["stats"]["loaded"] >= 1


def test_a_changed_global_constant_is_compiled_again(tmp_path):
    cache = str(tmp_path / "cache")
    script = _REPORT + textwrap.dedent("""
    import adjoint
    from helpers import RATE
    def f(x):
        return RATE * x * x
    report(grad=adjoint.gradient(f, 3.0))
    """)
    _write(tmp_path, "helpers.py", "RATE = 2.0\n")
    assert _run(tmp_path, script, cache)["grad"] == [12.0]
    _write(tmp_path, "helpers.py", "RATE = 5.0\n")
    assert _run(tmp_path, script, cache)["grad"] == [30.0]


def test_a_corrupt_entry_is_ignored_with_a_warning_and_written_again(tmp_path):
    cache = str(tmp_path / "cache")
    _write(tmp_path, "helpers.py", "def scale(x):\n    return 2.0 * x\n")
    good = _run(tmp_path, _PROGRAM, cache)
    entries = [os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs
               if f.startswith("main.loss.gradient")]
    assert len(entries) == 1
    with open(entries[0], "r+b") as fh:      # a torn write: half the entry
        data = fh.read()
        fh.seek(0)
        fh.truncate()
        fh.write(data[: len(data) // 2])
    script = _PROGRAM.replace('simplefilter("error")', 'simplefilter("always")').replace(
        "report(grad", "caught = []\n    warnings.showwarning = lambda m, *a, **k: "
        "caught.append(str(m))\n    report(warned=caught, grad")
    again = _run(tmp_path, script, cache)
    assert again["grad"] == good["grad"]
    assert any("ignoring the unreadable cache entry" in w for w in again["warned"])
    assert again["stats"]["ignored"] == 1 and again["stats"]["written"] == 1
    third = _run(tmp_path, _PROGRAM, cache)      # the entry was written again, whole
    assert third["stats"]["written"] == 0 and third["grad"] == good["grad"]


def test_processes_writing_the_same_entry_at_once(tmp_path):
    cache = str(tmp_path / "cache")
    _write(tmp_path, "helpers.py", "def scale(x):\n    return 2.0 * x\n")
    _write(tmp_path, "main.py", _PROGRAM)   # (no indentation: dedent keeps it)
    env = dict(os.environ, ZYGOPY_CACHE_DIR=cache, PYTHONPATH=ROOT + os.pathsep + str(tmp_path))
    procs = [subprocess.Popen([sys.executable, str(tmp_path / "main.py")], env=env,
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    results = [json.loads(o.strip().splitlines()[-1]) for o, _ in outs]
    assert all(r["grad"] == results[0]["grad"] for r in results)
    names = [f for _, _, fs in os.walk(cache) for f in fs]
    assert not [f for f in names if f.startswith(".zyc-")]     # no temporary file left
    assert len([f for f in names if f.startswith("main.loss.gradient")]) == 1
    after = _run(tmp_path, _PROGRAM, cache)
    assert after["stats"]["written"] == 0 and after["stats"]["ignored"] == 0
    assert after["grad"] == results[0]["grad"]


def test_the_cache_can_be_turned_off(tmp_path):
    cache = str(tmp_path / "cache")
    _write(tmp_path, "helpers.py", "def scale(x):\n    return 2.0 * x\n")
    off = _run(tmp_path, _PROGRAM, cache, {"ZYGOPY_CACHE": "0"})
    assert off["stats"] == {"loaded": 0, "written": 0, "ignored": 0}
    assert not os.path.exists(cache) or not any(fs for _, _, fs in os.walk(cache))


def test_what_is_not_cached(tmp_path):
    """Code that addresses a module-level array or a closure's cells is compiled in
    every process (its values may change); it still runs."""
    cache = str(tmp_path / "cache")
    script = _REPORT + textwrap.dedent("""
    import numpy as np
    import adjoint, jit
    W = np.array([1.0, 2.0, 3.0])
    @jit.jit
    def weighted(x):
        return x * W[1]
    def outer(k):
        def inner(x):
            return k * x
        return jit.jit(inner)
    report(a=weighted(2.0), b=outer(3.0)(2.0))
    """)
    runs = [_run(tmp_path, script, cache) for _ in range(2)]
    for got in runs:
        assert got["a"] == 4.0 and got["b"] == 6.0
    # only the runtime's own module (the arena and the per-thread state, which every
    # entry calls) goes through the cache; neither user function does
    assert runs[0]["stats"]["written"] <= 1 and runs[1]["stats"]["written"] == 0
    assert runs[1]["stats"]["loaded"] == runs[0]["stats"]["written"]


_CORPUS = _REPORT + """
import copy, pickle, sys
import corpus
import jit
from adjoint import value_and_grad
cases, _ = corpus.load()
out = {}
def outcome(fn, args):
    try:
        return ("ok", repr(fn(*copy.deepcopy(args))))
    except Exception as e:  # noqa: BLE001
        return ("error", type(e).__name__, str(e))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for case in cases:
        for k, args in enumerate(case.args):
            out[f"{case.id}/{k}/primal"] = outcome(jit.jit(case.func), args)
            out[f"{case.id}/{k}/grad"] = outcome(
                lambda *a: value_and_grad(case.func, *a, backend="llvm"), args)
with open(sys.argv[0] + ".out", "wb") as fh:
    pickle.dump(out, fh)
report(n=len(out))
"""


def test_the_corpus_gives_the_same_results_from_the_cache(tmp_path):
    """Differential: every corpus function, primal and one-call gradient, compiled in
    one process and loaded in the next, gives the same values and the same errors
    (types and messages, file and line included)."""
    import pickle
    cache = str(tmp_path / "cache")
    tests = os.path.dirname(os.path.abspath(__file__))
    env = {"PYTHONPATH": os.pathsep.join([ROOT, tests, str(tmp_path)])}
    first = _run(tmp_path, _CORPUS, cache, env)
    with open(tmp_path / "main.py.out", "rb") as fh:
        compiled = pickle.load(fh)
    second = _run(tmp_path, _CORPUS, cache, env)
    with open(tmp_path / "main.py.out", "rb") as fh:
        loaded = pickle.load(fh)
    assert first["n"] == second["n"] > 300
    assert second["stats"]["loaded"] >= 200, second["stats"]
    assert second["stats"]["written"] == 0, second["stats"]
    diff = {k: (compiled[k], loaded[k]) for k in compiled if compiled[k] != loaded[k]}
    assert not diff, list(diff.items())[:5]


def _errors(x, n):
    label = "pos" if x > 0 else "neg"
    if label == "pos":
        return x / n
    return np.sum(np.tanh(np.ones(n) * x))


def test_no_process_address_is_a_literal_in_compiled_code():
    """Every address of this process (the error record, the arena, runtime and C-API
    functions, Python objects) and every site and string id is a named symbol, so the
    object code is the same in every process; none is an integer literal."""
    import re

    import jit
    from jit.runtime import native, symbols

    f = jit.jit(_errors)
    assert f(2.0, 4) == 0.5
    text = jit.code_llvm(f, 2.0, 4, optimized=False).text
    big = [int(v) for v in re.findall(r"\bi64 (-?\d+)", text) if abs(int(v)) > 1 << 32]
    assert not big, big[:5]
    used = symbols.referenced(text)
    assert symbols.cacheable(used)
    kinds = {recipe[0] for recipe in used.values()}
    assert {"rt", "site", "str", "obj", "capi"} <= kinds, kinds
    for name, recipe in used.items():     # each recipe finds the same value again
        if recipe[0] in ("rt", "capi", "str", "obj", "const", "dtype"):
            assert symbols._resolve(recipe) == symbols._resolve(recipe)
    site = next(r for r in used.values() if r[0] == "site" and r[2] == "ZeroDivisionError")
    sid = symbols._resolve(site)
    assert native.SITES[sid].exc is ZeroDivisionError and sid >= 1
    with pytest.raises(ZeroDivisionError):     # (rerun by CPython: its own message)
        f(1.0, 0)


def test_where_entries_go(tmp_path):
    """Beside the source in `__pycache__` (the usual case: the tests above), else the user
    cache folder: here for a function whose source file does not exist."""
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg"), "ZYGOPY_CACHE_DIR": ""}
    script = _REPORT + textwrap.dedent("""
    import adjoint
    scope = {}
    exec(compile("def g(x):\\n    return x * x * x\\n", "/no/such/folder/g.py", "exec"), scope)
    report(grad=adjoint.gradient(scope["g"], 2.0))
    """)
    _write(tmp_path, "helpers.py", "")
    first = _run(tmp_path, script, "", env)
    second = _run(tmp_path, script, "", env)
    assert first["grad"] == second["grad"] == [12.0]
    assert second["stats"]["loaded"] >= 1 and second["stats"]["written"] == 0
    user = tmp_path / "xdg" / "zygopy"
    assert [f for _, _, fs in os.walk(user) for f in fs if f.startswith("g.g.gradient")]
    script = _REPORT + textwrap.dedent("""
    import jit
    from jit import disk_cache
    disk_cache.enable(False)
    def h(x):
        return x + 1.0
    report(value=jit.jit(h)(1.0))
    """)
    got = _run(tmp_path, script, str(tmp_path / "off"))
    assert got["value"] == 2.0 and got["stats"]["written"] == 0
    assert not (tmp_path / "__pycache__").exists() or not [
        f for f in os.listdir(tmp_path / "__pycache__") if f.endswith(".zyc")]


def test_a_pullback_links_its_object_code_from_the_cache(tmp_path):
    """`pullback` (and the gradient of a function of float arrays) is compiled from the
    same LLVM text in every process; the second process links the object file the first
    one wrote (`compile_ir` keyed by the text) and runs no LLVM pass."""
    cache = str(tmp_path / "cache")
    script = _REPORT + textwrap.dedent("""
    import numpy as np
    import adjoint
    from jit.runtime import native
    compiled = []
    run = native._compile
    native._compile = lambda text, level: compiled.append(level) or run(text, level)
    def loss(w, X, y):
        r = X @ w - y
        return np.sum(r * r) / len(y)
    X = np.arange(12.0).reshape(4, 3) / 10
    value, back = adjoint.pullback(loss, np.array([0.5, -1.0, 2.0]), X, np.ones(4))
    g = back(1.0)
    h = adjoint.gradient(loss, np.array([0.5, -1.0, 2.0]), X, np.ones(4))
    report(value=value, g=[a.tolist() for a in g], h=[a.tolist() for a in h],
           llvm=len(compiled))
    """)
    first = _run(tmp_path, script, cache)
    second = _run(tmp_path, script, cache)
    assert first["llvm"] > 0 and second["llvm"] == 0
    assert second["stats"]["written"] == 0
    for k in ("value", "g", "h"):
        assert second[k] == first[k]
    w, X, y = np.array([0.5, -1.0, 2.0]), np.arange(12.0).reshape(4, 3) / 10, np.ones(4)
    r = X @ w - y
    assert np.allclose(first["g"][0], 2 * X.T @ r / 4, rtol=1e-13)
    assert np.allclose(first["g"][1], 2 * np.outer(r, w) / 4, rtol=1e-13)
    assert first["h"] == first["g"]
