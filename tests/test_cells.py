"""Closures with Python's cell semantics: variables a nested function reads after the
enclosing function reassigns them live in cells (`make_cell`, `cell_get`,
`cell_set`), values stored once are still captured by value, and defaults computed at
run time go through `make_closure(...; defaults=)`.  The interpreter matches CPython
(tests/lowering_cases.py and the corpus run them); reverse mode and the JIT refuse
cells with errors that name the construct."""
from __future__ import annotations

import pytest
from harness import check_lowering

import adjoint
import jit
import lowering
import ssair
from jit.types import TypingError


def ops(f) -> list:
    return [s.op for b in lowering.lower(f).blocks for s in b.stmts]


def loop_closures(n):
    fs = []
    for i in range(n):
        fs.append(lambda: i)  # noqa: B023 - late binding is the point
    return fs[0]() + 10 * fs[-1]() if fs else -1


def captured_once(x):
    k = x * 2.0
    add_k = lambda t: t + k
    return add_k(1.0)


def later(x):
    def g():
        return y * 2.0
    y = x + 1.0
    return g()


def recursive(x):
    def walk(k, acc):
        return acc if k == 0 else walk(k - 1, acc * x)
    return walk(3, 1.0)


def nested_pass_through(n):
    k = 0

    def outer():
        def inner():
            return k
        return inner
    f = outer()
    k = n
    return f()


def dynamic_default(n):
    f = lambda t, s=n + 1: t * s
    return f(2), f(2, 3)


def unbound_free(c):
    def g():
        return y
    if c:
        y = 1
    return g()


@pytest.mark.parametrize("f, arglists", [
    (loop_closures, [(3,), (0,)]),
    (later, [(2.0,)]),
    (recursive, [(1.5,)]),
    (nested_pass_through, [(4,)]),
    (dynamic_default, [(5,)]),
    (unbound_free, [(1,), (0,)]),
])
def test_interpreter_matches_cpython(f, arglists):
    check_lowering(f, *arglists)


def test_value_capture_stays_the_fast_path():
    assert "make_cell" not in ops(captured_once)
    assert ops(later).count("make_cell") == 1 and "cell_set" in ops(later)


def test_nested_function_reads_free_cells():
    inner = lowering.lower(later).blocks[0].stmts
    closure = next(s for s in inner if s.op == "make_closure")
    text = str(lowering.lower(closure.args[0].value))
    assert "cell_get(%1, 'y', 'free')" in text


def test_empty_cell_raises_nameerror_like_cpython():
    with pytest.raises(NameError, match="free variable 'y'"):
        ssair.interpret(lowering.lower(unbound_free), 0)


def test_dynamic_defaults_print_and_parse():
    ir = lowering.lower(dynamic_default)
    text = str(ir)
    assert "make_closure(" in text and "defaults=%" in text
    assert str(ssair.parser.parse(text)) == text


def test_adjoint_refuses_differentiable_cells():
    with pytest.raises(TypeError, match="variable 'y' is read by a nested function"):
        adjoint.pullback(later, 2.0, backend="interp")
    _, back = adjoint.pullback(loop_closures, 3, backend="interp")
    assert back(1.0) == (None,)


def test_jit_refuses_cells_and_compiles_dynamic_defaults():
    with pytest.raises(TypingError, match="captures .y., a variable assigned again"):
        jit.jit(later)(2.0)
    assert jit.jit(dynamic_default)(5) == dynamic_default(5)
