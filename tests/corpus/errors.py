"""Error cases: the interpreter must raise what CPython raises (IndexError,
ZeroDivisionError, RecursionError, UnboundLocalError, ValueError, TypeError, ...),
including from inside called functions and after partial writes to an input."""
import math

import numpy as np

from . import case

V = np.array([1.0, 2.0, 3.0])
M = np.array([[1.0, 2.0], [3.0, 4.0]])


@case((V, 3), (V, -4), (V, 2))
def index_error_read(a, i):
    return a[i]


@case((M, 2, 0), (M, 0, -3))
def index_error_2d(m, i, j):
    return m[i, j]


@case((V, 5),)
def index_error_write(a, i):
    a[0] = -1.0
    a[i] = 7.0
    return a


@case(((1, 2), 2), ((1, 2), -3))
def tuple_index_error(t, i):
    return t[i]


@case((1, 0), (1.0, 0.0), (5, 2))
def zero_division(a, b):
    return a / b


@case((7, 0), (7.5, 0.0))
def zero_floordiv_mod(a, b):
    return a // b + a % b


@case((5,), (0,))
def zero_division_in_loop(n):
    s = 0.0
    for i in range(n, -1, -1):
        s += 1.0 / i
    return s


@case((3,),)
def runaway_recursion(n):
    return runaway_recursion(n + 1) + 1


@case((0,), (4,))
def unbound_local(n):
    if n > 0:
        y = n
    return y


@case(((1, 2, 3),), ((1, 2),))
def unpack_error(t):
    a, b = t
    return a + b


@case(((1, 2), 3),)
def type_error(t, x):
    return t + x


@case((1000.0,), (1.0,))
def overflow_error(x):
    return math.exp(x)


@case((-1.0,), (4.0,))
def math_domain_error(x):
    return math.sqrt(x)


def _divide(a, b):
    return a // b


@case((10, 0), (10, 3))
def error_in_callee(a, b):
    return _divide(a, b) + 1


@case((2 ** 2000,), (2 ** 20,))
def int_too_large_for_float(n):
    return n * 1.0


@case((V,),)
def error_after_partial_write(a):
    for i in range(len(a) + 1):
        a[i] = a[i] * 10
    return a


@case((-1,), (2,))
def negative_shift(k):
    return 1 << k


@case((0,), (3,))
def mod_by_zero_ternary(k):
    return 10 % k if k >= 0 else 0


@case((V,), (np.array([2.0]),))
def truth_of_array(a):
    if a:
        return 1
    return 0
