"""Seeing and clearing the disk cache: `zygopy cache info|clear` and
`adjoint.clear_cache(disk=True)`.

Every test points the cache somewhere of its own (`ZYGOPY_CACHE_DIR`, or
`XDG_CACHE_HOME` for the default folder), never at the user's.  A fresh process
compiles a function and a gradient, as a script would; the command line then counts
what that process wrote and removes it, leaving files that are not the cache's.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import adjoint
from jit.cli.commands import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_COMPILE = """
import json, math, sys
import adjoint, jit
from jit import cache_files

def loss(x, y):
    return math.sin(x) * y + x * x

@jit.jit
def cube(x):
    return x * x * x

assert cube(2.0) == 8.0
assert adjoint.gradient(loss, 0.5, 2.0) == (2.0 * math.cos(0.5) + 1.0, math.sin(0.5))
found = cache_files.find(used=True)
removed = adjoint.clear_cache(disk="--clear" in sys.argv)
print(json.dumps({"found": len(found), "removed": removed,
                  "left": len(cache_files.find(used=True))}))
"""


def _compile(tmp_path, env: dict, *flags: str) -> dict:
    """Run `_COMPILE` from `tmp_path/src` in a fresh process with `env` added."""
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "prog.py").write_text(textwrap.dedent(_COMPILE))
    full = {k: v for k, v in os.environ.items()
            if k not in ("ZYGOPY_CACHE_DIR", "ZYGOPY_CACHE")}
    full.update(env, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, str(src / "prog.py"), *flags], cwd=src, env=full,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cli(capsys, *args: str) -> str:
    assert main(["cache", *args]) == 0
    return capsys.readouterr().out


def _cache_files(folder) -> list:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and (p.suffix == ".zyc" or p.name.startswith(".zyc-")))


def test_info_and_clear_of_a_cache_that_does_not_exist(tmp_path, monkeypatch, capsys):
    missing = tmp_path / "none"
    monkeypatch.setenv("ZYGOPY_CACHE_DIR", str(missing))
    out = _cli(capsys, "info")
    assert f"cache folder: {missing}  (from ZYGOPY_CACHE_DIR)" in out
    assert "does not exist yet" in out and "files in it: 0, 0 B" in out
    assert _cli(capsys, "clear") == f"nothing to remove: no cache files in {missing}\n"
    assert not missing.exists()


def test_info_counts_what_a_process_wrote_and_clear_removes_it(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    ran = _compile(tmp_path, {"ZYGOPY_CACHE_DIR": str(cache)})
    files = _cache_files(cache)
    assert ran == {"found": len(files), "removed": 0, "left": len(files)}   # memory only
    kinds = {"primal": 0, "gradient": 0, "object": 0}
    for f in files:
        kinds["object" if f.startswith("objects") else f.split(".")[-3]] += 1
    assert kinds["primal"] == 1 and kinds["gradient"] == 1 and kinds["object"] >= 1
    size = sum((cache / f).stat().st_size for f in files)
    (cache / "notes.txt").write_text("not the cache's")

    monkeypatch.setenv("ZYGOPY_CACHE_DIR", str(cache))
    out = _cli(capsys, "info")
    assert f"files in it: {len(files)}, " in out
    assert f"by kind: gradient 1, object {kinds['object']}, primal 1\n" in out
    from jit.cache_files import size_text
    assert size_text(size) in out

    out = _cli(capsys, "clear")
    assert out.startswith(f"removed {len(files)} files ({size_text(size)}; gradient 1, ")
    assert out.rstrip().endswith(f"from {cache}")
    assert _cache_files(cache) == [] and not (cache / "objects").exists()
    assert (cache / "notes.txt").read_text() == "not the cache's"      # not ours: kept
    assert _cli(capsys, "clear").startswith("nothing to remove")


def test_folders_named_on_the_command_line(tmp_path, monkeypatch, capsys):
    """`__pycache__/` entries beside sources are counted and removed under a FOLDER;
    Python's own `.pyc` files there stay."""
    monkeypatch.setenv("ZYGOPY_CACHE_DIR", str(tmp_path / "central"))
    pyc = tmp_path / "proj" / "pkg" / "__pycache__"
    pyc.mkdir(parents=True)
    (pyc / "mod.loss.value_and_grad.0123456789abcdef01234567.zyc").write_bytes(b"x" * 100)
    (pyc / "mod.f.primal.0123456789abcdef01234567.zyc").write_bytes(b"x" * 28)
    (pyc / "mod.cpython-311.pyc").write_bytes(b"python's")
    (tmp_path / "proj" / ".git" / "__pycache__").mkdir(parents=True)     # hidden: skipped
    (tmp_path / "proj" / ".git" / "__pycache__" / "a.f.primal.0.zyc").write_bytes(b"")
    proj = str(tmp_path / "proj")
    out = _cli(capsys, "info", proj)
    assert f"files in it and under {proj}: 2, 128 B\nby kind: primal 1, value_and_grad 1\n" in out
    out = _cli(capsys, "clear", proj)
    assert out == (f"removed 2 files (128 B; primal 1, value_and_grad 1) from "
                   f"{tmp_path / 'central'} and __pycache__/ under {proj}\n")
    assert sorted(p.name for p in pyc.iterdir()) == ["mod.cpython-311.pyc"]


def test_clear_cache_with_disk_removes_the_files_the_process_used(tmp_path):
    """Without ZYGOPY_CACHE_DIR the entries go to `__pycache__/` beside the source and
    the object files to the default folder; `clear_cache(disk=True)` removes both."""
    xdg = tmp_path / "xdg"
    ran = _compile(tmp_path, {"XDG_CACHE_HOME": str(xdg)}, "--clear")
    assert ran["found"] >= 3 and ran == {"found": ran["found"], "removed": ran["found"],
                                         "left": 0}
    assert _cache_files(tmp_path) == []
    assert (tmp_path / "src" / "__pycache__").is_dir()     # Python's folder stays
    assert not (xdg / "zygopy").exists()


def test_clear_cache_is_documented():
    doc = adjoint.clear_cache.__doc__
    assert doc and "disk=True" in doc and "ZYGOPY_CACHE_DIR" in doc
    assert adjoint.clear_cache() == 0
    with pytest.raises(TypeError):
        adjoint.clear_cache(True)          # `disk` is a keyword
