"""`gradient` and `value_and_grad` in one native call (jit/pullback/fast_gradient.py):
over the corpus they give what the interpreter gives (values exactly as
`jit_corpus_report.close_enough` documents, gradients to 1e-12), raise the same
errors, never modify their inputs, and step aside to the general path for what the
compiled signature does not cover."""
from __future__ import annotations

import copy
import math
import warnings

import corpus
import numpy as np
import pytest
from harness import same
from jit_corpus_report import close_enough
from jit_grad_check import close

from adjoint import gradient, pullback, value_and_grad
from bench.workloads import black_scholes, lotka_volterra, rosenbrock
from jit.pullback import fast_gradient as FG

CASES, _ = corpus.load()
ONE_CALL: dict = {}


def _outcome(f, args, backend):
    try:
        return "ok", value_and_grad(f, *copy.deepcopy(args), backend=backend)
    except Exception as e:  # noqa: BLE001
        return "error", type(e)


def _compiled_signatures(f) -> int:
    return sum(1 for k, v in FG._TABLE.items() if k[0] is f.__code__ and v)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_corpus_one_call_agrees_with_the_interpreter(case):
    gradients = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args in case.args:
            keep = copy.deepcopy(args)
            ref = _outcome(case.func, args, "interp")
            got = _outcome(case.func, args, "auto")
            assert ref[0] == got[0], (ref, got)
            if ref[0] == "ok":
                assert close_enough(ref[1][0], got[1][0]), (ref, got)
                assert close(ref[1][1], got[1][1]), (ref, got)
                g = gradient(case.func, *copy.deepcopy(args))
                assert close(g, got[1][1], 0.0)
                gradients += 1
            else:
                assert ref[1] is got[1], (ref, got)
            for a, k in zip(args, keep):
                assert same(a, k)
    arrays = any(_float_array(a) for args in case.args for a in args)
    ONE_CALL[case.id] = (gradients > 0 and not arrays, _compiled_signatures(case.func) > 0)


def _float_array(a) -> bool:
    if isinstance(a, (tuple, list)):
        return any(_float_array(e) for e in a)
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def test_most_of_the_corpus_runs_in_one_call():
    """Of the corpus functions with a real scalar result and no float array argument
    (whose gradient takes pullback's fast path), the share `value_and_grad` ran in one
    native call for (the rest: refused by the JIT, or not plain)."""
    if len(ONE_CALL) < len(CASES):
        pytest.skip("needs the whole corpus run")
    runs = [one for has_gradient, one in ONE_CALL.values() if has_gradient]
    share = sum(runs) / len(runs)
    print(f"one native call for {sum(runs)} of {len(runs)} corpus functions")
    assert share >= 0.75, share


def test_the_workloads_match_pullback_and_closed_forms():
    s, k, t, r, v = 100.0, 95.0, 0.5, 0.02, 0.25
    y, g = value_and_grad(black_scholes, s, k, t, r, v)
    y2, back = pullback(black_scholes, s, k, t, r, v)
    assert y == y2 and g == back(1.0)
    assert _compiled_signatures(black_scholes) == 1
    d1 = (math.log(s / k) + (r + 0.5 * v * v) * t) / (v * math.sqrt(t))
    assert g[0] == pytest.approx(0.5 * (1 + math.erf(d1 / math.sqrt(2))), rel=1e-12)
    xs = np.linspace(-1.0, 1.5, 50)
    y, g = value_and_grad(rosenbrock, xs)
    y2, back = pullback(rosenbrock, xs)
    assert y == y2 and np.array_equal(g[0], back(1.0)[0])
    assert _compiled_signatures(rosenbrock) == 0      # a float array: pullback's path
    assert gradient(lotka_volterra, 1.1, 0.4, 0.1, 0.4, 100) == \
        pullback(lotka_volterra, 1.1, 0.4, 0.1, 0.4, 100)[1](1.0)


def square_sum(x, n):
    return float(n) * x * x


def test_other_argument_classes_take_the_right_path():
    assert gradient(square_sum, 3.0, 2) == (12.0, None)
    assert gradient(square_sum, np.float64(3.0), 2) == (12.0, None)   # numpy scalar
    assert gradient(square_sum, 3, 2) == (None, None)                   # an int x

    class Sub(float):
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradient(square_sum, Sub(3.0), 2) == (12.0, None)
    assert gradient(square_sum, 3.0, 2 ** 70) == (2.0 * 2 ** 70 * 3.0, None)  # big int


def dot_sum(x, y):
    return np.sum(x * y)


def test_array_arguments_views_and_misaligned_memory():
    x, y = np.arange(4.0), np.ones(4)
    assert np.array_equal(gradient(dot_sum, x, y)[0], y)
    assert np.array_equal(gradient(dot_sum, x[::2], y[:2])[1], x[::2])
    raw = np.zeros(33, dtype=np.uint8)
    odd = np.ndarray((4,), np.float64, raw, offset=1)
    odd[:] = [1.0, 2.0, 3.0, 4.0]
    assert np.array_equal(gradient(dot_sum, y, odd)[0], odd)
    g = gradient(dot_sum, x, y)
    g[0][0] = 99.0                      # fresh arrays: the next call is unaffected
    assert gradient(dot_sum, x, y)[0][0] == 1.0


def domain(x):
    return math.sqrt(x)


def vector(x):
    return x * np.ones(2)


def test_errors_are_cpythons():
    with pytest.raises(ValueError, match="math domain error"):
        gradient(domain, -1.0)
    with pytest.raises(TypeError, match="value_and_grad: vector must return a real scalar"):
        value_and_grad(vector, 1.0)
    with pytest.raises(TypeError, match="gradient: vector must return a real scalar"):
        gradient(vector, 1.0)
    with pytest.raises(TypeError):
        gradient(square_sum, 1.0)       # a missing argument


def test_keywords_and_the_interpreter_take_the_general_path():
    assert value_and_grad(square_sum, 3.0, n=2) == (18.0, (12.0,))
    assert value_and_grad(square_sum, 3.0, 2, backend="interp") == (18.0, (12.0, None))


def test_value_and_grad_in_differentiated_code_is_second_order():
    def outer(x):
        v, g = value_and_grad(lambda t: t ** 3, x)
        return v + g[0]
    h = 1e-6
    fd = (outer(1.5 + h) - outer(1.5 - h)) / (2 * h)
    assert gradient(outer, 1.5, backend="interp")[0] == pytest.approx(fd, rel=1e-7)
    assert gradient(outer, 1.5, backend="interp")[0] == pytest.approx(3 * 1.5 ** 2 + 6 * 1.5)


def test_a_new_code_object_or_backend_is_not_served_stale_code():
    def f(x):
        return x * x

    def g(x):
        return x * x * x
    assert gradient(f, 2.0) == (4.0,) and gradient(f, 2.0) == (4.0,)
    f.__code__ = g.__code__
    assert gradient(f, 2.0) == (12.0,)
    import adjoint.api as api
    from jit.pullback.backend import BACKEND
    assert api.HOT_GRADIENTS[0]
    api.register_backend("llvm", BACKEND)
    assert not api.HOT_GRADIENTS[0] and not api.HOT_GRADIENTS[1]
    assert value_and_grad(f, 2.0) == (8.0, (12.0,))


def test_functions_of_library_modules_and_refused_ones():
    from jit.cli.demo import pow as demo_pow      # a function of the jit package itself
    assert value_and_grad(demo_pow, 1.5, 3) == (3.375, (6.75, None))
    assert _compiled_signatures(demo_pow) == 1

    def uses_a_list(x):
        acc = []
        acc.append(x)
        return acc[0] * 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):      # refused or not, the general path answers every time
            assert gradient(uses_a_list, 1.5) == (2.0,)


def test_a_recursion_without_a_base_case_raises_what_cpython_raises():
    """Typing the J transform of a recursion that never returns used to fail with a
    ValueError whose message was the repr of an internal typing record; the call whose
    result type typing cannot know now runs once in the interpreter to learn it
    (issue 30's per-call-site fallback), which raises CPython's RecursionError."""
    with pytest.raises(RecursionError):
        value_and_grad(_runaway, 3, backend="llvm")
    with pytest.raises(RecursionError):
        value_and_grad(_runaway, 3)       # "auto": the interpreter, as CPython


def _runaway(n):
    return _runaway(n + 1) + 1


def _array_norm(xs):
    return np.sum(xs * xs)


def _array_count(xs):
    return len(xs)


def _array_result(xs):
    return xs * 2.0


def test_float_array_arguments_through_the_pullback_fast_path():
    """A float array argument goes to pullback's fast path, called directly by the hot
    entry (its second call too); a result that is not a float takes the general path,
    which gives the same answer or the same error as without the hot entry."""
    xs = np.array([1.0, -2.0, 0.5])
    for _ in range(2):
        y, g = value_and_grad(_array_norm, xs)
        assert y == 5.25 and np.array_equal(g[0], 2 * xs)
        assert np.array_equal(gradient(_array_norm, xs)[0], 2 * xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            y, g = value_and_grad(_array_count, xs)
            assert y == 3 and type(y) is int and np.array_equal(g[0], np.zeros(3))
            for _ in range(2):
                with pytest.raises(TypeError, match="must return a real scalar"):
                    gradient(_array_result, xs)
    assert np.array_equal(xs, [1.0, -2.0, 0.5])


def _uses_a_with(x):
    with warnings.catch_warnings():
        y = x * 2.0
    return y


def test_backend_llvm_still_refuses_after_an_auto_call():
    """An "auto" call leaves a shortcut to its general path (the interpreter, with a
    warning) for a function the JIT refuses; `backend="llvm"` must still raise."""
    from jit.types import TypingError
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradient(_uses_a_with, 1.0) == (2.0,)
        assert value_and_grad(_uses_a_with, 1.0) == (2.0, (2.0,))
    for call in (gradient, value_and_grad):
        with pytest.raises(TypingError, match="with block"):
            call(_uses_a_with, 1.0, backend="llvm")
    assert gradient(black_scholes, 100.0, 95.0, 0.5, 0.02, 0.25, backend="llvm") == \
        gradient(black_scholes, 100.0, 95.0, 0.5, 0.02, 0.25)


def test_the_one_call_tape_is_sized_from_the_previous_call():
    """The native gradient presizes its tape from the length its previous call used:
    a deeper call after a shallow one grows it, a shallower one fits, and every
    result is the closed form (d/dx x**n = n x**(n-1)) and the interpreter's."""
    from bench.workloads import pow_rec
    for n in (3, 400, 5, 700, 0, 400):
        y, (gx, gn) = value_and_grad(pow_rec, 1.001, n)
        assert FG._HOT[True][pow_rec][2], "expected the native one-call entry"
        assert y == pytest.approx(1.001 ** n, rel=1e-12) and gn is None
        assert gx == pytest.approx(n * 1.001 ** (n - 1) if n else 0.0, rel=1e-12)
        assert close((y, (gx, gn)), value_and_grad(pow_rec, 1.001, n, backend="interp"))
