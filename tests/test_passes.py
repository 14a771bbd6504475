"""Tests of the optimisation passes (ssair/passes): golden listings built from text,
the verifier after every pass, and differential runs with the interpreter."""
from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest
from ir_texts import POW_PLAIN

import ssair
from ssair import interpret, parse, verify
from ssair.passes import PASSES, PIPELINE, algebraic, constfold, cse, dce, optimize, simplifycfg


def ir_of(text: str) -> ssair.IR:
    ir = parse(textwrap.dedent(text).strip())
    verify(ir)
    return ir


def run(fn, text: str) -> ssair.IR:
    """Parse, verify, run the pass, verify; the input must be left untouched."""
    ir = ir_of(text)
    before = str(ir)
    out = fn(ir)
    verify(out)
    assert str(ir) == before, f"{fn.__name__} modified its input"
    return out


def check(fn, text: str, expected: str) -> ssair.IR:
    out = run(fn, text)
    assert str(out) == textwrap.dedent(expected).strip()
    return out


def outcome(ir, args):
    try:
        return "ok", interpret(ir, *args)
    except Exception as e:  # noqa: BLE001 - the exception type is the result
        return "raise", type(e)


def same_value(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


def same_behaviour(before, after, inputs) -> None:
    """Interpret both IRs on each input tuple: same value and type (floats by repr,
    so -0.0 and nan count), same aliasing of array inputs, or same exception."""
    for args in inputs:
        a1, a2 = _fresh(args), _fresh(args)
        k1, v1 = outcome(before, a1)
        k2, v2 = outcome(after, a2)
        assert k1 == k2 and same_value(v1, v2), (args, v1, v2)
        assert all(same_value(x, y) for x, y in zip(a1, a2)), "inputs mutated differently"
        if k1 == "ok":
            assert _aliases(v1, a1) == _aliases(v2, a2), ("aliasing differs", args)


def _fresh(args):
    """Copies of the mutable inputs (arrays and lists: `xs += [3]` extends in place)."""
    return tuple(a.copy() if isinstance(a, (np.ndarray, list)) else a for a in args)


def _aliases(v, args) -> list:
    return [v is a for a in args if isinstance(a, np.ndarray)]


# -- dce --------------------------------------------------------------------------
def test_dce_removes_unused_pure_keeps_effects():
    check(dce, """
        function f(%1 a, %2 x::int64)
        1 ─ %3 = add(%2, 1)
        │   %4 = mul(%3, 2)
        │   %5 = call(@len, %1)
        │   %6 = setitem(%1, 5, 0)
        │   %7 = list(%2)
        │   %8 = tuple(%1, %7)
        │   %9 = lt(%2, 2.5)
        └──      return %2
        """, """
        function f(%1 a, %2 x::int64)
        1 ─ %5 = call(@len, %1)
        │   %6 = setitem(%1, 5, 0)
        └──      return %2
        """)


def test_dce_removes_dead_phi_cycle():
    out = check(dce, """
        function f(%1 n)
        1 ─      goto #2
        2 ┄ %2 = φ (#1 => 0, #3 => %5)
        │   %3 = φ (#1 => %1, #3 => %6)
        │   %4 = gt(%3, 0)
        └──      goto #4 if not %4
        3 ─ %5 = add(%2, 1)
        │   %6 = sub(%3, 1)
        └──      goto #2
        4 ─      return None
        """, """
        function f(%1 n)
        1 ─      goto #2
        2 ┄ %3 = φ (#1 => %1, #3 => %6)
        │   %4 = gt(%3, 0)
        └──      goto #4 if not %4
        3 ─ %6 = sub(%3, 1)
        └──      goto #2
        4 ─      return None
        """)
    same_behaviour(ir_of(str(out)), out, [(3,), (0,)])


def test_dce_keeps_statements_that_may_raise():
    text = """
        function f(%1 x)
        1 ─ %2 = truediv(1, 0)
        │   %3 = floordiv(%1, 0)
        │   %4 = getitem((1, 2), 5)
        │   %5 = add(1, 'a')
        │   %6 = add(1, 2)
        │   %7 = mul(%1, 2.0)
        │   %8 = not(%1)
        │   %9 = add(%1, 1.5)
        └──      return %1
        """
    out = run(dce, text)
    assert [s.op for s in out.entry.stmts] == ["truediv", "floordiv", "getitem", "add",
                                               "mul", "not", "add"]
    same_behaviour(ir_of(text), out, [(1,), (2.5,), (None,), (np.zeros(2),)])
    typed = run(dce, text.replace("%1 x", "%1 x::float64"))
    assert [s.op for s in typed.entry.stmts] == ["truediv", "floordiv", "getitem", "add"]


# -- constfold ----------------------------------------------------------------------
def test_constfold_folds_and_propagates():
    check(constfold, """
        function f(%1 x)
        1 ─ %2 = add(2, 3)
        │   %3 = mul(%2, 4)
        │   %4 = add(1, 2.0)
        │   %5 = copy(%1)
        │   %6 = lt(%3, 21)
        │   %7 = tuple(%3, %4, %5, %6)
        └──      return %7
        """, """
        function f(%1 x)
        1 ─ %7 = tuple(20, 3.0, %1, True)
        └──      return %7
        """)


def test_constfold_does_not_fold_what_raises():
    text = """
        function f()
        1 ─ %1 = truediv(1, 0)
        │   %2 = floordiv(7, 0.0)
        │   %3 = getitem((1, 2, 3), 5)
        │   %4 = add(1, 'a')
        │   %5 = call(@math.sqrt, -1.0)
        │   %6 = call(@math.log, 0.0)
        │   %7 = call(@int, 'abc')
        │   %8 = tuple(%1, %2, %3, %4, %5, %6, %7)
        └──      return %8
        """
    out = run(constfold, text)
    assert str(out) == str(ir_of(text))
    same_behaviour(ir_of(text), out, [()])


def test_constfold_calls_of_whitelisted_functions():
    check(constfold, """
        function f(%1 x)
        1 ─ %2 = call(@math.sqrt, 16.0)
        │   %3 = call(@len, (1, 2, 3))
        │   %4 = call(@abs, -7)
        │   %5 = call(@math.floor, 2.5)
        │   %6 = call(@print, 1)
        │   %7 = call(@math.sin, %1)
        │   %8 = tuple(%2, %3, %4, %5, %6, %7)
        └──      return %8
        """, """
        function f(%1 x)
        1 ─ %6 = call(@print, 1)
        │   %7 = call(@math.sin, %1)
        │   %8 = tuple(4.0, 3, 7, 2, %6, %7)
        └──      return %8
        """)


def test_constfold_refuses_costly_and_non_literal_results():
    text = """
        function f()
        1 ─ %1 = mul('ab', 1000000)
        │   %2 = lshift(1, 100000)
        │   %3 = pow(3, 100000)
        │   %4 = call(@max, (1, 5, 2))
        │   %5 = list(1, 2)
        │   %6 = tuple(%4, %5)
        └──      return %6
        """
    out = run(constfold, text)
    assert [s.op for s in out.entry.stmts] == ["mul", "lshift", "pow", "list", "tuple"]
    assert out.entry.stmts[-1].args[0] == ssair.Const(5)


def test_constfold_phis_with_one_constant():
    out = check(constfold, """
        function f(%1 c)
        1 ─ %2 = truth(%1)
        └──      goto #3 if not %2
        2 ─      goto #4
        3 ─      goto #4
        4 ┄ %3 = φ (#2 => 2, #3 => 2)
        │   %4 = φ (#2 => 2, #3 => 2.0)
        │   %5 = add(%3, 1)
        │   %6 = tuple(%5, %4)
        └──      return %6
        """, """
        function f(%1 c)
        1 ─ %2 = truth(%1)
        └──      goto #3 if not %2
        2 ─      goto #4
        3 ─      goto #4
        4 ┄ %4 = φ (#2 => 2, #3 => 2.0)
        │   %6 = tuple(3, %4)
        └──      return %6
        """)
    same_behaviour(ir_of(str(out)), out, [(0,), (1,)])


# -- algebraic ---------------------------------------------------------------------
def test_algebraic_int_identities():
    text = """
        function f(%1 a)
        1 ─ %2 = call(@len, %1)
        │   %3 = mul(%2, 1)
        │   %4 = add(0, %3)
        │   %5 = sub(%4, %4)
        │   %6 = mul(%4, 0)
        │   %7 = floordiv(%4, 1)
        │   %8 = pow(%7, 0)
        │   %9 = pow(%7, 1)
        │   %10 = neg(%9)
        │   %11 = neg(%10)
        │   %12 = eq(%11, %11)
        │   %13 = tuple(%5, %6, %8, %11, %12)
        └──      return %13
        """
    out = check(algebraic, text, """
        function f(%1 a)
        1 ─ %2 = call(@len, %1)
        │   %10 = neg(%2)
        │   %13 = tuple(0, 0, 1, %2, True)
        └──      return %13
        """)
    same_behaviour(ir_of(text), out, [((1, 2, 3),), ((),), (np.zeros(4),)])


def test_algebraic_float_only_exact_rules():
    text = """
        function f(%1 x::float64)
        1 ─ %2 = mul(%1, 1.0)
        │   %3 = truediv(%2, 1)
        │   %4 = sub(%3, 0.0)
        │   %5 = add(%4, -0.0)
        │   %6 = add(%1, 0.0)
        │   %7 = mul(%1, 0)
        │   %8 = sub(%1, %1)
        │   %9 = pow(%1, 0)
        │   %10 = sub(%1, -0.0)
        │   %11 = tuple(%5, %6, %7, %8, %9, %10)
        └──      return %11
        """
    out = check(algebraic, text, """
        function f(%1 x::float64)
        1 ─ %6 = add(%1, 0.0)
        │   %7 = mul(%1, 0)
        │   %8 = sub(%1, %1)
        │   %10 = sub(%1, -0.0)
        │   %11 = tuple(%1, %6, %7, %8, 1.0, %10)
        └──      return %11
        """)
    inputs = [(-0.0,), (0.0,), (math.inf,), (-math.inf,), (math.nan,), (2.5,)]
    same_behaviour(ir_of(text), out, inputs)


def test_algebraic_bits_and_negation():
    text = """
        function f(%1 n::int64, %2 x::float64, %3 b::bool)
        1 ─ %4 = bitor(%1, 0)
        │   %5 = bitxor(%4, 0)
        │   %6 = lshift(%5, 0)
        │   %7 = rshift(%6, 0)
        │   %8 = bitand(%7, -1)
        │   %9 = bitand(%8, 0)
        │   %10 = bitxor(%3, %3)
        │   %11 = bitand(%3, %3)
        │   %12 = mul(%2, -1.0)
        │   %13 = truediv(%2, -1)
        │   %14 = sub(0, %8)
        │   %15 = sub(%2, 0)
        │   %16 = mod(%8, 1)
        │   %17 = tuple(%8, %9, %10, %11, %12, %13, %14, %15, %16)
        └──      return %17
        """
    out = check(algebraic, text, """
        function f(%1 n::int64, %2 x::float64, %3 b::bool)
        1 ─ %12 = neg(%2)
        │   %13 = neg(%2)
        │   %14 = neg(%1)
        │   %17 = tuple(%1, 0, False, %3, %12, %13, %14, %2, 0)
        └──      return %17
        """)
    inputs = [(5, -0.0, True), (-3, math.nan, False), (0, math.inf, True)]
    same_behaviour(ir_of(text), out, inputs)
    assert "%13" not in str(optimize(out))


def test_algebraic_leaves_unknown_operands_alone():
    text = """
        function f(%1 x)
        1 ─ %2 = mul(%1, 1)
        │   %3 = add(%2, 0)
        │   %4 = sub(%3, %3)
        │   %5 = pow(%4, 1)
        └──      return %5
        """
    out = run(algebraic, text)
    assert str(out) == str(ir_of(text))
    arr = np.arange(3.0)
    assert interpret(out, arr) is not arr


def test_algebraic_keeps_result_type():
    text = """
        function f(%1 n::int64, %2 b::bool)
        1 ─ %3 = mul(%1, 1.0)
        │   %4 = mul(%2, 1)
        │   %5 = add(%2, 0)
        │   %6 = pos(%2)
        │   %7 = truediv(%1, 1)
        │   %8 = neg(%2)
        │   %9 = neg(%8)
        │   %10 = pow(%1, 1.0)
        │   %11 = tuple(%3, %4, %5, %6, %7, %9, %10)
        └──      return %11
        """
    out = run(algebraic, text)
    assert str(out) == str(ir_of(text))
    same_behaviour(ir_of(text), out, [(3, True), (-2, False)])


def test_algebraic_loop_counter_is_int():
    text = """
        function f(%1 n)
        1 ─      goto #2
        2 ┄ %2 = φ (#1 => 0, #3 => %5)
        │   %3 = lt(%2, %1)
        └──      goto #4 if not %3
        3 ─ %4 = mul(%2, 1)
        │   %5 = add(%4, 1)
        └──      goto #2
        4 ─ %6 = add(%2, 0)
        └──      return %6
        """
    out = check(algebraic, text, """
        function f(%1 n)
        1 ─      goto #2
        2 ┄ %2 = φ (#1 => 0, #3 => %5)
        │   %3 = lt(%2, %1)
        └──      goto #4 if not %3
        3 ─ %5 = add(%2, 1)
        └──      goto #2
        4 ─      return %2
        """)
    same_behaviour(ir_of(text), out, [(3,), (0,), (2.5,)])


def test_algebraic_boolean_rules():
    text = """
        function f(%1 x, %2 n::int64)
        1 ─ %3 = not(%1)
        │   %4 = not(%3)
        │   %5 = lt(%2, 3)
        │   %6 = truth(%5)
        │   %7 = not(%6)
        │   %8 = not(%7)
        │   %9 = is(%1, %1)
        │   %10 = tuple(%4, %8, %9)
        └──      return %10
        """
    out = check(algebraic, text, """
        function f(%1 x, %2 n::int64)
        1 ─ %3 = not(%1)
        │   %4 = truth(%1)
        │   %5 = lt(%2, 3)
        │   %7 = not(%5)
        │   %10 = tuple(%4, %5, True)
        └──      return %10
        """)
    same_behaviour(ir_of(text), out, [(0, 1), ([1], 5), (np.zeros(1), 2)])


# -- cse -----------------------------------------------------------------------------
CSE_TEXT = """
    function f(%1 a::int64, %2 b::int64)
    1 ─ %3 = add(%1, %2)
    │   %4 = gt(%3, 0)
    └──      goto #3 if not %4
    2 ─ %5 = add(%1, %2)
    │   %6 = mul(%5, 2)
    └──      return %6
    3 ─ %7 = mul(%1, %2)
    └──      goto #4
    4 ─ %8 = mul(%1, %2)
    │   %9 = add(%1, %2)
    │   %10 = tuple(%7, %8, %9)
    └──      return %10
    """


def test_cse_merges_dominated_duplicates():
    out = check(cse, CSE_TEXT, """
        function f(%1 a::int64, %2 b::int64)
        1 ─ %3 = add(%1, %2)
        │   %4 = gt(%3, 0)
        └──      goto #3 if not %4
        2 ─ %6 = mul(%3, 2)
        └──      return %6
        3 ─ %7 = mul(%1, %2)
        └──      goto #4
        4 ─ %10 = tuple(%7, %7, %3)
        └──      return %10
        """)
    same_behaviour(ir_of(CSE_TEXT), out, [(1, 2), (-3, 1)])


def test_cse_does_not_merge_across_siblings():
    text = """
        function f(%1 a::int64)
        1 ─ %2 = gt(%1, 0)
        └──      goto #3 if not %2
        2 ─ %3 = mul(%1, 3)
        └──      return %3
        3 ─ %4 = mul(%1, 3)
        └──      return %4
        """
    assert str(run(cse, text)) == str(ir_of(text))


def test_cse_leaves_new_mutable_objects_apart():
    text = """
        function f(%1 x, %2 i::int64)
        1 ─ %3 = add(%1, 1)
        │   %4 = add(%1, 1)
        │   %5 = list(%2)
        │   %6 = list(%2)
        │   %7 = is(%3, %4)
        │   %8 = is(%5, %6)
        │   %9 = is(%3, %4)
        │   %10 = tuple(%7, %8, %9)
        └──      return %10
        """
    out = run(cse, text)
    assert [s.op for s in out.entry.stmts] == ["add", "add", "list", "list", "is", "is", "tuple"]
    same_behaviour(ir_of(text), out, [(np.arange(2.0), 1), (1.5, 2)])


def test_cse_getitem_only_without_effects():
    pure = """
        function f(%1 a, %2 i::int64)
        1 ─ %3 = getitem(%1, %2)
        │   %4 = getitem(%1, %2)
        │   %5 = tuple(%3, %4)
        └──      return %5
        """
    assert [s.op for s in run(cse, pure).entry.stmts] == ["getitem", "tuple"]
    effects = """
        function f(%1 a, %2 i::int64)
        1 ─ %3 = getitem(%1, %2)
        │   %4 = setitem(%1, 9.0, %2)
        │   %5 = getitem(%1, %2)
        │   %6 = tuple(%3, %5)
        └──      return %6
        """
    out = run(cse, effects)
    assert [s.op for s in out.entry.stmts] == ["getitem", "setitem", "getitem", "tuple"]
    same_behaviour(ir_of(effects), out, [(np.arange(3.0), 1)])


def test_cse_merges_identical_phis():
    out = run(cse, """
        function f(%1 c, %2 x)
        1 ─ %3 = truth(%1)
        └──      goto #3 if not %3
        2 ─      goto #3
        3 ┄ %4 = φ (#1 => %2, #2 => 1)
        │   %5 = φ (#1 => %2, #2 => 1)
        │   %6 = tuple(%4, %5)
        └──      return %6
        """)
    assert len(out.blocks[2].phis) == 1
    assert "%6 = tuple(%4, %4)" in str(out)


# -- simplifycfg ---------------------------------------------------------------------
def test_simplifycfg_folds_constant_branch_and_merges():
    check(simplifycfg, """
        function f(%1 x)
        1 ─      goto #3 if not True
        2 ─ %2 = add(%1, 1)
        └──      goto #4
        3 ─ %3 = sub(%1, 1)
        └──      goto #4
        4 ┄ %4 = φ (#2 => %2, #3 => %3)
        └──      return %4
        """, """
        function f(%1 x)
        1 ─ %2 = add(%1, 1)
        └──      return %2
        """)


def test_simplifycfg_bypasses_empty_forwarder():
    text = """
        function f(%1 x)
        1 ─ %2 = gt(%1, 0)
        └──      goto #3 if not %2
        2 ─ %3 = add(%1, 1)
        └──      goto #4
        3 ─      goto #4
        4 ┄ %4 = φ (#2 => %3, #3 => 0)
        └──      return %4
        """
    out = check(simplifycfg, text, """
        function f(%1 x)
        1 ─ %2 = gt(%1, 0)
        └──      goto #3 if not %2
        2 ─ %3 = add(%1, 1)
        └──      goto #3
        3 ┄ %4 = φ (#2 => %3, #1 => 0)
        └──      return %4
        """)
    same_behaviour(ir_of(text), out, [(5,), (-1,)])


FORWARD_PHIS = """
    function f(%1 n, %2 t)
    1 ─ %3 = lt(0, %1)
    └──      goto #4 if not %3
    2 ─ %4 = eq(%1, %2)
    │        goto #3 if not %4
    └──      goto #5
    3 ─ %9 = add(%1, 1)
    └──      goto #4
    4 ┄ %5 = φ (#1 => 0, #3 => %9)
    └──      goto #5
    5 ┄ %6 = φ (#4 => False, #2 => True)
    │   %7 = φ (#4 => %5, #2 => %2)
    │   %8 = tuple(%6, %7)
    └──      return %8
    """


def test_simplifycfg_bypasses_forwarder_with_phis():
    out = check(simplifycfg, FORWARD_PHIS, """
        function f(%1 n, %2 t)
        1 ─ %3 = lt(0, %1)
        └──      goto #4 if not %3
        2 ─ %4 = eq(%1, %2)
        │        goto #3 if not %4
        └──      goto #4
        3 ─ %9 = add(%1, 1)
        └──      goto #4
        4 ┄ %6 = φ (#1 => False, #3 => False, #2 => True)
        │   %7 = φ (#1 => 0, #3 => %9, #2 => %2)
        │   %8 = tuple(%6, %7)
        └──      return %8
        """)
    same_behaviour(ir_of(FORWARD_PHIS), out, [(0, 1), (2, 2), (2, 3)])


def test_simplifycfg_keeps_forwarder_with_phis_on_conflict():
    text = """
        function f(%1 n, %2 t)
        1 ─ %3 = lt(0, %1)
        └──      goto #3 if not %3
        2 ─ %4 = eq(%1, %2)
        │        goto #3 if not %4
        └──      goto #4
        3 ┄ %5 = φ (#1 => 0, #2 => %1)
        └──      goto #4
        4 ┄ %6 = φ (#3 => False, #2 => True)
        │   %7 = φ (#3 => %5, #2 => %2)
        │   %8 = tuple(%6, %7)
        └──      return %8
        """
    assert str(run(simplifycfg, text)) == str(ir_of(text))


def test_simplifycfg_keeps_forwarder_when_phi_values_differ():
    text = """
        function f(%1 x)
        1 ─ %2 = gt(%1, 0)
        └──      goto #3 if not %2
        2 ─      goto #3
        3 ┄ %3 = φ (#1 => 0, #2 => 1)
        └──      return %3
        """
    assert str(run(simplifycfg, text)) == str(ir_of(text))


def test_simplifycfg_same_phi_values_fold_the_branch():
    check(simplifycfg, """
        function f(%1 x)
        1 ─ %2 = gt(%1, 0)
        └──      goto #3 if not %2
        2 ─      goto #3
        3 ┄ %3 = φ (#1 => %1, #2 => %1)
        └──      return %3
        """, """
        function f(%1 x)
        1 ─ %2 = gt(%1, 0)
        └──      return %1
        """)


def test_simplifycfg_keeps_loops():
    text = POW_PLAIN
    out = run(simplifycfg, text)
    assert str(out) == str(ir_of(text))
    same_behaviour(ir_of(text), out, [(2, 5), (1.5, 0)])


def test_simplifycfg_drops_unreachable_loop():
    out = check(simplifycfg, """
        function f(%1 x)
        1 ─      goto #4 if not False
        2 ┄ %2 = φ (#1 => %1, #3 => %3)
        └──      goto #3
        3 ─ %3 = add(%2, 1)
        └──      goto #2
        4 ─      return %1
        """, """
        function f(%1 x)
        1 ─      return %1
        """)
    assert len(out.blocks) == 1


# -- pipeline -------------------------------------------------------------------------
def test_pipeline_table_and_names():
    assert PIPELINE[0][0] == PIPELINE[-1][0] == "simplifycfg"
    assert set(PASSES) == {"simplifycfg", "inplace", "constfold", "algebraic", "cse", "dce"}
    with pytest.raises(KeyError, match="unknown pass 'nope'"):
        optimize(ir_of("function f()\n1 ─      return 1"), passes=["nope"])


def test_optimize_folds_through_branches():
    text = """
        function f(%1 x::float64)
        1 ─ %2 = mul(2, 3)
        │   %3 = gt(%2, 5)
        └──      goto #3 if not %3
        2 ─ %4 = mul(%1, 1.0)
        │   %5 = add(%4, %2)
        └──      goto #4
        3 ─ %6 = sub(%1, 1)
        └──      goto #4
        4 ┄ %7 = φ (#2 => %5, #3 => %6)
        │   %8 = add(%1, 6)
        └──      return %8
        """
    ir = ir_of(text)
    out = optimize(ir)
    verify(out)
    assert str(out) == textwrap.dedent("""
        function f(%1 x::float64)
        1 ─ %5 = add(%1, 6)
        └──      return %5
        """).strip()
    same_behaviour(ir, out, [(1.5,), (-0.0,)])


def test_optimize_turns_scalar_inplace_ops_into_plain_ones():
    text = """
        function f(%1 n::int64, %2 a)
        1 ─ %3 = iadd(%1, 0)
        │   %4 = imul(%2, 1)
        │   %5 = tuple(%3, %4)
        └──      return %5
        """
    out = optimize(ir_of(text))
    assert str(out) == textwrap.dedent("""
        function f(%1 n::int64, %2 a)
        1 ─ %4 = imul(%2, 1)
        │   %5 = tuple(%1, %4)
        └──      return %5
        """).strip()
    same_behaviour(ir_of(text), out, [(3, np.arange(2.0)), (0, [1])])


def test_optimize_single_pass_and_dump(monkeypatch, capsys):
    monkeypatch.setenv("ZYGOPY_DUMP", "dce")
    out = optimize(ir_of("""
        function f(%1 x::int64)
        1 ─ %2 = add(%1, 1)
        └──      return %1
        """), passes=["dce"])
    err = capsys.readouterr().err
    assert "--- before dce: f" in err and "--- after dce: f" in err
    assert "%2 = add" in err.split("--- after")[0]
    assert "%2" not in str(out)
