"""Reverse-mode rules of `adjoint.rules_linalg` (einsum, tensordot, inner, kron, cross,
det, slogdet, inv, solve, cholesky) and of np.dot / np.matmul at every rank, under the
interpreter: checked against central differences (`check_gradient` draws a random
output cotangent) and, where autograd is installed, against its gradients."""
from __future__ import annotations

import numpy as np
import pytest
from adjoint_check import check_gradient

import adjoint

RNG = np.random.default_rng(11)


def R(*shape):
    return RNG.normal(size=shape)


def strided(rows, cols):
    """A non-contiguous rows x cols view: every other column."""
    return R(rows, 2 * cols)[:, ::2]


# -- einsum ------------------------------------------------------------------------------
def ein1(s, a):
    return np.einsum(s, a)


def ein2(s, a, b):
    return np.einsum(s, a, b)


def ein3(s, a, b, c):
    return np.einsum(s, a, b, c)


EINSUM = [
    ("ij->ji", [(3, 4)]), ("ij", [(3, 4)]), ("ii->i", [(4, 4)]), ("ii", [(3, 3)]),
    ("iji->j", [(3, 2, 3)]), ("abcd->bd", [(3, 2, 3, 2)]), ("...ij->", [(2, 3)]),
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ij,k", [(3, 4), (3,)]),
    ("i,i->", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]), ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("ij,ij->i", [(2, 3), (2, 1)]), ("k,nk->", [(5,), (6, 5)]),
    ("...ij,...jk->...ik", [(2, 3), (2, 3, 4)]), ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]),
    ("...ij,...jk->...ik", [(1, 2, 3), (4, 3, 2)]), ("...ij,...jk->...ik", [(0, 2, 3), (0, 3, 4)]),
    ("jk...,lj...->lk...", [(3, 2, 4), (2, 3, 4)]), ("j...k,lj...->lk...", [(2, 2, 2), (2, 2, 2)]),
    ("...k,...nk->...", [(3, 5), (3, 6, 5)]), ("...,...->...", [(), (3, 4)]),
    ("ijk,lji->lki", [(3, 4, 4), (4, 4, 3)]), ("ii,i->i", [(3, 3), (3,)]),
    ("ijk,lji,lli->lki", [(3, 4, 4), (4, 4, 3), (4, 4, 3)]), ("ijj,ikk->jk", [(2, 3, 3), (2, 4, 4)]),
    ("ij, jk, kl -> il", [(2, 3), (3, 4), (4, 2)]),
]


@pytest.mark.parametrize("spec, shapes", EINSUM, ids=lambda v: str(v))
def test_einsum(spec, shapes):
    args = [R(*s) for s in shapes]
    f = {1: ein1, 2: ein2, 3: ein3}[len(args)]
    grads = check_gradient(f, spec, *args)
    assert grads[0] is None


def test_einsum_strided_and_numbers():
    check_gradient(ein2, "ij,jk->ik", strided(3, 2), strided(2, 4))
    grads = check_gradient(ein2, ",i->i", 1.5, R(3))
    assert isinstance(grads[1], float)
    check_gradient(ein2, "ij,ij->", R(2, 3), np.arange(6).reshape(2, 3))


def ein_interleaved(a, b):
    return np.einsum(a, [0, 1], b, [1, 2], [0, 2])


def ein_interleaved_implicit(a, b):
    return np.einsum(a, [0, 1], b, [1, 2])


def ein_interleaved_ellipsis(a, b):
    return np.einsum(a, [Ellipsis, 0, 1], b, [Ellipsis, 1, 2], [Ellipsis, 0, 2])


def ein_interleaved_diag(a, b, c):
    return np.einsum(a, [0, 1, 2], b, [3, 1, 0], c, [3, 3, 0], [3, 2, 0])


def ein_optimize(a, b, c):
    return np.einsum("ij,jk,kl->il", a, b, c, optimize=True)


def test_einsum_interleaved():
    grads = check_gradient(ein_interleaved, R(2, 3), R(3, 4))
    assert [g.shape for g in grads] == [(2, 3), (3, 4)]
    check_gradient(ein_interleaved_implicit, R(2, 3), R(3, 4))
    check_gradient(ein_interleaved_ellipsis, R(2, 2, 3), R(3, 4))
    check_gradient(ein_interleaved_diag, R(3, 4, 4), R(4, 4, 3), R(4, 4, 3))
    check_gradient(ein_optimize, R(2, 3), R(3, 4), R(4, 2))


def test_einsum_diagonal_scatter():
    _, back = adjoint.pullback(ein1, "ii->i", R(3, 3), backend="interp")
    assert np.array_equal(back(np.array([1.0, 2.0, 3.0]))[1], np.diag([1.0, 2.0, 3.0]))


# -- tensordot, inner, kron ----------------------------------------------------------------
def td(a, b, axes):
    return np.tensordot(a, b, axes)


def td_default(a, b):
    return np.tensordot(a, b)


def td_pair_of_ints(a, b):
    return np.tensordot(a, b, axes=(-1, 0))


def td_lists(a, b):
    return np.tensordot(a, b, axes=[(1,), (0,)])


TENSORDOT = [((1, 3), (3,), ((1,), (0,))), ((2, 3, 2), (3, 4, 2), ((1,), (0,))),
             ((3, 4, 2), (2, 3, 2), ((0,), (1,))), ((2, 3, 4), (2, 2, 3, 4), ((1, 0), (2, 1))),
             ((2, 2), (2, 2), 1), ((4, 2, 2), (2, 2, 4), 2), ((4,), (), 0), ((2, 3), (4,), 0),
             ((2, 6), (6, 3), ([-1], [0])), ((2,), (2, 2), (0, 1)), ((0, 3), (3, 2), 1)]


@pytest.mark.parametrize("sa, sb, axes", TENSORDOT, ids=str)
def test_tensordot(sa, sb, axes):
    a = R(*sa)
    b = float(RNG.normal()) if sb == () else R(*sb)
    grads = check_gradient(td, a, b, axes)
    assert grads[2] is None
    if sb == ():
        assert isinstance(grads[1], float)


def test_tensordot_forms():
    check_gradient(td_default, R(3, 2, 2), R(2, 2, 4))
    check_gradient(td_pair_of_ints, strided(2, 3), R(3, 4))
    check_gradient(td_lists, R(2, 3, 2), R(3, 4, 2))


def inner(a, b):
    return np.inner(a, b)


def kron(a, b):
    return np.kron(a, b)


PRODUCTS = [(None, None), (None, (3,)), ((3,), (3,)), ((2, 3), (4, 3)), ((2, 2, 3), (3,)),
            ((3,), (2, 4, 3)), ("strided", (4, 3)), ((0, 3), (2, 3))]
KRON = [((5, 5), (3, 3)), ((2, 2), (2, 3)), ((5,), (3,)), ((5, 1), (1, 3)), ((1, 5), (3, 1)),
        ((4,), (2, 3)), ((2, 3, 2), (2, 2)), (None, (3, 3)), ((2, 2), None), (None, None),
        ("strided", (2, 2)), ((0, 2), (2, 2))]


def _operand(shape):
    if shape is None:
        return float(RNG.normal())
    if shape == "strided":
        return strided(2, 3)
    return R(*shape)


@pytest.mark.parametrize("f, pairs", [(inner, PRODUCTS), (kron, KRON)],
                         ids=["inner", "kron"])
def test_inner_kron(f, pairs):
    for sa, sb in pairs:
        a, b = _operand(sa), _operand(sb)
        grads = check_gradient(f, a, b)
        for g, x in zip(grads, (a, b)):
            assert isinstance(g, float) == (not isinstance(x, np.ndarray))


# -- cross -------------------------------------------------------------------------------
def cross(a, b, axisa, axisb, axisc):
    return np.cross(a, b, axisa=axisa, axisb=axisb, axisc=axisc)


def cross_axis(a, b, axis):
    return np.cross(a, b, axis=axis)


def cross_plain(a, b):
    return np.cross(a, b)


@pytest.mark.parametrize("axisa", [-1, 0, 1])
@pytest.mark.parametrize("axisb", [-1, 0])
@pytest.mark.parametrize("axisc", [-1, 0, 1])
def test_cross_axes(axisa, axisb, axisc):
    check_gradient(cross, R(3, 3), R(3, 3), axisa, axisb, axisc)


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
@pytest.mark.parametrize("sa, sb", [((3,), (3,)), ((4, 3), (1, 3)), ((1, 3), (4, 3)),
                                    ((5, 3), (3,)), ((4, 2), (4, 2)), ((4, 3), (4, 2)),
                                    ((2,), (3,)), ((0, 3), (0, 3))], ids=str)
def test_cross_shapes(sa, sb):
    a, b = R(*sa), R(*sb)
    try:
        cross_plain(a, b)
    except ValueError:
        pytest.skip("this numpy has no 2-vector cross products")
    check_gradient(cross_plain, a, b)


def test_cross_axis_keyword():
    for axis in (-1, 0, 1):
        check_gradient(cross_axis, R(3, 3), R(3, 3), axis)
    check_gradient(cross_axis, R(3, 4), strided(3, 4), 0)


# -- dot and matmul at every rank -----------------------------------------------------------
def dot(a, b):
    return np.dot(a, b)


def matmul(a, b):
    return np.matmul(a, b)


def at(a, b):
    return a @ b


DOT = [(None, None), (None, (3,)), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((3,), (2, 3, 4)),
       ((2, 3), (3, 4)), ((2, 2, 3), (3,)), ((2, 2, 3), (3, 4)), ((2, 3), (2, 3, 4)),
       ((2, 2, 3), (2, 3, 4)), ("strided", (3, 2)), ((0, 3), (3, 2))]
MATMUL = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((2, 2, 3), (3,)),
          ((3,), (2, 3, 4)), ((2, 2, 3), (2, 3, 4)), ((1, 2, 2), (3, 2, 1)),
          ((2, 1, 3, 4), (5, 4, 2)), ((4, 3), (2, 3, 2)), ("strided", (3, 2)), ((0, 2, 3), (3, 2))]


@pytest.mark.parametrize("f, pairs", [(dot, DOT), (matmul, MATMUL), (at, MATMUL)],
                         ids=["dot", "matmul", "at"])
def test_dot_matmul(f, pairs):
    for sa, sb in pairs:
        check_gradient(f, _operand(sa), _operand(sb))


# -- linear algebra -------------------------------------------------------------------------
def _well_conditioned(*shape):
    return R(*shape) + 3.0 * np.eye(shape[-1])


def _spd(*shape):
    a = R(*shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def det(a):
    return np.linalg.det(a)


def slogdet(a):
    _sign, logdet = np.linalg.slogdet(a)
    return logdet * 1.5


def slogdet_index(a):
    return np.linalg.slogdet(a)[1]


def inv(a):
    return np.linalg.inv(a)


def solve(a, b):
    return np.linalg.solve(a, b)


def cholesky(a):
    return np.linalg.cholesky(a)


def cholesky_upper(a):
    return np.linalg.cholesky(a, upper=True)


def cholesky_sym(x):
    return np.linalg.cholesky(x @ x.T + 4.0 * np.eye(3))


@pytest.mark.parametrize("f", [det, slogdet, slogdet_index, inv], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4), (2, 1, 3, 3), (0, 2, 2)],
                         ids=str)
def test_square(f, shape):
    check_gradient(f, _well_conditioned(*shape))


def test_det_singular():
    """At a singular matrix the cotangent of det is the transposed adjugate."""
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.5, 2.0]])
    got = adjoint.gradient(det, a, backend="interp")[0]
    adj_t = np.array([[np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) * (-1) ** (i + j)
                       for j in range(3)] for i in range(3)])
    assert np.allclose(got, adj_t, atol=1e-12)
    check_gradient(det, np.stack([a, np.eye(3)]))


def test_square_strided_and_negative_det():
    check_gradient(det, strided(3, 3) + 3.0 * np.eye(3))
    a = _well_conditioned(3, 3)
    a[[0, 1]] = a[[1, 0]]          # a negative determinant
    check_gradient(slogdet, a)
    check_gradient(det, a)


@pytest.mark.parametrize("sa, sb", [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)),
                                    ((2, 3, 3), (2, 3, 2)), ((2, 3, 3), (3, 2)),
                                    ((1, 3, 3), (4, 3, 1)), ((3, 3), (3, 0))], ids=str)
def test_solve(sa, sb):
    check_gradient(solve, _well_conditioned(*sa), R(*sb))


@pytest.mark.parametrize("f", [cholesky, cholesky_upper], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4)], ids=str)
def test_cholesky(f, shape):
    check_gradient(f, _spd(*shape))


def test_cholesky_reads_one_triangle():
    """numpy reads the lower triangle (upper=True: the upper): the other gets zero."""
    a = _spd(3, 3)
    _, back = adjoint.pullback(cholesky, a, backend="interp")
    assert np.array_equal(np.triu(back(R(3, 3))[0], 1), np.zeros((3, 3)))
    _, back = adjoint.pullback(cholesky_upper, a, backend="interp")
    assert np.array_equal(np.tril(back(R(3, 3))[0], -1), np.zeros((3, 3)))
    check_gradient(cholesky_sym, R(3, 3))


# -- against autograd -------------------------------------------------------------------------
def test_against_autograd():
    ag = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    a, b = _well_conditioned(3, 3), R(3, 3)
    x = R(3, 4, 4)
    cases = [
        (lambda p, q: np.sum(np.einsum("ij,jk->ik", p, q) ** 2),
         lambda p, q: anp.sum(anp.einsum("ij,jk->ik", p, q) ** 2)),
        (lambda p, q: np.sum(np.tensordot(p, q, axes=((0,), (1,))) * np.kron(p, q)[:3, :3]),
         lambda p, q: anp.sum(anp.tensordot(p, q, axes=((0,), (1,))) * anp.kron(p, q)[:3, :3])),
        (lambda p, q: np.sum(np.cross(p, q, axisa=0, axisc=0) * np.inner(p, q)),
         lambda p, q: anp.sum(anp.cross(p, q, axisa=0, axisc=0) * anp.inner(p, q))),
        (lambda p, q: np.linalg.det(p) + np.linalg.slogdet(p)[1] + np.sum(np.linalg.inv(p) * q),
         lambda p, q: anp.linalg.det(p) + anp.linalg.slogdet(p)[1]
         + anp.sum(anp.linalg.inv(p) * q)),
        (lambda p, q: np.sum(np.linalg.solve(p, q) ** 2),
         lambda p, q: anp.sum(anp.linalg.solve(p, q) ** 2)),
        (lambda p, q: np.sum(np.linalg.cholesky(p @ p.T + q @ q.T)),
         lambda p, q: anp.sum(anp.linalg.cholesky(anp.dot(p, p.T) + anp.dot(q, q.T)))),
    ]
    for ours, theirs in cases:
        got = adjoint.gradient(ours, a, b, backend="interp")
        for k in (0, 1):
            assert np.allclose(got[k], ag.grad(theirs, k)(a, b), rtol=1e-9, atol=1e-11)
    y, z = R(4, 4, 3), R(4, 4, 3)       # autograd: no cotangent for 'lli' (a diagonal)
    ours = adjoint.gradient(lambda t, u, v: np.sum(np.einsum("ijk,lji,lli->lki", t, u, v) ** 2),
                            x, y, z, backend="interp")
    for k in (0, 1):
        theirs = ag.grad(lambda t, u, v: anp.sum(anp.einsum("ijk,lji,lli->lki", t, u, v) ** 2),
                         k)(x, y, z)
        assert np.allclose(ours[k], theirs)


# -- list operands: the cotangent of a list display reaches each number ------------------
def from_lists(a, b, v):
    return (np.einsum("i,i->", [a, b], v) + np.sum(np.kron([a, b], v))
            + np.linalg.det([[a, b], [b, 3.0]]) + np.cross([a, b, 1.0], [b, a, 2.0])[0]
            + np.inner([a, b], v) + np.sum(np.linalg.solve([[3.0, a], [b, 2.0]], v)))


def test_list_operands():
    check_gradient(from_lists, 0.3, 0.7, R(2))
