"""The fast pullback for array arguments and for several gradients (see jit.runtime.fast_pullback).

For `f(x, coeffs)` with `coeffs` a float64 array the generated pair reads

    def forward(a0, a1):
        if type(a1) is ndarray: a1 = a1.copy()   # only if the adjoint reads a1's
        y = nfwd(a0, a1)                          # elements (see unread_arrays)
        if y is DEOPT: return None      # another signature: the general path
        return y, Back(err[6], (a0, a1))

    Back.__call__(dy):                  # dy a float
        a = self.args
        fl = empty(1); g1 = empty(a[1].shape)
        if nadj(self.blk, dy, fl, g1): return general(self, dy)
        v = fl.tolist()
        return (v[0], g1)

`nfwd` and `nadj` are `jit.runtime.fastcall` builtins around the forward entry and the
adjoint's `zy_adjf` entry (`jit.runtime.gradient_entry`), which writes float gradients into
`fl` and copies gradient arrays into the fresh numpy arrays, so every call gets
arrays of its own.  Signatures these builtins cannot take (bool arguments, results
that are not a float or an int, in-out arguments) answer None: the general path.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from jit.runtime import native as runtime
from jit.runtime.fast_pullback import back_class, native_forward
from jit.types import BOOL, FLOAT64, INT64, NONE, ArrayT


def make_forward(jf: Any, code: Any, adj: Any, args: tuple,
                 general: Callable) -> Optional[Callable]:
    """The generated `forward` for these arguments, or None (use the general path)."""
    native = code.native   # jit.runtime.pullback_builtins: built with the default (float dy) adjoint
    if jf.inout or adj is not code.default_adjoint:
        return None
    nfwd, nadj, plan = native.forward, native.fast_adjoint, native.plan
    if nfwd is None or nadj is None:
        return None
    argtypes = code.argtypes
    env = {"err": runtime.ERRINFO, "code": code, "free": code.free, "general": general,
           "jf": jf, "nadj": nadj, "empty": np.empty, "zeros": np.zeros, "ndarray": np.ndarray}
    back_cls = back_class(env, *_back_body(plan, argtypes))
    names = [f"a{i}" for i in range(len(args))]
    private = unread_arrays(jf, code)
    copies = tuple(f"    if type({n}) is ndarray: {n} = {n}.copy()"
                   for k, (n, t) in enumerate(zip(names, argtypes))
                   if isinstance(t, ArrayT) and k not in private)
    return native_forward(env, back_cls, nfwd, jf, names, copies)


# uses of an env array by the adjoint that read only its shape
_SHAPE_ONLY = {("accum_index", 2)}


def unread_arrays(jf: Any, code: Any) -> set:
    """Positions of the array arguments the pullback need not copy: the forward writes
    into no array, and the adjoint reads no element of them (the tape holds the
    values it needs; the env keeps the argument only as the shape of its cotangent),
    so a caller writing into them after `pullback` cannot change `back`'s result."""
    fwd, adj = jf.forward, jf.adjoint
    env = fwd.meta.get("env")
    if code.typing.writes or env is None or len(adj.args) < 2:
        return set()
    pos = {a.var: k for k, a in enumerate(fwd.args[1:])}
    slots, env_var = {}, adj.args[1].var
    for b in adj.blocks:
        for st in b.stmts:
            if env_var in st.operands():
                if st.op != "getitem" or st.args[0] != env_var or len(st.args) != 2:
                    return set()
                slots[st.var] = getattr(st.args[1], "value", None)
    for b in adj.blocks:
        if any(env_var in p.incoming.values() for p in b.phis):
            return set()
    kinds = code.env_t.elems
    arrays = {j for j, t in enumerate(kinds) if not _scalar(t)}
    if any(not isinstance(kinds[j], ArrayT) or env[j] not in pos for j in arrays):
        return set()   # an array that is not an argument (a view, a callee's env...)
    read = {slots[v] for v in _data_uses(adj, set(slots))}
    return {pos[env[j]] for j in arrays if j not in read}


def _scalar(t: Any) -> bool:
    return t in (FLOAT64, INT64, BOOL, NONE)


def _data_uses(adj: Any, watched: set) -> set:
    """The watched vars used anywhere but in a shape-only operand position."""
    out = set()
    for b in adj.blocks:
        out.update(v for p in b.phis for v in p.incoming.values() if v in watched)
        for st in b.stmts:
            for k, a in enumerate(st.args):
                if a in watched and (st.op, k) not in _SHAPE_ONLY:
                    out.add(a)
            out.update(a for a in st.kwargs.values() if a in watched)
        term = b.term
        out.update(a for a in vars(term).values() if a in watched)
    return out


def _back_body(plan: list, argtypes: tuple) -> tuple:
    """(the lines of `Back.__call__` for a float dy, the gradient tuple's source)."""
    nfloat = plan.count("float")
    lines, outs = ["        a = self.args"], []
    if nfloat:
        lines.append(f"        fl = empty({nfloat})")
        outs.append("fl")
    parts, k = [], 0
    for i, (kind, t) in enumerate(zip(plan, argtypes)):
        if kind == "array":
            lines.append(f"        g{i} = empty(a[{i}].shape)")
            outs.append(f"g{i}")
        parts.append(_part(i, kind, t, k))
        k += kind == "float"
    lines.append(f"        if nadj(self.blk, dy, {', '.join(outs)}): return general(self, dy)")
    if nfloat:
        lines.append("        v = fl.tolist()")
    return lines, "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _part(i: int, kind: str, t: Any, k: int) -> str:
    """The gradient of argument `i` (type `t`) as Python source."""
    if isinstance(t, ArrayT):
        if t.dtype != FLOAT64:
            return "None"
        return f"g{i}" if kind == "array" else f"zeros(a[{i}].shape)"
    if t != FLOAT64:
        return "None"
    return f"v[{k}]" if kind == "float" else "0.0"


__all__ = ["make_forward"]
