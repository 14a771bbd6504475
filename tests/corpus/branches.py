"""if / elif / else, early returns, values defined on some paths only."""
from . import case


@case((3.0,), (-2.0,), (0.0,), (-0.0,))
def sign(x):
    if x > 0:
        return 1
    elif x < 0:
        return -1
    else:
        return 0


@case((5.5,), (-5.5,), (0,))
def abs_branch(x):
    if x < 0:
        x = -x
    return x


@case((0.5, 0.0, 1.0), (-1.0, 0.0, 1.0), (2.0, 0.0, 1.0))
def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@case((1, 2, 3), (3, 2, 1), (2, 3, 1), (2, 2, 2))
def max3(a, b, c):
    if a >= b:
        if a >= c:
            m = a
        else:
            m = c
    else:
        if b >= c:
            m = b
        else:
            m = c
    return m


@case((1, 2.5), (0, 2.5))
def phi_mixed_types(flag, x):
    if flag:
        r = 1
    else:
        r = x
    return r * 2


@case((4,), (-4,), (0,))
def defined_on_some_paths(n):
    if n > 0:
        y = n * 2
    if n > 0:
        return y
    return -1


@case((0,), (1,), (2,), (3,), (7,))
def elif_chain(k):
    if k == 0:
        s = "zero"
    elif k == 1:
        s = "one"
    elif k == 2:
        s = "two"
    elif k == 3:
        s = "three"
    else:
        s = "many"
    return s


@case((0,), (5,), (0.0,), ((),), ((1, 2),), (None,))
def truthiness(v):
    if v:
        return "yes"
    return "no"


@case((1.0, None), (1.0, 3.0))
def default_none(x, y):
    if y is None:
        y = 2.0
    return x * y


@case((10, 3), (-10, 3), (10, -3), (0, 5))
def many_paths(a, b):
    r = 0
    if a > 0:
        r += 1
    else:
        r -= 1
    if b > 0:
        r *= 10
    if a > b:
        r += a - b
    else:
        r += b - a
    return r


@case((1, 2), (2, 1))
def branch_only_pass(a, b):
    if a < b:
        pass
    else:
        a, b = b, a
    return a, b


@case((5,), (50,), (500,))
def nested_early_returns(n):
    if n < 100:
        if n < 10:
            return "small"
        return "medium"
    t = n // 100
    if t == 5:
        return "five hundred"
    return "large"


@case((2.0, 1), (2.0, 0))
def same_value_both_arms(x, c):
    if c:
        y = x * 2
    else:
        y = x * 2
    return y + 1
