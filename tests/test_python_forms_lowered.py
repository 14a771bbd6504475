"""Python forms the lowering now covers (issue 30, item 4): generator functions and
generator expressions, dict and set comprehensions, `{**d, k: v}`, calls mixing `*a`,
`k=v` and `**d`, and f-strings.

Each is checked against CPython (values through `harness.check_lowering`: printed IR
round trip, interpreter, optimised IR), differentiated with `backend="interp"` and
`backend="llvm"` against central differences, and, where the JIT is claimed,
compiled with no fallback (a JitFallbackWarning is an error here).  What stays
refused raises `lowering.UnsupportedError` naming the construct and the line.
"""
from __future__ import annotations

import itertools
import logging
import warnings

import numpy as np
import pytest
from harness import check_lowering

import lowering
from adjoint import gradient, jvp
from jit import jit
from jit.types import TypingError

BACKENDS = ("interp", "llvm")


def central(f, args: tuple, k: int, eps: float = 1e-6):
    """d f / d args[k] by central differences (a float or each entry of an array)."""
    x = args[k]
    if isinstance(x, float):
        up = args[:k] + (x + eps,) + args[k + 1:]
        down = args[:k] + (x - eps,) + args[k + 1:]
        return (f(*up) - f(*down)) / (2 * eps)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        out[i] = (f(*args[:k], x + step, *args[k + 1:])
                  - f(*args[:k], x - step, *args[k + 1:])) / (2 * eps)
    return out


def compiled_gradient(f, *args, backend: str):
    """`gradient(f, *args)`, a fallback to the interpreter being an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return gradient(f, *args, backend=backend)


def check_gradient(f, args: tuple, wrt=(0,)):
    for backend in BACKENDS:
        g = compiled_gradient(f, *args, backend=backend)
        for k in wrt:
            np.testing.assert_allclose(g[k], central(f, args, k), rtol=1e-6, atol=1e-7,
                                       err_msg=f"{f.__name__} d/darg{k} ({backend})")


# -- generator functions: each lowered to the list of what it yields ------------------
def scaled_positive(xs, c=2.0):
    for x in xs:
        if x > 0:
            yield x * c
    yield 1.0


def stops_early(xs):
    for x in xs:
        if x > 10.0:
            return
        yield x


def loop_over_generator(x):
    s = 0.0
    for v in scaled_positive([x, -x, 3.0 * x]):
        if v > 100.0:
            continue
        s += v * v
    return s


def loops_over_generators(x):
    t = 0.0
    for i, v in enumerate(scaled_positive([x, 2.0 * x])):
        t = t + (i + 1) * v
    for u, w in zip(stops_early([x, x * x]), scaled_positive([x, x])):
        t = t + u * w
    return t


def builtins_over_generators(x):
    a = max(scaled_positive([x, x * x]))
    b = list(stops_early([x, 20.0 + x, x]))
    c = tuple(scaled_positive([x], 3.0))
    return a + b[-1] * c[0] + sum(scaled_positive([x, x * x])) + sum(x * k for k in range(3))


def make_layered_model(sizes):
    """autograd's bayesian_neural_net in small: a closure generator of (W, b)."""
    dims = list(itertools.pairwise(sizes))

    def layers(w):
        for n_in, n_out in dims:
            yield w[:n_in * n_out].reshape((n_in, n_out)), w[n_in * n_out:n_in * n_out + n_out]
            w = w[n_in * n_out + n_out:]

    def predict(w, x):
        for W, b in layers(w):
            x = np.tanh(x @ W + b)
        return np.sum(x * x)
    return predict, sum(i * o + o for i, o in dims)


def test_generator_values_match_cpython():
    check_lowering(loop_over_generator, (1.5,), (-0.5,), (40.0,))


def test_loop_over_a_generator_differentiates_compiled():
    check_gradient(loop_over_generator, (1.5,))


def test_generators_consumed_by_loops_enumerate_and_zip():
    check_lowering(loops_over_generators, (1.5,), (-3.0,))
    check_gradient(loops_over_generators, (1.5,))


def test_generators_consumed_by_builtins():
    """(The JIT has no `sum`, `max`, `list` or `tuple` of a list yet: the
    interpreter's gradient is checked.)"""
    check_lowering(builtins_over_generators, (1.5,), (-3.0,))
    assert gradient(builtins_over_generators, 1.5, backend="interp")[0] == \
        pytest.approx(central(builtins_over_generators, (1.5,), 0))


def test_generator_closure_of_weight_layers():
    predict, n = make_layered_model([2, 3, 1])
    w = np.linspace(-1.0, 1.0, n)
    x = np.array([0.3, -0.7])
    check_gradient(predict, (w, x), wrt=(0, 1))
    y, t = jvp(predict, (w, x), (np.ones(n), np.zeros(2)), backend="interp")
    assert y == pytest.approx(predict(w, x))
    assert t == pytest.approx(float(np.sum(central(predict, (w, x), 0))), rel=1e-6)


def guarded_inverses(xs):
    for x in xs:
        try:
            yield 1.0 / x
        except ZeroDivisionError:
            yield -1.0


def doubling(n, x):
    if n == 0:
        yield x
        return
    for v in doubling(n - 1, x * 2.0):
        yield v + 1.0
    yield x


def quiet_logs(xs):
    with np.errstate(all="ignore"):
        for x in xs:
            yield np.log(x)


class Scaler:
    def __init__(self, k):
        self.k = k

    def scaled(self, xs):
        for x in xs:
            yield self.k * x * x


def test_generator_bodies_with_try_with_recursion_and_methods():
    check_lowering(lambda xs: list(guarded_inverses(xs)), ([1.0, 0.0, 2.0],))
    check_lowering(lambda x: tuple(doubling(3, x)), (1.5,))
    check_lowering(lambda xs: list(quiet_logs(xs)), (np.array([1.0, -1.0]),))

    def total(x, m):
        s = 0.0
        for v in m.scaled([x, 2.0 * x]):
            s = s + v
        for v in doubling(2, x):
            s = s + v * v
        return s
    check_gradient(total, (1.5, Scaler(3.0)))


def sends_into_generator(n):
    total = 0
    for i in range(n):
        total += yield i
    return total


def delegates(n):
    yield from range(n)


@pytest.mark.parametrize("f,construct", [(sends_into_generator, "the value of a yield"),
                                         (delegates, "yield from")])
def test_generator_forms_still_refused(f, construct):
    with pytest.raises(lowering.UnsupportedError, match=construct) as info:
        lowering.lower(f)
    assert f.__qualname__ in str(info.value) and __file__ in str(info.value)


# -- generator expressions iterated by for, enumerate, zip -----------------------------
def genexpr_loops(x, ws):
    s = 0.0
    for v in (x * w for w in ws):
        s = s + v * v
    for i, v in enumerate(x * w for w in ws):
        s = s + i * v
    for (a,) in zip(w * x for w in ws):
        s = s + a
    return s


def test_generator_expressions_in_loops():
    ws = [1.0, -2.0, 0.5]
    check_lowering(genexpr_loops, (1.5, ws), (0.0, []))
    check_gradient(genexpr_loops, (1.5, ws))


def zipped_comprehensions(x, ws):
    s = 0.0
    for a, b in zip(ws, (x * w for w in ws)):
        s = s + a * b
    for i, (a, b) in enumerate(zip([x * w for w in ws], (w + x for w in ws))):
        s = s + i * a * b
    return s + sum((x * w for w in ws), 1.0) + max(x, max(w * w for w in ws))


def test_comprehensions_among_the_arguments_of_zip_and_builtins():
    ws = [1.0, -2.0, 0.5]
    check_lowering(zipped_comprehensions, (1.5, ws), (-3.0, []))
    g = gradient(zipped_comprehensions, 1.5, ws, backend="interp")[0]
    assert g == pytest.approx(central(zipped_comprehensions, (1.5, ws), 0))


def keeps_a_genexpr(n):
    g = (i * i for i in range(n))
    return next(g)


def test_generator_expression_kept_is_refused():
    with pytest.raises(lowering.UnsupportedError, match="generator expression"):
        lowering.lower(keeps_a_genexpr)


# -- dict and set comprehensions --------------------------------------------------------
def dict_comprehension(x, n):
    d = {k: x * (k + 1) for k in range(n) if k != 1}
    squares = {k: v * v for k, v in zip(range(n), [x] * n)}
    return d[0] + 2.0 * d[n - 1] + squares[0]


def set_comprehension(n):
    s = {k % 3 for k in range(n)}
    return len(s) + sum(s)


def test_dict_and_set_comprehensions_match_cpython():
    check_lowering(dict_comprehension, (1.5, 3), (-2.0, 4))
    check_lowering(set_comprehension, (0,), (5,))


def test_dict_comprehension_differentiates():
    g = gradient(dict_comprehension, 1.5, 3, backend="interp")
    assert g[0] == pytest.approx(central(dict_comprehension, (1.5, 3), 0))
    _, t = jvp(dict_comprehension, (1.5, 3), (1.0, None), backend="interp")
    assert t == pytest.approx(g[0])


def test_dict_comprehension_refused_by_the_jit_clearly():
    """Keys computed at run time have no compiled form (a dict compiles with constant
    keys): llvm says so, naming the construct and not zygopy's helpers."""
    with pytest.raises(TypingError, match="dict comprehension") as info:
        gradient(dict_comprehension, 1.5, 3, backend="llvm")
    assert "lowering" not in str(info.value)


# -- {**d, k: v} and f(*a, k=v, **d) -----------------------------------------------------
def merged_dicts(x, d):
    e = {"a": x, **d, "c": 3.0 * x}
    f = {**e, "a": x * x}            # overrides e's "a": its old value has no gradient
    return e["a"] * f["b"] + f["a"] * f["c"]


def product(a, b, c=1.0):
    return a * b * c


def mixed_calls(x, d):
    t = (x,)
    one = product(*t, b=x, **d)
    two = product(b=2.0 * x, **{"a": x}, **d)  # noqa: PIE804 - a display spread on purpose
    return one + two


def test_dict_splat_values_and_gradients():
    d = {"b": 2.0}
    check_lowering(merged_dicts, (1.5, d))
    for backend in BACKENDS:
        gx, gd = compiled_gradient(merged_dicts, 1.5, d, backend=backend)
        assert gx == pytest.approx(central(merged_dicts, (1.5, d), 0))
        assert gd == pytest.approx({"b": 1.5 + 0.0})   # e["a"] * f["b"]: d/db = x


def test_overridden_entry_gets_no_gradient():
    def f(x, d):
        e = {**d, "a": x}
        return e["a"] * e["b"]
    for backend in BACKENDS:
        gx, gd = compiled_gradient(f, 1.5, {"a": 1.0, "b": 2.0}, backend=backend)
        assert gx == pytest.approx(2.0) and gd == pytest.approx({"a": 0.0, "b": 1.5})


def test_calls_mixing_star_keywords_and_double_star():
    d = {"c": 0.5}
    check_lowering(mixed_calls, (1.5, d), (2.0, {}))
    for backend in BACKENDS:
        gx, gd = compiled_gradient(mixed_calls, 1.5, d, backend=backend)
        assert gx == pytest.approx(central(mixed_calls, (1.5, d), 0))
        assert gd["c"] == pytest.approx(3.0 * 1.5 * 1.5)

def test_dict_splat_forward_mode():
    d = {"b": 2.0}
    for backend in BACKENDS:
        _, t = jvp(merged_dicts, (1.5, d), (1.0, {"b": 0.0}), backend=backend)
        assert t == pytest.approx(central(merged_dicts, (1.5, d), 0))


@pytest.mark.parametrize("backend", ("interp", "auto"))
def test_keyword_given_twice_is_cpythons_type_error(backend):
    def f(x, d):
        return product(x, b=x, **d)
    with pytest.raises(TypeError, match="multiple values for keyword argument 'b'"):
        f(1.0, {"b": 2.0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match="multiple values for keyword argument 'b'"):
            gradient(f, 1.0, {"b": 2.0}, backend=backend)


# -- f-strings ---------------------------------------------------------------------------
def formats(x, w, p, v):
    return (f"a{{b}} {x!r:>22} {x:{w}.{p}f} {x=} {3:03d} {'q'!r} {v} "
            f"{x:{8}.{2}e} {[x, -x]!s} {v!a}")


def test_f_strings_format_as_cpython():
    check_lowering(formats, (np.pi, 8, 3, "é"), (-2.5, 4, 0, ""))


LOG = logging.getLogger("zygopy.tests.python_forms")


def report(step, value):
    print(f"step {step:3d}: {value:{10}.{4}f} {value!r}")


def logged_loss(w, n):
    s = 0.0
    for i in range(n):
        s = s + np.sum(w * w) * (i + 1)
        report(i, s)
        LOG.info(f"{i} {w} {s:.2e}")
    unused = f"{s}"   # noqa: F841 - an f-string nothing reads
    return s


def test_printed_and_logged_f_strings_stay_compiled(capsys, caplog):
    w = np.array([1.0, 2.0])
    caplog.set_level(logging.INFO, logger=LOG.name)
    check_gradient(logged_loss, (w, 2))
    capsys.readouterr()
    caplog.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jit(logged_loss)(w, 2) == 15.0
        _, t = jvp(logged_loss, (w, 2), (np.ones(2), None), backend="llvm")
    assert t == pytest.approx(18.0)
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["step   0:     5.0000 5.0", "step   1:    15.0000 15.0"]
    # (zygopy's own progress record, when a compile takes over a second on a loaded
    # machine, is not the program's)
    assert [r.getMessage() for r in caplog.records if r.name == LOG.name][:2] == [
        "0 [1. 2.] 5.00e+00", "1 [1. 2.] 1.50e+01"]


def uses_the_string(x):
    return len(f"{x:.2f}") * x


def returns_the_string(x):
    return f"{x:.2f}"


def test_other_uses_of_an_f_string_are_refused_by_the_jit():
    """Compiled code holds an f-string as its values: reading it as a string is
    refused (never a wrong value); `auto` runs such a function in the interpreter."""
    with pytest.raises(TypingError, match="f-string"):
        gradient(uses_the_string, 1.5, backend="llvm")
    with pytest.raises(TypingError, match="f-string"):
        jit(returns_the_string)(1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradient(uses_the_string, 1.5) == (4.0,)


# -- found on the way: compiled forward mode and closures of one code -------------------
def make_objective(density):
    def objective(w):
        return np.sum(density(w)) + np.sum(w)
    return objective


def test_jvp_of_two_closures_of_one_code_capturing_different_functions():
    """The compiled tangent of the first closure once ran for the second (its wrapper
    checked only the classes of the arguments: every function has the same one)."""
    first = make_objective(lambda w: w * w)
    second = make_objective(lambda w: 3.0 * w * w * w)
    w, t = np.array([1.0, 2.0]), np.array([1.0, -1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jvp(first, (w,), (t,), backend="llvm")[1] == pytest.approx(-2.0 + 0.0)
        assert jvp(second, (w,), (t,), backend="llvm")[1] == pytest.approx(9.0 - 36.0 + 0.0)
