"""What compiled code may do with an f-string (`jit.types.FormattedT`, natively the
tuple of the values it formats): hand it to Python, where it is formatted.  Every
other statement would read that tuple as the string, a wrong value, so typing
refuses it (`jit.typing.infer`)."""
from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from jit.types import ClosureT, FormattedT, FunctionT, TupleT
from lowering.runtime import formatted
from ssair.interpreter import is_user_function
from ssair.ir import Stmt


def formatted_use(s: Stmt, ts: list, declared: Callable[[Any], bool]) -> bool:
    """May `s` take its f-string operands (`FormattedT`, natively a tuple of the
    values to format)?  Only a call that hands them to Python (`print`, a callable
    with no registry entry, `declared(f)` false, called for its effect), to a user
    function (typed with the same rule inside), or to another f-string."""
    if not any(holds_formatted(x) for x in ts):
        return True
    if s.op not in ("call", "jcall") or holds_formatted(ts[0]):
        return False
    if isinstance(ts[0], ClosureT):
        return True
    f = ts[0].func if isinstance(ts[0], FunctionT) else None
    return f is not None and (f is builtins.print or f is formatted
                              or is_user_function(f) or not declared(f))


def holds_formatted(t: Any) -> bool:
    """Is `t` an f-string, or a tuple holding one?"""
    if isinstance(t, FormattedT):
        return True
    return isinstance(t, TupleT) and any(holds_formatted(e) for e in t.elems)

