"""`ZYGOPY_SHARD=k/n` (tests/shards.py): the shards of one collection hold each test file
exactly once, whatever times are recorded, and split the recorded time evenly."""
import os
import subprocess
import sys

import pytest

import shards

HERE = os.path.dirname(__file__)
NAMES = sorted(f[:-3] for f in os.listdir(HERE) if f.startswith("test_") and f.endswith(".py"))


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_every_file_is_in_exactly_one_shard(n):
    times = shards.file_times()
    where = shards.assign(NAMES, n, times)
    assert sorted(where) == NAMES and set(where.values()) <= set(range(n))
    assert where == shards.assign(list(reversed(NAMES)), n, times)      # (any order)
    unknown = shards.assign(NAMES + ["test_not_recorded"], n, {})
    assert sorted(unknown) == sorted(NAMES + ["test_not_recorded"])


def test_the_recorded_time_splits_evenly():
    times = shards.file_times()
    assert times, "tests/file_times.txt is missing or empty"
    where = shards.assign(NAMES, 2, times)
    load = [sum(times.get(f, shards.UNKNOWN_SECONDS) for f in NAMES if where[f] == k)
            for k in range(2)]
    assert max(load) - min(load) <= max(times.values())


@pytest.mark.parametrize("text,want", [("1/2", (1, 2)), (" 3 / 3 ", (3, 3))])
def test_parse_shard(text, want):
    assert shards.parse_shard(text) == want


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_a_bad_shard_is_a_usage_error(text):
    with pytest.raises(ValueError, match="ZYGOPY_SHARD="):
        shards.parse_shard(text)


def test_the_times_table_is_regenerated_from_a_durations_log(tmp_path):
    log = tmp_path / "log"
    log.write_text("1.50s call     tests/test_shards.py::test_x\n"
                   "0.25s setup    tests/test_shards.py::test_y\n"
                   "2.00s call     tests/test_parser.py::test_z[a-b]\n")
    out = subprocess.run([sys.executable, os.path.join(HERE, "shards.py"), str(log)],
                         capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines() if not line.startswith("#")]
    assert rows[:2] == [["2.0", "test_parser"], ["1.8", "test_shards"]]
    assert sorted(r[1] for r in rows) == NAMES
