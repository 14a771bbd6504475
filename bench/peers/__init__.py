"""The peers: the same plain workload code run by Numba, JAX, autograd and PyTorch.

`rebind` gives a peer the workloads' own code objects with its own globals, so that
what Numba compiles and what the eager AD systems trace is byte for byte the code
CPython and zygopy run.  Calls between workload functions (`pow_rec` calling itself,
`black_scholes` calling `norm_cdf`) resolve to the rebound functions, `math` resolves
to a shim whose functions accept the peer's traced values, and `np` (or `numpy`) to
the peer's own numpy (`jax.numpy`, `autograd.numpy`; see `numpy_as`).
"""
from __future__ import annotations

import math
import sys
import types
from collections.abc import Callable
from types import ModuleType, SimpleNamespace

MATH_NAMES = ("exp", "log", "sqrt", "erf", "sin", "cos", "tanh")


def rebind(module: ModuleType, overrides: dict | None = None,
           wrap: Callable | None = None) -> SimpleNamespace:
    """Clone every function defined in `module` with a fresh globals dict.

    `overrides` replaces global names (typically `math`) in that dict; `wrap` (e.g.
    `numba.njit`) is applied to each clone and the wrapped object is what the other
    clones see under the function's name.  Returns the clones by name.
    """
    scope = dict(module.__dict__)
    scope.update(overrides or {})
    clones = {}
    for name, fn in module.__dict__.items():
        if not _defined_in(fn, module):
            continue
        clone = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__,
                                   fn.__closure__)
        clone.__qualname__ = fn.__qualname__
        clones[name] = wrap(clone) if wrap else clone
    scope.update(clones)
    return SimpleNamespace(**clones)


def _defined_in(obj, module: ModuleType) -> bool:
    return isinstance(obj, types.FunctionType) and obj.__module__ == module.__name__


class Rebound:
    """`rebind` applied lazily to the module of each function asked for, once per
    module, so that an adapter works for any suite of workloads (bench.workloads, or a
    papers/ script's own module)."""

    def __init__(self, overrides: dict | None = None, wrap: Callable | None = None):
        self.overrides, self.wrap, self.modules = overrides, wrap, {}

    def __call__(self, func: Callable) -> Callable:
        name = func.__module__
        if name not in self.modules:
            self.modules[name] = rebind(sys.modules[name], self.overrides, self.wrap)
        return getattr(self.modules[name], func.__name__)


def math_shim(lib_funcs: dict, traced: Callable[[object], bool]) -> SimpleNamespace:
    """A stand-in for the `math` module: traced values go to `lib_funcs`, plain numbers
    to `math` itself (so that `math.sqrt(2.0)` stays a float)."""
    def dispatch(name: str) -> Callable:
        plain, lib = getattr(math, name), lib_funcs[name]
        return lambda x: lib(x) if traced(x) else plain(x)
    shim = {name: dispatch(name) for name in MATH_NAMES if name in lib_funcs}
    return SimpleNamespace(pi=math.pi, e=math.e, **shim)


def numpy_as(lib: ModuleType) -> dict:
    """Overrides that make a workload's `np.` (or `numpy.`) calls the peer's own numpy,
    e.g. `numpy_as(jax.numpy)`: plain numpy cannot take the peer's traced values."""
    return {"np": lib, "numpy": lib}


def is_plain_number(x) -> bool:
    return isinstance(x, (int, float))
