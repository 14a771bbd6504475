"""Derivative rules for numpy's shape, joining and splitting functions.

Every function here only moves, copies, drops or sums elements, so each pullback
sends the output cotangent back to where its elements came from: the inverse
permutation for axis shuffles, flips and rolls, a sum over the copies for `repeat`
and `tile`, a slice for `pad`, a split for the joining functions and a zero-filled
join for the splitting ones, a gather through the inverse permutation for `sort` and
`partition`, the diagonal spread over an offset identity for `diag`/`trace`.  The
pullbacks compute out of place where they can (not `np.repeat` with an array of
counts, which scatters with np.add.at), so that nested AD can differentiate them.

The cotangent of an argument has the argument's form (`_like`): an array of its
shape, a float for a number, a list or tuple for a sequence (of arrays or numbers).
Integer arguments (axes, shapes, counts, index lists) get `None`.  Keyword values
get no cotangent (a pullback returns one per positional argument): the keywords are
options, except the data keywords `np.pad(constant_values=)`, `np.diff(prepend=,
append=)` and `np.select(default=)` (differentiated only when passed positionally).
"""
from __future__ import annotations

import numpy as np

from .rule_table import defmethod, pullback_rule
from .tape import unbcast


# -- helpers ------------------------------------------------------------------------------
def _like(g, x):
    """Cotangent `g` (an array with x's elements) in the form of the primal `x`."""
    if isinstance(x, np.ndarray):
        return np.reshape(g, x.shape)
    if isinstance(x, (list, tuple)):
        g = np.reshape(g, np.shape(x))
        parts = [_like(g[k], x[k]) for k in range(len(x))]
        return parts if isinstance(x, list) else tuple(parts)
    return float(np.reshape(g, ()))


def _seq_like(parts, seq):
    """The cotangent of a sequence argument `seq` from one cotangent per item."""
    if isinstance(seq, np.ndarray):
        return np.reshape(np.array([np.reshape(p, seq.shape[1:]) for p in parts],
                                   dtype=float), seq.shape)
    out = [_like(p, x) for p, x in zip(parts, seq)]
    return out if isinstance(seq, list) else tuple(out)


def _reduce_like(g, x):
    """`g`, summed over the axes along which `x` was broadcast, in x's form."""
    return _like(unbcast(np.asarray(g, dtype=float), np.asarray(x)), x)


def _no_out(out, name):
    if out is not None:
        raise TypeError(f"adjoint: {name} with out= is not differentiable")


def _only_constant(mode):
    if mode != "constant":
        raise TypeError(f"adjoint: the derivative of np.pad supports mode='constant' only, "
                        f"not mode={mode!r}")


def _promoted(fn, x):
    """The shape `fn` (np.atleast_2d, ...) gives x, without copying x."""
    return fn(np.broadcast_to(0.0, np.shape(x))).shape


# -- reshaping: the cotangent takes the input's shape back ---------------------------------
def _unravel(dy, a, order="C"):
    """The pullback of np.ravel(a, order) (also a.ravel and a.flatten)."""
    shape = np.shape(a)
    if isinstance(a, np.ndarray) and order == "A":
        order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    if isinstance(a, np.ndarray) and order == "K":
        pos = np.empty_like(a, dtype=np.intp)      # numbered in C order, laid out like `a`
        pos[...] = np.arange(a.size).reshape(shape)
        return np.reshape(np.take(dy, np.argsort(np.ravel(pos, order="K"))), shape)
    if order == "F":      # Fortran order: the C order of the reversed shape, transposed
        return _like(np.transpose(np.reshape(dy, shape[::-1])), a)
    return _like(np.reshape(dy, shape), a)


@pullback_rule((np.ravel, np.ndarray.flatten))     # (a.flatten() is a copy: the same values)
def d_np_ravel(dy, a, order="C"):
    return _unravel(dy, a, order), None


@pullback_rule(np.squeeze)
def d_np_squeeze(dy, a, axis=None):
    return _like(dy, a), None


def _d_atleast(dy, arys):
    if len(arys) == 1:
        return (_like(dy, arys[0]),)
    return tuple(None if d is None else _like(d, a) for d, a in zip(dy, arys))


@pullback_rule(np.atleast_1d)
def d_np_atleast_1d(dy, *arys):
    return _d_atleast(dy, arys)


@pullback_rule(np.atleast_2d)
def d_np_atleast_2d(dy, *arys):
    return _d_atleast(dy, arys)


@pullback_rule(np.atleast_3d)
def d_np_atleast_3d(dy, *arys):
    return _d_atleast(dy, arys)


# -- axis permutations, flips and rolls: apply the inverse -----------------------------------
@pullback_rule(np.moveaxis)
def d_np_moveaxis(dy, a, source, destination):
    return _like(np.moveaxis(dy, destination, source), a), None, None


@pullback_rule(np.swapaxes)
def d_np_swapaxes(dy, a, axis1, axis2):
    return _like(np.swapaxes(dy, axis1, axis2), a), None, None


@pullback_rule(np.rollaxis)
def d_np_rollaxis(dy, a, axis, start=0):
    n = np.ndim(a)
    axis = axis % n
    start = start + n if start < 0 else start
    start = start - 1 if axis < start else start
    order = [k for k in range(n) if k != axis]
    order.insert(start, axis)
    return _like(np.transpose(dy, np.argsort(order)), a), None, None


@pullback_rule(np.flip)
def d_np_flip(dy, m, axis=None):
    return _like(np.flip(dy, axis), m), None


@pullback_rule(np.fliplr)
def d_np_fliplr(dy, m):
    return (_like(np.fliplr(dy), m),)


@pullback_rule(np.flipud)
def d_np_flipud(dy, m):
    return (_like(np.flipud(dy), m),)


@pullback_rule(np.rot90)
def d_np_rot90(dy, m, k=1, axes=(0, 1)):
    return _like(np.rot90(dy, -k, axes), m), None, None


@pullback_rule(np.roll)
def d_np_roll(dy, a, shift, axis=None):
    return _like(np.roll(dy, np.negative(shift), axis), a), None, None


# -- copies: add the cotangents of all the copies of an element -------------------------------
@pullback_rule(np.repeat)
def d_np_repeat(dy, a, repeats, axis=None):
    shape = np.shape(a)
    ax = 0 if axis is None else axis % len(shape)
    n = int(np.prod(shape)) if axis is None else shape[ax]
    if np.ndim(repeats) == 0:     # each element's copies are adjacent: sum them out
        copies = shape[:ax] + (n, int(repeats)) + shape[ax + 1:] if axis is not None else (
            n, int(repeats))
        return _like(np.sum(np.reshape(dy, copies), axis=ax + 1), a), None, None
    g = np.zeros((n,) if axis is None else shape)
    source = np.repeat(np.arange(n), repeats)       # the element each output slot copies
    np.add.at(g, (slice(None),) * ax + (source,), dy)
    return _like(g, a), None, None


@pullback_rule(np.tile)
def d_np_tile(dy, A, reps):
    reps = tuple(reps) if np.iterable(reps) else (reps,)
    shape = np.shape(A)
    d = max(len(reps), len(shape))
    shape = (1,) * (d - len(shape)) + shape
    reps = (1,) * (d - len(reps)) + reps
    # the output's axis k is (copy, element) in C order: split it into those two
    g = np.reshape(dy, [v for pair in zip(reps, shape) for v in pair])
    return _like(g.sum(axis=tuple(range(0, 2 * d, 2))), A), None


# -- joining: split the cotangent back into the pieces ---------------------------------------
def _unjoin(dy, seq, shapes, axis):
    """Split `dy` along `axis` into pieces of `shapes` (the items' shapes as numpy
    joined them), each in the form of its item of `seq`."""
    cuts = np.cumsum([s[axis] for s in shapes])[:-1]
    return _seq_like(np.split(dy, cuts, axis=axis), seq)


@pullback_rule(np.concatenate)
def d_np_concatenate(dy, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    _no_out(out, "np.concatenate")
    if axis is None:
        return _unjoin(np.ravel(dy), arrays, [(np.size(a),) for a in arrays], 0), None
    return _unjoin(dy, arrays, [np.shape(a) for a in arrays], axis), None


@pullback_rule(np.stack)
def d_np_stack(dy, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    _no_out(out, "np.stack")
    return _seq_like(list(np.moveaxis(dy, axis, 0)), arrays), None


@pullback_rule(np.hstack)
def d_np_hstack(dy, tup, dtype=None, casting="same_kind"):
    shapes = [_promoted(np.atleast_1d, a) for a in tup]
    return (_unjoin(dy, tup, shapes, 0 if len(shapes[0]) == 1 else 1),)


def _d_vstack(dy, tup, dtype=None, casting="same_kind"):
    return (_unjoin(dy, tup, [_promoted(np.atleast_2d, a) for a in tup], 0),)


d_np_vstack = pullback_rule(np.vstack)(_d_vstack)
if getattr(np, "row_stack", None) is not None and np.row_stack is not np.vstack:
    pullback_rule(np.row_stack)(_d_vstack)


@pullback_rule(np.dstack)
def d_np_dstack(dy, tup):
    return (_unjoin(dy, tup, [_promoted(np.atleast_3d, a) for a in tup], 2),)


def _as_column(shape):
    return {0: (1, 1), 1: shape + (1,)}.get(len(shape), shape)


@pullback_rule(np.column_stack)
def d_np_column_stack(dy, tup):
    return (_unjoin(dy, tup, [_as_column(np.shape(a)) for a in tup], 1),)


# -- splitting: join the pieces' cotangents, zeros for the pieces that got none ---------------
def _cut_points(n, sections):
    """Where numpy's array_split cuts an axis of length n, as slice bounds in [0, n]."""
    if np.ndim(sections) == 0:
        each, extra = divmod(n, int(sections))
        sizes = [0] + [each + 1] * extra + [each] * (int(sections) - extra)
        return [int(c) for c in np.cumsum(sizes)]
    return [0] + [_clamp(int(c), n) for c in sections] + [n]


def _clamp(i, n):
    i = i + n if i < 0 else i
    return min(max(i, 0), n)


def _piece(d, shape, axis, size):
    """A piece's cotangent: zeros when it got none."""
    if d is None:
        return np.zeros(shape[:axis] + (max(size, 0),) + shape[axis + 1:])
    return np.asarray(d)


def _unsplit(dys, ary, sections, axis):
    """Out of place (so that nested AD can follow it): the pieces' cotangents joined
    when they tile the axis, else (decreasing indices overlap pieces) added one by one."""
    shape = np.shape(ary)
    axis = axis % len(shape)
    cut = _cut_points(shape[axis], sections)
    parts = [_piece(d, shape, axis, cut[k + 1] - cut[k]) for k, d in enumerate(dys)]
    if all(cut[k] <= cut[k + 1] for k in range(len(dys))):
        return _like(np.concatenate(parts, axis), ary), None, None
    g = np.zeros(shape)
    for k, part in enumerate(parts):
        width = [(0, 0)] * len(shape)
        width[axis] = (cut[k], shape[axis] - cut[k] - part.shape[axis])
        g = g + np.pad(part, width)
    return _like(g, ary), None, None


@pullback_rule((np.split, np.array_split))
def d_np_split(dy, ary, indices_or_sections, axis=0):
    return _unsplit(dy, ary, indices_or_sections, axis)


@pullback_rule(np.hsplit)
def d_np_hsplit(dy, ary, indices_or_sections):
    return _unsplit(dy, ary, indices_or_sections, 1 if np.ndim(ary) > 1 else 0)[:2]


@pullback_rule(np.vsplit)
def d_np_vsplit(dy, ary, indices_or_sections):
    return _unsplit(dy, ary, indices_or_sections, 0)[:2]


@pullback_rule(np.dsplit)
def d_np_dsplit(dy, ary, indices_or_sections):
    return _unsplit(dy, ary, indices_or_sections, 2)[:2]


# -- padding and selection ------------------------------------------------------------------
def _pad_before(pad_width, ndim):
    """How many elements np.pad adds before each axis."""
    if isinstance(pad_width, dict):          # {axis: width or (before, after)}
        width = np.zeros((ndim, 2))
        for ax, w in pad_width.items():
            width[ax] = np.broadcast_to(w, (2,))
    else:
        width = np.broadcast_to(np.asarray(pad_width, dtype=float), (ndim, 2))
    return np.rint(width[:, 0]).astype(np.intp)


@pullback_rule(np.pad)
def d_np_pad(dy, array, pad_width, mode="constant", constant_values=0):
    _only_constant(mode)
    shape = np.shape(array)
    inside = tuple(slice(b, b + n) for b, n in zip(_pad_before(pad_width, len(shape)), shape))
    return _like(np.asarray(dy)[inside], array), None, None


@pullback_rule(np.select)
def d_np_select(dy, condlist, choicelist, default=0):
    """The first true condition picks the choice (later ones see it taken)."""
    dy = np.asarray(dy, dtype=float)
    taken = np.zeros(dy.shape, dtype=bool)
    parts = []
    for cond, choice in zip(condlist, choicelist):
        pick = np.broadcast_to(cond, dy.shape) & ~taken
        parts.append(_reduce_like(np.where(pick, dy, 0.0), choice))
        taken |= pick
    return None, _seq_like(parts, choicelist), _reduce_like(np.where(taken, 0.0, dy), default)


# -- differences ----------------------------------------------------------------------------
def _undiff(g, axis, length):
    """The pullback of one step of np.diff along `axis`, whose input had `length`."""
    g = np.moveaxis(np.asarray(g, dtype=float), axis, 0)
    if length == 0:
        return np.moveaxis(np.zeros((0,) + g.shape[1:]), 0, axis)
    edge = np.zeros((1,) + g.shape[1:])     # built without writes: differentiable again
    out = np.concatenate([edge, g]) - np.concatenate([g, edge])
    return np.moveaxis(out, 0, axis)


def _along(x, axis, ndim):
    """How many elements `x`, given as prepend= or append=, adds along `axis`."""
    return 0 if x is None else (1 if np.ndim(x) == 0 else np.shape(x)[axis % ndim])


@pullback_rule(np.diff)
def d_np_diff(dy, a, n=1, axis=-1, prepend=None, append=None):
    shape = np.shape(a)
    first = _along(prepend, axis, len(shape))
    lengths = [shape[axis] + first + _along(append, axis, len(shape))]
    for _ in range(n):
        lengths.append(max(lengths[-1] - 1, 0))
    g = dy
    for length in reversed(lengths[:-1]):
        g = _undiff(g, axis, length)
    g = np.moveaxis(np.asarray(g, dtype=float), axis, 0)[first:first + shape[axis]]
    return _like(np.moveaxis(g, 0, axis), a), None, None


def _ungradient(g, axis):
    """The transpose of np.gradient along `axis` with unit spacing and edge_order=1
    (central differences inside, one-sided at both ends), built without writes."""
    g = np.moveaxis(np.asarray(g, dtype=float), axis, 0)
    n = g.shape[0]
    z = np.zeros((1,) + g.shape[1:])
    inner = g[1:-1] / 2.0
    # d f[i] = dg[i-1]/2 (i-1 inner) - dg[i+1]/2 (i+1 inner) ; edges: +-dg[0], +-dg[n-1]
    up = np.concatenate([z, z, inner]) if n > 2 else np.zeros_like(g)
    down = np.concatenate([inner, z, z]) if n > 2 else np.zeros_like(g)
    first = np.concatenate([-g[:1], g[:1], np.zeros((n - 2,) + g.shape[1:])])
    last = np.concatenate([np.zeros((n - 2,) + g.shape[1:]), -g[-1:], g[-1:]])
    return np.moveaxis(up - down + first + last, 0, axis)


@pullback_rule(np.gradient)
def d_np_gradient(dy, f, *varargs, axis=None, edge_order=1):
    """np.gradient with unit spacing (no `varargs`) and edge_order=1: a linear map,
    whose transpose is applied per axis (the result is a list when several axes)."""
    if varargs or edge_order != 1:
        raise TypeError("adjoint: the derivative of numpy.gradient needs unit spacing and "
                        "edge_order=1")
    nd = np.ndim(f)
    axes = tuple(range(nd)) if axis is None else np.atleast_1d(axis).tolist()
    parts = dy if len(axes) > 1 else [dy]
    g = sum(_ungradient(p, a % nd) for p, a in zip(parts, axes) if p is not None)
    return (_like(g, f),) + (None,) * len(varargs)


# -- diagonals and triangles ----------------------------------------------------------------
def _undiagonal(d, shape, offset=0, axis1=0, axis2=1):
    """Zeros of `shape` with `d` on the diagonal np.diagonal reads (out of place:
    the diagonal's values spread along rows, times the offset identity matrix)."""
    n1, n2 = shape[axis1], shape[axis2]
    d = np.asarray(d, dtype=float)
    first = min(max(-offset, 0), n1)            # the diagonal's first row
    rows = np.concatenate([np.zeros(d.shape[:-1] + (first,)), d,
                           np.zeros(d.shape[:-1] + (n1 - first - d.shape[-1],))], -1)
    g = np.expand_dims(rows, -1) * np.eye(n1, n2, offset)
    return np.moveaxis(g, (-2, -1), (axis1, axis2))


@pullback_rule(np.diagonal)
def d_np_diagonal(dy, a, offset=0, axis1=0, axis2=1):
    return _like(_undiagonal(dy, np.shape(a), offset, axis1, axis2), a), None, None, None


@pullback_rule(np.trace)
def d_np_trace(dy, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _no_out(out, "np.trace")
    shape = np.shape(a)
    g = np.expand_dims(np.asarray(dy, dtype=float), (-2, -1)) * np.eye(
        shape[axis1], shape[axis2], offset)
    return _like(np.moveaxis(g, (-2, -1), (axis1, axis2)), a), None, None, None


@pullback_rule(np.diag)
def d_np_diag(dy, v, k=0):
    if np.ndim(v) == 1:
        return _like(np.array(np.diagonal(dy, k)), v), None
    return _like(_undiagonal(dy, np.shape(v), k), v), None


@pullback_rule(np.diagflat)
def d_np_diagflat(dy, v, k=0):
    return _like(np.array(np.diagonal(dy, k)), v), None


@pullback_rule(np.tril)
def d_np_tril(dy, m, k=0):
    return _reduce_like(np.tril(dy, k), m), None


@pullback_rule(np.triu)
def d_np_triu(dy, m, k=0):
    return _reduce_like(np.triu(dy, k), m), None


# -- reorderings: gather the cotangent back through the inverse permutation --------------
def _unpermute(dy, a, source, target, axis):
    """Element source[i] of `a` went to position target[i] of the result (i itself
    when target is None), along `axis` (flattened when None): gather the cotangent
    back through the inverse permutation (out of place, so nested AD follows it)."""
    dy = np.ravel(dy) if axis is None else np.asarray(dy)
    ax = 0 if axis is None else axis
    back = np.argsort(source, axis=ax)
    if target is not None:
        back = np.take_along_axis(target, back, ax)
    return _like(np.take_along_axis(dy, back, ax), a)


@pullback_rule(np.sort)
def d_np_sort(dy, a, axis=-1, kind=None, order=None, stable=None):
    source = np.argsort(a, axis=axis, kind=kind, order=order, stable=stable)
    return (_unpermute(dy, a, source, None, axis),)


@pullback_rule(np.partition)
def d_np_partition(dy, a, kth, axis=-1, kind="introselect", order=None):
    """Sorting both the input and the (recomputed) result matches their elements:
    the i-th smallest of `a` is the i-th smallest of the result."""
    arr = np.asarray(a)
    y = np.partition(arr, kth, axis=axis, kind=kind, order=order)
    ax = 0 if axis is None else axis
    source = np.argsort(np.ravel(arr) if axis is None else arr, axis=ax, kind="stable")
    target = np.argsort(y, axis=ax, kind="stable")
    return _unpermute(dy, a, source, target, axis), None


# -- ndarray methods ------------------------------------------------------------------------
def _m_ravel(dy, a, order="C"):
    return _unravel(dy, a, order), None


def _m_squeeze(dy, a, axis=None):
    return np.reshape(dy, a.shape), None


def _m_swapaxes(dy, a, axis1, axis2):
    return np.swapaxes(dy, axis1, axis2), None, None


def _m_transpose(dy, a, *axes):
    """a.transpose(), a.transpose(None), a.transpose(axes), a.transpose(*axes)."""
    given = len(axes)
    if given == 1 and (axes[0] is None or np.iterable(axes[0])):
        axes = axes[0]
    if axes is None or len(axes) == 0:
        return (np.transpose(dy),) + (None,) * given
    return (np.transpose(dy, np.argsort([k % a.ndim for k in axes])),) + (None,) * given


def _m_repeat(dy, a, repeats, axis=None):
    return d_np_repeat.fn(dy, a, repeats, axis)


def _m_diagonal(dy, a, offset=0, axis1=0, axis2=1):
    return d_np_diagonal.fn(dy, a, offset, axis1, axis2)


def _m_trace(dy, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return d_np_trace.fn(dy, a, offset, axis1, axis2, dtype, out)


for _name, _fn in (("ravel", _m_ravel), ("flatten", _m_ravel), ("squeeze", _m_squeeze),
                   ("swapaxes", _m_swapaxes), ("transpose", _m_transpose),
                   ("repeat", _m_repeat), ("diagonal", _m_diagonal), ("trace", _m_trace)):
    defmethod(np.ndarray, _name, _fn)
