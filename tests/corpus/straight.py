"""Straight-line arithmetic: operators, augmented assignment, math functions, and the
floating-point identities an optimiser must not apply blindly."""
import math

from . import case

NAN = float("nan")
INF = float("inf")
SCALE = 2.5


@case((2.0, 3.0), (-1.5, 0.25), (3, 4))
def poly(x, y):
    return 3 * x * x + 2 * x * y - y + 1


@case((1.0,), (0.0,), (-2.5,))
def trig(x):
    return math.sin(x) * math.cos(x) + math.tanh(x) - math.atan2(x, 2.0)


@case((7, 2), (-7, 2), (7, -2), (7.5, 2.0), (-7.5, 2.0))
def divisions(a, b):
    return a // b, a % b, a / b


@case((3, 5), (-12, 7))
def bit_ops(a, b):
    return (a & b) | (a ^ b) << 2 >> 1, ~a, a << 3, b >> 1


@case((2.0,), (9,), (0.5,))
def sqrt_pi(x):
    return math.sqrt(x) * math.pi + math.e - math.log(x) + math.exp(x / 4)


@case((1.5, 2), (-2.0, 3), (2, -1), (4, 0))
def powers(x, n):
    return x ** n + n ** 2 - (-x) ** 3


@case((5,), (-3,), (0,), (2.5,))
def unary_ops(a):
    return -a, +a, not a, abs(a)


@case((3.0, 4.0), (1.0, -2.0))
def augmented_float(x, y):
    z = x
    z += y
    z *= 2
    z -= x
    z /= y
    z **= 2
    return z


@case((29, 3), (-29, 4), (1000, 7))
def augmented_int(a, b):
    c = a
    c //= b
    c %= 1000
    c <<= 2
    c >>= 1
    c &= 0xFF
    c |= 3
    c ^= b
    return c


@case((2.0,), (-0.75,))
def many_temps(x):
    a = x + 1
    b = a * a
    c = b - a
    d = c / 2
    return d + a * b * c


@case((1, 2.0), (-3, 0.5), (7, 2.0))
def mixed_int_float(n, x):
    return n + x, n * 2, n / 2, n * x - n


@case((0.1, 0.2), (1e16, 1.0))
def no_reassociation(a, b):
    return (a + b) + 0.3, a + (b + 0.3), (a * 3.0) * 0.1 - a * (3.0 * 0.1)


@case((NAN,), (INF,), (-0.0,), (2.0,), (0.0,))
def float_identities(x):
    return x * 1.0, x + 0.0, x - x, x * 0.0, 0.0 - x, x - 0.0, x / 1.0


@case((3,), (0,), (-8,))
def int_identities(n):
    return n * 1, n + 0, n - n, n * 0, 0 - n, n // 1, n ** 1, n | 0, n & -1


@case((True, False), (True, True))
def bool_arith(p, q):
    return p + q, p * 3, p & q, p | q, -p, p ^ q


@case((3.7,), (-2.5,), (2.5,), (0.5,))
def builtin_numeric(x):
    return round(x), round(x, 1), abs(x), min(x, 1.0), max(x, -1.0, 0.5), int(x), float(int(x))


@case((17, 5), (-17, 5), (17, -5))
def divmod_pow(a, b):
    return divmod(a, b), pow(a, 2), pow(a, 3, 11)


@case((1.25,), (-4.0,))
def globals_and_constants(x):
    return x * SCALE + math.pi - math.inf * 0.0 if x > 0 else x / SCALE


@case((0.3, 0.4), (3.0, 4.0))
def hypot_and_floor(x, y):
    return math.hypot(x, y), math.floor(x * 10), math.ceil(y * 10), math.fabs(-x)


@case((2.0, 3.0, 4.0),)
def dependency_chain(a, b, c):
    d = a * b
    e = d + c
    f = e * d
    g = f - a
    h = g / b
    return h * h - e
