"""Python versions of the builtins that call a function they are given (`map`,
`filter`, `functools.reduce`), lowered as the user's own code (`__zygopy_lowered__`)
in place of the builtins (`lowering.ops_call.stands_for`): the calls they make are
then ordinary calls of the function value, compiled and differentiated as the rest
of the program.  `map` and `filter` are generators, read by the loop or builtin that
consumes them as any generator is (`lowering.generators`: all at once, in order).
Each raises what the builtin raises for an empty sequence or a wrong argument."""
from __future__ import annotations

import builtins
import functools

_EMPTY = "reduce() of empty iterable with no initial value"


def map(function, *iterables):
    for items in zip(*iterables):
        yield function(*items)


def filter(function, iterable):
    for item in iterable:
        if (item if function is None else function(item)):
            yield item


def reduce(function, iterable, *initial):
    if len(initial) > 1:
        raise TypeError(f"reduce expected at most 3 arguments, got {2 + len(initial)}")
    if isinstance(iterable, (dict, set, frozenset)):
        iterable = list(iterable)        # (its keys or members, in iteration order)
    n = len(iterable)
    if len(initial) == 1:            # (known when compiling: the branch folds)
        value = initial[0]
        start = 0
    elif n == 0:
        raise TypeError(_EMPTY)
    else:
        value = iterable[0]
        start = 1
    for k in range(start, n):
        value = function(value, iterable[k])
    return value


PYTHON_VERSIONS = {builtins.map: map, builtins.filter: filter, functools.reduce: reduce}
for _f in PYTHON_VERSIONS.values():
    _f.__zygopy_lowered__ = True
