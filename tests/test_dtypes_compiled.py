"""float32 / int32 arrays in compiled code (numpy's dtypes and NEP 50 promotion, gradients
in the argument's dtype) and complex numbers (JAX's convention, refused by the JIT)."""
import warnings

import numpy as np
import pytest

from adjoint import gradient
from jit import jit
from jit.types import TypingError

F32 = np.float32
RNG = np.random.default_rng(7)


def no_fallback():
    """A context in which a fallback to the interpreter is an error."""
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("error")
    return ctx


def compiled(fn, *args):
    ctx = no_fallback()
    try:
        return jit(fn)(*args)
    finally:
        ctx.__exit__(None, None, None)


def arith(x, y):
    return x * y + 2.0 * x - y / 3


def unary(x):
    return np.sin(x) * -x + np.exp(x) ** 2


def rowsum(X, w):
    return np.sum(np.tanh(X @ w))


def loop_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


def scaled_copy(x):
    out = np.empty(x.shape[0], np.float32)
    for i in range(x.shape[0]):
        out[i] = x[i] * 0.1
    return out


X32 = np.linspace(0.1, 1.3, 7, dtype=F32)
Y32 = (X32[::-1] * F32(0.7)).copy()


@pytest.mark.parametrize("fn, args", [
    (arith, (X32, Y32)),                                   # float32 op float32 -> float32
    (arith, (X32, Y32.astype(np.float64))),                # float32 op float64 -> float64
    (arith, (X32.astype(np.int32), Y32)),                  # int32 op float32 -> float64
    (arith, (X32.astype(np.int32), np.arange(7))),         # int32 op int64 -> float64 (/ 3)
    (unary, (X32,)),
    (rowsum, (np.ones((3, 7), F32), X32)),
    (rowsum, (np.ones((3, 7), F32), X32.astype(np.float64))),
    (scaled_copy, (X32,)),
    (lambda a, b: a + b * 2, (np.arange(5, dtype=np.int32), np.arange(5, dtype=np.int32))),
    (lambda a, b: a + b, (np.arange(5, dtype=np.int32), np.arange(5))),
    (lambda a: a * 2.5, (X32.reshape(1, 7),)),
])
def test_values_and_dtypes_follow_numpy(fn, args):
    got, want = compiled(fn, *args), fn(*args)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    tol = 1e-6 if np.asarray(want).dtype == np.float64 else 2e-6
    assert np.allclose(np.asarray(got, float), np.asarray(want, float), rtol=tol, atol=tol)


def test_float32_elementwise_results_are_bitwise_numpy():
    # + - * / rounded once from double are float32's own operations
    got = compiled(lambda x, y: (x * y - x) / (y + 1.5), X32, Y32)
    assert got.dtype == F32 and np.array_equal(got, (X32 * Y32 - X32) / (Y32 + 1.5))


def test_numpy_scalars_as_arguments_and_in_tuples():
    def f(x, t):
        return x * 3.0 + t[0]
    for args in ((F32(1.1), (F32(2.0),)), (1.1, (np.float64(2.0),)), (np.int32(7), (2,))):
        got, want = compiled(f, *args), f(*args)
        assert type(got) is type(want) or (type(want) is np.float64 and type(got) is float)
        assert got == want


def test_float32_scalar_loop_rounds_each_step():
    assert compiled(loop_sum, X32) == loop_sum(X32)    # every += rounded to float32


# -- gradients ------------------------------------------------------------------------
def mlp(W1, b1, W2, X, y):
    h = np.tanh(X @ W1 + b1)
    r = h @ W2 - y
    return np.sum(r * r) / y.shape[0]


def central(f, args, k, h=1e-6):
    """d f / d args[k] by central differences of f evaluated in float64."""
    wide = [np.asarray(a, np.float64) for a in args]
    g = np.zeros_like(wide[k])
    for i in np.ndindex(g.shape):
        up = [a.copy() for a in wide]
        dn = [a.copy() for a in wide]
        up[k][i] += h
        dn[k][i] -= h
        g[i] = (f(*up) - f(*dn)) / (2 * h)
    return g


def _mlp_args(dtype_w, dtype_x):
    W1 = RNG.standard_normal((3, 5)).astype(dtype_w) * 0.5
    b1 = RNG.standard_normal(5).astype(dtype_w) * 0.1
    W2 = RNG.standard_normal(5).astype(dtype_w)
    X = RNG.standard_normal((6, 3)).astype(dtype_x)
    y = RNG.standard_normal(6).astype(dtype_x)
    return W1, b1, W2, X, y


@pytest.mark.parametrize("backend", ["llvm", "interp"])
@pytest.mark.parametrize("dtype_w, dtype_x", [(F32, F32), (np.float64, F32)])
def test_mlp_gradient_in_the_weights_dtype(backend, dtype_w, dtype_x):
    args = _mlp_args(dtype_w, dtype_x)
    ctx = no_fallback()
    try:
        g = gradient(mlp, *args, backend=backend)
    finally:
        ctx.__exit__(None, None, None)
    tol = 2e-3 if dtype_w == F32 else 1e-6
    for k in range(3):
        assert g[k].dtype == np.dtype(dtype_w)
        assert np.allclose(g[k], central(mlp, args, k), rtol=tol, atol=tol)
    for k in (3, 4):                     # data: a gradient too, in its own dtype
        assert g[k].dtype == np.dtype(dtype_x)


@pytest.mark.parametrize("backend", ["llvm", "interp"])
def test_float32_sum_gradient(backend):
    x = np.ones(3, F32)
    ctx = no_fallback()
    try:
        g, = gradient(lambda x: np.sum(x * x), x, backend=backend)
    finally:
        ctx.__exit__(None, None, None)
    assert g.dtype == F32 and np.array_equal(g, np.full(3, 2, F32))


def test_default_backend_compiles_float32():
    ctx = no_fallback()
    try:
        g, = gradient(lambda x: np.sum(np.sin(x) * x), X32)
    finally:
        ctx.__exit__(None, None, None)
    assert g.dtype == F32
    assert np.allclose(g, np.cos(X32) * X32 + np.sin(X32), rtol=1e-5)


def _rows_loop(X):
    s = 0.0
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            s += X[i, j] * X[i, j] * (j + 1.0)
    return s


def _row_writes(X):
    Y = np.zeros_like(X)           # (float32 here; float64 for the central differences)
    for i in range(3):
        Y[i, :] = X[i] * (i + 1.0)
    return np.sum(Y * Y)


@pytest.mark.parametrize("fn", [
    _rows_loop, _row_writes,
    lambda X: np.sum(X[1:, ::2] ** 2) + X[0, 1] * X[2, 3],        # slices and elements
    lambda X: np.sum((X.T @ X) ** 2),                            # .T and a product
    lambda X: np.sum(np.tanh(X + X[0])) + np.sum(X * X[:, :1]),  # broadcasts
    lambda X: np.sum(np.log(np.sum(np.exp(X), axis=1))) + np.mean(X * X),
], ids=["loop", "row_writes", "slices", "transpose", "broadcast", "reductions"])
def test_float32_gradients_compiled(fn):
    X = ((np.arange(12, dtype=F32).reshape(3, 4) - 5) / F32(3))
    ctx = no_fallback()
    try:
        g, = gradient(fn, X, backend="llvm")
    finally:
        ctx.__exit__(None, None, None)
    assert g.dtype == F32
    assert np.allclose(g, central(fn, (X,), 0), rtol=2e-3, atol=2e-3)


def test_float32_number_argument_and_transforms():
    import adjoint
    assert repr(gradient(lambda x: x * x * 3.0, F32(1.5), backend="llvm")[0]) == \
        repr(F32(9.0))
    f = lambda x: np.sum(np.sin(x) * x)                     # noqa: E731
    J = adjoint.jacobian(lambda x: np.sin(x) * x, X32)[0]
    assert J.dtype == F32 and np.allclose(J, np.diag(np.cos(X32) * X32 + np.sin(X32)),
                                          rtol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = adjoint.vmap(adjoint.grad(f))(np.stack([X32, X32]))
    assert rows.dtype == F32 and np.allclose(rows[1], np.cos(X32) * X32 + np.sin(X32),
                                             rtol=1e-5)


def _lsq(w, X, y):
    r = X @ w - y
    return np.sum(r * r) / len(y)


def _train(w, X, y, steps, lr):
    for _ in range(steps):
        w = w - lr * gradient(_lsq, w, X, y)[0]
    return w


def test_float32_training_loop_with_nested_gradient():
    X = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.2], [0.3, 0.1, 1.0], [0.5, 0.5, 0.5]], F32)
    y = X @ np.array([1.0, -2.0, 0.5], F32)
    w = compiled(_train, np.zeros(3, F32), X, y, 200, 0.5)
    assert w.dtype == F32 and np.allclose(w, [1.0, -2.0, 0.5], atol=1e-5)
    g = compiled(lambda w: gradient(_lsq, w, X, y)[0], np.zeros(3, F32))
    assert g.dtype == F32
    assert np.allclose(g, gradient(_lsq, np.zeros(3, F32), X, y, backend="interp")[0],
                       rtol=1e-6)


# -- complex numbers ------------------------------------------------------------------
COMPLEX = {
    "abs(z*z)": (lambda z: abs(z * z), "abs(z*z)"),
    "z*conj(z)": (lambda z: (z * np.conj(z)).real, "real(z*conj(z))"),
    "exp(z).real": (lambda z: np.exp(z).real, "real(exp(z))"),
    "(z*z).imag": (lambda z: (z * z).imag, "imag(z*z)"),
    "abs(exp(z))": (lambda z: abs(np.exp(z)), "abs(exp(z))"),
    "sin(z).imag**2": (lambda z: np.sin(z).imag ** 2, "imag(sin(z))**2"),
}


def test_complex_refused_by_the_jit_clearly():
    """(First of the complex tests: the fallback warning is given once per reason.)"""
    def f(z):                            # (a function not yet warned about)
        return abs(z * z)
    with pytest.raises(TypingError, match="complex numbers are not compiled"):
        jit(f)(1 + 2j)
    with pytest.raises(TypingError, match="complex"):
        gradient(f, np.ones(2, complex), backend="llvm")
    with warnings.catch_warnings():     # (warned once per reason: maybe by an earlier test)
        warnings.simplefilter("ignore")
        g, = gradient(f, 1 + 2j)          # the default backend: the interpreter
    assert abs(g - (2 - 4j)) < 1e-12


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_gradient_is_autograds(name):
    """zygopy's convention is autograd's and JAX's: df/dx - i df/dy."""
    agnp = pytest.importorskip("autograd.numpy")
    import autograd
    fn, expr = COMPLEX[name]
    env = {"abs": agnp.abs, "exp": agnp.exp, "sin": agnp.sin, "conj": agnp.conj,
           "real": agnp.real, "imag": agnp.imag}
    agfn = eval(f"lambda z: {expr}", env)   # noqa: S307 - the same function in autograd
    for z in (1.0 + 2.0j, -0.3 + 0.7j):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mine = complex(gradient(fn, z)[0])
        assert abs(mine - complex(autograd.grad(agfn)(z))) < 1e-9


def _cast_down(w):
    return np.sum(w.astype(np.float32) ** 2)


def _cast_up(w):
    return np.sum(w.astype(np.float64) ** 2) + np.sum(w.astype(int) * w)


def test_a_cast_gives_the_gradient_in_the_arguments_dtype():
    w = np.arange(6.0).reshape(2, 3) / 4
    (g,) = gradient(_cast_down, w, backend="interp")
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * w, rtol=1e-6)
    w32 = (w + 0.5).astype(np.float32)
    (g32,) = gradient(_cast_up, w32, backend="interp")
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, 2 * w32 + np.floor(w32), rtol=1e-6)
