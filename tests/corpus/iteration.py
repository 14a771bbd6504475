"""for over numpy arrays (1-D elements, 2-D rows) and over tuples."""
import numpy as np

from . import case

V = np.array([1.0, -2.0, 3.5, 0.25])
M = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
IV = np.array([3, 1, 4, 1, 5], dtype=np.int64)


@case((V,), (np.zeros(0),))
def sum_array(a):
    s = 0.0
    for v in a:
        s += v
    return s


@case((V,),)
def max_array(a):
    m = a[0]
    for v in a:
        if v > m:  # noqa: PLR1730 - a branch on purpose
            m = v
    return m


@case((IV,),)
def int_array_iter(a):
    s = 0
    for v in a:
        s = s + v * v
    return s


@case((M,),)
def iter_rows(m):
    total = 0.0
    for row in m:
        for v in row:
            total += v * v
    return total


@case(((1.0, 2.0, 3.0),), ((),))
def iter_tuple_arg(t):
    s = 0.0
    for v in t:
        s = s * 2 + v
    return s


@case((2.0,),)
def iter_tuple_literal(x):
    s = 0.0
    for c in (1.0, -0.5, 0.25):
        s = s * x + c
    return s


@case(((1, 2.5, True, None),),)
def iter_mixed_tuple(t):
    n = 0
    for v in t:
        if v is None:
            n += 100
        elif v:
            n += 1
    return n


@case((V, 3.0), (V, 100.0))
def array_for_else(a, thresh):
    for v in a:
        if v > thresh:
            r = v
            break
    else:
        r = -1.0
    return r


@case((V,),)
def array_continue(a):
    s = 0.0
    for v in a:
        if v < 0:
            continue
        s += v
    return s


@case((M,),)
def row_sums(m):
    out = ()
    for row in m:
        out = out + (np.sum(row),)
    return out


@case(((2, 3, 4),),)
def nested_tuple_loops(t):
    c = 0
    for a in t:
        for b in t:
            if a < b:
                c += a * b
    return c
