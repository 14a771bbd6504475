"""`super()` inside methods a differentiated loss calls: resolved when lowering on the
class's MRO, differentiated and compiled (interp and llvm), guarded, refused clearly
where the resolution does not apply.  The programs avoid anything that depends on
the Python version's bytecode (3.10-3.11 call `super`, 3.12+ use LOAD_SUPER_ATTR)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import adjoint
from lowering import UnsupportedError

BACKENDS = ("interp", "llvm")
X = np.linspace(0.2, 1.3, 6)


class Layer:
    offset = 0.5                      # a class-level number read through super()

    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return np.tanh(self.w * x)

    def forward(self, x):
        return np.sin(self.w * x)

    def loss(self, x, y):
        return np.sum((self.forward(x) - y) ** 2)

    @property
    def w2(self):
        return self.w * self.w

    @staticmethod
    def squash(v):
        return v / (1.0 + v * v)


class Dense(Layer):
    def __call__(self, x):
        return super().__call__(x) * self.w

    def forward(self, x):
        h = super().forward(x)
        return h * super().w2 + super().offset + Layer.squash(h)

    def loss(self, x, y):
        return super().loss(x, y) + 0.1 * self.w ** 2


class TwoArgs(Layer):
    def forward(self, x):
        return super(TwoArgs, self).forward(x) ** 2 + super().squash(x)  # noqa: UP008


class Deeper(Dense):
    def forward(self, x):                # two levels: Deeper -> Dense -> Layer
        return np.exp(super().forward(x) * 0.1)


class Starred(Layer):
    def forward(self, *xs):
        f = super().forward
        return f(*xs) + super().forward(xs[0])


def call_loss(m, x):
    return np.sum(m(x)) + np.sum(m.forward(x))


def forward_loss(m, x):
    return np.sum(m.forward(x))


def method_loss(m, x):
    return m.loss(x, np.cos(x))


def central(f, m, x, eps=1e-6):
    return (f(type(m)(m.w + eps), x) - f(type(m)(m.w - eps), x)) / (2 * eps)


def gradient_no_fallback(f, m, x, backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a fallback warning fails the test
        return adjoint.value_and_grad(f, backend=backend)(m, x)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cls, f", [(Dense, call_loss), (Dense, method_loss),
                                    (TwoArgs, forward_loss), (Deeper, forward_loss)])
def test_super_gradients_match_central_differences(cls, f, backend):
    m = cls(0.7)
    value, g = gradient_no_fallback(f, m, X, backend)
    assert np.isclose(value, f(m, X), rtol=1e-12, atol=1e-12)
    assert np.isclose(g.w, central(f, m, X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_with_respect_to_the_input_too(backend):
    m = Dense(0.4)
    g = adjoint.gradient(lambda x: forward_loss(m, x), X, backend=backend)
    eps = 1e-6
    fd = [(forward_loss(m, X + eps * e) - forward_loss(m, X - eps * e)) / (2 * eps)
          for e in np.eye(len(X))]
    assert np.allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_a_method_read_through_super_and_called_later():
    m = Starred(0.9)
    g = adjoint.gradient(forward_loss, m, X, backend="interp")[0]
    assert np.isclose(g.w, central(forward_loss, m, X), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rebinding_the_base_method_compiles_again(backend):
    class Base:
        def __init__(self, w):
            self.w = w

        def forward(self, x):
            return np.sin(self.w * x)

    class Sub(Base):
        def forward(self, x):
            return 2.0 * super().forward(x)

    m = Sub(0.6)
    before = adjoint.value_and_grad(forward_loss, backend=backend)(m, X)
    assert np.isclose(before[0], np.sum(2.0 * np.sin(0.6 * X)))
    Base.forward = lambda self, x: self.w * x
    value, g = adjoint.value_and_grad(forward_loss, backend=backend)(m, X)
    assert np.isclose(value, np.sum(2.0 * 0.6 * X))
    assert np.isclose(g.w, np.sum(2.0 * X))


class Left(Layer):
    def forward(self, x):
        return super().forward(x) + 1.0


class Right(Layer):
    def forward(self, x):
        return 3.0 * x


class Diamond(Left, Right):          # Left's super() reaches Right here, not Layer
    pass


@pytest.mark.parametrize("backend", BACKENDS)
def test_multiple_inheritance_that_reorders_the_bases_is_an_error_not_a_wrong_number(backend):
    m = Diamond(0.5)
    with pytest.raises(Exception, match=r"multiple inheritance"):
        adjoint.gradient(forward_loss, m, X, backend=backend)
    g = adjoint.gradient(forward_loss, Left(0.5), X, backend=backend)[0]   # the plain case
    assert np.isclose(g.w, np.sum(X * np.cos(0.5 * X)))


class WithClassMethod(Layer):
    @classmethod
    def make(cls, w):
        return cls(w)


class UsesClassMethod(WithClassMethod):
    def forward(self, x):
        return super().make(self.w).w * x


class Missing(Layer):
    def forward(self, x):
        return super().nowhere(x)


@pytest.mark.parametrize("cls, construct", [(UsesClassMethod, r"super\(\)\.make \(classmethod"),
                                            (Missing, r"super\(\)\.nowhere")])
def test_unsupported_forms_name_the_construct_function_and_line(cls, construct):
    with pytest.raises(UnsupportedError, match=construct + r".*" + cls.__name__
                       + r"\.forward.*test_super_calls\.py:\d+"):
        adjoint.gradient(forward_loss, cls(0.5), X, backend="interp")


class Affine:
    shift = 0.1                         # a class-level number the base body reads

    def __init__(self, w, scale=2.0):
        self.w = w
        self.s = scale * w + self.shift


class Scaled(Affine):
    def __init__(self, w, b):
        super().__init__(np.exp(w))      # inlined: Scaled(w, b) is a record constructor
        self.b = b * self.s


class Twice(Scaled):
    def __init__(self, w, b, c):
        super().__init__(w, b=b)         # two levels, a keyword argument
        self.c = c


def build_scaled(w, b):
    m = Scaled(w, b)
    return m.w * m.s + np.sin(m.b)


def build_twice(w, b):
    m = Twice(w, b, 3.0)
    return m.w * m.s + m.b * m.c


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f", [build_scaled, build_twice])
def test_objects_whose_init_calls_super_init_built_inside_the_loss(f, backend):
    w, b, eps = 0.3, 0.5, 1e-6
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value, (gw, gb) = adjoint.value_and_grad(f, argnums=(0, 1), backend=backend)(w, b)
    assert np.isclose(value, f(w, b), rtol=1e-12)
    assert np.isclose(gw, (f(w + eps, b) - f(w - eps, b)) / (2 * eps), rtol=1e-6)
    assert np.isclose(gb, (f(w, b + eps) - f(w, b - eps)) / (2 * eps), rtol=1e-6)


class Rebound:                          # (its __init__ is rebound by the test below)
    def __init__(self, w):
        self.w = w


class OnRebound(Rebound):
    def __init__(self, w):
        super().__init__(w)
        self.v = 2.0 * self.w


def build_on_rebound(w):
    m = OnRebound(w)
    return m.v * m.w


def test_rebinding_the_base_init_is_followed():
    assert np.isclose(adjoint.gradient(build_on_rebound, 1.5, backend="interp"), 4.0 * 1.5)

    def init(self, w):
        self.w = w * w
    Rebound.__init__ = init
    assert np.isclose(adjoint.gradient(build_on_rebound, 1.5, backend="interp"), 8.0 * 1.5 ** 3)
