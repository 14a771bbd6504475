"""Tuples: build, return, unpack, swap, index (incl. negative), len, nested, compare."""
from . import case


@case((1, 2.0),)
def build_tuple(a, b):
    return (a, b, a + b)


@case(((1.0, 2.0, 3.0),),)
def unpack_three(t):
    a, b, c = t
    return c, b, a


@case((1, 2), (2.5, -1))
def swap(a, b):
    a, b = b, a
    return a - b


@case(((4, 5, 6, 7),),)
def index_tuple(t):
    return t[0] + t[-1] * 10 + t[1] * 100 + t[-2] * 1000


@case(((1, (2, 3), 4),),)
def nested_index(t):
    inner = t[1]
    return inner[0] * t[2] + t[1][1]


@case(((1, 2, 3),), ((),))
def tuple_len(t):
    return len(t), len((t, t))


@case((1, 2, 3, 4), (1, 2, 1, 3))
def tuple_compare(a, b, c, d):
    return (a, b) < (c, d), (a, b) == (c, d - 2), (a, b) != (1, 2)


@case(((1, 2), (3,)),)
def tuple_concat(s, t):
    u = s + t + (4,)
    return u, u * 2


@case((3.0, 4.0),)
def nested_unpack(x, y):
    (a, b), c = (x, y), x * y
    return a + b * c


@case((2, 3, 5),)
def three_way_rotate(a, b, c):
    a, b, c = b, c, a
    return a * 100 + b * 10 + c


@case(((5, 6, 7), 1), ((5, 6, 7), -3))
def variable_index(t, i):
    return t[i]


@case((1.0, 2.0),)
def tuple_of_exprs_unpack(x, y):
    s, d, p = x + y, x - y, x * y
    return (s, d, p), s * d * p


@case((3,),)
def tuple_accumulate(n):
    t = ()
    for i in range(n):
        t = (i,) + t
    return t


@case(((1.0, 2.0), (3.0, 4.0)),)
def tuple_of_tuples_loop(p, q):
    s = 0.0
    for a, b in (p, q):
        s += a * b
    return s
