"""Scalar functions for the CUDA tests: loops, branches, calls between user
functions, recursion, math and integer arithmetic.  Each case is
(function, example arguments); an ndarray argument is mapped elementwise."""
from __future__ import annotations

import math

import numpy as np


def pow_loop(x, n):
    r = 1.0
    while n > 0:
        n -= 1
        r *= x
    return r


def leaky(x):
    if x > 0.0:
        return x
    return 0.01 * x


def _sq(y):
    return y * y


def calls(x, y):
    return _sq(x) + 3.0 * _sq(y - x)


def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


def math_mix(x, y):
    a = math.sin(x) * math.exp(-x * x) + math.log1p(abs(y))
    b = math.atan2(y, x) + math.hypot(x, y) + math.sqrt(abs(x) + 1.0)
    return a + b + math.floor(x) + x ** 2.5 if x > 0.0 else a - b + math.cos(y) ** 3


def for_range(x, n):
    s = 0.0
    for k in range(n):
        if k % 3 == 0:
            s += math.tanh(x * k)
        else:
            s -= x / (k + 1)
    return s


def int_ops(i, j):
    q = i // (j if j != 0 else 1)
    r = i % 7
    return q * 3 - r + (i << 2) - abs(j)


def is_close(x, y):
    return abs(x - y) < 1e-3 or x > y


def black_scholes(s, k, t, r, v):
    d1 = (math.log(s / k) + (r + 0.5 * v * v) * t) / (v * math.sqrt(t))
    d2 = d1 - v * math.sqrt(t)
    cdf1 = 0.5 * (1.0 + math.erf(d1 / math.sqrt(2.0)))
    cdf2 = 0.5 * (1.0 + math.erf(d2 / math.sqrt(2.0)))
    return s * cdf1 - k * math.exp(-r * t) * cdf2


def newton_sqrt(x):
    g = x if x > 1.0 else 1.0
    it = 0
    while abs(g * g - x) > 1e-12 * x and it < 50:
        g = 0.5 * (g + x / g)
        it += 1
    return g


X = np.linspace(0.5, 2.0, 5)
CASES = [
    (pow_loop, (X, 3)),
    (leaky, (np.linspace(-1.0, 1.0, 5),)),
    (calls, (X, 0.25)),
    (fact, (np.arange(1, 6),)),
    (math_mix, (X, np.linspace(-1.0, 1.0, 5))),
    (for_range, (X, 7)),
    (int_ops, (np.arange(-3, 2), 4)),
    (is_close, (X, 1.0)),
    (black_scholes, (np.linspace(90.0, 110.0, 5), 100.0, 0.5, 0.01, 0.2)),
    (newton_sqrt, (X,)),
]
# Cases whose gradient kernel is built (float result).
GRADIENT_CASES = [c for c in CASES if c[0] not in (fact, int_ops, is_close)]
