"""A two-operand einsum as one batched matrix product (BLAS through `np.matmul`).

numpy's `np.einsum` runs a two-operand contraction with batch axes
(`"mnd,mdo->mno"`, a layer applied to several weight samples) in its generic
sum-of-products loop: 45 us where `np.matmul` of the same arrays takes 5 us, and
`optimize=True` does not help while batch axes are present.  `einsum2` lays the
labels out as (batch, rows, contracted) @ (batch, contracted, columns): transposes
and reshapes (views where numpy can), one `np.matmul`, then the output's order.

Labels that only one operand has and the output lacks are summed first.  The layout
is planned once per labels and shapes.  A contraction of fewer than `_SMALL`
multiply-adds, and anything else (a label repeated within an operand, a label of
the output that no operand has, non-float operands) goes to `np.einsum` itself.  The result equals einsum's up
to the order of the additions (BLAS sums in its own order).  Used by the einsum
rule's cotangents (`adjoint.rules_linalg`) and by compiled code's call of
`np.einsum` (`jit.library.numpy_calls`).
"""
from __future__ import annotations

from typing import Any

import numpy as np


def einsum(subscripts: Any, *operands: Any, **options: Any) -> Any:
    """`np.einsum(subscripts, *operands, **options)`, two float operands with an
    explicit output through `einsum2`."""
    if options or not isinstance(subscripts, str) or len(operands) != 2 \
            or "->" not in subscripts or "." in subscripts:
        return np.einsum(subscripts, *operands, **options)
    ins, out = subscripts.replace(" ", "").split("->")
    parts = ins.split(",")
    if len(parts) != 2:
        return np.einsum(subscripts, *operands)
    return einsum2(list(parts[0]), list(parts[1]), list(out), *operands)


def einsum2(sa: list, sb: list, out: list, a: Any, b: Any) -> Any:
    """einsum(sa, sb -> out) of arrays a and b, by one batched matmul where it can."""
    a, b = np.asarray(a), np.asarray(b)
    key = (tuple(sa), tuple(sb), tuple(out), a.shape, b.shape, a.dtype.kind, b.dtype.kind)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _plan(sa, sb, out, a, b) if len(_PLANS) < _MOST else None
    if plan is None or plan is False:
        return np.einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)
    alone_a, perm_a, shape_a, alone_b, perm_b, shape_b, shape, perm = plan
    if alone_a:
        a = a.sum(axis=alone_a)
    if alone_b:
        b = b.sum(axis=alone_b)
    prod = np.matmul(a.transpose(perm_a).reshape(shape_a), b.transpose(perm_b).reshape(shape_b))
    return prod.reshape(shape).transpose(perm)


_PLANS: dict = {}     # (labels, shapes, dtype kinds) -> the layout of `_plan`, or False
_MOST = 4096
_SMALL = 4096         # multiply-adds below which np.einsum itself runs


def _plan(sa: list, sb: list, out: list, a: np.ndarray, b: np.ndarray) -> Any:
    """(labels summed first, transposition and (batch, rows, inner) shape of a, the
    same of b as (batch, inner, columns), the product's shape by label, the output's
    transposition), or False where `np.einsum` is to run (see the module docstring)."""
    if not _plain(sa, sb, out, a, b):
        return False
    alone_a = tuple(k for k, c in enumerate(sa) if c not in sb and c not in out)
    alone_b = tuple(k for k, c in enumerate(sb) if c not in sa and c not in out)
    ka = [(c, n) for k, (c, n) in enumerate(zip(sa, a.shape)) if k not in alone_a]
    kb = [(c, n) for k, (c, n) in enumerate(zip(sb, b.shape)) if k not in alone_b]
    size = dict(ka)
    for c, n in kb:
        if size.setdefault(c, n) != n:
            if size[c] == 1 or n == 1:      # broadcast: numpy's own rules
                return False
            raise ValueError(f"einsum: operands disagree on the length of label {c!r} "
                             f"({size[c]} and {n})")
    la, lb = [c for c, _ in ka], [c for c, _ in kb]
    batch = [c for c in out if c in la and c in lb]
    rows = [c for c in out if c in la and c not in lb]
    cols = [c for c in out if c in lb and c not in la]
    inner = [c for c in la if c in lb and c not in out]
    order = batch + rows + cols
    if _prod(batch + rows + inner + cols, size) < _SMALL:
        return False          # numpy's loop is quicker than the reshapes around BLAS
    return (alone_a, [la.index(c) for c in batch + rows + inner],
            (_prod(batch, size), _prod(rows, size), _prod(inner, size)),
            alone_b, [lb.index(c) for c in batch + inner + cols],
            (_prod(batch, size), _prod(inner, size), _prod(cols, size)),
            [size[c] for c in order], [order.index(c) for c in out])


def _plain(sa: list, sb: list, out: list, a: np.ndarray, b: np.ndarray) -> bool:
    """Labels as `einsum2` lays them out: each once per operand and in the output,
    every output label from an operand, ranks as written, float operands."""
    return (len(set(sa)) == len(sa) == a.ndim and len(set(sb)) == len(sb) == b.ndim
            and len(set(out)) == len(out) and set(out) <= set(sa) | set(sb)
            and all(c.isalpha() for c in sa + sb + out)
            and a.dtype.kind == "f" and b.dtype.kind == "f")


def _prod(labels: list, size: dict) -> int:
    n = 1
    for c in labels:
        n *= size[c]
    return n
