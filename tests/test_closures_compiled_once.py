"""Functions made at run time compile once (issue 29, item 2): closures made anew by a
factory, `functools.partial` objects with fresh bound values, lambdas made in a loop and
function values passed to a helper share the code compiled for the first one of their
code; what they capture is read per call, never baked in.

Compilations are counted at `jit.runtime.native.compile_ir` (every LLVM module goes
through it) and lowerings by the identity of `lowering.lower`'s IR.  Values are checked
against closed forms and central differences, alternating the captured values so that
code reused with the wrong values would show."""
from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pytest

import jit
import lowering
from adjoint import gradient, jvp, pullback, value_and_grad
from jit.runtime import native

BACKENDS = ("llvm", "interp")


@pytest.fixture
def compiles(monkeypatch):
    """A list whose length counts the LLVM modules compiled since the test began."""
    seen: list = []
    real = native.compile_ir

    def counting(*args, **kwargs):
        seen.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(native, "compile_ir", counting)
    return seen


@pytest.fixture(autouse=True)
def no_fallback():
    """Compiled means compiled: a fallback to the interpreter is an error here."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def descent_step(a):
    return lambda x: x - 0.05 * (x ** 2 - a)


def scaled_square(a):
    return lambda x: a * x * x


def test_fresh_closures_share_one_lowering():
    assert lowering.lower(descent_step(1.0)) is lowering.lower(descent_step(2.0))
    assert lowering.lower(descent_step(1.0)) is not lowering.lower(scaled_square(1.0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_fresh_closures_compile_once_with_their_own_values(backend, compiles):
    x = 0.7
    pullback(descent_step(1.0), x, backend=backend)[1](1.0)   # the first compiles
    gradient(scaled_square(1.0), x, backend=backend)
    value_and_grad(scaled_square(1.0), x, backend=backend)
    before = len(compiles)
    for a in (1.0, 2.0, 1.0, 3.5, 2.0):
        y, back = pullback(descent_step(a), x, backend=backend)
        assert y == x - 0.05 * (x ** 2 - a)
        assert back(1.0)[0] == pytest.approx(1 - 0.1 * x, abs=1e-15)
        g = gradient(scaled_square(a), x, backend=backend)[0]
        assert g == pytest.approx(2 * a * x, rel=1e-14)
        v, (d,) = value_and_grad(scaled_square(a), x, backend=backend)
        assert (v, d) == pytest.approx((a * x * x, 2 * a * x), rel=1e-14)
    assert len(compiles) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_closure_over_an_int_is_its_own_specialisation(backend):
    assert gradient(scaled_square(2), 1.5, backend=backend)[0] == pytest.approx(6.0)
    assert gradient(scaled_square(2.5), 1.5, backend=backend)[0] == pytest.approx(7.5)
    assert gradient(scaled_square(True), 1.5, backend=backend)[0] == pytest.approx(3.0)


def weighted(a, b, x):
    return a * math.sin(x) + b * x


@pytest.mark.parametrize("backend", BACKENDS)
def test_partials_with_fresh_bound_values(backend, compiles):
    gradient(functools.partial(weighted, 1.0, 2.0), 0.3, backend=backend)
    before = len(compiles)
    for a, b in ((1.0, 2.0), (-3.0, 0.5), (2.0, 2.0)):
        f = functools.partial(weighted, a, b)
        g = gradient(f, 0.3, backend=backend)[0]
        assert g == pytest.approx(central(f, 0.3), rel=1e-8)
        assert g == pytest.approx(a * math.cos(0.3) + b, rel=1e-14)
    assert len(compiles) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_partials_passed_to_a_helper(backend, compiles):
    """A partial of a plain function passed as a value is a closure over its bound
    arguments: compiled once per function and number of bound arguments."""
    gradient(apply_twice, functools.partial(weighted, 1.0, 2.0), 0.3, backend=backend)
    before = len(compiles)
    for a, b in ((1.0, 2.0), (-3.0, 0.5), (2.0, 2.0)):
        p = functools.partial(weighted, a, b)
        g = gradient(apply_twice, p, 0.3, backend=backend)
        assert g[0] is None
        assert g[1] == pytest.approx(central(lambda x: apply_twice(p, x), 0.3), rel=1e-7)
    assert len(compiles) == before
    other = functools.partial(cube_scaled, 2.0)      # another function: its own code
    g = gradient(apply_twice, other, 0.3, backend=backend)[1]
    assert g == pytest.approx(central(lambda x: apply_twice(other, x), 0.3), rel=1e-7)


def cube_scaled(a, x):
    return a * x ** 3


def test_jit_and_jvp_of_a_helper_given_partials():
    for a in (2.0, 3.0):
        p = functools.partial(weighted, a, 1.0)
        assert jit.jit(apply_twice)(p, 0.3) == pytest.approx(apply_twice(p, 0.3), rel=1e-15)
        y, t = jvp(apply_twice, (p, 0.3), (None, 1.0))
        assert t == pytest.approx(central(lambda x: apply_twice(p, x), 0.3), rel=1e-7)


def loop_made(ks):
    """Lambdas made in a loop: one over the loop variable's cell (late binding, as
    CPython has it: every one reads the last k) and one over a default (its own k)."""
    late, own = [], []
    for k in ks:
        late.append(lambda x: k * x ** 3)    # noqa: B023  (late binding on purpose)
        own.append(lambda x, k=k: k * x ** 3)
    return late, own


@pytest.mark.parametrize("backend", BACKENDS)
def test_lambdas_made_in_a_loop(backend, compiles):
    late, own = loop_made([1.0, 2.0, 3.0])
    for f in late + own:
        gradient(f, 0.5, backend=backend)
        jvp(f, (0.5,), (1.0,), backend=backend)
    before = len(compiles)
    late, own = loop_made([4.0, 5.0, 6.0])
    for k, f_late, f_own in zip([4.0, 5.0, 6.0], late, own):
        assert gradient(f_late, 0.5, backend=backend)[0] == pytest.approx(6.0 * 3 * 0.25)
        assert f_late(0.5) == 6.0 * 0.125
        assert gradient(f_own, 0.5, backend=backend)[0] == pytest.approx(k * 3 * 0.25)
        assert pullback(f_own, 0.5, backend=backend)[1](1.0)[0] == pytest.approx(k * 0.75)
        assert jvp(f_own, (0.5,), (1.0,), backend=backend)[1] == pytest.approx(k * 0.75)
    assert len(compiles) == before


def test_jit_of_lambdas_made_in_a_loop():
    late, own = loop_made([1.0, 2.0])
    assert [jit.jit(f)(2.0) for f in own] == [8.0, 16.0]
    assert [jit.jit(f)(2.0) for f in late] == [16.0, 16.0]


def apply_twice(g, x):
    return g(g(x)) * 2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_function_values_passed_to_a_helper(backend, compiles):
    gradient(apply_twice, scaled_square(1.0), 0.6, backend=backend)
    before = len(compiles)
    for a in (1.0, 2.0, 0.5, 2.0):
        g = gradient(apply_twice, scaled_square(a), 0.6, backend=backend)[1]
        # 2 a (a x^2)^2 -> d/dx = 8 a^3 x^3
        assert g == pytest.approx(8 * a ** 3 * 0.6 ** 3, rel=1e-13)
    assert len(compiles) == before
    g = gradient(apply_twice, descent_step(2.0), 0.6, backend=backend)[1]   # other code
    step = descent_step(2.0)
    assert g == pytest.approx(central(lambda x: apply_twice(step, x), 0.6), rel=1e-8)


def over_function(fn):
    return lambda x: fn(x) * x


@pytest.mark.parametrize("backend", BACKENDS)
def test_captured_functions_of_different_code_keep_their_own_code(backend):
    for fn, d in ((math.sin, lambda x: math.cos(x) * x + math.sin(x)),
                  (math.cos, lambda x: -math.sin(x) * x + math.cos(x)),
                  (scaled_square(3.0), lambda x: 9.0 * x * x),
                  (descent_step(2.0), lambda x: 2 * x - 0.15 * x * x + 0.1)):
        for _ in range(2):
            assert gradient(over_function(fn), 0.4, backend=backend)[0] == \
                pytest.approx(d(0.4), rel=1e-13)


def rebindable(a):
    def f(x):
        return a * x * x

    def set_a(v):
        nonlocal a
        a = v
    return f, set_a


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cell_rebound_after_creation_is_read_as_it_is_now(backend):
    f, set_a = rebindable(1.0)
    assert gradient(f, 2.0, backend=backend)[0] == 4.0
    set_a(3.0)
    assert gradient(f, 2.0, backend=backend)[0] == 12.0
    assert pullback(f, 2.0, backend=backend)[0] == 12.0
    set_a(-1.0)
    assert gradient(f, 2.0, backend=backend)[0] == -4.0


def over_weights(w):
    return lambda x: np.sum(w * x * x)


GLOBAL_SQUARE, SET_GLOBAL_SQUARE = rebindable(1.0)


def through_a_global(x):
    return GLOBAL_SQUARE(x) + x


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_global_closure_whose_cell_is_rebound(backend):
    """A closure read from a global is a constant of the code that reads it: its
    cells are guarded like globals, and a rebinding compiles again."""
    try:
        for a in (1.0, 3.0, 1.0):
            SET_GLOBAL_SQUARE(a)
            assert gradient(through_a_global, 2.0, backend=backend)[0] == 4 * a + 1
        compiled = jit.jit(through_a_global)
        SET_GLOBAL_SQUARE(2.0)
        assert compiled(2.0) == through_a_global(2.0) == 10.0
    finally:
        SET_GLOBAL_SQUARE(1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_captured_arrays_are_read_as_they_are_now(backend, compiles):
    w = np.array([1.0, 2.0, 3.0])
    f = over_weights(w)
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(gradient(f, x, backend=backend)[0], 2 * w * x)
    before = len(compiles)
    w[:] = [4.0, -1.0, 0.5]
    np.testing.assert_allclose(gradient(f, x, backend=backend)[0], 2 * w * x)
    v = np.array([2.0, 2.0, 2.0])
    np.testing.assert_allclose(gradient(over_weights(v), x, backend=backend)[0], 2 * v * x)
    assert len(compiles) == before
    w2 = np.array([[1.0, 2.0, 3.0]])       # another rank: its own specialisation
    np.testing.assert_allclose(gradient(over_weights(w2), x, backend=backend)[0],
                               2 * w2[0] * x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_mode_of_fresh_closures(backend):
    for a in (1.0, 2.0, 1.0):
        y, t = jvp(scaled_square(a), (0.8,), (1.0,), backend=backend)
        assert (y, t) == pytest.approx((a * 0.64, 2 * a * 0.8), rel=1e-14)


def test_jit_of_fresh_closures_compiles_once(compiles):
    jit.jit(descent_step(1.0))(0.7)
    before = len(compiles)
    for a in (1.0, 2.0, 1.0, 3.0):
        step = descent_step(a)
        assert jit.jit(step)(0.7) == step(0.7)
    assert len(compiles) == before


@pytest.mark.parametrize("backend", ("auto", "interp"))
def test_nested_gradient_through_a_closure_over_the_outer_variable(backend):
    with warnings.catch_warnings():      # (nested AD runs in the interpreter)
        warnings.simplefilter("ignore")
        inner = lambda a: gradient(scaled_square(a), 0.75, backend=backend)[0]
        for a in (1.0, 2.0):
            assert gradient(inner, a, backend=backend)[0] == pytest.approx(1.5)


GAIN = 2.0


def with_gain(offset):
    return lambda x: GAIN * x * x + offset


def test_a_closure_made_after_a_global_is_rebound_sees_it():
    global GAIN
    try:
        assert gradient(with_gain(1.0), 1.0, backend="llvm")[0] == 4.0
        GAIN = 5.0
        assert gradient(with_gain(2.0), 1.0, backend="llvm")[0] == 10.0
    finally:
        GAIN = 2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_library_callable_with_a_rule_is_a_valid_f(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradient(np.sqrt, 2.0, backend=backend)[0] == pytest.approx(0.5 / math.sqrt(2))
        assert gradient(math.sin, 0.3, backend=backend)[0] == pytest.approx(math.cos(0.3))
        d2 = gradient(lambda x: gradient(np.sqrt, x)[0], 2.0,       # (nested: not
                      backend="interp" if backend == "interp" else "auto")  # compiled)
        assert d2[0] == pytest.approx(-0.25 * 2.0 ** -1.5)


def recursive_power(a):
    def inner(x, k):
        return a * x if k == 0 else x * inner(x, k - 1)
    return inner


@pytest.mark.parametrize("backend", ("auto", "interp"))
def test_a_returned_recursive_inner_function(backend):
    """Its cell holds itself: the JIT refuses it by name (no RecursionError), and the
    interpreter gives the gradient with each closure's own value."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a in (1.0, 2.0, 1.0):
            assert gradient(recursive_power(a), 1.5, 3, backend=backend) == \
                (pytest.approx(4 * a * 1.5 ** 3), None)
