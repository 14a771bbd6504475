"""Chained comparisons, `and`/`or` (values, not just booleans), `not`, conditional
expressions, `is`, `in`."""
from . import case


@case((1, 2, 3), (1, 3, 2), (2, 2, 2))
def chained_lt(a, b, c):
    return a < b < c


@case((1, 2, 2, 5), (1, 2, 3, 3), (0, 0, 0, 0))
def chained_mixed(a, b, c, d):
    return a < b <= c != d


@case((0.5,), (1.5,), (-0.1,))
def in_unit_interval(x):
    if 0.0 <= x <= 1.0:  # noqa: SIM103 - a branch on purpose
        return True
    return False


@case((0, 5), (3, 5), (3, 0), (0, 0))
def or_values(a, b):
    return a or b


@case((0, 5), (3, 5), (3, 0), ((), 1))
def and_values(a, b):
    return a and b


@case((0,), (4,), (-4,))
def short_circuit_guard(n):
    return n != 0 and 100 // n > 20


@case((1.0, 2.0, True), (3.0, 2.0, False), (-1.0, 0.0, True))
def compound_condition(x, y, flag):
    if (x < y and flag) or not (x > 0 or flag):
        return x + y
    return x - y


@case((3,), (-3,), (0,))
def ternary(n):
    return "pos" if n > 0 else ("neg" if n < 0 else "zero")


@case((2.0, 1), (2.0, 0))
def ternary_in_arith(x, k):
    return x * (2.0 if k else 0.5) + (1 if k else 0)


@case((None,), (0,), (1.5,))
def is_checks(v):
    return v is None, v is not None, not v


@case((2,), (5,), (9,))
def membership(k):
    return k in (1, 2, 3), k not in (4, 5)


@case((1, 2, 3, 4), (4, 3, 2, 1), (1, 1, 1, 1))
def not_of_chain(a, b, c, d):
    if not (a < b < c < d):
        return -1
    return a + b + c + d


@case((0, 0), (1, 0), (0, 1), (2, 3))
def and_or_mix(a, b):
    x = a and b or a + b
    y = (a or b) and (b or 7)
    return x, y


@case((5,), (15,), (25,))
def and_or_in_while(n):
    i = 0
    while i < 10 and n > 0 or i == 0:
        n -= 7
        i += 1
    return i, n
