"""Shared pytest setup: every optimisation pass is verified after it runs.

`ssair.passes.optimize` runs each pass through `ssair.passes.run_pass`; the autouse
fixture below wraps it so that, during every test, the IR a pass returns is checked
with `ssair.verify` and the pass's input is checked to be unchanged.  A failure
names the pass and the function.
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))
# compiled code goes to a disk cache of this session (`jit.disk_cache`), not to the
# checkout's __pycache__ folders; processes the tests start share it
# (removed when the session ends, so that a test run leaves no folder behind)
# the J transform verifies each pass's output, not only its own (`adjoint.transform`)
os.environ.setdefault("ZYGOPY_VERIFY_PASSES", "1")
if "ZYGOPY_CACHE_DIR" not in os.environ:
    os.environ["ZYGOPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="zygopy-test-cache-")
    atexit.register(shutil.rmtree, os.environ["ZYGOPY_CACHE_DIR"], ignore_errors=True)


def _checked_run_pass(original):
    import ssair

    def run_pass(name, fn, ir):
        before = ssair.format_ir(ir)
        out = original(name, fn, ir)
        if ssair.format_ir(ir) != before:
            raise AssertionError(f"pass {name} modified its input IR ({ir.name})")
        try:
            ssair.verify(out)
        except ssair.VerifyError as e:
            raise AssertionError(f"IR of {ir.name} fails to verify after pass {name}:\n"
                                 f"{e}\n--- before {name}:\n{before}\n--- after:\n{out}"
                                 ) from None
        return out
    return run_pass


@pytest.fixture(autouse=True)
def verify_after_each_pass(monkeypatch):
    """Wrap `ssair.passes.run_pass` (when the passes package exists)."""
    try:
        from ssair import passes
    except ImportError:
        yield
        return
    original = getattr(passes, "run_pass", None)
    if original is not None:
        monkeypatch.setattr(passes, "run_pass", _checked_run_pass(original))
    yield
