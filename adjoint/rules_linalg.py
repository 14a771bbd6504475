"""Derivative rules for numpy's contractions and linear algebra: `np.einsum` (string
and interleaved forms), `np.tensordot`, `np.inner`, `np.kron`, `np.cross`, and
`np.linalg.det`, `slogdet`, `inv`, `solve`, `cholesky`, `eigh`, `eigvalsh` (stacked
matrices included).
(`np.dot`, `np.matmul` and `np.outer` are in `rules_numpy`.)

Every contraction is reduced to one description, an einsum: one list of labels per
operand and one for the output.  The cotangent of operand k is then the einsum of
`dy` with the other operands whose output is k's labels; `_einsum_cotangent` fixes up
what einsum itself cannot express: a label only k carries (the cotangent is constant
along it), a dimension k has as 1 where the others broadcast it (summed), and a label
k repeats ('ii', a diagonal: scattered back onto it).

Pullbacks follow `rules_numpy`: `dy` is never None, the arguments come as the user
passed them, one cotangent per positional argument (a float for a Python number).
"""
from __future__ import annotations

import string

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .contraction import einsum2
from .rule_table import pullback_rule
from .rules_ufuncs import cotangent_like
from .tape import unbcast


def _mT(x):
    return np.swapaxes(x, -1, -2)


# -- einsum descriptions: (labels of each operand, labels of the output) ---------------
def _sublist_text(sub) -> str:
    """An interleaved-form subscript list ([0, 1], [Ellipsis, 2]) as einsum text,
    with numpy's letters (0-25 are A-Z, 26-51 a-z)."""
    return "".join("..." if s is Ellipsis else string.ascii_letters[(int(s) + 26) % 52]
                   for s in sub)


def _split_interleaved(args):
    """einsum(op0, sub0, op1, sub1, ..., [out]) as (subscript text, operands)."""
    ops, subs = list(args[0::2]), [_sublist_text(s) for s in args[1::2]]
    out = None
    if len(args) % 2 == 1:
        out = _sublist_text(ops.pop())
    text = ",".join(subs) + ("" if out is None else "->" + out)
    return text, ops


def _parse(text, ndims):
    """Labels per operand and of the output, each '...' spelled out as fresh letters
    (right-aligned: an operand with fewer broadcast dimensions takes the last ones)."""
    text = text.replace(" ", "")
    ins, arrow, out = text.partition("->")
    parts = ins.split(",")
    if len(parts) != len(ndims):
        raise ValueError(f"adjoint: einsum subscripts {text!r} name {len(parts)} operands, "
                         f"got {len(ndims)}")
    fresh = [c for c in string.ascii_letters if c not in text]
    spans = [nd - (len(p) - 3) if "..." in p else 0 for p, nd in zip(parts, ndims)]
    ell = fresh[:max(spans, default=0)]
    subs = [_spell(p, ell[len(ell) - n:]) for p, n in zip(parts, spans)]
    if arrow:
        return subs, _spell(out, ell)
    counts = {}
    for c in ins:
        if c.isalpha():
            counts[c] = counts.get(c, 0) + 1
    return subs, ell + sorted(c for c, n in counts.items() if n == 1)


def _spell(part, ell):
    before, dots, after = part.partition("...")
    return list(before) + (list(ell) if dots else []) + list(after)


def _einsum_cotangent(k, dy, ops, subs, out):
    """Cotangent of operand k of einsum(subs -> out) of `ops` given the output's `dy`."""
    target, shape = subs[k], np.shape(ops[k])
    labels = list(dict.fromkeys(target))
    others = [j for j in range(len(ops)) if j != k]
    seen = set(out).union(*(subs[j] for j in others))
    kept = [c for c in labels if c in seen]
    spec = ",".join(["".join(out)] + ["".join(subs[j]) for j in others]) + "->" + "".join(kept)
    if len(others) == 1:        # one batched matmul (numpy's einsum loop is slow)
        g = einsum2(list(out), list(subs[others[0]]), kept, dy, ops[others[0]])
    else:
        g = np.einsum(spec, dy, *[ops[j] for j in others])
    g = g.reshape([g.shape[kept.index(c)] if c in kept else 1 for c in labels])
    size = [shape[target.index(c)] for c in labels]
    summed = tuple(a for a, (n, m) in enumerate(zip(g.shape, size)) if m == 1 and n != 1)
    if summed:
        g = g.sum(axis=summed, keepdims=True)
    g = np.broadcast_to(g, size)
    if len(labels) < len(target):
        return _onto_diagonal(g, target, labels, shape)
    return np.array(g, dtype=np.result_type(g.dtype, float))


def _onto_diagonal(g, target, labels, shape):
    """Zeros of `shape` with `g` written where the repeated labels of `target` agree."""
    z = np.zeros(shape, dtype=np.result_type(g.dtype, float))
    strides = [sum(z.strides[i] for i, c in enumerate(target) if c == u) for u in labels]
    as_strided(z, shape=g.shape, strides=strides)[...] = g
    return z


def _contract_cotangents(dy, ops, subs, out, wanted):
    """Cotangents of the operands at positions `wanted` of a contraction."""
    arrays = [np.asarray(o) for o in ops]
    dy = np.asarray(dy)
    return [cotangent_like(_einsum_cotangent(k, dy, arrays, subs, out), ops[k]) if k in wanted
            else None for k in range(len(ops))]


def _differentiable(x) -> bool:
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "fc"
    if isinstance(x, (list, tuple)):
        return True
    return isinstance(x, (float, complex, np.floating))


@pullback_rule(np.einsum)
def d_einsum(dy, *args, out=None, dtype=None, order="K", casting="safe", optimize=False):
    if out is not None:
        raise TypeError("adjoint: np.einsum with out= is not differentiable")
    if isinstance(args[0], str):
        text, ops = args[0], list(args[1:])
    else:
        text, ops = _split_interleaved(args)
    subs, res = _parse(text, [np.ndim(o) for o in ops])
    wanted = {k for k, o in enumerate(ops) if _differentiable(o)}
    grads = _contract_cotangents(dy, ops, subs, res, wanted)
    if isinstance(args[0], str):
        return (None, *grads)
    cot = [None] * len(args)
    for k, g in enumerate(grads):
        cot[2 * k] = g
    return tuple(cot)


# -- tensordot, inner, kron ------------------------------------------------------------
def _tensordot_axes(axes, na, nb):
    try:
        ia, ib = axes
    except TypeError:
        n = int(axes)
        return list(range(na - n, na)), list(range(n))
    ia = list(ia) if np.ndim(ia) else [ia]
    ib = list(ib) if np.ndim(ib) else [ib]
    return [int(a) % na for a in ia], [int(b) % nb for b in ib]


@pullback_rule(np.tensordot)
def d_tensordot(dy, a, b, axes=2):
    na, nb = np.ndim(a), np.ndim(b)
    ia, ib = _tensordot_axes(axes, na, nb)
    letters = iter(string.ascii_letters)
    sa = [next(letters) for _ in range(na)]
    sb = [next(letters) for _ in range(nb)]
    for p, q in zip(ia, ib):
        sb[q] = sa[p]
    res = [sa[i] for i in range(na) if i not in ia] + [sb[j] for j in range(nb) if j not in ib]
    ga, gb = _contract_cotangents(dy, [a, b], [sa, sb], res, {0, 1})
    return ga, gb, None


@pullback_rule(np.inner)
def d_inner(dy, a, b):
    """inner sums the last axes (a product when one side is a number)."""
    na, nb = np.ndim(a), np.ndim(b)
    sa = list(string.ascii_letters[:na])
    sb = list(string.ascii_letters[na:na + nb])
    if na and nb:
        sb[-1] = sa[-1]
        res = sa[:-1] + sb[:-1]
    else:
        res = sa + sb
    return tuple(_contract_cotangents(dy, [a, b], [sa, sb], res, {0, 1}))


@pullback_rule(np.kron)
def d_kron(dy, a, b):
    """kron's result, viewed as (a0, b0, a1, b1, ...) with the shorter shape padded
    with leading ones, is the outer product a[a0, a1, ..] * b[b0, b1, ..]."""
    av, bv = np.asarray(a), np.asarray(b)
    nd = max(av.ndim, bv.ndim)
    pa = (1,) * (nd - av.ndim) + av.shape
    pb = (1,) * (nd - bv.ndim) + bv.shape
    split = np.reshape(dy, [n for pair in zip(pa, pb) for n in pair])
    la, lb = string.ascii_letters[:nd], string.ascii_letters[nd:2 * nd]
    both = "".join(p + q for p, q in zip(la, lb))
    ga = np.einsum(f"{both},{lb}->{la}", split, bv.reshape(pb)).reshape(av.shape)
    gb = np.einsum(f"{both},{la}->{lb}", split, av.reshape(pa)).reshape(bv.shape)
    return cotangent_like(ga, a), cotangent_like(gb, b)


# -- cross -----------------------------------------------------------------------------
def _three(v):
    """Vectors along the last axis, padded with a zero z when they have two."""
    if v.shape[-1] == 3:
        return v
    return np.concatenate([v, np.zeros(v.shape[:-1] + (1,))], axis=-1)


@pullback_rule(np.cross)
def d_cross(dy, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """a . (b x g) = g . (a x b): each operand's cotangent is a cross product with g,
    computed in 3-D (2-vectors padded with z = 0) and cut back to its length."""
    if axis is not None:
        axisa = axisb = axisc = axis
    av = np.moveaxis(np.asarray(a, dtype=float), axisa, -1)
    bv = np.moveaxis(np.asarray(b, dtype=float), axisb, -1)
    g = np.asarray(dy, dtype=float)
    if av.shape[-1] == 2 and bv.shape[-1] == 2:      # the result is the z component
        g3 = np.stack([np.zeros_like(g), np.zeros_like(g), g], axis=-1)
    else:
        g3 = np.moveaxis(g, axisc, -1)
    a3, b3 = _three(av), _three(bv)
    ga = unbcast(np.cross(b3, g3)[..., :av.shape[-1]], av)
    gb = unbcast(np.cross(g3, a3)[..., :bv.shape[-1]], bv)
    return (cotangent_like(np.moveaxis(ga, -1, axisa), a),
            cotangent_like(np.moveaxis(gb, -1, axisb), b))


# -- linear algebra ----------------------------------------------------------------------
def _under(v):
    """A number or a stack of numbers as (..., 1, 1), to scale matrices."""
    return np.asarray(v, dtype=float)[..., None, None]


@pullback_rule(np.linalg.det, uses_result=True)
def d_det(dy, y, a):
    """d det(A) = tr(adj(A) dA): the cotangent adj(A)^T, which is det(A) A^-T when A
    is invertible, and from the SVD when it is singular."""
    try:
        cof = _under(y) * _mT(np.linalg.inv(a))
    except np.linalg.LinAlgError:
        cof = _cofactors(np.asarray(a, dtype=float))
    return cotangent_like(_under(dy) * cof, a)


def _cofactors(a):
    """adj(A)^T = det(U) det(V) U adj(S) V^T for A = U S V^T, where adj(S) holds for
    each singular value the product of the others (defined at rank n - 1 too)."""
    u, s, vt = np.linalg.svd(a)
    ones = np.ones(s.shape[:-1] + (1,))
    left = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    sign = np.linalg.det(u) * np.linalg.det(vt)
    return _under(sign) * ((u * (left * right)[..., None, :]) @ vt)


@pullback_rule(np.linalg.slogdet)
def d_slogdet(dy, a):
    """Only log|det A| has a derivative (A^-T); the sign carries none."""
    dlog = dy[1] if isinstance(dy, tuple) else dy.logabsdet
    if dlog is None:
        return cotangent_like(np.zeros(np.shape(a)), a)
    return cotangent_like(_under(dlog) * _mT(np.linalg.inv(a)), a)


def eigen_gaps(w):
    """F[..., i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it (eigenvalues w along
    the last axis): how an eigenvector turns towards the others."""
    n = np.shape(w)[-1]
    off = ~np.eye(n, dtype=bool)
    gap = w[..., None, :] - w[..., :, None]
    return np.where(off, 1.0 / np.where(off, gap, 1.0), 0.0)


def folded_symmetric(m, uplo):
    """The cotangent of the matrix a function reads one triangle of (numpy's eigh,
    eigvalsh and cholesky read the lower one, or the upper with `UPLO="U"`), from the
    cotangent `m` of the symmetric matrix it makes of that triangle: m + m^T on the
    triangle, m's own diagonal, zeros elsewhere."""
    sym = m + _mT(m)
    fold = np.triu if uplo == "U" else np.tril
    return fold(sym) - 0.5 * sym * np.eye(np.shape(m)[-1])


@pullback_rule(np.linalg.eigh, uses_result=True)
def d_eigh(dy, y, a, UPLO="L"):
    """A = V diag(w) V^T: the cotangent of the symmetric A is V (diag(dw) + F o (V^T
    dV)) V^T (F: `eigen_gaps`), folded onto the triangle numpy reads."""
    w, v = y[0], y[1]
    dw, dv = (dy[0], dy[1]) if isinstance(dy, tuple) else (dy.eigenvalues, dy.eigenvectors)
    inner = np.zeros(np.shape(v))
    if dw is not None:
        inner = inner + np.asarray(dw)[..., :, None] * np.eye(np.shape(v)[-1])
    if dv is not None:
        inner = inner + eigen_gaps(w) * (_mT(v) @ dv)
    return cotangent_like(folded_symmetric(v @ inner @ _mT(v), UPLO), a)


@pullback_rule(np.linalg.eigvalsh)
def d_eigvalsh(dy, a, UPLO="L"):
    """The eigenvalues' part of `d_eigh` (the eigenvectors computed again)."""
    _, v = np.linalg.eigh(a, UPLO=UPLO)
    inner = np.asarray(dy)[..., :, None] * np.eye(np.shape(v)[-1])
    return cotangent_like(folded_symmetric(v @ inner @ _mT(v), UPLO), a)


@pullback_rule(np.linalg.inv, uses_result=True)
def d_inv(dy, y, a):
    """d(A^-1) = -A^-1 dA A^-1, transposed: -A^-T dy A^-T."""
    yt = _mT(y)
    return cotangent_like(-(yt @ dy @ yt), a)


@pullback_rule(np.linalg.solve, uses_result=True)
def d_solve(dy, x, a, b):
    """x = A^-1 b: b's cotangent solves A^T gb = dy, and A's is -gb x^T.  A 1-D b is
    one vector (broadcast over A's stack); otherwise b is a stack of matrices."""
    at = _mT(np.asarray(a, dtype=float))
    if np.ndim(b) == 1:
        gb = np.linalg.solve(at, np.asarray(dy)[..., None])[..., 0]
        ga = -gb[..., :, None] * x[..., None, :]
    else:
        gb = np.linalg.solve(at, dy)
        ga = -(gb @ _mT(x))
    return cotangent_like(ga, a), cotangent_like(gb, b)


def _halve_diagonal_lower(m):
    """The lower triangle of each matrix with its diagonal halved."""
    low = np.tril(m)
    n = m.shape[-1]
    return low - 0.5 * m * np.eye(n)


@pullback_rule(np.linalg.cholesky, uses_result=True)
def d_cholesky(dy, l, a, upper=False):
    """A = L L^T, computed from one triangle of A (the lower, or the upper when
    upper=True): the cotangent lies on that triangle, the symmetric cotangent S + S^T
    folded onto it, where S = L^-T Phi(L^T dL) L^-1, Phi keeping the lower triangle
    with its diagonal halved (Murray, 2016)."""
    if upper:
        l, dy = _mT(l), _mT(dy)
    p = _halve_diagonal_lower(_mT(l) @ dy)
    s = np.linalg.solve(_mT(l), p)             # L^-T P
    s = _mT(np.linalg.solve(_mT(l), _mT(s)))   # (L^-T P) L^-1
    sym = s + _mT(s)
    fold = np.triu if upper else np.tril
    return cotangent_like(fold(sym) - 0.5 * sym * np.eye(sym.shape[-1]), a)
