"""A callee the JIT cannot compile costs its own call site: it runs in the interpreter
(its pullback too) through a host call, and the differentiated function around it
stays compiled.  Checked against the all-interpreter result and central differences."""
import gc
import warnings

import numpy as np
import pytest

from adjoint import gradient, jacobian, pullback
from jit.pullback.host_jcalls import CallSiteFallbackWarning
from jit.pullback.runner import NativeEnv
from jit.runtime.host_pullbacks import LIVE
from jit.types import TypingError
from lowering import UnsupportedError


def guarded_double(x):
    k = 0.0
    get = lambda: x * k     # noqa: E731  k is rebound below: the JIT does not compile it
    k = 2.0
    return get()


def guarded_sin(x, scale=1.0):
    k = 0.0
    get = lambda: np.sin(x) * scale * k     # noqa: E731
    k = 1.0
    return get()


def guarded_pair(a, b):
    k = 0.0
    get = lambda: (a * b * k, np.cos(b))     # noqa: E731
    k = 1.0
    return get()


def with_try(x):
    try:
        return x * 2.0
    except ValueError:
        return 0.0


def loss(w, X):
    return np.sum(np.tanh(X @ w)) + guarded_double(w[0]) ** 2


def with_keyword(w, s):
    return np.sum(guarded_sin(w, scale=s) ** 2)


def with_pair(w):
    p, q = guarded_pair(w[0], w[1:])
    return np.sum(p * q) + w[1] * np.sum(q)


def in_loop(w):
    t = 0.0
    for i in range(3):
        t = t + guarded_sin(w[i]) * w[i]
    return t


def central(f, args, k, eps=1e-6):
    """Central differences of f along every entry of argument k."""
    x = np.asarray(args[k], dtype=float)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        up = [hi if j == k else a for j, a in enumerate(args)]
        dn = [lo if j == k else a for j, a in enumerate(args)]
        out[i] = (f(*[_scalar(a) for a in up]) - f(*[_scalar(a) for a in dn])) / (2 * eps)
    return out


def _scalar(a):
    return float(a) if isinstance(a, np.ndarray) and a.ndim == 0 else a


def compiled_pullback(f, *args):
    """(y, back) from the compiled backend after the run that learns the callee's result
    type; asserts that f's forward ran compiled and that only call-site warnings came."""
    gradient(f, *args, backend="llvm")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        y, back = pullback(f, *args, backend="llvm")
    assert all(issubclass(w.category, CallSiteFallbackWarning) for w in seen), \
        [str(w.message) for w in seen]
    assert type(back.env) is NativeEnv
    return y, back


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    return rng.standard_normal(5), rng.standard_normal((20, 5))


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_example_matches_interpreter_and_differences(data, backend):
    w, X = data
    ref = gradient(loss, w, X, backend="interp")
    for _ in range(2):       # the first compiled call learns the callee's result type
        g = gradient(loss, w, X, backend=backend)
        np.testing.assert_allclose(g[0], ref[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g[1], ref[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g[0], central(loss, (w, X), 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g[1], central(loss, (w, X), 1), rtol=1e-6, atol=1e-7)


def test_surrounding_function_runs_compiled(data):
    w, X = data
    y, back = compiled_pullback(loss, w, X)
    assert y == pytest.approx(loss(w, X), rel=1e-13)
    assert len(back.env.handles) == 1          # the interpreter's pullback, on the tape
    g = back(1.0)
    np.testing.assert_allclose(g[0], gradient(loss, w, X, backend="interp")[0], rtol=1e-12)


def test_one_warning_names_the_call_site():
    def local_loss(x):
        return guarded_double(x) * x + guarded_double(x + 1.0)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(3):
            gradient(local_loss, 0.5, backend="llvm")
    msgs = [str(w.message) for w in seen if w.category is CallSiteFallbackWarning]
    assert len(msgs) == 1                # the two calls are on one line: one site
    assert "guarded_double" in msgs[0] and "local_loss" in msgs[0]
    assert f"{__file__}:" in msgs[0] and "captures 'k'" in msgs[0]
    assert gradient(local_loss, 0.5)[0] == pytest.approx(4 * 0.5 + 2.0)


def test_keyword_operand_gets_its_gradient(data):
    w, _ = data
    s = 1.5
    _, back = compiled_pullback(with_keyword, w, s)
    gw, gs = back(1.0)
    rw, rs = gradient(with_keyword, w, s, backend="interp")
    np.testing.assert_allclose(gw, rw, rtol=1e-12)
    assert gs == pytest.approx(rs, rel=1e-12)
    assert gs == pytest.approx(float(central(with_keyword, (w, np.array(s)), 1)), rel=1e-6)


def test_tuple_result_and_array_operands(data):
    w, _ = data
    y, back = compiled_pullback(with_pair, w)
    assert y == pytest.approx(with_pair(w), rel=1e-13)
    np.testing.assert_allclose(back(1.0)[0], gradient(with_pair, w, backend="interp")[0],
                               rtol=1e-12)
    np.testing.assert_allclose(back(1.0)[0], central(with_pair, (w,), 0), rtol=1e-6,
                               atol=1e-8)


def test_call_in_a_loop_and_a_jacobian(data):
    w, _ = data
    _, back = compiled_pullback(in_loop, w)
    assert len(back.env.handles) == 3           # one pullback per iteration
    np.testing.assert_allclose(back(2.0)[0], 2 * central(in_loop, (w,), 0), rtol=1e-6)

    def vector(v):
        return guarded_sin(v) * v
    jacobian(vector, w, backend="llvm")
    np.testing.assert_allclose(jacobian(vector, w, backend="llvm")[0],
                               jacobian(vector, w, backend="interp")[0], rtol=1e-12)


def test_handles_released_with_the_pullback(data):
    w, X = data
    before = len(LIVE)
    _, back = compiled_pullback(loss, w, X)
    assert len(LIVE) == before + 1
    del back
    gc.collect()
    assert len(LIVE) == before
    for _ in range(5):
        gradient(loss, w, X)
    assert len(LIVE) == before


def test_try_block_in_a_callee(data):
    w, X = data

    def f(v):
        return np.sum(np.tanh(X @ v)) * with_try(v[1])
    _, back = compiled_pullback(f, w)
    np.testing.assert_allclose(back(1.0)[0], central(f, (w,), 0), rtol=1e-6, atol=1e-8)


def test_result_of_another_type_leaves_compiled_code():
    def kinds(x):
        k = 0
        get = lambda: x * k if x > 0 else 3       # noqa: E731  a float, or an int
        k = 2.0
        return get()

    def f(x):
        return kinds(x) * x
    assert gradient(f, 2.0, backend="llvm") == (4 * 2.0,)
    assert gradient(f, 2.0, backend="llvm") == (4 * 2.0,)
    assert gradient(f, -2.0, backend="llvm") == (3.0,)    # run by the interpreter


def test_unlowerable_callee_with_a_gradient_is_refused():
    def imports(x):
        import math
        return math.sqrt(x)

    def f(x):
        return imports(x) * 2.0
    with pytest.raises(UnsupportedError, match="import"):
        gradient(f, 4.0)


def test_operand_kind_not_supported_is_refused():
    def takes_list(xs):
        k = 0.0
        get = lambda: xs[0] * xs[1] * k     # noqa: E731
        k = 1.0
        return get()

    def f(x):
        return takes_list([x, x + 1.0])
    with pytest.raises(TypingError, match="captures 'k'"):
        gradient(f, 2.0, backend="llvm")
    assert gradient(f, 2.0, backend="interp") == (2 * 2.0 + 1.0,)


def test_exception_in_the_callee_reruns_the_call_in_the_interpreter(data):
    w, _ = data

    def scalar_method(x):
        k = 0.0
        get = lambda: x.item() * k      # noqa: E731  np.float64 has .item(); a float not
        k = 3.0
        return get()

    def f(v):
        return scalar_method(v[0]) * v[1]
    for _ in range(3):
        g = gradient(f, w, backend="llvm")[0]
        np.testing.assert_allclose(g[:2], [3 * w[1], 3 * w[0]], rtol=1e-13)

    def refuses(x):
        k = 0.0
        get = lambda: x * k             # noqa: E731
        k = 1.0
        if x < 0:
            raise ValueError("negative input")
        return get()

    def h(x):
        return refuses(x) * x
    assert gradient(h, 2.0, backend="llvm") == (4.0,)
    assert gradient(h, 2.0, backend="llvm") == (4.0,)
    with pytest.raises(ValueError, match="negative input"):
        gradient(h, -2.0, backend="llvm")


def test_calls_without_a_gradient_run_in_cpython(data):
    w, X = data

    def factorial_half(n):
        import math        # lowering refuses imports: CPython runs the call
        return math.factorial(n) * 0.5

    def f(v, n):
        return np.sum(np.tanh(X @ v)) * factorial_half(n) + guarded_double(3.0) * v[0]
    ref = gradient(f, w, 3, backend="interp")
    for _ in range(2):
        g = gradient(f, w, 3, backend="llvm")
        np.testing.assert_allclose(g[0], ref[0], rtol=1e-12)
        assert g[1] is None
    np.testing.assert_allclose(g[0], central(lambda v: f(v, 3), (w,), 0), rtol=1e-6)
    y, back = compiled_pullback(f, w, 3)
    assert y == pytest.approx(f(w, 3), rel=1e-13)
    assert back.env.handles == []          # no pullback made: nothing on the tape


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_forward_mode_tangent_from_the_interpreter(data, backend):
    from adjoint import jvp
    w, X = data
    t = np.linspace(-1.0, 1.0, w.size)

    def f(v):
        return np.sum(np.tanh(X @ v)) * guarded_sin(v[0], scale=2.0)
    for _ in range(2):
        y, dy = jvp(f, (w,), (t,), backend=backend)
        assert y == pytest.approx(f(w), rel=1e-13)
        assert dy == pytest.approx(float(central(f, (w,), 0) @ t), rel=1e-6)
    if backend == "llvm":
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.simplefilter("ignore", CallSiteFallbackWarning)
            assert jvp(f, (w,), (t,), backend="auto")[1] == pytest.approx(dy, rel=1e-13)


def test_callee_writing_into_its_argument_is_not_split_off(data):
    w, _ = data

    def scale_first(a):
        k = 0.0
        get = lambda: k              # noqa: E731
        k = 1.0
        a[0] = a[0] * 3.0            # the caller sees this write
        return a[1] * get()

    def f(v):
        u = v * 1.0
        return scale_first(u) + np.sum(u * u)
    ref = gradient(f, w, backend="interp")[0]
    np.testing.assert_allclose(ref, central(f, (w,), 0), rtol=1e-6, atol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            np.testing.assert_allclose(gradient(f, w)[0], ref, rtol=1e-12)


def test_no_handle_left_after_a_raise():
    def refuses(x):
        k = 0.0
        get = lambda: x * k             # noqa: E731
        k = 1.0
        if x > 5.0:
            raise ValueError("too large")
        return get()

    def h(x, y):
        return refuses(x) * y + refuses(y)
    before = len(LIVE)
    gradient(h, 1.0, 2.0, backend="llvm")
    with pytest.raises(ValueError, match="too large"):
        gradient(h, 1.0, 7.0, backend="llvm")     # the second call site raises
    gc.collect()
    assert len(LIVE) == before


def _shifted_in_place(a):
    k = 0.0
    get = lambda: a * k     # noqa: E731  (k rebound below: not compiled, as guarded_double)
    k = 0.5
    b = a.copy()
    b[1:] = b[1:] - get()[:-1]
    return b


def _loss_of_shifted(a):
    return np.sum(_shifted_in_place(a) ** 2)


def test_a_call_site_warning_made_an_error_by_a_filter_is_raised():
    """Warned inside type inference, the warning an "error" filter raised was taken
    for a refusal of the whole function: the user's filter never saw it."""
    x = np.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(CallSiteFallbackWarning, match="_shifted_in_place"):
            gradient(_loss_of_shifted, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # warned once per call site: now quiet
        np.testing.assert_allclose(gradient(_loss_of_shifted, x)[0], [1.5, 0.5, 1.0])
