"""Tests of the reference interpreter (`ssair.interpret`) on hand-built IR, IR parsed
from text, and (once lowering exists) lowered Python functions."""
import math
import sys

import numpy as np
import pytest

import lowering
from ssair import IR, Branch, Closure, Const, Goto, Return, interpret
from ssair.interpreter import is_user_function
from ssair.primitives import PRIMITIVES, register

needs_lowering = pytest.mark.skipif(not hasattr(lowering, "lower"),
                                    reason="lowering.lower not available yet")


def parse(text):
    parser = pytest.importorskip("ssair.parser")
    return parser.parse(text)


# -- hand-built IR ------------------------------------------------------------------

def straight_line():
    """f(x, y) = (x * y + 3) // 2 - x ** 5"""
    ir = IR("f")
    x, y = ir.add_arg("x"), ir.add_arg("y")
    b = ir.add_block()
    t = ir.push(b, "add", ir.push(b, "mul", x, y), 3)
    r = ir.push(b, "sub", ir.push(b, "floordiv", t, 2), ir.push(b, "pow", x, 5))
    b.term = Return(r)
    return ir


def fib_loop():
    """a, b = 0, 1; while n > 0: a, b = b, a + b; n -= 1; return a"""
    ir = IR("fib")
    n = ir.add_arg("n")
    b1, b2, b3, b4 = (ir.add_block() for _ in range(4))
    b1.term = Goto(2)
    a = ir.add_phi(b2, {1: 0, 3: 0}, name="a")
    b = ir.add_phi(b2, {1: 1, 3: 0}, name="b")
    k = ir.add_phi(b2, {1: n, 3: 0}, name="n")
    b2.term = Branch(ir.push(b2, "gt", k, 0), 3, 4)
    s = ir.push(b3, "add", a, b)
    k2 = ir.push(b3, "sub", k, 1)
    b3.term = Goto(2)
    b2.phis[0].incoming[3], b2.phis[1].incoming[3], b2.phis[2].incoming[3] = b, s, k2
    b4.term = Return(a)
    return ir


def leaky_relu():
    """x if x > 0 else 0.01 * x, as a diamond with a phi."""
    ir = IR("leaky")
    x = ir.add_arg("x")
    b1, b2, b3, b4 = (ir.add_block() for _ in range(4))
    b1.term = Branch(ir.push(b1, "gt", x, 0), 2, 3)
    b2.term = Goto(4)
    y = ir.push(b3, "mul", 0.01, x)
    b3.term = Goto(4)
    b4.term = Return(ir.add_phi(b4, {2: x, 3: y}))
    return ir


def test_straight_line_exact_integers():
    ir = straight_line()
    for x, y in [(1, 2), (-7, 3), (10**30, 3), (2.5, -1.0)]:
        assert interpret(ir, x, y) == (x * y + 3) // 2 - x ** 5
    assert type(interpret(ir, 10**30, 3)) is int


def test_loop_with_parallel_phis():
    def fib(n):
        a, b = 0, 1
        while n > 0:
            a, b = b, a + b
            n -= 1
        return a
    ir = fib_loop()
    assert [interpret(ir, n) for n in range(15)] == [fib(n) for n in range(15)]
    assert interpret(ir, 300) == fib(300)


def test_phi_swap_reads_before_writes():
    """Two phis that exchange each other's values every iteration."""
    ir = IR("swap")
    n = ir.add_arg("n")
    b1, b2, b3, b4 = (ir.add_block() for _ in range(4))
    b1.term = Goto(2)
    p = ir.add_phi(b2, {1: "p", 3: 0})
    q = ir.add_phi(b2, {1: "q", 3: 0})
    k = ir.add_phi(b2, {1: n, 3: 0})
    b2.term = Branch(ir.push(b2, "gt", k, 0), 3, 4)
    b2.phis[0].incoming[3], b2.phis[1].incoming[3] = q, p
    b2.phis[2].incoming[3] = ir.push(b3, "sub", k, 1)
    b3.term = Goto(2)
    b4.term = Return(ir.push(b4, "tuple", p, q))
    assert interpret(ir, 0) == ("p", "q")
    assert interpret(ir, 1) == ("q", "p")
    assert interpret(ir, 4) == ("p", "q")
    assert interpret(ir, 7) == ("q", "p")


def test_branches():
    ir = leaky_relu()
    for x in [3.0, 0.0, -2.0, 1e300, -1e-300]:
        assert interpret(ir, x) == (x if x > 0 else 0.01 * x)


def test_library_calls_and_keywords():
    ir = IR("g")
    x = ir.add_arg("x")
    b = ir.add_block()
    s = ir.push(b, "call", math.sqrt, x)
    r = ir.push(b, "call", round, s, kwargs={"ndigits": Const(3)})
    arr = ir.push(b, "call", np.full, 3, r)
    b.term = Return(ir.push(b, "call", np.sum, arr))
    assert interpret(ir, 2.0) == np.sum(np.full(3, round(math.sqrt(2.0), ndigits=3)))


def test_zero_division_and_index_errors():
    ir = IR("h")
    a, i, d = ir.add_arg("a"), ir.add_arg("i"), ir.add_arg("d")
    b = ir.add_block()
    b.term = Return(ir.push(b, "truediv", ir.push(b, "getitem", a, i), d))
    xs = np.array([1.0, 2.0, 3.0])
    assert interpret(ir, xs, -1, 2.0) == 1.5
    with pytest.raises(ZeroDivisionError):
        interpret(ir, [1, 2], 0, 0)
    with pytest.raises(IndexError):
        interpret(ir, xs, 3, 1.0)
    with pytest.raises(TypeError):
        interpret(ir, xs, 0)


def test_unpack_value_error():
    ir = IR("u")
    t = ir.add_arg("t")
    b = ir.add_block()
    b.term = Return(ir.push(b, "unpack", t, 2))
    assert interpret(ir, [1, 2]) == (1, 2)
    with pytest.raises(ValueError, match="too many values"):
        interpret(ir, (1, 2, 3))


def test_inputs_not_copied_setitem_writes_through():
    ir = IR("w")
    a = ir.add_arg("a")
    b = ir.add_block()
    ir.push(b, "setitem", a, 5.0, 1)
    b.term = Return(ir.push(b, "getitem", a, 1))
    xs = np.zeros(3)
    assert interpret(ir, xs) == 5.0 and xs[1] == 5.0


# -- recursion through calls ------------------------------------------------------------

def recursive_sum():
    """s(n) = 0 if n == 0 else n + s(n - 1), calling itself as an IR constant."""
    ir = IR("s")
    n = ir.add_arg("n")
    b1, b2, b3 = (ir.add_block() for _ in range(3))
    b1.term = Branch(ir.push(b1, "eq", n, 0), 2, 3)
    b2.term = Return(Const(0))
    rec = ir.push(b3, "call", Const(ir), ir.push(b3, "sub", n, 1))
    b3.term = Return(ir.push(b3, "add", n, rec))
    return ir


def test_deep_recursion_works():
    ir = recursive_sum()
    assert interpret(ir, 900) == 900 * 901 // 2


def test_runaway_recursion_raises_and_restores_limit():
    ir = recursive_sum()
    before = sys.getrecursionlimit()
    with pytest.raises(RecursionError):
        interpret(ir, -1)
    with pytest.raises(RecursionError):
        interpret(ir, 10 * before)
    assert sys.getrecursionlimit() == before
    assert interpret(ir, 10) == 55


# -- closures ---------------------------------------------------------------------------

def adder_closure_ir():
    """inner[k](x) = x + k; outer(k, x) = make_closure(inner, k)(x)."""
    inner = IR("inner", nfree=1)
    k, x = inner.add_arg("k"), inner.add_arg("x")
    b = inner.add_block()
    b.term = Return(inner.push(b, "add", x, k))
    outer = IR("outer")
    k2, x2 = outer.add_arg("k"), outer.add_arg("x")
    ob = outer.add_block()
    c = outer.push(ob, "make_closure", Const(inner), k2)
    ob.term = Return(outer.push(ob, "call", c, x2))
    return inner, outer


def test_make_closure_and_call():
    inner, outer = adder_closure_ir()
    assert interpret(outer, 10, 5) == 15
    assert interpret(inner, 1, 2) == 3


def test_closure_is_callable_from_python_and_libraries():
    inner, _ = adder_closure_ir()
    add3 = Closure(inner, (3,))
    assert add3(4) == 7
    assert add3(x=1) == 4
    assert list(map(add3, [1, 2])) == [4, 5]
    ir = IR("sorter")
    xs, f = ir.add_arg("xs"), ir.add_arg("f")
    b = ir.add_block()
    b.term = Return(ir.push(b, "call", sorted, xs, kwargs={"key": f}))
    neg = Closure(inner, (0,))
    assert interpret(ir, [3, 1, 2], neg) == [1, 2, 3]


# -- extension points -------------------------------------------------------------------

def test_registered_primitive_runs():
    register("test_hypot3", 3, lambda a, b, c: math.sqrt(a * a + b * b + c * c))
    try:
        ir = IR("h3")
        x = ir.add_arg("x")
        b = ir.add_block()
        b.term = Return(ir.push(b, "test_hypot3", x, 2.0, 6.0))
        assert interpret(ir, 3.0) == 7.0
    finally:
        del PRIMITIVES["test_hypot3"]


def test_state_handlers_get_context():
    def push(state, stmt, values):
        state.context.append(values[0])

    def pop(state, stmt, values):
        return state.context.pop()

    ir = IR("tape")
    x = ir.add_arg("x")
    b = ir.add_block()
    ir.push(b, "test_push", x)
    ir.push(b, "test_push", ir.push(b, "mul", x, 2))
    first = ir.push(b, "test_pop")
    b.term = Return(ir.push(b, "sub", first, ir.push(b, "test_pop")))
    tape = []
    out = interpret(ir, 5, handlers={"test_push": push, "test_pop": pop}, context=tape)
    assert out == 5 and tape == []


def test_malformed_ir_errors_name_the_place():
    ir = IR("bad")
    x = ir.add_arg("x")
    b1 = ir.add_block()
    ir.push(b1, "no_such_op", x)
    b1.term = Return(x)
    with pytest.raises(ValueError, match="no_such_op.*block #1 of bad"):
        interpret(ir, 1)
    ir2 = IR("edge")
    y = ir2.add_arg("y")
    e1, e2 = ir2.add_block(), ir2.add_block()
    e1.term = Goto(2)
    e2.term = Return(ir2.add_phi(e2, {7: y}))
    with pytest.raises(ValueError, match="block #2 of edge.*block #1"):
        interpret(ir2, 1)


# -- IR from text -----------------------------------------------------------------------

POW_TEXT = """\
function pow(%1 x, %2 n)
1 ─      goto #2
2 ┄ %3 = φ (#1 => 1, #3 => %6)
│   %4 = φ (#1 => %2, #3 => %7)
│   %5 = gt(%4, 0)
└──      goto #4 if not %5
3 ─ %6 = mul(%3, %1)
│   %7 = sub(%4, 1)
└──      goto #2
4 ─      return %3"""


def test_parsed_pow():
    ir = parse(POW_TEXT)
    for x, n in [(2, 10), (3, 0), (1.5, 3), (-2, 61)]:
        assert interpret(ir, x, n) == x ** n
    assert interpret(ir, 3, 200) == 3 ** 200


def test_parsed_library_call():
    ir = parse("function f(%1 x)\n"
               "1 ─ %2 = call(@math.sin, %1)\n"
               "│   %3 = call(@numpy.array, (1.0, 2.0))\n"
               "│   %4 = getitem(%3, %2)\n"
               "└──      return %4")
    with pytest.raises((IndexError, TypeError)):
        interpret(ir, 1.0)


# -- lowered Python functions -----------------------------------------------------------

def py_fact(n):
    return 1 if n <= 1 else n * py_fact(n - 1)


def py_is_even(n):
    return True if n == 0 else py_is_odd(n - 1)


def py_is_odd(n):
    return False if n == 0 else py_is_even(n - 1)


def py_runaway(n):
    return py_runaway(n + 1) + 1


def py_scaled(x, scale=2.0, *, shift=0.0):
    return x * scale + shift


def call_ir(callee, *args, kwargs=None):
    ir = IR("caller")
    params = [ir.add_arg(f"a{i}") for i in range(len(args))]
    b = ir.add_block()
    kw = {k: Const(v) for k, v in (kwargs or {}).items()}
    b.term = Return(ir.push(b, "call", Const(callee), *params, kwargs=kw))
    return ir


def test_user_function_classification():
    assert is_user_function(py_fact)
    assert not is_user_function(math.sin) and not is_user_function(np.linspace)
    assert not is_user_function(PRIMITIVES["in"].impl)


@needs_lowering
def test_calls_to_python_functions_recurse():
    assert interpret(call_ir(py_fact, 0), 25) == py_fact(25)
    assert interpret(call_ir(py_is_even, 0), 301) is False
    assert interpret(call_ir(py_fact, 0), 900) == py_fact(900)


@needs_lowering
def test_python_runaway_recursion():
    with pytest.raises(RecursionError):
        py_runaway(0)
    with pytest.raises(RecursionError):
        interpret(call_ir(py_runaway, 0), 0)


@needs_lowering
def test_keyword_and_default_binding():
    assert interpret(call_ir(py_scaled, 0), 3.0) == 6.0
    assert interpret(call_ir(py_scaled, 0, kwargs={"shift": 1.0}), 3.0) == 7.0
    assert interpret(call_ir(py_scaled, 0, 0, kwargs={"shift": 1.0}), 3.0, 3.0) == 10.0


@needs_lowering
def test_python_closure_passed_in():
    def make(k):
        def inner(x):
            return x * k
        return inner
    ir = IR("apply")
    f, x = ir.add_arg("f"), ir.add_arg("x")
    b = ir.add_block()
    b.term = Return(ir.push(b, "call", f, x))
    assert interpret(ir, make(7), 6) == 42
    assert interpret(lowering.lower(py_fact), 6) == 720


def py_outer(k):
    def inner(x, s=1):
        return x * k + s
    return inner


@needs_lowering
def test_make_closure_from_code_object_with_defaults():
    code = next(c for c in py_outer.__code__.co_consts if hasattr(c, "co_freevars"))
    ir = IR("outer", func=py_outer)
    k, x = ir.add_arg("k"), ir.add_arg("x")
    b = ir.add_block()
    c = ir.push(b, "make_closure", Const(code), k, kwargs={"defaults": Const((5,))})
    one = ir.push(b, "call", c, x)
    two = ir.push(b, "call", c, x, kwargs={"s": Const(0)})
    b.term = Return(ir.push(b, "tuple", one, two))
    assert interpret(ir, 3, 4) == (17, 12)


def test_huge_integer_powers_are_exact():
    ir = IR("p")
    x, n = ir.add_arg("x"), ir.add_arg("n")
    b = ir.add_block()
    b.term = Return(ir.push(b, "pow", x, n))
    assert interpret(ir, 3, 500) == 3 ** 500
    assert interpret(ir, 2, -70) == 2 ** -70
