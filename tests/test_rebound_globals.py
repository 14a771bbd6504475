"""Globals the program rebinds (`global n; n += 1`): read and written when they run, as
CPython does, in the interpreter and in compiled code (lowering.runtime.GlobalRef,
jit.library.live_globals)."""
import warnings

import numpy as np
import pytest

import jit
import lowering
from adjoint import gradient, jvp, value_and_grad
from jit.pullback.backend import JitFallbackWarning
from lowering import guards

BACKENDS = ("interp", "llvm")

calls = 0
SCALE = 1.0
log: list = []
STATE = 0


def counted_loss(x):
    global calls
    calls += 1
    y = np.sum(x ** 2) * SCALE
    log.append(float(y))
    return y


def double_scale():
    global SCALE
    SCALE = SCALE * 2.0


def bump_scale_midway():
    global SCALE
    SCALE = 5.0
    return 0.0


def reads_before_and_after(x):
    a = x * SCALE
    bump_scale_midway()
    return a + x * SCALE


def remembers(x):
    global STATE
    STATE = STATE + 1
    return x * STATE


def reads_unbound(x):
    return x * NEVER_BOUND          # noqa: F821  (bound by `binds_it` only)


def binds_it():
    global NEVER_BOUND
    NEVER_BOUND = 2.0


def strict(f, *args, backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        return gradient(f, *args, backend=backend)


def test_a_rebound_global_is_read_when_it_runs_in_the_ir():
    text = str(lowering.lower(counted_loss))
    assert "read_global" in text and "write_global" in text


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_counter_in_the_loss_counts_each_call_once(backend):
    global calls, SCALE
    calls, SCALE = 0, 1.0
    log.clear()
    x = np.array([1.0, -2.0, 0.5])
    for k in range(3):
        g, = strict(counted_loss, x, backend=backend)
        np.testing.assert_allclose(g, 2 * x)
    assert calls == 3 and log == [5.25] * 3
    assert guards.fresh(counted_loss)      # the counter did not invalidate compiled code


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_global_rebound_between_calls_is_followed(backend):
    global SCALE
    SCALE = 1.0
    x = np.array([1.0, 3.0])
    v1, g1 = value_and_grad(counted_loss, x, backend=backend)
    double_scale()
    v2, g2 = value_and_grad(counted_loss, x, backend=backend)
    assert v2 == 2 * v1 == 20.0
    np.testing.assert_allclose(g2[0], 2 * g1[0])
    SCALE = 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_global_rebound_by_a_callee_midway_is_read_anew(backend):
    # CPython: d/dx (x * 1 + x * 5) = 6
    global SCALE
    SCALE = 1.0
    assert strict(reads_before_and_after, 2.0, backend=backend) == (6.0,)
    SCALE = 1.0
    assert reads_before_and_after(2.0) == 12.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_state_kept_across_calls(backend):
    global STATE
    STATE = 0
    assert [strict(remembers, 1.5, backend=backend)[0] for _ in range(3)] == [1.0, 2.0, 3.0]


def test_a_global_that_changes_type_leaves_compiled_code_and_stays_right():
    global STATE
    STATE = 0
    assert gradient(remembers, 1.0) == (1.0,)
    STATE = 0.5                      # a float where compiled code read an int
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradient(remembers, 1.0) == (1.5,)
    STATE = 0


def test_an_unbound_rebound_global_raises_name_error_as_cpython_does():
    globals().pop("NEVER_BOUND", None)
    with pytest.raises(jit.TypingError, match="'NEVER_BOUND', which the program rebinds, "
                       "is not bound when the function is compiled"):
        gradient(reads_unbound, 1.0, backend="llvm")
    for backend in ("interp", "auto"):
        with pytest.raises(NameError, match="NEVER_BOUND"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                gradient(reads_unbound, 1.0, backend=backend)
    binds_it()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradient(reads_unbound, 1.0) == (2.0,)
    globals().pop("NEVER_BOUND", None)


def test_jit_and_forward_mode_keep_the_counter():
    global calls, SCALE
    calls, SCALE = 0, 1.0
    x = np.array([1.0, 2.0])
    assert jit.jit(counted_loss)(x) == 5.0
    y, t = jvp(counted_loss, (x,), (np.array([1.0, 0.0]),))
    assert y == 5.0 and t == pytest.approx(2.0)
    assert calls == 2
