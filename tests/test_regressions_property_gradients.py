"""Gradients through `@property` (and `functools.cached_property`), checked against
central differences on the interpreter and compiled.

Regressions: compiled reverse mode gave a zero gradient where a property was the only
path to the object (its pullback returned `gradient`'s object, not the cotangent);
the interpreter passed a named tuple's property cotangent through as the tuple's own,
and dropped a cached_property's."""
import collections
import functools
import warnings
from dataclasses import dataclass

import numpy as np
import pytest

from adjoint.api import gradient, pullback, value_and_grad
from jit import TypingError


@dataclass
class Sq:
    w: np.ndarray
    b: float

    @property
    def energy(self):
        return np.sum(self.w ** 2) * self.b

    @property
    def scaled(self):
        return self.w * self.b

    def helper(self):
        return np.sum(np.sin(self.w))

    @property
    def via_method(self):
        return self.helper() * self.b

    @property
    def pair(self):
        return (self.b, 2.0 * self.b)


class Plain:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    @property
    def energy(self):
        return np.sum(self.w ** 3) + self.b


class Pt(collections.namedtuple("Pt", "w b")):
    @property
    def energy(self):
        return np.sum(self.w * self.w) * self.b


@dataclass
class Layer:
    w: np.ndarray

    @property
    def norm(self):
        return np.sqrt(np.sum(self.w ** 2))


@dataclass
class Model:
    layer: Layer
    c: float

    @property
    def total(self):
        return self.layer.norm * self.c


class Cached:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    @functools.cached_property
    def energy(self):
        return np.sum(self.w ** 2) * self.b


W = np.array([0.3, -1.2, 0.7])
THETA = np.array([0.3, -1.2, 0.7, 1.3, 0.8])     # w, b, x


def _loop(q, x):
    s = 0.0
    for _ in range(3):
        s = s * x + q.energy
    return s


# name -> (f(obj, x), obj from (w, b)); every f is differentiated in obj and x
CASES = {
    "only the property": (lambda q, x: q.energy, lambda w, b: Sq(w, b)),
    "array property": (lambda q, x: np.sum(q.scaled * q.w) * x, lambda w, b: Sq(w, b)),
    "property calls a method": (lambda q, x: q.via_method * x, lambda w, b: Sq(w, b)),
    "read twice": (lambda q, x: q.energy * x + q.energy * q.energy, lambda w, b: Sq(w, b)),
    "in a loop": (_loop, lambda w, b: Sq(w, b)),
    "plain class": (lambda q, x: q.energy * x, lambda w, b: Plain(w, b)),
    "named tuple": (lambda q, x: q.energy * x, lambda w, b: Pt(w, b)),
    "nested object": (lambda m, x: m.layer.norm * x + m.total,
                      lambda w, b: Model(Layer(w), b)),
}


def _flat(g, x):
    """The gradient `g` of object `x` as (w, b) entries (zeros where None)."""
    if isinstance(x, Model):
        return np.concatenate([np.ravel(g.layer.w), [g.c]])
    return np.concatenate([np.ravel(g.w), [g.b]])


def _central(f, make, theta, h=1e-6):
    def at(t):
        return f(make(t[:3].copy(), t[3]), t[4])
    return np.array([(at(theta + h * e) - at(theta - h * e)) / (2 * h)
                     for e in np.eye(len(theta))])


def _args(make, theta=THETA):
    return make(theta[:3].copy(), theta[3]), theta[4]


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("name", list(CASES))
def test_gradient_through_a_property(name, backend):
    f, make = CASES[name]
    obj, x = _args(make)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # compiled: no fallback
        gq, gx = gradient(f, obj, x, backend=backend)
    got = np.concatenate([_flat(gq, obj), [gx]])
    np.testing.assert_allclose(got, _central(f, make, THETA), rtol=1e-6, atol=1e-7)


def test_the_reported_case_compiled_with_auto():
    def fp(q, x):
        return q.energy * x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gq, gx = gradient(fp, Sq(np.array([1.0, 2.0]), 1.0), 2.0)
    np.testing.assert_allclose(gq.w, [4.0, 8.0])
    assert gq.b == pytest.approx(10.0) and gx == pytest.approx(5.0)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_pullback_with_a_non_unit_cotangent(backend):
    f, make = CASES["nested object"]
    obj, x = _args(make)
    y, back = pullback(f, obj, x, backend=backend)
    assert y == pytest.approx(f(*_args(make)))
    gm, gx = back(-2.5)
    ref = -2.5 * _central(f, make, THETA)
    np.testing.assert_allclose(np.append(_flat(gm, obj), gx), ref, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_array_property_with_an_array_cotangent(backend):
    q = Sq(np.array([1.0, 2.0]), 3.0)
    _, back = pullback(lambda q: q.scaled, q, backend=backend)
    (g,) = back(np.array([1.0, -1.0]))
    np.testing.assert_allclose(g.w, [3.0, -3.0])
    assert g.b == pytest.approx(-1.0)


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_value_and_grad_through_a_property(backend):
    f, make = CASES["array property"]
    obj, x = _args(make)
    v, (gq, gx) = value_and_grad(f, obj, x, backend=backend)
    assert v == pytest.approx(f(*_args(make)))
    np.testing.assert_allclose(np.append(_flat(gq, obj), gx), _central(f, make, THETA),
                               rtol=1e-6, atol=1e-7)


def test_a_tuple_property_is_refused_compiled_and_right_with_auto():
    q = Sq(W.copy(), 1.5)

    def f(q):
        return q.pair[1] * q.b
    with pytest.raises(TypingError, match="property 'pair' of a Sq"):
        gradient(f, q, backend="llvm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # auto falls back to the interpreter
        (g,) = gradient(f, q)
    assert g.b == pytest.approx(4.0 * 1.5)
    np.testing.assert_allclose(g.w, 0.0)


@pytest.mark.parametrize("backend", ["interp", "auto"])
def test_cached_property(backend):
    def f(q, x):
        return q.energy * x
    make = Cached
    obj, x = _args(make)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # not compiled: auto falls back
        gq, gx = gradient(f, obj, x, backend=backend)
    got = np.concatenate([np.ravel(gq.w), [gq.b, gx]])
    np.testing.assert_allclose(got, _central(f, make, THETA), rtol=1e-6, atol=1e-7)
