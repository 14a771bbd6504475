"""Writes into memory that the caller reads under another name: a callee writing
into an argument passed a view (`h(t[1:])`), into an attribute or element of its
parameter (`self.w[1:] *= b`), a closure writing into a captured view, and
array-writing methods on a parameter (`a.fill(v)`, `a.sort()`, `np.copyto`).

Each used to return a silent wrong gradient (a zero for the value written).  Each
program here is either differentiated right (checked against central differences)
or refused with a TypeError naming the write, on the interpreter and compiled."""
import warnings
from dataclasses import dataclass

import numpy as np
import pytest

from adjoint import gradient

X = np.array([0.5, -1.2, 2.0, 0.7])
B = 1.3
BACKENDS = ("interp", "llvm")


def central(f, x, b, eps=1e-6):
    gx = np.array([(f(x + eps * e, b) - f(x - eps * e, b)) / (2 * eps)
                   for e in np.eye(x.size)])
    return gx, (f(x, b + eps) - f(x, b - eps)) / (2 * eps)


def grad(f, backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # (a fallback notice is not the point here)
        return gradient(f, X.copy(), B, backend=backend)


def assert_right(f, backend):
    gx, gb = grad(f, backend)
    want_x, want_b = central(f, X, B)
    np.testing.assert_allclose(gx, want_x, atol=1e-6)
    assert gb == pytest.approx(want_b, abs=1e-6)


# -- helpers that write into their argument -------------------------------------------------
def adds(a, b):
    a += b


def scales_the_tail(a, b):
    a[1:] *= b


def subtracts_everywhere(a, b):
    a[...] -= b


def scales_the_first(a, b):
    a[0] *= b


def adds_through_a_view(a, b):
    adds(a[1:], b)


def fills(a, b):
    a.fill(b)


def sorts(a, b):
    a.sort()


def sets_by_method(a, b):
    a.__setitem__(0, b)


def copies_into(a, b):
    np.copyto(a, a * b)


def on_the_array(h):
    def loss(x, b):
        t = x * 1.0
        h(t, b)
        return np.sum(t * t) + np.sum(x * t)
    return loss


def on_a_slice(h):
    def loss(x, b):
        t = x * 1.0
        h(t[1:], b)
        return np.sum(t * t) + np.sum(x * t)
    return loss


def on_a_slice_of_the_argument(h):
    def loss(x, b):
        h(x[1:], b)
        return np.sum(x * x)
    return loss


def on_a_reshape(h):
    def loss(x, b):
        t = x * 1.0
        h(t.reshape(2, 2)[0], b)
        return np.sum(t * t)
    return loss


def on_each_row(h):
    def loss(x, b):
        m = np.outer(x, x)
        for row in m:
            h(row, b)
        return np.sum(m)
    return loss


WRITERS = [adds, scales_the_tail, subtracts_everywhere, scales_the_first]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("h", WRITERS)
def test_a_write_into_the_array_itself_is_differentiated(h, backend):
    assert_right(on_the_array(h), backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("make", [on_a_slice, on_a_slice_of_the_argument, on_a_reshape,
                                  on_each_row])
@pytest.mark.parametrize("h", WRITERS)
def test_a_write_into_a_view_passed_in_is_refused(h, make, backend):
    with pytest.raises(TypeError, match=f"{h.__name__} writes into its argument 'a', "
                                        "which is passed a view"):
        grad(make(h), backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("make", [on_the_array, on_a_slice])
def test_a_write_into_a_view_of_a_parameter_is_refused(make, backend):
    with pytest.raises(TypeError, match="adds_through_a_view writes into an attribute, "
                                        "element or view of its argument 'a'"):
        grad(make(adds_through_a_view), backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("h,message", [
    (fills, "no derivative rule for .*ndarray.fill"),
    (sorts, "no derivative rule for .*ndarray.sort"),
    (sets_by_method, "no derivative rule for .*ndarray.__setitem__"),
    (copies_into, "numpy.copyto writes into an array argument")])
def test_an_array_writing_library_call_on_a_parameter_is_refused(h, message, backend):
    with pytest.raises(TypeError, match=message):
        grad(on_the_array(h), backend)


def test_sorting_a_differentiated_array_in_place_is_refused():
    def f(x, b):
        y = x * b
        y.sort()
        return np.sum(y * np.arange(4.0))
    with pytest.raises(TypeError, match="ndarray.sort"):
        gradient(f, X.copy(), B, backend="interp")


def test_a_helper_that_only_reads_a_view_is_differentiated():
    def reads(a, b):
        return np.sum(a * b)

    def f(x, b):
        t = x * 2.0
        s = reads(t[1:], b)
        return s + np.sum(t)
    for backend in BACKENDS:
        assert_right(f, backend)


# -- objects and closures -------------------------------------------------------------------
@dataclass
class Weights:
    w: np.ndarray

    def scale_tail(self, b):
        self.w[1:] *= b

    def scale_by_helper(self, b):
        adds(self.w, b)

    def scaled(self, b):
        return self.w * b


def through_a_method(x, b):
    box = Weights(x * 1.0)
    box.scale_tail(b)
    return np.sum(box.w * box.w)


def through_a_method_and_a_helper(x, b):
    box = Weights(x * 1.0)
    box.scale_by_helper(b)
    return np.sum(box.w * box.w)


def through_a_reading_method(x, b):
    box = Weights(x * 1.0)
    return np.sum(box.scaled(b) * box.w)


def through_a_captured_view(x, b):
    t = x * 1.0
    v = t[1:]

    def put():
        v[0] = b
    put()
    return np.sum(t * t)


def through_a_captured_array(x, b):
    t = x * 1.0

    def scale():
        t[1:] *= b
    scale()
    return np.sum(t * t)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f,line", [(through_a_method, "self.w[1:] *= b"),
                                    (through_a_method_and_a_helper, "adds(self.w, b)")])
def test_a_method_writing_into_its_objects_array_is_refused(f, line, backend):
    with pytest.raises(TypeError, match="writes into an attribute, element or view of its "
                                        "argument 'self'") as info:
        grad(f, backend)
    number = int(str(info.value).split(".py:")[1].split(",")[0])
    with open(__file__) as src:
        assert line in src.read().splitlines()[number - 1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_method_that_only_reads_its_object_is_differentiated(backend):
    assert_right(through_a_reading_method, backend)


def test_a_closure_writing_into_a_captured_view_is_refused():
    for backend in BACKENDS:
        with pytest.raises(TypeError, match="put writes into its argument 'v'|captured"):
            grad(through_a_captured_view, backend)


def test_a_closure_writing_into_a_captured_array_is_differentiated():
    assert_right(through_a_captured_array, "interp")
    assert_right(through_a_captured_array, "auto")


# -- lists and dicts changed by a helper; numpy functions that write into an array -------------
def push(lst, v):
    lst.append(v * 2.0)


def extend(lst, v):
    lst.extend([v, v])


def appended_by_a_helper(x, b):
    acc = [x]
    push(acc, b * x)
    return sum(np.sum(a) for a in acc)


def extended_by_a_helper(x, b):
    acc = [x]
    extend(acc, b * x)
    return sum(np.sum(a) for a in acc)


def logged_by_a_helper(x, b):
    history = []
    push(history, b * np.sum(x))       # (never read afterwards: no change to follow)
    return np.sum(x * x) * b


def added_at(x, b):
    m = np.outer(x, x)
    np.add.at(m, (0, 0), b)
    return np.sum(m ** 2)


def add_at(m, b):
    np.add.at(m, ([0, 1], [1, 1]), b)


def added_at_by_a_helper(x, b):
    m = np.outer(x, x)
    add_at(m[1:], b)
    return np.sum(m ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("f,method", [(appended_by_a_helper, "append"),
                                      (extended_by_a_helper, "extend")])
def test_a_helper_changing_a_list_read_afterwards_is_refused(f, method, backend):
    with pytest.raises(TypeError, match=f"changes its argument 'acc' in place \\(.{method}"):
        grad(f, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_helper_appending_to_a_list_never_read_again_is_differentiated(backend):
    assert_right(logged_by_a_helper, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_np_add_at_of_a_differentiated_value_is_differentiated(backend):
    """`np.add.at(m, i, v)` is `m[...] = scatter_added(m, i, v)` to the J transform
    (`adjoint.passes.inplace`): a write reverse mode follows (it was refused)."""
    assert_right(added_at, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_np_add_at_by_a_helper_into_a_view_is_refused(backend):
    """... and a helper doing it into a view it is passed writes into that view, which
    the caller's array does not see: refused, as any such write."""
    with pytest.raises(TypeError, match="a call of add_at writes into its argument 'm', "
                                        "which is passed a view"):
        grad(added_at_by_a_helper, backend)


def keeps_lowering(p, b):
    for i in range(3):
        p -= b * 0.1
        if p > 100.0:
            p = p * 0.5
        p = p * 1.0
    return p


def scalar_helper(x, b):
    s = np.sum(x) * 1.0
    return keeps_lowering(s, b) ** 2 + np.sum(x * x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_place_operators_on_a_number_in_a_helper_are_differentiated(backend):
    assert_right(scalar_helper, backend)      # (`p -= v` rebinds a number: no write)
