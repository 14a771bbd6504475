"""The per-call overhead suite: one scalar function so small that a gradient call is
all overhead.  Issue 4 asks for a scalar pullback plus `back(1.0)` round trip under
3 microseconds (a jitted JAX call costs 5-10 here).  `python -m bench.run` measures it
for every gradient system after the main table; it can also run on its own:

    python -m bench.run --suite bench.overhead --systems zygopy,jax-jit
"""
from __future__ import annotations

from bench.workloads import Workload


def square(x):
    return x * x


WORKLOADS = (
    Workload("square", square, lambda: (1.5,), (0,), False,
             "x * x: what one gradient call costs beyond the arithmetic"),
)
