"""Derivative rules of the elementary functions that `math` and numpy both provide
(`math.sin` and `np.sin`, `math.asin` and `np.arcsin`, `math.fabs` and `np.fabs`,
...): each derivative is written once, with numpy functions (which take numbers and
arrays alike), and `twin_rule` registers the one `Pullback` for both callees.
Pullbacks take `dy` (never None here) and the primal operands (the result first
when `uses_result`) and return one cotangent per operand.
"""
from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .rule_table import Pullback, callee_name, no_operands, pullback_rule
from .tape import unbcast


def twin_rule(math_f: Any, np_f: Any, uses_result: bool = False,
              needs: Callable | None = None, also: tuple = ()):
    """Decorator: `pullback_rule` of `math_f`, its numpy twin `np_f` (and the callees
    or op names `also`), named after the twins in messages."""
    def deco(fn: Callable) -> Pullback:
        pb = pullback_rule((math_f, np_f) + also, uses_result, needs)(fn)
        pb.of = f"{callee_name(math_f)}/{callee_name(np_f)}"
        return pb
    return deco


def _over(dy, d):
    """dy / d for a derivative whose denominator vanishes at a valid input (sqrt at 0,
    asin at 1): an infinite slope is inf, as numpy and JAX give, not
    ZeroDivisionError.  A zero dy stays zero, whether it is the number 0.0 (compiled
    code) or the absent cotangent None (the interpreter): both executors agree."""
    if isinstance(d, np.ndarray) or d != 0.0:
        return dy / d
    if dy != dy:
        return math.nan
    if dy == 0.0:
        return 0.0
    return math.copysign(math.inf, dy) * math.copysign(1.0, d)


# -- trigonometric ----------------------------------------------------------------------
@twin_rule(math.sin, np.sin)
def d_sin(dy, x):
    return dy * np.cos(x)


@twin_rule(math.cos, np.cos)
def d_cos(dy, x):
    return -dy * np.sin(x)


@twin_rule(math.tan, np.tan, uses_result=True, needs=no_operands)
def d_tan(dy, y, x):
    return dy * (1.0 + y * y)


@twin_rule(math.asin, np.arcsin)
def d_asin(dy, x):
    return _over(dy, np.sqrt(1.0 - x * x))


@twin_rule(math.acos, np.arccos)
def d_acos(dy, x):
    return _over(-dy, np.sqrt(1.0 - x * x))


@twin_rule(math.atan, np.arctan)
def d_atan(dy, x):
    return dy / (1.0 + x * x)


@twin_rule(math.atan2, np.arctan2)
def d_atan2(dy, y, x):
    r2 = x * x + y * y
    return unbcast(dy * x / r2, y), unbcast(-dy * y / r2, x)


# -- hyperbolic -------------------------------------------------------------------------
@twin_rule(math.sinh, np.sinh)
def d_sinh(dy, x):
    return dy * np.cosh(x)


@twin_rule(math.cosh, np.cosh)
def d_cosh(dy, x):
    return dy * np.sinh(x)


@twin_rule(math.tanh, np.tanh, uses_result=True, needs=no_operands)
def d_tanh(dy, y, x):
    return dy * (1.0 - y * y)


# -- exponential, logarithms, roots -------------------------------------------------------
@twin_rule(math.exp, np.exp, uses_result=True, needs=no_operands)
def d_exp(dy, y, x):
    return dy * y


@twin_rule(math.expm1, np.expm1, uses_result=True, needs=no_operands)
def d_expm1(dy, y, x):
    return dy * (y + 1.0)


@twin_rule(math.log, np.log)
def d_log(dy, x, base=None):
    """`math.log(x, base)` is log(x) / log(base); np.log takes no base (an `out`
    array passed by position is refused by `math.log(base)`)."""
    if base is None:
        return (dy / x,)
    lb = math.log(base)
    return dy / (x * lb), -dy * math.log(x) / (base * lb * lb)


@twin_rule(math.log1p, np.log1p)
def d_log1p(dy, x):
    return dy / (1.0 + x)


@twin_rule(math.log2, np.log2)
def d_log2(dy, x):
    return dy / (x * math.log(2.0))


@twin_rule(math.log10, np.log10)
def d_log10(dy, x):
    return dy / (x * math.log(10.0))


@twin_rule(math.sqrt, np.sqrt, uses_result=True, needs=no_operands)
def d_sqrt(dy, y, x):
    return _over(dy, 2.0 * y)


# -- absolute value (builtin `abs` and the `abs` operator too) ----------------------------
@twin_rule(math.fabs, np.fabs, also=(builtins.abs, "abs", np.abs))
def d_abs(dy, x):
    if isinstance(x, (np.ndarray, complex)):
        return (dy * np.sign(x),)
    if x != x:            # a NaN input: a NaN slope, as np.sign(nan) gives for arrays
        return (x * dy,)
    return (dy if x > 0 else -dy if x < 0 else 0.0 * dy),
