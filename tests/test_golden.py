"""Golden listing of the paper's `pow` (Innes 2018): `code_lowered(pow)` must print
tests/golden/pow_lowered.txt once value names are normalised (values renumbered in
order of first appearance, the file path reduced to its base name, the spacing
before annotations collapsed).  One golden serves every CPython version.

Regenerate after an intended change with `ZYGOPY_UPDATE_GOLDEN=1 pytest
tests/test_golden.py` and review the diff.
"""
from __future__ import annotations

import linecache
import os
import re
import tempfile

import pytest
from harness import check_lowering

import lowering
import ssair
from ssair.passes import optimize

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "pow_lowered.txt")
POW_SOURCE = """def pow(x, n):
    r = 1
    while n > 0:
        n -= 1
        r *= x
    return r
"""


def load_pow():
    """`pow` compiled from a real file named pow.py, so lines start at 1."""
    path = os.path.join(tempfile.mkdtemp(prefix="zygopy_golden_"), "pow.py")
    with open(path, "w") as fh:
        fh.write(POW_SOURCE)
    linecache.cache[path] = (len(POW_SOURCE), None, POW_SOURCE.splitlines(True), path)
    namespace = {"__name__": "golden_pow"}
    exec(compile(POW_SOURCE, path, "exec"), namespace)  # noqa: S102 - lines from pow.py
    return namespace["pow"]


def normalise(listing: str) -> str:
    """Renumber `%n` in order of first appearance, keep only the file's base name,
    collapse the padding before `#` annotations, strip trailing spaces."""
    numbers: dict = {}

    def renumber(m):
        return "%" + str(numbers.setdefault(m.group(1), len(numbers) + 1))
    text = re.sub(r"%(\d+)", renumber, listing)
    text = re.sub(r" @ \S*?([^/\\\s]+):(\d+)$", r" @ \1:\2", text, flags=re.MULTILINE)
    text = re.sub(r"\s{2,}#", "  #", text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines()) + "\n"


@pytest.fixture(scope="module")
def pow_fn():
    return load_pow()


def test_pow_golden(pow_fn):
    got = normalise(str(lowering.code_lowered(pow_fn)))
    if os.environ.get("ZYGOPY_UPDATE_GOLDEN"):
        with open(GOLDEN, "w") as fh:
            fh.write(got)
    with open(GOLDEN) as fh:
        want = fh.read()
    assert got == want, f"code_lowered(pow) changed:\n--- got:\n{got}--- golden:\n{want}"


def test_pow_listing_is_readable(pow_fn):
    """What a Julia user expects to see: the header, a loop-header block with phis for
    `r` and `n`, the conditional exit, the source names and lines."""
    text = str(lowering.code_lowered(pow_fn))
    assert text == repr(lowering.code_lowered(pow_fn))
    assert text.startswith("function pow(")
    assert "pow.py:1" in text.splitlines()[0]
    assert len(re.findall(r"φ \(", text)) >= 2
    assert re.search(r"goto #\d+ if not %\d+", text)
    assert re.search(r"# r @ \d", text) and re.search(r"# n @ \d", text)
    assert re.search(r"return %\d+", text)


def test_pow_semantics(pow_fn):
    check_lowering(pow_fn, (2.0, 10), (3, 0), (1.5, 3), (-2, 65))


def test_normalise_is_stable():
    a = "function f(%1 x) @ /a/b/f.py:3\n1 ─ %7 = add(%1, 1)     # y @ 4\n└──      return %7"
    b = "function f(%4 x) @ /c/f.py:3\n1 ─ %9 = add(%4, 1)  # y @ 4\n└──      return %9"
    assert normalise(a) == normalise(b)
    assert "f.py:3" in normalise(a) and "%2 = add(%1, 1)" in normalise(a)


def test_optimised_pow_still_verifies(pow_fn):
    ir = optimize(lowering.lower(pow_fn))
    ssair.verify(ir)
    assert len(ir.blocks) <= len(lowering.lower(pow_fn).blocks)
