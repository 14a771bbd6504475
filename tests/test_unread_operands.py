"""Operands a pullback does not read are not recorded; the adjoint passes a placeholder
(`adjoint.passes.reverse.UNREAD`) in their place.  That is right only when the rule
really does not read them for that active mask (`Rule.needs`), and when the pullback
runs at all only where some operand takes a cotangent.

* Seed 777003331031 of the shared `fuzz_zygopy.py`, reduced: `x = (1.0 + ...) ** -1`
  with an integer base inside a `while` loop.  The in-place `y *= y` of a value whose
  kind is known only at run time joins `x` and `y` in one alias group, which made the
  power's result active with no active operand.  Its pullback ran with the placeholder
  0.0 as base: compiled code raised `OverflowError` (a zero cotangent times
  `0.0 ** -2`), the interpreter skipped it only because its zero cotangent is `None`.
  Such a statement now gets no record (`instrument._no_active_operand`).
* The audit of the class: every rule with a `needs` is run with the operands it says
  it does not read set to NaN; the cotangents of its active operands must not change."""
import itertools
import math

import pytest

from adjoint import gradient
from adjoint.rule_table import CALL_RULES, OP_RULES


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


def test_the_compiled_adjoint_is_right():
    g = gradient(f, *ARGS, backend="llvm")
    assert g == pytest.approx((central(0), central(1)), abs=1e-6)


# -- the audit: every rule variant that reads fewer operands than it has -----------------
# rules whose operands are not numbers (containers, tapes, cotangent plumbing): `needs`
# of these says which structure they keep, checked by their own tests
STRUCTURAL = {"list_append", "snapshot", "contiguous", "column", "loop_items",
              "check_bound", "partial", "with_entry", "merged", "keywords", "seed_like",
              "dense_cotangent", "checked_cotangents"}
OPERANDS = {1: (0.7,), 2: (0.7, 1.3)}
POW_OPERANDS = (0.7, 3)


def _variants():
    seen = set()
    for rule in list(OP_RULES.values()) + list(CALL_RULES.values()):
        for v in (rule, *rule.scalar, *rule.partial):
            if v.needs is None or v.pullback is None or id(v) in seen:
                continue
            seen.add(id(v))
            name = v.key if isinstance(v.key, str) else v.key.__name__
            if name not in STRUCTURAL:
                yield pytest.param(name, v, id=f"{name}-{v.pullback.__name__}")


def _arity(name, v):
    if name in ("neg", "tan", "tanh", "exp", "expm1", "sqrt"):
        return 1
    return 2


@pytest.mark.parametrize("name, variant", list(_variants()))
def test_a_rule_does_not_read_what_needs_leaves_out(name, variant):
    n = _arity(name, variant)
    operands = POW_OPERANDS if name == "pow" else OPERANDS[n]
    checked = 0
    for mask in itertools.product((False, True), repeat=n):
        if not any(mask) or (variant.when is not None and not variant.when(mask)):
            continue
        unread = [k for k in range(n) if k not in variant.alphas(mask)]
        blanked = tuple(math.nan if k in unread else a for k, a in enumerate(operands))
        result = ((math.tanh, math.exp, math.expm1, math.sqrt, math.tan)[
            ("tanh", "exp", "expm1", "sqrt", "tan").index(name)](operands[0]),) \
            if variant.pullback.uses_result else ()
        full = variant.pullback(0.37, *result, *operands)
        blank = variant.pullback(0.37, *result, *blanked)
        for k in range(n):
            if mask[k]:
                assert math.isfinite(blank[k]), (name, mask, k, blank)
                assert blank[k] == full[k], (name, mask, k, blank, full)
        checked += 1
    assert checked, f"no active mask of {name} was checked"
