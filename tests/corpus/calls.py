"""Calls to user functions with positional, keyword and default arguments, keyword-only
parameters, builtins and math functions with keywords, nested calls."""
import math

from . import case


def helper_scale(x, factor=2.0, offset=0.0):
    return x * factor + offset


def helper_kwonly(a, *, power=2, shift=0):
    return a ** power + shift


def helper_pair(a, b):
    return a - b, a * b


def helper_many(a, b=1, c=2, d=3):
    return a * 1000 + b * 100 + c * 10 + d


@case((3.0,), (-1,))
def call_positional(x):
    return helper_scale(x, 3.0, 1.0)


@case((3.0,), (-1,))
def call_defaults(x):
    return helper_scale(x) + helper_scale(x, 0.5)


@case((3.0,), (2,))
def call_keywords(x):
    return helper_scale(x, offset=10.0) - helper_scale(offset=1.0, x=x, factor=-1.0)


@case((3,), (-2,))
def call_kwonly(a):
    return helper_kwonly(a), helper_kwonly(a, power=3), helper_kwonly(a, shift=1, power=1)


@case((1,), (9,))
def call_default_middle(a):
    return helper_many(a), helper_many(a, 5), helper_many(a, d=7), helper_many(a, 4, d=0, c=9)


@case((2.0, 3.0),)
def call_unpack_result(a, b):
    d, p = helper_pair(a, b)
    return d * p


@case((0.5,), (2.0,))
def nested_calls(x):
    return helper_scale(helper_scale(x, 2.0), helper_scale(1.0, 0.5), offset=x)


@case((2.567,), (-1.25,))
def builtin_keywords(x):
    return round(x, ndigits=2), max(x, 0.0), min(1.0, x, 3.0)


@case((1.0, 2.0), (0.0, -1.0))
def math_calls(x, y):
    return math.atan2(y, x) + math.copysign(x, y) + math.fsum((x, y, 1e-16))


@case((4,), (1,))
def call_in_loop(n):
    s = 0.0
    for i in range(n):
        s += helper_scale(i, factor=0.5, offset=i)
    return s


@case((2.0,),)
def call_with_call_default_value(x):
    return helper_scale(x, factor=helper_kwonly(2, power=3))


@case((5,), (0,))
def call_builtin_len_abs(n):
    t = (1, 2, 3)
    return len(t) + abs(-n) + int(2.7) + float(n) + bool(n)


@case((3.0, 1), (3.0, 0))
def call_chosen_function(x, k):
    f = helper_scale if k else helper_kwonly
    return f(x)
