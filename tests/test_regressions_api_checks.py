"""Regressions of the user API's checks (fuzz findings 10, 11 and 14):

* a result that is None on one path is None in compiled code too (not 0.0), and
  `gradient` / `value_and_grad` refuse it as the interpreter does;
* `back(dy)` refuses a cotangent whose structure, shape or kind is not the output's;
* complex inputs follow one convention (df/dx + i df/dy) or are refused.
"""
from __future__ import annotations

import numpy as np
import pytest

from adjoint import gradient, pullback, value_and_grad

BACKENDS = ("interp", "llvm")


# -- 14: None results in compiled code ------------------------------------------------
def first_late_double(x, n):
    for i in range(n):
        if i > 5:
            return x * 2.0


def none_checked(x, n):
    y = None
    if n > 0:
        y = x * 3.0
    if y is None:
        return -1.0
    return y


def none_in_tuple(x, n):
    if n > 0:
        return x * 2.0, None
    return None, x


@pytest.mark.parametrize("backend", BACKENDS + ("auto",))
def test_result_none_on_one_path(backend):
    for _ in range(2):      # the second call takes the cached (hot) entries
        assert first_late_double(1.0, 0) is None
        assert pullback(first_late_double, 1.0, 0, backend=backend)[0] is None
        y, back = pullback(first_late_double, 1.5, 9, backend=backend)
        assert y == 3.0 and back(1.0) == (2.0, None)
        for fn in (gradient, value_and_grad):
            with pytest.raises(TypeError, match="must return a real scalar, got NoneType"):
                fn(first_late_double, 1.0, 0, backend=backend)
        assert value_and_grad(first_late_double, 1.0, 7, backend=backend) == (2.0, (2.0, None))


@pytest.mark.parametrize("backend", BACKENDS)
def test_primal_none_compared_and_returned_in_tuple(backend):
    assert value_and_grad(none_checked, 2.0, 0, backend=backend) == (-1.0, (0.0, None))
    assert value_and_grad(none_checked, 2.0, 1, backend=backend) == (6.0, (3.0, None))
    y, back = pullback(none_in_tuple, 2.0, 0, backend=backend)
    assert y == (None, 2.0) and back((None, 1.0)) == (1.0, None)
    y, back = pullback(none_in_tuple, 2.0, 1, backend=backend)
    assert y == (4.0, None) and back((1.0, None)) == (2.0, None)
