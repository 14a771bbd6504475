"""Timing and memory helpers: first-call time, adaptive medians, budgets, RSS.

`measure` follows the usual protocol (timeit, pyperf): the first call is timed on its
own (it includes compilation), a second call warms up, then each sample times `reps`
back-to-back calls with `reps` chosen so that a sample lasts about `target_s`; the
reported time is the median over samples of the per-call time.  Every task runs under
a wall-clock budget (`budget`), enforced with SIGALRM so that a peer that takes
minutes (JAX eager compiles one XLA executable per distinct index) ends in a clear
"over budget" cell rather than a hung run.
"""
from __future__ import annotations

import gc
import os
import resource
import signal
import statistics
import time
from contextlib import contextmanager
from typing import Callable, Iterator

NS = 1_000_000_000


class BudgetExceeded(Exception):
    """Raised inside the timed code when its wall-clock budget runs out."""


@contextmanager
def budget(seconds: float) -> Iterator[None]:
    """Raise `BudgetExceeded` in the main thread after `seconds` (0 or less: no limit)."""
    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum, frame):
        raise BudgetExceeded(f"over the {seconds:g} s budget")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def timed_call(fn: Callable[[], object]) -> tuple:
    """Call `fn` once; return (its result, elapsed nanoseconds)."""
    t0 = time.perf_counter_ns()
    out = fn()
    return out, time.perf_counter_ns() - t0


def measure(fn: Callable[[], object], quick: bool = False,
            deadline_ns: float = float("inf")) -> dict:
    """Median per-call time of `fn`, already called once (its first call is not here).

    A warm-up call sizes the repetitions: each sample is about 0.2 s (0.02 s with
    `quick`), 7 samples (3 with `quick`); calls slower than a sample get 3 samples of
    one call (1 with `quick`) and the warm-up itself counts as one when it took over a
    second.  No new sample starts once it would end after `deadline_ns`
    (a `perf_counter_ns` value); at least one is always taken.
    """
    target = (0.02 if quick else 0.2) * NS
    _, warm = timed_call(fn)
    reps = max(1, int(target // max(warm, 1)))
    slow = warm >= target
    nsamples = (1 if quick else 3) if slow else (3 if quick else 7)
    times = [float(warm)] if warm > NS else []
    while len(times) < nsamples:
        if times and time.perf_counter_ns() + reps * warm > deadline_ns:
            break
        times.append(_sample(fn, reps))
    return {"median_ns": statistics.median(times), "min_ns": min(times),
            "samples": len(times), "reps": reps}


def _sample(fn: Callable[[], object], reps: int) -> float:
    gc.collect()
    t0 = time.perf_counter_ns()
    for _ in range(reps):
        fn()
    return (time.perf_counter_ns() - t0) / reps


def current_rss_bytes() -> int:
    """Resident set size now (Linux /proc), or the peak when /proc is not there."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return peak_rss_bytes()


def peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if os.uname().sysname == "Darwin" else peak * 1024


def format_ns(ns: float) -> str:
    """A time with three significant digits and a unit: 812 ns, 3.41 us, 12.0 ms, 1.52 s."""
    for unit, scale in (("s", NS), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return _three_digits(ns / scale) + " " + unit
    return _three_digits(ns) + " ns"


def _three_digits(x: float) -> str:
    if x >= 100:
        return f"{x:.0f}"
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}"
