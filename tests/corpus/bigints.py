"""Exact integer arithmetic beyond 64 bits: no overflow, no silent wrap-around."""
from . import case


@case((50,), (0,))
def fact_iter(n):
    r = 1
    for i in range(2, n + 1):
        r *= i
    return r


@case((200,),)
def fib_big(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@case((100,), (64,), (63,))
def two_pow(n):
    return 2 ** n, 1 << n, (1 << n) - 1, -(2 ** n)


@case((2 ** 64 + 13, 7), (-(2 ** 70), 3), (2 ** 70, -3))
def big_divmod(a, b):
    return a // b, a % b, divmod(a, b)


@case((3, 200, 1000003),)
def modpow(b, e, m):
    return pow(b, e, m), b ** e % m


@case((2 ** 63 - 1,), (-(2 ** 63),))
def edge_of_int64(x):
    return x + 1, x - 1, x * 2, -x, abs(x), x * x


@case((12345678901234567890, 98765432109876543210),)
def big_mul_compare(a, b):
    p = a * b
    return p, p > a, p // b == a, a < b


@case((2 ** 80,), (-3,))
def big_to_float(n):
    return float(n), n / 3, n * 1.0


@case((1 << 100, 37),)
def big_shifts(x, k):
    return x >> k, x << k, x & ((1 << k) - 1), x ^ (x >> 1)


@case((30,),)
def squaring_loop(n):
    x = 3
    for _ in range(n // 5):
        x = x * x
    return x % 1000000007, x > 10 ** 50
