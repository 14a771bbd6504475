"""Regressions for the state a checkpointed loop's snapshot holds
(`gradient(f, ..., checkpoint=MB)`, `adjoint.passes.checkpoint`).

The recompute of a segment runs during `back`, after the rest of `f` (and maybe the
caller) ran.  A snapshot that held a reference to an array the loop only reads, and
that the code after the loop writes into (`t -= A`, `t[0, 0] = 5.0`, a later loop's
write), recomputed the loop's records from the new values: a silently wrong
gradient (fuzz seed 778002478).  Each checkpointed gradient must equal the plain one
bit for bit, and the plain one central differences, on both backends; state the
snapshot cannot copy apart (an array and a view of it the loop writes into) is a
clear error."""
import numpy as np
import pytest

from adjoint import gradient, pullback

BACKENDS = ["interp", "llvm"]
TINY = 1e-6              # a few words a segment: a snapshot at nearly every visit

rng = np.random.default_rng(7)
A0 = rng.uniform(-1, 1, (3, 4))
V0 = rng.uniform(-1, 1, 4)


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    return type(a) is type(b) and a == b


def _differences(f, args, k, h=1e-6):
    """Central differences of `f` in argument k (a float or a float array)."""
    x = np.asarray(args[k], dtype=float)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        ends = []
        for step in (h, -h):
            moved = x.copy()
            moved[i] += step
            call = _copies(args)
            call[k] = moved if isinstance(args[k], np.ndarray) else float(moved)
            ends.append(f(*call))
        out[i] = (ends[0] - ends[1]) / (2 * h)
    return out


def _check(f, args, backend):
    plain = gradient(f, *_copies(args), backend=backend)
    got = gradient(f, *_copies(args), backend=backend, checkpoint=TINY)
    assert _same(got, plain), (got, plain)
    for k, g in enumerate(plain):
        if isinstance(args[k], (float, np.ndarray)):
            np.testing.assert_allclose(g, _differences(f, args, k), rtol=1e-6, atol=1e-7)


# -- the fuzz finding, as found and shrunk --------------------------------------------
def fuzz_778002478(A, v, u, s):
    t1 = np.array(np.maximum(np.dot(v, s)[-3], ((A * A) - np.sum(s))), dtype=float)
    acc2 = np.zeros(4)
    for row3 in t1:
        acc2 = acc2 + np.tanh(row3) * -0.23
    t1 -= A
    acc4 = np.zeros(4)
    for j6 in range(3):
        row5 = A[j6]
        acc4[j6 % 4] += np.tanh(row5)[j6 % 4] * s
    t7 = v * 1.0
    return float(np.mean((A @ ((-t7) + t7)))) + 0.1 * np.sum(acc2)


def rows_then_isub(A, x):
    t = A * x
    acc = np.zeros(4)
    for row in t:
        acc = acc + np.tanh(row)
    t -= A
    return np.sum(acc) + np.sum(t * t)


def element_written_after(A, x):
    t = A * x
    acc = 0.0
    for i in range(3):
        acc = acc + np.sum(np.tanh(t[i]))
    t[0, 0] = 5.0
    return acc + np.sum(t)


def enumerate_then_imul(A, x):
    t = A * x
    acc = 0.0
    for i, row in enumerate(t):
        acc = acc + i * np.sum(np.tanh(row))
    t *= 2.0
    return acc


def tuple_holds_written_array(A, x):
    t = A * x
    pair = (t, A)
    acc = 0.0
    for i in range(3):
        acc = acc + np.sum(np.tanh(pair[0][i] * pair[1][i]))
    t[1, 1] = 9.0
    return acc


def nested_then_iadd(A, x):
    t = A * x
    acc = 0.0
    for i in range(3):
        for j in range(4):
            acc = acc + np.tanh(t[i, j]) * x
    t += 1.0
    return acc


def break_then_clear(A, x):
    t = A * x
    acc = 0.0
    for i in range(3):
        acc = acc + np.sum(np.tanh(t[i]))
        if acc > 100.0:
            break
    t[:] = 0.0
    return acc


def early_return_then_clear(A, x):
    t = A * x
    acc = 0.0
    for i in range(3):
        acc = acc + np.sum(np.sin(t[i]))
        if acc > 100.0:
            return acc
    t[:] = 0.0
    return acc * 2.0


def closure_reads_written_array(A, x):
    t = A * x
    g = lambda i: np.sum(np.tanh(t[i]))   # noqa: E731 - a closure capturing t
    acc = 0.0
    for i in range(3):
        acc = acc + g(i)
    t[1, 2] = 2.0
    return acc


def later_loop_writes(A, x):
    t = A * x
    acc = 0.0
    for i in range(3):
        acc = acc + np.sum(np.tanh(t[i]))
    for i in range(3):
        t[i, 0] = t[i, 1] * acc
    return acc + np.sum(t)


def every_kind_at_once(A, x, k):
    """One compile for the kinds the fuzz program lacks: a tuple holding the array,
    an early exit (`k` picks it), a later loop that writes."""
    t3, t4 = A - x, A * A
    pair = (t3, A)
    acc = 0.0
    for i in range(3):
        acc = acc + np.sum(np.tanh(pair[0][i] * t4[i]))
        if i == k:
            break
    t3[1, 1] = 9.0
    for i in range(3):
        t4[i, 0] = t4[i, 1] * acc
    return acc + np.sum(t4)


FOUND = [
    (rows_then_isub, (A0, 0.7)),
    (element_written_after, (A0, 0.7)),
    (enumerate_then_imul, (A0, 0.4)),
    (tuple_holds_written_array, (A0, 0.4)),
    (nested_then_iadd, (A0, 0.4)),
    (break_then_clear, (A0, 0.4)),
    (early_return_then_clear, (A0, 0.4)),
    (closure_reads_written_array, (A0, 0.4)),
    (later_loop_writes, (A0, 0.4)),
]


@pytest.mark.parametrize("f,args", FOUND, ids=[f.__name__ for f, _ in FOUND])
def test_state_written_after_the_loop(f, args):
    _check(f, args, "interp")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f,args", [
    (fuzz_778002478, (A0, V0, V0 * 0.5, 0.3)),
    (every_kind_at_once, (A0, 0.4, 1)),
    (every_kind_at_once, (A0, 0.4, 7)),
], ids=["fuzz_778002478", "every_kind_break", "every_kind_no_break"])
def test_state_written_after_the_loop_both_backends(f, args, backend):
    _check(f, args, backend)


# -- state the loop writes into --------------------------------------------------------
def accumulate_rows(A, x):
    acc = np.zeros(4)
    for row in A:                           # the fuzzer's `acc += row`
        acc += row * x
    out = np.zeros(4)
    for j in range(3):                      # an augmented subscript write
        out[j % 4] += np.tanh(A[j] - acc)[j % 4] * x
    return np.sum(out * out)


def same_array_in_a_tuple(A, x):
    t = A * x
    pair = (t, 1.0)
    acc = 0.0
    for i in range(3):
        t[i, 0] = acc
        acc = acc + np.sum(np.tanh(pair[0][i]))
    return acc


@pytest.mark.parametrize("backend", BACKENDS)
def test_state_written_in_the_loop_compiles(backend):
    """`acc += row` over an argument: the accumulator is copied alone (it shares no
    memory with the argument), so the compiled path needs no fallback."""
    _check(accumulate_rows, (A0, 0.6), backend)


def test_one_array_under_two_names_stays_one_in_the_interpreter():
    """The snapshot copies `t` and the tuple holding it together: the recompute
    writes into the copy the tuple holds.  (Only bit for bit: the plain gradient of
    a write read back through a tuple is itself off, a separate bug.)"""
    plain = gradient(same_array_in_a_tuple, A0, 0.4, backend="interp")
    got = gradient(same_array_in_a_tuple, A0, 0.4, backend="interp", checkpoint=TINY)
    assert _same(got, plain)


def view_of_a_constant(A, x):
    B = np.ones((3, 4))
    row = B[0:1]
    acc = 0.0
    for i in range(3):
        row[0, i] = float(i)
        acc = acc + np.sum(np.tanh(B * x))
    return acc


def test_a_view_written_in_the_loop_is_a_clear_error():
    """`row` and `B` share memory the loop writes into: copied apart, the recompute
    would write one and read the other (it did: a wrong gradient)."""
    with pytest.raises(TypeError, match=r"checkpoint= does not support a loop that "
                                        r"writes into an array it also reads through "
                                        r"another name.*view_of_a_constant"):
        gradient(view_of_a_constant, A0, 0.4, backend="interp", checkpoint=TINY)
    with pytest.raises(TypeError, match="may share memory, is not compiled yet"):
        gradient(view_of_a_constant, A0, 0.4, backend="llvm", checkpoint=TINY)


# -- the caller writes into an argument between the forward and back --------------------
def reads_argument(A, x):
    acc = 0.0
    for i in range(3):
        acc = acc + np.sum(np.tanh(A[i] * x))
    return acc


def test_argument_written_before_back():
    """(Right before this fix too: kept as the audit's caller-writes case.)"""
    backend = "interp"
    grads = []
    for checkpoint in (None, TINY):
        A = A0.copy()
        options = {} if checkpoint is None else {"checkpoint": checkpoint}
        _, back = pullback(reads_argument, A, 0.4, backend=backend, **options)
        A[:] = 7.0
        grads.append(back(1.0))
    assert _same(grads[0], grads[1])
    np.testing.assert_allclose(grads[0][0], _differences(reads_argument, (A0, 0.4), 0),
                               rtol=1e-6, atol=1e-7)
