"""Small pieces of Python as people write it, compiled with no fallback and
differentiated right: `enumerate(xs, start=1)`, a method of a string constant
(`mode.lower() == "train"`), `map` / `filter` / `functools.reduce` with a lambda,
`reversed(range(a, b))`, on both backends."""
import functools
import warnings
from functools import reduce

import numpy as np
import pytest

import jit
from adjoint import gradient, jvp

X = np.array([0.5, -1.0, 2.0])


def weighted(x):
    acc = 0.0
    for k, v in enumerate(x, start=1):
        acc += k * v * v
    return acc


def by_mode(x, mode="Train"):
    if mode.lower() == "train" and mode.strip().startswith("T"):
        return np.sum(x ** 2)
    return np.sum(x) * len(mode.replace("a", ""))


def compiled(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return gradient(f, *args, backend="llvm")


def test_enumerate_with_a_start_keyword():
    assert list(enumerate(X, start=1))[0][0] == 1
    for backend in ("interp", "llvm"):
        np.testing.assert_allclose(gradient(weighted, X, backend=backend)[0],
                                   2 * X * np.arange(1, 4))
    assert jit.jit(weighted)(X) == pytest.approx(weighted(X))


@pytest.mark.parametrize("mode", ["Train", "TRAIN", "eval", "banana"])
def test_string_constant_methods_fold(mode):
    want = 2 * X if mode.lower() == "train" else np.full(3, len(mode.replace("a", "")))
    g = compiled(by_mode, X, mode)[0]
    np.testing.assert_allclose(g, want)
    assert jit.jit(by_mode)(X, mode) == pytest.approx(by_mode(X, mode))


def product(x):
    return reduce(lambda a, b: a * b, x)


def squares_from_one(x):
    return functools.reduce(lambda a, b: a + b * b, x, 1.0)


def positive_sum(x):
    return sum(filter(lambda v: v > 0, x))


def dot_by_map(x, y):
    return sum(map(lambda a, b: a * b, x, y))


def backwards(x, a):
    acc = 0.0
    for i in reversed(range(len(x))):
        acc = acc * 0.9 + x[i]
    for i in reversed(range(a, len(x))):
        acc = acc * 0.5 + i * x[i]
    return acc


def central(f, args, k=0, eps=1e-6):
    x = args[k]
    out = []
    for e in np.eye(len(x)):
        up, dn = list(args), list(args)
        up[k], dn[k] = x + eps * e, x - eps * e
        out.append((f(*up) - f(*dn)) / (2 * eps))
    return np.array(out)


@pytest.mark.parametrize("f,args", [(product, (X,)), (squares_from_one, (X,)),
                                    (positive_sum, (X,)), (dot_by_map, (X, X[::-1].copy())),
                                    (backwards, (X, 0)), (backwards, (X, 2))])
def test_map_filter_reduce_and_reversed_range_compile(f, args):
    g = compiled(f, *args)[0]
    np.testing.assert_allclose(g, central(f, args), atol=1e-6)
    np.testing.assert_allclose(gradient(f, *args, backend="interp")[0], g)
    assert jit.jit(f)(*args) == pytest.approx(f(*args))


def test_reduce_of_nothing_raises_what_cpython_raises():
    for call in (lambda: product(np.zeros(0)), lambda: jit.jit(product)(np.zeros(0)),
                 lambda: gradient(product, np.zeros(0))):
        with pytest.raises(TypeError, match="reduce\\(\\) of empty iterable"):
            call()


def loop_over_local_list(x):
    data = [1, 2, 3]
    s = 0.0
    for d in data:
        s += x * d
    return s


def mixed_local_list(x):
    data = [1, 2.5, 3]              # an int and a float: the loop is unrolled
    return sum(d * x * x for d in data)


def local_list_at(x, i):
    data = [1.0, 2.0, 3.0]
    return data[i] * x + data[-1]


@pytest.mark.parametrize("f, args, want", [
    (loop_over_local_list, (1.3,), (6.0,)),
    (mixed_local_list, (1.3,), (2 * 6.5 * 1.3,)),
    (local_list_at, (1.3, 2), (3.0, None)),
    (local_list_at, (1.3, -3), (1.0, None)),
])
def test_a_local_list_of_numbers_read_at_a_variable_index_compiles(f, args, want):
    """`data = [1, 2, 3]; for d in data:` was a whole-function fallback (the display
    is a constant, and a constant could only be read at a constant index)."""
    got = compiled(f, *args)
    assert got == pytest.approx(want) if want[-1] is not None else \
        (got[0] == pytest.approx(want[0]) and got[1] is None)
    assert jit.jit(f)(*args) == f(*args)


def test_a_local_list_read_out_of_range_raises_index_error():
    with pytest.raises(IndexError, match="list index out of range"):
        jit.jit(local_list_at)(1.3, 5)


def _product_of(items):
    return items[0] * items[1]


def comprehension_to_helper(x, y):
    hs = [w * 1.0 for w in (x, y)]
    return np.sum(_product_of(hs)) + np.sum(reduce(lambda u, v: u * v, hs))


def test_a_list_built_in_a_loop_passed_to_a_helper_compiles():
    """The helper was typed for `[]` (the list before the loop appended to it) and
    failed: its call ran in Python (and `functools.reduce` over a comprehension)."""
    x, y = np.full(2, 2.0), np.full(2, 3.0)
    gx, gy = compiled(comprehension_to_helper, x, y)
    np.testing.assert_allclose(gx, 2 * y)
    np.testing.assert_allclose(gy, 2 * x)


def pair_energy(x):
    d = x[:, None, :] - x[None, :, :]
    r2 = np.sum(d * d, axis=-1)
    iu = np.triu_indices(x.shape[0], 1)
    r = r2[iu]
    return np.sum(1.0 / r ** 6 - 1.0 / r ** 3)


def lower_squares(m):
    return np.sum(m[np.tril_indices_from(m, -1)] ** 2)


def test_triangle_indices_compile():
    """`np.triu_indices(n, 1)` in pairwise code sent the whole function to the
    interpreter (no registry entry; now a host call of known result type, with no
    derivative)."""
    x = np.array([[0.0, 0.0], [1.1, 0.2], [0.3, 1.4], [1.5, 1.3]])
    (g,) = compiled(pair_energy, x)
    h, fd = 1e-6, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        fd[i] = (pair_energy(x + e) - pair_energy(x - e)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    m = np.arange(9.0).reshape(3, 3)
    np.testing.assert_array_equal(compiled(lower_squares, m)[0], 2 * np.tril(m, -1))


SRC, DST = np.array([0, 1, 2, 0, 3]), np.array([1, 2, 0, 1, 1])


def message_passing(h, w):
    msg = np.tanh(h[SRC] * w)
    agg = np.zeros_like(h)
    np.add.at(agg, DST, msg)          # repeated destinations add up
    return np.sum(agg ** 2)


def histogram(x):
    out = np.zeros(3)
    np.add.at(out, np.array([0, 1, 1, 2]), x)
    return np.sum(out * np.array([1.0, 2.0, 3.0]) * out)


def _central_all(f, args, h=1e-6):
    out = []
    for k, a in enumerate(args):
        a = np.asarray(a, dtype=float)
        g = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            e = np.zeros_like(a)
            e[i] = h
            up, dn = list(args), list(args)
            up[k], dn[k] = (args[k] + e, args[k] - e) if a.ndim else (args[k] + h, args[k] - h)
            g[i] = (f(*up) - f(*dn)) / (2 * h)
        out.append(g)
    return out


@pytest.mark.parametrize("f, args", [
    (message_passing, (np.array([0.3, -1.2, 0.8, 0.5]), 0.7)),
    (histogram, (np.array([0.4, -0.3, 1.1, 0.9]),)),
])
def test_scatter_add_is_differentiated_and_compiled(f, args):
    """np.add.at (message passing, histograms) was refused: it writes into its array
    argument.  Reverse mode against differences, compiled against the interpreter,
    forward mode against reverse mode."""
    want = gradient(f, *args, backend="interp")
    for w, fd in zip(want, _central_all(f, args)):
        np.testing.assert_allclose(w, fd, rtol=1e-6, atol=1e-9)
    for g, w in zip(compiled(f, *args), want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    ts = tuple(np.linspace(-1.0, 1.0, np.size(a)).reshape(np.shape(a)) if np.ndim(a) else 0.5
               for a in args)
    back = sum(float(np.sum(t * w)) for t, w in zip(ts, want))
    for backend in ("interp", "llvm"):
        assert float(jvp(f, args, ts, backend=backend)[1]) == pytest.approx(back, rel=1e-12)
