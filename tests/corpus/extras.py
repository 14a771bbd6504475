"""Ordinary Python the issue does not list explicitly: slices, array methods, walrus,
enumerate/zip iteration, star-unpacking, string values.  Reported separately from
the core corpus; a refusal here is a known gap, a wrong value is a bug."""
import numpy as np

from . import case

V = np.array([1.0, -2.0, 3.5, 0.25, 8.0])


@case((V,),)
def array_slices(a):
    return a[1:], a[:-1] * 2.0, a[::2], a[1:4:2]


@case(((1, 2, 3, 4),),)
def tuple_slices(t):
    return t[1:], t[:2], t[::-1]


@case((V,),)
def slice_assign(a):
    a[1:3] = 0.0
    return a


@case((5,), (0,))
def walrus(n):
    s = 0
    while (k := n - s) > 0:
        s += 1
    return s, k


@case(((2.0, 3.0, 4.0),),)
def enumerate_loop(t):
    s = 0.0
    for i, v in enumerate(t):
        s += i * v
    return s


@case(((1, 2, 3), (4, 5, 6)),)
def zip_loop(a, b):
    s = 0
    for x, y in zip(a, b):
        s += x * y
    return s


@case(((1, 2, 3, 4),),)
def star_unpack(t):
    first, *rest = t
    return first, rest


@case((V,),)
def reversed_loop(a):
    s = 0.0
    for v in reversed(a):
        s = s * 0.5 + v
    return s


@case((3,),)
def string_values(n):
    s = "ab"
    return s * n, len(s * n)


@case((V,),)
def array_method_calls(a):
    return a.sum(), a.max(), a.argmin(), a.astype(np.int64)


@case((2.0,),)
def list_literal_index(x):
    xs = [x, x * 2, x * 3]
    xs[1] = 0.0
    return xs[0] + xs[1] + xs[-1], len(xs)
