"""Issue 29 (1): dataclasses, named tuples and user objects are pytrees.  Their float
and array attributes are differentiated, and the gradient comes back in the argument's
own type (a dataclass, a named tuple; a `types.SimpleNamespace` for other objects),
where it used to be a silent None.  Checked against central differences."""
import types
import warnings
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
import pytest

from adjoint import gradient, pullback, value_and_grad

BACKENDS = ("interp", "auto")
H = 1e-6


@dataclass
class Point:
    x: float
    y: float


@dataclass(frozen=True)
class Layer:
    W: np.ndarray
    b: np.ndarray
    width: int = 3
    name: str = "dense"


Pair = namedtuple("Pair", "w s")


class Model:
    def __init__(self, scale, steps):
        self.scale = scale
        self.steps = steps


def _run(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # auto may fall back to the interpreter
        return fn(*args, **kw)


def _fd_scalar(f, make, v):
    return (f(make(v + H)) - f(make(v - H))) / (2 * H)


def _fd_array(f, make, a):
    out = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += H
        down[i] -= H
        out[i] = (f(make(up)) - f(make(down))) / (2 * H)
    return out


def point_loss(pt):
    return pt.x * pt.y + np.sin(pt.x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dataclass_of_floats_gets_a_dataclass_gradient(backend):
    (g,) = _run(gradient, point_loss, Point(3.0, 5.0), backend=backend)
    assert type(g) is Point
    assert g.x == pytest.approx(5.0 + np.cos(3.0)) and g.y == pytest.approx(3.0)
    y, (g2,) = _run(value_and_grad, point_loss, Point(3.0, 5.0), backend=backend)
    assert y == pytest.approx(point_loss(Point(3.0, 5.0))) and g2 == g
    assert g.x == pytest.approx(_fd_scalar(point_loss, lambda v: Point(v, 5.0), 3.0))


def layer_loss(layer, x):
    return np.sum(np.tanh(layer.W @ x + layer.b)) * layer.width


@pytest.mark.parametrize("backend", BACKENDS)
def test_frozen_dataclass_of_arrays_in_a_dict(backend):
    rng = np.random.default_rng(0)
    layer = Layer(rng.normal(size=(3, 2)), rng.normal(size=3))
    x = rng.normal(size=2)

    def loss(params, x):
        return layer_loss(params["layer"], x) + params["c"] ** 2

    (gp, gx) = _run(gradient, loss, {"layer": layer, "c": 1.5, "n": 4}, x, backend=backend)
    gl = gp["layer"]
    assert type(gl) is Layer and gl.width is None and gl.name is None and gp["n"] is None
    assert gp["c"] == pytest.approx(3.0)
    fd_w = _fd_array(lambda L: layer_loss(L, x), lambda W: Layer(W, layer.b), layer.W)
    fd_b = _fd_array(lambda L: layer_loss(L, x), lambda b: Layer(layer.W, b), layer.b)
    np.testing.assert_allclose(gl.W, fd_w, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gl.b, fd_b, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gx, _fd_array(lambda v: layer_loss(layer, v), lambda v: v, x),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dataclasses_nested_in_lists_and_tuples(backend):
    def loss(pts, pair):
        return pts[0].x * pts[1].y + pair[0].x ** 3

    g = _run(gradient, loss, [Point(1.0, 2.0), Point(4.0, 7.0)], (Point(2.0, 0.5),),
             backend=backend)
    assert g[0] == [Point(7.0, 0.0), Point(0.0, 1.0)]
    assert g[1] == (Point(12.0, 0.0),)


def pair_attr(p):
    return np.sum(p.w * p.w) * p.s


def pair_index(p):
    return np.sum(p[0] * p[0]) * p[1]


def pair_both(p):
    return np.sum(p.w * p[0]) * p.s


@pytest.mark.parametrize("backend", BACKENDS + ("llvm",))
@pytest.mark.parametrize("f", [pair_attr, pair_index, pair_both], ids=lambda f: f.__name__)
def test_namedtuple_attribute_and_index_reads(f, backend):
    if backend == "llvm" and f is not pair_index:
        pytest.skip("the JIT does not compile a named tuple's attribute reads yet")
    w = np.array([1.0, -2.0, 0.5])
    (g,) = _run(gradient, f, Pair(w, 1.5), backend=backend)
    assert type(g) is Pair
    np.testing.assert_allclose(g.w, 2 * w * 1.5)
    assert g.s == pytest.approx(np.sum(w * w))
    np.testing.assert_allclose(g.w, _fd_array(f, lambda v: Pair(v, 1.5), w), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS + ("llvm",))
def test_namedtuple_of_floats_compiled_and_interpreted(backend):
    def mul(p):
        return p[0] * p[1] * p[1]
    for _ in range(2):       # the second call takes the compiled shortcut
        (g,) = _run(gradient, mul, Pair(2.0, 3.0), backend=backend)
        assert g == Pair(9.0, 12.0) and type(g) is Pair


@pytest.mark.parametrize("backend", BACKENDS)
def test_user_object_gets_a_namespace_of_attribute_gradients(backend):
    def loss(m, x):
        return m.scale * m.scale * x * m.steps

    gm, gx = _run(gradient, loss, Model(2.0, 3), 5.0, backend=backend)
    assert isinstance(gm, types.SimpleNamespace)
    assert gm.scale == pytest.approx(2 * 2.0 * 5.0 * 3) and gm.steps is None
    assert gx == pytest.approx(12.0)


def test_a_property_differentiates_through_its_getter():
    @dataclass
    class Polar:
        r: float

        @property
        def area(self):
            return self.r * self.r

    (g,) = gradient(lambda p: p.area, Polar(2.0), backend="interp")
    assert g.r == pytest.approx(4.0)


def test_a_class_constant_is_a_constant():
    # `gain`, set in the class body, is shared by every instance: not a part of the
    # object, so it gets no gradient entry and the instance's own `r` gets gain * dy
    class Scaled:
        gain = 3.0

        def __init__(self, r):
            self.r = r

    (g,) = pullback(lambda p: p.gain * p.r, Scaled(2.0), backend="interp")[1](1.0)
    assert vars(g) == {"r": 3.0}


@pytest.mark.parametrize("backend", BACKENDS)
def test_functions_returning_a_dataclass_or_namedtuple(backend):
    def make_point(a, b):
        return Point(a * b, a + b)

    def make_pair(a, b):
        return Pair(np.sin(a) * b, a - b)

    y, back = _run(pullback, make_point, 2.0, 3.0, backend=backend)
    assert y == Point(6.0, 5.0)
    assert back(Point(1.0, 10.0)) == pytest.approx((3.0 + 10.0, 2.0 + 10.0))
    y, back = _run(pullback, make_pair, 0.5, 3.0, backend=backend)
    assert type(y) is Pair
    ga, gb = back(Pair(2.0, 1.0))
    assert ga == pytest.approx(2.0 * np.cos(0.5) * 3.0 + 1.0)
    assert gb == pytest.approx(2.0 * np.sin(0.5) - 1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dataclass_built_and_read_inside_the_loss(backend):
    def loss(a, b):
        p = Point(a, b * b)
        q = Point(p.x + 1.0, p.y)
        return q.x * q.y

    (ga, gb) = _run(gradient, loss, 2.0, 3.0, backend=backend)
    assert ga == pytest.approx(9.0) and gb == pytest.approx(2 * 3.0 * 3.0)


def test_a_field_named_like_an_array_shape_attribute_is_refused_not_zeroed():
    @dataclass
    class Box:
        size: float
        T: float

    with pytest.raises(TypeError, match="attribute 'size' of a Box"):
        gradient(lambda b: b.size * b.T, Box(3.0, 5.0), backend="interp")
    (g,) = gradient(lambda b: b.T * b.T, Box(3, 5.0), backend="interp")   # an int size
    assert g.T == pytest.approx(10.0) and g.size is None


def test_jacobian_of_an_object_argument_is_refused_clearly():
    from adjoint import jacobian
    with pytest.raises(TypeError, match="jacobian of a Point argument"):
        jacobian(point_loss, Point(1.0, 2.0), backend="interp")


@dataclass
class Segment:
    a: Point
    b: Point


def _area(p):
    return p.x * p.y


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_dataclasses_through_helpers_loops_and_branches(backend):
    def loss(s):
        t = _area(s.a) + s.b.x ** 2
        for p in (s.a, s.b):
            t = t + (p.y if p.x > 0 else p.x) * p.x
        return t

    seg = Segment(Point(1.0, 2.0), Point(-3.0, 4.0))
    (g,) = _run(gradient, loss, seg, backend=backend)
    assert type(g) is Segment and type(g.a) is Point
    assert (g.a.x, g.a.y) == pytest.approx((2.0 + 2.0, 1.0 + 1.0))
    assert (g.b.x, g.b.y) == pytest.approx((-6.0 - 6.0, 0.0))
    fd = _fd_scalar(loss, lambda v: Segment(Point(1.0, 2.0), Point(v, 4.0)), -3.0)
    assert g.b.x == pytest.approx(fd, rel=1e-6)


class _Quadratic:
    def __init__(self, w):
        self.w = w

    def predict(self, x):
        return self.w * x * x


def _method_loss(m, x):
    return m.predict(x) + m.w


def test_a_method_of_a_user_object_differentiates_with_self_as_an_argument():
    """`m.predict(x)` is `_Quadratic.predict(m, x)`: `self`'s attributes get their share."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for backend in ("interp", "auto"):
            gm, gx = gradient(_method_loss, _Quadratic(2.0), 3.0, backend=backend)
            assert gm.w == 3.0 * 3.0 + 1.0 and gx == 2.0 * 2.0 * 3.0


# -- a gradient of a gradient over a record ------------------------------------------------
# (compiled: forward mode's `p.w` of a record's tangent is decided by the types; the
# nested gradient's cotangent of a dataclass came back as the dataclass itself, which
# the API read as no cotangent at all: a silent zero)
WeightPair = namedtuple("WeightPair", "w b")


@dataclass
class WeightClass:
    w: np.ndarray
    b: float


def cubic_record_loss(p):
    return np.sum(p.w ** 3) + p.b ** 3 * np.sum(p.w)


def gradient_terms(p):
    g = gradient(cubic_record_loss, p)[0]
    return g.b * np.sum(p.w) + np.sum(g.w * p.w) + p.b


def _record_fd(f, p, make):
    up, down = f(make(p.w, p.b + H)), f(make(p.w, p.b - H))
    db = (up - down) / (2 * H)
    dw = np.array([(f(make(p.w + H * e, p.b)) - f(make(p.w - H * e, p.b))) / (2 * H)
                   for e in np.eye(len(p.w))])
    return dw, db


@pytest.mark.parametrize("make, backends", [(WeightPair, ("interp", "llvm")),
                                            (WeightClass, ("llvm",))])
def test_gradient_of_a_gradient_over_a_record(make, backends):
    p = make(np.array([1.0, 2.0]), 0.5)
    dw, db = _record_fd(gradient_terms, p, make)
    for backend in backends:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            (g,) = gradient(gradient_terms, p, backend=backend)
        assert type(g) is make
        np.testing.assert_allclose(g.w, dw, rtol=1e-6)
        assert np.isclose(g.b, db, rtol=1e-6)
