"""The paths the compile-time work of issue 30 (item 6) added or changed, checked for
the values they give, never for their speed: LLVM's quick tier for long modules
(`jit.runtime.native.tier`), the shared error exits and the caller's site on a
helper's failure (`jit.codegen.function`), tape records addressed from one base
(`jit.pullback.tape_ops`), and typing that runs a function once more only when a
recursion read its guessed result (`jit.typing.infer.Engine._solve`).

Each test imports its functions from a module file written afresh, so that nothing
compiled by another test (or cached on disk: `ZYGOPY_CACHE_DIR` is an empty folder)
stands in for the compile under test."""
import importlib.util
import itertools
import math
import textwrap
import warnings

import numpy as np
import pytest

from adjoint import gradient, value_and_grad
from jit.runtime import native

_COUNT = itertools.count()


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """fresh(source) -> a new module made of `source`, with an empty disk cache."""
    monkeypatch.setenv("ZYGOPY_CACHE_DIR", str(tmp_path / "cache"))

    def make(source: str):
        name = f"speed_paths_{next(_COUNT)}"
        path = tmp_path / f"{name}.py"
        path.write_text("import math\nimport numpy as np\n" + textwrap.dedent(source))
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    return make


@pytest.fixture
def quick_everywhere(monkeypatch):
    """Every module compiled at the quick tier; returns the list of the texts it
    compiled there (to check the tier ran)."""
    monkeypatch.setattr(native, "QUICK_ABOVE_LINES", 0)
    monkeypatch.delenv("ZYGOPY_QUICK_COMPILE", raising=False)
    seen = []
    real = native._compile_quick

    def spy(text):
        seen.append(text)
        return real(text)
    monkeypatch.setattr(native, "_compile_quick", spy)
    return seen


def _strict(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # a fallback to the interpreter fails the test
        return fn(*args, **kw)


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


SIMULATION = """
def step(p, v, k, dt):
    a = -k * p - 0.1 * v * abs(v)
    v = v + dt * a
    return p + dt * v, v

def energy(pair, k):
    p, v = pair
    return 0.5 * v * v + 0.5 * k * p * p

def loss(k, p0, targets):
    p, v = p0, 0.0
    total = 0.0
    for t in range(len(targets)):
        p, v = step(p, v, k, 0.05)
        r = p - targets[t]
        if abs(r) < 0.3:
            total += r * r
        else:
            total += 0.6 * abs(r) - 0.09
    return total + 1e-3 * energy((p, v), k)
"""


def test_tier_by_length_and_switch(monkeypatch):
    monkeypatch.delenv("ZYGOPY_QUICK_COMPILE", raising=False)
    long_text = "\n" * (native.QUICK_ABOVE_LINES + 1)
    assert native.tier(long_text, 3) == native.QUICK
    assert native.tier("\n" * native.QUICK_ABOVE_LINES, 3) == 3
    assert native.tier(long_text, 0) == 0          # straight-line glue stays unoptimised
    monkeypatch.setenv("ZYGOPY_QUICK_COMPILE", "0")
    assert native.tier(long_text, 3) == 3


def test_quick_tier_keys_its_objects_apart(monkeypatch, tmp_path):
    """An object compiled at the quick tier is never linked where -O3's is asked for."""
    from jit import disk_cache
    monkeypatch.setenv("ZYGOPY_CACHE_DIR", str(tmp_path))
    if disk_cache.object_key("x", 3) is None:
        pytest.skip("the disk cache is off in this process")
    assert disk_cache.object_key("x", native.QUICK).path != disk_cache.object_key("x", 3).path


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_gradient_at_the_quick_tier(fresh, quick_everywhere, backend):
    mod = fresh(SIMULATION)
    targets = [0.8 * math.cos(0.3 * t) for t in range(25)]
    value, (dk, dp0, _) = _strict(value_and_grad, mod.loss, 2.0, 1.0, targets,
                                  backend=backend)
    assert value == pytest.approx(mod.loss(2.0, 1.0, targets), rel=1e-13)
    assert dk == pytest.approx(_fd(lambda k: mod.loss(k, 1.0, targets), 2.0), rel=1e-6)
    assert dp0 == pytest.approx(_fd(lambda p: mod.loss(2.0, p, targets), 1.0), rel=1e-6)
    assert (len(quick_everywhere) > 0) == (backend == "llvm")


def test_quick_tier_and_full_optimisation_agree_bitwise(fresh, monkeypatch):
    """No fast-math anywhere: the quick tier's code computes the very same doubles."""
    targets = [0.8 * math.cos(0.3 * t) for t in range(25)]
    monkeypatch.setenv("ZYGOPY_QUICK_COMPILE", "0")
    full = _strict(gradient, fresh(SIMULATION).loss, 2.0, 1.0, targets, backend="llvm")
    monkeypatch.setattr(native, "QUICK_ABOVE_LINES", 0)
    monkeypatch.delenv("ZYGOPY_QUICK_COMPILE")
    quick = _strict(gradient, fresh(SIMULATION).loss, 2.0, 1.0, targets, backend="llvm")
    assert full[0] == quick[0] and full[1] == quick[1]


ARRAYS = """
def layer(W, b, x):
    return np.tanh(W @ x + b)

def loss(W, b, xs):
    total = 0.0
    for i in range(xs.shape[0]):
        h = layer(W, b, xs[i])
        total += np.sum(h * h) + 0.1 * h[0]
    return total / xs.shape[0]
"""


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_array_gradient_with_tape_records_at_the_quick_tier(fresh, quick_everywhere, backend):
    """Arrays and scalars recorded per iteration (a tape record of many words, read
    back from one base address) give the finite-difference gradient."""
    mod = fresh(ARRAYS)
    rs = np.random.RandomState(3)
    W, b, xs = 0.5 * rs.randn(3, 4), 0.1 * rs.randn(3), rs.randn(5, 4)
    dW, db, _ = _strict(gradient, mod.loss, W, b, xs, backend=backend)
    for (i, j) in [(0, 0), (1, 2), (2, 3)]:
        E = np.zeros_like(W)
        E[i, j] = 1.0
        assert dW[i, j] == pytest.approx(_fd(lambda s: mod.loss(W + s * E, b, xs), 0.0),
                                         rel=1e-6, abs=1e-9)
    e = np.array([0.0, 1.0, 0.0])
    assert db[1] == pytest.approx(_fd(lambda s: mod.loss(W, b + s * e, xs), 0.0), rel=1e-6)


ERRORS = """
def pick(xs, i, j):
    return xs[i] + xs[j]

def scaled(xs, i):
    y = np.sqrt(xs)
    return float(y[i]) * 2.0
"""


@pytest.mark.parametrize("quick", [False, True])
def test_errors_name_the_users_statement(fresh, monkeypatch, quick):
    """Two checks of one statement share their exit; a library helper's failure is
    reported at the user's line; either way the message and the line are CPython's
    (IndexError), never a helper's."""
    import jit
    if quick:
        monkeypatch.setattr(native, "QUICK_ABOVE_LINES", 0)
    mod = fresh(ERRORS)
    xs = np.array([1.0, 4.0, 9.0])
    fast = jit.jit(mod.pick)
    assert fast(xs, 0, 2) == 10.0
    assert "define" in str(jit.code_llvm(mod.pick, xs, 0, 2))    # compiled, not refused
    with pytest.raises(IndexError) as first:
        fast(xs, 5, 0)
    with pytest.raises(IndexError) as second:
        fast(xs, 0, -7)
    for err in (first, second):
        text = str(err.value)
        assert "pick" in text and "lowering.runtime" not in text and "jit/library" not in text
    g = jit.jit(mod.scaled)
    assert g(xs, 1) == 4.0
    assert "define" in str(jit.code_llvm(mod.scaled, xs, 1))
    with pytest.raises(IndexError) as helper:
        g(xs, 3)
    assert "scaled" in str(helper.value) and "jit/library" not in str(helper.value)


RECURSION = """
def fact(n):
    if n <= 1:
        return 1.0
    return n * fact(n - 1)

def is_even(n):
    if n == 0:
        return True
    return is_odd(n - 1)

def is_odd(n):
    if n == 0:
        return False
    return is_even(n - 1)

def power_sum(x, n):
    if n == 0:
        return 0.0
    return x ** n + power_sum(x, n - 1)

def f(x):
    s = power_sum(x, 4) / fact(4)
    if is_even(6) and not is_odd(6):
        s = s + x
    return s
"""


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_recursion_typed_from_its_guess(fresh, backend):
    """Self- and mutual recursion: typing reruns a function whose guessed result a
    recursive call read, and gives CPython's values and derivatives."""
    mod = fresh(RECURSION)
    x = 0.7
    value, (dx,) = _strict(value_and_grad, mod.f, x, backend=backend)
    assert value == pytest.approx(mod.f(x), rel=1e-14)
    want = (1 + 2 * x + 3 * x ** 2 + 4 * x ** 3) / 24 + 1
    assert dx == pytest.approx(want, rel=1e-13)


def test_recursion_compiled_by_jit(fresh):
    import jit
    mod = fresh(RECURSION)
    assert jit.jit(mod.fact)(10) == math.factorial(10)
    assert jit.jit(mod.is_even)(11) is False
    assert jit.jit(mod.power_sum)(1.5, 5) == pytest.approx(mod.power_sum(1.5, 5), rel=1e-15)


BRANCHES = """
def mixed(x, n, flag):
    if n > 2:
        y = n * 2
    elif flag:
        y = x
    else:
        y = True
    z = y + 1
    if z > 3.5:
        return z * x
    return z - x

def looped(x, n):
    acc = 0
    for i in range(n):
        acc = acc + x * i
    return acc
"""


def test_flows_forward_tells_loops_apart(fresh):
    from jit.typing.block_order import flows_forward
    from lowering import lower
    mod = fresh(BRANCHES)
    assert flows_forward(lower(mod.mixed))
    assert not flows_forward(lower(mod.looped))


@pytest.mark.parametrize("args", [(1.5, 3, False), (1.5, 1, True), (0.5, 0, False),
                                  (4.0, 1, True)])
def test_joins_typed_in_one_round(fresh, args):
    """A branchy function with no loop is typed in one round: an int, a float and a
    bool joined at the phis give CPython's values, compiled and differentiated."""
    import jit
    mod = fresh(BRANCHES)
    assert jit.jit(mod.mixed)(*args) == mod.mixed(*args)
    x, n, flag = args
    dx = _strict(gradient, mod.mixed, x, n, flag, backend="llvm")[0]
    assert dx == pytest.approx(_fd(lambda v: mod.mixed(v, n, flag), x), rel=1e-6, abs=1e-8)
    assert jit.jit(mod.looped)(x, 5) == mod.looped(x, 5)


def test_the_transform_verifies_each_step_when_asked(fresh, monkeypatch):
    """`adjoint.transform.VERIFY` (ZYGOPY_VERIFY=1, on in the tests) verifies the IR
    after each step of the J transform, and a broken one is an error naming the step;
    off, the gradient is the same."""
    import ssair
    from adjoint import transform
    assert transform.VERIFY         # (tests/conftest.py)
    mod = fresh("""
        def f(x):
            s = 0.0
            for k in range(3):
                s = s + x * k if k % 2 else s - math.sin(x)
            return s
    """)
    x = 0.7
    monkeypatch.setattr(transform, "VERIFY", False)
    (g,) = gradient(mod.f, x, backend="interp")
    assert g == pytest.approx(1 - 2 * math.cos(x), rel=1e-12)

    def broken(ir, *a, **k):
        raise ssair.VerifyError("broken on purpose")
    monkeypatch.setattr(transform, "VERIFY", True)
    monkeypatch.setattr(ssair, "verify", broken)
    transform.clear_cache()
    other = fresh("def g(x):\n    return x * x\n")
    with pytest.raises(RuntimeError, match="produced invalid IR"):
        gradient(other.g, 1.5, backend="interp")


def test_rebound_globals_found_without_disassembly(fresh):
    """A function that rebinds a global (directly or in a nested comprehension) is
    read live after the wordcode pre-check; one that only reads globals is not."""
    from lowering import guards
    mod = fresh("""
        N = 2.0
        def bump(x):
            global N
            N = N + 1.0
            return x * N
        def nested(x):
            def inner():
                global M
                M = x
            inner()
            return x
        def reads(x):
            return x * N
    """)
    assert guards._stores_of(mod.bump.__code__) == {"N"}
    assert guards._stores_of(mod.nested.__code__) == {"M"}
    assert guards._stores_of(mod.reads.__code__) == frozenset()
    assert {"N", "M"} <= guards.rebound_globals(vars(mod))
    for backend in ("interp", "llvm"):
        mod.N = 2.0
        assert gradient(mod.reads, 1.5, backend=backend) == pytest.approx((2.0,))
