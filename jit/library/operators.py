"""Elementwise operators on arrays: the primitives' impls for array operands (`a + b`,
`-a`, `a[...] = v`, `x is x`), each an overload of the primitive in the registry.
Numbers keep the core rules (`jit.typing.primitives`, `jit.codegen.scalar`).  The loop
templates are in `jit.library.elementwise`."""
from __future__ import annotations

from llvmlite import ir as L
from ssair.ir import Const

from jit.library.elementwise import is_assign_all, t_array_arith, t_assign_all
from jit.library.elementwise_nd import NDIM
from jit.library.python_impls import has_array
from jit.library.numpy_calls import host_operator
from jit.library.registry import REGISTRY
from jit.types import BOOL, FLOAT64, INT64

FAMILY = "elementwise operators on arrays"


def _same_value(ctx, s, ts) -> bool:
    """Pattern: `x is x` of one SSA value, whatever its type (`a += b` on an array
    tests that its result is still `a`)."""
    return s.args[0] == s.args[1] and not isinstance(s.args[0], Const)


def _t_same(ctx, s, ts):
    return BOOL


def _cg_same(fc, s, ts):
    return L.Constant(L.IntType(1), int(s.op == "is"))


for _op in ("add", "sub", "mul", "truediv", "pow", "neg"):
    REGISTRY.overload(_op, "float64 arrays of up to 3 dimensions, or array and number",
                      has_array, t_array_arith, family=FAMILY, ndim_max=NDIM)
    host_operator(_op, FAMILY)
REGISTRY.overload("setitem", "a[...] = v of a float64 array", is_assign_all, t_assign_all,
                  family=FAMILY)
for _op in ("is", "isnot"):
    REGISTRY.overload(_op, "one SSA value on both sides", _same_value, _t_same, _cg_same,
                      family=FAMILY)


def _np_power_pick(argtypes):
    """np.power's rule reads its operands as arrays; numbers take `x ** y`'s rule,
    an array and a number the loop of `_d_pow_pick`."""
    from adjoint import rules_math as M

    from jit.library.elementwise import _d_pow_pick
    if len(argtypes) == 3 and all(t in (FLOAT64, INT64, BOOL) for t in argtypes[1:]):
        return M.d_pow.fn
    return _d_pow_pick(argtypes)


def _declare_pullbacks() -> None:
    from adjoint import rules_math as M
    from adjoint import rules_numpy as R

    from jit.library.elementwise import _d_hypot_pick, _d_pow_pick
    REGISTRY.declare_pullback(M.d_pow, "float64 array (1-D to 3-D) ** number", _d_pow_pick, NDIM)
    REGISTRY.declare_pullback(R.d_np_power, "numbers, or float64 array and number",
                              _np_power_pick, NDIM)
    REGISTRY.declare_pullback(M.d_hypot, "two coordinates", _d_hypot_pick)


_declare_pullbacks()
