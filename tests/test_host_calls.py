"""Calls from compiled code into numpy and Python (`jit.runtime.host_calls`): numpy
functions the JIT has no loop for, derivative rules whose Python it does not compile,
`%` of arrays, and `print`.  Each program is compiled (`check_llvm` returns "ok" only
when backend="llvm" compiled it and agrees with the interpreter in value and
gradients), and the interpreter's gradient matches central differences."""
from __future__ import annotations

import numpy as np
import pytest

import jit
from adjoint import pullback
from tests.adjoint_check import check_gradient
from tests.jit_grad_check import check_llvm

RNG = np.random.default_rng(5)
A = RNG.normal(size=(3, 4))
B = RNG.normal(size=(4, 3))
V = RNG.normal(size=4)
W = RNG.normal(size=3)


def joined(a, b, v):
    c = np.concatenate((a, b.T), axis=0)
    s = np.stack([v, 2.0 * v])
    h = np.hstack((v, v[::2]))
    t = np.vstack([a, v])
    k = np.column_stack((v, v * v))
    return np.sum(c * c) + np.sum(s ** 3) + np.sum(np.sin(h)) + np.sum(t * t) + np.sum(k)


def split_rolled(a, v):
    p, q = np.split(a, 2, axis=1)
    first, rest = np.array_split(v, [1])
    return (np.sum(p * np.roll(q, 1, axis=0)) + np.sum(np.flip(rest) * rest[0]) + first[0]
            + np.sum(np.tile(v, 2) * np.repeat(v, 2)) + np.sum(np.pad(a, 1) ** 2))


def statistics(a, v):
    return (np.var(a, axis=0) @ np.var(a, axis=0) + np.sum(np.std(a, axis=1, keepdims=True))
            + a.var() + np.sum(np.cumprod(v)) + np.sum(np.diff(v) ** 2)
            + np.sum(np.sort(v) * np.arange(4.0)) + np.prod(2.0))


def elementwise(a, v, w):
    return (np.sum(np.remainder(a, 0.9)) + np.sum(np.logaddexp(a, v)) + np.sum(a % 1.3)
            + np.sum(np.fmax(a, 0.1) * np.fmin(v, 0.2)) + np.sum(np.maximum(a, 0.5 * v))
            + np.sum(np.logaddexp2(v, 1.0)))


def contractions(a, b, v, w):
    e = np.einsum("ij,jk->ik", a, b)
    return (np.sum(e * e) + np.sum(np.tensordot(a, b, [(1,), (0,)])) + np.inner(v, v)
            + np.sum(np.kron(w, v)) + np.trace(a @ b) + np.sum(np.diag(v) @ b)
            + np.sum(np.tril(b) - 2.0 * np.triu(b, 1)) + np.einsum("i,i->", w, w)
            + np.sum(np.transpose(a, [1, 0]) * b) + np.sum(np.dot(v[0], 2.0)))


def built(v):
    lin = np.linspace(0.0, 1.0, v.shape[0])
    return (np.sum(v * lin) + np.sum(np.full((2, 4), 3.0) * v) + np.sum(np.eye(4) @ v)
            + np.sum(np.ones_like(v) * v) + np.sum(np.atleast_2d(v) * v))


CASES = [(joined, (A, B, V)), (split_rolled, (A, V)), (statistics, (A, V)),
         (elementwise, (A, V, W)), (contractions, (A, B, V, W)), (built, (V,))]


@pytest.mark.parametrize("f,args", CASES, ids=[f.__name__ for f, _ in CASES])
def test_compiled_and_differentiated(f, args):
    assert check_llvm(f, *args) == "ok"
    check_gradient(f, *args)


@pytest.mark.parametrize("f,args", [
    (joined, (A[:, ::-1], B[::2].repeat(2, axis=0), V[::-1])),      # strided operands
    (split_rolled, (np.asfortranarray(A), V)),
    (elementwise, (A, V[:1], W)),                                   # broadcast from (1,)
])
def test_strided_and_broadcast_operands(f, args):
    assert check_llvm(f, *args) == "ok"
    check_gradient(f, *args)


def empty_joined(a, v):
    return np.sum(np.concatenate((a, a)) ** 2) + np.sum(np.roll(v, 2)) + np.var(np.ones(3))


def test_zero_size_arrays():
    args = (np.zeros((0, 3)), np.zeros(0))
    assert check_llvm(empty_joined, *args) == "ok"
    y, back = pullback(empty_joined, *args, backend="llvm")
    ga, gv = back(1.0)
    assert y == empty_joined(*args) and ga.shape == (0, 3) and gv.shape == (0,)


def rule_in_python(a, b):
    return np.sum(np.concatenate([a, b]) ** 2)


def test_derivative_rule_called_from_the_compiled_adjoint():
    a, b = RNG.normal(size=3), RNG.normal(size=2)
    y, back = pullback(rule_in_python, a, b, backend="llvm")
    ga, gb = back(1.0)
    np.testing.assert_allclose(ga, 2 * a)
    np.testing.assert_allclose(gb, 2 * b)


def mismatched(a, b):
    return np.sum(np.concatenate((a, b), axis=1))


def test_numpy_error_is_the_one_cpython_raises():
    a, b = np.ones((2, 2)), np.ones((3, 2))
    with pytest.raises(ValueError) as expected:
        mismatched(a, b)
    with pytest.raises(ValueError) as got:
        jit.jit(mismatched)(a, b)
    assert str(got.value) == str(expected.value)
    with pytest.raises(ValueError):
        pullback(mismatched, a, b, backend="llvm")


def printing(x, v):
    print("x =", x, "v:", v, sep="|", end=";\n")
    print(x * 2, (1, 2.5), "done")
    return x * np.sum(v)


def test_print_from_compiled_code(capsys):
    v = np.array([1.0, 2.5])
    printing(1.5, v)
    want = capsys.readouterr().out
    assert jit.jit(printing)(1.5, v) == printing(1.5, v)
    got = capsys.readouterr().out
    assert got == want * 2 and want.startswith("x =|1.5|v:|[1.  2.5];\n3.0 (1, 2.5) done")
    y, back = pullback(printing, 1.5, v, backend="llvm")
    assert capsys.readouterr().out == want
    assert back(1.0)[0] == 3.5


def test_inputs_are_read_only_to_numpy():
    def sort_in_place(v):
        v.sort()
        return np.sum(v)
    v = np.array([3.0, 1.0, 2.0])
    try:
        jit.jit(sort_in_place)(v)
    except (jit.TypingError, ValueError):
        pass
    assert list(v) == [3.0, 1.0, 2.0]


def test_list_display_of_constants_is_an_argument():
    def f(x):
        return np.sum(np.transpose(x, [1, 0]) * np.arange(6.0).reshape(3, 2))
    assert check_llvm(f, A[:2, :3].copy()) == "ok"


def reparametrised(mu, log_sigma, rng):
    eps = rng.normal(size=(3,))
    z = mu + np.exp(log_sigma) * eps
    return np.sum(z * z) + rng.uniform() + np.sum(rng.standard_normal((2, 3)))


def test_random_draws_are_the_generators_own_stream():
    mu, ls = RNG.normal(size=3), RNG.normal(size=3)
    want = reparametrised(mu, ls, np.random.default_rng(8))
    assert jit.jit(reparametrised)(mu, ls, np.random.default_rng(8)) == want
    y, back = pullback(reparametrised, mu, ls, np.random.default_rng(8), backend="llvm")
    y2, back2 = pullback(reparametrised, mu, ls, np.random.default_rng(8), backend="interp")
    assert y == y2 == want
    for g, g2 in zip(back(1.0)[:2], back2(1.0)[:2]):
        np.testing.assert_allclose(g, g2, rtol=1e-13)

    def legacy(rs):
        return np.sum(rs.randn(2, 3)) + rs.randint(0, 10) + np.sum(rs.rand(4))
    assert jit.jit(legacy)(np.random.RandomState(1)) == legacy(np.random.RandomState(1))


def test_a_draw_with_differentiated_parameters_is_refused():
    def f(mu, rng):
        return rng.normal(mu, 1.0)
    with pytest.raises(TypeError, match="derivative"):
        pullback(f, 0.5, np.random.default_rng(0), backend="llvm")


def linear_algebra(a, b):
    sign, logdet = np.linalg.slogdet(a)
    return (logdet + np.sum(np.linalg.solve(a, b)) + np.linalg.det(a)
            + np.sum(np.linalg.inv(a)) + np.linalg.norm(b))


def test_linear_algebra_by_numpy():
    a = np.eye(3) * 2.0 + 0.1 * RNG.normal(size=(3, 3))
    b = RNG.normal(size=3)
    assert check_llvm(linear_algebra, a, b) == "ok"
    check_gradient(linear_algebra, a, b)


def diffusion(u, nu):
    for _ in range(5):
        u = u + nu * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
    return np.sum(u * u) + np.sum(np.roll(u, 7) * u) + np.sum(np.roll(u, -9, axis=0) * u)


def test_native_roll_of_a_line():
    u = RNG.normal(size=6)
    assert check_llvm(diffusion, u, 0.2) == "ok"
    assert check_llvm(diffusion, u[::-2], 0.2) == "ok"
    check_gradient(diffusion, u, 0.2)
    assert jit.jit(diffusion)(np.zeros(0), 0.2) == 0.0


# -- the escape hatch: a Python callable called for its effect ----------------------------

class _Recorder:
    def __init__(self) -> None:
        self.seen = []

    def log(self, *values, tag="") -> None:
        self.seen.append((tag,) + values)

    @property
    def count(self) -> int:
        raise AssertionError("a property is never read at compile time")


RECORDER = _Recorder()
HISTORY: list = []


def _logs_as_it_goes(x, steps):
    total = 0.0
    for k in range(steps):
        total = total + np.sum(x * x) * k
        RECORDER.log("step", k, total, tag="train")
        HISTORY.append(x * k)        # an array it keeps: a copy of compiled memory
    return total


def _uses_the_result(x):
    n = RECORDER.log(x)
    return x if n is None else x


def test_a_method_of_a_module_level_object_is_called_for_its_effect():
    x = np.array([1.0, -2.0, 0.5])
    RECORDER.seen.clear()
    HISTORY.clear()
    want = _logs_as_it_goes(x, 3)
    expected_log, expected_history = list(RECORDER.seen), [h.copy() for h in HISTORY]
    RECORDER.seen.clear()
    HISTORY.clear()
    assert jit.jit(_logs_as_it_goes)(x, 3) == want
    assert RECORDER.seen == expected_log
    assert len(HISTORY) == 3 and all(np.array_equal(a, b)
                                     for a, b in zip(HISTORY, expected_history))
    for backend in ("llvm", "interp"):
        RECORDER.seen.clear()
        y, back = pullback(_logs_as_it_goes, x, 3, backend=backend)
        assert y == want and RECORDER.seen == expected_log
        np.testing.assert_allclose(back(1.0)[0], 2 * x * 3, rtol=1e-15)
    check_gradient(_logs_as_it_goes, x, 2)


def test_a_used_result_of_such_a_call_is_refused_clearly():
    from jit.types import TypingError
    with pytest.raises(TypingError, match="only for its effect, and here its result is used"):
        jit.jit(_uses_the_result)(1.0)
