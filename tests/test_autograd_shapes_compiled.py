"""Programs shaped like the autograd examples that used to leave compiled code: a
derivative wrapper that forwards `*args, **kwargs` (and so zygopy's own `backend=`
keyword) to a nested `gradient`, a str inside a tuple or dict argument, `list(...)` of
a tuple, a dict's keys or a range, and a dict of arrays of mixed ranks rebuilt entry
by entry from one flat vector (`out[key] = part` in a loop, `np.size`, `np.ndim`,
`np.shape`).  Each is checked against central differences in both backends; where
the JIT is claimed, a `JitFallbackWarning` is an error."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jit  # noqa: F401  (backend "llvm")
from adjoint import gradient
from jit import jit as jit_compile
from jit.pullback.backend import JitFallbackWarning
from jit.types import TypingError

BACKENDS = ("interp", "llvm")


def central(f, x, h=1e-6):
    """Central differences of scalar f at float or array x."""
    if np.ndim(x) == 0:
        return (f(x + h) - f(x - h)) / (2 * h)
    x = np.asarray(x, dtype=float)
    out = np.zeros(x.size)
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        out[k] = (f(x + e.reshape(x.shape)) - f(x - e.reshape(x.shape))) / (2 * h)
    return out.reshape(x.shape)


def strict_gradient(f, *args, backend):
    """gradient(f, *args) with a fallback to the interpreter turned into an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", JitFallbackWarning)
        return gradient(f, *args, backend=backend)

# -- a derivative wrapper forwarding *args and **kwargs (sinusoid) ---------------------------


def derivative(fn):
    """d fn / dx as a function, the way a small autodiff front end spells it."""
    return lambda *args, **kwargs: gradient(fn, *args, **kwargs)[0]


def cosine_series(x):
    """cos(x) summed term by term until a term is small, reporting the terms it took."""
    term, total = 1.0, 1.0
    for n in range(200):
        print(n, end=" ")
        term = -term * x * x / ((2 * n + 1) * (2 * n + 2))
        total = total + term
        if abs(term) < 1e-3:
            break
    return total


@pytest.mark.parametrize("backend", BACKENDS)
def test_second_derivative_through_a_forwarding_wrapper(backend, capsys):
    # `backend=` reaches the wrapper's **kwargs (it takes any keyword), so the inner
    # gradient gets it as its option: a str keyword inside compiled code
    first = derivative(cosine_series)
    for x in (1.3, 0.4):       # (the second call runs what the first compiled)
        (g,) = strict_gradient(first, x, backend=backend)
        assert g == pytest.approx(central(first, x), rel=1e-6)
        assert g == pytest.approx(-np.cos(x), abs=2e-3)
    assert "0 1 2" in capsys.readouterr().out

# -- strings inside tuple and dict arguments -----------------------------------------------


def shaped(x, options):
    """x squared or cubed, chosen by a label inside a tuple."""
    return x * x if options[1] == "square" else x * x * x


def keyed(x, options):
    return x * x if options["mode"] == "square" else x * x * x


@pytest.mark.parametrize("backend", BACKENDS)
def test_str_entries_of_arguments_are_constants(backend):
    for label, want in (("square", 2 * 1.5), ("cube", 3 * 1.5 ** 2)):
        (g, none) = strict_gradient(shaped, 1.5, (7, label), backend=backend)
        assert g == pytest.approx(want) and none is None
        (g, none) = strict_gradient(keyed, 1.5, {"mode": label}, backend=backend)
        assert g == pytest.approx(want) and none is None


def test_jit_guards_a_str_entry_and_returns_it():
    f = jit_compile(lambda x, options: (shaped(x, options), options))
    assert f(2.0, (1, "square")) == (4.0, (1, "square"))
    assert f(2.0, (1, "cube")) == (8.0, (1, "cube"))       # another label: compiled anew
    assert f(2.0, (1, "square")) == (4.0, (1, "square"))

# -- list(...) of a tuple, a dict's keys and a range ---------------------------------------


def weighted(params):
    """Sum of (k + 1) * sum(entry k ** 2), and of the dict's second entry."""
    entries = list(params["layers"])
    weights = list(range(len(entries)))
    names = list(params)
    total = 0.0
    for k in range(len(entries)):
        total = total + (weights[k] + 1) * np.sum(entries[k] ** 2)
    return total + np.sum(params[names[1]])


@pytest.mark.parametrize("backend", BACKENDS)
def test_list_of_tuple_keys_and_range(backend):
    a, b, c = np.array([0.5, -1.0]), np.array([[1.0, 2.0], [0.3, 0.1]]), np.array([0.2, 0.4])
    params = {"layers": (a, b), "offset": c}
    (g,) = strict_gradient(weighted, params, backend=backend)
    assert np.allclose(g["layers"][0], 2 * a)
    assert np.allclose(g["layers"][1], 4 * b)
    assert np.allclose(g["offset"], np.ones(2))


def test_list_of_a_computed_range_compiles():
    def f(n):
        r = list(range(n))
        return len(r), sum(r) if r else -1
    for n in (3, 0, -2):
        assert jit_compile(f)(n) == f(n)

# -- a dict of mixed-rank arrays rebuilt entry by entry from a flat vector (gmm) ------------


def rebuild(like, flat, start):
    """(a tree shaped like `like` holding flat[start:...], the next position)."""
    if isinstance(like, dict):
        keys = list(like)
        parts = []
        for key in keys:
            part, start = rebuild(like[key], flat, start)
            parts.append(part)
        out = {}
        for k in range(len(keys)):
            out[keys[k]] = parts[k]
        return out, start
    size = int(np.size(like))
    piece = flat[start:start + size]
    if np.ndim(like) == 0:
        return piece[0], start + size
    return np.reshape(piece, np.shape(like)), start + size


EXAMPLE = {"scale": 0.5, "means": np.zeros((3, 2)), "chol": np.zeros((3, 2, 2)),
           "weights": np.zeros(3)}


def mixture_loss(params):
    return (params["scale"] ** 2 + np.sum(np.sin(params["means"]))
            + np.sum(params["chol"] ** 2) + np.sum(np.exp(params["weights"])))


def flat_loss(vec, *rest):
    return mixture_loss(rebuild(EXAMPLE, vec, 0)[0], *rest)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dict_rebuilt_entry_by_entry(backend):
    for vec in (np.linspace(-1.0, 1.0, 22), np.linspace(0.5, -0.7, 22)):  # (a second
        (g,) = strict_gradient(flat_loss, vec, backend=backend)    # call: no learning run)
        assert np.allclose(g, central(flat_loss, vec), atol=1e-6)


def test_rebuilt_dict_keeps_python_key_order():
    def f(x):
        out = {"b": 1.0}
        for k in ("a", "c", "b"):
            out[k] = x
        return out
    got = jit_compile(f)(2.0)
    assert got == f(2.0) and list(got) == ["b", "a", "c"]


def test_dict_seen_through_another_name_is_not_rewritten():
    # the tuple holds the dict itself, so the store must show through it: the
    # interpreter's answer, and a clear refusal (never a stale entry) from the JIT
    def f(x):
        out = {}
        held = (out,)
        out["a"] = x * x
        return held[0]["a"]
    assert gradient(f, 3.0, backend="interp") == (pytest.approx(6.0),)
    with pytest.raises(TypingError, match="item assignment into dict"):
        gradient(f, 3.0, backend="llvm")


def test_shape_queries_of_numbers_and_arrays():
    def f(a, x):
        return np.size(a) + 10 * np.ndim(a) + 100 * np.size(x) + 1000 * np.ndim(x), np.shape(a)
    a = np.zeros((2, 3, 4))
    assert jit_compile(f)(a, 2.5) == f(a, 2.5) == (24 + 30 + 100, (2, 3, 4))

# -- the leaves of a list of (W, b) layers, by recursion (neural_net_regression) ------------


def leaves(tree):
    """Every array of a list / tuple tree, depth first."""
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in leaves(item)]
    return [tree]


def prior(layers, scale):
    flat = np.concatenate([np.ravel(a) for a in leaves(layers)])
    return np.sum(-0.5 * (flat / scale) ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_leaves_of_mixed_rank_layers(backend):
    rs = np.random.RandomState(3)
    for sizes in ((1, 3, 2), (2, 2, 3)):    # (the same types twice: no learning run)
        layers = [(rs.randn(m, n), rs.randn(n)) for m, n in zip(sizes[:-1], sizes[1:])]
        (g, gs) = strict_gradient(prior, layers, 2.0, backend=backend)
        total = sum(np.sum(w * w) + np.sum(b * b) for w, b in layers)
        assert gs == pytest.approx(total / 8.0)
        for (gw, gb), (w, b) in zip(g, layers):
            assert np.allclose(gw, -w / 4.0) and np.allclose(gb, -b / 4.0)


def test_leaves_compiled_by_jit():
    layers = [(np.ones((2, 3)), np.zeros(3)), (np.ones((3, 1)), np.full(1, 2.0))]
    got = jit_compile(leaves)(layers)
    assert len(got) == 4 and all(np.array_equal(x, y) for x, y in zip(got, leaves(layers)))


def test_loop_over_mixed_tuple_with_inner_loop_and_branches():
    def f(t, n):
        total = 0.0
        for a in t:                  # body: an inner loop holding a branch
            for k in range(n):
                if k % 2 == 0:
                    total = total + np.sum(a) * k
                else:
                    total = total - 1.0
        return total

    def first_big(t):
        for a in t:
            if np.sum(a) > 100.0:
                return -1.0
        return 2.0
    t = (np.ones((2, 2)), np.arange(3.0))
    for n in (4, 0):
        assert jit_compile(f)(t, n) == f(t, n)
    assert jit_compile(first_big)(t) == 2.0
    assert jit_compile(first_big)((np.ones((2, 2)), np.full(3, 50.0))) == -1.0
    (g, _) = strict_gradient(f, t, 4, backend="llvm")
    assert np.allclose(g[0], 2.0) and np.allclose(g[1], 2.0)
