"""Run the corpus through the JIT and compare with CPython (a report, and the helpers
tests/test_jit_corpus.py uses).

    python tests/jit_corpus_report.py [-v] [CATEGORY ...]

Outcomes per call: `ok` (same value, or same exception type), `typing` (the JIT
refused the function with TypingError, or lowering refused it), `mismatch`.
Values compare as in tests/harness.py, except that the JIT may return a Python
float where CPython returns a numpy float64 (same bits), and an int where a phi or
return joined int and float (same value).
"""
from __future__ import annotations

import copy
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jit  # noqa: E402
import lowering  # noqa: E402
from tests import corpus  # noqa: E402


def close_enough(want, got) -> bool:
    """CPython's value `want` against the JIT's `got` (see the module docstring)."""
    if isinstance(want, np.ndarray) or isinstance(got, np.ndarray):
        return (isinstance(want, np.ndarray) and isinstance(got, np.ndarray)
                and want.shape == got.shape and want.dtype == got.dtype
                and bool(np.array_equal(want, got, equal_nan=True)))
    if isinstance(want, (tuple, list)):
        return (isinstance(got, tuple if isinstance(want, tuple) else list)
                and len(want) == len(got)
                and all(close_enough(a, b) for a, b in zip(want, got)))
    if isinstance(want, dict):
        return (isinstance(got, dict) and list(want) == list(got)
                and all(close_enough(want[k], got[k]) for k in want))
    if isinstance(want, complex):
        return (isinstance(got, complex) and close_enough(want.real, got.real)
                and close_enough(want.imag, got.imag))
    if isinstance(want, str):
        return type(got) is str and want == got
    if isinstance(want, (bool, np.bool_)) or isinstance(got, bool):
        return type(got) is bool and bool(want) == got
    if isinstance(want, (int, np.integer)) and isinstance(got, int):
        return int(want) == got
    if isinstance(want, (float, int, np.floating, np.integer)) and isinstance(got, float):
        w = float(want)
        if math.isnan(w):
            return math.isnan(got)
        return w == got and math.copysign(1, w) == math.copysign(1, got)
    return want is None and got is None


def outcome(f, args):
    try:
        return "return", f(*copy.deepcopy(args))
    except Exception as e:  # noqa: BLE001 - we compare exception types
        return "raise", e


def run_case(case) -> list:
    """[(args, status, detail)] for every argument tuple of a corpus case."""
    compiled = jit.jit(case.func)
    out = []
    for args in case.args:
        want = outcome(case.func, args)
        got = outcome(compiled, args)
        out.append((args, *classify(want, got)))
    return out


def classify(want, got) -> tuple:
    if got[0] == "raise" and isinstance(got[1], (jit.TypingError, lowering.UnsupportedError)):
        return "typing", f"{type(got[1]).__name__}: {got[1]}"
    if want[0] == "raise" or got[0] == "raise":
        if want[0] == got[0] and type(want[1]) is type(got[1]):
            return "ok", ""
        return "mismatch", f"CPython {want[0]} {want[1]!r}, JIT {got[0]} {got[1]!r}"
    if close_enough(want[1], got[1]):
        return "ok", ""
    return "mismatch", f"CPython {want[1]!r}, JIT {got[1]!r}"


def main(argv: list) -> None:
    verbose = "-v" in argv
    cats = [a for a in argv if not a.startswith("-")]
    cases, _ = corpus.load()
    counts = {"ok": 0, "typing": 0, "mismatch": 0}
    for case in cases:
        if cats and case.category not in cats:
            continue
        for args, status, detail in run_case(case):
            counts[status] += 1
            if status == "mismatch" or verbose and status != "ok":
                print(f"{status:9s}{case.id}{args!r:.60}: {detail[:300]}")
    print(counts)


if __name__ == "__main__":
    main(sys.argv[1:])
