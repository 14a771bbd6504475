"""The calling forms users write: `*args` and `**kwargs` parameters (of the
differentiated function and of the functions it calls), calls `f(*t, **d)`, dict
displays, and `functools.partial`.  CPython, the interpreter and the JIT agree;
gradients match central differences and come back one per positional argument
passed."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from adjoint import gradient, pullback
from tests.adjoint_check import check_gradient
from tests.harness import check_lowering
from tests.jit_grad_check import check_llvm

from jit import jit as jit_decorated


def concat_and_multiply(weights, *args):
    cat = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat, weights)


def squash(z):
    return z / (1.0 + z * z)     # (not np.tanh: numpy's SIMD tanh and libm's differ by an ulp)


def rnn_step(W, x, h):
    return np.sum(squash(concat_and_multiply(W, x, h)))


def total(*xs, scale=2.0):
    s = 0.0
    for x in xs:
        s = s + x * x
    return s * scale


def calls_total(a, b):
    return total(a, b, 3.0) + total(a, scale=0.5) + total()


def calls_with_extras(a, b):
    return total(a, b, 3.0) + total(a, scale=0.5)


def first_and_rest(w, *xs):
    return w * xs[0] + xs[1] * xs[0]


RNG = np.random.default_rng(4)


def squares(*xs):
    return sum(np.sum(x * x) for x in xs)


def test_same_as_cpython():
    check_lowering(calls_total, (1.5, 2.0))
    check_lowering(squares, (1.0, 2.0, 3.0), (np.ones(2),))
    check_lowering(first_and_rest, (2.0, 3.0, 4.0))


def test_callee_with_star_args():
    check_gradient(rnn_step, RNG.normal(size=(6, 2)), RNG.normal(size=(4, 2)),
                   RNG.normal(size=(4, 3)))
    check_gradient(calls_total, 1.5, 2.0)


def test_differentiated_function_with_star_args():
    assert gradient(total, 1.0, 2.0, backend="interp") == (4.0, 8.0)
    g = gradient(squares, 1.0, np.array([1.0, 2.0]) * np.ones((2, 1)), backend="interp")
    assert g[0] == 2.0 and np.array_equal(g[1], [[2.0, 4.0], [2.0, 4.0]])
    check_gradient(first_and_rest, 2.0, 3.0, 4.0)


def test_compiled_star_args():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, back = pullback(first_and_rest, 2.0, 3.0, 4.0, backend="llvm")
    assert (y, back(1.0)) == (18.0, (3.0, 6.0, 3.0))
    assert check_llvm(first_and_rest, 2.0, 3.0, 4.0) == "ok"


def test_keyword_only_without_default_is_a_clear_error():
    def needs(*xs, scale):
        return sum(xs) * scale
    with pytest.raises(TypeError, match="missing a required argument: 'scale'"):
        pullback(needs, 1.0, backend="interp")


def affine(weights, *parts):
    stacked = np.hstack(parts + (np.ones((parts[0].shape[0], 1)),))
    return np.dot(stacked, weights)


def one_part(W, h):
    return np.sum(squash(affine(W, h)))     # as many arguments as parameters


def test_a_single_star_argument_is_still_packed():
    W, h = RNG.normal(size=(4, 2)), RNG.normal(size=(5, 3))
    check_lowering(one_part, (W, h))
    check_gradient(one_part, W, h)
    assert check_llvm(one_part, W, h) == "ok"


def test_compiled_calls_of_star_args_functions():
    assert check_llvm(rnn_step, RNG.normal(size=(6, 2)), RNG.normal(size=(4, 2)),
                      RNG.normal(size=(4, 3))) == "ok"
    assert check_llvm(calls_with_extras, 1.5, 2.0) == "ok"     # one and two extras


# -- **kwargs parameters, f(*t, **d), dict displays, functools.partial ----------------

def scaled(x, **opts):
    return x * opts["a"] + opts["b"]


def calls_scaled(x, y):
    return scaled(x, a=y, b=2.0) + scaled(y, b=x, a=3.0)


def spreads_a_local_tuple(x, y):
    t = (x, y)
    return np.hypot(*t) + first_and_rest(*t, x)


def forwards(*args, **kw):
    return scaled(*args, **kw)


def calls_forwards(x, y):
    return forwards(x, a=y, b=x * y)


def spreads_a_dict(x, y):
    d = {"b": y, "a": x * x}
    return scaled(x, **d) + d["a"]


def displays(W, b):
    params = {"W": W, "b": b, "scale": 2.0}
    return np.sum(squash(params["W"] * params["b"]) * params["scale"])


def repeated_key(x):
    d = {"a": x, "a": 3.0 * x}      # noqa: F601  (the last value wins, as in CPython)
    return d["a"] * d["a"]


def returns_dict(x, y):
    return {"sum": x + y, "prod": x * y}


def affine_map(W, x, b=0.0, *, act=np.tanh):
    return np.sum(act(W @ x + b))


BOUND = functools.partial(affine_map, b=0.5)


def uses_a_global_partial(W, x):
    return BOUND(W, x) + BOUND(W, 2.0 * x, act=np.sin)


def uses_a_local_partial(x, y):
    p = functools.partial(scaled, a=2.0)
    q = functools.partial(np.hypot, x)
    return p(y, b=x) * q(y)


W0 = RNG.normal(size=(3, 4))
X0 = RNG.normal(size=4)


def test_new_forms_same_as_cpython():
    check_lowering(calls_scaled, (1.5, 2.0))
    check_lowering(spreads_a_local_tuple, (1.5, 2.0))
    check_lowering(calls_forwards, (1.5, 2.0))
    check_lowering(spreads_a_dict, (1.5, 2.0))
    check_lowering(repeated_key, (1.5,))
    check_lowering(returns_dict, (1.5, 2.0))
    check_lowering(uses_a_global_partial, (W0, X0))
    check_lowering(uses_a_local_partial, (1.5, 2.0))


@pytest.mark.parametrize("f, args", [
    (calls_scaled, (1.5, 2.0)), (spreads_a_local_tuple, (1.5, 2.0)),
    (calls_forwards, (1.5, 2.0)), (spreads_a_dict, (1.5, 2.0)), (repeated_key, (1.5,)),
    (displays, (W0, X0)), (uses_a_global_partial, (W0, X0)),
    (uses_a_local_partial, (1.5, 2.0)),
])
def test_new_forms_gradients(f, args):
    check_gradient(f, *args)


def test_closed_forms():
    x, y = 1.5, 2.0
    # d/dx, d/dy of x*y + 2 + y*3 + x
    assert gradient(calls_scaled, x, y, backend="interp") == (y + 1.0, x + 3.0)
    # x * x*x + y + x*x
    assert gradient(spreads_a_dict, x, y, backend="interp") == (3 * x * x + 2 * x, 1.0)
    assert gradient(repeated_key, x, backend="interp") == (18.0 * x,)


@pytest.mark.parametrize("f, args", [
    (calls_scaled, (1.5, 2.0)), (spreads_a_local_tuple, (1.5, 2.0)),
    (calls_forwards, (1.5, 2.0)), (spreads_a_dict, (1.5, 2.0)), (repeated_key, (1.5,)),
    (displays, (W0[:2, :3], X0[:3])), (returns_dict, (1.5, 2.0)), (uses_a_global_partial, (W0, X0)),
])
def test_new_forms_compiled(f, args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_llvm(f, *args) == "ok"


def test_a_returned_dict_has_a_dict_cotangent():
    for backend in ("interp", "llvm"):
        y, back = pullback(returns_dict, 1.5, 2.0, backend=backend)
        assert y == {"sum": 3.5, "prod": 3.0}
        assert back({"sum": 1.0, "prod": 2.0}) == (5.0, 4.0)


def test_keywords_and_partials_at_the_top_level_are_held_constant():
    """As JAX's grad: one cotangent per positional argument; keywords and the
    arguments a partial binds are not differentiated."""
    for backend in ("interp", "llvm"):
        assert gradient(scaled, 2.0, a=3.0, b=1.0, backend=backend) == (3.0,)
        g = gradient(functools.partial(affine_map, W0), X0, b=0.25, backend=backend)
        assert len(g) == 1 and g[0].shape == X0.shape
        ref = gradient(affine_map, W0, X0, 0.25, backend="interp")[1]
        assert np.allclose(g[0], ref, rtol=1e-13, atol=0)
        inner = functools.partial(functools.partial(total, 1.0, scale=1.0), scale=3.0)
        assert gradient(inner, 2.0, backend=backend) == (12.0,)


def test_binding_errors_are_cpythons():
    with pytest.raises(TypeError):
        pullback(scaled, 1.0, 2.0, backend="interp")     # too many positionals
    with pytest.raises(KeyError):
        pullback(scaled, 1.0, a=2.0, backend="interp")    # opts["b"] is missing


def test_a_local_partial_runs_in_the_interpreter_with_a_clear_refusal():
    assert check_llvm(uses_a_local_partial, 1.5, 2.0).startswith("refused: ")


def partials_of_numpy(w):
    colsum = functools.partial(np.sum, axis=0)
    shift = functools.partial(np.add, 1.0)
    dot_x = functools.partial(np.matmul, W0[:2, :3])
    return np.sum(colsum(W0[:, :3] * w) ** 2) + np.sum(shift(w) ** 2) + np.sum(np.tanh(dot_x(w)))


def test_a_partial_of_a_numpy_function_made_in_the_loss_compiles():
    w = np.array([0.5, -1.0, 2.0])
    check_lowering(partials_of_numpy, (w,))
    check_gradient(partials_of_numpy, w)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jit_decorated(partials_of_numpy)(w) == partials_of_numpy(w)
        got = gradient(partials_of_numpy, w, backend="llvm")[0]
    np.testing.assert_allclose(got, gradient(partials_of_numpy, w, backend="interp")[0],
                               rtol=1e-12)
    from adjoint import jvp
    assert jvp(partials_of_numpy, (w,), (np.ones(3),))[1] == pytest.approx(np.sum(got),
                                                                           rel=1e-12)


def keyword_only_scale(x, b=0.0, *, scale=2.0):
    return (x + b) * scale


def test_keyword_only_defaults_are_their_own():
    """A keyword-only default is the parameter's own, not a positional default."""
    for backend in ("interp", "llvm"):
        assert pullback(keyword_only_scale, 1.0, 0.5, backend=backend)[0] == 3.0
        assert gradient(keyword_only_scale, 1.0, 0.5, backend=backend) == (2.0, 2.0)
        assert gradient(keyword_only_scale, 1.0, scale=3.0, backend=backend) == (3.0,)


def nested_keyword_only_defaults(x):
    def scale(v, *, k=2.0, label="s"):
        return v * k if label == "s" else v
    return scale(x) + scale(x, k=3.0) + scale(x, label="t")


def nested_default_computed_at_run_time(x):
    c = x * 2.0

    def scale(v, *, k=c):
        return v * k
    return scale(x)


def test_keyword_only_defaults_of_a_nested_function():
    check_lowering(nested_keyword_only_defaults, (1.5,))
    check_gradient(nested_keyword_only_defaults, 1.5)
    assert gradient(nested_keyword_only_defaults, 1.5, backend="interp") == (6.0,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jit_decorated(nested_keyword_only_defaults)(1.5) == 9.0
        assert gradient(nested_keyword_only_defaults, 1.5, backend="llvm") == (6.0,)
    from lowering import UnsupportedError
    with pytest.raises(UnsupportedError, match="keyword-only defaults computed at run time.*"
                       "nested_default_computed_at_run_time.*test_calling_forms.py:"):
        gradient(nested_default_computed_at_run_time, 1.5)


# -- zip(*t): the loop over the rows of several sequences --------------------------------

def mixture_parts(p):
    return p["w"] - np.log(np.sum(np.exp(p["w"]))), p["means"], p["roots"]


def over_rows(p, x):
    total = 0.0
    for w, mean, root in zip(*mixture_parts(p)):
        d = (x - mean) @ root
        total = total + w - 0.5 * np.sum(d * d)
    return total


def zip_with_more(a, b):
    t = (a, b)
    s = 0.0
    for x, y, z in zip(a, *t):
        s = s + x * y - z
    return s


def comprehension_over_rows(a, b):
    rows = (a, b)
    return sum(x * y for x, y in zip(*rows))


MIX = {"w": RNG.normal(size=3), "means": RNG.normal(size=(3, 2)),
       "roots": RNG.normal(size=(3, 2, 2))}


def test_zip_of_a_starred_tuple():
    x = RNG.normal(size=2)
    check_lowering(zip_with_more, (np.arange(3.0), np.ones(4)))
    check_lowering(comprehension_over_rows, (np.arange(3.0), np.ones(4)))
    check_gradient(over_rows, MIX, x)
    check_gradient(zip_with_more, np.arange(3.0), np.ones(4))
    check_gradient(comprehension_over_rows, np.arange(3.0), np.ones(4))
    for f, args in ((over_rows, (MIX, x)), (zip_with_more, (np.arange(3.0), np.ones(4)))):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert check_llvm(f, *args) == "ok"


def test_a_built_list_returned_is_refused_not_none():
    """Compiled code cannot return a list it built yet: a clear refusal (the interpreter
    runs it under backend="auto"), never a silent None."""
    def doubled(a):
        return [2.0 * v for v in a]
    from jit.types import TypingError
    with pytest.raises(TypingError, match="returning a list built in compiled code"):
        pullback(doubled, np.arange(3.0), backend="llvm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y, back = pullback(doubled, np.arange(3.0))
    assert y == [0.0, 2.0, 4.0] and np.array_equal(back([1.0, 1.0, 1.0])[0], [2.0] * 3)


@jit_decorated
def _scaled_cube(x, k):
    return k * x ** 3


@jit_decorated
def _calls_jit_function(x):
    return _scaled_cube(x, 2.0) + x


def _differentiates_jit_function(x, y):
    return _scaled_cube(x * y, 0.5) - y


def test_a_jit_function_calling_a_jit_function():
    """As with Numba's `@njit` calling `@njit`: the caller compiles the callee's code
    (it used to compile the wrapper's, and failed), and a gradient differentiates it."""
    import jit
    assert _calls_jit_function(1.5) == 2.0 * 1.5 ** 3 + 1.5
    assert _calls_jit_function.py_func(1.5) == _calls_jit_function(1.5)
    listing = str(jit.code_typed(_calls_jit_function, 1.5))
    assert "function _scaled_cube" in listing and "<jit entry>" not in listing
    x, y = 1.2, 0.7
    want = (1.5 * (x * y) ** 2 * y, 1.5 * (x * y) ** 2 * x - 1.0)
    for backend in ("interp", "llvm"):
        got = gradient(_differentiates_jit_function, x, y, backend=backend)
        assert got == pytest.approx(want, rel=1e-12), backend
    check_gradient(_differentiates_jit_function, x, y)
