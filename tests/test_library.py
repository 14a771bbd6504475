"""The library registry (jit.library.registry): one entry per callable, dispatch by
argument-type pattern, a miss that names the patterns tried, no dependence on the
order of declaration, and the README's table generated from `python -m jit.library`."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import jit
from jit.library.listing import markdown
from jit.library.registry import REGISTRY, Registry
from jit.types import FLOAT64, INT64, ArrayT, TypingError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_readme_table_is_the_registry():
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    m = re.search(r"<!-- library table: python -m jit.library --markdown -->\n(.*?)"
                  r"<!-- end library table -->", readme, re.S)
    assert m, "README has no generated library table"
    assert m.group(1) == markdown(), ("README's library table is stale: regenerate it with "
                                      "python -m jit.library --markdown")


def test_python_dash_m_prints_the_registry():
    out = subprocess.run([sys.executable, "-m", "jit.library"], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert out.startswith(f"zygopy library registry: {len(REGISTRY.listed())} entries")
    for name in ("np.sin", "np.sum, a.sum()", "math.fsum", "a @ b"):
        assert name in out
    md = subprocess.run([sys.executable, "-m", "jit.library", "--markdown"], capture_output=True,
                        text=True, cwd=ROOT, check=True).stdout
    assert md == markdown()


def test_a_function_and_its_method_are_one_entry():
    entry, params, args = REGISTRY.method("sum")
    assert entry is REGISTRY.for_callee(np.sum)
    assert (params, args) == ("axis=None, keepdims=False", "axis=axis, keepdims=keepdims")
    assert REGISTRY.method("dot")[0] is REGISTRY.for_callee(np.dot)
    assert REGISTRY.method("dot")[1:] == ("b", "b")
    # a method whose call differs from its parameters: a.reshape(n, m) or a.reshape(shape)
    assert REGISTRY.method("reshape")[1:] == ("shape, m=None", "shape, m")

    def f(a):
        return a.sum() + np.sum(a)
    a = np.arange(6.0).reshape(2, 3)
    assert jit.jit(f)(a) == f(a)


def test_one_entry_holds_the_scalar_and_the_array_np_sin():
    e = REGISTRY.for_callee(np.sin)
    assert [i.native for i in e.impls] == ["codegen", "python", "host call"]
    assert e.gpu == {"cuda": "__nv_sin"}

    def f(x, a):
        return np.sin(x) + np.sum(np.sin(a))
    a = np.linspace(0.0, 1.0, 5)
    assert jit.jit(f)(0.5, a) == pytest.approx(f(0.5, a), rel=1e-15)


def test_a_miss_names_the_patterns_tried():
    def f(a):
        return sum(a, 1.0)
    with pytest.raises(TypingError, match=r"patterns tried: one array, any rank and dtype; "
                                          r"a tuple or list of known length"):
        jit.jit(f)(np.zeros((2, 2, 2)))

    def g(a):                   # (no native impl: numpy's own, by host call)
        return np.argmin(a)
    for x in (1.5, np.arange(8.0).reshape(2, 2, 2)[::-1]):
        assert jit.jit(g)(x) == np.argmin(x)


class _Ctx:
    """Just enough of a typing context for Registry.type_stmt."""

    def __init__(self):
        self.typing = type("T", (), {"impls": {}})()

    def fail(self, why):
        raise TypingError(why)


class _Stmt:
    var, kwargs = "v", {}


def _declare(reg: Registry, order: list) -> None:
    e = reg.entry("op", family="test")
    impls = {"int": (lambda c, s, ts: ts == [INT64], lambda c, s, ts: INT64),
             "float": (lambda c, s, ts: ts == [FLOAT64], lambda c, s, ts: FLOAT64),
             "any": (None, lambda c, s, ts: ArrayT(FLOAT64, 1))}
    for name in order:
        reg.add(e, name, impls[name][0], impls[name][1], lambda fc, s, ts: None)


@pytest.mark.parametrize("order", [["int", "float", "any"], ["any", "float", "int"],
                                   ["float", "any", "int"]])
def test_dispatch_does_not_depend_on_declaration_order(order):
    reg = Registry()
    _declare(reg, order)
    e = reg.get("op")
    assert reg.type_stmt(e, _Ctx(), _Stmt(), [INT64]) == INT64
    assert reg.type_stmt(e, _Ctx(), _Stmt(), [FLOAT64]) == FLOAT64
    assert reg.type_stmt(e, _Ctx(), _Stmt(), [ArrayT(INT64, 2)]) == ArrayT(FLOAT64, 1)


def test_overlapping_patterns_and_double_declarations_are_errors():
    reg = Registry()
    e = reg.entry(np.sin, family="test")
    reg.add(e, "a", lambda c, s, ts: True, lambda c, s, ts: INT64)
    reg.add(e, "b", lambda c, s, ts: True, lambda c, s, ts: INT64)
    with pytest.raises(TypingError, match="overlap"):
        reg.type_stmt(e, _Ctx(), _Stmt(), [INT64])
    with pytest.raises(ValueError, match="declared twice"):
        reg.entry(np.sin, family="test")
    reg.add(e, "all", None, lambda c, s, ts: INT64)
    with pytest.raises(ValueError, match="two catch-all"):
        reg.add(e, "all again", None, lambda c, s, ts: INT64)


def test_every_entry_has_native_code_for_every_pattern():
    for e in REGISTRY.entries():
        assert e.impls, e.name
        for i in e.impls:
            assert i.native in ("codegen", "python", "host call"), (e.name, i)
            assert callable(i.types)


def test_methods_declared_with_their_function_differentiate_in_both_executors():
    """`a.prod()` compiles because np.prod is declared with methods=("prod",); the
    interpreter differentiates it through adjoint's method rule: both agree, and
    match central differences."""
    import adjoint

    def f(a):
        return a.prod() + a.max() + a.dot(a) + a.mean()
    a = np.array([1.1, 0.7, 2.3])
    grads = [adjoint.pullback(f, a, backend=b)[1](1.0)[0] for b in ("llvm", "interp")]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-14)
    eps = 1e-6
    fd = [(f(a + eps * e) - f(a - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(grads[0], fd, rtol=1e-6)


_A = np.array([1.1, 0.7, 2.3])
_B = np.array([0.5, -1.5, 3.0])
_BY_NAME = {
    "add": lambda x, y: np.sum(np.add(x, y) * x),
    "subtract": lambda x, y: np.sum(np.subtract(x, 2.0) * np.subtract(1.5, y)),
    "multiply": lambda x, y: np.sum(np.multiply(x, y) * x),
    "divide": lambda x, y: np.sum(np.divide(x, y)) + np.sum(np.divide(2.0, x)),
    "power": lambda x, y: np.sum(np.power(x, 2.5) * y),
    "numbers": lambda x, y: (np.add(x[0], y[1]) * np.divide(x[1], y[2])
                             - np.multiply(x[2], 2.0) + np.power(x[0], y[0])),
    "zero_divisor": lambda x, y: np.divide(x[0], 0.0 * y[0]) + x[1],
    "sum_of_numbers": lambda x, y: np.sum(x[0] * y[1]) + np.mean(x[2]) + np.sum(np.sum(x) * y[0]),
}


@pytest.mark.parametrize("name", sorted(_BY_NAME))
def test_arithmetic_ufuncs_called_by_name_compile_and_differentiate(name):
    """np.add/subtract/multiply/divide/power by name, on numbers and arrays (and np.sum /
    np.mean of a number): CPython,
    the JIT and both pullback backends agree, and gradients match central differences
    (numpy's division: a zero divisor gives inf in the value and the gradient)."""
    import warnings

    import adjoint
    f = _BY_NAME[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = f(_A, _B)
        assert jit.jit(f)(_A, _B) == want
        got = {}
        for backend in ("llvm", "interp"):
            y, back = adjoint.pullback(f, _A, _B, backend=backend)
            assert y == want
            got[backend] = back(1.0)
    for g_llvm, g_interp in zip(got["llvm"], got["interp"]):
        np.testing.assert_allclose(g_llvm, g_interp, rtol=1e-14)
    if np.isfinite(want):
        eps = 1e-6
        for k, x in enumerate((_A, _B)):
            fd = []
            for e in np.eye(3):
                args_p, args_m = [_A, _B], [_A, _B]
                args_p[k], args_m[k] = x + eps * e, x - eps * e
                fd.append((f(*args_p) - f(*args_m)) / (2 * eps))
            np.testing.assert_allclose(got["llvm"][k], fd, rtol=1e-6, atol=1e-8)
