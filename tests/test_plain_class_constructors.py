"""Objects of plain user classes made inside differentiated code (`Normal(mu, s)`,
`RBF(ls, var)`): `__init__` read as a record constructor (lowering.constructors),
differentiated and compiled like a dataclass's."""
import abc
import warnings

import numpy as np
import pytest

import jit
from adjoint import gradient, jvp, value_and_grad
from jit.pullback.backend import JitFallbackWarning
from lowering.constructors import fields_constructor

BACKENDS = ("interp", "llvm")


class Normal:
    eps = 1e-12                     # a class attribute read through self

    def __init__(self, loc, scale=1.0, *, log_scale=False):
        self.loc = loc
        self.scale = np.exp(scale) if log_scale else scale
        self.var = self.scale ** 2
        self.var += self.eps

    def logpdf(self, x):
        return -0.5 * (x - self.loc) ** 2 / self.var - 0.5 * np.log(2 * np.pi * self.var)


class RBF:
    def __init__(self, lengthscale, variance=1.0):
        self.lengthscale = lengthscale
        self.variance = variance

    def __call__(self, X, Y=None):
        Y = X if Y is None else Y
        d2 = np.sum((X[:, None, :] - Y[None, :, :]) ** 2, axis=-1)
        return self.variance * np.exp(-0.5 * d2 / self.lengthscale ** 2)


def normal_nll(mu, s, data):
    return -np.sum(Normal(mu, s, log_scale=True).logpdf(data))


def kernel_sum(theta, X):
    k = RBF(np.exp(theta[0]), variance=np.exp(theta[1]))
    return np.sum(k(X) @ np.ones(len(X)))


def central(f, x, *rest, h=1e-6):
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += h
        lo[idx] -= h
        g[idx] = (f(hi if x.ndim else float(hi), *rest) - f(lo if x.ndim else float(lo), *rest)) / (2 * h)
    return g


def strict(f, *args, backend, wrt=0):
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        return gradient(f, *args, backend=backend)


DATA = np.array([0.3, -1.2, 2.0, 0.7])


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_object_made_in_the_loss_is_differentiated(backend):
    g = strict(normal_nll, 0.4, -0.3, DATA, backend=backend)
    assert g[0] == pytest.approx(float(central(normal_nll, 0.4, -0.3, DATA)), rel=1e-6)
    assert g[1] == pytest.approx(float(central(lambda s: normal_nll(0.4, s, DATA), -0.3)), rel=1e-6)
    # closed form: d/dmu = -sum(x - mu) / var
    var = np.exp(-0.3) ** 2 + 1e-12
    assert g[0] == pytest.approx(-np.sum(DATA - 0.4) / var, rel=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_callable_object_made_in_the_loss(backend):
    X = np.random.default_rng(1).normal(size=(6, 2))
    theta = np.array([0.2, -0.1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        v, (g, _) = value_and_grad(kernel_sum, theta, X, backend=backend)
    assert v == pytest.approx(kernel_sum(theta, X), rel=1e-12)
    np.testing.assert_allclose(g, central(kernel_sum, theta, X), rtol=1e-6)


def make_normal(mu):
    return Normal(mu, 2.0)


def test_the_object_leaves_compiled_code_as_an_instance():
    got = jit.jit(make_normal)(0.5)
    want = make_normal(0.5)
    assert type(got) is Normal and vars(got) == vars(want)


def test_forward_mode_through_the_constructor():
    y, t = jvp(lambda m: normal_nll(m, -0.3, DATA), (0.4,), (1.0,))
    assert y == pytest.approx(normal_nll(0.4, -0.3, DATA))
    assert t == pytest.approx(float(central(normal_nll, 0.4, -0.3, DATA)), rel=1e-6)


# -- classes left alone: their call is a callee like any other ------------------------------
class Conditional:
    def __init__(self, a, flag):
        if flag:
            self.a = a


class CallsAMethod:
    def __init__(self, a):
        self.a = a
        self.reset()

    def reset(self):
        self.b = 0.0


class Base:
    def __init__(self, a):
        self.a = a


class UsesSuper(Base):
    def __init__(self, a):              # (`super().__init__` first is inlined: see
        self.b = a                      # test_super_calls.py; anywhere else it is not)
        super().__init__(a)


class Slotted:
    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a


class WithSetter:
    def __init__(self, a):
        self.a = a

    @property
    def a(self):
        return self._a

    @a.setter
    def a(self, v):
        self._a = 2 * v


class Abstract(abc.ABC):
    def __init__(self, a):
        self.a = a

    @abc.abstractmethod
    def f(self):
        ...


@pytest.mark.parametrize("cls", [Conditional, CallsAMethod, UsesSuper, Slotted, WithSetter,
                                 Abstract, int, np.ndarray])
def test_classes_whose_init_does_more_are_not_rewritten(cls):
    assert fields_constructor(cls) is None


def test_a_plain_class_is_rewritten_and_a_subclass_inherits_it():
    class Child(Base):
        pass

    for cls in (Normal, RBF, Base, Child):
        ctor = fields_constructor(cls)
        assert ctor is not None and ctor is fields_constructor(cls)
    made = fields_constructor(Normal)(1.0, 0.5)
    assert type(made) is Normal and vars(made) == vars(Normal(1.0, 0.5))


def uses_setter(x):
    return WithSetter(x).a * x


def test_a_setter_still_runs_in_the_interpreter():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert uses_setter(3.0) == 18.0
        with pytest.raises(TypeError, match="WithSetter"):
            gradient(uses_setter, 3.0)


def test_a_class_level_constant_rebound_is_followed():
    try:
        for backend in BACKENDS:
            Normal.eps = 1e-12
            g1 = strict(normal_nll, 0.4, -0.3, DATA, backend=backend)[0]
            Normal.eps = 0.5
            g2 = strict(normal_nll, 0.4, -0.3, DATA, backend=backend)[0]
            var = np.exp(-0.3) ** 2 + 0.5
            assert g2 == pytest.approx(-np.sum(DATA - 0.4) / var, rel=1e-9) and g2 != g1
    finally:
        Normal.eps = 1e-12
