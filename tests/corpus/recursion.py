"""Recursion, mutual recursion, recursion through helpers."""
from . import case


@case((0,), (5,), (25,))
def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


@case((0,), (1,), (12,))
def fib_rec(n):
    if n < 2:
        return n
    return fib_rec(n - 1) + fib_rec(n - 2)


@case((10,), (7,), (0,))
def is_even(n):
    if n == 0:
        return True
    return is_odd(n - 1)


def is_odd(n):
    if n == 0:
        return False
    return is_even(n - 1)


@case((2, 3), (1, 5))
def ackermann(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann(m - 1, 1)
    return ackermann(m - 1, ackermann(m, n - 1))


@case((2.0, 10), (3, 13), (1.5, 0))
def fast_pow(x, n):
    if n == 0:
        return 1
    h = fast_pow(x, n // 2)
    if n % 2 == 0:
        return h * h
    return h * h * x


@case((1071, 462), (5, 0))
def gcd_rec(a, b):
    return a if b == 0 else gcd_rec(b, a % b)


@case((5,), (1,))
def hanoi_moves(n):
    if n == 0:
        return 0
    return 2 * hanoi_moves(n - 1) + 1


@case((9,), (3,))
def three_way_a(n):
    if n <= 0:
        return 0
    return 1 + three_way_b(n - 1)


def three_way_b(n):
    if n <= 0:
        return 10
    return 2 * three_way_c(n - 1)


def three_way_c(n):
    if n <= 0:
        return 100
    return three_way_a(n - 1) - 1


@case((0.5, 6), (2.0, 3))
def float_recursion(x, depth):
    if depth == 0:
        return x
    return 0.5 * (float_recursion(x * 1.5, depth - 1) + x)


@case((60,),)
def moderate_depth(n):
    if n == 0:
        return 0
    return n + moderate_depth(n - 1)


@case((150,),)
def deeper_recursion(n):
    if n == 0:
        return 0.0
    return 1.0 / n + deeper_recursion(n - 1)


@case((6,), (0,))
def recursion_in_loop(n):
    s = 0
    for i in range(n):
        s += fact(i)
    return s
