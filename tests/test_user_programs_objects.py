"""Programs that keep their parameters in objects, written as users write them:
dataclasses (frozen or not) and named tuples of weights, a `Model` class with methods,
`__call__` and properties, layers held in a list, a dict of dataclasses, config fields
(int, str, bool) that steer the computation, class constants, optimiser steps that
rebuild the parameters from a gradient of the same type, a bound method as `f`, a
mutated module-level config object and `jit` of a function taking a dataclass.

Each gradient is checked per leaf against central differences, its type against the
argument's, and the inputs against a copy taken before; `backend="llvm"` runs with any
fallback warning turned into an error."""
import collections
import copy
import dataclasses
import math
import types
import warnings
from typing import NamedTuple

import numpy as np
import pytest

import adjoint
from jit import jit
from lowering import UnsupportedError

H = 1e-6
RNG = np.random.default_rng(7)
XS = RNG.normal(size=(5, 3))
YS = RNG.normal(size=5)
LABELS = (YS > 0).astype(float)


def normal(*shape):
    return RNG.normal(size=shape)


# -- the programs ----------------------------------------------------------------------------
@dataclasses.dataclass
class Linear:
    w: np.ndarray
    b: float


def mse(p, X, y):
    r = X @ p.w + p.b - y
    return np.mean(r * r)


@dataclasses.dataclass(frozen=True)
class Logistic:
    w: np.ndarray
    b: float


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def cross_entropy(p, X, y):
    q = sigmoid(X @ p.w + p.b)
    return -np.mean(y * np.log(q) + (1 - y) * np.log(1 - q))


@dataclasses.dataclass
class TwoLayer:
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: float


def two_layer_loss(p, X, y):
    h = np.tanh(X @ p.W1 + p.b1)
    return np.sum((h @ p.W2 + p.b2 - y) ** 2)


class Model:
    def __init__(self, W, b, activation="tanh"):
        self.W = W
        self.b = b
        self.activation = activation

    @property
    def width(self):
        return self.W.shape[1]

    @property
    def scale(self):
        return 1.0 / self.width

    def forward(self, x):
        z = x @ self.W + self.b
        if self.activation == "tanh":
            return np.tanh(z)
        return np.maximum(z, 0.0)

    def __call__(self, x):
        return self.forward(x)

    def loss(self, x, y):
        return np.sum((self(x) - y) ** 2) * self.scale


def model_loss(m, x, y):
    return m.loss(x, y)


class Layer:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)


class Net:
    def __init__(self, layers):
        self.layers = layers

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def net_loss(net, X, y):
    return np.sum((net.forward(X)[:, 0] - y) ** 2)


Params = collections.namedtuple("Params", ["w", "b"])


def half_sse(p, X, y):
    r = X @ p.w + p.b - y
    return 0.5 * np.sum(r ** 2)


class Wave(NamedTuple):
    amp: float
    freq: float

    def at(self, x):
        return self.amp * math.sin(self.freq * x)


def wave_loss(p, x):
    return p.at(x) ** 2 + p.amp * p.freq


@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray


def dict_loss(params, X, y):
    h = np.tanh(X @ params["hidden"].W + params["hidden"].b)
    o = h @ params["out"].W + params["out"].b
    return np.sum((o[:, 0] - y) ** 2)


@dataclasses.dataclass
class Config:
    depth: int
    act: str
    use_bias: bool
    w: np.ndarray
    b: float


def configured(c, x):
    z = x
    for _ in range(c.depth):            # an int field as a loop bound
        z = z * c.w
        if c.use_bias:
            z = z + c.b
        z = np.tanh(z) if c.act == "tanh" else np.sin(z)
    return np.sum(z)


def softplus(z):
    return np.log1p(np.exp(z))


class Ridge:
    def __init__(self, w, lam):
        self.w = w
        self.lam = lam

    def penalty(self):
        return self.lam * np.sum(self.w ** 2)

    def predict(self, X):
        return softplus(X @ self.w)

    def loss(self, X, y):
        return np.mean((self.predict(X) - y) ** 2) + self.penalty()


def ridge_loss(r, X, y):
    return r.loss(X, y)


class Squash:
    @staticmethod
    def f(z):
        return z / (1.0 + z * z)


class Unit:
    def __init__(self, w):
        self.w = w

    def out(self, x):
        return Squash.f(self.w * x) + self.square(x)

    @staticmethod
    def square(x):
        return x * x


def unit_loss(u, x):
    return u.out(x)


class Base:
    def __init__(self, w):
        self.w = w

    def forward(self, x):
        return x * self.w


class Child(Base):
    def __init__(self, w, c):
        Base.__init__(self, w)
        self.c = c

    def forward(self, x):
        return np.sin(Base.forward(self, x)) + self.c * x


class WithSuper(Base):
    def forward(self, x):
        return np.sin(super().forward(x))


def forward_sum(m, x):
    return np.sum(m.forward(x))


class Smoothed:
    eps = 0.25                          # a class constant, read through self

    def __init__(self, w):
        self.w = w

    def value(self, x):
        return np.sqrt(np.sum((self.w * x) ** 2) + self.eps)


def smoothed_loss(s, x):
    return s.value(x)


@dataclasses.dataclass(frozen=True)
class FrozenMLP:
    W1: np.ndarray
    W2: np.ndarray
    act: str = "relu"

    def hidden(self, x):
        z = self.W1 @ x
        return np.maximum(z, 0.0) if self.act == "relu" else np.tanh(z)

    def __call__(self, x):
        return self.W2 @ self.hidden(x)


def frozen_mlp_loss(m, x):
    return np.sum(m(x) ** 2)


@dataclasses.dataclass
class Spring:
    k: float
    m: float
    damping: float = 0.1


def spring_energy(s, x0, steps):
    x, v = x0, 0.0
    for _ in range(steps):
        a = -(s.k / s.m) * x - s.damping * v
        v = v + 0.01 * a
        x = x + 0.01 * v
    return x * x + s.m * v * v


LayerP = collections.namedtuple("LayerP", "W b")
NetP = collections.namedtuple("NetP", "hidden out")


def nested_nt_loss(p, X, y):
    h = np.tanh(X @ p.hidden.W + p.hidden.b)
    return np.sum((h @ p.out.W + p.out.b - y) ** 2)


def list_loss(layers, X, y):
    h = X
    for layer in layers:
        h = np.tanh(h @ layer.W + layer.b)
    return np.sum((h[:, 0] - y) ** 2)


@dataclasses.dataclass
class Moments:
    mu: float
    sigma: float


def moments(x):
    m = np.mean(x)
    return Moments(m, np.sqrt(np.mean((x - m) ** 2)))


def moments_loss(x):
    o = moments(x)
    return o.mu + 2.0 * o.sigma


class Poly:
    def __init__(self, coeffs, normalize):
        self.coeffs = coeffs
        self.normalize = normalize

    def eval(self, x):
        total = 0.0
        for i in range(len(self.coeffs)):
            total = total + self.coeffs[i] * x ** i
        if self.normalize:
            total = total / (1.0 + np.sum(self.coeffs ** 2))
        return total


def poly_loss(p, x):
    return p.eval(x) ** 2


@dataclasses.dataclass
class Opt:
    lr: float
    epoch: int


@dataclasses.dataclass
class State:
    params: Linear
    opt: Opt


def state_loss(s, X, y):
    return mse(s.params, X, y) * s.opt.lr


@dataclasses.dataclass
class Stack:
    Ws: list
    bias: float


def stack_loss(s, x):
    for W in s.Ws:
        x = np.tanh(W @ x) + s.bias
    return np.sum(x)


class GlobalConfig:
    def __init__(self):
        self.scale = 2.0
        self.power = 2


CONFIG = GlobalConfig()


def global_config_loss(w):
    return CONFIG.scale * np.sum(w ** CONFIG.power)


def predict(p, X):
    return X @ p.w + p.b


# -- the checks ------------------------------------------------------------------------------
def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def leaves(x, path=()):
    """(path, index) of every float leaf of `x`: index None for a float, an array index."""
    if isinstance(x, (bool, int, str)) or x is None:
        return
    if isinstance(x, float):
        yield path, None
    elif isinstance(x, np.ndarray):
        for i in np.ndindex(x.shape):
            yield path, i
    elif _is_namedtuple(x):
        for name in x._fields:
            yield from leaves(getattr(x, name), path + (("attr", name),))
    elif isinstance(x, (list, tuple)):
        for k, v in enumerate(x):
            yield from leaves(v, path + (("item", k),))
    elif isinstance(x, dict):
        for k, v in x.items():
            yield from leaves(v, path + (("item", k),))
    else:
        for name, v in vars(x).items():
            yield from leaves(v, path + (("attr", name),))


def at(x, path):
    for kind, key in path:
        x = getattr(x, key) if kind == "attr" else x[key]
    return x


def replaced(x, path, value):
    """`x` with the leaf at `path` replaced by `value`, rebuilt without mutating `x`."""
    if not path:
        return value
    (kind, key), rest = path[0], path[1:]
    inner = replaced(at(x, path[:1]), rest, value)
    if _is_namedtuple(x):
        return x._replace(**{key: inner})
    if isinstance(x, (list, tuple)):
        out = list(x)
        out[key] = inner
        return out if isinstance(x, list) else tuple(out)
    if isinstance(x, dict):
        return {**x, key: inner}
    new = copy.copy(x)
    object.__setattr__(new, key, inner)
    return new


def moved(x, path, index, step):
    leaf = at(x, path)
    if index is None:
        return replaced(x, path, leaf + step)
    leaf = leaf.copy()
    leaf[index] += step
    return replaced(x, path, leaf)


def assert_gradient(f, args, k, g):
    """`g` is the gradient of `f` in argument `k`: the argument's type, every float
    leaf present and equal to central differences."""
    x = args[k]
    if _is_namedtuple(x) or dataclasses.is_dataclass(x):
        assert type(g) is type(x)
    count = 0
    for path, index in leaves(x):
        up = list(args)
        down = list(args)
        up[k], down[k] = moved(x, path, index, H), moved(x, path, index, -H)
        want = (f(*up) - f(*down)) / (2 * H)
        got = at(g, path)
        assert got is not None, path
        got = got if index is None else np.asarray(got)[index]
        assert np.isclose(got, want, rtol=1e-4, atol=1e-6), (path, index, got, want)
        count += 1
    assert count > 0


def same_values(a, b):
    return all(np.array_equal(at(a, p) if i is None else at(a, p)[i],
                              at(b, p) if i is None else at(b, p)[i]) for p, i in leaves(a))


def check(f, args, argnums, backend, with_pullback=True):
    """value_and_grad (and pullback) of `f` against CPython and central differences."""
    before = copy.deepcopy(args)
    with warnings.catch_warnings():
        if backend == "llvm":
            warnings.simplefilter("error")
        value, grads = adjoint.value_and_grad(f, *args, backend=backend)
        results = [grads]
        if with_pullback:
            y, back = adjoint.pullback(f, *args, backend=backend)
            assert np.isclose(y, value)
            results.append(back(1.0))
    assert np.isclose(value, f(*copy.deepcopy(args)))
    for k in argnums:
        for g in results:
            assert_gradient(f, args, k, g[k])
    assert same_values(before, args)


PROGRAMS = {
    "linear dataclass": (mse, lambda: (Linear(normal(3), 0.3), XS, YS), (0,)),
    "logistic frozen dataclass": (cross_entropy, lambda: (Logistic(0.3 * normal(3), 0.1),
                                                          XS, LABELS), (0,)),
    "two-layer dataclass": (two_layer_loss, lambda: (TwoLayer(0.5 * normal(3, 4), normal(4),
                                                              normal(4), 0.2), XS, YS), (0,)),
    "Model tanh": (model_loss, lambda: (Model(normal(3, 2), normal(2)), XS, normal(5, 2)),
                   (0, 1)),
    "Model relu": (model_loss, lambda: (Model(normal(3, 2), normal(2), "relu"), XS,
                                        normal(5, 2)), (0,)),
    "layers in a list": (net_loss, lambda: (Net([Layer(0.5 * normal(3, 4), normal(4)),
                                                 Layer(0.5 * normal(4, 2), normal(2))]),
                                            XS, YS), (0,)),
    "namedtuple": (half_sse, lambda: (Params(normal(3), 0.5), XS, YS), (0,)),
    "NamedTuple with a method": (wave_loss, lambda: (Wave(0.7, 1.3), 0.4), (0, 1)),
    "dict of dataclasses": (dict_loss, lambda: ({"hidden": Dense(0.5 * normal(3, 4), normal(4)),
                                                 "out": Dense(normal(4, 1), normal(1))},
                                                XS, YS), (0,)),
    "int/str/bool config": (configured, lambda: (Config(3, "tanh", True, normal(4), 0.2),
                                                 normal(4)), (0, 1)),
    "config sin, no bias": (configured, lambda: (Config(2, "sin", False, normal(4), 0.2),
                                                 normal(4)), (0,)),
    "methods and helpers": (ridge_loss, lambda: (Ridge(0.5 * normal(3), 0.1), XS, YS), (0,)),
    "staticmethods": (unit_loss, lambda: (Unit(0.8), 0.6), (0, 1)),
    "subclass calls Base.forward": (forward_sum, lambda: (Child(normal(3), 0.5), normal(3)),
                                    (0, 1)),
    "frozen MLP __call__ relu": (frozen_mlp_loss, lambda: (FrozenMLP(normal(4, 3),
                                                                     normal(2, 4)),
                                                           normal(3)), (0, 1)),
    "frozen MLP tanh": (frozen_mlp_loss, lambda: (FrozenMLP(normal(4, 3), normal(2, 4),
                                                            "tanh"), normal(3)), (0,)),
    "spring simulation": (spring_energy, lambda: (Spring(3.0, 1.5), 1.0, 40), (0, 1)),
    "namedtuple of namedtuples": (nested_nt_loss, lambda: (
        NetP(LayerP(0.5 * normal(3, 4), normal(4)), LayerP(normal(4), 0.1)), XS, YS), (0,)),
    "list of dataclasses": (list_loss, lambda: ([Dense(0.5 * normal(3, 4), normal(4)),
                                                 Dense(normal(4, 1), normal(1))], XS, YS),
                            (0,)),
    "dataclass built inside": (moments_loss, lambda: (normal(5),), (0,)),
    "bool field, loop over coeffs": (poly_loss, lambda: (Poly(normal(4), True), 0.7), (0, 1)),
    "nested dataclasses": (state_loss, lambda: (State(Linear(normal(3), 0.1), Opt(0.5, 3)),
                                                XS, YS), (0,)),
    "list field": (stack_loss, lambda: (Stack([normal(3, 3), normal(3, 3)], 0.1), normal(3)),
                   (0, 1)),
}


# variants whose compiled twin runs above: checked in the interpreter only
INTERP_ONLY = {"Model relu", "config sin, no bias", "frozen MLP tanh", "list of dataclasses",
               "namedtuple of namedtuples", "two-layer dataclass", "linear dataclass",
               "logistic frozen dataclass", "dataclass built inside",
               "bool field, loop over coeffs", "NamedTuple with a method"}
# compiled `pullback` (a second compilation: the recording forward pass) for a few
COMPILED_PULLBACKS = {"namedtuple", "int/str/bool config", "staticmethods", "list field"}


@pytest.mark.parametrize("name, backend", [(n, "interp") for n in sorted(PROGRAMS)] + [
    (n, "llvm") for n in sorted(PROGRAMS) if n not in INTERP_ONLY])
def test_program(name, backend):
    f, make, argnums = PROGRAMS[name]
    check(f, make(), argnums, backend, backend == "interp" or name in COMPILED_PULLBACKS)


def test_class_constant_through_self_differentiates():
    # the class constant is no part of the object: its gradient has only `w`
    check(smoothed_loss, (Smoothed(normal(3)), normal(3)), (0, 1), "interp")
    g = adjoint.gradient(smoothed_loss, Smoothed(normal(3)), normal(3), backend="interp")[0]
    assert set(vars(g)) == {"w"}


def test_int_field_as_range_bound_differentiates():
    c = Config(4, "tanh", True, normal(2), 0.3)
    for backend in ("interp", "llvm"):
        g = adjoint.gradient(configured, c, normal(2), backend=backend)[0]
        assert g.depth is None and g.act is None and g.use_bias is None
        assert g.w.shape == (2,) and isinstance(g.b, float)


def test_super_calls_the_base_method():
    w, x = normal(3), normal(3)
    for backend in ("interp", "llvm"):      # (more in test_super_calls.py)
        g = adjoint.gradient(forward_sum, WithSuper(w), x, backend=backend)
        assert np.allclose(g[0].w, np.cos(x * w) * x) and np.allclose(g[1], np.cos(x * w) * w)


def test_bound_method_as_f():
    m = Model(normal(3, 2), normal(2))
    x, y = normal(4, 3), normal(4, 2)
    check(m.loss, (x, y), (0, 1), "interp")
    check(m.loss, (x, y), (0, 1), "llvm", with_pullback=False)


def test_sgd_steps_with_a_gradient_of_the_same_type():
    p, q = Linear(np.zeros(3), 0.0), Params(np.zeros(3), 0.0)
    for _ in range(30):
        g = adjoint.gradient(mse, p, XS, YS)[0]
        assert type(g) is Linear
        p = dataclasses.replace(p, w=p.w - 0.1 * g.w, b=p.b - 0.1 * g.b)
        h = adjoint.grad(half_sse, backend="interp")(q, XS, YS)
        assert type(h) is Params
        q = q._replace(w=q.w - 0.05 * h.w, b=q.b - 0.05 * h.b)
    # least squares with an intercept, the point both descents approach
    A = np.column_stack([XS, np.ones(len(YS))])
    best = np.linalg.lstsq(A, YS, rcond=None)[0]
    assert mse(p, XS, YS) < mse(Linear(np.zeros(3), 0.0), XS, YS)
    assert half_sse(q, XS, YS) < half_sse(Params(np.zeros(3), 0.0), XS, YS)
    assert half_sse(q, XS, YS) >= half_sse(Params(best[:3], best[3]), XS, YS) - 1e-12


def test_mutated_global_config_is_followed():
    w = normal(3)
    try:
        for backend in ("interp", "llvm"):
            CONFIG.scale, CONFIG.power = 2.0, 2
            assert np.allclose(adjoint.gradient(global_config_loss, w, backend=backend)[0],
                               4.0 * w)
            CONFIG.scale = 3.0
            assert np.allclose(adjoint.gradient(global_config_loss, w, backend=backend)[0],
                               6.0 * w)
            CONFIG.power = 3
            assert np.allclose(adjoint.gradient(global_config_loss, w, backend=backend)[0],
                               9.0 * w ** 2)
    finally:
        CONFIG.scale, CONFIG.power = 2.0, 2


def test_jit_of_a_function_taking_a_dataclass():
    fast = jit(predict)
    for p in (Linear(normal(3), 0.5), Linear(normal(3), 1.5), Linear(normal(3), 2)):
        assert np.allclose(fast(p, XS), predict(p, XS))


def per_example(p, x, y):
    return (x @ p.w + p.b - y) ** 2


def test_vmap_of_grad_stacks_a_gradient_object_leaf_by_leaf():
    # the row loop takes numbers and arrays: a dataclass argument runs row by row
    # (said by a fallback warning) and the rows' gradients stack into one Linear
    for params in (Linear(normal(3), 0.1), Params(normal(3), 0.1)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = adjoint.vmap(adjoint.grad(per_example), in_axes=(None, 0, 0))(params, XS, YS)
        assert type(g) is type(params)
        assert g.w.shape == (5, 3) and g.b.shape == (5,)
        for i in range(5):
            row = adjoint.gradient(per_example, params, XS[i], YS[i], backend="interp")[0]
            assert np.allclose(g.w[i], row.w) and np.isclose(g.b[i], row.b)
            assert_gradient(per_example, (params, XS[i], YS[i]), 0, row)


def test_jvp_takes_an_object_tangent():
    # a tangent for a dataclass is one of its class (None: zero; an int field's is
    # ignored); a dict is refused, as JAX refuses a pytree of another structure
    s = State(Linear(normal(3), 0.1), Opt(0.5, 3))
    t = State(Linear(normal(3), 1.0), Opt(0.25, None))

    def at_step(h):
        return state_loss(State(Linear(s.params.w + h * t.params.w, s.params.b + h),
                                Opt(0.5 + 0.25 * h, 3)), XS, YS)
    want = (at_step(H) - at_step(-H)) / (2 * H)
    c = Config(3, "tanh", True, 0.3 * normal(4), 0.2)
    x = normal(4)
    want_c = (configured(Config(3, "tanh", True, c.w + H, 0.2 + 0.5 * H), x) -
              configured(Config(3, "tanh", True, c.w - H, 0.2 - 0.5 * H), x)) / (2 * H)
    for backend in ("interp", "llvm"):
        with warnings.catch_warnings():
            if backend == "llvm":
                warnings.simplefilter("error")
            y, dy = adjoint.jvp(state_loss, (s, XS, YS), (t, None, None), backend=backend)
            assert np.isclose(y, state_loss(s, XS, YS)) and np.isclose(dy, want)
            for tangent in (Config(None, None, None, np.ones(4), 0.5),
                            Config(3, None, None, np.ones(4), 0.5)):     # (an int's: ignored)
                _, dc = adjoint.jvp(configured, (c, x), (tangent, None), backend=backend)
                assert np.isclose(dc, want_c)
    with pytest.raises(ValueError, match="jvp: tangent 0 must be a Config"):
        adjoint.jvp(configured, (c, x), ({"nope": 1.0}, None))


GLOBAL_MODEL = Model(normal(3, 2), normal(2))


def global_model_loss(x):
    return np.sum(GLOBAL_MODEL(x) ** 2)      # a global object called: its __call__


class Recorder:
    def __init__(self):
        self.seen = []

    def __call__(self, value):
        self.seen.append(float(value))


RECORD = Recorder()


def recorded_square(x):
    y = x * x
    RECORD(y)                                # a global callable object, for its effect
    return y


def test_calling_a_global_object_runs_its_call_method():
    x = normal(3)
    check(global_model_loss, (x,), (0,), "interp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # (the JIT refuses its result: interpreted)
        g = adjoint.gradient(global_model_loss, x)[0]
    assert np.allclose(g, adjoint.gradient(global_model_loss, x, backend="interp")[0])
    RECORD.seen.clear()
    for backend in ("interp", "llvm"):
        assert adjoint.gradient(recorded_square, 3.0, backend=backend) == (6.0,)
    assert jit(recorded_square)(2.0) == 4.0
    assert RECORD.seen == [9.0, 9.0, 4.0]


def train_linear(p, X, y, steps, lr):
    for _ in range(steps):
        g = adjoint.gradient(mse, p, X, y)[0]
        p = Linear(p.w - lr * g.w, p.b - lr * g.b)   # the gradient is a Linear too
    return p


def test_compiled_training_loop_over_a_dataclass():
    p0 = Linear(np.zeros(3), 0.0)
    want = train_linear(p0, XS, YS, 15, 0.1)
    got = jit(train_linear)(p0, XS, YS, 15, 0.1)
    assert type(got) is Linear and np.allclose(got.w, want.w) and np.isclose(got.b, want.b)
    assert np.array_equal(p0.w, np.zeros(3))
