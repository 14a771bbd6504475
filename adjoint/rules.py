"""The derivative rule table, complete: importing this module registers the rules of
`rules_elementary`, `rules_math` and `rules_numpy`, the structural ops (whose adjoint
`adjoint.passes.reverse` emits as IR) and the non-differentiable comparisons, so
that the lookups it offers (from `adjoint.rule_table`) see every rule.  Also the
error raised for a call that has no rule, and its stand-in `missing_rule`.
"""
from __future__ import annotations

import functools

from lowering.runtime import formatted, keywords, merged, with_entry, with_member
from ssair.refusal import Refusal

from . import (rules_elementary, rules_linalg, rules_math, rules_norms, rules_numpy,  # noqa: F401  (fill
               rules_shapes, rules_ufuncs)                           # the table)
from . import rules_complex  # noqa: F401  (after them: complex pullbacks of their rules)
from .rule_table import (METHOD_RULES, OP_RULES, Pullback, Rule, callee_name, defpullback,
                         lookup_callee, lookup_op, nondiff, partial_variant, pullback_rule,
                         scalar_variant, structural)

__all__ = ["METHOD_RULES", "OP_RULES", "MissingRule", "NoDerivativeRule", "Pullback", "Rule",
           "callee_name", "defpullback", "lookup_callee", "lookup_op", "missing_rule",
           "missing_rule_error", "nondiff", "partial_variant", "pullback_rule", "scalar_variant",
           "structural"]


class NoDerivativeRule(Refusal, TypeError):
    """A call has no derivative rule (a TypeError, as JAX's are; never caught by the
    program's own `except`)."""


def missing_rule_error(what: str, where: str) -> TypeError:
    return NoDerivativeRule(f"adjoint: no derivative rule for {what}{where}; register one "
                     f"with @adjoint.rule({what.split()[-1]})")


class MissingRule:
    """Stands in the forward for a call that has no rule: raises when it runs, so a
    path that this input never takes needs none (as Zygote's generated code does).
    A library callable, never lowered: the JIT refuses it at typing time."""

    __zygopy_symbol__ = "adjoint.rules.missing_rule"

    def __call__(self, what: str, where: str) -> None:
        raise missing_rule_error(what, where)

    def __zygopy_explain__(self, what, where) -> str:
        return f"a call of {what.removeprefix('callee ')}, which has no derivative rule"

    def __repr__(self) -> str:
        return "<adjoint.rules.missing_rule>"


missing_rule = MissingRule()


# -- structural ops (emitted by adjoint.passes.reverse) --------------------------------------
structural("tuple")
structural("list")
structural("dict", needs=lambda act: set())
structural("make_closure")
structural("copy")
structural("pos")
structural("getitem", needs=lambda act: set(range(len(act))))
structural("setitem",   # the indices, and the value when active (its shape, see reverse)
           needs=lambda act: set(range(2, len(act))) | ({1} if act[1] else set()))
structural("call")   # calls of user functions: jcall/jback (see adjoint.passes.instrument)



def d_partial(dy, func, *args, **keywords) -> tuple:
    """`functools.partial(func, *args)`: its cotangent `(d func, d args, d keywords)`
    (what `adjoint.transform.PartialPB` gives) split back onto the operands."""
    if dy is None:
        return (None,) * (1 + len(args))
    return (dy[0],) + tuple(dy[1])


defpullback(functools.partial, d_partial, needs=lambda active: set())


def d_list_append(dy, xs, x) -> tuple:
    """`list_append(xs, x)`: the list's cotangent without its last entry, and that
    entry.  Reads no operand (activity passes `None` for both)."""
    return list(dy[:-1]), dy[-1]


defpullback("list_append", d_list_append, needs=lambda active: set())


def d_with_entry(dy, d, key, value) -> tuple:
    """A dict comprehension's step `with_entry(d, key, value)`: the dict's cotangent
    without `key` (an earlier value under `key` was overwritten), and the entry's."""
    if dy is None:
        return None, None, None
    return {k: g for k, g in dy.items() if k != key}, None, dy.get(key)


defpullback(with_entry, d_with_entry, needs=lambda active: {1})


def d_merged(dy, *parts) -> tuple:
    """`{**a, **b}` (and a call's `k=v, **d`): each entry of the cotangent goes to
    the last part holding its key (an earlier part's value was overwritten)."""
    if dy is None:
        return (None,) * len(parts)
    owner = {k: i for i, p in enumerate(parts) for k in p}
    out: tuple = tuple({} for _ in parts)
    for k, g in dy.items():
        out[owner[k]][k] = g
    return out


defpullback(merged, d_merged, needs=lambda active: set(range(len(active))))
defpullback(keywords, d_merged, needs=lambda active: set(range(len(active))))
nondiff(with_member, formatted)     # a set's members, an f-string: constants

nondiff("lt", "le", "gt", "ge", "eq", "ne", "is", "isnot", "in", "notin", "not", "truth",
        "invert", "lshift", "rshift", "bitand", "bitor", "bitxor", "floordiv")
