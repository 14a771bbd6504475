"""Tests of the J transform (adjoint/): passes verified one by one, golden listings,
the classic reverse trace, loops, recursion, closures, mutation, the API."""
import math
import os
import re

import numpy as np
import pytest

import adjoint
import ssair
from adjoint.passes.activity import analyze
from adjoint.passes.branches import record_branches
from adjoint.passes.instrument import instrument
from adjoint.passes.merge_returns import merge_returns
from adjoint.passes.reverse import build_adjoint
from adjoint.passes.stacks import emit_stacks
from adjoint.tape import Tape
from adjoint.transform import transform
from adjoint_check import check_gradient
import adjoint_examples as ex

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")


def _sort_phi(m) -> str:
    entries = sorted(m.group(1).split(", "), key=lambda e: int(e.split(" ")[0][1:]))
    return "φ (" + ", ".join(entries) + ")"


def normalize(text: str) -> str:
    """Value names renumbered by first appearance per function; paths cut to the
    file name; phi entries sorted by block (their order varies with the bytecode of
    the Python version); trailing blanks dropped."""
    out = []
    text = re.sub(r"φ \(([^)]*)\)", _sort_phi, text)
    for chunk in text.split("\n\n"):
        names: dict = {}

        def rename(m):
            return names.setdefault(m.group(0), f"%{len(names) + 1}")
        chunk = re.sub(r"%\d+", rename, chunk)
        chunk = re.sub(r"@ \S*/([^/\s]+:\d+)", r"@ \1", chunk)
        out.append("\n".join(line.rstrip() for line in chunk.split("\n")))
    return "\n\n".join(out)


def _golden(name: str, text: str) -> None:
    with open(os.path.join(GOLDEN, name)) as fh:
        assert normalize(text) == fh.read().rstrip("\n")


def test_golden_pow():
    _golden("pow_adjoint.txt", str(adjoint.code_adjoint(ex.pow, 2.0, 3)))


def test_golden_leaky_relu():
    _golden("leaky_relu_adjoint.txt", str(adjoint.code_adjoint(ex.leaky_relu, 2.0)))


# -- the passes, one by one, each verified -------------------------------------------

def _passes(f, *args):
    import lowering
    ir = lowering.lower(f)
    merged = merge_returns(ir)
    ssair.verify(merged)
    branched = record_branches(merged)
    ssair.verify(branched)
    act = analyze(branched, tuple(isinstance(a, float) for a in args))
    fwd = instrument(branched, act)
    fwd.meta["ret"] = fwd.block(fwd.meta["exit"]).term.value
    ssair.verify(fwd)
    emit_stacks(fwd)
    ssair.verify(fwd)
    adj = build_adjoint(fwd, act, [a.var for a in branched.args])
    ssair.verify(adj)
    return ir, fwd, adj, act


def early_returns(x, n):
    if n > 3:
        return x * 2.0
    if x > 0:
        return math.sin(x)
    return x * x


def test_passes_verify_each_step():
    ir, fwd, adj, act = _passes(early_returns, 1.0, 2)
    assert act.is_active(ir.args[0].var) and not act.is_active(ir.args[1].var)
    assert any(s.op == "call" for b in adj.blocks for s in b.stmts)
    rets = [b for b in fwd.blocks if isinstance(b.term, ssair.Return)]
    assert len(rets) == 1
    assert fwd.meta["dummy_phis"], "the merged exit has several predecessors"
    for b in fwd.blocks:
        for p in b.phis:
            if p.name == "edge":
                assert all(isinstance(v, ssair.Const) for v in p.incoming.values())


def test_merge_returns_keeps_input():
    import lowering
    ir = lowering.lower(early_returns)
    before = str(ir)
    merge_returns(ir)
    assert str(ir) == before


# -- the classic examples --------------------------------------------------------------

def classic(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def test_classic_reverse_trace():
    g = adjoint.gradient(classic, 2.0, 5.0)
    assert g[0] == pytest.approx(5.5)
    assert g[1] == pytest.approx(1.7163378145367738)


def test_pow_gradient_and_int_none():
    assert adjoint.gradient(ex.pow, 2.0, 3) == (12.0, None)
    assert adjoint.gradient(ex.pow, 2.0, 0) == (0.0, None)


def test_leaky_relu_both_branches():
    assert adjoint.gradient(ex.leaky_relu, 2.0) == (1.0,)
    assert adjoint.gradient(ex.leaky_relu, -2.0) == (0.01,)


def swaps(x, y, n):
    a, b = x, y
    for _ in range(n):
        a, b = b, a + b * x
    return a


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_loop_carried_swap(n):
    check_gradient(swaps, 0.7, 1.3, n)


def rotate(a, b, c, n):
    for _ in range(n):
        a, b, c = b, c, a * 1.5
    return a + 2.0 * b + 3.0 * c


def test_rotation_three_way():
    check_gradient(rotate, 1.0, 2.0, 3.0, 4)


def deep(x, n):
    if n == 0:
        return x
    return math.sin(deep(x, n - 1)) * 0.5 + x


def test_recursion_500_deep():
    (g, none) = adjoint.gradient(deep, 0.3, 500)
    h = 1e-6
    fd = (deep(0.3 + h, 500) - deep(0.3 - h, 500)) / (2 * h)
    assert none is None
    assert g == pytest.approx(fd, rel=1e-6)


def is_even(x, n):
    return x if n == 0 else is_odd(x * 1.01, n - 1)


def is_odd(x, n):
    return x * x if n == 0 else is_even(x, n - 1)


def test_mutual_recursion():
    check_gradient(is_even, 1.2, 7)
    check_gradient(is_even, 1.2, 6)


def nested_loops(x, n, m):
    s = 0.0
    for i in range(n):
        t = x
        for j in range(m):
            t = t * x + i
            if t > 50.0:
                break
        s += t
    return s


def test_nested_loops_with_break():
    check_gradient(nested_loops, 1.1, 4, 3)
    check_gradient(nested_loops, 2.5, 3, 6)


# -- calls, closures, functions as values ----------------------------------------------

def outer(x, y):
    def inner(t):
        return t * x + y
    return inner(2.0) + inner(y)


def test_closure_gradients_reach_captured_values():
    assert adjoint.gradient(outer, 3.0, 4.0) == (6.0, 5.0)


def apply(f, x):
    return f(x) * 2.0


def higher_order(x):
    return apply(math.sin, x) + apply(lambda t: t * x, 3.0)


def test_functions_as_arguments():
    (g,) = adjoint.gradient(higher_order, 0.5)
    assert g == pytest.approx(2 * math.cos(0.5) + 6.0)


def keywords(x, scale=2.0, *, shift=1.0):
    return x * scale + shift


def calls_keywords(x):
    return keywords(x, shift=x) + keywords(x, 3.0)


def test_keyword_arguments():
    assert adjoint.gradient(calls_keywords, 1.0) == (6.0,)


# -- arrays and mutation -----------------------------------------------------------------

def mutate(a, x):
    a[0] = a[0] * x
    a[1] = x
    s = 0.0
    for i in range(len(a)):
        s += a[i] * a[i]
    return s


def test_mutation_in_loop_and_inputs_untouched():
    a = np.array([1.0, 2.0, 3.0])
    ga, gx = adjoint.gradient(mutate, a, 2.0)
    np.testing.assert_allclose(ga, [8.0, 0.0, 6.0])
    assert gx == pytest.approx(8.0)
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])


def overwrite_after_use(a):
    b = np.sin(a)
    a[0] = 5.0
    return np.sum(b) + np.sum(a)


def test_overwritten_value_is_recorded():
    a = np.array([0.5, 1.0, 2.0])
    (g,) = adjoint.gradient(overwrite_after_use, a)
    np.testing.assert_allclose(g, np.cos(a) + np.array([0.0, 1.0, 1.0]))


def build_and_fill(x, n):
    out = np.zeros(n)
    for i in range(n):
        out[i] = x * i
    return np.dot(out, out)


def test_write_into_fresh_array():
    check_gradient(build_and_fill, 1.5, 4)


def matvec(m, v):
    return np.sum(np.tanh(m @ v)) + np.dot(v, v)


def test_numpy_products():
    rng = np.random.default_rng(1)
    check_gradient(matvec, rng.normal(size=(3, 4)), rng.normal(size=4))


def test_array_element_reads_in_loop_are_linear():
    def total(a):
        s = 0.0
        for i in range(len(a)):
            s += a[i] * a[i]
        return s
    a = np.linspace(0.0, 1.0, 7)
    (g,) = adjoint.gradient(total, a)
    np.testing.assert_allclose(g, 2 * a)


# -- API behaviour ------------------------------------------------------------------------

def test_back_can_be_called_many_times():
    y, back = adjoint.pullback(swaps, 0.7, 1.3, 4)
    first = back(1.0)
    assert back(1.0) == first
    assert back(2.0) == pytest.approx((2 * first[0], 2 * first[1], None))


def test_gradient_requires_scalar_output():
    with pytest.raises(TypeError, match="scalar"):
        adjoint.gradient(lambda x: (x, x), 1.0)


def test_jacobian_of_vector_function():
    def f(x):
        return np.array([x[0] * x[1], np.sin(x[0])])
    x = np.array([0.3, 2.0])
    (j,) = adjoint.jacobian(f, x)
    np.testing.assert_allclose(j, [[2.0, 0.3], [math.cos(0.3), 0.0]])


def test_tuple_argument_gets_tuple_cotangent():
    def f(t, k):
        return t[0] * t[1] + k
    assert adjoint.gradient(f, (2.0, 3.0), 4) == ((3.0, 2.0), None)


def no_rule(x):
    return np.sinc(x) * 2.0


def test_missing_rule_names_callee_and_line():
    with pytest.raises(TypeError, match=r"numpy\.sinc.*test_adjoint\.py:\d+"):
        adjoint.gradient(no_rule, 1.5)


def my_special(x):
    return math.gamma(x)


@adjoint.rule(my_special)
def _my_special_pullback(dy, x):
    return (dy * math.gamma(x) * 1.0,)


def uses_special(x):
    return my_special(x) * 3.0


def test_user_rule_decorator():
    (g,) = adjoint.gradient(uses_special, 2.0)
    assert g == pytest.approx(3.0 * math.gamma(2.0))


def test_code_adjoint_prints_both_functions():
    text = str(adjoint.code_adjoint(ex.pow, 2.0, 3))
    assert "pow_forward" in text and "pow_adjoint" in text
    assert "push(" in text and "pop(" in text and "edge" in text


# -- tape and activity ------------------------------------------------------------------

def test_tape_holds_only_cyclic_values():
    """pow's loop pushes only r per iteration: x is loop invariant (env), the
    counter n is rebuilt by the adjoint, which also tells the loop edge from it."""
    import lowering
    jf = transform(lowering.lower(ex.pow), (True, False), ("float64", "int64"))
    tape = Tape()
    ssair.interpret(jf.forward, tape, 2.0, 5)
    assert len(tape) == 1 * 5


def test_int_values_are_never_active():
    import lowering
    ir = lowering.lower(ex.pow)
    act = analyze(record_branches(merge_returns(ir)), (True, False))
    n = ir.args[1].var
    assert n not in act.varied


def chain(k):
    """A straight-line function with k statements, and a loop around it."""
    body = "\n".join(f"        x = math.sin(x) * {i + 1.5} + x" for i in range(k))
    src = f"def f(x, n):\n    for i in range(n):\n{body}\n    return x\n"
    env = {"math": math}
    exec(compile(src, f"<chain{k}>", "exec"), env)
    return env["f"]


def _size(ir) -> int:
    return sum(len(b.phis) + len(b.stmts) + 1 for b in ir.blocks)


@pytest.mark.parametrize("k", [1, 4, 16])
def test_adjoint_size_linear_in_primal(k):
    import lowering
    f = chain(k)
    ir = lowering.lower(f)
    jf = transform(ir, (True, False))
    assert _size(jf.forward) <= 3 * _size(ir) + 10
    assert _size(jf.adjoint) <= 5 * _size(ir) + 10


# -- backends -------------------------------------------------------------------------------

def test_unknown_and_missing_backends():
    from adjoint import api
    with pytest.raises(ValueError, match="unknown backend"):
        adjoint.pullback(ex.pow, 2.0, 3, backend="gpu")
    if "llvm" not in api.RUNNERS:
        with pytest.raises(NotImplementedError):
            adjoint.pullback(ex.pow, 2.0, 3, backend="llvm")


def test_auto_backend_falls_back_when_a_runner_refuses(monkeypatch):
    from adjoint import api

    class Refuses(Exception):
        pass

    class Picky(api.InterpBackend):
        errors = (Refuses,)
        calls = 0

        def forward(self, jf, tape, args):
            Picky.calls += 1
            raise Refuses()
    if not api._JIT_TRIED:      # (its first load would register the real runner)
        api._load_jit()
    for hot in api.HOT_GRADIENTS:   # (calls compiled before: straight to native code)
        hot.clear()
    monkeypatch.setitem(api.RUNNERS, "llvm", Picky())
    assert adjoint.gradient(ex.pow, 2.0, 3, backend="auto") == (12.0, None)
    assert Picky.calls == 1
    with pytest.raises(Refuses):
        adjoint.pullback(ex.pow, 2.0, 3, backend="llvm")


def test_jacobian_of_tuple_output_with_int_argument():
    def f(x, k):
        return (x * k, math.sin(x))
    jx, jk = adjoint.jacobian(f, 0.5, 3)
    np.testing.assert_allclose(jx, [3.0, math.cos(0.5)])
    assert jk is None


# -- arrays written by callees (in-out cotangents) -----------------------------------------

def set_zero(a, i):
    a[i] = 0.0


def scale_into(out, a, s):
    for i in range(len(a)):
        out[i] = a[i] * s


def mutated_by_callee(a):
    b = a * 1.0
    set_zero(b, 0)
    return np.sum(b * b)


def filled_by_callee(a, s):
    out = np.zeros(len(a))
    scale_into(out, a, s)
    set_zero(out, 1)
    return np.sum(out * out)


def test_array_written_by_callee():
    a = np.array([1.0, 2.0, 3.0])
    (g,) = adjoint.gradient(mutated_by_callee, a)
    np.testing.assert_allclose(g, [0.0, 4.0, 6.0])
    check_gradient(filled_by_callee, a, 1.5)
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("f,args", [(ex.pow, (2.0, 3)), (ex.leaky_relu, (-2.0,)),
                                    (is_even, (1.2, 3)), (swaps, (0.7, 1.3, 3))])
def test_listing_round_trip_and_runs(f, args):
    """print -> parse -> print is identical, and the parsed IR computes the gradient."""
    from ssair.parser import parse
    c = adjoint.code_adjoint(f, *args)
    fwd, adj = parse(str(c.forward)), parse(str(c.adjoint))
    assert str(fwd) == str(c.forward) and str(adj) == str(c.adjoint)
    tape = Tape()
    y, env = ssair.interpret(fwd, tape, *args)
    grads = ssair.interpret(adj, tape.reader(), env, 1.0)
    expect = adjoint.gradient(f, *args)
    assert y == f(*args)
    assert [0.0 if g is None else g for g, a in zip(grads, args) if isinstance(a, float)] \
        == [e for e, a in zip(expect, args) if isinstance(a, float)]


def closure_writes_captured(a, x):
    def put(i, v):
        a[i] = v * x
    put(0, 2.0)
    put(2, a[1])
    return np.sum(a * a)


def test_closure_writes_into_captured_array():
    a = np.array([1.0, 2.0, 3.0])
    check_gradient(closure_writes_captured, a, 0.5)
    ga, gx = adjoint.gradient(closure_writes_captured, a, 0.5)
    # a -> [2x, a1, a1 x]: f = 4x^2 + a1^2 + a1^2 x^2
    np.testing.assert_allclose(ga, [0.0, 2 * 2.0 + 2 * 2.0 * 0.25, 0.0])
    assert gx == pytest.approx(8 * 0.5 + 2 * 4.0 * 0.5)
