"""A program for `test_raise_formatted` (kept out of the test module: pytest rewrites
the `assert` statements of test modules)."""
import numpy as np


def energy(x, scale):
    assert x.ndim == 1, f"expected a vector, got shape {x.shape}"
    if scale <= 0.0:
        raise ValueError(f"scale must be positive, got {scale:.2f}")
    return 0.5 * scale * np.sum(x * x)
