"""Shards of the test suite: `ZYGOPY_SHARD=k/n` in the environment runs shard k of n
(1-based), so that `.ci/run` can run one Python version's tests in n processes side
by side.  Every test file goes to one shard whole (its module-level setup runs
once); the files are placed longest first, each into the shard with the least time
so far, by the seconds `file_times.txt` records for them (a file it does not name
counts `UNKNOWN_SECONDS`).  The n shards of one collection together hold each test
exactly once, whatever the recorded times are.

Run as a script on the output of `python -m pytest --durations=0`, it prints a new
`file_times.txt`.
"""
from __future__ import annotations

import os
import re
import sys
from collections import Counter

TIMES = os.path.join(os.path.dirname(__file__), "file_times.txt")
UNKNOWN_SECONDS = 5.0
_HEADER = """\
# Seconds each test file took in one run of the whole suite (Python 3.11), which
# `tests/shards.py` uses to split a run into shards of about equal time
# (ZYGOPY_SHARD=k/n). Regenerate: python -m pytest --durations=0 > log;
# python tests/shards.py log > tests/file_times.txt
"""


def parse_shard(text: str) -> tuple:
    """`"k/n"` -> (k, n) with 1 <= k <= n; ValueError naming the setting otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"ZYGOPY_SHARD={text!r}: expected k/n with 1 <= k <= n (e.g. 1/2)")
    return int(m.group(1)), int(m.group(2))


def file_times(path: str = TIMES) -> dict:
    """Test file name (no `.py`) -> recorded seconds."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as fh:
        for line in fh:
            if line.strip() and not line.startswith("#"):
                seconds, name = line.split()
                out[name] = float(seconds)
    return out


def assign(names, n: int, times: dict) -> dict:
    """File name -> shard index (0 to n-1): longest first, each to the least loaded
    shard (the lowest index among equals), so every process computes the same split."""
    load = [0.0] * n
    out = {}
    for name in sorted(set(names), key=lambda f: (-times.get(f, UNKNOWN_SECONDS), f)):
        k = min(range(n), key=lambda j: (load[j], j))
        out[name] = k
        load[k] += times.get(name, UNKNOWN_SECONDS)
    return out


def durations_by_file(lines) -> Counter:
    """Seconds per test file in the lines of pytest's `--durations=0` report."""
    per = Counter()
    for line in lines:
        m = re.match(r"\s*([\d.]+)s (?:call|setup|teardown)\s+(?:.*/)?(test_\w+)\.py::", line)
        if m:
            per[m.group(2)] += float(m.group(1))
    return per


def main(argv: list) -> int:
    if len(argv) != 2:
        print("usage: python tests/shards.py PYTEST_DURATIONS_LOG", file=sys.stderr)
        return 2
    with open(argv[1]) as fh:
        per = durations_by_file(fh)
    here = os.path.dirname(os.path.abspath(__file__))
    names = sorted(f[:-3] for f in os.listdir(here) if f.startswith("test_") and f.endswith(".py"))
    sys.stdout.write(_HEADER)
    for name in sorted(names, key=lambda f: (-round(per[f], 1), f)):
        sys.stdout.write(f"{per[name]:.1f} {name}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
