"""Edge cases of the user API found by probing it as a user would."""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import adjoint


def appends(x):
    acc = []
    for i in range(3):
        acc.append(x * i)
    return acc[0] + acc[1] + acc[2]


def appends_to_its_argument(acc, x):
    acc.append(x * 2.0)
    return acc[0] + acc[-1]


def test_append_to_a_local_list_is_differentiated():
    assert adjoint.gradient(appends, 2.0, backend="interp") == (3.0,)


def test_method_storing_a_differentiable_value_is_refused_not_zero():
    """`acc.append(x)` into a list the caller also sees has no rule: the gradient
    must not silently be 0."""
    with pytest.raises(TypeError, match="list.append"):
        adjoint.gradient(appends_to_its_argument, [1.0], 2.0, backend="interp")


def test_method_on_non_differentiable_values_still_runs():
    def f(x, n):
        idx = []
        for i in range(n):
            idx.append(i)
        return x * len(idx)
    assert adjoint.gradient(f, 2.0, 4, backend="interp") == (4.0, None)


def test_llvm_backend_needs_no_explicit_jit_import():
    code = ("import adjoint\n"
            "def f(x):\n    return x * x\n"
            "y, back = adjoint.pullback(f, 3.0, backend='llvm')\n"
            "assert back(1.0) == (6.0,)\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_write_through_a_view_is_refused_not_wrong():
    import numpy as np

    def row_write(m, i):
        row = m[i]
        row[0] = 42.0
        return m[i, 0] * m[0, 1]
    with pytest.raises(TypeError, match="view of an array"):
        adjoint.gradient(row_write, np.ones((2, 3)), 1, backend="interp")


def test_write_into_a_fresh_array_still_works():
    import numpy as np

    def fill(x):
        out = np.zeros(3)
        for i in range(3):
            out[i] = x * i
        return out[2] + out[1]
    assert adjoint.gradient(fill, 2.0, backend="interp") == (3.0,)


def _sum_of_squares(ys):
    return np.sum(ys * ys)


def _writes_after_the_call(ys):
    a = _sum_of_squares(ys)
    ys[0] = 10.0          # the callee's pullback must still see ys[0] == 1
    return a + ys[1]


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_caller_writing_after_a_call_keeps_the_callees_values(backend):
    ys = np.array([1.0, 2.0, 3.0])
    (g,) = adjoint.gradient(_writes_after_the_call, ys, backend=backend)
    assert np.array_equal(g, [2.0, 5.0, 6.0])   # d/dys of sum(ys**2) + ys[1]
    assert np.array_equal(ys, [1.0, 2.0, 3.0])  # the input is not modified


def test_abs_slope_at_nan_is_nan_for_numbers_and_arrays_in_both_executors():
    """abs, np.abs and math.fabs share one derivative rule: the slope at NaN is NaN
    (np.sign(nan)), for a number as for an array element, interpreted or compiled.
    The functions are captured by the lambdas (a closure over a function value)."""
    for backend in ("interp", "llvm"):
        for f in (abs, np.abs, math.fabs):
            g = adjoint.gradient(lambda x: f(x), float("nan"), backend=backend)[0]
            assert g != g
            assert adjoint.gradient(lambda x: f(x), -2.0, backend=backend)[0] == -1.0
        ga = adjoint.gradient(lambda a: np.sum(np.abs(a)), np.array([np.nan, -1.0, 0.0]),
                              backend=backend)[0]
        assert np.isnan(ga[0]) and list(ga[1:]) == [-1.0, 0.0]


def _stencil(u, nu, steps):
    for _ in range(steps):
        u = u + nu * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
    return np.sum(u * u)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_an_argument_entering_a_loop_is_copied_once(backend):
    """The array argument a loop variable starts as is copied once on the loop's entry
    edge, not at every read of the loop variable in every iteration; a caller writing
    into it after `pullback` still leaves `back` unchanged."""
    from adjoint.passes.inplace import arg_types
    from adjoint.transform import activity_of, lower_function, transform
    u = np.linspace(-1.0, 1.0, 8)
    args = (u, 0.2, 3)
    jf = transform(lower_function(_stencil), activity_of(args), arg_types(args))
    copies = [s for b in jf.forward.blocks for s in b.stmts if s.op == "snapshot"]
    assert len(copies) == 1 and copies[0].args[0] == jf.forward.args[1].var
    _, back = adjoint.pullback(_stencil, *args, backend=backend)
    g = back(1.0)[0]
    u[:] = 7.0
    assert np.array_equal(back(1.0)[0], g)
    d = np.sin(np.arange(8.0))
    u0 = np.linspace(-1.0, 1.0, 8)
    fd = (_stencil(u0 + 1e-6 * d, 0.2, 3) - _stencil(u0 - 1e-6 * d, 0.2, 3)) / 2e-6
    assert abs(g @ d - fd) < 1e-6 * max(1.0, abs(fd))


def _scaled(u):
    return np.sum(2.0 * u * 3.0 + u * u)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_a_product_with_a_constant_does_not_compute_the_constants_cotangent(backend):
    """`2.0 * u` and `v * 3.0` use the variants of the product's rule for an operand
    without a cotangent (no reduction of dy * u to a number thrown away); `u * u`
    keeps the rule itself, and so does the repetition of a tuple."""
    from adjoint.passes.inplace import arg_types
    from adjoint.transform import activity_of, lower_function, transform
    u = np.array([0.5, -1.0, 2.0])
    jf = transform(lower_function(_scaled), activity_of((u,)), arg_types((u,)))
    called = [getattr(s.args[0].value, "__name__", None) for b in jf.adjoint.blocks
              for s in b.stmts if s.op == "call"]
    assert called.count("d_mul_right") == 1 and called.count("d_mul_left") == 1
    assert called.count("d_mul") == 1
    (g,) = adjoint.gradient(_scaled, u, backend=backend)
    assert np.allclose(g, 6.0 + 2.0 * u)
    assert adjoint.gradient(lambda t: sum(t * 2), (1.0, 3.0), backend="interp") == ((2.0, 2.0),)


def _shifted(u, t):
    return np.sum((1.0 + u) * (u - 2.0) + (3.0 - u) * (t + u) - (t - 0.5) * u)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_a_sum_with_a_constant_does_not_compute_the_constants_cotangent(backend):
    """`1.0 + u`, `u - 2.0`, `3.0 - u` and `t - 0.5` use the variants of add's and sub's
    rules for an operand without a cotangent; `t + u` and the sums of products keep
    the rules themselves."""
    from adjoint.passes.inplace import arg_types
    from adjoint.transform import activity_of, lower_function, transform
    u, t = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -3.0])
    jf = transform(lower_function(_shifted), activity_of((u, t)), arg_types((u, t)))
    called = [getattr(s.args[0].value, "__name__", None) for b in jf.adjoint.blocks
              for s in b.stmts if s.op == "call"]
    assert called.count("d_add_right") == 1 and called.count("d_sub_left") == 2
    assert called.count("d_sub_right") == 1 and called.count("d_add") == 2
    assert called.count("d_sub") == 1
    gu, gt = adjoint.gradient(_shifted, u, t, backend=backend)
    assert np.allclose(gu, (u - 2.0) + (1.0 + u) - (t + u) + (3.0 - u) - (t - 0.5))
    assert np.allclose(gt, (3.0 - u) - u)
