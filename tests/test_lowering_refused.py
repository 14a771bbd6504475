"""Refused constructs raise lowering.UnsupportedError naming the construct, the
function's qualified name and file:line."""
import inspect

import pytest
from lowering_refused_cases import REFUSED

import lowering


def marked_line(f) -> int:
    lines, first = inspect.getsourcelines(f)
    return next(first + k for k, text in enumerate(lines) if "# HERE" in text)


@pytest.mark.parametrize("f,construct", REFUSED, ids=[f.__name__ for f, _ in REFUSED])
def test_refused(f, construct):
    with pytest.raises(lowering.UnsupportedError) as info:
        lowering.lower(f)
    e = info.value
    assert e.construct == construct
    assert f.__qualname__ in str(e) and repr(construct) in str(e)
    assert e.file == f.__code__.co_filename
    assert f"{e.file}:{e.line}" in str(e)
    slack = 1 if construct in ("try/except", "match") else 0
    assert 0 <= e.line - marked_line(f) <= slack, (e.line, marked_line(f))


def test_message_format():
    e = lowering.UnsupportedError("try/except", "mymod.f", "/path/x.py", 12)
    assert str(e) == "unsupported construct 'try/except' in mymod.f at /path/x.py:12"


def test_unknown_opcode_is_named():
    def f_set(x):
        return {*x, 1}
    with pytest.raises(lowering.UnsupportedError, match="starred expression in a set"):
        lowering.lower(f_set)
