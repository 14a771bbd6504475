"""Lists built by the program: list comprehensions and generator expressions
(inlined by `lowering.comprehensions`) and `acc.append(v)` on a local list
(`list_append`).  CPython, the IR (printed, parsed, optimised) and the interpreter
agree, and gradients through them match central differences and keep the
argument's structure (a list for a list)."""
from __future__ import annotations

import numpy as np
import pytest

from adjoint import gradient
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
