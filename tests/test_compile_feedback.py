"""A long compilation says what it is doing through logging (issue 30, item 6)."""
import logging
import math
import warnings

import numpy as np
import pytest

import jit  # noqa: F401  (backend="llvm")
from adjoint import gradient
from ssair import progress


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch):
    monkeypatch.setenv("ZYGOPY_CACHE", "0")
    monkeypatch.delenv("ZYGOPY_QUIET", raising=False)
    from jit import disk_cache
    disk_cache._STATE.pop("enabled", None)
    yield
    disk_cache._STATE.pop("enabled", None)


def _fresh():
    """A new function object each call: nothing of it is compiled yet."""
    def wavy(x, w):
        total = 0.0
        for i in range(3):
            if x > 0.0:
                total += math.sin(w * x) * (i + 1)
            else:
                total -= x * x
        return total + float(np.sum(np.tanh(np.array([x, w]))))
    return wavy


def _closed_form(x, w):
    s = 1.0 - math.tanh(x) ** 2, 1.0 - math.tanh(w) ** 2
    return 6 * w * math.cos(w * x) + s[0], 6 * x * math.cos(w * x) + s[1]


def _records(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "zygopy"]


@pytest.fixture(autouse=True)
def outside_any_compile(monkeypatch):
    """Each test starts outside any compilation, with the announcements on (what the
    tests before it in a session did to the process-wide logger or state aside)."""
    monkeypatch.setitem(progress._STATE, "depth", 0)
    monkeypatch.delenv("ZYGOPY_QUIET", raising=False)
    monkeypatch.setattr(logging.getLogger("zygopy"), "level", logging.NOTSET)
    monkeypatch.setattr(logging.getLogger("zygopy"), "disabled", False)
    monkeypatch.setattr(logging.root.manager, "disable", logging.NOTSET)


@pytest.mark.parametrize("backend", ["llvm", "interp"])
def test_long_compile_is_announced_and_values_stay_right(monkeypatch, caplog, backend):
    monkeypatch.setattr(progress, "THRESHOLD_S", 0.0)
    caplog.set_level(logging.INFO, logger="zygopy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = gradient(_fresh(), 0.7, 1.3, backend=backend)
    assert np.allclose(g, _closed_form(0.7, 1.3), rtol=1e-12)
    said = _records(caplog)
    assert said, "a compile over the threshold logs"
    assert any("wavy" in m and "test_compile_feedback.py" in m for m in said)
    assert any("lowering" in m for m in said)
    if backend == "llvm":
        assert any("J transform" in m for m in said)
        assert any("LLVM" in m for m in said) and any("type inference" in m for m in said)
        assert said[-1].startswith("zygopy: compiled ") and "wavy" in said[-1]


def test_quick_compile_says_nothing(monkeypatch, caplog):
    monkeypatch.setattr(progress, "THRESHOLD_S", 60.0)
    caplog.set_level(logging.INFO, logger="zygopy")
    gradient(_fresh(), 0.7, 1.3, backend="llvm")
    assert _records(caplog) == []


def test_quiet_switches(monkeypatch, caplog):
    monkeypatch.setattr(progress, "THRESHOLD_S", 0.0)
    caplog.set_level(logging.INFO, logger="zygopy")
    monkeypatch.setenv("ZYGOPY_QUIET", "1")
    gradient(_fresh(), 0.7, 1.3, backend="llvm")
    assert _records(caplog) == []
    monkeypatch.delenv("ZYGOPY_QUIET")
    caplog.set_level(logging.WARNING, logger="zygopy")
    gradient(_fresh(), 0.7, 1.3, backend="llvm")
    assert _records(caplog) == []


def test_progress_nesting_is_balanced():
    """Every compilation leaves the state as it found it, also one that raises."""
    before = progress._STATE["depth"]
    with pytest.raises(Exception):
        gradient(lambda x: x.no_such_attribute, 1.0, backend="llvm")
    assert progress._STATE["depth"] == before and progress._STATE["timer"] is None


# -- the hot spots the 200-line bench found (bench/compile_time.py) -----------------------

def _fit(path, targets, scale):
    """A list argument of arrays read at a variable index in a loop (its cotangent
    is summed at that index: one slot in memory, not a branch per element)."""
    total = 0.0
    for i in range(len(targets)):
        r = path[i] * scale - targets[i]
        total += r[0] * r[0] + 0.5 * r[1] * r[1]
    return total


@pytest.mark.parametrize("backend", ["llvm", "interp"])
def test_variable_index_into_a_list_of_arrays(backend):
    rs = np.random.RandomState(3)
    path = [rs.randn(2) for _ in range(12)]
    targets = [rs.randn(2) for _ in range(12)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g_path, g_targets, g_scale = gradient(_fit, path, targets, 1.3, backend=backend)
    for i in range(12):
        r = path[i] * 1.3 - targets[i]
        d = np.array([2 * r[0], r[1]])
        assert np.allclose(g_path[i], 1.3 * d, rtol=1e-12)
        assert np.allclose(g_targets[i], -d, rtol=1e-12)
    want = sum(float(np.dot(np.array([2, 1]) * (path[i] * 1.3 - targets[i]), path[i]))
               for i in range(12))
    assert math.isclose(g_scale, want, rel_tol=1e-12)


def test_an_error_deep_in_compiled_code_still_names_its_line():
    """Every error site leaves through one shared exit: the status and site survive."""
    def pick(xs, k):
        total = 0.0
        for i in range(3):
            total += xs[k + i] * xs[i]
        return total
    with pytest.raises(IndexError):
        gradient(pick, np.arange(4.0), 3, backend="llvm")


@pytest.mark.parametrize("backend", ["llvm", "interp"])
def test_numpy_functions_bound_to_local_names_in_a_closure(backend):
    """`exp = np.exp` captured by a closure (as autograd's ica example's caller
    writes it): the call compiles as np.exp (it crashed the ufunc rule)."""
    exp, reshape, smaller = np.exp, np.reshape, min

    def objective(p):
        w = reshape(p[:4], (2, 2))
        return float(np.sum(w * w)) * exp(p[-1]) + smaller(p[0], p[1])
    p = np.array([0.3, -0.2, 0.5, 1.1, 0.4])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (g,) = gradient(objective, p, backend=backend)
    s = float(np.sum(p[:4] ** 2))
    want = np.concatenate([2 * p[:4] * math.exp(p[-1]), [s * math.exp(p[-1])]])
    want[1] += 1.0                                  # min(p[0], p[1]) is p[1]
    assert np.allclose(g, want, rtol=1e-12)
