"""Turn in-place operators on scalars into plain operators.

`x += y` lowers to `iadd(x, y)` because on a numpy array or a list it updates `x` in
place.  On Python numbers `iadd` *is* `add`, and the plain form is what the other
passes, the adjoint rules and the code generator know best.

Requires: nothing.  Guarantees: every `iOP(x, y)` whose left operand is certainly an
int, float or bool (by `ssair.passes.scalars`, which also reads `.type` set by type
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
            if s.op in INPLACE and kinds.kind(s.args[0]) is not None:
                s.op = INPLACE[s.op]
    return out
