"""Reverse-mode rules of numpy's shape, joining and splitting functions
(adjoint/rules_shapes.py), under the interpreter backend.

Each case is a small user function whose output (an array, or a scalar read out of
the pieces of a split) `check_gradient` compares against central differences, with
a random output cotangent.  Views (`x.T`, `x[:, ::2]`) are made inside the function,
since arguments are copied on entry.  A few losses are also compared with autograd.
"""
import types

import numpy as np

_NUMPY = tuple(int(p) for p in np.__version__.split(".")[:2])
import pytest
from adjoint_check import check_gradient

import adjoint

_rng = np.random.default_rng(20261122)


def r(*shape):
    return _rng.standard_normal(shape)


def distinct(*shape):
    """Values without ties (sort and partition are smooth there)."""
    n = int(np.prod(shape))
    return (_rng.permutation(n) + _rng.uniform(0.1, 0.9, n)).reshape(shape) / n


# -- reshaping ---------------------------------------------------------------------------
def ravel(x): return np.ravel(x)
def ravel_f(x): return np.ravel(x, order="F")
def ravel_k_view(x): return np.ravel(x.T[::-1], order="K")
def ravel_a_view(x): return np.ravel(x.T, "A")
def ravel_method(x): return x[:, ::2].ravel()
def flatten_f(x): return x.T.flatten("F")
def squeeze(x): return np.squeeze(x)
def squeeze_axis(x): return np.squeeze(x, axis=1)
def squeeze_method(x): return x.squeeze()
def atleast_1d(x): return np.atleast_1d(x)
def atleast_2d(x): return np.atleast_2d(x)
def atleast_3d(x): return np.atleast_3d(x)
def atleast_2d_two(x, y):
    a, b = np.atleast_2d(x, y)
    return np.sum(np.sin(a)) + np.sum(b * b)
def atleast_3d_second(x, y): return np.atleast_3d(x, y)[1]


# -- permutations, flips, rolls ------------------------------------------------------------
def moveaxis(x): return np.moveaxis(x, 0, -1)
def moveaxis_many(x): return np.moveaxis(x, [0, 1], [2, 0])
def swapaxes(x): return np.swapaxes(x, 0, 2)
def swapaxes_method(x): return x.swapaxes(1, 0)
def rollaxis(x): return np.rollaxis(x, 2)
def rollaxis_start(x): return np.rollaxis(x, 0, 3)
def rollaxis_neg(x): return np.rollaxis(x, -1, 1)
def transpose_method(x): return x.transpose(1, 0, 2)
def transpose_method_tuple(x): return x.transpose((2, 0, 1))
def transpose_method_neg(x): return x.transpose(-1, 0, 1)
def transpose_method_none(x): return x[:, ::2].transpose()
def flip(x): return np.flip(x)
def flip_axis(x): return np.flip(x, 1)
def flip_axes(x): return np.flip(x.T, (0, 2))
def fliplr(x): return np.fliplr(x)
def flipud(x): return np.flipud(x[:, ::2])
def rot90(x): return np.rot90(x)
def rot90_k(x): return np.rot90(x, 3)
def rot90_axes(x): return np.rot90(x, -1, (1, 2))
def roll(x): return np.roll(x, 2)
def roll_axis(x): return np.roll(x, -1, axis=1)
def roll_axes(x): return np.roll(x, (1, 2), axis=(0, 1))


# -- copies ------------------------------------------------------------------------------
def repeat(x): return np.repeat(x, 2)
def repeat_axis(x): return np.repeat(x, 3, axis=1)
def repeat_counts(x): return np.repeat(x, [1, 0, 2], axis=0)
def repeat_method(x): return x.T.repeat(2, axis=-1)
def repeat_zero(x): return np.repeat(x, 0, axis=0)
def tile(x): return np.tile(x, (2, 3))
def tile_int(x): return np.tile(x, 2)
def tile_more(x): return np.tile(x.T, (2, 1, 2))
def tile_fewer(x): return np.tile(x, [2])
def tile_zero(x): return np.tile(x, (0, 2))
def tile_one(x): return np.tile(x, (2,))


# -- joining -----------------------------------------------------------------------------
def concatenate(x, y): return np.concatenate([x, y])
def concatenate_axis(x, y): return np.concatenate((x, y.T), axis=1)
def concatenate_none(x, y): return np.concatenate([x, y], axis=None)
def concatenate_seq(xs): return np.concatenate(xs, axis=-1)
def concatenate_array(x): return np.concatenate(x)
def concatenate_twice(x): return np.concatenate([x, x[::-1]], 0)
def stack(x, y): return np.stack([x, y])
def stack_last(x, y): return np.stack((x, y), axis=-1)
def stack_seq(xs): return np.stack(xs, 1)
def stack_floats(a, b): return np.stack([a, b, a])
def hstack(x, y): return np.hstack([x, y])
def hstack_seq(xs): return np.hstack(xs)
def vstack(x, y): return np.vstack((x, y))
def vstack_array(x): return np.vstack(x)
def dstack(x, y): return np.dstack([x, y])
def column_stack(x, y): return np.column_stack([x, y])
def row_stack(x, y): return np.row_stack([x, y])


# -- splitting: a scalar read out of some pieces (the others get no cotangent) -------------
def readout(ps):
    return np.sum(np.sin(ps[0])) + np.sum(ps[-1] * ps[-1])
def split(x): return readout(np.split(x, 3))
def split_indices(x): return readout(np.split(x, [1, 3], axis=1))
def split_overlap(x): return readout(np.split(x, [3, 1]))
def split_all(x):
    s = 0.0
    for p in np.split(x, 2, axis=-1):
        s = s + np.sum(np.cos(p))
    return s
def array_split(x): return readout(np.array_split(x, 3))
def array_split_empty(x): return readout(np.array_split(x, 4, axis=1))
def hsplit(x): return readout(np.hsplit(x, 2))
def hsplit_indices(x): return readout(np.hsplit(x, [1]))
def vsplit(x): return readout(np.vsplit(x, [1, 2]))
def dsplit(x): return readout(np.dsplit(x.T, 2))


# -- padding, selection ------------------------------------------------------------------
def pad(x): return np.pad(x, 1)
def pad_pairs(x): return np.pad(x, ((1, 2), (0, 3)))
def pad_pair(x): return np.pad(x, [2, 1], "constant")
def pad_values(x): return np.pad(x[:, ::2], 2, constant_values=3.0)
PAD_BY_AXIS = {1: (1, 2)}   # a dict display is not lowered: a global
def pad_dict(x): return np.pad(x, PAD_BY_AXIS)
def pad_one(x): return np.pad(x, ((3, 2),), "constant")
def pad_reflect(x): return np.pad(x, 1, mode="reflect")
def select(x, y): return np.select([x > 0, y > 0.5], [x, y * 2.0], 0.5)
def select_default(x, d): return np.select([x > 0.3, x < -0.3], [np.sin(x), x], d)
def select_broadcast(x, y, z): return np.select([x > 0], [y], z)


# -- differences, diagonals, triangles ----------------------------------------------------
def diff(x): return np.diff(x)
def diff_n_axis(x): return np.diff(x, 2, axis=0)
def diff_long(x): return np.diff(x, n=4)
def diff_zero(x): return np.diff(x, n=0)
def diff_ends(x): return np.diff(x, axis=0, prepend=np.zeros((1, 3)), append=2.0)
def trace(x): return np.trace(x)
def trace_offset(x): return np.trace(x, 1)
def trace_axes(x): return np.trace(x, -1, axis1=1, axis2=2)
def trace_method(x): return x.T.trace()
def diagonal(x): return np.diagonal(x, 1)
def diagonal_axes(x): return np.diagonal(x, -1, 0, 2)
def diagonal_method(x): return x.diagonal()
def diag(v): return np.diag(v)
def diag_k(v): return np.diag(v, 1)
def diag_neg(v): return np.diag(v, k=-2)
def diagflat(v): return np.diagflat(v, 1)
def tril(x): return np.tril(x)
def tril_k(x): return np.tril(x.T, -1)
def triu(x): return np.triu(x)
def triu_k(x): return np.triu(x, k=1)


# -- reorderings -------------------------------------------------------------------------
def sort(x): return np.sort(x)
def sort_axis(x): return np.sort(x, axis=0)
def sort_none(x): return np.sort(x, axis=None)
def partition(x): return np.partition(x, 2)
def partition_kths(x): return np.partition(x, (1, 3), axis=0)
def partition_none(x): return np.partition(x, 0, axis=None)


def gradient_all(x): return sum(np.sum(g * np.sin(np.arange(g.size) + k).reshape(g.shape))
                                for k, g in enumerate(np.gradient(x)))
def gradient_axis(x): return np.sum(np.gradient(x, axis=-1) ** 2)
def gradient_1d(x): return np.sum(np.gradient(x) * np.arange(x.size))


def cases(fn, *arglists):
    return [pytest.param(fn, args, id=f"{fn.__name__}-{k}") for k, args in enumerate(arglists)]


CASES = (
    cases(gradient_all, (r(3, 4),), (r(2, 2),))
    + cases(gradient_axis, (r(3, 5),), (r(2, 3, 2),))
    + cases(gradient_1d, (r(6),), (r(2),))
    + cases(ravel, (r(3, 4),), (r(2, 3, 4),), (r(0, 3),), (r(5),))
    + cases(ravel_f, (r(3, 4),), (r(2, 3, 4),))
    + cases(ravel_k_view, (r(3, 4),), (r(2, 3, 4),))
    + cases(ravel_a_view, (r(3, 4),), (r(0, 2),))
    + cases(ravel_method, (r(3, 4),), (r(2, 5, 2),))
    + cases(flatten_f, (r(3, 4),), (r(2, 3, 4),))
    + cases(squeeze, (r(3, 1, 4),), (r(1, 1),), (r(0, 1),))
    + cases(squeeze_axis, (r(3, 1, 4),), (r(0, 1, 2),))
    + cases(squeeze_method, (r(1, 5),))
    + cases(atleast_1d, (1.5,), (r(),), (r(3),), (r(2, 3),), ([1.0, 2.0],))
    + cases(atleast_2d, (1.5,), (r(3),), (r(2, 3, 4),), (r(0),))
    + cases(atleast_3d, (1.5,), (r(3),), (r(2, 3),), (r(2, 3, 4, 5),))
    + cases(atleast_2d_two, (r(3), 0.7), (r(2, 2), r(4)))
    + cases(atleast_3d_second, (r(3), r(2, 2)))
    + cases(moveaxis, (r(2, 3, 4),), (r(0, 2, 3),))
    + cases(moveaxis_many, (r(2, 3, 4),))
    + cases(swapaxes, (r(2, 3, 4),))
    + cases(swapaxes_method, (r(3, 4),))
    + cases(rollaxis, (r(2, 3, 4),), (r(2, 3, 4, 5),))
    + cases(rollaxis_start, (r(2, 3, 4),))
    + cases(rollaxis_neg, (r(2, 3, 4),))
    + cases(transpose_method, (r(2, 3, 4),))
    + cases(transpose_method_tuple, (r(2, 3, 4),))
    + cases(transpose_method_neg, (r(2, 3, 4),))
    + cases(transpose_method_none, (r(3, 4),))
    + cases(flip, (r(3, 4),), (r(5),))
    + cases(flip_axis, (r(3, 4),), (r(2, 0, 2),))
    + cases(flip_axes, (r(2, 3, 4),))
    + cases(fliplr, (r(3, 4),))
    + cases(flipud, (r(3, 4),))
    + cases(rot90, (r(3, 4),))
    + cases(rot90_k, (r(3, 4),))
    + cases(rot90_axes, (r(2, 3, 4),))
    + cases(roll, (r(3, 4),), (r(5),))
    + cases(roll_axis, (r(3, 4),))
    + cases(roll_axes, (r(3, 4),))
    + cases(repeat, (r(2, 3),), (1.5,))
    + cases(repeat_axis, (r(2, 3),), (r(2, 3, 2),))
    + cases(repeat_counts, (r(3, 2),))
    + cases(repeat_method, (r(3, 2),))
    + cases(repeat_zero, (r(3, 2),))
    + cases(tile, (r(2, 3),), (r(3),), (1.5,))
    + cases(tile_int, (r(2, 3),), (r(0, 2),))
    + cases(tile_more, (r(2, 3),))
    + cases(tile_fewer, (r(2, 3, 2),))
    + cases(tile_zero, (r(2, 3),))
    + cases(tile_one, (r(3),), (r(2, 2, 1),))
    + cases(concatenate, (r(2, 3), r(4, 3)), (r(3), r(0)))
    + cases(concatenate_axis, (r(2, 3), r(4, 2)))
    + cases(concatenate_none, (r(2, 3), r(4)))
    + cases(concatenate_seq, ((r(2, 1), r(2, 3), r(2, 0)),), ([r(2), r(4)],))
    + cases(concatenate_array, (r(2, 3, 4),))
    + cases(concatenate_twice, (r(2, 3),))
    + cases(stack, (r(2, 3), r(2, 3)), (r(0), r(0)))
    + cases(stack_last, (r(2, 3), r(2, 3)))
    + cases(stack_seq, ((r(3), r(3), r(3)),), ([r(2, 2)],))
    + cases(stack_floats, (0.5, -1.5))
    + cases(hstack, (r(2), r(3)), (r(2, 1), r(2, 3)), (0.5, r(2)))
    + cases(hstack_seq, ((r(2, 3, 1), r(2, 1, 1)),))
    + cases(vstack, (r(3), r(3)), (r(2, 3), r(1, 3)), (0.5, 1.5))
    + cases(vstack_array, (r(3),), (r(2, 3),))
    + cases(dstack, (r(3), r(3)), (r(2, 3), r(2, 3, 2)))
    + cases(column_stack, (r(3), r(3, 2)), (r(2, 2), r(2)))
    + cases(split, (r(6),), (r(3, 2),), (r(0, 2),))
    + cases(split_indices, (r(2, 5),), (r(3, 2),))
    + cases(split_overlap, (r(5),))
    + cases(split_all, (r(3, 4),))
    + cases(array_split, (r(7),), (r(2, 3),))
    + cases(array_split_empty, (r(2, 3),))
    + cases(hsplit, (r(4),), (r(3, 4),))
    + cases(hsplit_indices, (r(3, 4),))
    + cases(vsplit, (r(4, 2),))
    + cases(dsplit, (r(4, 3, 2),))
    + cases(pad, (r(2, 3),), (r(4),), (r(0, 2),))
    + cases(pad_pairs, (r(2, 3),))
    + cases(pad_pair, (r(2, 3),))
    + cases(pad_values, (r(3, 4),))
    + (cases(pad_dict, (r(2, 3),)) if _NUMPY >= (2, 3) else [])   # a dict pad_width: 2.3+
    + cases(pad_one, (r(2, 2),))
    + cases(select, (r(3, 4), r(3, 4)), (r(3, 4), r(4)))
    + cases(select_default, (r(3, 4), 0.25), (r(4), r(4)))
    + cases(select_broadcast, (r(3, 4), r(3, 1), r(4)), (r(0, 2), r(2), 1.5))
    + cases(diff, (r(5),), (r(3, 4),), (r(0),))
    + cases(diff_n_axis, (r(4, 3),), (r(2, 3),))
    + cases(diff_long, (r(3),), (r(2, 6),))
    + cases(diff_zero, (r(3),))
    + cases(diff_ends, (r(2, 3),))
    + cases(trace, (r(3, 3),), (r(4, 5),), (r(0, 0),))
    + cases(trace_offset, (r(3, 4),), (r(3, 4, 2),))
    + cases(trace_axes, (r(2, 3, 4),))
    + cases(trace_method, (r(3, 5),))
    + cases(diagonal, (r(3, 4),), (r(3, 0),))
    + cases(diagonal_axes, (r(3, 2, 4),))
    + cases(diagonal_method, (r(4, 3),))
    + cases(diag, (r(3),), (r(3, 4),), (r(0),))
    + cases(diag_k, (r(3),), (r(4, 3),))
    + cases(diag_neg, (r(2),), (r(5, 3),))
    + cases(diagflat, (r(2, 2),))
    + cases(tril, (r(4, 4),), (r(2, 3, 4),), (r(4),))
    + cases(tril_k, (r(3, 5),))
    + cases(triu, (r(4, 4),), (r(2, 0, 3),), (r(3),))
    + cases(triu_k, (r(3, 3, 4),))
    + cases(sort, (distinct(7),), (distinct(3, 4),), (r(0),))
    + cases(sort_axis, (distinct(3, 4),))
    + cases(sort_none, (distinct(3, 4),))
    + cases(partition, (distinct(7),), (distinct(3, 5),))
    + cases(partition_kths, (distinct(5, 3),))
    + cases(partition_none, (distinct(2, 3),))
)


@pytest.mark.parametrize("fn, args", CASES)
def test_shape_rule(fn, args):
    check_gradient(fn, *args)


@pytest.mark.skipif(not hasattr(np, "row_stack"), reason="numpy without np.row_stack")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("args", [(r(3), r(3)), (r(2, 3), r(1, 3))])
def test_row_stack(args):
    check_gradient(row_stack, *args)


def test_pad_other_modes_refused():
    y, back = adjoint.pullback(pad_reflect, r(3, 4), backend="interp")
    with pytest.raises(TypeError, match="reflect"):
        back(np.ones(y.shape))


def test_sequence_cotangent_keeps_the_container():
    g_tuple, = adjoint.gradient(lambda xs: np.sum(np.hstack(xs)), (r(2), r(3)),
                                backend="interp")
    assert isinstance(g_tuple, tuple) and [g.shape for g in g_tuple] == [(2,), (3,)]
    g_list, = adjoint.gradient(lambda xs: np.sum(np.vstack(xs) ** 2), [r(3), r(3)],
                               backend="interp")
    assert isinstance(g_list, list) and len(g_list) == 2


def test_number_argument_gets_a_float():
    g, = adjoint.gradient(lambda x: np.sum(np.atleast_2d(x) * 3.0), 1.5, backend="interp")
    assert type(g) is float and g == 3.0


# -- against autograd ----------------------------------------------------------------------
W23, W64, W35 = r(2, 3), r(6, 4), r(3, 5)
def ag_tile(x): return np.sum(np.tile(x, (3, 2)) * W64)
def ag_concat(x, y): return np.sum(np.concatenate([x, y], axis=1) * W35)
def ag_split(x): return np.sum(np.split(x, [1, 4], axis=1)[1] ** 2)
def ag_pad(x): return np.sum(np.pad(x, ((0, 1), (1, 1)), "constant") * W35)
def ag_diag(x): return np.sum(np.diag(x, 1) * W23[0])
def ag_sort(x): return np.sum(np.sort(x) * W35[0])
def ag_diff(x): return np.sum(np.diff(x, 2) * W35[:, :3])
def ag_select(x): return np.sum(np.select([x > 0, x < -0.5], [x * x, np.sin(x)], 0.0) * W35)
def ag_repeat(x): return np.sum(np.repeat(x, 2, axis=1) ** 3)


@pytest.mark.parametrize("fn, args", [
    (ag_tile, (r(2, 2),)), (ag_concat, (r(3, 2), r(3, 3))), (ag_split, (r(3, 5),)),
    (ag_pad, (r(2, 3),)), (ag_diag, (r(4, 4),)), (ag_sort, (r(5),)),
    (ag_diff, (r(3, 5),)), (ag_select, (r(3, 5),)), (ag_repeat, (r(3, 5),)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_against_autograd(fn, args):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    clone = types.FunctionType(fn.__code__, {**fn.__globals__, "np": anp}, fn.__name__)
    got = adjoint.gradient(fn, *args, backend="interp")
    for k, g in enumerate(got):
        np.testing.assert_allclose(g, autograd.grad(clone, k)(*args), rtol=1e-10, atol=1e-12)


# -- second order: the pullbacks are out of place, so nested AD goes through them ----------
W6 = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
def h_moveaxis(x): return np.sum(np.moveaxis(x, 0, 1) ** 3)
def h_rot90(x): return np.sum(np.rot90(x) ** 3 * W6.T)
def h_ravel_f(x): return np.sum(np.ravel(x, "F") ** 3 * W6.ravel())
def h_tile(x): return np.sum(np.tile(x, (2, 1)) ** 3)
def h_repeat(x): return np.sum(np.repeat(x, 2, axis=1) ** 3)
def h_concat(x): return np.sum(np.concatenate([x, x * x], axis=None) ** 2)
def h_stack(x): return np.sum(np.stack([x, x], axis=1) ** 3)
def h_split(x): return np.sum(np.hsplit(x, [1])[1] ** 3)
def h_split_overlap(x): return np.sum(np.split(x, [2, 1], axis=1)[2] ** 3)
def h_pad(x): return np.sum(np.pad(x, 1) ** 3 * np.arange(20.0).reshape(4, 5))
def h_select(x): return np.sum(np.select([x > 0], [x ** 3], 0.0))
def h_diff(x): return np.sum(np.diff(x, axis=0) ** 3)
def h_diag(x): return np.sum(np.diag(x, 1) ** 3)
def h_trace(x): return x.trace(1) ** 3
def h_tril(x): return np.sum(np.tril(x) ** 3)
def h_sort(x): return np.sum(np.sort(x, axis=None) ** 3 * W6.ravel())
def h_partition(x): return np.sum(np.partition(x, 1, axis=1) ** 3 * W6)


@pytest.mark.parametrize("fn", [h_moveaxis, h_rot90, h_ravel_f, h_tile, h_repeat, h_concat,
                                h_stack, h_split, h_split_overlap, h_pad, h_select, h_diff,
                                h_diag, h_trace, h_tril, h_sort, h_partition],
                         ids=lambda f: f.__name__)
def test_hessian_through_rule(fn):
    x = np.array([[0.3, -0.7, 1.2], [0.5, -0.2, 0.9]])
    h = np.reshape(adjoint.hessian(fn, x, backend="interp"), (6, 6))
    eps = 1e-6
    fd = [(adjoint.gradient(fn, x + eps * e, backend="interp")[0]
           - adjoint.gradient(fn, x - eps * e, backend="interp")[0]).ravel() / (2 * eps)
          for e in np.eye(6).reshape(6, 2, 3)]
    np.testing.assert_allclose(h, np.array(fd), atol=1e-5)


def test_gradient_with_spacing_is_refused():
    def f(x):
        return np.sum(np.gradient(x, 0.5))
    with pytest.raises(TypeError, match="unit spacing"):
        adjoint.gradient(f, r(4), backend="interp")
