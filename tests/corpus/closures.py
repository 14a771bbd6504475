"""Nested functions, lambdas, closures over free variables, higher-order functions,
and closures passed in as arguments or lowered as the entry function."""
from . import add_case, case


def make_adder(k):
    def add(x):
        return x + k
    return add


def make_affine(a, b):
    return lambda x: a * x + b


def square(t):
    return t * t


TRIPLE = lambda t: 3 * t


@case((2.0, 3.0), (-1, 4))
def local_lambda(x, y):
    sq = lambda t: t * t
    return sq(x) + sq(y)


@case((2.0,), (5,))
def nested_closure(x):
    k = x * 2

    def inner(t):
        return t + k
    return inner(1) + inner(x)


@case((1.5,),)
def two_level_closure(x):
    a = x + 1

    def middle(t):
        b = t * a

        def inner(u):
            return u + a + b
        return inner(t)
    return middle(2.0)


@case((square, 3.0), (TRIPLE, 2), (make_adder(10), 1))
def apply_twice(f, x):
    return f(f(x))


@case((2.0,), (0,))
def compose_inside(x):
    f = make_adder(1.5)
    g = make_affine(2.0, -1.0)
    return g(f(x)), f(g(x))


@case((3,), (0,))
def closure_in_loop(n):
    acc = 0
    for i in range(n):
        g = lambda t: t + i  # noqa: B023 - called at once
        acc += g(10)
    return acc


@case((4.0,),)
def higher_order_local(x):
    def twice(f, v):
        return f(f(v))
    return twice(lambda t: t * 0.5, x) + twice(square, x)


@case((2.0, 1), (2.0, 0))
def choose_lambda(x, k):
    f = (lambda t: t + 1) if k else (lambda t: t - 1)
    return f(x)


@case((3.0,),)
def closure_multi_capture(x):
    a, b, c = x, x * 2, x * 3

    def combo(t):
        return a * t * t + b * t + c
    return combo(1.0) + combo(-1.0)


@case((2.0,),)
def closure_reads_later_binding(x):
    def g():
        return y * 2
    y = x + 1
    return g()


@case((5,), (1,))
def lambda_default_arg(n):
    f = lambda t, s=n: t * s
    return f(2) + f(2, 3)


@case((3.0,),)
def recursive_inner(x):
    def walk(k, acc):
        if k == 0:
            return acc
        return walk(k - 1, acc * x)
    return walk(4, 1.0)


add_case(make_adder(5), (1,), (2.5,), name="entry_closure_adder")
add_case(make_affine(2.0, -3.0), (1.0,), (0,), name="entry_closure_affine")
add_case(TRIPLE, (2,), (1.5,), name="entry_module_lambda")
