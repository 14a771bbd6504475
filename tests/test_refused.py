"""Constructs the lowering refuses: `lowering.UnsupportedError` naming the construct,
the function's qualified name and `file:line` of the offending source line.

Entries marked `or_supported` may instead be lowered, provided the interpreter then
agrees with CPython (harness.check_lowering)."""
from __future__ import annotations

import inspect
import os
import re

import corpus
import pytest
from harness import check_lowering

import lowering

corpus.load()
STRICT = [r for r in corpus.REFUSED if not r.or_supported]
OPTIONAL = [r for r in corpus.REFUSED if r.or_supported]


def _refusal(func):
    with pytest.raises(lowering.UnsupportedError) as info:
        lowering.lower(func)
    return str(info.value)


def _check_message(entry, message: str) -> None:
    func = entry.func
    assert func.__qualname__ in message, f"qualified name missing: {message}"
    m = re.search(r"([^\s:]+\.py):(\d+)", message)
    assert m, f"no file:line in: {message}"
    assert os.path.basename(m.group(1)) == os.path.basename(func.__code__.co_filename), message
    lines, first = inspect.getsourcelines(func)
    last = first + len(lines) - 1
    assert first <= int(m.group(2)) <= last, f"line outside the function: {message}"
    low = message.lower()
    assert any(k.lower() in low for k in entry.keywords), (
        f"construct not named (expected one of {entry.keywords}): {message}")


def test_refused_corpus_size():
    assert len(STRICT) >= 11      # (global writes left the corpus: they are compiled)


@pytest.mark.parametrize("entry", STRICT, ids=[r.id for r in STRICT])
def test_refused(entry):
    _check_message(entry, _refusal(entry.func))


@pytest.mark.parametrize("entry", OPTIONAL, ids=[r.id for r in OPTIONAL])
def test_refused_or_supported(entry):
    try:
        lowering.lower(entry.func)
    except lowering.UnsupportedError as e:
        _check_message(entry, str(e))
        return
    check_lowering(entry.func, *entry.args)


def test_refusal_is_not_cached_as_success():
    """Lowering a refused function twice refuses twice (no half-built IR cached)."""
    func = STRICT[0].func
    _refusal(func)
    _refusal(func)


def test_caller_of_refused_function_runs_it_in_cpython():
    """A supported function calling a refused one: the interpreter cannot lower the
    callee, so CPython runs that call, with CPython's result (issue 30: a construct
    costs its own call site)."""
    import ssair
    ir = lowering.lower(_calls_generator)
    assert list(ssair.interpret(ir, 3)) == list(_calls_generator(3)) == [0, 1, 2]


def _calls_generator(n):
    return corpus.refused.yield_from(n)
