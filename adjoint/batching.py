"""`batch=`: a gradient per row of an argument (`adjoint.gradient(f, X, batch=0)`).

The rows of the mapped arguments go to a batch backend that `jit` registers in
`adjoint.api.BATCH_RUNNERS` (`jit.batch`: one compiled row loop, split over a thread
pool without the GIL); without one, or where it declines, `per_row` computes them
one `gradient` call at a time with the same backend.  The results are stacked along
a new first axis, one array per argument (None for ints), as JAX's
`vmap(grad(f))` stacks them.
"""
from __future__ import annotations

import dataclasses
import types
from typing import Any, Callable

import numpy as np


def normalize_axes(batch: Any, nargs: int) -> tuple:
    """Per argument, the axis its rows run along, or None (the same value for every
    row): `batch=k` maps the first argument along axis k; a tuple gives one entry per
    argument, as JAX's `in_axes`."""
    if isinstance(batch, bool) or not isinstance(batch, (int, tuple, list)):
        raise TypeError(f"batch= takes an axis (an int) or a tuple of axes and Nones, "
                        f"not {batch!r}")
    axes = (batch,) + (None,) * (nargs - 1) if isinstance(batch, int) else tuple(batch)
    if len(axes) != nargs:
        raise ValueError(f"batch= gives {len(axes)} axes for {nargs} arguments")
    if all(a is None for a in axes):
        raise ValueError("batch= maps no argument")
    for a in axes:
        if a is not None and (isinstance(a, bool) or not isinstance(a, int)):
            raise TypeError(f"batch=: an axis is an int or None, not {a!r}")
    return axes


def rows_of(args: tuple, axes: tuple) -> tuple:
    """(the arguments with every mapped axis moved to the front, the row count)."""
    moved, count = [], None
    for k, (a, ax) in enumerate(zip(args, axes)):
        if ax is None:
            moved.append(a)
            continue
        arr = np.asarray(a)
        if not -arr.ndim <= ax < arr.ndim:
            raise ValueError(f"batch=: argument {k} has {arr.ndim} axes, no axis {ax}")
        arr = np.moveaxis(arr, ax, 0)
        if count is not None and arr.shape[0] != count:
            raise ValueError(f"batch=: argument {k} has {arr.shape[0]} rows, another "
                             f"has {count}")
        count = arr.shape[0]
        moved.append(arr)
    return tuple(moved), count


def row(args: tuple, axes: tuple, i: int) -> tuple:
    """The arguments of row `i` (mapped axes first, as `rows_of` leaves them)."""
    out = []
    for a, ax in zip(args, axes):
        if ax is None:
            out.append(a)
        else:
            r = a[i]
            out.append(float(r) if isinstance(r, np.floating) else
                       int(r) if isinstance(r, np.integer) else r)
    return tuple(out)


def stack(results: list, like: tuple) -> Any:
    """Per-row results stacked along a new first axis (None stays None); a named
    tuple, dict, dataclass or namespace of gradients stacks leaf by leaf, as JAX's
    `vmap` does, into one of the same type."""
    if isinstance(like, tuple):
        parts = [stack([r[k] for r in results], like[k]) for k in range(len(like))]
        return type(like)(*parts) if hasattr(like, "_fields") else tuple(parts)
    if like is None:
        return None
    if isinstance(like, dict):
        return {k: stack([r[k] for r in results], v) for k, v in like.items()}
    if isinstance(like, types.SimpleNamespace) or dataclasses.is_dataclass(like):
        return _stacked_record(results, like)
    parts = [np.asarray(r) for r in results]   # (complex gradients stay complex, and
    dtype = np.result_type(*parts)             # float32 ones float32)
    return np.array(parts, dtype=dtype if dtype.kind in "fc" else np.result_type(float, dtype))


def _stacked_record(results: list, like: Any) -> Any:
    """A gradient object (a dataclass, built without its `__init__` as `finish`
    builds one, or a namespace) whose attributes are the rows' attributes stacked."""
    new = object.__new__(type(like))
    for name, v in vars(like).items():
        object.__setattr__(new, name, stack([getattr(r, name) for r in results], v))
    return new


def per_row(gradient: Callable, f: Callable, args: tuple, axes: tuple, backend: str) -> tuple:
    """The stacked results of one `gradient(f, *row, backend=backend)` call a row
    (`gradient` or `value_and_grad`; the interpreter's batch, and the path of a row
    that fails in native code: it raises as CPython would)."""
    moved, n = rows_of(args, axes)
    if n == 0:
        raise ValueError("batch=: no rows")
    results = [gradient(f, *row(moved, axes, i), backend=backend) for i in range(n)]
    return stack(results, results[0])
