"""The JIT against CPython and the reference interpreter: scalar semantics (floor
division, modulo, powers, exact mixed comparisons, special floats), errors raised
from native code, int64 overflow falling back to Python integers, recursion,
closures, arrays, reflection and caching."""
from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jit  # noqa: E402
import lowering  # noqa: E402
import ssair  # noqa: E402
from tests.jit_corpus_report import close_enough, outcome  # noqa: E402


def agree(f, *args):
    """CPython, ssair.interpret and the JIT give the same value or exception type."""
    want = outcome(f, args)
    got = outcome(jit.jit(f), args)
    cells = tuple(c.cell_contents for c in (f.__closure__ or ()))
    interp = outcome(lambda *a: ssair.interpret(lowering.lower(f), *cells, *a), args)
    for name, other in (("jit", got), ("interpret", interp)):
        assert want[0] == other[0], f"{name}: CPython {want}, {name} {other}"
        if want[0] == "raise":
            assert type(want[1]) is type(other[1]), f"{name}: {want[1]!r} vs {other[1]!r}"
        else:
            assert close_enough(want[1], other[1]), f"{name}: {want[1]!r} vs {other[1]!r}"


# -- scalar semantics -------------------------------------------------------------

def add(a, b): return a + b
def sub(a, b): return a - b
def mul(a, b): return a * b
def div(a, b): return a / b
def fdiv(a, b): return a // b
def mod(a, b): return a % b
def power(a, b): return a ** b
def lt(a, b): return a < b
def le(a, b): return a <= b
def eq(a, b): return a == b
def ne(a, b): return a != b
def shl(a, b): return a << b
def shr(a, b): return a >> b
def neg(a): return -a
def absval(a): return abs(a)
def bits(a, b): return (a & b, a | b, a ^ b, ~a)


BINARY = [add, sub, mul, div, fdiv, mod, power, lt, le, eq, ne]
INTS = [0, 1, -1, 7, -7, 3, -3, 2**62, -2**63, 2**63 - 1, 2**53 + 1]
FLOATS = [0.0, -0.0, 1.5, -2.25, 7.0, 1e308, -1e-310, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("f", BINARY, ids=lambda f: f.__name__)
def test_int_grid(f):
    exps = [0, 1, -1, 3, -3, 7, 63] if f is power else [0, 1, -1, 3, -3, 7, 2**62, 63]
    for a in INTS:
        for b in exps:
            agree(f, a, b)


@pytest.mark.parametrize("f", BINARY, ids=lambda f: f.__name__)
def test_float_grid(f):
    for a in FLOATS:
        for b in FLOATS:
            agree(f, a, b)


@pytest.mark.parametrize("f", BINARY, ids=lambda f: f.__name__)
def test_mixed_int_float(f):
    for a in [0, 3, -7, 2**53 + 1, 2**63 - 1]:
        for b in [0.0, 2.5, -0.5, float(2**53), 9.223372036854776e18, math.nan]:
            if f is power and abs(a) > 10:
                continue
            agree(f, a, b)
            agree(f, b, a)


def test_shifts_bits_unary():
    for a in [0, 1, -1, 5, -5, 2**62, -2**63]:
        for n in [0, 1, 3, 62, 63, 64, 100, -1]:
            agree(shl, a, n)
            agree(shr, a, n)
        agree(neg, a)
        agree(absval, a)
        agree(bits, a, 6)
    agree(neg, -0.0)
    agree(absval, -2.5)


@settings(max_examples=60, deadline=None)
@given(st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1))
def test_int_ops_property(a, b):
    for f in (add, sub, mul, fdiv, mod, lt, eq):
        assert close_enough(outcome(f, (a, b)), outcome(jit.jit(f), (a, b))) or \
            type(outcome(f, (a, b))[1]) is type(outcome(jit.jit(f), (a, b))[1])


@settings(max_examples=60, deadline=None)
@given(st.floats(allow_nan=True), st.floats(allow_nan=True))
def test_float_ops_property(a, b):
    for f in (add, mul, div, fdiv, mod, power, lt):
        want, got = outcome(f, (a, b)), outcome(jit.jit(f), (a, b))
        assert want[0] == got[0]
        if want[0] == "return":
            assert close_enough(want[1], got[1]), (f.__name__, a, b, want, got)


def math_funcs(x, y):
    return (math.sin(x) + math.cos(x) * math.exp(y) - math.atan2(x, y) + math.sqrt(abs(x))
            + math.log1p(abs(y)) + math.tanh(x) + math.hypot(x, y) + math.floor(x)
            + math.erf(y) + math.fmod(x, 3.0) + math.copysign(1.0, y))


def test_math_bit_exact():
    for x in [0.5, -1.25, 3.0, 100.5]:
        for y in [0.25, -2.0, 7.5]:
            agree(math_funcs, x, y)


def domain(x): return math.sqrt(x) + math.log(x)
def rng(x): return math.exp(x)
def to_int(x): return int(x) + round(x) + math.ceil(x)


def test_math_errors():
    for x in [-1.0, 0.0, 2.0, math.inf, math.nan]:
        agree(domain, x)
    for x in [1.0, 1000.0, -1000.0]:
        agree(rng, x)
    for x in [2.5, -3.5, 1e300, math.inf, math.nan, 0.5]:
        agree(to_int, x)


# -- errors from native code --------------------------------------------------------

def index_read(a, i): return a[i]
def index_2d(m, i, j): return m[i, j]
def write_at(a, i, v):
    a[i] = v
    return a[i]


def test_index_errors():
    a = np.arange(5.0)
    for i in [0, 4, -1, -5, 5, -6, 100]:
        agree(index_read, a, i)
    m = np.arange(12.0).reshape(3, 4)
    for i, j in [(0, 0), (2, 3), (-1, -1), (3, 0), (0, 4), (-4, 0)]:
        agree(index_2d, m, i, j)
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 5"):
        jit.jit(write_at)(a, 9, 1.0)


def zero_div(a, b): return a / b + a // b + a % b


def test_zero_division_message():
    for args in [(1, 0), (1.0, 0.0), (1, 0.0)]:
        agree(zero_div, *args)
    # division by zero deoptimises (a numpy scalar would give inf): the rerun raises
    # CPython's own error, whose traceback ends in zero_div
    with pytest.raises(ZeroDivisionError, match="division by zero") as info:
        jit.jit(zero_div)(3, 0)
    assert info.traceback[-1].name == "zero_div"


def climb(n):
    if n == 0:
        return 0.0
    return climb(n + 1) + 1.0


def countdown(n):
    if n == 0:
        return 0
    return countdown(n - 1) + 1


def test_recursion():
    with pytest.raises(RecursionError):
        jit.jit(climb)(1)
    assert jit.jit(countdown)(500) == 500


def grow(x, n):
    for _ in range(n):
        x = x * x
    return x


def grow_into(a, x, n):
    for _ in range(n):
        x = x * x
    a[0] = 1.0
    return x


def test_overflow_falls_back_to_python_ints():
    assert jit.jit(grow)(3, 7) == grow(3, 7)
    assert jit.jit(grow)(2**40, 1) == 2**80
    assert jit.jit(add)(2**70, 1) == 2**70 + 1
    agree(power, 3, 50)
    agree(power, 2, -2)
    with pytest.raises(OverflowError, match="writes to arrays"):
        jit.jit(grow_into)(np.zeros(2), 3, 7)


def uses_list(x):
    xs = [x, x]
    xs[0] = 2.0       # writing into a list is not compiled
    return xs[0]
def uses_str(n): return "ab" * n


def test_unsupported_gives_typing_error():
    with pytest.raises(jit.TypingError, match="list"):
        jit.jit(uses_list)(1.0)
    with pytest.raises(jit.TypingError, match="uses_str at .*test_jit.py"):
        jit.jit(uses_str)(2)


# -- arrays, recursion, closures --------------------------------------------------

def total(a):
    s = 0.0
    for i in range(len(a)):
        s += a[i]
    return s


def rowsum(m):
    out = np.zeros(m.shape[0])
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            out[i] += m[i, j]
    return out


def make_grid(n, k):
    g = np.ones((n, k), dtype=np.int64)
    g[0, 0] = n * k
    return g


def test_arrays():
    a = np.arange(10.0)
    for arr in [a, a[::2], a[::-3], np.zeros(0)]:
        agree(total, arr)
    m = np.arange(12.0).reshape(3, 4)
    for arr in [m, m.T, m[::-1, ::2]]:
        agree(rowsum, arr)
    agree(make_grid, 3, 2)
    agree(make_grid, 0, 2)
    agree(make_grid, -1, 2)


def test_writes_reach_the_caller():
    a = np.zeros(3)
    assert jit.jit(write_at)(a, -1, 2.5) == 2.5
    assert a[2] == 2.5


def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)


def is_even(n): return True if n == 0 else is_odd(n - 1)
def is_odd(n): return False if n == 0 else is_even(n - 1)


def with_closure(x, n):
    def scale(y):
        return x * y
    s = 0.0
    for i in range(n):
        s += scale(i)
    return s


def test_calls_recursion_closures():
    agree(fib, 20)
    agree(is_even, 11)
    agree(with_closure, 1.5, 10)


# -- reflection and caching ------------------------------------------------------

def pw(x, n):
    r = 1.0
    while n > 0:
        n -= 1
        r *= x
    return r


def test_code_typed_llvm_native():
    typed = str(jit.code_typed(pw, 2.0, 3))
    assert "%1 x::float64, %2 n::int64" in typed
    assert "::bool" in typed and "φ" in typed
    assert "define" in str(jit.code_llvm(pw, 2.0, 3))
    assert "ret" in str(jit.code_native(pw, 2.0, 3))


def test_cache_per_signature():
    f = jit.jit(pw)
    assert f(2.0, 3) == 8.0 and f(2.0, 4) == 16.0 and f(2, 3) == 8.0
    assert len(f.dispatcher.compiled) == 2


def test_decorator_and_ir_input():
    @jit.jit
    def cube(x):
        return x * x * x
    assert cube(3) == 27 and cube(1.5) == 3.375
    ir = ssair.parser.parse(str(lowering.lower(pw)))
    assert jit.jit(ir)(2.0, 5) == 32.0


def apply_twice(g, x):
    return g(g(x))


def halve(x):
    return x / 2.0


def make_adder(k):
    def add_k(x):
        return x + k
    return add_k


def stats(a):
    lo, hi = a[0], a[0]
    for v in a:
        lo = min(lo, v)
        hi = max(hi, v)
    return (lo, hi), len(a)


def test_function_and_closure_arguments_and_tuple_results():
    agree(apply_twice, halve, 3.0)
    agree(apply_twice, math.sqrt, 16.0)
    agree(apply_twice, make_adder(1.5), 2.0)
    agree(make_adder(2), 5)
    agree(stats, np.array([3.0, -1.0, 7.5]))


def test_read_only_input_is_not_written():
    a = np.zeros(3)
    a.flags.writeable = False
    agree(write_at, a, 0, 1.0)
    assert a[0] == 0.0
