"""Fuzz findings (fuzz_zygopy seeds 777305332078 and 777306332287): a function that
writes into an array it made itself (`arr = np.zeros(4); arr[i] = x`) and then divides
an `np.float64` (an element read back from that array) by zero raised
ZeroDivisionError when compiled, where CPython gives nan.  A division by zero
deoptimises and the call reruns in Python; a function that wrote into memory its
caller can see is not rerun (`jit.typing.local_arrays`), and every array write used to
count as such.  Writes into arrays the function allocated (and views of them) no longer
do; a write into an argument still stops the rerun, and raises as before."""
import warnings

import numpy as np
import pytest

import jit
from jit.typing.local_arrays import made_here
from lowering import lower


def local_then_divide(x):
    arr = np.zeros(3)
    for k in range(3):
        arr[k] = x
    y = arr[1] - x               # an np.float64 0.0
    return y / y                 # CPython: nan (numpy warns)


def view_of_local_then_divide(x):
    arr = np.ones(4) * x
    part = arr[1:3]
    part[0] = 0.0
    return x / arr[1]            # np.float64 division by zero: inf


def argument_then_divide(a, x):
    a[0] = x
    return x / 0.0               # a Python float: ZeroDivisionError, and no rerun


def local_int_overflow(n):
    arr = np.zeros(2)
    arr[0] = 1.0
    return n * n * n             # int64 overflow: the rerun gives Python's exact int


def _cpython(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*args)


@pytest.mark.parametrize("f, args", [(local_then_divide, (0.3,)),
                                     (view_of_local_then_divide, (2.0,))])
def test_a_local_array_writer_reruns_a_division_by_zero(f, args):
    want = _cpython(f, *args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = jit.jit(f)(*args)
    assert (np.isnan(want) and np.isnan(got)) or got == want


def test_an_argument_writer_still_raises_and_writes_once():
    a = np.zeros(2)
    with pytest.raises(ZeroDivisionError):
        jit.jit(argument_then_divide)(a, 1.5)
    assert a[0] == 1.5


def test_a_local_array_writer_reruns_an_int_overflow():
    n = 3_000_000
    assert jit.jit(local_int_overflow)(n) == n ** 3


def test_made_here_follows_views_and_phis_back_to_allocations():
    ir = lower(view_of_local_then_divide)
    written = [s.args[0] for b in ir.blocks for s in b.stmts if s.op == "setitem"]
    assert written and all(made_here(ir, v) for v in written)
    ir = lower(argument_then_divide)
    written = [s.args[0] for b in ir.blocks for s in b.stmts if s.op == "setitem"]
    assert written and not any(made_here(ir, v) for v in written)
