"""for over range with one, two and three arguments, negative and empty ranges."""
from . import case


@case((5,), (0,), (-3,))
def sum_range(n):
    s = 0
    for i in range(n):
        s += i
    return s


@case((2, 7), (7, 2), (-3, 3))
def range_two(a, b):
    s = 0
    for i in range(a, b):
        s = s * 2 + i
    return s


@case((0, 10, 3), (10, 0, -3), (5, 5, 1), (-1, -10, -2))
def range_three(a, b, step):
    out = ()
    for i in range(a, b, step):
        out = out + (i,)
    return out


@case((5,), (1,), (0,))
def reverse_range(n):
    r = 0
    for i in range(n - 1, -1, -1):
        r = r * 10 + i
    return r


@case((4,), (0,))
def loop_var_after(n):
    i = -1
    for i in range(n):
        pass
    return i


@case((6,), (1,))
def triangular(n):
    c = 0
    for i in range(n):
        for j in range(i, n):
            c += j - i
    return c


@case((10,), (9,))
def sum_squares_step(n):
    s = 0.0
    for k in range(1, n + 1, 2):
        s += 1.0 / (k * k)
    return s


@case((3.0, 4),)
def float_accumulate(x, n):
    acc = 1.0
    for i in range(n):
        acc = acc * x + i
    return acc


@case((2 ** 70, 3),)
def big_range(start, n):
    s = 0
    for i in range(start, start + n):
        s += i
    return s


@case((10,), (3,))
def range_break_else(n):
    for i in range(n):
        if i * i > 20:
            res = i
            break
    else:
        res = -1
    return res


@case((5, -1), (5, 2))
def range_step_arg(n, step):
    s = 0
    if step > 0:
        for i in range(0, n, step):
            s += i
    else:
        for i in range(n, 0, step):
            s += i
    return s


@case((4,), (0,))
def range_loop_var_shadow(n):
    total = 0
    for n2 in range(n):
        for n2 in range(n2):  # noqa: B020 - shadowing on purpose
            total += n2
    return total
