"""Lists built by the program: list comprehensions and generator expressions
(inlined by `lowering.comprehensions`) and `acc.append(v)` on a local list
(`list_append`).  CPython, the IR (printed, parsed, optimised) and the interpreter
agree, and gradients through them match central differences and keep the
argument's structure (a list for a list)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jit
from adjoint import gradient, jvp
from tests.adjoint_check import check_gradient
from tests.harness import check_lowering


def squares(xs):
    return sum([x * x for x in xs])


def filtered(xs, y):
    ys = [x * y for x in xs if x > 0]
    return ys[0] * ys[-1]


def two_loops(xs, ys):
    return sum(a * b for a in xs for b in ys)


def nested(xs):
    x = 5.0              # the comprehension's x is its own: this one is read after
    zs = [[x * w for w in xs] for x in xs]
    return zs[0][1] + zs[1][0] + x


def in_loop(ws, x):
    for w in ws:         # a comprehension reading the loop variable
        x = sum([np.sum(w * x) for _ in range(2)]) * w
    return np.sum(x)


def layers(params, x):
    hs = [np.tanh(W @ x + b) for W, b in params]
    return sum(np.sum(h * h) for h in hs)


def consumers(xs):
    return max(x for x in xs) + min(x * 2.0 for x in xs) + sum(tuple(x for x in xs))


def zipped(xs, ys):
    return sum([a * b for a, b in zip(xs, ys)]) + sum(k * v for k, v in enumerate(xs))


def any_all(xs):
    return float(any(x > 1.5 for x in xs)) + float(all(x > 0 for x in xs)) * xs[0]


def rnn_like(xs, h):
    out = [h * 2.0]
    for x in xs:
        h = np.tanh(x * h)
        out.append(h)
    return sum(np.sum(o) for o in out)


def outputs(xs, h):
    outs = [h * 1.0]
    for x in xs:
        h = np.tanh(x * h)
        outs.append(h)
    return outs                   # returned after its appends: still rewritten


def uses_outputs(xs, h):
    return sum(np.sum(o * o) for o in outputs(xs, h))


def appended_rows(xs):
    rows = []
    for i in range(len(xs)):
        if i != 1:
            rows.append(xs[i] * float(i))
    return sum(np.sum(r ** 2) for r in rows) + len(rows) + rows[-1][0]


def aliased(xs):
    acc = []
    for x in xs:
        acc.append(x * x)
    b = acc          # a second name for the list: not rewritten, refused when differentiated
    return acc[0] + b[-1]


def free_variable_of_a_nested_function(xs, y):
    def inner(zs):          # y is inner's free variable, read by nested comprehensions
        return sum([z * y for z in zs]) + sum([[w * y for w in zs][0] for _ in zs])
    return inner(xs)


RNG = np.random.default_rng(3)
PARAMS = [(RNG.normal(size=(3, 4)), RNG.normal(size=3)), (RNG.normal(size=(3, 4)), RNG.normal(size=3))]
CASES = [
    (squares, ([1.0, 2.0, -3.0],)),
    (filtered, ([1.0, 2.0, -1.0, 4.0], 3.0)),
    (two_loops, ([1.0, 2.0], [3.0, 4.0, 0.5])),
    (nested, ([1.0, 2.0],)),
    (in_loop, ([np.ones(3) * 0.5, np.ones(3) * 0.1], np.arange(3.0))),
    (layers, (PARAMS, RNG.normal(size=4))),
    (consumers, ([1.0, 2.5, -0.5],)),
    (zipped, ([1.0, 2.0, 3.0], [0.5, -1.0, 2.0])),
    (any_all, ([1.0, 2.0, 0.5],)),
    (rnn_like, ([1.0, 2.0, 0.5], np.array([0.1, 0.2]))),
    (appended_rows, (np.ones((3, 2)),)),
    (uses_outputs, ([0.5, -1.0], np.array([0.3, 0.1]))),
    (free_variable_of_a_nested_function, ([1.0, 2.0], 3.0)),
]


@pytest.mark.parametrize("f,args", CASES, ids=[f.__name__ for f, _ in CASES])
def test_same_as_cpython(f, args):
    check_lowering(f, args)


@pytest.mark.parametrize("f,args", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient(f, args):
    check_gradient(f, *args)


def test_gradient_keeps_the_argument_structure():
    g = gradient(layers, PARAMS, np.ones(4), backend="interp")[0]
    assert isinstance(g, list) and all(isinstance(p, tuple) and len(p) == 2 for p in g)
    assert g[0][0].shape == (3, 4) and g[1][1].shape == (3,)
    g = gradient(squares, [1.0, 2.0], backend="interp")[0]
    assert g == [2.0, 4.0]


def test_comprehension_variable_does_not_leak():
    def f(xs):
        [x for x in xs]
        return x  # noqa: F821  (a NameError in CPython: x is not a local of f)
    with pytest.raises(NameError):
        f([1.0])
    with pytest.raises(NameError):
        gradient(f, [1.0], backend="interp")


def test_append_to_an_aliased_list_is_refused_not_wrong():
    check_lowering(aliased, ([1.0, 2.0],))
    with pytest.raises(TypeError, match="list.append"):
        gradient(aliased, [1.0, 2.0], backend="interp")


# -- list() of an array: compiled as a built list of its entries along the first axis --
def rows_of(A):
    s = 0.0
    for r in list(A):
        s = s + np.sum(r * r) * r[0]
    return s


def restacked(A):
    return np.sum(np.stack(list(A)) ** 3)


def ends(v):
    entries = list(v)
    return entries[0] * entries[-1] + len(entries)


def trimmed_mean(v):
    kept = sorted(list(v))[1:-1]
    return sum(kept) / len(kept)


def matrices(T):
    return sum(np.sum(m @ m) for m in list(T))


def weighted_by_counts(k, x):
    t = 0.0
    for c in list(k):
        t = t + c * x
    return t


ARRAY_LISTS = [
    (rows_of, (np.arange(6.0).reshape(2, 3) / 5,)),
    (restacked, (np.arange(6.0).reshape(2, 3) / 5,)),
    (ends, (np.array([0.3, 0.4, 0.7]),)),
    (trimmed_mean, (np.array([3.0, 1.0, 2.0, 5.0]),)),
    (matrices, (np.arange(12.0).reshape(3, 2, 2) / 7,)),
    (weighted_by_counts, (np.arange(3), 2.0)),
]


@pytest.mark.parametrize("f,args", ARRAY_LISTS, ids=[f.__name__ for f, _ in ARRAY_LISTS])
def test_list_of_an_array_compiles_and_differentiates(f, args):
    check_lowering(f, args)
    assert jit.jit(f)(*args) == f(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("error", jit.JitFallbackWarning)
        check_gradient(f, *args)
        compiled = gradient(f, *args, backend="llvm")
    interpreted = gradient(f, *args, backend="interp")
    for c, i in zip(compiled, interpreted):
        assert (c is None) == (i is None) and (c is None or np.allclose(c, i, rtol=1e-13))
    first = args[0]
    if first.dtype == np.float64:      # forward mode agrees with reverse mode
        t = np.linspace(0.5, 1.5, first.size).reshape(first.shape)
        _, tangent = jvp(f, args, (t,) + tuple(np.zeros_like(a) for a in args[1:]),
                         backend="llvm")
        assert np.isclose(tangent, np.sum(compiled[0] * t), rtol=1e-12)


def test_list_of_an_empty_array_and_of_bools():
    assert jit.jit(lambda v: float(len(list(v))))(np.zeros(0)) == 0.0
    with pytest.raises(IndexError, match="list index out of range"):
        jit.jit(ends)(np.zeros(0))
    with pytest.raises(TypeError, match=r"list\(\) of a array\(bool, 1d\) is not compiled"):
        jit.jit(ends)(np.zeros(3, dtype=bool))


def weighted_ranks(xs):
    ranked = sorted(xs)
    return sum(r * float(k + 1) for k, r in enumerate(ranked))


@pytest.mark.parametrize("xs", [[3.0, 1.0, 2.0], [2.0, 1.0, 2.0, 0.5]], ids=["distinct", "ties"])
def test_forward_mode_of_sorted_is_compiled_and_follows_the_stable_order(xs):
    t = [0.25 * (k + 1) for k in range(len(xs))]
    expect = sum(float(r + 1) * t[i] for r, i in
                 enumerate(sorted(range(len(xs)), key=xs.__getitem__)))
    for backend in ("llvm", "interp"):
        y, dy = jvp(weighted_ranks, (xs,), (t,), backend=backend)
        assert y == weighted_ranks(xs) and dy == pytest.approx(expect, rel=1e-14)
    # reverse=: the interpreter's rule (equal entries keep their order, as CPython's)
    y, dy = jvp(lambda v: sorted(v, reverse=True)[0] * 3.0 + sorted(v, reverse=True)[1],
                (xs,), (t,), backend="interp")
    order = sorted(range(len(xs)), key=xs.__getitem__, reverse=True)
    assert dy == pytest.approx(3.0 * t[order[0]] + t[order[1]], rel=1e-14)


def sum_if_any(x, n):
    acc = [x * i for i in range(n)]
    if not acc:
        return x
    return sum(acc) if acc else 0.0


@pytest.mark.parametrize("n", [4, 0])
def test_the_truth_of_a_built_list_is_its_length(n):
    with warnings.catch_warnings():
        warnings.simplefilter("error", jit.JitFallbackWarning)
        assert jit.jit(sum_if_any)(1.5, n) == sum_if_any(1.5, n)
        got = gradient(sum_if_any, 1.5, n, backend="llvm")[0]
    assert got == gradient(sum_if_any, 1.5, n, backend="interp")[0] == (6.0 if n else 1.0)
