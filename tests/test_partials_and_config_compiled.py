"""Code as a new user writes it, compiled with no fallback: a `functools.partial`
(binding keywords, of a function with defaults) passed as a value and called inside
the loss, or differentiated itself.  Gradients are checked against central
differences in reverse and forward mode on both backends; where the llvm backend is
claimed to compile, a fallback warning is an error."""
import functools
import warnings

import numpy as np
import pytest

from adjoint import gradient, jvp, value_and_grad

BACKENDS = ("interp", "llvm")


def compiled(fn, *args, **kw):
    """`fn(*args, **kw)` with any warning (a fallback to the interpreter) an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kw)


def central(f, x, h=1e-6):
    """Central differences of scalar `f` at float or array `x`."""
    if np.ndim(x) == 0:
        return (f(x + h) - f(x - h)) / (2 * h)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def huber(r, delta=1.0):
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def objective(params, X, y, loss_fn=None, l2=0.0):
    r = X @ params["w"] + params["b"] - y
    return np.mean(loss_fn(r)) + l2 * np.sum(params["w"] ** 2)


def linear_objective(w, X, y, loss_fn=None, l2=0.0):
    return np.mean(loss_fn(X @ w - y)) + l2 * np.sum(w ** 2)


RNG = np.random.default_rng(3)
X = RNG.normal(size=(12, 3))
Y = RNG.normal(size=12)
W = RNG.normal(size=3)


def _check_params(g, f, params):
    """g: the gradient of f at params = {"w": array, "b": float}."""
    gw = central(lambda w: f({"w": w, "b": params["b"]}), params["w"])
    gb = central(lambda b: f({"w": params["w"], "b": b}), params["b"])
    np.testing.assert_allclose(g["w"], gw, rtol=1e-6, atol=1e-9)
    assert g["b"] == pytest.approx(gb, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_partial_passed_as_a_keyword_value(backend):
    params = {"w": W, "b": 0.1}
    loss = functools.partial(huber, delta=0.5)
    (g,) = compiled(gradient, lambda p: objective(p, X, Y, loss_fn=loss), params,
                    backend=backend)
    _check_params(g, lambda p: objective(p, X, Y, loss_fn=loss), params)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_partial_made_in_the_loss_binding_a_keyword(backend):
    params = {"w": W, "b": -0.2}

    def f(p):
        return objective(p, X, Y, loss_fn=functools.partial(huber, delta=0.5))
    (g,) = compiled(gradient, f, params, backend=backend)
    _check_params(g, f, params)


@pytest.mark.parametrize("backend", BACKENDS)
def test_value_and_grad_of_a_partial_binding_a_partial(backend):
    f = functools.partial(objective, loss_fn=functools.partial(huber, delta=0.5), l2=1e-3)
    params = {"w": W, "b": 0.3}
    v, (g, gx, gy) = compiled(value_and_grad, f, params, X, Y, backend=backend)
    assert v == pytest.approx(f(params, X, Y), rel=1e-13)
    _check_params(g, lambda p: f(p, X, Y), params)
    np.testing.assert_allclose(gy, central(lambda y: f(params, X, y), Y), rtol=1e-6,
                               atol=1e-9)
    assert gx.shape == X.shape


@pytest.mark.parametrize("backend", BACKENDS)
def test_fresh_bound_keyword_values_follow(backend):
    """Another delta is another value of the same compiled signature: each call reads
    its own."""
    for delta in (0.3, 2.0):
        f = functools.partial(linear_objective, loss_fn=functools.partial(huber, delta=delta))
        (g, _, _) = compiled(gradient, f, W, X, Y, backend=backend)
        np.testing.assert_allclose(g, central(lambda w: f(w, X, Y), W), rtol=1e-6, atol=1e-9)


def summed_huber(x, p):
    return np.sum(p(2.0 * x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_bound_keyword_is_differentiated_like_a_captured_value(backend):
    x = np.array([0.2, 1.5, -2.0])

    def f(d, x):
        return summed_huber(x, functools.partial(huber, delta=d))
    gd, gx = compiled(gradient, f, 0.7, x, backend=backend)
    assert gd == pytest.approx(central(lambda d: f(d, x), 0.7), rel=1e-6)
    np.testing.assert_allclose(gx, central(lambda x: f(0.7, x), x), rtol=1e-6)
    # a partial argument itself gets no gradient (as a closure argument)
    g = compiled(gradient, summed_huber, x, functools.partial(huber, delta=0.7),
                 backend=backend)
    assert g[1] is None
    np.testing.assert_allclose(g[0], gx, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_mode_through_partials(backend):
    f = functools.partial(linear_objective, loss_fn=functools.partial(huber, delta=0.5),
                          l2=1e-3)
    v = np.array([1.0, -0.5, 0.25])
    y, t = compiled(jvp, f, (W, X, Y), (v, np.zeros_like(X), np.zeros_like(Y)),
                    backend=backend)
    assert y == pytest.approx(f(W, X, Y), rel=1e-13)
    assert t == pytest.approx(np.dot(central(lambda w: f(w, X, Y), W), v), rel=1e-6)

    def g(w):
        return linear_objective(w, X, Y, functools.partial(huber, delta=0.5))
    y, t = compiled(jvp, g, (W,), (v,), backend=backend)
    assert t == pytest.approx(np.dot(central(g, W), v), rel=1e-6)


def keyword_tail(x, a=1.0, b=2.0, *, c=3.0):
    return a * x + b * x * x + c


def test_partial_call_semantics_are_cpythons():
    """Parameters after a keyword-bound one are keyword-only, defaults are kept, and
    passing a bound keyword again is refused (compiled code never overrides it)."""
    from jit import jit
    p = functools.partial(keyword_tail, a=2.0)

    def calls(x, p):
        return p(x) + p(x, b=0.5) + p(x, c=-1.0)
    assert jit(calls)(1.5, p) == calls(1.5, p)
    assert gradient(calls, 1.5, p, backend="llvm")[0] == pytest.approx(
        central(lambda x: calls(x, p), 1.5), rel=1e-7)
    with pytest.raises(Exception):
        jit(lambda x, p: p(x, a=3.0))(1.5, p)


# -- a global config dict read with constant keys ------------------------------------

CONFIG = {"l2": 1e-2, "act": "relu", "scale": 2.0}
SEALED = {"l2": 1e-2, "act": "relu"}     # no function of this module writes into it


def activation(name):
    if name == "relu":
        return lambda z: np.maximum(z, 0.0)
    return np.tanh


def config_loss(w, X):
    h = activation(CONFIG["act"])(X @ w)
    return np.sum(h ** 2) * CONFIG["scale"] + CONFIG["l2"] * np.sum(w ** 2)


def sealed_loss(w, X):
    h = activation(SEALED["act"])(X @ w)
    return np.sum(h ** 2) + SEALED["l2"] * np.sum(w ** 2)


def _grad_matches(f, backend):
    (g, _) = compiled(gradient, f, W, X, backend=backend)
    np.testing.assert_allclose(g, central(lambda w: f(w, X), W), rtol=1e-6, atol=1e-9)
    return g


@pytest.mark.parametrize("backend", BACKENDS)
def test_config_entries_changed_between_calls_are_followed(backend):
    """This module writes into CONFIG (below), so compiled code reads its entries
    when they run; a changed string entry recompiles the branch it decides."""
    try:
        for l2, act, scale in ((1e-2, "relu", 2.0), (0.5, "relu", 3.0), (0.5, "tanh", 3.0)):
            CONFIG["l2"], CONFIG["act"], CONFIG["scale"] = l2, act, scale
            _grad_matches(config_loss, backend)
    finally:
        CONFIG.update(l2=1e-2, act="relu", scale=2.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sealed_config_is_read_as_constants_and_guarded(backend):
    """SEALED is only read by the program: its entries are constants of the compiled
    code, and a change between calls (here through the module's namespace, which no
    load of the name shows) compiles anew."""
    namespace = globals()
    try:
        for l2, act in ((1e-2, "relu"), (0.25, "tanh")):
            namespace["SEALED"]["l2"], namespace["SEALED"]["act"] = l2, act
            _grad_matches(sealed_loss, backend)
    finally:
        namespace["SEALED"].update(l2=1e-2, act="relu")


def set_scale(v):
    CONFIG["scale"] = v
    return v


def loss_writing_its_config(w, X):
    """The loss writes the entry it reads, through a helper: the second read sees the
    new value, as in CPython."""
    a = CONFIG["scale"] * np.sum(w ** 2)
    set_scale(3.0)
    return a + CONFIG["scale"] * np.sum(X @ w)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_write_into_the_config_during_the_call_is_read(backend):
    try:
        CONFIG["scale"] = 2.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # the helper's store may run in Python
            g, _ = gradient(loss_writing_its_config, W, X, backend=backend)
        np.testing.assert_allclose(g, 4.0 * W + 3.0 * X.sum(axis=0), rtol=1e-12)
    finally:
        CONFIG["scale"] = 2.0


FLOATS = {"a": 2.0, "b": 0.5}


def weighted_by(d, w):
    return d["a"] * np.sum(w ** 2) + d["b"] * np.sum(w)


def whole_dict_loss(w):
    return weighted_by(FLOATS, w)      # the dict passed on: guarded entry by entry


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dict_passed_on_follows_changes_between_calls(backend):
    try:
        for a, b in ((2.0, 0.5), (3.0, -1.0)):
            FLOATS["a"], FLOATS["b"] = a, b
            (g,) = compiled(gradient, whole_dict_loss, W, backend=backend)
            np.testing.assert_allclose(g, 2 * a * W + b, rtol=1e-13)
    finally:
        FLOATS.update(a=2.0, b=0.5)


STATS = {"calls": 0, "scale": 1.5}


def counting_loss(w):
    STATS["calls"] += 1
    return STATS["scale"] * np.sum(w ** 2)


def test_a_counter_dict_bumped_per_call_is_live_and_lowers_once():
    import lowering
    gradient(counting_loss, W, backend="interp")
    ir = lowering.lower(counting_loss)
    before = STATS["calls"]
    for _ in range(3):
        (g,) = gradient(counting_loss, W, backend="interp")
        np.testing.assert_allclose(g, 3.0 * W, rtol=1e-13)
    assert STATS["calls"] == before + 3
    assert lowering.lower(counting_loss) is ir       # no guard failed
