"""The benchmark workloads: plain Python exactly as a user would write it.

Loops, branches, recursion and calls between user functions, scalar `math` calls and
element-by-element indexing of numpy arrays; nothing written for a particular tool.
Every system runs these very code objects: the compiled peers get them with their own
globals (`bench.peers.rebind`), zygopy lowers them from their bytecode.

`WORKLOADS` lists one `Workload` per function: its seeded inputs, which arguments are
differentiated, and whether it is a loop workload (the issue's 100x target over the
eager peers applies to those).
"""
from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

SEED = 20181017  # the arXiv submission date of "Don't Unroll Adjoint"


def pow_loop(x, n):
    r = 1.0
    i = 0
    while i < n:
        r = r * x
        i += 1
    return r


def pow_rec(x, n):
    if n == 0:
        return 1.0
    return x * pow_rec(x, n - 1)


def leaky_sum(xs):
    s = 0.0
    for i in range(len(xs)):
        x = xs[i]
        if x > 0.0:
            s += x
        else:
            s += 0.01 * x
    return s


def horner(x, coeffs):
    r = 0.0
    for i in range(len(coeffs)):
        r = r * x + coeffs[i]
    return r


def logsumexp(xs):
    m = xs[0]
    for i in range(1, len(xs)):
        if xs[i] > m:  # noqa: PLR1730 (the branch is what is measured)
            m = xs[i]
    s = 0.0
    for i in range(len(xs)):
        s += math.exp(xs[i] - m)
    return m + math.log(s)


def rosenbrock(xs):
    s = 0.0
    for i in range(len(xs) - 1):
        s += 100.0 * (xs[i + 1] - xs[i] ** 2) ** 2 + (1.0 - xs[i]) ** 2
    return s


def lotka_volterra(alpha, beta, delta, gamma, n):
    x = 10.0
    y = 5.0
    dt = 0.01
    for _ in range(n):
        x, y = x + dt * (alpha * x - beta * x * y), y + dt * (delta * x * y - gamma * y)
    return x + y


def norm_cdf(z):
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def black_scholes(spot, strike, maturity, rate, vol):
    sd = vol * math.sqrt(maturity)
    d1 = (math.log(spot / strike) + (rate + 0.5 * vol ** 2) * maturity) / sd
    d2 = d1 - sd
    return spot * norm_cdf(d1) - strike * math.exp(-rate * maturity) * norm_cdf(d2)


@dataclass(frozen=True)
class Workload:
    """One benchmark: a plain function, a seeded input factory and what to differentiate.

    `make_args()` returns a fresh tuple of positional arguments (floats, ints, float64
    numpy arrays, or lists, tuples and dicts of those) built from `SEED`; `wrt` lists
    the positions of the differentiated arguments.  `loop` marks the workloads whose cost is a
    loop or a recursion, where the eager peers pay per iteration.
    """

    name: str
    func: Callable
    make_args: Callable[[], tuple]
    wrt: tuple
    loop: bool
    description: str

    def args(self) -> tuple:
        return self.make_args()


def leaves(x) -> list:
    """The numbers and arrays of an argument or a gradient in a fixed order: `x` itself
    when it is one, else its lists', tuples' and dicts' (keys sorted) leaves, depth
    first.  Every system's gradient of a structured argument (a list of (W, b) tuples)
    is compared leaf by leaf in this order."""
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in leaves(x[k])]
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in leaves(item)]
    return [x]


def rebuild(template, new_leaves: list):
    """`template`'s structure with its leaves replaced, in `leaves` order."""
    it = iter(new_leaves)

    def build(x):
        if isinstance(x, dict):
            built = {k: build(x[k]) for k in sorted(x)}
            return {k: built[k] for k in x}
        if isinstance(x, (list, tuple)):
            items = [build(item) for item in x]
            if isinstance(x, list):
                return items
            return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
        return next(it)
    return build(template)


def is_structured(x) -> bool:
    return isinstance(x, (list, tuple, dict))


def _rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def _normal(n: int, scale: float = 1.0) -> Callable[[], tuple]:
    return lambda: (scale * _rng().standard_normal(n),)


def _horner_args() -> tuple:
    return (0.9, _rng().uniform(-1.0, 1.0, 1000))


def _rosenbrock_args() -> tuple:
    return (_rng().uniform(-1.5, 1.5, 10_000),)


WORKLOADS = (
    Workload("pow_loop", pow_loop, lambda: (1.0005, 1000), (0,), True,
             "x**n by a while loop, n = 1000"),
    Workload("pow_rec", pow_rec, lambda: (1.0005, 500), (0,), True,
             "x**n by recursion, n = 500"),
    Workload("leaky_sum", leaky_sum, _normal(10_000), (0,), True,
             "sum of leaky ReLU, branch in a loop over 10,000 elements"),
    Workload("horner", horner, _horner_args, (0, 1), True,
             "polynomial of 1,000 coefficients; d/dx and d/dcoeffs"),
    Workload("logsumexp", logsumexp, _normal(10_000, 3.0), (0,), True,
             "max loop with a branch, then an exp-sum loop, 10,000 elements"),
    Workload("rosenbrock", rosenbrock, _rosenbrock_args, (0,), True,
             "Rosenbrock function, loop over 10,000 elements"),
    Workload("lotka_volterra", lotka_volterra, lambda: (1.1, 0.4, 0.1, 0.4, 1000),
             (0, 1, 2, 3), True, "explicit Euler, 1,000 steps; d/d(4 parameters)"),
    Workload("black_scholes", black_scholes, lambda: (100.0, 95.0, 0.75, 0.03, 0.25),
             (0, 1, 2, 3, 4), False, "closed form with erf/exp/log/sqrt; d/d(5 inputs)"),
)

BY_NAME = {w.name: w for w in WORKLOADS}


def get(name: str) -> Workload:
    """The workload called `name`, or a KeyError that lists the known ones."""
    try:
        return BY_NAME[name]
    except KeyError:
        known = ", ".join(BY_NAME)
        raise KeyError(f"bench.workloads.get: unknown workload {name!r} (known: {known})") \
            from None


def load_suite(module: str = __name__) -> dict:
    """name -> Workload for the `WORKLOADS` of `module` (default: this one), so that
    another suite (a papers/ script's) can reuse the runner and the adapters."""
    found = getattr(importlib.import_module(module), "WORKLOADS", None)
    if not found:
        raise ValueError(f"bench.workloads.load_suite: {module} defines no WORKLOADS")
    return {w.name: w for w in found}
