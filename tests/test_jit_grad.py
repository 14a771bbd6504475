"""Compiled pullbacks (`backend="llvm"`): the interpreter and the JIT agree on values
and gradients (1e-12 relative) over the corpus and the adjoint suite's functions,
errors match, the native tape is released with `back`, recursion is native, and
`backend="auto"` falls back with one warning when the JIT refuses a function."""
from __future__ import annotations

import ctypes
import gc
import math
import warnings
import weakref

import adjoint_examples as ex
import corpus
import numpy as np
import pytest
import test_adjoint as T
from jit_grad_check import check_llvm, close

import adjoint
import jit
from jit.pullback.backend import JitFallbackWarning

CASES, _ = corpus.load()
RESULTS: dict = {}
# Share of corpus calls compiled with backend="llvm" (the rest is refused with a
# TypingError and runs in the interpreter under backend="auto").
MIN_COMPILED = 0.72


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_corpus_llvm_agrees_with_interpreter(case):
    RESULTS[case.id] = [check_llvm(case.func, *args) for args in case.args]


def test_corpus_compiled_share():
    for c in CASES:
        if c.id not in RESULTS:
            RESULTS[c.id] = [check_llvm(c.func, *args) for args in c.args]
    outcomes = [r for rs in RESULTS.values() for r in rs]
    share = outcomes.count("ok") / len(outcomes)
    assert share >= MIN_COMPILED, f"only {share:.0%} of corpus calls compiled"


# The adjoint suite's functions that must compile (recursion, closures, keywords,
# mutation, loops with breaks) and agree with the interpreter.
SUITE = [
    (ex.pow, (2.0, 3)), (ex.pow, (2.0, 0)), (ex.leaky_relu, (2.0,)), (ex.leaky_relu, (-2.0,)),
    (T.classic, (2.0, 5.0)), (T.swaps, (0.7, 1.3, 5)), (T.rotate, (1.0, 2.0, 3.0, 4)),
    (T.deep, (0.3, 500)), (T.is_even, (1.2, 7)), (T.is_even, (1.2, 6)),
    (T.nested_loops, (1.1, 4, 3)), (T.nested_loops, (2.5, 3, 6)), (T.outer, (3.0, 4.0)),
    (T.calls_keywords, (1.0,)), (T.mutate, (np.array([1.0, 2.0, 3.0]), 2.0)),
    (T.uses_special, (2.0,)), (T.higher_order, (0.5,)),
]


@pytest.mark.parametrize("f,args", SUITE, ids=lambda v: getattr(v, "__name__", ""))
def test_adjoint_suite_compiles_and_agrees(f, args):
    assert check_llvm(f, *args) == "ok"


def test_classic_reverse_trace_compiled():
    g = adjoint.gradient(T.classic, 2.0, 5.0, backend="llvm")
    assert g[0] == pytest.approx(5.5, rel=1e-12)
    assert g[1] == pytest.approx(1.7163378145367738, rel=1e-12)


def test_recursion_500_deep_is_native_and_exact():
    g_llvm = adjoint.gradient(T.deep, 0.3, 500, backend="llvm")
    g_interp = adjoint.gradient(T.deep, 0.3, 500, backend="interp")
    assert g_llvm[1] is None and close(g_llvm, g_interp)


def test_deep_recursion_raises_recursion_error():
    with pytest.raises(RecursionError):
        adjoint.pullback(T.deep, 0.3, 100_000, backend="llvm")


def test_jacobian_and_back_many_times():
    _, back = adjoint.pullback(T.swaps, 0.7, 1.3, 4, backend="llvm")
    first = back(1.0)
    for _ in range(3):
        assert back(1.0) == first
    assert close(back(2.0), tuple(2 * g if g is not None else None for g in first))
    jac = adjoint.jacobian(T.classic, 2.0, 5.0, backend="llvm")
    assert close(jac, adjoint.jacobian(T.classic, 2.0, 5.0, backend="interp"))


def _block_words(back) -> int:
    return ctypes.c_int64.from_address(back.env.blk + 8).value


def test_tape_is_released_with_back():
    _, back = adjoint.pullback(ex.pow, 1.5, 50, backend="llvm")
    env = weakref.ref(back.env)
    assert back(1.0)[0] == pytest.approx(50 * 1.5 ** 49, rel=1e-12)
    del back
    gc.collect()
    assert env() is None


def test_loop_tape_uses_16_bytes_per_iteration():
    """pow's loop records its edge and r per iteration: two 8-byte slots."""
    n = 10_000
    _, back = adjoint.pullback(ex.pow, 1.0001, n, backend="llvm")
    assert _block_words(back) * 8 <= 16 * n


def test_array_cotangents_and_inputs_untouched():
    a = np.array([1.0, 2.0, 3.0])
    ga, gx = adjoint.gradient(T.mutate, a, 2.0, backend="llvm")
    np.testing.assert_allclose(ga, [8.0, 0.0, 6.0], rtol=1e-12)
    assert gx == pytest.approx(8.0, rel=1e-12)
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])


def test_errors_match_cpython():
    def divide(x, k):
        return x / k

    def read(a, i):
        return a[i] * 2.0
    with pytest.raises(ZeroDivisionError):
        adjoint.pullback(divide, 1.0, 0, backend="llvm")
    with pytest.raises(IndexError):
        adjoint.pullback(read, np.ones(3), 5, backend="llvm")
    with pytest.raises(ValueError):
        adjoint.pullback(math.sqrt.__class__ and (lambda x: math.sqrt(x)), -1.0,
                         backend="llvm")


def test_int64_overflow_runs_in_the_interpreter():
    def big(x, n):
        k = 1
        for _ in range(n):
            k = k * 3
        return x * k
    y, back = adjoint.pullback(big, 1.0, 50, backend="llvm")
    assert y == 3.0 ** 50 and back(1.0)[0] == float(3 ** 50)


def list_literal(x):
    v = [x, 2.0]
    v[1] = x * 3.0        # writing into a list is not compiled
    return v[0] * v[1]


def test_llvm_refusal_names_value_primitive_and_line():
    with pytest.raises(jit.TypingError, match=r"setitem\(.*list_literal at .*"
                                              r"test_jit_grad\.py:\d+"):
        adjoint.pullback(list_literal, 1.0, backend="llvm")


def test_auto_falls_back_with_one_warning():
    def refused(x):
        v = [x, 3.0]
        v[0] = x + 0.0
        return v[0] * v[1]
    with pytest.warns(JitFallbackWarning, match="interpreter.*cannot compile"):
        assert adjoint.gradient(refused, 1.0) == (3.0,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert adjoint.gradient(refused, 2.0) == (3.0,)


def test_string_labels_chosen_by_branches():
    def labelled(x):
        kind = "pos" if x > 0 else "neg"
        return (x * 2.0 if kind == "pos" else -x), kind
    y, back = adjoint.pullback(labelled, 1.5, backend="llvm")
    assert y == (3.0, "pos") and back((1.0, None)) == (2.0,)
    assert adjoint.pullback(labelled, -1.5, backend="llvm")[0] == (1.5, "neg")


def test_whole_array_operations_and_numpy_sum():
    def f(a, b):
        return np.sum(np.sin(a) * b + a / 4.0) + np.dot(a, b) - np.mean(a ** 2)
    rng = np.random.default_rng(3)
    for n in (3, 9, 200):
        a, b = rng.normal(size=n), rng.normal(size=n)
        y, back = adjoint.pullback(f, a, b, backend="llvm")
        yi, backi = adjoint.pullback(f, a, b, backend="interp")
        # np.dot is a plain loop in compiled code (BLAS may associate differently)
        assert close(y, yi) and close(back(0.5), backi(0.5))
    x = rng.normal(size=1000)
    assert jit.jit(lambda v: np.sum(v))(x) == np.sum(x)  # numpy's pairwise summation


def test_fast_path_matches_general_path():
    def f(x, n):
        return x ** 3 + n
    _, back = adjoint.pullback(f, 1.5, 2, backend="llvm")
    assert type(back).__name__ == "Back"  # the compiled shortcut
    assert back(1.0) == (3 * 1.5 ** 2, None)
    assert back(np.float64(2.0)) == (2 * 3 * 1.5 ** 2, None)  # general path for dy
    big = adjoint.pullback(f, 1.5, 2 ** 70, backend="llvm")  # beyond int64: general
    assert big[0] == 1.5 ** 3 + 2 ** 70


def test_code_typed_shows_pop_types_of_the_adjoint():
    from adjoint.transform import activity_of, arg_types, lower_function, transform
    from jit.pullback.backend import BACKEND
    jf = transform(lower_function(ex.pow), activity_of((2.0, 3)), arg_types((2.0, 3)))
    code = BACKEND.code_for(jf, (2.0, 3))
    text = str(code.adjoint_for_type(jit.FLOAT64).typing.ir)
    assert "pop(%1)::float64" in text


def test_listings_of_forward_and_adjoint():
    typed = str(jit.code_typed(ex.pow, 2.0, 3, stage="pullback"))
    assert "pow_forward" in typed and "pow_adjoint" in typed and "push(" in typed
    assert "pop(%1)::float64" in str(jit.code_typed(ex.pow, 2.0, 3, stage="adjoint"))
    assert "define" in str(jit.code_llvm(ex.pow, 2.0, 3, stage="forward"))
    assert "zy_adj_" in str(jit.code_native(ex.pow, 2.0, 3, stage="adjoint"))
    with pytest.raises(ValueError, match="unknown stage"):
        jit.code_llvm(ex.pow, 2.0, 3, stage="reverse")
