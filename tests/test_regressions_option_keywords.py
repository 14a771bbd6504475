"""A keyword given to `gradient`, `value_and_grad` or `pullback` that names both one of
zygopy's options (`checkpoint=`, `batch=`, `backend=`) and a parameter of the user's
function was first taken as the option (so the function ran with its own default: a
silently wrong gradient), then refused as ambiguous.  It now goes to the function, as
every keyword the function can accept does (`adjoint.options`); the option keeps its old
spelling only for functions that cannot take a keyword of that name."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from adjoint import gradient, pullback, value_and_grad


def _scaled(w, checkpoint=1.0):
    return np.sum(w * w) * checkpoint


def _rows(x, batch=2.0):
    return np.sum(x) * batch


W = np.array([1.0, -2.0, 0.5])


@pytest.mark.parametrize("backend", ["interp", "auto"])
def test_a_keyword_named_like_an_option_goes_to_the_function(backend):
    want = 2.0 * W * 3.0
    assert np.allclose(gradient(_scaled, W, checkpoint=3.0, backend=backend)[0], want)
    value, g = value_and_grad(_scaled, W, checkpoint=3.0, backend=backend)
    assert np.isclose(value, 3.0 * np.sum(W * W)) and np.allclose(g[0], want)
    _, back = pullback(_scaled, W, checkpoint=3.0, backend=backend)
    assert np.allclose(back(1.0)[0], want)
    assert np.allclose(gradient(_rows, np.ones((2, 3)), batch=0.5, backend=backend)[0],
                       np.full((2, 3), 0.5))


@pytest.mark.parametrize("backend", ["interp", "auto"])
def test_the_parameter_by_position_or_partial_and_the_option_apart(backend):
    want = 2.0 * W * 3.0
    assert np.allclose(gradient(_scaled, W, 3.0, backend=backend)[0], want)
    bound = functools.partial(_scaled, checkpoint=3.0)
    assert np.allclose(gradient(bound, W, backend=backend)[0], want)
    assert np.allclose(gradient(bound, W, checkpoint=1.0, backend=backend)[0], want)
