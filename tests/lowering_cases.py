"""Functions for tests/test_lowering.py: one or two per construct the lowering
handles, each with argument lists to run them on."""
import math

import numpy as np

CASES = []


def case(*arglists):
    def deco(f):
        CASES.append((f, arglists))
        return f
    return deco


def pow_(x, n):
    r = 1
    while n > 0:
        n -= 1
        r *= x
    return r


case((2.0, 10), (3, 0), (-2, 5))(pow_)


@case((3, 4), (2.5, -1.0))
def arith(a, b):
    return a + b, a - b, a * b, a / b, a // b, a % b, a ** 2, -a, +b


@case((5, 3), (12, 10))
def bitops(a, b):
    return a & b, a | b, a ^ b, ~a, a << 2, a >> 1


@case((1, 2, 3), (3, 2, 1), (2, 2, 2))
def chained(a, b, c):
    return a < b < c, a <= b >= c, a == b != c


@case((0, 5), (3, 0), (2, 4))
def and_or(x, y):
    return x and y, x or y, (x and y) or 7, not x


@case((1,), (-1,), (0,))
def cond_expr(x):
    return "pos" if x > 0 else ("neg" if x < 0 else "zero")


@case((5,), (-3,), (0,), (150,))
def if_elif(x):
    if x > 100:
        y = 3
    elif x > 0:
        y = 2
    elif x == 0:
        return 0
    else:
        y = 1
    return y * x


@case((10,), (0,))
def while_else(n):
    s = 0
    while n > 0:
        if n == 7:
            break
        s += n
        n -= 1
    else:
        s = -s
    return s


@case((10,), (3,))
def for_break_continue(n):
    t = 0
    for i in range(n):
        if i % 2:
            continue
        if i > 6:
            break
        t += i
    else:
        t += 1000
    return t


@case((0, 10, 3), (10, 0, -2), (5, 5, 1), (3, 9, -1), (1, 4, 0))
def range_dynamic_step(a, b, s):
    out = 0
    for i in range(a, b, s):
        out = out * 10 + i
    return out


@case((7,), (0,))
def range_negative(n):
    acc = []
    for i in range(n, -1, -2):
        acc.append(i)
    return tuple(acc)


@case((3.0,), (True,))
def range_bad_bound(x):
    t = 0
    for i in range(x):
        t += i
    return t


@case((10,),)
def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@case((10,),)
def swap_loop(n):
    x, y = 1, 2
    i = 0
    while i < n:
        x, y = y, x
        i += 1
    return x, y


@case((np.arange(5.0),), ((1, 2, 3),), ([4, 5],))
def iterate_seq(s):
    t = 0
    for v in s:
        t = t + v * v
    return t


@case((np.arange(4.0), (1.0, 2.0, 3.0)),)
def enumerate_zip(a, b):
    t = 0.0
    for k, v in enumerate(a):
        t += k * v
    for k, v in enumerate(b, 10):
        t += k * v
    for u, w in zip(a, b):
        t += u - w
    return t


@case((np.arange(4.0),))
def reversed_loop(a):
    out = 0.0
    for v in reversed(a):
        out = out * 2 + v
    return out


@case((4,), (0,))
def nested_loops(n):
    s = 0
    for i in range(n):
        j = 0
        while j < i:
            s += i * j
            j += 1
    return s


@case((5,), (-1,))
def early_return(n):
    for i in range(10):
        if i == n:
            return i * 100
    return -1


@case((3,), (0,))
def maybe_unbound(n):
    if n > 0:
        y = n
    return y


def helper(a, b=2, *, c=3):
    return a * b + c


@case((5,),)
def kw_calls(x):
    return helper(x), helper(x, 4), helper(x, c=1), helper(b=1, a=x), helper(x, c=0, b=0)


@case((np.array([1.0, 2.0, 3.0]),))
def method_calls(a):
    return a.sum(), a.reshape(3, 1).shape, a.mean()


@case((0.5,), (2.0,))
def module_attrs(x):
    return math.sin(x) + math.pi, np.dot(np.ones(3), np.ones(3)) * x, math.floor(x)


@case((3.0,),)
def closure_once(x):
    k = x * 2

    def inner(t):
        return t + k
    return inner(1.0) + inner(2.0)


@case((2.0,),)
def lambda_no_capture(x):
    f = lambda t: t * t  # noqa: E731
    return f(x) + f(3)


@case((4.0,),)
def closure_param(x):
    g = lambda t: t * x  # noqa: E731
    return g(2.0)


@case((1, 2),)
def nested_closure(a, b):
    def outer(t):
        def inner(u):
            return u + a + t
        return inner(b)
    return outer(10)


@case((3,), (0,))
def closure_loop_cells(n):
    acc = 0
    for i in range(n):
        acc += (lambda: i)()  # noqa: PLC3002 - a closure made in a loop
    return acc


@case((2.0,),)
def closure_reassigned_after(x):
    y = x
    f = lambda: y
    y = y + 1
    return f()


@case((3,),)
def closures_see_last_value(n):
    fs = []
    for i in range(n):
        fs.append(lambda: i * 10)  # noqa: B023 - late binding is the point
    return fs[0](), fs[-1]()


@case((2.0,), (-1.0,))
def param_cell_reassigned(x):
    def get():
        return x
    before = get()
    x = x * 3
    return before, get()


@case((4,),)
def cell_through_two_levels(n):
    k = 1

    def outer(t):
        def inner():
            return k + t
        return inner()
    k = n
    return outer(100)


@case((5,), (0,))
def recursive_local(n):
    def fact(k):
        return 1 if k <= 1 else k * fact(k - 1)
    return fact(n)


@case((1,), (0,))
def empty_cell_read(c):
    def g():
        return y
    if c:
        y = 7
    return g()


@case((3,),)
def default_from_local(n):
    f = lambda t, s=n * 2: t + s
    n = 100
    return f(1), f(1, 2), n


@case(((1, 2, 3),), ((4, 5, 6),))
def tuple_ops(t):
    a, b, c = t
    u = (c, b, a)
    return u[0] + u[-1], u, t[1:], len(t)


@case((np.arange(12.0).reshape(3, 4),))
def array_index(a):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            s += a[i, j] * a[-1, -1]
    return s, a[1], a[1:3].shape, a[0, 1:3]


@case((np.zeros(5),))
def array_write(a):
    b = a.copy()
    for i in range(len(b)):
        b[i] = i * i
    b[-1] += 7.0
    return b


@case((np.arange(6.0).reshape(2, 3),))
def array_write_2d(a):
    b = np.zeros((2, 3))
    b[1, 2] = a[0, 1]
    b[0, 0] += 3.0
    return b


@case(([3, 1, 2],), ((1,),))
def list_literals(xs):
    ys = [1, 2, 3]
    zs = [xs[0], len(xs)]
    return ys, zs, [1.0, 2.0, 3.0, 4.0]


@case((None,), (3,))
def none_checks(x):
    if x is None:
        return 0
    if x is not None and x > 2:
        return x
    return -1


@case((3, (1, 2, 3)), (5, [1, 2]))
def contains(x, s):
    return x in s, x not in s


@case((2, 5),)
def augmented(a, b):
    a += b
    a -= 1
    a *= b
    a //= 2
    a **= 2
    a %= 1000
    return a


@case((4,), (7,))
def recursive(n):
    return 1 if n <= 1 else n * recursive(n - 1)


@case((3.0,), (-1.0,))
def isinstance_and_builtins(x):
    if isinstance(x, float) and x > 0:
        return abs(x), max(x, 2.0), min(x, 2.0), round(x)
    return abs(x), int(x), float(x), bool(x)


def kwonly_params(a, b, *, c):
    return a + b * c


@case((1, 2, 3),)
def call_kwonly_params(a, b, c):
    return kwonly_params(a, b, c=c) + kwonly_params(c=a, b=c, a=b)


@case((2, 1), (1, 2))
def conditional_in_call(a, b):
    return max(a if a > b else b, 0), (a > b) + 1


@case((1.5,),)
def unary_plus(x):
    return +x, -(-x)


@case((5,),)
def while_true_break(n):
    i = 0
    while True:
        i += 1
        if i >= n:
            break
    return i


@case((0,), (1,))
def zero_division(d):
    return 10 // d


@case(((1, 2),), ((1, 2, 3),))
def unpack_error(t):
    a, b = t
    return a - b


@case((np.arange(3.0), 5), (np.arange(3.0), 1))
def index_error(a, k):
    return a[k]


@case(((1, 2, 3, 4),), ([1, 2],), ((1,),))
def star_assign(t):
    a, *b, c = t
    return a, b, c
