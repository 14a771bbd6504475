"""The four packages import only downwards, `ssair` < `lowering` < `adjoint` < `jit`
(module-level and function-level imports alike); what a lower layer needs from a
higher one it gets through a registry the higher one fills: the interpreter's
lowering (`ssair.interpreter.set_lowering`) and adjoint's compiled backends (the
`zygopy.backends` entry point)."""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAYERS = ["ssair", "lowering", "adjoint", "jit"]


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.partition(".")[0]


@pytest.mark.parametrize("package", LAYERS)
def test_a_package_imports_no_higher_layer(package):
    higher = set(LAYERS[LAYERS.index(package) + 1:])
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}"
           for p in sorted((ROOT / package).rglob("*.py"))
           for line, mod in _imports(p) if mod in higher]
    assert not bad, "\n".join(bad)


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_plain_import_adjoint_gives_the_compiled_backend_by_default():
    out = _run("import sys, adjoint\n"
               "before = 'jit' in sys.modules\n"
               "y, back = adjoint.pullback(lambda x: x * x * x, 2.0)\n"
               "print(before, 'llvm' in adjoint.api.RUNNERS, back(1.0))")
    assert out == "False True (12.0,)"


def test_the_interpreter_runs_user_functions_once_lowering_is_imported():
    out = _run("import sys, ssair\n"
               "print('lowering' in sys.modules)\n"
               "import lowering\n"
               "def sq(x):\n    return x * x\n"
               "def f(x):\n    return sq(x) + 1.0\n"
               "ir = lowering.lower(f)\n"
               "print(ssair.interpret(ir, 3.0), lowering.lower(sq) is lowering.lower(sq))")
    assert out.splitlines() == ["False", "10.0 True"]


def test_a_missing_compiled_backend_is_said_not_silent():
    out = _run("import warnings, importlib.metadata as md\n"
               "md.entry_points = lambda **kw: []\n"
               "import adjoint\n"
               "with warnings.catch_warnings(record=True) as w:\n"
               "    warnings.simplefilter('always')\n"
               "    y, back = adjoint.pullback(lambda x: x * x, 2.0)\n"
               "print(back(1.0), 'llvm' in adjoint.api.RUNNERS, str(w[0].message)[:45])")
    assert out == "(4.0,) False zygopy: no compiled backend, pullbacks run in"
