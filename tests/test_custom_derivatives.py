"""Derivatives the user controls (`adjoint.custom`): `stop_gradient`, `custom_vjp`,
`custom_jvp` and `jvp_rule`, in reverse and forward mode, inside loops and branches of
an outer differentiated function, in the interpreter and compiled by the JIT (where a
test says compiled, any fallback warning is an error and backend="llvm" refuses
rather than falls back)."""
import warnings

import numpy as np
import pytest

import adjoint
from adjoint import custom_jvp, custom_vjp, jvp_rule, stop_gradient

BACKENDS = ["interp", "llvm"]


@pytest.fixture(autouse=True)
def _no_fallback():
    """A fallback to the interpreter (a warning) fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def central(f, x, h=1e-6):
    """Central differences of scalar f at float or array x."""
    if isinstance(x, float):
        return (f(x + h) - f(x - h)) / (2 * h)
    g = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        g.flat[k] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# -- stop_gradient -------------------------------------------------------------------------
def sg_poly(x):
    return x ** 3 + stop_gradient(x * x) * x


def sg_loop(x):
    s = 0.0
    for i in range(4):
        if i % 2 == 0:
            s = s + stop_gradient(x) * x
        else:
            s = s + x
    return s


def sg_pytree(x):
    a, b = stop_gradient((x, 2.0 * x))
    return np.sum(a * x) + np.sum(b)


def sg_list_dict(x):
    parts = stop_gradient([x, 3.0 * x])
    d = stop_gradient({"w": x * x})
    return parts[1] * x + d["w"] * x


@pytest.mark.parametrize("backend", BACKENDS)
def test_stop_gradient_reverse(backend):
    # d/dx [x^3 + c*x] with c = x^2 held: 3x^2 + x^2
    assert adjoint.gradient(sg_poly, 2.0, backend=backend)[0] == pytest.approx(16.0)
    # two iterations give c*x (c = x held), two give x: 2x + 2
    assert adjoint.gradient(sg_loop, 1.5, backend=backend)[0] == pytest.approx(5.0)
    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(adjoint.gradient(sg_pytree, x, backend=backend)[0], x)
    assert adjoint.gradient(sg_list_dict, 2.0, backend=backend)[0] == pytest.approx(6.0 + 4.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_stop_gradient_forward(backend):
    y, t = adjoint.jvp(sg_poly, (2.0,), (1.0,), backend=backend)
    assert (y, t) == pytest.approx((16.0, 16.0))
    x = np.array([1.0, 2.0])
    jac = adjoint.jacfwd(lambda v: v * stop_gradient(v), x, backend=backend)[0]
    np.testing.assert_allclose(jac, np.diag(x))


def test_stop_gradient_second_order():
    # gradient 3x^2 + x^2 (the held factor's value); its derivative 6x + 0
    assert adjoint.hessian(sg_poly, 2.0) == pytest.approx(12.0)
    v = adjoint.hvp(lambda x: np.sum(x ** 3 + stop_gradient(x ** 2) * x),
                    np.array([1.0, 2.0]), np.array([1.0, 1.0]), backend="interp")
    np.testing.assert_allclose(v, [6.0, 12.0])


def test_stop_gradient_value_is_a_copy():
    x = np.array([1.0, 2.0])
    y = stop_gradient(x)
    np.testing.assert_array_equal(y, x)
    assert y is not x
    assert stop_gradient(3.0) == 3.0




# -- custom_vjp ----------------------------------------------------------------------------
@custom_vjp
def clip_gradient(x, lo, hi):
    """The identity, whose gradient is clipped to [lo, hi]."""
    return x


def clip_fwd(x, lo, hi):
    return x, (lo, hi)


def clip_bwd(res, dy):
    lo, hi = res
    return (np.clip(dy, lo, hi), None, None)


clip_gradient.defvjp(clip_fwd, clip_bwd)


@custom_vjp
def straight_through_round(x):
    return np.floor(x + 0.5)


def str_fwd(x):
    return np.floor(x + 0.5), x.shape


def str_bwd(shape, dy):
    return (dy,)      # the gradient of the identity, not of round's (zero)


straight_through_round.defvjp(str_fwd, str_bwd)


def vjp_loop(x):
    s = 0.0
    for i in range(3):
        y = 4.0 * x
        if i > 0:
            s = s + clip_gradient(y * y, -1.0, 1.0)
        else:
            s = s + y
    return s


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_vjp_rule_is_used(backend):
    # d(x*x)/dx of 16x^2 is 32x; the custom rule clips dy (1.0) to 0.5 before it
    def loss(x):
        return clip_gradient(x, -0.5, 0.5) * 3.0
    assert adjoint.gradient(loss, 2.0, backend=backend)[0] == pytest.approx(0.5)
    # iteration 0: 4; iterations 1 and 2: clip(1) * 32x
    assert adjoint.gradient(vjp_loop, 0.25, backend=backend)[0] == pytest.approx(4 + 2 * 8.0)
    x = np.array([0.2, 1.7, -2.6])
    g = adjoint.gradient(lambda v: np.sum(straight_through_round(v) * v), x, backend=backend)
    np.testing.assert_allclose(g[0], np.floor(x + 0.5) + x)     # d round taken as 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_vjp_pullback_and_jacobian(backend):
    x = np.array([0.5, -3.0])
    y, back = adjoint.pullback(lambda v: clip_gradient(2.0 * v, -1.0, 1.0), x, backend=backend)
    np.testing.assert_allclose(y, 2.0 * x)
    np.testing.assert_allclose(back(np.array([0.25, 5.0]))[0], [0.5, 2.0])
    jac = adjoint.jacobian(lambda v: straight_through_round(v * 3.0), x, backend=backend)[0]
    np.testing.assert_allclose(jac, 3.0 * np.eye(2))


def test_custom_vjp_plain_call_and_forward_mode_refused():
    assert clip_gradient(3.0, 0.0, 1.0) == 3.0
    np.testing.assert_array_equal(straight_through_round(np.array([1.4])), [1.0])
    with pytest.raises(TypeError, match="clip_gradient is a custom_vjp function"):
        adjoint.jvp(lambda x: clip_gradient(x, -1.0, 1.0), (1.0,), (1.0,), backend="interp")


def test_custom_vjp_second_order():
    # inner gradient: clip(3) * 2y = 2y; its derivative 2
    def inner(x):
        return adjoint.gradient(lambda y: clip_gradient(y * y, -1.0, 1.0) * 3.0, x)[0]
    assert adjoint.gradient(inner, 2.0, backend="interp")[0] == pytest.approx(2.0)


@custom_vjp
def scaled(x, y):
    return x * y


def scaled_fwd(x, y):
    return x * y, (x, y)


def bad_count(res, dy):
    return (dy * res[1],)


def bad_shape(res, dy):
    return (dy * res[1], np.ones(3))


def bad_kind(res, dy):
    return [dy * res[1], dy * res[0]]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bwd,message", [
    (bad_count, "bwd bad_count of scaled returned 1 cotangent for 2 arguments"),
    (bad_shape, ("bwd bad_shape of scaled: cotangent 1 (must be an array of shape|has 3 "
                 "entries along axis 0)")),
    (bad_kind, "bwd bad_kind of scaled must return a tuple of 2 cotangents")])
def test_custom_vjp_bad_bwd(backend, bwd, message):
    scaled.defvjp(scaled_fwd, bwd)
    x = np.array([1.0, 2.0])
    with pytest.raises((TypeError, ValueError), match=message):
        adjoint.gradient(lambda a, b: np.sum(scaled(a, b)), x, x.copy(), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_vjp_bad_bwd_for_a_number(backend):
    scaled.defvjp(scaled_fwd, bad_shape)
    with pytest.raises((TypeError, ValueError), match="cotangent 1 must be a number"):
        adjoint.gradient(lambda a, b: scaled(a, b), 1.0, 2.0, backend=backend)


# -- custom_jvp and jvp_rule ---------------------------------------------------------------
@custom_jvp
def softplus(x):
    return np.log1p(np.exp(x))


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t * sigmoid(x)


@custom_jvp
def weighted(x, w):
    return x * w


@weighted.defjvp
def weighted_jvp(primals, tangents):
    (x, w), (tx, tw) = primals, tangents
    return x * w, 2.0 * tx * w + tw * x      # deliberately twice the true dx term


def jvp_loop(x):
    s = 0.0
    for i in range(3):
        if i != 1:
            s = s + softplus(x * float(i + 1))
    return s


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_jvp_forward(backend):
    y, t = adjoint.jvp(jvp_loop, (0.3,), (1.0,), backend=backend)
    assert y == pytest.approx(jvp_loop(0.3))
    assert t == pytest.approx(central(jvp_loop, 0.3))
    x = np.array([0.5, -1.0])
    jac = adjoint.jacfwd(softplus, x, backend=backend)[0]
    np.testing.assert_allclose(jac, np.diag(sigmoid(x)))
    # the rule, not the function, is differentiated: twice the true x term
    _, t = adjoint.jvp(weighted, (3.0, 5.0), (1.0, 0.0), backend=backend)
    assert t == pytest.approx(10.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_jvp_reverse_by_transposition(backend):
    assert adjoint.gradient(jvp_loop, 0.3, backend=backend)[0] == \
        pytest.approx(central(jvp_loop, 0.3), rel=1e-6)
    x = np.array([0.5, -1.0, 2.0])
    g = adjoint.gradient(lambda v: np.sum(softplus(v) ** 2), x, backend=backend)[0]
    np.testing.assert_allclose(g, 2 * softplus(x) * sigmoid(x), rtol=1e-12)
    gx, gw = adjoint.gradient(weighted, 3.0, 5.0, backend=backend)
    assert (gx, gw) == pytest.approx((10.0, 3.0))
    jac = adjoint.jacobian(softplus, x, backend=backend)[0]
    np.testing.assert_allclose(jac, np.diag(sigmoid(x)))


def test_custom_jvp_second_order():
    want = sigmoid(0.5) * (1 - sigmoid(0.5))
    assert adjoint.hessian(softplus, 0.5) == pytest.approx(want)
    v = adjoint.hvp(lambda x: np.sum(softplus(x)), np.array([0.5, 1.0]), np.array([1.0, 0.0]),
                    backend="interp")
    np.testing.assert_allclose(v, [want, 0.0])


def test_custom_jvp_bad_rule():
    @custom_jvp
    def f(x):
        return x * 2.0

    @f.defjvp
    def f_jvp(primals, tangents):
        return primals[0] * 2.0, np.ones(3)
    with pytest.raises(ValueError, match="jvp rule .*f_jvp of .*f: ydot must be a number"):
        adjoint.jvp(f, (1.0,), (1.0,), backend="interp")


def cube(x):
    return x * x * x


@adjoint.rule(cube)
def d_cube(dy, x):
    return (dy * 3.0 * x * x,)


@jvp_rule(cube)
def cube_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return cube(x), 3.0 * x * x * t


def test_jvp_rule_alongside_a_reverse_rule():
    assert d_cube.__name__ == "d_cube"
    for backend in BACKENDS:
        assert adjoint.gradient(lambda x: cube(x) + x, 2.0, backend=backend)[0] == \
            pytest.approx(13.0)
        y, t = adjoint.jvp(lambda x: cube(x) + x, (2.0,), (1.0,), backend=backend)
        assert (y, t) == pytest.approx((10.0, 13.0))
    assert "cube_jvp" in str(adjoint.code_tangent(lambda x: cube(x), 2.0))


def test_custom_decorators_refuse_keyword_only_parameters():
    def f(x, *, k=1.0):
        return x * k
    with pytest.raises(TypeError, match="positional parameters only"):
        custom_vjp(f)
    with pytest.raises(TypeError, match="positional parameters only"):
        custom_jvp(f)


def make_scaled_pair(scale):
    """A custom_vjp and a custom_jvp function whose rules are closures."""
    @custom_vjp
    def up(x):
        return x * scale

    def up_fwd(x):
        return x * scale, (x,)

    def up_bwd(res, dy):
        return (dy * scale * 10.0 + res[0],)
    up.defvjp(up_fwd, up_bwd)

    @custom_jvp
    def down(x):
        return x / scale

    @down.defjvp
    def down_jvp(primals, tangents):
        return primals[0] / scale, tangents[0] * 10.0 / scale
    return up, down


@pytest.mark.parametrize("backend", BACKENDS)
def test_rules_that_are_closures(backend):
    up, down = make_scaled_pair(2.0)
    assert adjoint.gradient(lambda x: up(x) + 1.0, 1.5, backend=backend)[0] == \
        pytest.approx(20.0 + 1.5)
    assert adjoint.jvp(lambda x: down(x) * 3.0, (1.0,), (1.0,), backend=backend) == \
        pytest.approx((1.5, 15.0))
    assert adjoint.gradient(lambda x: down(x) * 3.0, 1.0, backend=backend)[0] == \
        pytest.approx(15.0)


def test_redefining_a_rule_takes_effect():
    @custom_vjp
    def f(x):
        return 2.0 * x

    def outer(x):
        return f(x) * 3.0
    for backend in BACKENDS:
        for factor in (100.0, 7.0):
            f.defvjp(lambda x: (2.0 * x, ()), lambda res, dy, k=factor: (dy * k,))
            y, (g,) = adjoint.value_and_grad(outer, 1.0, backend=backend)
            assert (y, g) == pytest.approx((6.0, 3.0 * factor))


# -- a user's function may return its argument: later writes must not reach the tape -------
@custom_vjp
def passthrough(x):
    return x


passthrough.defvjp(lambda x: (x, (x,)), lambda res, dy: (dy * res[0],))


def write_after_custom_vjp(x):
    a = x * 1.0
    s = np.sum(passthrough(a))        # fwd returns `a` itself, as y and as a residual
    a[0] = 100.0                      # ... which this write changes
    return s + np.sum(a * a)


def same_object(x):
    return x


@adjoint.rule(same_object)
def d_same_object(dy, x):
    return (dy,)


def write_after_rule(x):
    a = x * 1.0
    b = same_object(a)
    c = b * b                        # records b, which is a
    a[0] = 100.0
    return np.sum(c)


@pytest.mark.parametrize("backend", BACKENDS)
def test_writes_after_a_call_that_returns_its_argument(backend):
    x = np.array([1.0, 2.0])
    # the residual is x as it was at the call (JAX's semantics): dy * x; then 2a for a[1]
    np.testing.assert_allclose(adjoint.gradient(write_after_custom_vjp, x, backend=backend)[0],
                               [1.0, 2.0 + 4.0])
    np.testing.assert_allclose(adjoint.gradient(write_after_rule, x, backend=backend)[0], 2 * x)


def test_custom_jvp_reverse_refuses_what_it_cannot_transpose():
    @custom_jvp
    def f(d):
        return d["a"] * 2.0

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), tangents[0]["a"] * 2.0
    assert adjoint.jvp(f, ({"a": 1.0},), ({"a": 1.0},), backend="interp")[1] == 2.0
    with pytest.raises(TypeError, match="does not support dict arguments yet"):
        adjoint.gradient(f, {"a": 1.0}, backend="interp")


@custom_vjp
def two_outputs(x, s=2.0):
    return x * s, x + s


def two_outputs_fwd(x, s=2.0):
    return (x * s, x + s), (s,)


def two_outputs_bwd(res, dy):
    a, b = dy              # b is zeros where the second output is unused, as in JAX
    return (a * res[0] + b, None)


two_outputs.defvjp(two_outputs_fwd, two_outputs_bwd)


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_vjp_outputs_a_tuple_and_takes_keywords(backend):
    def loss(x):
        p, q = two_outputs(x, s=3.0)
        r, _ = two_outputs(x)            # only the first output used
        return np.sum(p * q) + np.sum(r)
    x = np.array([1.0, 2.0])
    want = (x + 3.0) * 3.0 + x * 3.0 + 2.0
    np.testing.assert_allclose(adjoint.gradient(loss, x, backend=backend)[0], want)
    loss_s = lambda v: two_outputs(v, 3.0)[1] * 2.0
    assert adjoint.gradient(loss_s, 1.0, backend=backend)[0] == pytest.approx(2.0)


def test_plain_jit_compiles_them():
    from jit import jit
    f = jit(lambda x: stop_gradient(x) * 2.0 + clip_gradient(x, -1.0, 1.0) + softplus(x)
            + two_outputs(x)[1])
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(f(x), 3.0 * x + np.log1p(np.exp(x)) + x + 2.0)
