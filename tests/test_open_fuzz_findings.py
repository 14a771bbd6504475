"""Open findings of the shared fuzzers, kept as strict expected failures: each asserts
the right answer, so it fails loudly (XPASS) once the bug is fixed, and is then moved
to a regression test.

* Seed 777003331031 of `fuzz_zygopy.py`, reduced: the compiled adjoint raises
  `OverflowError: 0.0 cannot be raised to a negative power` at the `** -1`, whose base
  is at least 1.0, inside a `while` loop with an early `return` and a `while ... else`;
  the interpreter's gradient is right.  A base read as 0.0 means the compiled adjoint
  reads a value that path did not record."""
import math

import pytest

from adjoint import gradient


def h0(p0):
    return ((math.sin(p0) / (1.055 * -0.05)) + (-(p0 ** 0))), math.exp(-(((p0 * p0) / (1.5 + (p0 + p0) * (p0 + p0)))) ** 2)  # noqa: UP034

def f(x, y):
    v0 = math.sqrt(1.0 + (y - h0(x)[1]) * (y - h0(x)[1]))
    v1 = math.tanh(x)
    j0 = 0
    while j0 < 3:
        j0 += 1
        for i1 in range(1):
            tp3 = (v1, (math.exp(-(y) ** 2) / (1.5 + y * y)))
            y, _ = tp3
        if v0 <= h0(1.523)[1]:
            return x
        j1 = 0
        while j1 < 1:
            j1 += 1
            x = ((1.0 + (-((j0 * 0.25) * -1.48)) * (-((j0 * 0.25) * -1.48))) ** -1)
    else:  # noqa: PLW0120 (as the fuzzer wrote it)
        w1 = 0
        while w1 < 5 and (v1 >= (-1.199 - v0)):
            if math.exp(-(v0) ** 2) <= 1.118:
                return math.exp(-(v0) ** 2)
            j2 = 0
            while j2 < 3:
                y *= y
    return v1



ARGS = (-0.2698, -0.9849)


def central(k, eps=1e-6):
    up, dn = list(ARGS), list(ARGS)
    up[k] += eps
    dn[k] -= eps
    return (f(*up) - f(*dn)) / (2 * eps)


def test_the_interpreter_is_right():
    g = gradient(f, *ARGS, backend="interp")
    assert g == pytest.approx((central(0), central(1)), abs=1e-6)


@pytest.mark.xfail(strict=True, raises=OverflowError,
                   reason="open: the compiled adjoint reads an unrecorded value")
def test_the_compiled_adjoint_is_right():
    g = gradient(f, *ARGS, backend="llvm")
    assert g == pytest.approx((central(0), central(1)), abs=1e-6)
