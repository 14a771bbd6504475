"""An independent corpus of ordinary user functions for differential tests.

Each category module decorates its functions with `@case(args1, args2, ...)`: every
argument tuple is one call that CPython, the lowered IR run by `ssair.interpret`, and
the optimised IR must all agree on (same value and type, or same exception type).
Functions built at run time (closures returned by factories) are registered with
`add_case`.  Constructs the lowering must refuse are registered with `@refuses`.

`CASES` and `REFUSED` are filled when the category modules are imported; `load()`
imports all of them and returns both lists.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Modules whose constructs the issue (#2, section 3) requires the lowering to support.
CORE_MODULES = (
    "straight", "branches", "logic", "loops", "ranges", "iteration", "recursion",
    "calls", "closures", "tuples", "arrays", "numpy_calls", "bigints", "errors", "effects",
)
# Ordinary Python the issue does not list explicitly (slices, methods, walrus, ...).
EXTRA_MODULES = ("extras", "exceptions")
REFUSED_MODULES = ("refused",)


@dataclass
class Case:
    """One corpus function and the argument tuples it is called with."""

    func: Callable
    args: tuple
    category: str
    name: str

    @property
    def id(self) -> str:
        return f"{self.category}.{self.name}"


@dataclass
class Refused:
    """A function the lowering must refuse with `lowering.UnsupportedError`.

    `keywords`: words of which at least one should appear in the error message (the
    construct's name).  `or_supported`: the construct is not required to be refused;
    lowering it is fine as long as the result equals CPython's on `args`.
    """

    func: Callable
    keywords: tuple
    category: str
    or_supported: bool = False
    args: tuple = field(default_factory=tuple)

    @property
    def id(self) -> str:
        return f"{self.category}.{self.func.__name__}"


CASES: list = []
REFUSED: list = []


def _category(func: Callable) -> str:
    return func.__module__.rsplit(".", 1)[-1]


def case(*arglists: tuple) -> Callable:
    """Register the decorated function with the given argument tuples."""
    def deco(func: Callable) -> Callable:
        add_case(func, *arglists)
        return func
    return deco


def add_case(func: Callable, *arglists: tuple, name: str | None = None,
             category: str | None = None) -> None:
    """Register `func` (e.g. a closure made by a factory) with its argument tuples."""
    if not arglists or not all(isinstance(a, tuple) for a in arglists):
        raise TypeError(f"case {func.__qualname__}: argument lists must be tuples")
    CASES.append(Case(func, tuple(arglists), category or _category(func),
                      name or func.__name__))


def refuses(*keywords: str, or_supported: bool = False, args: tuple = ()) -> Callable:
    """Register the decorated function as one the lowering must refuse."""
    def deco(func: Callable) -> Callable:
        add_refused(func, *keywords, or_supported=or_supported, args=args)
        return func
    return deco


def add_refused(func: Callable, *keywords: str, or_supported: bool = False,
                args: tuple = ()) -> None:
    REFUSED.append(Refused(func, tuple(keywords), _category(func), or_supported, args))


def load() -> tuple:
    """Import every category module; return `(CASES, REFUSED)`."""
    for mod in CORE_MODULES + EXTRA_MODULES + REFUSED_MODULES:
        importlib.import_module(f"{__name__}.{mod}")
    return CASES, REFUSED


def core_cases() -> list:
    load()
    return [c for c in CASES if c.category in CORE_MODULES]


def extra_cases() -> list:
    load()
    return [c for c in CASES if c.category in EXTRA_MODULES]


def by_id(case_id: str) -> Any:
    """The case (or refused entry) with the given id, for debugging one case."""
    load()
    for c in CASES + REFUSED:
        if c.id == case_id:
            return c
    raise KeyError(case_id)
