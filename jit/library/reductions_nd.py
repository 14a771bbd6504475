"""`np.sum(a, axis=k)` / `a.sum(axis=k)` of a float64 array of 3 or more dimensions over
one constant axis, compiled natively, and its pullback (the cotangent spread back along
that axis).  One plain-Python implementation is generated per rank and axis: a loop nest
over the operand adding each element into its cell of the result (sums in index order,
so the last bits may differ from numpy's pairwise summation).  Other forms (keepdims, a
tuple of axes, the whole array) stay host calls.  1-D and 2-D: `jit.library.reductions`.
"""
from __future__ import annotations

import numpy as np

from jit.library.python_impls import impl_call, is_float_array, make
from jit.library.registry import REGISTRY
from jit.types import MAX_NDIM, ArrayT, Type, is_int_like
from jit.typing.infer import Context

_MADE: dict = {}


def _loops(r: int, body: str) -> list:
    """A nest of r loops `for i<d> in range(n<d>)` around `body`."""
    lines = ["    " * (d + 1) + f"for i{d} in range(n{d}):" for d in range(r)]
    return lines + ["    " * (r + 1) + body]


def _sum_source(r: int, axis: int) -> str:
    """`_sum_<r>_<axis>(a)`: r-D `a` summed over `axis`."""
    n = [f"n{d}" for d in range(r)]
    kept = [d for d in range(r) if d != axis]
    out_ix = ", ".join(f"i{d}" for d in kept)
    lines = [f"def _sum_{r}_{axis}(a):", f"    {', '.join(n)}, = a.shape",
             f"    out = np.zeros(({', '.join(n[d] for d in kept)},))"]
    lines += _loops(r, f"out[{out_ix}] += a[{', '.join(f'i{d}' for d in range(r))}]")
    return "\n".join(lines + ["    return out"]) + "\n"


def _d_sum_source(r: int) -> str:
    """`_d_sum_<r>(dy, x, axis, keepdims)`: dy spread back along x's summed axis."""
    n = [f"n{d}" for d in range(r)]
    lines = [f"def _d_sum_{r}(dy, x, axis=None, keepdims=False):",
             f"    {', '.join(n)}, = x.shape", f"    g = np.empty(({', '.join(n)},))",
             f"    k = axis if axis >= 0 else axis + {r}"]
    ix = ", ".join(f"i{d}" for d in range(r))
    for axis in range(r):
        kept = ", ".join(f"i{d}" for d in range(r) if d != axis)
        lines.append(f"    {'if' if axis == 0 else 'elif'} k == {axis}:")
        lines += ["    " + line for line in _loops(r, f"g[{ix}] = dy[{kept}]")]
    return "\n".join(lines + ["    return g"]) + "\n"


def _made(name: str, source) -> object:
    fn = _MADE.get(name)
    if fn is None:
        fn = _MADE[name] = make(source(), name)
    return fn


def _one_axis(ctx: Context, s, ts: list):
    """The normalised constant axis of `np.sum(a, k)` / `np.sum(a, axis=k)` of a float64
    array of 3+ dims (no other keyword), or None."""
    if not ts or not is_float_array(ts[0]) or ts[0].ndim < 3:
        return None
    kw = dict(s.kwargs)
    if set(kw) - {"axis"} or len(s.args) + len(kw) != 3:
        return None
    op = kw.get("axis", s.args[2] if len(s.args) == 3 else None)
    if op is None or not ctx.is_const(op):
        return None
    axis = ctx.const(op)
    if type(axis) is not int or not -ts[0].ndim <= axis < ts[0].ndim:
        return None
    return axis % ts[0].ndim


def _is_sum_over_axis(ctx, s, ts) -> bool:
    return _one_axis(ctx, s, ts) is not None and all(map(is_int_like, ts[1:]))


def _t_sum_over_axis(ctx: Context, s, ts: list) -> Type:
    r, axis = ts[0].ndim, _one_axis(ctx, s, ts)
    return impl_call(ctx, s, _made(f"_sum_{r}_{axis}", lambda: _sum_source(r, axis)),
                     [s.args[1]])


def _pick_d_sum(argtypes: list):
    """d_np_sum's JIT version for (dy, x[, axis][, keepdims]) (the axis positional or a
    keyword): x of 3+ dims, dy one less."""
    if len(argtypes) not in (2, 3, 4) or not is_float_array(argtypes[1]) \
            or not isinstance(argtypes[0], ArrayT) or argtypes[1].ndim < 3 \
            or argtypes[0].ndim != argtypes[1].ndim - 1 \
            or len(argtypes) > 2 and not is_int_like(argtypes[2]):
        return None
    r = argtypes[1].ndim
    return _made(f"_d_sum_{r}", lambda: _d_sum_source(r))


def _declare() -> None:
    from adjoint import rules_numpy as R
    from jit.library import reductions  # noqa: F401  (np.sum's entry comes first)
    wide = {"ndim_max": MAX_NDIM}
    REGISTRY.add(REGISTRY.get(np.sum), "float64 array of 3 or more dims, one constant axis",
                 _is_sum_over_axis, _t_sum_over_axis, **wide)
    REGISTRY.declare_pullback(R.d_np_sum, "float64 array of 3 or more dims, one axis",
                              _pick_d_sum, **wide)


_declare()
