"""The in-place updates of a user function that may be of arrays, made explicit for
type inference: `adjoint.passes.inplace.canonical_inplace`, as the J transform makes
them (`x -= y` on an array, `a[1:] *= b`, `np.add.at`), so that primal code compiles
them as well; the test of the kind of a value not known to be an array or a number is
decided by its type (`updates_float_array`).  Cached per lowered IR."""
from __future__ import annotations

import weakref

from ssair.ir import IR

_FORMS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # IR -> its form


def with_explicit_updates(ir: IR) -> IR:
    """`ir` with its array updates made explicit (cached per IR), where it has any
    that may be one: an in-place operator on a value a statement made (an element or
    slice, `a[1:] -= v`; a call's or an operation's result, `z = np.zeros(n); z += v`),
    or `np.add.at`.  One on an argument or a loop-carried value (`r *= x`) is left to
    the type rules: a number's is its operator, and the IR keeps its shape
    (`jit.code_typed` prints what was written)."""
    hit = _FORMS.get(ir)
    if hit is None:
        hit = _FORMS[ir] = _explicit(ir)
    return hit


def _explicit(ir: IR) -> IR:
    from adjoint.passes.inplace import adds_at, canonical_inplace
    from ssair.primitives import INPLACE
    defs = {s.var: s for b in ir.blocks for s in b.stmts}
    if not any(s.op in INPLACE and s.args[0] in defs or adds_at(s, defs)
               for b in ir.blocks for s in b.stmts):
        return ir
    out = canonical_inplace(ir)
    if out is not ir:
        out.meta = dict(ir.meta, **out.meta)
    return out
