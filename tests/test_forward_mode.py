"""Forward mode (`adjoint.jvp`, `jacfwd`, `hvp`, `code_tangent`): the dot-product
identity against reverse mode over the corpus, central differences, closed forms,
the interpreter and the JIT agreeing, and clear errors."""
import copy
import math

import numpy as np
import pytest

import adjoint
import corpus
import ssair
from adjoint.forward import code_tangent, hvp, jacfwd, jvp, tangent_ir
from bench.forward_mode import euler, rosenbrock as rosen
from forward_check import _like, check_jvp

CASES, _ = corpus.load()

def _reverse_passes(func, args) -> bool:
    try:
        y, back = adjoint.pullback(func, *copy.deepcopy(args), backend="interp")
        back(_like(y, np.random.default_rng(0)))
        return True
    except Exception:  # noqa: BLE001 - only what reverse mode differentiates is compared
        return False


def _params():
    return [pytest.param(c.func, args, id=f"{c.id}-{k}")
            for c in CASES for k, args in enumerate(c.args)]


@pytest.mark.parametrize("func,args", _params())
def test_corpus_jvp_interp(func, args):
    if not _reverse_passes(func, args):
        pytest.skip("reverse mode does not differentiate this case")
    with np.errstate(all="ignore"):
        check_jvp(func, *args, backend="interp")


@pytest.mark.parametrize("func,args", _params())
def test_corpus_jvp_auto(func, args):
    """Compiled where the JIT compiles the tangent IR, else the interpreter."""
    if not _reverse_passes(func, args):
        pytest.skip("reverse mode does not differentiate this case")
    with np.errstate(all="ignore"):
        check_jvp(func, *args, backend="auto")


# -- functions with loops, branches, recursion and arrays, compiled --------------------
def loop_branch(x, n):
    s = 0.0
    for i in range(n):
        if x > 0.5:
            s = s + math.sin(x) * x
        else:
            s -= x ** 2 / 3
    return s


def power_rec(x, n):
    if n == 0:
        return 1.0
    return x * power_rec(x, n - 1)


def writes_fresh(x, w):
    y = x.sum() + x.T.dot(w) + np.dot(x, w)
    z = np.zeros(3)
    z[0] = y
    z[1] += x[0] * w[1]
    z[2] = z[1] * x[2]
    return np.sum(np.tanh(z)) * y + len(x)


def test_writes_through_a_view_against_differences():
    """`z[1:] += x[:2]`: the tangent of the view is the view of the tangent (reverse
    mode refuses this on some Pythons, so only central differences here)."""
    def f(x):
        z = np.zeros(3)
        z[1:] += x[:2] * x[2]
        return np.sum(z * z)
    x, t = np.array([0.3, -0.4, 1.5]), np.array([1.0, 2.0, -0.5])
    h = 1e-6
    fd = (f(x + h * t) - f(x - h * t)) / (2 * h)
    for backend in ("interp", "llvm"):
        assert jvp(f, (x,), (t,), backend=backend)[1] == pytest.approx(fd, rel=1e-7)


X3 = np.array([0.1, 0.2, 0.3])
W3 = np.array([1.0, 2.0, 3.0])
EXAMPLES = [
    (loop_branch, (0.7, 4)), (loop_branch, (0.2, 3)), (power_rec, (1.1, 6)),
    (writes_fresh, (X3, W3)), (euler, (np.array([0.5, 0.2, 0.1, 0.3]), np.linspace(0, 1, 6), 20)),
    (rosen, (np.linspace(-1, 1, 7),)),
]


@pytest.mark.parametrize("func,args", EXAMPLES, ids=[f.__name__ for f, _ in EXAMPLES])
@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_examples_against_reverse_mode(func, args, backend):
    check_jvp(func, *args, backend=backend)


@pytest.mark.parametrize("func,args", EXAMPLES, ids=[f.__name__ for f, _ in EXAMPLES])
def test_examples_against_differences(func, args):
    rng = np.random.default_rng(3)
    v = [_like(a, rng) for a in args]
    y, ydot = jvp(func, args, v, backend="llvm")
    h = 1e-6

    def at(s):
        return np.asarray(func(*[a if t is None else a + s * t for a, t in zip(args, v)]))
    fd = (at(h) - at(-h)) / (2 * h)
    np.testing.assert_allclose(ydot, fd, rtol=1e-5, atol=1e-7)


def test_interpreter_and_jit_agree_bit_for_bit():
    args = (np.array([0.5, 0.2, 0.1, 0.3]), np.linspace(0, 1, 6), 30)
    v = (np.array([1.0, -1.0, 0.5, 2.0]), np.ones(6), None)
    y1, t1 = jvp(euler, args, v, backend="interp")
    y2, t2 = jvp(euler, args, v, backend="llvm")
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_allclose(t1, t2, rtol=1e-14)


def test_closed_forms():
    assert jvp(power_rec, (1.5, 5), (1.0, None))[1] == pytest.approx(5 * 1.5 ** 4)
    y, t = jvp(lambda x: math.exp(math.sin(x)), (0.3,), (2.0,))
    assert t == pytest.approx(2.0 * math.cos(0.3) * math.exp(math.sin(0.3)))
    assert isinstance(t, float)


def test_inputs_are_not_modified():
    x, t = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 0.0])

    def scale_in_place(a):
        a *= 2.0
        a[0] = a[0] * a[1]
        return a.sum()
    for backend in ("interp", "auto"):
        x0, t0 = x.copy(), t.copy()
        _, dy = jvp(scale_in_place, (x,), (t,), backend=backend)
        np.testing.assert_array_equal(x, x0)
        np.testing.assert_array_equal(t, t0)
        assert dy == pytest.approx(8.0)


def test_jacfwd_matches_jacobian():
    args = (np.array([0.5, 0.2, 0.1, 0.3]), np.linspace(0, 1, 5), 10)
    for a, b in zip(jacfwd(euler, *args), adjoint.jacobian(euler, *args)):
        if a is None:
            assert b is None
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_hvp_of_rosenbrock():
    x = np.linspace(-1, 1, 6)
    v = np.random.default_rng(1).standard_normal(6)
    n = len(x)
    H = np.zeros((n, n))                      # the closed-form Hessian
    for i in range(n - 1):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i + 1, i + 1] += 200
        H[i, i + 1] -= 400 * x[i]
        H[i + 1, i] -= 400 * x[i]
    for backend in ("interp", "llvm"):
        np.testing.assert_allclose(hvp(rosen, x, v, backend=backend), H @ v, rtol=1e-12)


def test_hvp_with_constant_arguments():
    def f(x, a):
        return np.sum(a * x ** 3)
    x, a, v = np.array([1.0, 2.0]), np.array([3.0, 5.0]), np.array([1.0, 1.0])
    np.testing.assert_allclose(hvp(f, x, v, a), 6 * a * x * v)


def make_fit_loss(X, y):
    def loss(w):                      # a closure over the data, as a loss is usually made
        return np.sum((np.tanh(X @ w) - y) ** 2)
    return loss


def test_hvp_and_hessian_of_a_closure_compile():
    import warnings

    import jit
    rng = np.random.default_rng(4)
    X, y, w = rng.normal(size=(6, 3)), rng.normal(size=6), rng.normal(size=3)
    loss = make_fit_loss(X, y)
    v = np.array([1.0, -0.5, 0.25])
    H = adjoint.hessian(loss, w, backend="interp")
    for i in range(3):          # the Hessian's columns against central differences
        e = np.eye(3)[i] * 1e-6
        fd = (adjoint.gradient(loss, w + e)[0] - adjoint.gradient(loss, w - e)[0]) / 2e-6
        np.testing.assert_allclose(H[:, i], fd, rtol=1e-6, atol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", jit.JitFallbackWarning)
        np.testing.assert_allclose(hvp(loss, w, v, backend="llvm"), H @ v, rtol=1e-12)
        np.testing.assert_allclose(adjoint.hessian(loss, w, backend="llvm"), H, rtol=1e-12)


def test_code_tangent_prints_a_verified_round_tripping_listing():
    text = str(code_tangent(loop_branch, 0.7, 3))
    assert "function loop_branch_tangent(" in text and "dx" in text
    ir = tangent_ir(loop_branch, (True, False), ("float64", "int64"))
    ssair.verify(ir)
    assert "push" not in text and "pop" not in text          # forward mode has no tape


def test_bad_tangents_raise_clearly():
    with pytest.raises(ValueError, match="shape"):
        jvp(rosen, (np.ones(3),), (np.ones(4),))
    with pytest.raises(ValueError, match="primals"):
        jvp(rosen, (np.ones(3),), ())
    c = 2.0         # (a closure: its captured values held constant)
    assert hvp(lambda x: c * x * x, 1.0, 1.0) == 2 * c


# -- the objectives of autograd's example programs (bench.autograd_examples) ----------
AUTOGRAD_REFUSED: dict = {}     # example name -> why it is refused (none is, today)


def _autograd_cases():
    from bench.autograd_examples import CASES as EXAMPLES
    return [pytest.param(name, build, id=name, marks=[pytest.mark.xfail(
        reason=AUTOGRAD_REFUSED[name], strict=True)] if name in AUTOGRAD_REFUSED else [])
        for name, build in EXAMPLES.items()]


@pytest.mark.parametrize("name,build", _autograd_cases())
def test_autograd_example_objectives(name, build):
    """Each objective's jvp in its parameters against reverse mode, interpreted and
    compiled (all but the refused one compile: no interpreter fallback)."""
    f, args = build()
    with np.errstate(all="ignore"):
        check_jvp(f, *args, backend="interp")
        check_jvp(f, *args, backend="llvm")


def _numpy_programs():
    from bench.numpy_programs import WORKLOADS as PROGRAMS
    return [pytest.param(w, id=w.name) for w in PROGRAMS]


@pytest.mark.parametrize("w", _numpy_programs())
def test_numpy_programs(w):
    """The bench's numpy programs (an MLP with cross-entropy, regularised logistic
    regression, a diffusion step with np.roll): interpreted and compiled."""
    args = w.make_args()
    check_jvp(w.func, *args, backend="interp")
    check_jvp(w.func, *args, backend="llvm")
