"""try/except/else/finally, with blocks, raise and del: the IR they lower to, its
text and verifier, the interpreter's unwinding, gradients through handlers and
context managers (checked against central differences), and the JIT's refusal.
CPython agreement on values and exceptions is checked for every function of
`tests/corpus/exceptions.py` by the corpus tests."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from test_index_gradients import central

import jit
import ssair
from adjoint import gradient, pullback
from jit.pullback.backend import JitFallbackWarning
from jit.types import TypingError
from lowering import lower

# (functions of this module use no `assert`: pytest would rewrite it)


def quiet_gradient(f, *args, backend="auto"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JitFallbackWarning)
        return gradient(f, *args, backend=backend)


def fd(f, x, *rest, h=1e-6):
    """Central differences; a number stays a Python float (numpy's floats would
    turn a ZeroDivisionError into inf, another path)."""
    if np.ndim(x):
        return central(f, [x, *rest], 0)
    return (f(x + h, *rest) - f(x - h, *rest)) / (2 * h)


# -- the IR --------------------------------------------------------------------------
def reciprocal_or_zero(x):
    try:
        y = 1.0 / x
    except ZeroDivisionError:
        y = 0.0
    return y


def test_try_lowers_to_protected_blocks_and_a_handler_that_round_trips():
    ir = lower(reciprocal_or_zero)
    text = str(ir)
    assert "unwind #" in text and "caught()" in text and "raise " in text
    assert str(ssair.parse(text)) == text
    ssair.verify(ir)
    assert ssair.interpret(ir, 4.0) == 0.25 and ssair.interpret(ir, 0.0) == 0.0


UNWIND_IR = """function f(%1 x)
1 ─      goto #2 unwind #3
2 ─ %2 = truediv(1.0, %1)
└──      return %2
3 ─ %3 = caught()
└──      raise %3"""


def test_unwind_text_runs_in_the_interpreter():
    ir = ssair.parse(UNWIND_IR)
    ssair.verify(ir)
    assert ssair.interpret(ir, 2.0) == 0.5
    with pytest.raises(ZeroDivisionError):
        ssair.interpret(ir, 0.0)


@pytest.mark.parametrize("text, message", [
    (UNWIND_IR.replace("3 ─ %3 = caught()", "3 ─ %3 = copy(%1)"), "starts with its one `caught()`"),
    (UNWIND_IR.replace("1 ─      goto #2 unwind #3", "1 ─      goto #2 unwind #2"),
     "its own handler"),
    ("""function f(%1 x)
1 ─ %2 = caught()
└──      return %2""", "`caught()` outside a handler block"),
])
def test_verifier_checks_exception_edges(text, message):
    with pytest.raises(ssair.VerifyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ssair.verify(ssair.parse(text))


def test_simplifycfg_keeps_a_protected_statement_protected():
    from ssair.passes import optimize
    ir = optimize(lower(reciprocal_or_zero))
    ssair.verify(ir)
    assert "unwind" in str(ir)
    assert ssair.interpret(ir, 0.0) == 0.0 and ssair.interpret(ir, 2.0) == 0.5


# -- gradients -----------------------------------------------------------------------
def log_or_cube(x):
    try:
        return math.log(x) * x
    except ValueError:
        return x ** 3


@pytest.mark.parametrize("x", [2.0, -2.0])
def test_gradient_through_either_path_of_a_try(x):
    assert quiet_gradient(log_or_cube, x)[0] == pytest.approx(fd(log_or_cube, x), rel=1e-7)


def partial_then_raise(x, n):
    s = x
    for i in range(n):
        s = s * x
        if i == 2:
            s = s / (x - x)
    return s


def caller_of_a_callee_that_raises_midway(x, n):
    t = 0.0
    for _ in range(2):
        t = t * x + 1.0
    try:
        y = partial_then_raise(x, n)
    except ZeroDivisionError:
        y = t * math.sin(x)
    return y * t


@pytest.mark.parametrize("n", [2, 5])
def test_a_callee_that_raises_after_pushing_leaves_the_tape_as_it_was(n):
    # was a silent wrong gradient: the callee's pushes stayed on the tape
    f = caller_of_a_callee_that_raises_midway
    assert quiet_gradient(f, 1.3, n)[0] == pytest.approx(fd(f, 1.3, n), rel=1e-7)


def handler_sees_the_value_before_the_raise(x):
    y = x * x
    try:
        y = y * 3.0
        y = y / (x - 1.0)
    except ZeroDivisionError:
        y = y + x
    return y


def test_gradient_of_the_value_a_handler_sees():
    f = handler_sees_the_value_before_the_raise
    assert quiet_gradient(f, 2.5)[0] == pytest.approx(fd(f, 2.5), rel=1e-7)
    # at x = 1 the handler returns 3 x^2 + x (differences would step off the point)
    assert quiet_gradient(f, 1.0)[0] == 7.0


class Scale:
    def __init__(self, k):
        self.k = k
        self.exits = []

    def __enter__(self):
        return self.k

    def __exit__(self, kind, value, tb):
        self.exits.append(kind)
        return kind is not None and issubclass(kind, ZeroDivisionError)


def with_a_context_manager(x, cm):
    y = x
    with cm as k:
        y = k * x * x
        y = y / (x - 2.0)
    return y


@pytest.mark.parametrize("x", [1.5, 2.0])
def test_gradient_through_a_with_block_whose_exit_may_suppress(x):
    cm = Scale(3.0)
    g = quiet_gradient(with_a_context_manager, x, cm)[0]
    if x == 2.0:    # suppressed: y = 3 x^2 (differences would step off the point)
        assert g == 12.0
    else:
        assert g == pytest.approx(fd(with_a_context_manager, x, Scale(3.0)), rel=1e-7)
    assert cm.exits == [None if x != 2.0 else ZeroDivisionError]


def masked_log(a):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(a > 0, np.log(np.abs(a) + 1.0), 0.0)
    return np.sum(r * a)


def test_gradient_inside_numpy_errstate():
    a = np.array([1.0, -2.0, 3.0])
    g = quiet_gradient(masked_log, a)[0]
    assert g == pytest.approx(fd(masked_log, a), rel=1e-7)
    assert g[1] == 0.0


def checked_sqrt(x):
    if x < 0:
        raise ValueError("x must be non-negative")
    if not x < 1e6:     # (pytest rewrites an `assert` here; the corpus has them)
        raise OverflowError("x too large")
    return math.sqrt(x)


def test_raise_and_assert_are_differentiated_on_the_path_that_returns():
    assert quiet_gradient(checked_sqrt, 4.0)[0] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="non-negative"):
        quiet_gradient(checked_sqrt, -1.0)
    with pytest.raises(OverflowError, match="too large"):
        quiet_gradient(checked_sqrt, 1e7)


def swallow_everything(x):
    try:
        y = np.sinc(x)
    except Exception:
        y = 0.0
    return y * x


def test_a_users_except_never_catches_a_missing_derivative_rule():
    # catching it would silently differentiate another program
    with pytest.raises(TypeError, match="no derivative rule for callee numpy.sinc"):
        quiet_gradient(swallow_everything, 1.5)


def test_back_twice_through_a_handler_gives_the_same_gradient():
    y, back = pullback(caller_of_a_callee_that_raises_midway, 1.3, 5, backend="interp")
    assert back(1.0) == back(1.0)


# -- the JIT compiles raise and try (tests/test_jit_python_forms.py) ------------------
def test_the_jit_compiles_raise_and_try():
    assert gradient(reciprocal_or_zero, 2.0, backend="llvm") == (-0.25,)
    assert jit.jit(checked_sqrt)(4.0) == 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        assert gradient(reciprocal_or_zero, 2.0) == (-0.25,)


def doubled(x):
    return x * 2.0


def in_place_update_inside_try(x, d):
    y = doubled(x)        # of a kind only known at run time: the update is split
    try:
        y += 1.0 / d
        z = y * 3.0
    except ZeroDivisionError:
        z = y * 5.0
    return z


@pytest.mark.parametrize("d, expected", [(2.0, (6.0, -0.75)), (0.0, (10.0, 0.0))])
def test_an_in_place_update_split_by_kind_stays_protected(d, expected):
    assert quiet_gradient(in_place_update_inside_try, 1.5, d) == expected


def log_ratio_guarded(x):
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            y = np.log(x) / x
            if x > 5:
                raise ValueError("big")
    except ValueError:
        y = -1.0
    return y


def reciprocal_raising(x):
    with np.errstate(divide="raise"):
        return 1.0 / x


def test_an_errstate_block_that_only_silences_numpy_compiles():
    # lowered as its body (`lowering.errstate_blocks`): a raise inside reaches the
    # `except` around the `with`; compiled, with no fallback
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x in (0.0, 2.0, 7.0):
            assert jit.jit(log_ratio_guarded)(x) == log_ratio_guarded(x)
        with warnings.catch_warnings():
            warnings.simplefilter("error", JitFallbackWarning)
            g = gradient(masked_log, np.array([1.0, -2.0, 3.0]), backend="llvm")[0]
    assert g == pytest.approx(fd(masked_log, np.array([1.0, -2.0, 3.0])), rel=1e-7)
    assert all(getattr(b.term, "unwind", None) is None for b in lower(masked_log).blocks)


def test_an_errstate_block_that_asks_numpy_to_raise_is_kept():
    with pytest.raises(TypingError, match="has a with block"):
        jit.jit(reciprocal_raising)(2.0)
