"""Elementwise fusion (`jit.library.fusion`): chains of whole-array statements whose
intermediates are used once compile to one loop, with the same bits, the same
broadcasting errors and the same gradients as the statement-by-statement code."""
from __future__ import annotations

import math

import numpy as np
import pytest

import jit
from adjoint import gradient, pullback
from jit.library import fusion
from jit.types import typeof
from jit.typing.infer import ENGINE
from lowering import lower
from ssair import verify
from tests.jit_grad_check import check_llvm

RNG = np.random.default_rng(11)


def squash(z):
    return z / (1.0 + z * z)


def layer(x, W, b):
    return np.sum(np.tanh(x @ W + b) * 2.0 - 1.0)


def mixed(a, b, c):
    return -(a * b - c / b) + np.exp(a) * 3


def stencil(u, nu, steps):
    for _ in range(steps):
        u = u + nu * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
    return np.sum(u * u)


def used_twice(a, b):
    t = a + b
    return np.sin(t) * t


def written_between(a, b):
    t = a * b
    a[0] = 100.0
    return np.exp(t)


def forget(f) -> None:
    """Drop `f`'s typings, so that the next compilation types it again."""
    for key in [k for k in ENGINE.table if k[0] is lower(f)]:
        del ENGINE.table[key]


def compiled_both_ways(f, *args):
    """f compiled without and with fusion (fresh typings, fresh copies of args)."""
    out = []
    for on in (False, True):
        fusion.ENABLED[0] = on
        forget(f)
        try:
            out.append(jit.jit(lambda *a: f(*a))(*[a.copy() if isinstance(a, np.ndarray) else a
                                                    for a in args]))
        finally:
            fusion.ENABLED[0] = True
            forget(f)
    return out


def typed(f, *args):
    return ENGINE.infer(lower(f), tuple(typeof(v) for v in args))


def fused_calls(f, *args) -> int:
    """How many kernel calls the typed `f` makes."""
    return sum(1 for blk in typed(f, *args).ir.blocks for s in blk.stmts
               if s.op == "call" and "_fused" in getattr(getattr(s.args[0], "value", None),
                                                          "__name__", ""))


SHAPES = [
    ((7,), (7,), ()),                 # 1-D, and a number
    ((4, 5), (4, 5), (4, 5)),         # 2-D of one shape
    ((4, 5), (5,), (4, 5)),           # a row
    ((4, 1), (1, 5), (4, 5)),         # both broadcast
    ((1, 5), (4, 5), (5,)),
    ((0, 3), (3,), (0, 3)),           # empty
]


@pytest.mark.parametrize("sa, sb, sc", SHAPES)
def test_same_bits_as_unfused(sa, sb, sc):
    a, b = RNG.normal(size=sa), RNG.uniform(0.5, 2.0, size=sb)
    c = RNG.normal(size=sc) if sc else 0.5
    plain, fused = compiled_both_ways(mixed, a, b, c)
    assert plain.shape == fused.shape == mixed(a, b, c).shape
    assert np.array_equal(plain, fused, equal_nan=True)
    assert fused_calls(mixed, a, b, c) == 1


def test_non_contiguous_and_transposed_operands():
    a = RNG.normal(size=(6, 8))[::2, 1::2]
    b = RNG.normal(size=(4, 3)).T
    c = RNG.normal(size=(3, 4))
    plain, fused = compiled_both_ways(mixed, a, b, c)
    assert np.array_equal(plain, fused)
    assert np.allclose(fused, mixed(a, b, c), rtol=1e-15, atol=0)


def test_division_by_zero_is_numpys():
    a, b = np.array([1.0, -1.0, 0.0]), np.zeros(3)
    plain, fused = compiled_both_ways(mixed, a, b, a)
    with np.errstate(all="ignore"):
        want = mixed(a, b, a)
    assert np.array_equal(fused, want, equal_nan=True)
    assert np.array_equal(plain, fused, equal_nan=True)


def test_the_broadcast_error_is_the_same():
    a, b, c = np.ones((3, 2)), np.ones((4, 2)), np.ones((3, 2))
    msgs = []
    for on in (False, True):
        fusion.ENABLED[0] = on
        forget(mixed)
        try:
            with pytest.raises(ValueError) as e:
                jit.jit(lambda *x: mixed(*x))(a, b, c)
        finally:
            fusion.ENABLED[0] = True
            forget(mixed)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_what_is_fused():
    x, W, b = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 5)), RNG.normal(size=5)
    assert fused_calls(layer, x, W, b) == 1           # add, tanh, mul, sub: one loop
    u = RNG.normal(size=9)
    assert fused_calls(stencil, u, 0.1, 3) == 1
    assert fused_calls(used_twice, u, u) == 1         # sin and *, not the + of `t` (read twice)
    assert any(s.op == "add" for blk in typed(used_twice, u, u).ir.blocks for s in blk.stmts)
    assert fused_calls(written_between, u.copy(), u) == 0   # a write sits between


def test_a_write_between_keeps_the_order():
    a, b = RNG.normal(size=4), RNG.normal(size=4)
    plain, fused = compiled_both_ways(written_between, a.copy(), b)
    assert np.array_equal(plain, fused)
    assert np.allclose(fused, written_between(a.copy(), b), rtol=1e-15, atol=0)


def test_fused_ir_verifies():
    x, W, b = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 5)), RNG.normal(size=5)
    t = typed(layer, x, W, b)
    verify(t.ir)
    kernel = next(s.args[0].value for blk in t.ir.blocks for s in blk.stmts
                  if s.op == "call" and "_fused" in getattr(s.args[0].value, "__name__", ""))
    verify(lower(kernel))


@pytest.mark.parametrize("f, args", [
    (layer, (RNG.normal(size=(3, 4)), RNG.normal(size=(4, 5)), RNG.normal(size=5))),
    (mixed, (RNG.normal(size=(4, 5)), RNG.uniform(1, 2, size=5), RNG.normal(size=(4, 5)))),
    (stencil, (RNG.normal(size=16), 0.1, 5)),
])
def test_gradients_with_fusion(f, args):
    g_llvm = gradient(lambda *a: np.sum(squash(f(*a))), *args, backend="llvm")
    g_interp = gradient(lambda *a: np.sum(squash(f(*a))), *args, backend="interp")
    for p, q in zip(g_llvm, g_interp):
        if q is not None:
            assert np.allclose(p, q, rtol=1e-12, atol=1e-14)
    if f is not layer:         # (np.tanh: numpy's SIMD tanh and libm's differ by an ulp)
        assert check_llvm(f, *args) == "ok"


def test_pullback_reuses_fused_code():
    u = RNG.normal(size=32)
    y, back = pullback(stencil, u, 0.2, 4, backend="llvm")
    assert y == pytest.approx(stencil(u, 0.2, 4), rel=1e-14)
    assert back(1.0)[0].shape == u.shape


def _np_tanh(a):
    return np.tanh(a)


def _loop_tanh(a):
    out = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = math.tanh(a[i])
    return out


def test_tanh_of_an_array_is_numpys_and_a_scalar_loop_is_libms():
    """Where glibc's vector tanh is used (AVX-512, libmvec: `runtime.VECTOR_MATH`), a
    library loop's np.tanh agrees with numpy's to 2 ulp (numpy's own SIMD tanh differs
    between versions and CPUs, so its bits are not a fixed target); a user's loop of
    math.tanh stays libm's, as CPython's."""
    from jit.runtime import native
    rng = np.random.default_rng(3)
    parts = [rng.normal(size=4000) * s for s in (1e-300, 1e-6, 0.3, 1.0, 4.0, 25.0)]
    a = np.concatenate(parts + [np.array([0.0, -0.0, np.inf, -np.inf, 5e-324, 19.06] * 4)])
    assert np.array_equal(jit.jit(_loop_tanh)(a), _loop_tanh(a))
    if native.vector_variant("tanh") is None:
        pytest.skip("no libmvec or no AVX-512 here: np.tanh compiles to libm's tanh")
    got = jit.jit(_np_tanh)(a)
    ulps = np.abs(got.view(np.int64) - np.tanh(a).view(np.int64))
    assert ulps[np.isfinite(a)].max() <= 2
    assert np.array_equal(got[~np.isfinite(a)], np.tanh(a)[~np.isfinite(a)])
    assert np.array_equal(np.signbit(got), np.signbit(np.tanh(a)))
    assert np.isnan(jit.jit(_np_tanh)(np.array([np.nan] * 9))).all()
