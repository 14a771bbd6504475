"""Side effects, aliasing and evaluation order: what CSE, DCE and SSA construction must
respect.  Array reads after writes, calls that mutate their argument, iterables
evaluated once, implicit `None` returns."""
import numpy as np

from . import case

V = np.array([1.0, 2.0, 3.0])


def bump(a):
    a[0] += 1.0
    return a[0]


@case((V,),)
def reread_after_write(a):
    x = a[0]
    a[0] = x + 1.0
    y = a[0]
    return x, y


@case((V,),)
def reread_after_call(a):
    x = a[0]
    bump(a)
    y = a[0]
    return x, y, a[0] - x


@case((V,),)
def call_order(a):
    return bump(a) * 10.0 + bump(a)


@case((V,),)
def repeated_impure_call_not_merged(a):
    s1 = np.sum(a)
    a[1] = 100.0
    s2 = np.sum(a)
    return s1, s2


@case((V, 0), (V, 1))
def chained_call_evaluated_once(a, lo):
    return lo < bump(a) < 3.5, a[0]


@case((V, 0), (V, 1))
def short_circuit_skips_call(a, n):
    r = n > 0 and bump(a) > 0
    return r, a[0]


@case((V,),)
def unused_call_still_runs(a):
    bump(a)
    unused = bump(a) * 2.0  # noqa: F841 - the call must still run
    return a[0]


@case((V,),)
def implicit_none(a):
    a[0] = -1.0


@case((3,),)
def only_pass(n):
    pass


@case(((1, 2, 3),),)
def iterable_evaluated_once(t):
    for v in t:
        t = t + (v,)
    return t


@case((4,), (0,))
def range_evaluated_once(n):
    c = 0
    for i in range(n):
        n -= 1
        c += 1
    return c, n


@case((V,),)
def array_rebound_in_loop(a):
    s = 0.0
    for v in a:
        a = a * 2.0
        s += v
    return s, a


@case((V,),)
def alias_write(a):
    b = a
    b[2] = 0.5
    return a[2], a is b


@case((V,),)
def closure_mutates_captured_array(a):
    def zero(i):
        a[i] = 0.0
    zero(1)
    return a


@case((V,),)
def element_compare_types(a):
    return a[0] > a[1], a[0] == a[0], a[0] + 1, a[0] * 2


@case((V, 0.0), (V, 1.0))
def write_in_branch_then_read(a, flag):
    x = a[1]
    if flag:
        a[1] = x * 3.0
    return x, a[1]


@case((V,),)
def write_in_loop_read_after(a):
    for i in range(3):
        a[i % 2] = a[i % 2] + a[2]
    return a[0], a[1]


# -- augmented assignment: `a += b` updates a mutable `a` in place (the caller and
#    every alias see it) and rebinds an immutable one -------------------------------

@case((V, np.array([0.5, 0.25, 0.125])), (V, 2.0))
def augmented_updates_caller_array(a, b):
    a += b
    return a[0]


@case((V,),)
def augmented_through_alias(a):
    b = a
    b *= 2.0
    b -= a[0]
    return a[1], b is a


@case((V, np.array([1.0, -1.0, 0.5])))
def augmented_accumulator_in_loop(w, x):
    acc = np.zeros(3)
    keep = acc
    for i in range(3):
        acc += w * x[i]
    return keep, acc is keep


@case((V,),)
def augmented_fresh_copy_leaves_input(a):
    c = a + 0.0
    c -= 1.0
    c /= 2.0
    return c, a


@case(([1, 2],),)
def augmented_list_extends_in_place(xs):
    ys = xs
    ys += [3]
    return len(xs), ys is xs


@case(((1.0, 2.0),),)
def augmented_tuple_rebinds(t):
    u = t
    u += (3.0,)
    return t, u


@case((np.array([1, 2, 3]), 0.5), (np.array([1, 2, 3]), 2))
def augmented_int_array_casting(a, x):
    a += x  # numpy refuses float -> int in place (a TypeError); ints are fine
    return a


@case((V, 3))
def augmented_in_callee_reaches_caller(a, n):
    for _ in range(n):
        scale_in_place(a, 0.5)
    return a


def scale_in_place(a, f):
    a *= f
