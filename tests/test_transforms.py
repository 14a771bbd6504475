"""zygopy's options apart from the user's keywords (`adjoint.options`) and the JAX-style
transforms (`adjoint.transforms`: grad, value_and_grad(f), checkpoint, vmap), checked
against closed forms and central differences, in the interpreter and compiled."""
from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pytest

import adjoint
from adjoint import checkpoint, grad, gradient, pullback, value_and_grad, vmap

BACKENDS = ["interp", "llvm"]
W = np.array([1.0, -2.0, 0.5])


def lossc(w, checkpoint=1.0):
    return np.sum(w * w) * checkpoint


def options_named(x, backend=1.0, batch=2.0):
    return x * x * backend * batch


def plain(w):
    return np.sum(np.sin(w) * w)


def d_plain(w):
    return np.sin(w) + w * np.cos(w)


def two(x, y):
    return x * y * y + math.sin(x)


def with_aux(w, scale=1.0):
    return np.sum(w * w) * scale, {"norm": np.sqrt(np.sum(w * w)), "n": len(w)}


def looped(a, n):
    s = 0.0
    x = a
    for _ in range(n):
        x = 0.5 * x + math.sin(x) * a
        s = s + x * x
    return s


def central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


# -- keywords go to f ----------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_keyword_f_takes_is_fs_even_when_it_names_an_option(backend):
    w = np.ones(3)
    assert np.array_equal(gradient(lossc, w, checkpoint=3.0, backend=backend)[0],
                          [6.0, 6.0, 6.0])
    assert np.array_equal(grad(lossc, backend=backend)(w, checkpoint=3.0), [6.0, 6.0, 6.0])
    value, g = value_and_grad(lossc, w, checkpoint=3.0, backend=backend)
    assert value == 9.0 and np.array_equal(g[0], [6.0, 6.0, 6.0])
    assert np.array_equal(pullback(lossc, w, checkpoint=3.0, backend=backend)[1](1.0)[0],
                          [6.0, 6.0, 6.0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_keywords_named_batch_and_backend_go_to_f(backend):
    want = 2 * 3.0 * 2.0 * 0.5
    assert gradient(options_named, 3.0, backend=2.0, batch=0.5) == (want,)
    assert value_and_grad(options_named, 3.0, batch=0.5, backend=2.0) == (4.5 * 2.0, (want,))
    assert grad(options_named, backend=backend)(3.0, backend=2.0, batch=0.5) == want
    assert adjoint.jacobian(options_named, 3.0, backend=2.0) == (2 * 3.0 * 2.0 * 2.0,)


def test_an_option_f_cannot_take_keeps_its_old_spelling():
    w = np.linspace(0.1, 1.0, 4)
    assert np.allclose(gradient(plain, w, backend="interp")[0], d_plain(w))
    assert gradient(looped, 0.3, 50, checkpoint=1, backend="interp") == \
        gradient(looped, 0.3, 50, backend="interp")
    rows = gradient(plain, np.stack([w, 2 * w]), batch=0, backend="interp")[0]
    assert np.allclose(rows, [d_plain(w), d_plain(2 * w)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_partial_bound_keywords(backend):
    bound = functools.partial(lossc, checkpoint=3.0)
    assert np.array_equal(grad(bound, backend=backend)(W), 6.0 * W)
    # bound by the partial: `checkpoint=` of the call is zygopy's option again
    assert np.array_equal(gradient(bound, W, checkpoint=1.0, backend=backend)[0], 6.0 * W)


@pytest.mark.parametrize("backend", BACKENDS)
def test_keywords_of_the_returned_function_go_to_f(backend):
    g, aux = grad(with_aux, has_aux=True, backend=backend)(W, scale=2.0)
    assert np.allclose(g, 4.0 * W) and aux["n"] == 3
    with pytest.raises(TypeError, match="checkpoint"):
        grad(plain, backend=backend)(W, checkpoint=1.0)    # plain takes no such keyword


# -- grad and value_and_grad ---------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_argnums(backend):
    x, y = 0.7, -1.3
    dx, dy = y * y + math.cos(x), 2 * x * y
    assert math.isclose(grad(two, backend=backend)(x, y), dx)
    assert math.isclose(grad(two, argnums=1, backend=backend)(x, y), dy)
    assert math.isclose(grad(two, argnums=-1, backend=backend)(x, y), dy)
    got = grad(two, argnums=(1, 0), backend=backend)(x, y)
    assert isinstance(got, tuple) and np.allclose(got, (dy, dx))
    assert math.isclose(grad(two)(x, y), central(lambda t: two(t, y), x), rel_tol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_value_and_grad_transform(backend):
    w = np.linspace(-1.0, 1.0, 5)
    value, g = value_and_grad(plain, backend=backend)(w)
    assert math.isclose(value, plain(w)) and np.allclose(g, d_plain(w))
    value, g = value_and_grad(two, argnums=(0, 1), backend=backend)(0.7, -1.3)
    assert math.isclose(value, two(0.7, -1.3)) and len(g) == 2
    (value, aux), g = value_and_grad(with_aux, has_aux=True, backend=backend)(w, 3.0)
    assert math.isclose(value, 3.0 * np.sum(w * w)) and np.allclose(g, 6.0 * w)
    assert math.isclose(aux["norm"], np.linalg.norm(w))
    # with arguments after f it is still the Zygote-style call
    value, gs = value_and_grad(two, 0.7, -1.3, backend=backend)
    assert isinstance(gs, tuple) and len(gs) == 2


def test_transform_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match="argnums"):
        grad(two, argnums=2)(1.0, 2.0)
    with pytest.raises(TypeError, match="argnums"):
        grad(two, argnums=[0, 1])
    with pytest.raises(TypeError, match="pair"):
        grad(plain, has_aux=True)(W)
    with pytest.raises(TypeError, match="JAX's transform"):
        value_and_grad(two, scale=1.0)
    with pytest.raises(ValueError, match="backend"):
        grad(two, backend="gpu")


@pytest.mark.parametrize("backend", ["interp", "auto"])
def test_grad_of_grad(backend):
    def f(x):
        return math.sin(x) * x * x
    d2 = grad(grad(f, backend=backend), backend=backend)
    x = 0.8
    want = 2 * math.sin(x) + 4 * x * math.cos(x) - x * x * math.sin(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # reverse over reverse: no fallback warning
        assert math.isclose(d2(x), want, rel_tol=1e-12)
    df = grad(f)
    assert math.isclose(gradient(lambda t: df(t) ** 2, x, backend=backend)[0],
                        2 * df(x) * want, rel_tol=1e-12)
    pair = grad(two, argnums=(0, 1))
    got = gradient(lambda a: pair(a, 2.0)[0] + pair(a, 2.0)[1], 0.3, backend=backend)[0]
    assert math.isclose(got, -math.sin(0.3) + 4.0, rel_tol=1e-12)


D_TWO = grad(two, argnums=(0, 1))     # read as globals by the compiled functions below
VG_PLAIN = value_and_grad(plain)


def step(x, y):
    gx, gy = D_TWO(x, y)
    return gx + 2.0 * gy


def loss_plus_grad(w):
    value, g = VG_PLAIN(w)
    return value + np.sum(g)


def test_grad_inside_compiled_code():
    import jit
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "gradient" in str(jit.code_typed(step, 0.7, -1.3))
        assert math.isclose(jit.jit(step)(0.7, -1.3),
                            1.3 ** 2 + math.cos(0.7) + 2.0 * 2 * 0.7 * -1.3)
        w = np.linspace(0.1, 0.9, 4)
        assert math.isclose(jit.jit(loss_plus_grad)(w), plain(w) + np.sum(d_plain(w)))


# -- checkpoint ----------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_checkpoint_wrapper_is_bit_for_bit(backend, monkeypatch):
    from adjoint import api
    seen = []
    real = api.checkpointed
    monkeypatch.setattr(api, "checkpointed", lambda jf, mb: seen.append(mb) or real(jf, mb))
    whole = grad(looped, backend=backend)(0.3, 400)
    bounded = grad(checkpoint(looped, 0.001), backend=backend)(0.3, 400)
    assert bounded == whole and seen == [0.001]
    assert math.isclose(whole, central(lambda a: looped(a, 400), 0.3), rel_tol=1e-6)
    assert grad(looped, checkpoint=0.001, backend=backend)(0.3, 400) == whole
    assert gradient(checkpoint(0.001)(looped), 0.3, 400, backend=backend) == (whole, None)
    y, back = pullback(checkpoint(looped, 0.001), 0.3, 400, backend=backend)
    assert y == looped(0.3, 400) and back(1.0) == (whole, None)
    assert checkpoint(looped, 1)(0.3, 10) == looped(0.3, 10)     # called: f itself
    assert len(seen) == 4


def test_checkpoint_refuses_a_missing_budget():
    with pytest.raises(TypeError, match="MiB"):
        checkpoint(looped)
    with pytest.raises(ValueError, match="positive"):
        checkpoint(looped, -1)


# -- vmap ----------------------------------------------------------------------------
def row_loss(w, x, k):
    return np.sum(np.sin(w * x)) * k


@pytest.mark.parametrize("backend", ["interp", "auto"])
def test_vmap_of_grad_stacks_row_gradients(backend):
    rng = np.random.default_rng(3)
    Wr, x = rng.normal(size=(6, 3)), rng.normal(size=3)
    got = vmap(grad(row_loss, argnums=(0, 1), backend=backend), in_axes=(0, None, None))(
        Wr, x, 2)
    rows = [gradient(row_loss, r, x, 2, backend=backend) for r in Wr]
    assert np.array_equal(got[0], np.stack([r[0] for r in rows]))
    assert np.array_equal(got[1], np.stack([r[1] for r in rows]))
    assert np.allclose(got[0], 2 * x * np.cos(Wr * x))
    values, g = vmap(value_and_grad(row_loss, backend=backend), in_axes=(0, None, None))(
        Wr, x, 2)
    assert np.allclose(values, [row_loss(r, x, 2) for r in Wr])
    assert np.array_equal(g, got[0])


def test_vmap_of_any_function_maps_in_python():
    X, Y = np.arange(6.0).reshape(3, 2), np.ones((3, 2))
    total, doubled = vmap(lambda a, b: (np.sum(a * b), 2 * a))(X, Y)   # in_axes=0: both
    assert np.array_equal(total, X.sum(axis=1)) and np.array_equal(doubled, 2 * X)
    by_column = vmap(lambda a: {"s": np.sum(a)}, in_axes=1)(X)
    assert np.array_equal(by_column["s"], X.sum(axis=0))
    with pytest.raises(TypeError, match="keyword"):
        vmap(plain)(X, scale=1.0)
    with pytest.raises(TypeError, match="stacked"):
        vmap(lambda a: "label")(X)
