"""`isinstance` decided at compile time by the value's JIT type.

A dict and a list literal are typed as kinds of tuple inside the JIT (their entries
are slots), and `isinstance(p, tuple)` of a dict or a list compiled to True: a silent
wrong branch.  A dict is a dict, a list a list, a named tuple its class, and a list
built by appends (a generator's result, in forward mode) is a list too.
"""
from __future__ import annotations

import numpy as np
import pytest

import adjoint
import jit


def kind_code(p):
    a = 1.0 if isinstance(p, tuple) else 0.0
    b = 1.0 if isinstance(p, dict) else 0.0
    c = 1.0 if isinstance(p, list) else 0.0
    return a * 100 + b * 10 + c


@pytest.mark.parametrize("p", [(1.0, 2.0), {"a": 1.0}, [1.0, 2.0]], ids=["tuple", "dict", "list"])
def test_compiled_isinstance_matches_cpython(p):
    assert jit.jit(kind_code)(p) == kind_code(p)


def _rows(x):
    for k in range(3):
        yield x * k


def sum_of_generated_squares(x):
    s = 0.0
    for v in _rows(x):
        s = s + np.sum(v * v)
    return s


def test_forward_mode_over_a_generated_list_compiles():
    x, t = np.arange(3.0), np.ones(3)
    y, dy = adjoint.jvp(sum_of_generated_squares, (x,), (t,), backend="llvm")
    assert y == pytest.approx(sum_of_generated_squares(x))
    assert dy == pytest.approx(float(np.sum(2 * 5 * x)))   # sum_k k^2 * 2 x . t, k = 0, 1, 2
