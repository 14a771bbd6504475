"""A keyword given to `gradient`, `value_and_grad` or `pullback` that names both one of
zygopy's options (`checkpoint=`, `batch=`) and a parameter of the user's function used
to be taken as the option, so the function ran with its own default: a silently wrong
gradient.  It is now refused, and the two ways around it work."""
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


@pytest.mark.parametrize("call", [
    lambda: gradient(_scaled, W, checkpoint=3.0),
    lambda: value_and_grad(_scaled, W, checkpoint=3.0),
    lambda: pullback(_scaled, W, checkpoint=3.0),
    lambda: gradient(_rows, np.ones((2, 3)), batch=0),
])
def test_an_option_named_like_a_parameter_is_refused(call):
    with pytest.raises(TypeError, match="ambiguous"):
        call()


@pytest.mark.parametrize("backend", ["interp", "auto"])
def test_the_parameter_by_position_or_partial_and_the_option_apart(backend):
    want = 2.0 * W * 3.0
    assert np.allclose(gradient(_scaled, W, 3.0, backend=backend)[0], want)
    bound = functools.partial(_scaled, checkpoint=3.0)
    assert np.allclose(gradient(bound, W, backend=backend)[0], want)
    assert np.allclose(gradient(bound, W, checkpoint=1.0, backend=backend)[0], want)
