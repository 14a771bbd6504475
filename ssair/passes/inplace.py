"""Turn in-place operators on scalars into plain operators.

`x += y` lowers to `iadd(x, y)` because on a numpy array or a list it updates `x` in
place.  On Python numbers `iadd` *is* `add`, and the plain form is what the other
passes, the adjoint rules and the code generator know best.

Requires: nothing.  Guarantees: every `iOP(x, y)` whose left operand is certainly an
immutable number (`Scalars.is_scalar` of `ssair.passes.scalars`, which also reads `.type` set by type
inference or by a caller that knows the argument kinds) becomes `OP(x, y)`; every other
statement is unchanged.  Returns a new IR.
"""
from __future__ import annotations

from ..ir import IR
from ..primitives import INPLACE
from .scalars import Scalars


def inplace(ir: IR) -> IR:
    """See the module docstring."""
    out = ir.copy()
    kinds = Scalars(out)
    for block in out.blocks:
        for s in block.stmts:
            if s.op in INPLACE and kinds.is_scalar(s.args[0]):
                s.op = INPLACE[s.op]
    return out


def updates_float_array(x) -> bool:
    """True when `x OP= y` updates a float or complex numpy array `x` in place (the
    only in-place update a derivative can flow through; ints and bools have no
    in-place operators, and `iOP` on them is `OP`).  The adjoint branches on it."""
    import numpy as np
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"
