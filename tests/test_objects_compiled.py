"""Issue 29 (1): objects are values in every backend.  Attribute reads of dataclasses,
named tuples and user objects, their methods, `__call__`, properties, a bound method as
`f`, and functions reached through a namespace or a class compile in the llvm backend
(asserted: a fallback warning is an error here) and differentiate as the interpreter
does, checked against central differences."""
import collections
import dataclasses
import types
import warnings

import numpy as np
import pytest

import adjoint
from adjoint import gradient, jvp, pullback, value_and_grad
from jit import jit
from jit.types import TypingError

BACKENDS = ["interp", "llvm"]
H = 1e-6


def compiled(fn, *args, **kw):
    """`fn(*args, **kw)` where any fallback to the interpreter is an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kw)


def fd(f, x):
    """Central differences of scalar `f` at a float or an array `x`."""
    if isinstance(x, float):
        return (f(x + H) - f(x - H)) / (2 * H)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += H
        down[i] -= H
        out[i] = (f(up) - f(down)) / (2 * H)
    return out


@dataclasses.dataclass
class Point:
    x: float
    y: float


@dataclasses.dataclass(frozen=True)
class Dense:
    W: np.ndarray
    b: np.ndarray
    width: int = 3
    act: str = "tanh"

    def __call__(self, x):
        z = self.W @ x + self.b
        return np.tanh(z) if self.act == "tanh" else z

    def apply(self, x, scale=1.0):
        return scale * self(x)

    @property
    def fan_in(self):
        return self.W.shape[1]

    @property
    def total(self):
        return np.sum(self.W) + np.sum(self.b)


Pair = collections.namedtuple("Pair", "w s")


@dataclasses.dataclass
class Model:
    first: Dense
    second: Dense
    weights: list
    lr: float

    def loss(self, x):
        h = self.first.apply(x)
        return np.sum(self.second.apply(h, 2.0)) * self.weights[1] + self.lr * self.weights[0]


class Scaler:
    """A plain class: methods, `__call__`, a class-level helper."""

    def __init__(self, gain, offset):
        self.gain = gain
        self.offset = offset

    def __call__(self, x):
        return self.gain * x + self.offset

    def energy(self, x):
        return np.sum(self(x) ** 2)

    @staticmethod
    def square(v):
        return v * v


RNG = np.random.default_rng(3)
X = RNG.normal(size=2)


def _dense(rows, cols):
    return Dense(RNG.normal(size=(rows, cols)), RNG.normal(size=rows))


MODEL = Model(_dense(3, 2), _dense(2, 3), [0.7, 1.3], 0.25)


# -- dataclasses and named tuples --------------------------------------------------------------
def point_loss(pt):
    return pt.x * pt.y + np.sin(pt.x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dataclass_attribute_reads_differentiate(backend):
    (g,) = compiled(gradient, point_loss, Point(3.0, 5.0), backend=backend)
    assert type(g) is Point
    assert g.x == pytest.approx(fd(lambda v: point_loss(Point(v, 5.0)), 3.0), rel=1e-6)
    assert g.y == pytest.approx(3.0, rel=1e-6)


def dense_loss(layer, x):
    return np.sum(layer(x) * layer.b) + layer.width


@pytest.mark.parametrize("backend", BACKENDS)
def test_frozen_dataclass_with_arrays_and_constant_fields(backend):
    layer = _dense(3, 2)
    gl, gx = compiled(gradient, dense_loss, layer, X, backend=backend)
    assert type(gl) is Dense and gl.width is None and gl.act is None
    assert np.allclose(gl.W, fd(lambda W: dense_loss(Dense(W, layer.b), X), layer.W), atol=1e-6)
    assert np.allclose(gl.b, fd(lambda b: dense_loss(Dense(layer.W, b), X), layer.b), atol=1e-6)
    assert np.allclose(gx, fd(lambda x: dense_loss(layer, x), X), atol=1e-6)


def pair_loss(p, x):
    return np.sum(p.w * x) * p.s + p[1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_namedtuple_fields_and_indices(backend):
    p = Pair(np.array([1.0, -2.0]), 0.5)
    gp, gx = compiled(gradient, pair_loss, p, X, backend=backend)
    assert type(gp) is Pair
    assert np.allclose(gp.w, fd(lambda w: pair_loss(Pair(w, 0.5), X), p.w), atol=1e-6)
    assert gp.s == pytest.approx(fd(lambda s: pair_loss(Pair(p.w, s), X), 0.5), rel=1e-6)
    assert np.allclose(gx, p.w * p.s)


def rebuilt_loss(p, x):
    q = Pair(p.w * x, p.s + x)              # built in compiled code, read back
    pt = Point(q.s, np.sum(q.w))
    return pt.x * pt.y


@pytest.mark.parametrize("backend", BACKENDS)
def test_objects_built_and_returned_in_compiled_code(backend):
    p = Pair(np.array([1.0, -2.0]), 0.5)
    gp, gx = compiled(gradient, rebuilt_loss, p, 0.3, backend=backend)
    assert np.allclose(gp.w, fd(lambda w: rebuilt_loss(Pair(w, 0.5), 0.3), p.w), atol=1e-6)
    assert gx == pytest.approx(fd(lambda x: rebuilt_loss(p, x), 0.3), rel=1e-6)
    y, back = compiled(pullback, lambda a: Point(a * a, 2.0 * a), 1.5, backend=backend)
    assert type(y) is Point and y == Point(2.25, 3.0)
    assert back(Point(1.0, 1.0))[0] == pytest.approx(5.0)
    assert compiled(jit(lambda a: Pair(a, a + 1.0)), 2.0) == Pair(2.0, 3.0)


# -- methods, __call__, properties, nested objects ----------------------------------------------
def model_loss(m, x):
    return m.loss(x) + m.first.fan_in


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_objects_with_methods_and_list_fields(backend):
    gm, gx = compiled(gradient, model_loss, MODEL, X, backend=backend)
    first, second = MODEL.first, MODEL.second

    def with_W1(W):
        return model_loss(dataclasses.replace(MODEL, first=Dense(W, first.b)), X)

    def with_w(w0):
        return model_loss(dataclasses.replace(MODEL, weights=[w0, 1.3]), X)

    assert type(gm) is Model and type(gm.first) is Dense
    assert np.allclose(gm.first.W, fd(with_W1, first.W), atol=1e-5)
    assert np.allclose(gm.second.b, fd(lambda b: model_loss(
        dataclasses.replace(MODEL, second=Dense(second.W, b)), X), second.b), atol=1e-5)
    assert gm.weights[0] == pytest.approx(fd(with_w, 0.7), rel=1e-5)
    assert gm.lr == pytest.approx(0.7)
    assert np.allclose(gx, fd(lambda x: model_loss(MODEL, x), X), atol=1e-5)


def scaler_loss(s, x):
    return s.energy(x) + np.sum(Scaler.square(x)) + np.sum(s.square(x)) * s.gain


@pytest.mark.parametrize("backend", BACKENDS)
def test_plain_class_methods_call_and_staticmethod(backend):
    s = Scaler(1.5, 0.25)
    gs, gx = compiled(gradient, scaler_loss, s, X, backend=backend)
    assert isinstance(gs, types.SimpleNamespace)
    assert gs.gain == pytest.approx(fd(lambda g: scaler_loss(Scaler(g, 0.25), X), 1.5), rel=1e-6)
    assert gs.offset == pytest.approx(fd(lambda o: scaler_loss(Scaler(1.5, o), X), 0.25),
                                      rel=1e-6)
    assert np.allclose(gx, fd(lambda x: scaler_loss(s, x), X), atol=1e-5)


def property_loss(d, x):
    return d.total * np.sum(x) + d.fan_in


@pytest.mark.parametrize("backend", BACKENDS)
def test_properties_compile_and_differentiate(backend):
    layer = _dense(3, 2)
    gl, gx = compiled(gradient, property_loss, layer, X, backend=backend)
    assert np.allclose(gl.W, np.sum(X)) and np.allclose(gl.b, np.sum(X))
    assert np.allclose(gx, layer.W.sum() + layer.b.sum())
    assert compiled(jit(property_loss), layer, X) == pytest.approx(property_loss(layer, X))


def test_jit_compiles_objects_and_specialises_on_their_structure():
    f = jit(lambda p: p.x * p.y)
    assert compiled(f, Point(2.0, 3.0)) == 6.0
    assert np.allclose(compiled(f, Point(np.array([1.0, 2.0]), 3.0)), [3.0, 6.0])
    built = jit(lambda m, x: m.loss(x))
    assert compiled(built, MODEL, X) == pytest.approx(MODEL.loss(X))


# -- a bound method as f ------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_bound_method_is_a_function(backend):
    s = Scaler(1.5, 0.25)
    (g,) = compiled(gradient, s.energy, X, backend=backend)
    want = fd(s.energy, X)
    assert np.allclose(g, want, atol=1e-5)
    y, back = compiled(pullback, s.energy, X, backend=backend)
    assert y == pytest.approx(s.energy(X)) and np.allclose(back(1.0)[0], want, atol=1e-5)
    v, (g2,) = compiled(value_and_grad, s.energy, X, backend=backend)
    assert np.allclose(g2, want, atol=1e-5)
    t = np.array([1.0, -1.0])
    _, tangent = compiled(jvp, s.energy, (X,), (t,), backend=backend)
    assert tangent == pytest.approx(float(want @ t), rel=1e-5)
    assert compiled(jit(s.energy), X) == pytest.approx(s.energy(X))


# -- functions reached through attributes -------------------------------------------------------
def _logpdf(x, m, s):
    return -0.5 * ((x - m) / s) ** 2 - np.log(s)


def _logpdf_wide(x, m, s):
    return -0.5 * ((x - m) / (2.0 * s)) ** 2


norm = types.SimpleNamespace(logpdf=_logpdf, scale=2.0)


class Dist:
    logpdf = staticmethod(_logpdf)


def namespace_loss(m):
    return np.sum(norm.logpdf(X, m, 1.5)) * norm.scale


def class_loss(m):
    return np.sum(Dist.logpdf(X, m, 1.5))


@pytest.mark.parametrize("backend", BACKENDS)
def test_function_through_a_namespace_and_a_staticmethod(backend):
    for loss in (namespace_loss, class_loss):
        (g,) = compiled(gradient, loss, 0.3, backend=backend)
        assert g == pytest.approx(fd(loss, 0.3), rel=1e-6)
    assert compiled(jit(namespace_loss), 0.3) == pytest.approx(namespace_loss(0.3))


@pytest.mark.parametrize("backend", BACKENDS)
def test_global_namespace_rebound_between_calls(backend):
    global norm
    saved = norm
    try:
        compiled(gradient, namespace_loss, 0.3, backend=backend)
        norm = types.SimpleNamespace(logpdf=_logpdf_wide, scale=3.0)   # the global
        (g,) = compiled(gradient, namespace_loss, 0.3, backend=backend)
        assert g == pytest.approx(fd(namespace_loss, 0.3), rel=1e-6)
        norm.scale = 0.5                                                # an attribute
        (g,) = compiled(gradient, namespace_loss, 0.3, backend=backend)
        assert g == pytest.approx(fd(namespace_loss, 0.3), rel=1e-6)
        assert compiled(jit(namespace_loss), 0.3) == pytest.approx(namespace_loss(0.3))
    finally:
        norm = saved


# -- a class registered as a pytree -------------------------------------------------------------
class Params:
    """Attributes served by `__getattr__` from a dict: no stored attributes to read."""

    def __init__(self, values):
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None


def params_loss(p, x):
    return np.sum(p.w * x) + p.b * p.b


def test_unregistered_proxy_class_names_the_registration_hook():
    with pytest.raises(TypeError, match="register_pytree_node"):
        gradient(params_loss, Params({"w": np.ones(2), "b": 2.0}), X, backend="interp")


@pytest.mark.parametrize("backend", BACKENDS)
def test_registered_class(backend):
    adjoint.register_pytree_node(Params, lambda p: (dict(p._values), None),
                                 lambda aux, children: Params(children))
    p = Params({"w": np.array([0.5, -1.0]), "b": 2.0})
    gp, gx = compiled(gradient, params_loss, p, X, backend=backend)
    assert type(gp) is Params
    assert np.allclose(gp.w, X) and gp.b == pytest.approx(4.0)
    assert np.allclose(gx, fd(lambda x: params_loss(p, x), X), atol=1e-6)


# -- what is refused ----------------------------------------------------------------------------
def bump(pt, v):
    pt.x = pt.x + v
    return pt.x * pt.y


def index_point(pt):
    return pt[0]


def test_attribute_write_is_refused_naming_the_line():
    with pytest.raises(Exception, match=r"attribute assignment.*test_objects_compiled\.py:\d+"):
        gradient(bump, Point(1.0, 2.0), 3.0, backend="llvm")


def test_indexing_a_dataclass_is_refused_as_in_cpython():
    with pytest.raises(TypingError, match="not subscriptable"):
        gradient(index_point, Point(1.0, 2.0), backend="llvm")


GAIN = 2.0


@dataclasses.dataclass
class Gained:
    w: float

    def loss(self, x):
        return GAIN * self.w * x


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_method_sees_a_global_rebound_between_calls(backend):
    global GAIN
    outer = Model(None, None, [Gained(1.5)], 0.0)

    def f(m, x):
        return m.weights[0].loss(x)
    try:
        assert compiled(gradient, f, outer, 2.0, backend=backend)[1] == pytest.approx(3.0)
        GAIN = 5.0
        assert compiled(gradient, f, outer, 2.0, backend=backend)[1] == pytest.approx(7.5)
    finally:
        GAIN = 2.0
