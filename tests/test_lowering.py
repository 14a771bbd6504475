"""Lowering tests: structure of the IR (verified, no unreachable blocks, phis
matching predecessors, no trivial phis, bool branch conditions) and agreement
with CPython through `ssair.interpret`, on the cases of lowering_cases.py."""
import copy

import numpy as np
import pytest
from lowering_cases import CASES, pow_

import lowering
import lowering.runtime
import ssair
from ssair.ir import Branch, Const, Phi, Var

BOOLISH = {"lt", "le", "gt", "ge", "eq", "ne", "is", "isnot", "in", "notin", "not", "truth"}


def outcome(fn, *args):
    try:
        return ("ok", fn(*copy.deepcopy(args)))
    except Exception as e:  # noqa: BLE001 - the exception type is the result
        return ("raise", type(e))


def same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


def reachable(ir):
    seen, todo = set(), [ir.entry.id]
    blocks = ir.block_map()
    while todo:
        b = todo.pop()
        if b not in seen:
            seen.add(b)
            todo.extend(blocks[b].successors())
    return seen


def check_structure(ir):
    ssair.verify(ir)
    preds = ir.predecessors()
    assert ir.blocks[0].id == 1 and not preds[1]
    assert reachable(ir) == {b.id for b in ir.blocks}
    defs = ir.defs_by_var()
    for b in ir.blocks:
        assert b.term is not None, f"block {b.id} has no terminator"
        for p in b.phis:
            assert sorted(p.incoming) == sorted(preds[b.id]), f"phi {p.var} in #{b.id}"
            others = {v for v in p.incoming.values() if v != p.var}
            assert len(others) > 1, f"trivial phi {p.var} in #{b.id}"
        if isinstance(b.term, Branch):
            assert _is_bool(b.term.cond, defs), f"branch condition in #{b.id}"


def _is_bool(v, defs):
    if isinstance(v, Const):
        return isinstance(v.value, bool)
    d = defs[v]
    return isinstance(d, Phi) or d.op in BOOLISH or d.op == "call"


@pytest.mark.parametrize("f,arglists", CASES, ids=[f.__name__ for f, _ in CASES])
def test_lower_and_interpret(f, arglists):
    ir = lowering.lower(f)
    check_structure(ir)
    assert ir.func is f and ir.name == f.__qualname__
    assert ir.file == f.__code__.co_filename and ir.firstline == f.__code__.co_firstlineno
    for args in arglists:
        want = outcome(f, *args)
        got = outcome(lambda *a: ssair.interpret(ir, *a), *args)
        assert want[0] == got[0] and same(want[1], got[1]), (args, want, got)


def test_arguments_and_names():
    ir = lowering.lower(pow_)
    assert [a.name for a in ir.args] == ["x", "n"] and ir.nfree == 0
    names = {d.name for b in ir.blocks for d in b.definitions()}
    assert {"r", "n"} <= names
    assert all(s.line is not None for b in ir.blocks for s in b.stmts)


def test_pow_listing_reads_like_code_lowered():
    text = str(lowering.code_lowered(pow_))
    print(text)
    assert text == repr(lowering.code_lowered(pow_))
    ir = lowering.lower(pow_)
    headers = [b for b in ir.blocks if len(b.phis) == 2]
    assert len(headers) == 1
    assert sorted(p.name for p in headers[0].phis) == ["n", "r"]
    assert "φ" in text and "# r" in text and "# n" in text
    assert "mul(" in text and "sub(" in text and "gt(" in text


def test_lower_is_cached_and_inner_functions_lower():
    from lowering_cases import closure_once
    assert lowering.lower(closure_once) is lowering.lower(closure_once)
    ir = lowering.lower(closure_once)
    closures = [s for b in ir.blocks for s in b.stmts if s.op == "make_closure"]
    assert len(closures) == 1
    inner = closures[0].args[0].value
    inner_ir = lowering.lower(inner)
    assert inner_ir.nfree == 1 and [a.name for a in inner_ir.args] == ["k", "t"]
    check_structure(inner_ir)


def test_module_attributes_are_constants():
    from lowering_cases import module_attrs
    ir = lowering.lower(module_attrs)
    consts = {a.value for b in ir.blocks for s in b.stmts for a in s.args
              if isinstance(a, Const) and callable(a.value)}
    assert {np.dot, np.ones} <= consts
    assert not any(s.op == "getattr" for b in ir.blocks for s in b.stmts)


def test_range_loop_has_no_iterator_objects():
    from lowering_cases import fib
    ir = lowering.lower(fib)
    calls = [s.args[0].value for b in ir.blocks for s in b.stmts if s.op == "call"]
    assert range not in calls and iter not in calls
    assert any(p.name == "a" for b in ir.blocks for p in b.phis)


def test_variadic_subscript():
    from lowering_cases import array_write_2d
    ir = lowering.lower(array_write_2d)
    ops = [(s.op, len(s.args)) for b in ir.blocks for s in b.stmts]
    assert ("setitem", 4) in ops and ("getitem", 3) in ops
    assert "tuple" not in [op for op, _ in ops]


def test_missing_global_is_a_name_error():
    def uses_missing(x):
        return x + not_defined_anywhere  # noqa: F821
    ir = lowering.lower(uses_missing)        # raised where the read runs, as CPython does
    with pytest.raises(NameError, match="^name 'not_defined_anywhere' is not defined$"):
        ssair.interpret(ir, 1.0)
    assert str(ssair.parse(str(ir))) == str(ir)


def test_phi_values_are_vars_or_consts():
    for f, _ in CASES:
        for b in lowering.lower(f).blocks:
            for p in b.phis:
                assert all(isinstance(v, (Var, Const)) for v in p.incoming.values())


@pytest.mark.parametrize("f", [f for f, _ in CASES], ids=[f.__name__ for f, _ in CASES])
def test_listing_round_trips(f):
    text = str(lowering.lower(f))
    assert str(ssair.parse(text)) == text


def test_maybe_unbound_read_is_checked():
    from lowering_cases import maybe_unbound
    ir = lowering.lower(maybe_unbound)
    calls = [s.args[0].value for b in ir.blocks for s in b.stmts if s.op == "call"]
    assert lowering.runtime.check_bound in calls
    with pytest.raises(UnboundLocalError):
        ssair.interpret(ir, 0)


def test_dynamic_step_chooses_test_by_sign():
    from lowering_cases import range_dynamic_step
    ir = lowering.lower(range_dynamic_step)
    ops = [s.op for b in ir.blocks for s in b.stmts]
    assert "lt" in ops and "gt" in ops
    calls = [s.args[0].value for b in ir.blocks for s in b.stmts if s.op == "call"]
    assert lowering.runtime.range_step in calls
