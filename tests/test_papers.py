"""Every papers/ script runs and agrees with its reference (timing skipped: --quick)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = ["innes2018_dont_unroll_adjoint", "reverse_trace", "mindir_examples"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_paper_script_passes(name):
    script = os.path.join(ROOT, "papers", name, "run.py")
    proc = subprocess.run([sys.executable, script, "--quick"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith(f"{name}: ") and "FAILED" not in last and "MISMATCH" not in proc.stdout


def test_every_paper_folder_has_a_readme_and_is_tested():
    folders = sorted(d for d in os.listdir(os.path.join(ROOT, "papers"))
                     if os.path.isdir(os.path.join(ROOT, "papers", d)) and not d.startswith("_"))
    assert folders == sorted(SCRIPTS)
    for d in folders:
        assert os.path.isfile(os.path.join(ROOT, "papers", d, "README.md"))
