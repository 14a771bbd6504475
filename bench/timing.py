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
from collections.abc import Callable, Iterator
from contextlib import contextmanager

NS = 1_000_000_000


class BudgetExceeded(BaseException):
    """Raised inside the timed code when its budget runs out.  A BaseException, like
    KeyboardInterrupt, so that a library's `except Exception` does not swallow it."""


TIMERS = {"wall": ("ITIMER_REAL", "SIGALRM"), "cpu": ("ITIMER_PROF", "SIGPROF")}


@contextmanager
def budget(seconds: float, clock: str = "wall") -> Iterator[None]:
    """Raise `BudgetExceeded` in the main thread after `seconds` (0 or less: no limit)
    of wall-clock time, or of this process's CPU time with `clock="cpu"`."""
    timer_name, signal_name = TIMERS[clock]
    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def on_signal(signum, frame):
        raise BudgetExceeded(f"over the {seconds:g} s budget")

    timer, signum = getattr(signal, timer_name), getattr(signal, signal_name)
    previous = signal.signal(signum, on_signal)
    signal.setitimer(timer, seconds, 1.0)  # and every second after, until it gets out
    try:
        yield
    finally:
        signal.setitimer(timer, 0)
        signal.signal(signum, previous)


CLOCKS = {"wall": time.perf_counter_ns, "cpu": time.process_time_ns}


def timed_call(fn: Callable[[], object], clock: str = "wall") -> tuple:
    """Call `fn` once; return (its result, elapsed nanoseconds on `clock`)."""
    now = CLOCKS[clock]
    t0 = now()
    out = fn()
    return out, now() - t0


def measure(fn: Callable[[], object], quick: bool = False,
            deadline_ns: float = float("inf"), clock: str = "wall") -> dict:
    """Median per-call time of `fn`, already called once (its first call is not here).

    A warm-up call sizes the repetitions: each sample is about 0.2 s (0.02 s with
    `quick`), 7 samples (3 with `quick`); calls slower than a sample get 3 samples of
    one call (1 with `quick`) and the warm-up itself counts as one when it took over a
    second.  No new sample starts once it would end after `deadline_ns` (a reading
    of `clock`); at least one is always taken.  Every sample reads
    both clocks: the median is on `clock` ("wall": perf_counter_ns, "cpu": this
    process's CPU time; then a sample lasts at least 0.05 s of CPU, see `_sample`),
    and `cpu_share` (CPU over wall time) says how much of its core the process got:
    well under 1 means a busy machine inflated wall times.
    """
    target = (0.02 if quick else 0.2) * NS
    warm = _sample(fn, 1)
    reps = max(1, int(target // max(warm[0], 1)))
    slow = warm[0] >= target
    nsamples = (1 if quick else 3) if slow else (3 if quick else 7)
    samples = [warm] if warm[0] > NS else []
    min_cpu = max(target, 0.05 * NS) if clock == "cpu" else 0
    while len(samples) < nsamples:
        if samples and CLOCKS[clock]() + reps * warm[clock == "cpu"] > deadline_ns:
            break
        samples.append(_sample(fn, reps, min_cpu))
    times = [s[0] if clock == "wall" else s[1] for s in samples]
    share = sum(s[1] for s in samples) / max(sum(s[0] for s in samples), 1.0)
    return {"median_ns": statistics.median(times), "min_ns": min(times),
            "samples": len(samples), "reps": reps, "clock": clock, "cpu_share": share}


def _sample(fn: Callable[[], object], reps: int, min_cpu_ns: float = 0) -> tuple:
    """(wall, cpu) nanoseconds per call over chunks of `reps` back-to-back calls, as
    many chunks as it takes to use `min_cpu_ns` of CPU time (the CPU clock of a
    multi-threaded process advances by scheduler ticks, so short samples read 0)."""
    gc.collect()
    calls = 0
    w0, c0 = time.perf_counter_ns(), time.process_time_ns()
    while True:
        for _ in range(reps):
            fn()
        calls += reps
        c1 = time.process_time_ns()
        if c1 - c0 >= min_cpu_ns:
            break
    w1 = time.perf_counter_ns()
    return (w1 - w0) / calls, (c1 - c0) / calls


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
