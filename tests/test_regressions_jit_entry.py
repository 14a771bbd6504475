"""Regressions of the JIT's entry points, globals and process-wide tables.

* A `jit` function binds a call as the Python function does (its own parameter names,
  defaults, keyword-only and positional-only parameters, *args, **kwargs) and words a
  TypeError as CPython does.
* A global that is not defined, or a module attribute that does not exist, is an
  error only on a path that runs (NameError / AttributeError, CPython's message), in
  every backend.
* First calls made from many threads at once all compile and agree with one thread.
* A closure the JIT cannot compile is refused in the user's terms.
"""
from __future__ import annotations

import math
import random
import threading
import types

import numpy as np
import pytest

import jit
from adjoint import gradient, jvp, pullback, value_and_grad
from jit.types import TypingError


# -- the entry binds calls as Python does -------------------------------------------------

def one(x):
    return x * 2.0


def defaults(x, y=3.0, *rest, scale=1.0, **named):
    return (x + y + len(rest)) * scale


def positional_only(x, /, y):
    return x - y


def _outcome(fn, args, kwargs):
    try:
        return ("value", fn(*args, **kwargs))
    except TypeError as e:
        return ("TypeError", str(e))


CALLS = [
    (one, (1.5,), {}), (one, (), {"x": 1.5}), (one, (), {}), (one, (1.0, 2.0), {}),
    (one, (), {"y": 1.0}), (one, (1.0,), {"x": 1.0}),
    (defaults, (1.0,), {}), (defaults, (1.0, 2.0, 7, 8), {"scale": 2.0}),
    (defaults, (), {"y": 1.0}), (defaults, (1.0,), {"other": 1}),
    (positional_only, (5.0, 2.0), {}), (positional_only, (5.0,), {"y": 2.0}),
    (positional_only, (), {"x": 5.0, "y": 2.0}), (positional_only, (5.0,), {}),
]


@pytest.mark.parametrize("fn,args,kwargs", CALLS,
                         ids=[f"{f.__name__}-{a}-{sorted(k)}" for f, a, k in CALLS])
def test_jit_call_binds_like_python(fn, args, kwargs):
    j = jit.jit(fn)
    j(*[1.0] * (1 if fn is one else 2))       # a compiled signature: the fast entry too
    assert _outcome(j, args, kwargs) == _outcome(fn, args, kwargs)


def test_missing_argument_names_the_parameter_of_a_nested_function():
    def outer():
        def inner(alpha, beta):
            return alpha * beta
        return inner
    inner = outer()
    j = jit.jit(inner)
    assert j(alpha=2.0, beta=4.0) == 8.0
    with pytest.raises(TypeError) as got:
        j(2.0)
    with pytest.raises(TypeError) as want:
        inner(2.0)
    assert str(got.value) == str(want.value)
    assert "'beta'" in str(got.value)


def test_parameter_names_that_shadow_the_entry_own_names():
    def f(type, slow, _zy_w):
        return type + slow * _zy_w
    j = jit.jit(f)
    assert j(1.0, 2.0, 3.0) == j(type=1.0, slow=2.0, _zy_w=3.0) == 7.0


def test_keywords_with_code_loaded_from_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ZYGOPY_CACHE_DIR", str(tmp_path))
    ns: dict = {}
    exec(compile(f"def scaled(x, k):\n    return x * k + {random.random()!r}\n",
                 str(tmp_path / "scaled_src.py"), "exec"), ns)
    first = ns["scaled"]
    assert jit.jit(first)(x=2.0, k=3.0) == first(2.0, 3.0)
    # a second function object of the same code: its own dispatcher, the cached entry
    again = types.FunctionType(first.__code__, first.__globals__, "scaled")
    j = jit.jit(again)
    assert j(k=3.0, x=2.0) == first(2.0, 3.0)
    with pytest.raises(TypeError, match=r"scaled\(\) missing 1 required positional "
                                        r"argument: 'k'"):
        j(2.0)


# -- names that are missing only on a path that does not run ------------------------------

def _reads_missing(x):
    return x + not_defined_here            # noqa: F821


def calls_missing_when_big(x):
    if x > 100.0:
        return _reads_missing(x)
    return x * x


def missing_in_branch(x):
    if x > 100.0:
        return x + also_not_defined        # noqa: F821
    return 3.0 * x


def missing_attribute_in_branch(x):
    if x > 100.0:
        return math.no_such_function(x)    # noqa: F821
    return math.sin(x)


CASES = [(calls_missing_when_big, 1.5, 1.5 ** 2, 2 * 1.5, NameError,
          "name 'not_defined_here' is not defined"),
         (missing_in_branch, 1.5, 4.5, 3.0, NameError,
          "name 'also_not_defined' is not defined"),
         (missing_attribute_in_branch, 1.5, math.sin(1.5), math.cos(1.5), AttributeError,
          "module 'math' has no attribute 'no_such_function'")]


@pytest.mark.parametrize("f,x,y,dy,exc,msg", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_missing_name_on_a_path_not_taken(f, x, y, dy, exc, msg, backend):
    assert f(x) == y
    assert gradient(f, x, backend=backend)[0] == pytest.approx(dy, rel=1e-12)
    v, (g,) = value_and_grad(f, x, backend=backend)
    assert (v, g) == (pytest.approx(y), pytest.approx(dy))
    with pytest.raises(exc, match=msg):
        f(200.0)
    with pytest.raises(exc, match=msg):
        gradient(f, 200.0, backend=backend)


@pytest.mark.parametrize("f,x,y,dy,exc,msg", CASES, ids=[c[0].__name__ for c in CASES])
def test_missing_name_compiled(f, x, y, dy, exc, msg):
    j = jit.jit(f)
    assert j(x) == y
    with pytest.raises(exc, match=msg):
        j(200.0)
    assert jvp(f, (x,), (1.0,)) == (pytest.approx(y), pytest.approx(dy))


def test_missing_global_caught_by_the_function_itself():
    def guarded(x):
        try:
            return x + nowhere_defined     # noqa: F821
        except NameError:
            return 2.0 * x
    assert guarded(3.0) == 6.0
    assert gradient(guarded, 3.0, backend="interp") == (2.0,)
    assert gradient(guarded, 3.0) == (2.0,)     # auto: the interpreter runs the try


# -- first calls from many threads ----------------------------------------------------------

_SRC = '''
def f(x):
    s = 0.0
    for i in range(len(x) - 1):
        s += {c!r} * (x[i + 1] - x[i] * x[i]) ** 2 + (1.0 - x[i]) ** 2
    return s

def g(a, b):
    return a * b + {c!r} * a
'''


def _fresh(c: float) -> tuple:
    ns: dict = {}
    exec(_SRC.format(c=c), ns)
    return ns["f"], ns["g"]


def _closed_form(x: np.ndarray, c: float) -> np.ndarray:
    d = np.zeros_like(x)
    r = x[1:] - x[:-1] ** 2
    d[1:] += 2 * c * r
    d[:-1] += -4 * c * r * x[:-1] - 2 * (1 - x[:-1])
    return d


def test_first_calls_from_many_threads_at_once():
    x = np.linspace(-0.8, 0.9, 7)
    for _ in range(2):
        c = 10.0 + random.random()          # new code each run: nothing cached on disk
        f, g = _fresh(c)
        want = _closed_form(x, c)
        calls = [
            ("gradient", lambda: gradient(f, x)[0], want),
            ("value_and_grad", lambda: value_and_grad(f, x)[1][0], want),
            ("pullback", lambda: pullback(f, x)[1](1.0)[0], want),
            ("jvp", lambda: jvp(f, (x,), (np.ones_like(x),))[1], want.sum()),
            ("jit", lambda: jit.jit(f)(x), f(x)),
            ("scalar gradient", lambda: gradient(g, 2.0, 3.0), (3.0 + c, 2.0)),
            ("scalar jit", lambda: jit.jit(g)(2.0, 3.0), 6.0 + 2.0 * c),
            ("scalar jvp", lambda: jvp(g, (2.0, 3.0), (1.0, 0.0))[1], 3.0 + c),
        ]
        start = threading.Barrier(len(calls))
        got: dict = {}

        def work(name, call):
            start.wait()
            try:
                got[name] = call()
            except Exception as e:          # noqa: BLE001 - reported below
                got[name] = e
        threads = [threading.Thread(target=work, args=(n, c)) for n, c, _ in calls]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for name, _, expect in calls:
            assert not isinstance(got[name], Exception), (name, got[name])
            np.testing.assert_allclose(got[name], expect, rtol=1e-10, atol=1e-12,
                                       err_msg=name)


# -- what the JIT refuses is told in the user's terms ---------------------------------------

def closures_in_a_loop(x):
    s = 0.0
    for i in range(3):
        h = lambda y: y * i              # noqa: E731
        s += h(x)
    return s


def test_closure_over_a_loop_variable_is_refused_in_user_terms():
    with pytest.raises(TypingError) as e:
        jit.jit(closures_in_a_loop)(2.0)
    msg = str(e.value)
    line = closures_in_a_loop.__code__.co_firstlineno + 3
    assert "closures_in_a_loop" in msg and f"{__file__}:{line}" in msg
    assert "captures 'i'" in msg and "loop" in msg
    assert "make_cell" not in msg and "primitive" not in msg
    assert gradient(closures_in_a_loop, 2.0, backend="interp") == (3.0,)
    with pytest.warns(Warning):
        assert gradient(closures_in_a_loop, 2.0) == (3.0,)     # auto falls back
