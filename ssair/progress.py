"""What a long compilation is doing, said on stderr through `logging`.

Every compilation runs holding the compile lock (`ssair.compile_lock.compiling`), which
calls `begin` and `end` around the outermost one.  Each layer names its stage as it
enters it (`stage("lowering", what)`, "J transform", "typing", "LLVM ...") and the
function being compiled (`label`).  A compilation still running after `THRESHOLD_S`
seconds logs, at INFO on the logger "zygopy", the function and its current stage,
then each stage it newly enters, then its total time.  A shorter one logs nothing.

Silence it with `ZYGOPY_QUIET=1` in the environment, or
`logging.getLogger("zygopy").setLevel(logging.WARNING)`.  Where neither the "zygopy"
logger nor the root logger has a handler, a plain stderr handler is added at the first
message.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import time

LOGGER = logging.getLogger("zygopy")
THRESHOLD_S = 1.0

_STATE: dict = {"depth": 0, "start": 0.0, "what": "", "strong": False, "stage": "",
                "timer": None, "announced": False, "logged": set()}


def quiet() -> bool:
    return os.environ.get("ZYGOPY_QUIET", "").lower() not in ("", "0", "false", "no")


def begin() -> int:
    """Entering a compilation (the compile lock is held): the outermost one starts
    the clock and the timer that announces it once it passes `THRESHOLD_S`.  Returns
    the depth before it, for `end`."""
    s = _STATE
    before = s["depth"]
    s["depth"] = before + 1
    if before > 0 or quiet():
        return before
    s.update(start=time.perf_counter(), what="", strong=False, stage="", announced=False,
             logged=set())
    timer = threading.Timer(THRESHOLD_S, _announce)
    timer.daemon = True
    s["timer"] = timer
    timer.start()
    return before


def end(before: int) -> None:
    """Leaving a compilation begun at depth `before`: the depth is set back to it (not
    decremented: an inner `end` that a RecursionError skipped cannot leave it
    high), and the outermost one stops the timer and, if it was announced, logs its
    total time."""
    s = _STATE
    s["depth"] = before
    if before > 0:
        return
    timer, s["timer"] = s["timer"], None
    if timer is not None:
        timer.cancel()
    if s["announced"]:
        s["announced"] = False
        _log("zygopy: compiled %s in %.1f s", s["what"] or "a function", _elapsed())


def label(what: str, strong: bool = False) -> None:
    """Name what is being compiled.  A strong label (the user's call: "gradient of
    loss (file:line)") wins over the weak ones of the layers below it."""
    s = _STATE
    if s["depth"] and (strong or not s["what"]) and not (s["strong"] and not strong):
        s["what"], s["strong"] = what, strong or s["strong"]


def stage(name: str, what: str = "") -> None:
    """Entering stage `name` (of `what`, a weak label).  Once the compilation has
    been announced, each stage is logged the first time it is entered."""
    s = _STATE
    if not s["depth"]:
        return
    if what:
        label(what)
    s["stage"] = name
    if not s["announced"] and s["timer"] is not None and _elapsed() >= THRESHOLD_S:
        _announce()             # (the timer may not have run yet)
    if s["announced"] and name not in s["logged"]:
        s["logged"].add(name)
        _log("zygopy: compiling %s: %s (%.1f s so far)", s["what"] or "a function", name,
             _elapsed())


def _elapsed() -> float:
    return time.perf_counter() - _STATE["start"]


def _announce() -> None:
    """The timer's callback: the compilation has passed THRESHOLD_S."""
    s = _STATE
    if not s["depth"] or s["announced"]:
        return
    s["announced"] = True
    s["logged"].add(s["stage"])
    _log("zygopy: compiling %s (taking over %.0f s): %s ...", s["what"] or "a function",
         THRESHOLD_S, s["stage"] or "starting")


def _log(msg: str, *args) -> None:
    if not LOGGER.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        LOGGER.addHandler(handler)
    if LOGGER.level == logging.NOTSET:
        LOGGER.setLevel(logging.INFO)
    LOGGER.info(msg, *args)


__all__ = ["LOGGER", "THRESHOLD_S", "begin", "end", "label", "stage", "quiet"]
