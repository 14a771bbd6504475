"""Errors raised while lowering bytecode, and the table of refused opcodes."""
from __future__ import annotations

from ssair.refusal import Refusal


class UnsupportedError(Refusal):
    """A Python construct the lowering does not handle.

    The message names the construct, the function's qualified name and `file:line`:
    "unsupported construct 'try/except' in mymod.f at /path/x.py:12".
    """

    def __init__(self, construct: str, func_qualname: str, file: str | None,
                 line: int | None):
        self.construct = construct
        self.qualname = func_qualname
        self.file = file
        self.line = line
        hint = HINTS.get(construct)
        super().__init__(f"unsupported construct {construct!r} in {func_qualname} "
                         f"at {file}:{line}" + (f": {hint}" if hint else ""))


# What to write instead, for the refusals users meet most.
HINTS = {
    "attribute assignment": "zygopy reads objects as values and does not follow writes "
                            "into them; construct a new object instead "
                            "(`Point(x, p.y)` for a dataclass or named tuple) and return it",
}


# Opcodes that always mean a refused construct (any Python version).
REFUSED_OPCODES = {
    "SETUP_CLEANUP": "try/except",
    "SETUP_ASYNC_WITH": "async", "BEFORE_ASYNC_WITH": "async",
    "YIELD_VALUE": "generator", "YIELD_FROM": "generator", "RETURN_GENERATOR": "generator",
    "GET_AWAITABLE": "async", "GET_AITER": "async", "GET_ANEXT": "async",
    "DELETE_GLOBAL": "del",
    "DELETE_SUBSCR": "del", "DELETE_ATTR": "del",
    "DELETE_DEREF": "del", "DELETE_NAME": "del",
    "IMPORT_NAME": "import", "IMPORT_FROM": "import", "IMPORT_STAR": "import",
    "MATCH_CLASS": "match", "MATCH_MAPPING": "match", "MATCH_SEQUENCE": "match",
    "MATCH_KEYS": "match", "GET_LEN": "match", "COPY_DICT_WITHOUT_KEYS": "match",
    "LOAD_BUILD_CLASS": "class definition",
    "LOAD_CLASSDEREF": "class body", "LOAD_FROM_DICT_OR_DEREF": "class body",
    "SETUP_ANNOTATIONS": "annotations", "STORE_NAME": "module-level code",
    "LOAD_NAME": "module-level code",
    "STORE_ATTR": "attribute assignment", "SET_UPDATE": "starred expression in a set",
}

COMPREHENSION_NAMES = {"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"}
