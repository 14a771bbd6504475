"""The functions of the README's tour: the paper's `pow` and a leaky ReLU."""
import math


def pow(x, n):
    r = 1
    while n > 0:
        n -= 1
        r *= x
    return r


def leaky_relu(x):
    return x if x > 0 else 0.01 * x


def trace(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)
