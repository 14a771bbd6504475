"""Programs written the way a JAX or autograd user writes them, run through zygopy's
JAX-style transforms (`grad`, `value_and_grad`, `vmap`, `checkpoint`, `stop_gradient`,
`custom_vjp`, `custom_jvp`) in the interpreter and compiled.  Each gradient is checked
against central finite differences or a closed form; compiled runs must not fall back
to the interpreter.  The refusals a user meets (nested reverse mode compiled, forward
over reverse, a third order) must name the user's function, not zygopy's helpers."""
import functools
import math
import warnings

import numpy as np
import pytest

import adjoint
import jit
from adjoint import (custom_jvp, custom_vjp, grad, stop_gradient, value_and_grad,
                     vmap)

BACKENDS = ("interp", "llvm")
RNG = np.random.default_rng(7)
X = RNG.normal(size=(6, 3))
Y = RNG.normal(size=6)


@pytest.fixture(autouse=True)
def no_fallback():
    """A compiled run that falls back to the interpreter fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", jit.JitFallbackWarning)
        yield


def numeric_grad(f, x, eps=1e-6):
    """Central differences of scalar `f` in a float or a float array `x`."""
    if np.ndim(x) == 0:
        return (f(x + eps) - f(x - eps)) / (2 * eps)
    g = np.zeros(np.shape(x))
    for i in np.ndindex(g.shape):
        up, down = np.array(x, float), np.array(x, float)
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def close(a, b, tol=1e-6):
    return np.allclose(a, b, rtol=tol, atol=tol)


# -- parameters as pytrees -------------------------------------------------------------
def mlp_loss(params, X, y):
    W1, b1, W2, b2 = params
    h = np.tanh(X @ W1 + b1)
    return np.mean((h @ W2 + b2 - y) ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mlp_with_tuple_params(backend):
    params = (RNG.normal(size=(3, 4)), RNG.normal(size=4), RNG.normal(size=4), 0.3)
    kept = [np.copy(p) for p in params]
    g = grad(mlp_loss, backend=backend)(params, X, Y)
    assert isinstance(g, tuple) and len(g) == 4
    for k in range(4):
        def part(v, k=k):
            return mlp_loss(params[:k] + (v,) + params[k + 1:], X, Y)
        assert close(g[k], numeric_grad(part, params[k]))
    assert all(np.array_equal(a, b) for a, b in zip(params, kept))   # inputs untouched


def nested_loss(p, x):
    first, second = p["layers"]
    h = np.tanh(first["W"] @ x + first["b"])
    return np.sum((second["W"] @ h) ** 2) + p["scale"] * np.sum(x)


def test_nested_dict_and_tuple_params(backend="interp"):
    W, b, V = RNG.normal(size=(3, 3)), RNG.normal(size=3), RNG.normal(size=(2, 3))
    x = RNG.normal(size=3)

    def params(W=W, b=b, V=V, scale=0.7):
        return {"layers": ({"W": W, "b": b}, {"W": V}), "scale": scale}
    g = grad(nested_loss, backend=backend)(params(), x)
    assert set(g) == {"layers", "scale"}
    assert close(g["layers"][0]["W"], numeric_grad(lambda v: nested_loss(params(W=v), x), W))
    assert close(g["layers"][0]["b"], numeric_grad(lambda v: nested_loss(params(b=v), x), b))
    assert close(g["layers"][1]["W"], numeric_grad(lambda v: nested_loss(params(V=v), x), V))
    assert close(g["scale"], np.sum(x))


def deep_tanh(ws, x):
    h = x
    for W in ws:
        h = np.tanh(W @ h)
    return np.sum(h)


def test_list_of_layers_in_a_loop(backend="interp"):
    ws = [RNG.normal(size=(3, 3)) for _ in range(3)]
    x = RNG.normal(size=3)
    g = grad(deep_tanh, backend=backend)(ws, x)
    assert isinstance(g, list)
    for k in range(3):
        def part(v, k=k):
            return deep_tanh(ws[:k] + [v] + ws[k + 1:], x)
        assert close(g[k], numeric_grad(part, ws[k]))


# -- argnums, has_aux, value_and_grad ----------------------------------------------------
def sine_series(a, n, b):
    s = 0.0
    for i in range(n):
        s = s + a * math.sin(b * i)
    return s


@pytest.mark.parametrize("backend", BACKENDS)
def test_argnums_tuple_skips_an_int(backend):
    da, db = grad(sine_series, argnums=(0, 2), backend=backend)(1.3, 5, 0.7)
    assert close(da, sum(math.sin(0.7 * i) for i in range(5)))
    assert close(db, sum(1.3 * i * math.cos(0.7 * i) for i in range(5)))
    assert close(grad(lambda a, b: a * b ** 3, argnums=-1, backend=backend)(2.0, 1.5),
                 6.0 * 1.5 ** 2)


def loss_with_metrics(w, X, y):
    r = X @ w - y
    value = np.mean(r * r)
    return value, {"mse": value, "worst": np.max(np.abs(r))}


@pytest.mark.parametrize("backend", BACKENDS)
def test_has_aux_metrics_dict(backend):
    w = RNG.normal(size=3)
    g, metrics = grad(loss_with_metrics, has_aux=True, backend=backend)(w, X, Y)
    want = loss_with_metrics(w, X, Y)[1]
    assert metrics["mse"] == pytest.approx(want["mse"], rel=1e-13)
    assert metrics["worst"] == want["worst"]
    assert close(g, 2 * X.T @ (X @ w - Y) / len(Y))


def affine_aux(W, b, X):
    z = X @ W + b
    return np.sum(z ** 2), (z, np.mean(z))


def test_value_and_grad_with_aux_and_argnums(backend="interp"):
    W = RNG.normal(size=3)
    (value, (z, m)), (gW, gb) = value_and_grad(affine_aux, argnums=(0, 1), has_aux=True,
                                               backend=backend)(W, 0.2, X)
    want = X @ W + 0.2
    assert close(z, want) and close(m, np.mean(want)) and close(value, np.sum(want ** 2))
    assert close(gW, 2 * X.T @ want) and close(gb, 2 * np.sum(want))


def test_value_and_grad_training_loop(backend="interp"):
    step = value_and_grad(lambda w, X, y: np.mean((X @ w - y) ** 2), backend=backend)
    w, ref = np.zeros(3), np.zeros(3)
    losses = []
    for _ in range(15):
        value, g = step(w, X, Y)
        losses.append(value)
        w = w - 0.1 * g
        ref = ref - 0.1 * 2 * X.T @ (X @ ref - Y) / len(Y)
    assert close(w, ref, 1e-10) and losses[-1] < losses[0]


def tanh_features(w, X, y):
    # (no matrix product or `**`: the README allows those to differ in the last bits)
    t = np.tanh(X[0] * w + X[1])
    return np.sum(t * t) + np.sum(np.exp(-w)) + np.mean(y) * np.max(w)


@pytest.mark.parametrize("backend", BACKENDS)
def test_value_is_cpythons_value(backend):
    w = RNG.normal(size=3)
    value, g = value_and_grad(tanh_features, backend=backend)(w, X, Y)
    assert value == tanh_features(w, X, Y)
    assert close(g, numeric_grad(lambda v: tanh_features(v, X, Y), w))


# -- reverse over reverse ----------------------------------------------------------------
def horner(x):
    r = 0.0
    for c in [1.0, -2.0, 3.0, 0.5]:
        r = r * x + c
    return r


def test_grad_of_grad_of_scalar_functions():
    assert close(grad(grad(np.tanh))(0.4), -2 * np.tanh(0.4) * (1 - np.tanh(0.4) ** 2))
    assert close(grad(grad(lambda x: math.tanh(x)))(0.4),
                 -2 * np.tanh(0.4) * (1 - np.tanh(0.4) ** 2))
    assert close(grad(grad(horner))(1.5), 6 * 1.5 - 4.0)
    assert close(grad(grad(horner, backend="interp"), backend="interp")(1.5), 6 * 1.5 - 4.0)


def test_transforms_nest_to_any_order():
    # horner(x) = x^3 - 2 x^2 + 3 x + 0.5
    assert close(grad(grad(grad(horner)))(1.5), 6.0)
    assert grad(grad(grad(grad(horner))), backend="interp")(1.5) == 0.0
    twice = grad(grad(horner))
    assert close(grad(lambda x: twice(x) * x, backend="interp")(1.5), 6 * 1.5 + 6 * 1.5 - 4)
    with pytest.raises(TypeError, match=r"grad\(grad\(horner\)\) is a transformed function held"):
        jit.jit(lambda x, fn: fn(x))(1.5, twice)
    with warnings.catch_warnings():       # (forward over reverse: hvp columns, compiled)
        warnings.simplefilter("error", jit.JitFallbackWarning)
        assert close(adjoint.hessian(horner, 1.5, backend="llvm"), 6 * 1.5 - 4)


def tanh_by_exp(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def test_sixth_derivative_of_tanh_compiled_matches_its_closed_form():
    # d^n tanh / dx^n as a polynomial in t = tanh(x): p_{n+1} = p_n' (1 - t^2)
    t = np.tanh(0.3)
    p = np.polynomial.Polynomial([0.0, 1.0])
    closed = []
    for _ in range(6):
        p = p.deriv() * np.polynomial.Polynomial([1.0, 0.0, -1.0])
        closed.append(p(t))
    g = tanh_by_exp
    with warnings.catch_warnings():
        warnings.simplefilter("error", jit.JitFallbackWarning)
        for n in range(6):
            g = grad(g)
            if n >= 3:
                assert abs(g(0.3) - closed[n]) <= 1e-10 * abs(closed[n])
    assert abs(grad(grad(grad(tanh_by_exp)), backend="interp")(0.3) - closed[2]) \
        <= 1e-10 * abs(closed[2])


def star_args_tanh(*xs):
    return tanh_by_exp(xs[0])


def test_a_third_order_through_star_args():
    def d1(*a):
        return adjoint.gradient(star_args_tanh, *a)[0]

    def d2(*a):
        return adjoint.gradient(d1, *a)[0]
    t = np.tanh(0.3)
    for backend in ("interp", "auto"):
        with warnings.catch_warnings():   # (compiled: forward mode of f(*args) is not
            warnings.simplefilter("ignore", jit.JitFallbackWarning)   # yet, see the note)
            got = adjoint.gradient(d2, 0.3, backend=backend)[0]
        assert close(got, -2 + 8 * t ** 2 - 6 * t ** 4)


def cube(t):
    return t ** 3


def test_transforms_made_inside_a_differentiated_function():
    def outer(x):                    # grad(g)(x) of a global g: nested reverse mode
        return grad(cube)(x) * x + value_and_grad(cube)(x)[1]
    assert close(grad(outer, backend="interp")(1.2), 9 * 1.2 ** 2 + 6 * 1.2)

    def captures(x):                 # x's share through the lambda would be lost: refused
        return grad(lambda t: t ** 3 * x)(x)
    with pytest.raises(TypeError, match=r"adjoint.grad\(<lambda>\) made inside a differ"):
        grad(captures, backend="interp")(1.2)

    def captures_vg(x):
        return value_and_grad(lambda t: t ** 3 * x)(x)[1]
    with pytest.raises(TypeError, match=r"adjoint.value_and_grad\(<lambda>\) made inside"):
        grad(captures_vg, backend="interp")(1.2)
    # the call form differentiates the captured value too
    assert close(grad(lambda x: adjoint.gradient(lambda t: t ** 3 * x, x)[0],
                      backend="interp")(1.2), 9 * 1.2 ** 2)


def quartic(x):
    return np.sum(x ** 4) + x[0] * x[1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_over_reverse_of_a_grad(backend):
    # jacfwd(grad(f)), JAX's Hessian: the grad's stand-in calls `gradient`, whose
    # tangent is a Hessian-vector product
    x = np.array([1.0, 2.0])
    H = np.array([[12.0, 1.0], [1.0, 48.0]])
    _, t = adjoint.jvp(grad(quartic, backend=backend), (x,), (np.array([1.0, 0.0]),),
                       backend=backend)
    assert close(t, H[:, 0])
    assert close(adjoint.jacfwd(grad(quartic), x, backend=backend)[0], H)
    assert close(adjoint.hvp(quartic, x, np.array([1.0, 0.0]), backend=backend), H[:, 0])
    with pytest.raises(TypeError, match=r"jvp: grad\(.*quartic, has_aux=True\)|reverse-mode"):
        adjoint.jvp(grad(lambda x: (quartic(x), 1.0), has_aux=True), (x,), (np.ones(2),))


# -- vmap --------------------------------------------------------------------------------
def half_sq(w, t):
    return np.sum((w - t) ** 2) * 0.5


@pytest.mark.parametrize("backend", BACKENDS)
def test_vmap_of_grad_over_rows(backend):
    W, t = RNG.normal(size=(5, 3)), RNG.normal(size=3)
    assert close(vmap(grad(half_sq, backend=backend), in_axes=(0, None))(W, t), W - t)
    values, grads = vmap(value_and_grad(half_sq, backend=backend), in_axes=(0, None))(W, t)
    assert close(values, 0.5 * np.sum((W - t) ** 2, axis=1)) and close(grads, W - t)
    # per-example gradients: the parameters held, the data mapped
    per_example = vmap(grad(half_sq, backend=backend), in_axes=(None, 0))(t, W)
    assert close(per_example, t - W)



def test_vmap_over_columns():
    M = RNG.normal(size=(3, 4))
    assert close(vmap(grad(lambda v: np.sum(v ** 2), backend="interp"), in_axes=1)(M), 2 * M.T)


# -- checkpoint, stop_gradient ------------------------------------------------------------
def rnn_loss(w, n):
    h = 0.0
    for i in range(n):
        h = math.tanh(w * h + 0.1 * i)
    return h * h


@pytest.mark.parametrize("backend", BACKENDS)
def test_checkpointed_loop_heavy_loss(backend):
    g = grad(adjoint.checkpoint(rnn_loss, 0.001), backend=backend)(0.8, 300)
    assert close(g, numeric_grad(lambda w: rnn_loss(w, 300), 0.8), 1e-5)
    assert g == grad(rnn_loss, backend=backend)(0.8, 300)


def td_loss(w, x, x_next, reward):
    q = np.dot(w, x)
    target = reward + 0.9 * stop_gradient(np.dot(w, x_next))
    return (q - target) ** 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_stop_gradient_target_network(backend):
    w, x, xn = RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3)
    err = np.dot(w, x) - 0.5 - 0.9 * np.dot(w, xn)
    assert close(grad(td_loss, backend=backend)(w, x, xn, 0.5), 2 * err * x)

    def self_weighted(p):
        q = stop_gradient(p)
        return p["a"] * q["a"] + np.sum(p["b"] * q["b"])
    p = {"a": 2.0, "b": np.array([1.0, 3.0])}
    g = grad(self_weighted, backend=backend)(p)
    assert g["a"] == 2.0 and close(g["b"], p["b"])


def test_straight_through_estimator():
    def quantized(w, x):
        z = x * w
        return np.sum((z + stop_gradient(np.round(z) - z)) ** 2)
    w, x = np.array([1.1, 0.9, 1.4]), np.array([0.3, 1.7, -2.2])
    assert close(grad(quantized, backend="interp")(w, x), 2 * np.round(x * w) * x)


# -- custom derivatives --------------------------------------------------------------------
@custom_vjp
def logsumexp(v):
    m = np.max(v)
    return m + np.log(np.sum(np.exp(v - m)))


def _lse_fwd(v):
    m = np.max(v)
    e = np.exp(v - m)
    s = np.sum(e)
    return m + np.log(s), e / s


def _lse_bwd(p, dy):
    return (dy * p,)


logsumexp.defvjp(_lse_fwd, _lse_bwd)


def cross_entropy(W, X, labels):
    total = 0.0
    for i in range(X.shape[0]):
        z = W @ X[i]
        total = total + logsumexp(z) - z[labels[i]]
    return total / X.shape[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_vjp_logsumexp_inside_a_loop(backend):
    W, labels = RNG.normal(size=(4, 3)), np.array([0, 1, 2, 3, 1, 0])
    g = grad(cross_entropy, backend=backend)(W, X, labels)
    assert close(g, numeric_grad(lambda v: cross_entropy(v, X, labels), W))


@custom_vjp
def clip_gradient(x, c):
    return x


def _clip_fwd(x, c):
    return x, c


def _clip_bwd(c, g):
    return (np.clip(g, -c, c), None)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def test_custom_vjp_gradient_clipping(backend="interp"):
    def loss(w):
        s = 0.0
        for k in range(4):
            s = s + (3.0 * k) * np.sum(clip_gradient(w, 2.0) ** 2) / 10
        return s
    w = np.array([0.5, -1.0, 4.0])
    want = sum(np.clip(3.0 * k * 2 * w / 10, -2, 2) for k in range(4))
    assert close(grad(loss, backend=backend)(w), want)


@custom_jvp
def softplus(x):
    return np.logaddexp(0.0, x)


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t / (1.0 + np.exp(-x))


@custom_jvp
def hypot2(a, b):
    return math.sqrt(a * a + b * b)


@hypot2.defjvp
def _hypot2_jvp(primals, tangents):
    a, b = primals
    da, db = tangents
    r = hypot2(a, b)                 # the rule calls its own function: ydot uses it
    return r, (a * da + b * db) / r


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_jvp_in_forward_and_reverse(backend):
    x = np.array([-3.0, 0.2, 5.0])
    sig = 1 / (1 + np.exp(-x))
    assert close(adjoint.jvp(softplus, (x,), (np.ones(3),), backend=backend)[1], sig)
    w = np.ones(3)
    assert close(grad(lambda w, X: np.sum(softplus(X @ w)), backend=backend)(w, X),
                 X.T @ (1 / (1 + np.exp(-(X @ w)))))
    assert adjoint.jvp(hypot2, (3.0, 4.0), (1.0, 0.0), backend=backend) == (5.0, 0.6)
    da, db = grad(lambda a, b: hypot2(a, b) * a, argnums=(0, 1), backend=backend)(3.0, 4.0)
    assert close(da, 5.0 + 9.0 / 5) and close(db, 12.0 / 5)


def test_custom_jvp_of_a_linear_function_through_itself_is_refused():
    @custom_jvp
    def double(x):
        return 2.0 * x

    @double.defjvp
    def double_jvp(primals, tangents):
        return double(primals[0]), double(tangents[0])
    assert adjoint.jvp(double, (3.0,), (1.0,)) == (6.0, 2.0)
    with pytest.raises(TypeError, match="jvp rule of .*double calls .*double.*custom_vjp"):
        grad(lambda x: double(x) * x)(3.0)


# -- closures, partials, globals, keywords --------------------------------------------------
def make_loss(X, y):
    return lambda w: np.mean((X @ w - y) ** 2)


def keyword_loss(w, X=None, y=None):
    return np.mean((X @ w - y) ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_closures_and_partials_made_per_call(backend):
    w = np.ones(3)
    for s in (1.0, 2.0):
        Xs = X * s
        want = 2 * Xs.T @ (Xs @ w - Y) / len(Y)
        assert close(grad(make_loss(Xs, Y), backend=backend)(w), want)
        assert close(grad(functools.partial(keyword_loss, X=Xs, y=Y), backend=backend)(w),
                     want)
    powers = [lambda x, k=k: x ** k for k in range(1, 4)]
    assert [grad(f, backend=backend)(2.0) for f in powers] == [1.0, 4.0, 12.0]


def make_scaled():
    k = 1.0

    def loss(w):
        return k * np.sum(w ** 2)

    def bump():
        nonlocal k
        k = k + 1.0
    return loss, bump


def test_nonlocal_rebound_between_calls(backend="interp"):
    loss, bump = make_scaled()
    dloss = grad(loss, backend=backend)
    assert close(dloss(np.ones(2)), 2.0)
    bump()
    assert close(dloss(np.ones(2)), 4.0)


LR = 0.1
REG = 0.0
SHIFT = np.zeros(2)


def regularized(w):
    return np.sum((w - SHIFT) ** 2) * 0.5 + REG * np.sum(np.abs(w))


@pytest.mark.parametrize("backend", BACKENDS)
def test_module_hyperparameters_rebound_and_mutated(backend):
    global LR, REG
    w = np.array([1.0, -2.0])
    dreg = grad(regularized, backend=backend)
    try:
        assert close(w - LR * dreg(w), 0.9 * w)
        LR, REG = 0.5, 1.0
        assert close(w - LR * dreg(w), w - 0.5 * (w + np.sign(w)))
        SHIFT[:] = [1.0, 2.0]
        assert close(dreg(w), w - SHIFT + np.sign(w))
    finally:
        LR, REG = 0.1, 0.0
        SHIFT[:] = 0.0


def option_named(w, scale=1.0, checkpoint=0.0, batch=1):
    return scale * np.sum(w ** 2) + checkpoint * np.sum(w) + batch * w[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_keywords_named_like_options_go_to_f(backend):
    w = np.array([1.0, 2.0])
    want = 6 * w + 2.0 + np.array([5.0, 0.0])
    g = grad(option_named, backend=backend)(w, scale=3.0, checkpoint=2.0, batch=5)
    assert close(g, want)
    value, g = value_and_grad(option_named, backend=backend)(w, scale=3.0, checkpoint=2.0,
                                                             batch=5)
    assert value == option_named(w, scale=3.0, checkpoint=2.0, batch=5) and close(g, want)


# -- numpy idioms -------------------------------------------------------------------------
def robust_loss(w, X, y):
    r = X @ w - y
    a = np.where(np.abs(r) < 1.0, 0.5 * r ** 2, np.abs(r) - 0.5)
    return (np.sum(a) + np.sum(np.maximum(X @ w, 0.0)) + np.linalg.norm(w)
            + np.sum((X.T @ r) ** 2) * 0.01 + np.einsum("ij,j->", X, w))


def reductions(W):
    return ((W ** 2).sum() + W.mean(axis=0).sum() + W.max() + W.sum(axis=1) @ np.ones(2)
            + W.min(axis=0, keepdims=True).sum())


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_idioms(backend):
    w = RNG.normal(size=3)
    kept = w.copy()
    g = grad(robust_loss, backend=backend)(w, X, Y)
    assert close(g, numeric_grad(lambda v: robust_loss(v, X, Y), w), 1e-5)
    assert np.array_equal(w, kept)
    W = RNG.normal(size=(2, 3))
    assert close(grad(reductions, backend=backend)(W), numeric_grad(reductions, W), 1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_place_updates_of_an_argument(backend):
    def bumped(x):
        x += 1.0
        x *= 2.0
        return np.sum(x ** 2)
    x = np.array([0.5, -1.0, 2.0])
    value, g = value_and_grad(bumped, backend=backend)(x)
    assert np.array_equal(x, [0.5, -1.0, 2.0])          # the caller's array is kept
    assert value == bumped(x.copy()) and close(g, 8 * (x + 1.0))


def weighted_rows(w, X, y):
    s = 0.0
    for i, (xi, yi) in enumerate(zip(X, y), 1):
        s = s + i * (np.dot(w, xi) - yi) ** 2
    return s


@pytest.mark.parametrize("backend", BACKENDS)
def test_enumerate_of_zip_over_rows(backend):
    w = RNG.normal(size=3)
    g = grad(weighted_rows, backend=backend)(w, X, Y)
    want = sum(2 * i * (np.dot(w, X[i - 1]) - Y[i - 1]) * X[i - 1] for i in range(1, 7))
    assert close(g, want, 1e-10)
    assert value_and_grad(weighted_rows, backend=backend)(w, X, Y)[0] == weighted_rows(w, X, Y)


def test_new_axis_index_compiles():
    """(`x[:, None]` was refused by the JIT; numpy's indexing now compiles.)"""
    def pair_distances(x):
        d = x[:, None] - x[None, :]
        return np.sum(d ** 2)
    x = RNG.normal(size=4)
    assert close(grad(pair_distances, backend="interp")(x), numeric_grad(pair_distances, x))
    assert close(grad(pair_distances, backend="llvm")(x), numeric_grad(pair_distances, x))


# -- jit training loops calling a transformed loss -------------------------------------------
def mse(w, X, y):
    r = X @ w - y
    return np.sum(r * r) / len(y)


dmse = grad(mse)
dmse_w = grad(lambda b, w, X, y: np.sum((X @ w - y) ** 2) / len(y) + b * b, argnums=1)
vg_mse = value_and_grad(mse)


@jit.jit
def fit(w, X, y, steps, lr):
    for _ in range(steps):
        w = w - lr * dmse(w, X, y)
    return w


@jit.jit
def fit_second(w, X, y, steps, lr):
    for _ in range(steps):
        w = w - lr * dmse_w(0.5, w, X, y)
    return w


@jit.jit
def fit_tracking(w, X, y, steps, lr):
    total = 0.0
    for _ in range(steps):
        value, g = vg_mse(w, X, y)
        total = total + value
        w = w - lr * g
    return w, total


def test_jit_training_loops_call_transformed_losses():
    w, total = np.zeros(3), 0.0
    for _ in range(40):
        total += mse(w, X, Y)
        w = w - 0.1 * 2 * X.T @ (X @ w - Y) / len(Y)
    assert close(fit(np.zeros(3), X, Y, 40, 0.1), w, 1e-10)
    assert close(fit_second(np.zeros(3), X, Y, 40, 0.1), w, 1e-10)   # argnums=1
    w2, total2 = fit_tracking(np.zeros(3), X, Y, 40, 0.1)
    assert close(w2, w, 1e-10) and close(total2, total, 1e-10)


def aux_loss(w):
    return np.sum(w ** 2), 1.0


daux = grad(aux_loss, has_aux=True)


def test_jit_loop_with_an_aux_transform_is_refused_by_name():
    @jit.jit
    def loop(w):
        return daux(w)[0]
    with pytest.raises(TypeError, match=r"grad\(aux_loss, has_aux=True\) called inside"):
        loop(np.ones(2))
    with pytest.raises(TypeError, match=r"grad\(aux_loss, has_aux=True\) called inside"):
        grad(lambda w: np.sum(daux(w)[0]), backend="interp")(np.ones(2))
