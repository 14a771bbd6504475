"""Every corpus function the JIT accepts gives CPython's result (value, or exception
type); functions it does not accept are refused with TypingError (or the lowering's
UnsupportedError), never a crash or a wrong value."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests import corpus  # noqa: E402
from tests.jit_corpus_report import run_case  # noqa: E402

CASES, _ = corpus.load()
RESULTS: dict = {}
# The share of corpus calls the JIT must compile and get right (the rest: refused).
MIN_COMPILED = 0.75


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_corpus_case(case):
    results = run_case(case)
    RESULTS[case.id] = results
    bad = [(args, detail) for args, status, detail in results if status == "mismatch"]
    assert not bad, f"{case.id}: {bad}"


def test_compiled_share():
    for case in CASES:
        if case.id not in RESULTS:
            RESULTS[case.id] = run_case(case)
    statuses = [s for rs in RESULTS.values() for _, s, _ in rs]
    share = statuses.count("ok") / len(statuses)
    assert share >= MIN_COMPILED, f"only {share:.0%} of corpus calls compiled and agreed"
