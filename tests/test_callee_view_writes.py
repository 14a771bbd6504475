"""A callee that writes into its argument, or into a view, element or attribute of
it, while the caller still reads the array through another name.

The adjoint follows an array by SSA value, so such a write used to lose part of the
gradient silently (a zero for the value written).  Each program here is either
differentiated right (checked against central differences) or refused with an error
naming the write, on the interpreter and the compiled backend."""
import warnings
from dataclasses import dataclass

import numpy as np
import pytest

import adjoint
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


# -- callees that write into their argument -----------------------------------------------
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


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("h", [adds, scales_the_tail, subtracts_everywhere,
                               scales_the_first])
def test_an_in_place_update_of_the_array_itself_is_differentiated(h, backend):
    f = on_the_array(h)
    gx, gb = grad(f, backend)
    want_x, want_b = central(f, X, B)
    np.testing.assert_allclose(gx, want_x, atol=1e-6)
    assert gb == pytest.approx(want_b, abs=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("h", [adds, scales_the_tail, subtracts_everywhere,
                               scales_the_first, adds_through_a_view, fills, sorts,
                               sets_by_method, copies_into])
def test_a_write_into_a_slice_the_caller_still_reads_is_refused(h, backend):
    with pytest.raises(TypeError, match="writes into its argument.*another name .'t'"):
        grad(on_a_slice(h), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_helper_passed_in_as_a_value_is_refused_on_a_slice(backend):
    def make(h):
        def loss(x, b):
            t = x * 1.0
            h(t[1:], b)
            return np.sum(t * t)
        return loss
    with pytest.raises(TypeError, match="a call of a function that writes"):
        grad(make(scales_the_tail), backend)
    f = make(lambda a, b: np.sum(a) * b)     # (reads only: the same refusal is sound,
    with pytest.raises(TypeError, match="writes into its argument"):   # not precise)
        grad(f, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_nested_write_through_a_view_of_an_argument_is_refused(backend):
    with pytest.raises(TypeError, match="a call of adds .*another name .'a'"):
        grad(on_the_array(adds_through_a_view), backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("h,name", [(fills, "ndarray.fill"), (sorts, "ndarray.sort"),
                                    (sets_by_method, "ndarray.__setitem__"),
                                    (copies_into, "numpy.copyto")])
def test_a_library_write_into_the_argument_is_refused(h, name, backend):
    with pytest.raises(adjoint.rules.NoDerivativeRule, match=name):
        grad(on_the_array(h), backend)


def test_sorting_the_differentiated_array_in_place_is_refused():
    def f(x, b):
        x.sort()
        return np.sum(x * np.arange(4.0)) * b
    with pytest.raises(adjoint.rules.NoDerivativeRule, match="ndarray.sort"):
        gradient(f, X.copy(), B, backend="interp")


# -- objects and closures -------------------------------------------------------------------
@dataclass
class Weights:
    w: np.ndarray

    def scale_tail(self, b):
        self.w[1:] *= b


def through_a_method(x, b):
    box = Weights(x * 1.0)
    box.scale_tail(b)
    return np.sum(box.w * box.w)


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
def test_a_method_writing_into_its_objects_array_is_refused(backend):
    with pytest.raises(TypeError, match="another name .'self'"):
        grad(through_a_method, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_closure_writing_into_a_captured_view_is_refused(backend):
    with pytest.raises(TypeError, match="another name .'t'"):
        grad(through_a_captured_view, backend)


def test_a_closure_writing_into_a_captured_array_is_differentiated():
    gx, gb = grad(through_a_captured_array, "interp")
    want_x, want_b = central(through_a_captured_array, X, B)
    np.testing.assert_allclose(gx, want_x, atol=1e-6)
    assert gb == pytest.approx(want_b, abs=1e-6)
