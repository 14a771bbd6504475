"""Complex numbers follow JAX's and autograd's convention: `gradient` of a real f of
z = x + iy is df/dx - i df/dy, and `back(ct)` of a holomorphic f is ct * f'(z).

Checked against closed forms and central differences (always), and against autograd
and JAX where they are installed.  Complex values run in the interpreter: the JIT
refuses them clearly, forward mode refuses them clearly."""
import warnings

import numpy as np
import pytest

from adjoint import gradient, hessian, hvp, jacfwd, jacobian, jvp, pullback, value_and_grad

Z0 = 1.0 + 2.0j
ZS = np.array([1 + 2j, -0.5 + 0.3j, 2 - 1j])
M0 = np.array([[1 + 1j, 2 - 0.5j], [0.3j, -1 + 0.2j]])


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (the default backend's fallback warning)
        yield


def central(f, z, h=1e-6):
    """df/dx - i df/dy of a real f at z (each entry of an array z)."""
    z = np.asarray(z, dtype=complex)
    out = np.zeros(z.shape, dtype=complex)
    for k in range(z.size):
        for step, unit in ((h, 1.0), (1j * h, -1j)):
            up, down = z.copy(), z.copy()
            up.flat[k] += step
            down.flat[k] -= step
            at = (lambda w: w) if z.ndim else (lambda w: w[()])
            out.flat[k] += unit * (f(at(up)) - f(at(down))) / (2 * h)
    return out if z.ndim else complex(out[()])


def _loop(z):
    s = z
    for _ in range(3):
        s = s * z + 0.5
    return abs(s)


def _loop_closed(z):
    s = z ** 4 + 0.5 * z ** 2 + 0.5 * z + 0.5
    return np.conj(s) / abs(s) * (4 * z ** 3 + z + 0.5)


# name: (f written with numpy module `np_`, argument, closed form of the gradient)
def real_valued(np_):
    return {
        "abs(z*z)": (lambda z: abs(z * z), Z0, 2 * np.conj(Z0)),
        "real(z*conj(z))": (lambda z: np_.real(z * np_.conj(z)), Z0, 2 * np.conj(Z0)),
        "real(z*z)": (lambda z: np_.real(z * z), Z0, 2 * Z0),
        "imag(z*z)": (lambda z: np_.imag(z * z), Z0, -2j * Z0),
        "angle(z)": (lambda z: np_.angle(z), Z0, -1j * np.conj(Z0) / abs(Z0) ** 2),
        "abs(exp(z))": (lambda z: np_.abs(np_.exp(z)), Z0, np.exp(Z0.real) + 0j),
        "real(log(z))": (lambda z: np_.real(np_.log(z)), Z0, np.conj(Z0) / abs(Z0) ** 2),
        "imag(sin(z))": (lambda z: np_.imag(np_.sin(z)), Z0, -1j * np.cos(Z0)),
        "sum(abs(Z)**2)": (lambda v: np_.sum(np_.abs(v) ** 2), ZS, 2 * np.conj(ZS)),
        "real(sum(Z*Z))": (lambda v: np_.real(np_.sum(v * v)), ZS, 2 * ZS),
        "real(sum(M@M))": (lambda m: np_.real(np_.sum(m @ m)), M0,
                           np.ones((2, 2)) @ M0.T + M0.T @ np.ones((2, 2))),
        "norm(Z)": (lambda v: np_.linalg.norm(v), ZS, np.conj(ZS) / np.linalg.norm(ZS)),
        "loop": (_loop, Z0, _loop_closed(Z0)),
    }


HOLOMORPHIC = {"exp": (np.exp, np.exp), "log": (np.log, lambda z: 1 / z),
               "sin": (np.sin, np.cos), "z**2": (lambda z: z ** 2, lambda z: 2 * z),
               "z**3": (lambda z: z ** 3, lambda z: 3 * z ** 2)}
CT = 0.7 - 0.4j


@pytest.mark.parametrize("name", sorted(real_valued(np)))
def test_gradient_is_df_dx_minus_i_df_dy(name):
    f, z, closed = real_valued(np)[name]
    for backend in ("interp", "auto"):
        g, = gradient(f, z, backend=backend)
        assert np.allclose(g, closed, atol=1e-12)
    assert np.allclose(closed, central(f, z), atol=1e-5)


def test_readme_example_and_value_and_grad():
    f = lambda z: abs(z * z)    # noqa: E731
    assert gradient(f, 1 + 2j) == (pytest.approx(2 - 4j),)
    v, (g,) = value_and_grad(f, 1 + 2j)
    assert v == pytest.approx(5.0) and g == pytest.approx(2 - 4j)


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_back_of_a_holomorphic_function_is_linear_in_the_cotangent(name):
    f, df = HOLOMORPHIC[name]
    y, back = pullback(f, Z0, backend="interp")
    assert y == pytest.approx(f(Z0))
    assert back(CT)[0] == pytest.approx(CT * df(Z0))
    assert back(1j)[0] == pytest.approx(1j * df(Z0))


def test_checkpoint_and_batch_paths():
    def steps(z):
        s = z
        for _ in range(4):
            s = s * 0.9 + z * 0.1
        return abs(s * s)
    assert gradient(steps, Z0, checkpoint=2)[0] == pytest.approx(2 * np.conj(Z0))
    got, = gradient(lambda z: abs(z * z), ZS, batch=0)
    assert got.dtype.kind == "c" and np.allclose(got, 2 * np.conj(ZS))


def _inner_grad_real(x):
    g, = gradient(lambda w: abs(w * w) * x, x + 2j)
    return (g * g).real


def _inner_grad_complex(w):
    g, = gradient(lambda u: abs(u * w), 1.0 + 0.5j)
    return abs(g)


def _inner_back(w):
    _, back = pullback(lambda u: u * u * u, w)
    return abs(back(1j)[0])


def test_nested_gradients_follow_the_same_convention():
    h = 1e-6
    slope = (_inner_grad_real(1.0 + h) - _inner_grad_real(1.0 - h)) / (2 * h)
    assert gradient(_inner_grad_real, 1.0, backend="interp")[0] == pytest.approx(slope, abs=1e-5)
    for f in (_inner_grad_complex, _inner_back):
        assert gradient(f, Z0, backend="interp")[0] == pytest.approx(central(f, Z0), abs=1e-5)
    # a real function with complex values inside: its Hessian by nested reverse mode
    assert hessian(lambda x: np.exp(1j * x).real, 0.7) == pytest.approx(-np.cos(0.7))


def test_real_arguments_keep_real_gradients():
    g, = gradient(lambda x: abs(x * (1 + 2j)) + np.angle(x + 1j), 0.7, backend="interp")
    assert type(g) is float and g == pytest.approx(np.sqrt(5) - 1 / (1 + 0.49))
    v = np.array([0.3, 0.9])
    g, = gradient(lambda v: np.sum(np.abs(v * (1 - 1j)) ** 2), v, backend="interp")
    assert g.dtype == np.float64 and np.allclose(g, 4 * v)
    g, = gradient(lambda v: np.sum(v * v), v)      # no complex value: unchanged
    assert g.dtype == np.float64 and np.allclose(g, 2 * v)


def _unpacked(v):
    a, b, c = v
    return abs(a * b) + c.imag


def _iterated(v):
    s = 0.0
    for e, w in zip(v, v * 1j):
        s = s + abs(e) ** 2 + (e * w).real
    return s


def test_loops_and_unpacking_over_complex_arrays():
    a, b, c = ZS
    want = [np.conj(a * b) / abs(a * b) * b, np.conj(a * b) / abs(a * b) * a, -1j]
    assert np.allclose(gradient(_unpacked, ZS, backend="interp")[0], want)
    assert np.allclose(gradient(_iterated, ZS, backend="interp")[0],
                       2 * np.conj(ZS) + 2j * ZS)


def test_conjugate_methods():
    g, = gradient(lambda z: (z.conjugate() * z).real, Z0, backend="interp")
    assert g == pytest.approx(2 * np.conj(Z0))
    g, = gradient(lambda v: np.sum(v.conj() * v * 1j).imag, ZS, backend="interp")
    assert np.allclose(g, 2 * np.conj(ZS))
    assert gradient(lambda x: x.conjugate() * x, 0.5, backend="interp") == (1.0,)


def test_complex_builtin():
    f = lambda x, y: abs(complex(x, y) ** 2) + 3 * complex(x, y).imag   # noqa: E731
    assert gradient(f, 0.7, 1.3, backend="interp") == (pytest.approx(1.4), pytest.approx(5.6))
    with pytest.raises(TypeError, match="complex\\(\\) of a complex number"):
        gradient(lambda z: abs(complex(z)), Z0, backend="interp")


def test_the_jit_refuses_complex_values_clearly():
    from jit import jit
    from jit.types import TypingError

    def f(z):
        return abs(z * z)
    with pytest.raises(TypingError, match="complex numbers are not compiled"):
        gradient(f, Z0, backend="llvm")
    with pytest.raises(TypingError, match="complex numbers are not compiled"):
        jit(f)(Z0)
    with pytest.raises(TypingError, match=r"literal\(\(1\+2j\)\)"):   # a complex constant
        gradient(lambda x: abs(x * (1 + 2j)), 0.7, backend="llvm")
    # the default backend: the interpreter (a fallback warning, given once per reason)
    assert gradient(lambda z: abs(z * z * z), Z0)[0] == pytest.approx(3 * abs(Z0) * np.conj(Z0))
    assert gradient(lambda x: abs(x * (1 + 2j)), 0.7)[0] == pytest.approx(np.sqrt(5))


def test_forward_mode_refuses_complex_values_clearly():
    refused = "forward mode does not support complex numbers"
    x = np.array([0.3, 0.9])
    for call in (lambda: jvp(lambda z: z * z, (Z0,), (1.0 + 0j,)),
                 lambda: jvp(lambda v: np.var(v * (1 + 1j)), (x,), (np.ones(2),)),
                 lambda: jacfwd(lambda v: np.abs(v * 1j), x),
                 lambda: hvp(lambda v: np.sum(np.abs(v * (1 + 1j)) ** 2), x, np.ones(2)),
                 lambda: hvp(lambda v: np.var(v * (1 + 1j)), x, np.ones(2))):
        with pytest.raises(TypeError, match=refused):
            call()
    with pytest.raises(TypeError, match="jacobian: complex values are not supported"):
        jacobian(lambda z: z * z, Z0)
    # the complex-linear parts of forward mode run: (x (1+i) x).imag = x**2
    assert jvp(lambda v: (v * (1 + 1j) * v).imag, (0.7,), (1.0,)) == \
        (pytest.approx(0.49), pytest.approx(1.4))


# -- the same functions in autograd and JAX ----------------------------------------------
@pytest.mark.parametrize("name", sorted(real_valued(np)))
def test_agrees_with_autograd(name):
    anp = pytest.importorskip("autograd.numpy")
    import autograd
    f, z, _ = real_valued(np)[name]
    fa, _, _ = real_valued(anp)[name]
    assert np.allclose(gradient(f, z, backend="interp")[0], autograd.grad(fa)(z), atol=1e-12)


def test_agrees_with_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    for name in ("abs(z*z)", "real(sum(M@M))"):     # (autograd checks the rest)
        f, z, _ = real_valued(np)[name]
        fj, _, _ = real_valued(jnp)[name]
        want = np.asarray(jax.grad(fj)(jnp.asarray(z)))
        assert np.allclose(gradient(f, z, backend="interp")[0], want, atol=1e-12), name
    for f, fj in ((lambda z: z ** 3, lambda z: z ** 3),):
        _, vjp = jax.vjp(fj, jnp.asarray(Z0))
        assert pullback(f, Z0, backend="interp")[1](CT)[0] == \
            pytest.approx(complex(vjp(jnp.asarray(CT))[0]))
    y, t = jax.jvp(lambda v: (v * (1 + 1j) * v).imag, (0.7,), (1.0,))
    assert jvp(lambda v: (v * (1 + 1j) * v).imag, (0.7,), (1.0,)) == \
        (pytest.approx(float(y)), pytest.approx(float(t)))
