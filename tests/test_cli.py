"""Tests of the `zygopy` command line (jit/cli.py)."""
import subprocess
import sys
import textwrap

import pytest

from jit.cli import main

SOURCE = textwrap.dedent("""\
    def pow(x, n):
        r = 1
        while n > 0:
            n -= 1
            r *= x
        return r

    def guarded(x):
        try:
            return 1 / x
        except ZeroDivisionError:
            return 0.0
""")


@pytest.fixture
def userfile(tmp_path):
    path = tmp_path / "cli_user_funcs.py"
    path.write_text(SOURCE)
    return str(path)


def test_show_prints_lowered_ir(userfile, capsys):
    assert main(["show", f"{userfile}:pow"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("function pow(%1 x, %2 n)")
    assert "φ (" in out and "return" in out


@pytest.mark.parametrize("target, message", [
    ("{dir}/missing.py:f", "no such file"),
    ("{file}:nope", "has no function 'nope'"),
    ("{file}", "expected FILE.py:FUNC"),
    ("{file}:guarded", "guarded"),
])
def test_show_errors_are_one_line_exit_2(userfile, capsys, target, message):
    import os
    spec = target.format(file=userfile, dir=os.path.dirname(userfile))
    assert main(["show", spec]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_demo_agrees_with_cpython(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "MISMATCH" not in out and "all results agree with CPython" in out


def test_console_entry_point_runs(userfile):
    proc = subprocess.run([sys.executable, "-m", "jit.cli", "show", f"{userfile}:nope"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("zygopy: ") and "Traceback" not in proc.stderr
