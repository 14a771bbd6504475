"""Augmented assignment (`x += y`): lowered to in-place primitives (`iadd`, ...) that
update a mutable left operand in place as CPython does, turned back into plain
operators where the left operand is provably a number (`ssair.passes.inplace`,
seeded with argument types), differentiated exactly by the adjoint
(`adjoint.passes.inplace`) and compiled by the JIT on numbers."""
from __future__ import annotations

import numpy as np
import pytest
from adjoint_check import check_gradient

import adjoint
import jit
import lowering
import ssair
from adjoint.passes.inplace import arg_types, canonical_inplace
from jit.types import TypingError
from ssair.passes.inplace import inplace
from ssair.passes.scalars import Scalars


def ops(ir) -> list:
    return [s.op for b in ir.blocks for s in b.stmts]


def acc_loop(w, x):
    acc = np.zeros(len(w))
    for i in range(len(x)):
        acc += w * x[i]
    return np.sum(acc * acc)


def scalar_sum(a):
    s = 0.0
    for i in range(len(a)):
        s += a[i]
    return s * s


def pw(x, n):
    r = 1
    while n > 0:
        n -= 1
        r *= x
    return r


def alias_update(a, x):
    b = a
    b *= x
    b += a[0]
    return np.sum(a * b)


def make(w):
    return w * 1.0


def unknown_kind(x, w):
    acc = make(w)
    for _ in range(3):
        acc *= x
    return np.sum(acc * w)


def unknown_kind_alias(x, w):
    acc = make(w)
    keep = acc
    for _ in range(3):
        acc *= x
    return np.sum(keep * w)


def update_arg(a, x):
    a -= x
    a *= a
    return np.sum(a)


def scalar_from_call(x, w):
    s = np.sum(w)      # a numpy scalar: its `+=` is `+`
    s += x
    s *= x
    return s


W = np.array([0.5, -1.0, 2.0])
X = np.array([1.0, 3.0, -2.0, 0.25])


# -- lowering ----------------------------------------------------------------------------
def test_lowering_emits_inplace_ops_unless_the_left_operand_is_an_int():
    def f(a, b, n):
        i = 0
        i += n       # i is a known int: plain add
        a += b       # a may be an array: iadd
        return a, i
    got = ops(lowering.lower(f))
    assert "iadd" in got and got.count("add") == 1
    assert ops(lowering.lower(pw)).count("isub") == 1


def test_interpreter_updates_the_callers_array():
    def f(a, b):
        c = a
        c += b
        return c is a
    a = np.array([1.0, 2.0])
    assert ssair.interpret(lowering.lower(f), a, 1.0) is True
    assert a.tolist() == [2.0, 3.0]


# -- the scalar analysis, seeded -------------------------------------------------------
def test_seeded_inplace_pass_gives_plain_ops():
    ir = lowering.lower(pw).copy()
    for a, t in zip(ir.args, ("float64", "int64")):
        a.type = t
    out = inplace(ir)
    assert "isub" not in ops(out) and "imul" not in ops(out)
    assert {"sub", "mul"} <= set(ops(out))
    unseeded = inplace(lowering.lower(pw))
    assert "imul" in ops(unseeded)


def test_scalars_knows_float_arrays_and_their_elements():
    ir = lowering.lower(acc_loop).copy()
    ir.args[0].type = ir.args[1].type = "array(float64, 1d)"
    sc = Scalars(ir)
    calls = [s for b in ir.blocks for s in b.stmts]
    zeros = next(s for s in calls if s.op == "call" and s.args[0].value is np.zeros)
    assert sc.is_float_array(zeros.var) and sc.kind(zeros.var) is None
    elem = next(s for s in calls if s.op == "getitem")
    assert sc.kind(elem.var) == "float"


# -- the adjoint's canonical form ---------------------------------------------------------
def test_canonical_inplace_static_and_dynamic_forms():
    static = canonical_inplace(lowering.lower(acc_loop), arg_types((W, X)))
    ssair.verify(static)
    assert "iadd" not in ops(static) and "setitem" in ops(static)
    assert not any(p.name == "acc" for b in static.blocks for p in b.phis)
    dynamic = canonical_inplace(lowering.lower(unknown_kind), arg_types((0.5, W)))
    ssair.verify(dynamic)
    assert ops(dynamic).count("imul") == 1 and ops(dynamic).count("mul") >= 2
    again = canonical_inplace(dynamic, arg_types((0.5, W)))
    assert str(again) == str(dynamic)
    for args in [(0.5, W.copy()), (2.0, W.copy())]:
        assert ssair.interpret(dynamic, *args) == unknown_kind(*args)


@pytest.mark.parametrize("f, args", [
    (acc_loop, (W, X)),
    (scalar_sum, (X,)),
    (pw, (1.5, 4)),
    (alias_update, (W, 0.7)),
    (unknown_kind, (0.9, W)),
    (update_arg, (W, 0.3)),
    (scalar_from_call, (0.4, W)),
])
def test_gradients_match_finite_differences(f, args):
    before = [np.copy(a) for a in args]
    check_gradient(f, *args)
    y, back = adjoint.pullback(f, *args, backend="interp")
    back(1.0)
    for a, b in zip(args, before):
        assert np.array_equal(a, b), "pullback modified its input"
    assert y == f(*[np.copy(a) for a in args])


def test_alias_of_unknown_kind_is_refused_not_wrong():
    with pytest.raises(TypeError, match="in-place update of acc"):
        adjoint.pullback(unknown_kind_alias, 0.9, W, backend="interp")


def test_integer_argument_gets_none():
    _, back = adjoint.pullback(pw, 2.0, 3, backend="interp")
    assert back(1.0) == (12.0, None)


# -- the JIT ---------------------------------------------------------------------------------
def test_jit_compiles_inplace_ops_on_numbers():
    assert jit.jit(scalar_sum)(X) == scalar_sum(X)
    assert jit.jit(pw)(1.5, 3) == pw(1.5, 3)


def test_jit_compiles_inplace_ops_on_float_arrays_as_cpython_runs_them():
    """`a[1:] *= b[1:]` (into the argument, as CPython writes) and `z += b` on an
    array the function made compile (`jit.typing.infer.lower_function` rewrites them
    as the J transform does); `a += b` on an argument is refused, saying so."""
    def g(a, b):
        a[1:] *= b[1:]
        return a.sum()

    def made(b):
        z = np.zeros(3)
        z += b
        return z

    mine, theirs = W.copy(), W.copy()
    assert jit.jit(g)(mine, W) == g(theirs, W)
    np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_array_equal(jit.jit(made)(W), made(W))

    def f(a, b):
        a += b
        return a[0]
    with pytest.raises(TypingError, match="in-place operator '\\+=' on array"):
        jit.jit(f)(W.copy(), W.copy())


def _pair(p):
    return p * 2.0, p + 1.0


def _unpacked_then_updated(p0, p1):
    p0, p1 = _pair(p1)
    p1 -= 1.0 - p1          # a number made by unpacking, updated in place
    return p1 * p0


def _unpack_caller(x):
    return _unpacked_then_updated(x, x * 3.0)


def test_inplace_update_of_an_unpacked_number_compiles_in_a_gradient():
    """The J transform is given the function as lowered (`adjoint.transform.lower_function`),
    not the primal's explicit-update form, whose `p1[...] = p1 - ...` of a value made
    by unpacking was refused as a write into a view (fuzz seed 777305332273: the whole
    gradient ran in the interpreter, and backend="llvm" raised)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = adjoint.gradient(_unpack_caller, 0.5, backend="llvm")
    x = 0.5
    # p1 = 3x + 1 after the pair, then 2 p1 - 1; times p0 = 6x: (6x + 1) 6x
    assert got[0] == pytest.approx(72 * x + 6, rel=1e-12)
    assert got == adjoint.gradient(_unpack_caller, 0.5, backend="interp")
    assert jit.jit(_unpack_caller)(0.5) == _unpack_caller(0.5)
