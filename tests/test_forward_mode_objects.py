"""Issue 29 (1), forward mode: `jvp`, `jacfwd` and `hvp` take objects (dataclasses,
frozen or not, named tuples, plain user objects) as primals, with tangents in the form
reverse mode's gradient has for them (the same dataclass or named tuple, a
SimpleNamespace or dict for a plain object; None is zero), and give an object output's
tangent in that form.  Checked against central differences and against the reverse-mode
gradient dotted with the tangent, in the interpreter and compiled."""
import collections
import dataclasses
import types
import warnings

import numpy as np
import pytest

import adjoint
from adjoint import gradient, hvp, jacfwd, jvp

BACKENDS = ["interp", "llvm"]
H = 1e-6


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float
    label: str = "layer"

    def energy(self, x):
        return np.sum(np.tanh(self.w * x)) * self.b


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: np.ndarray
    s: float


Pair = collections.namedtuple("Pair", ["u", "v"])


class Plain:
    def __init__(self, w, c):
        self.w = w
        self.c = c


def shifted(p, t, h):
    """`p + h t` for an object `p` and its tangent `t` (the user's forms)."""
    if isinstance(p, tuple):
        return type(p)(*[a + h * b for a, b in zip(p, t)])
    if dataclasses.is_dataclass(p):
        names = [f.name for f in dataclasses.fields(p)]
        return dataclasses.replace(p, **{n: getattr(p, n) + h * getattr(t, n) for n in names
                                         if getattr(t, n) is not None})
    parts = t if isinstance(t, dict) else vars(t)
    return Plain(**{n: getattr(p, n) + h * parts.get(n, 0.0) for n in vars(p)})


def directional(f, p, t, x):
    return (f(shifted(p, t, H), x) - f(shifted(p, t, -H), x)) / (2 * H)


def dot(g, t):
    """<gradient, tangent> over the fields of two objects of the same form."""
    if isinstance(g, tuple):
        pairs = zip(g, t)
    elif dataclasses.is_dataclass(g):
        pairs = [(getattr(g, f.name), getattr(t, f.name)) for f in dataclasses.fields(g)]
    else:
        parts = t if isinstance(t, dict) else vars(t)
        pairs = [(v, parts.get(n)) for n, v in vars(g).items()]
    return sum(float(np.sum(a * b)) for a, b in pairs if a is not None and b is not None)


def run(backend, fn, *args, **kw):
    """`fn(*args, backend=...)`; compiled, a fallback to the interpreter is an error."""
    with warnings.catch_warnings():
        if backend == "llvm":
            warnings.simplefilter("error")
        return fn(*args, backend=backend, **kw)


X = np.array([0.3, -0.2, 0.7])


def loss_layer(p, x):
    return np.sum(np.tanh(p.w * x)) + p.b * x[0] ** 2


def loss_frozen(p, x):
    return np.sum(p.w * p.w * x) * p.s


def loss_pair(p, x):
    return np.sum(np.sin(p.u * x)) * p.v


def loss_plain(p, x):
    return np.sum(p.w ** 3 * x) + p.c * np.sum(x)


CASES = [
    (loss_layer, Layer(np.array([1.0, 2.0, -0.5]), 0.5),
     Layer(np.array([0.1, -1.0, 2.0]), 1.5, None)),
    (loss_frozen, Frozen(np.array([1.0, 2.0, 3.0]), 1.5), Frozen(np.array([1.0, 0.0, -1.0]), 2.0)),
    (loss_pair, Pair(np.array([0.5, 1.0, 1.5]), 2.0), Pair(np.array([1.0, 2.0, 0.5]), -1.0)),
    (loss_plain, Plain(np.array([1.0, -2.0, 0.5]), 0.25),
     types.SimpleNamespace(w=np.array([0.5, 0.5, 1.0]), c=3.0)),
    (loss_plain, Plain(np.array([1.0, -2.0, 0.5]), 0.25), {"w": np.array([0.5, 0.5, 1.0])}),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_jvp_of_an_object_primal(backend, case):
    f, p, t = CASES[case]
    y, dy = run(backend, jvp, f, (p, X), (t, None))
    assert y == pytest.approx(f(p, X))
    assert dy == pytest.approx(directional(f, p, t, X), rel=1e-6, abs=1e-8)
    g = gradient(f, p, X, backend="interp")[0]
    assert dy == pytest.approx(dot(g, t), rel=1e-12, abs=1e-12)
    # with the other argument's tangent as well: the two add up
    _, dx = run(backend, jvp, f, (p, X), (None, np.ones(3)))
    _, both = run(backend, jvp, f, (p, X), (t, np.ones(3)))
    assert both == pytest.approx(dy + dx, rel=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_none_is_a_zero_tangent_of_an_object(backend):
    f, p, t = CASES[0]
    _, dy = run(backend, jvp, f, (p, X), (None, None))
    assert dy == 0.0
    _, dy = run(backend, jvp, f, (p, X), (t, None))      # the same function again
    assert dy == pytest.approx(dot(gradient(f, p, X)[0], t), rel=1e-12)


def scaled_layer(p, k):
    return Layer(p.w * k, p.b * k, p.label)


def swapped(p, k):
    return Pair(p.v * k, p.u * k)


@pytest.mark.parametrize("backend", ["interp", "auto"])
def test_an_object_output_has_a_tangent_of_its_type(backend):
    p, t = CASES[0][1], CASES[0][2]
    y, dy = jvp(scaled_layer, (p, 3.0), (t, 1.0), backend=backend)
    assert isinstance(dy, Layer) and dy.label is None
    np.testing.assert_allclose(dy.w, t.w * 3.0 + p.w)
    assert dy.b == pytest.approx(t.b * 3.0 + p.b)
    q, tq = CASES[2][1], CASES[2][2]
    y, dy = jvp(swapped, (q, 2.0), (tq, 0.0), backend=backend)
    assert type(dy) is Pair
    assert dy.u == pytest.approx(2.0 * tq.v)
    np.testing.assert_allclose(dy.v, 2.0 * tq.u)


def test_a_named_tuple_made_inside_f_runs_compiled():
    q, tq = CASES[2][1], CASES[2][2]
    y, dy = run("llvm", jvp, swapped, (q, 2.0), (tq, 0.5))
    assert type(dy) is Pair
    assert dy.u == pytest.approx(2.0 * tq.v + 0.5 * q.v)
    np.testing.assert_allclose(dy.v, 2.0 * tq.u + 0.5 * q.u)


def calls_a_method(p, x):
    return p.energy(x) + p.b


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_method_called_inside_f(backend):
    p, t = CASES[0][1], CASES[0][2]
    y, dy = run(backend, jvp, calls_a_method, (p, X), (t, np.ones(3)))
    assert y == pytest.approx(calls_a_method(p, X))
    g = gradient(calls_a_method, p, X)
    assert dy == pytest.approx(dot(g[0], t) + np.sum(g[1]), rel=1e-12)
    _, dp = run(backend, jvp, calls_a_method, (p, X), (t, None))
    assert dp == pytest.approx(directional(calls_a_method, p, t, X), rel=1e-6)
    _, dx = run(backend, jvp, calls_a_method, (p, X), (None, np.ones(3)))
    assert dx == pytest.approx(np.sum(g[1]), rel=1e-12)


class Scaled:
    """A class whose state is kept under other names: registered as a pytree."""

    def __init__(self, w, k):
        self._state = {"w": w, "k": k}

    @property
    def w(self):
        return self._state["w"]

    @property
    def k(self):
        return self._state["k"]


adjoint.register_pytree_node(Scaled, lambda s: ({"w": s.w, "k": s.k}, None),
                             lambda aux, ch: Scaled(ch["w"], ch["k"]))


def loss_scaled(s, x):
    return np.sum(np.exp(s.w * x)) * s.k


def test_a_registered_class():
    s = Scaled(np.array([0.5, -1.0, 2.0]), 1.5)
    t = Scaled(np.array([1.0, 1.0, -0.5]), 0.25)
    _, dy = jvp(loss_scaled, (s, X), (t, None), backend="interp")
    g = gradient(loss_scaled, s, X)[0]
    assert dy == pytest.approx(float(np.sum(g.w * t.w)) + g.k * t.k, rel=1e-12)
    with pytest.raises(ValueError, match="must be a Scaled"):
        jvp(loss_scaled, (s, X), ({"w": t.w}, None))


def quartic(p):
    return np.sum(p.w ** 4) * p.s + p.s ** 3


@pytest.mark.parametrize("backend", ["interp", "auto"])
def test_hvp_of_a_dataclass(backend):
    p = Frozen(np.array([1.0, -2.0, 0.5]), 1.5)
    v = Frozen(np.array([0.5, 1.0, -1.0]), 2.0)
    got = hvp(quartic, p, v, backend=backend)
    assert isinstance(got, Frozen)
    # closed form: H = [[12 s diag(w^2), 4 w^3], [4 w^3^T, 6 s]]
    hw = 12 * p.s * p.w ** 2 * v.w + 4 * p.w ** 3 * v.s
    hs = np.sum(4 * p.w ** 3 * v.w) + 6 * p.s * v.s
    np.testing.assert_allclose(got.w, hw, rtol=1e-12)
    assert got.s == pytest.approx(hs, rel=1e-12)


def vector_out(p, x):
    return np.tanh(p.w * x) * p.b


@pytest.mark.parametrize("backend", BACKENDS)
def test_jacfwd_of_an_object_argument(backend):
    p = Layer(np.array([1.0, 2.0, -0.5]), 0.5)
    jp, jx = run(backend, jacfwd, vector_out, p, X)
    assert isinstance(jp, Layer) and jp.label is None
    assert jp.w.shape == (3, 3) and jp.b.shape == (3,)
    np.testing.assert_allclose(jp.w, np.diag((1 - np.tanh(p.w * X) ** 2) * X * p.b),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(jp.b, np.tanh(p.w * X), rtol=1e-12)
    np.testing.assert_allclose(jx, np.diag((1 - np.tanh(p.w * X) ** 2) * p.w * p.b),
                               rtol=1e-12)
    # a scalar function: the blocks are the gradient
    jq = run(backend, jacfwd, loss_pair, CASES[2][1], X)[0]
    g = gradient(loss_pair, CASES[2][1], X)[0]
    assert type(jq) is Pair
    np.testing.assert_allclose(jq.u, g.u, rtol=1e-12)
    assert jq.v == pytest.approx(g.v, rel=1e-12)


@pytest.mark.parametrize("tangent, words", [
    (Frozen(np.ones(3), 1.0), "must be a Layer"),
    (types.SimpleNamespace(w=np.ones(3), b=1.0), "must be a Layer"),
    (np.ones(3), "must be a Layer"),
    (Layer(np.ones(2), 1.0, None), r"tangent 0\.w must be an array of shape \(3,\)"),
    (Layer(np.ones(3), 1.0, "x"), r"tangent 0\.label must be None"),
])
def test_a_tangent_of_the_wrong_structure_is_refused(tangent, words):
    p = CASES[0][1]
    with pytest.raises(ValueError, match=words):
        jvp(loss_layer, (p, X), (tangent, None))


def test_wrong_tangents_of_other_objects_are_refused():
    q = CASES[2][1]
    Other = collections.namedtuple("Other", ["u", "v"])
    with pytest.raises(ValueError, match="must be a Pair or a tuple of 2 entries"):
        jvp(loss_pair, (q, X), (Other(np.ones(3), 1.0), None))
    plain = CASES[3][1]
    with pytest.raises(ValueError, match="SimpleNamespace or dict of attribute tangents"):
        jvp(loss_plain, (plain, X), ({"w": np.ones(3), "z": 1.0}, None))
    with pytest.raises(ValueError, match=r"hvp: v\.s must be a number, got a str"):
        hvp(quartic, Frozen(np.ones(3), 1.0), Frozen(np.ones(3), "a"))


@dataclasses.dataclass
class Counted:
    w: np.ndarray
    n: int


def counted(q, x):
    return np.sum(q.w * x) * q.n


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_int_field_has_no_tangent_as_in_the_gradient(backend):
    q = Counted(np.array([1.0, 2.0, 3.0]), 3)
    assert gradient(counted, q, X)[0].n is None
    _, dy = run(backend, jvp, counted, (q, X), (Counted(np.ones(3), 5), None))
    assert dy == pytest.approx(3 * np.sum(X), rel=1e-12)       # the 5 is ignored
    jq = run(backend, jacfwd, counted, q, X)[0]
    assert jq.n is None
    np.testing.assert_allclose(jq.w, 3 * X, rtol=1e-12)
    _, tq = run(backend, jvp, lambda a, k: a, (q, 1.0), (None, 1.0))
    assert type(tq) is Counted and tq.n is None and not np.any(tq.w)


@dataclasses.dataclass
class Squares:
    w: np.ndarray

    @property
    def energy(self):
        return np.sum(self.w ** 2)


def reads_a_property(q, x):
    return q.energy * x


@pytest.mark.parametrize("backend", ["interp", "auto"])
def test_a_property_read_carries_the_getters_tangent(backend):
    q, t = Squares(np.array([1.0, 2.0])), Squares(np.array([1.0, -3.0]))
    _, dy = jvp(reads_a_property, (q, 2.0), (t, 0.5), backend=backend)
    assert dy == pytest.approx(2.0 * np.sum(2 * q.w * t.w) + 0.5 * np.sum(q.w ** 2))
