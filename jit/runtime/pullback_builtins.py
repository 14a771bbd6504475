"""Python-callable builtins for a compiled pullback's entries, emitted into the
pullback's own LLVM module (one compile), for `jit.pullback.fast_path`'s shortcut.

`NativeEntries(module, code, entry, adjoint)` runs before the module is compiled and
emits `jit.runtime.fastcall` wrappers (METH_FASTCALL functions that unbox floats, ints and
arrays natively) around

  * `forward`: the forward entry `zy_fwd_N(args...) -> y` (y a float or an int);
    an argument it cannot take, or a forward that needs exact Python integers,
    answers `DEOPT` (the caller takes the general path); an error is raised;
  * `adjoint`: `zy_adj_N(block, dy) -> gradient` where the gradient is one float;
  * `fast_adjoint`: the `zy_adjf_N(block, dy, floats?, arrays...)` entry of
    `jit.runtime.gradient_entry` (several gradients, array gradients), per `plan`.

`finish()` (after the compile) makes the builtins; a signature a wrapper cannot take
leaves that attribute None.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from jit.runtime import native as runtime
from jit.runtime.native import BLOCK_SLOT, NativeDeopt, adjoint_failed
from jit.codegen.function import F64, PTR
from jit.runtime.fastcall import builtin, emit_wrapper
from jit.runtime.gradient_entry import fast_plan
from jit.types import FLOAT64, INT64, ArrayT

DEOPT = object()   # a native forward's "run the general path" answer


def forward_error(code: Any) -> Any:
    """The native forward's error path: raise the error, or answer DEOPT."""

    def fail(*args):
        try:
            code._failed(runtime.ERRINFO[BLOCK_SLOT])  # raises the error, or NativeDeopt
        except NativeDeopt:
            pass
        return DEOPT
    return fail


def fast_adjoint_arrays(plan: list, argtypes: tuple) -> Any:
    """The array arguments of `zy_adjf` for a gradient `plan` (None: not this shape)."""
    if any(k == "array" and not isinstance(t, ArrayT) for k, t in zip(plan, argtypes)):
        return None   # an array gradient for a scalar argument
    arrays = [ArrayT(FLOAT64, 1)] * ("float" in plan)
    return arrays + [ArrayT(FLOAT64, t.ndim) for k, t in zip(plan, argtypes) if k == "array"]


class NativeEntries:
    """The fastcall builtins of one compiled pullback (see the module docstring)."""

    def __init__(self, module: Any, code: Any, entry: Any, adjoint: Any) -> None:
        name = SimpleNamespace(name=code.jf.primal.name)
        y_t = code.typing.ret.elems[0]
        self.forward = self.adjoint = self.fast_adjoint = None
        self.plan = fast_plan(adjoint.typing.ret) if adjoint.dy_t == FLOAT64 else None
        specs = {"forward": (SimpleNamespace(argtypes=code.argtypes, ret=y_t, ir=name),
                             entry, lambda *a: DEOPT, forward_error(code))}
        fnty = adjoint.entry.function_type   # zy_adj_N(ptr block, double dy) -> double
        if fnty.args == (PTR, F64) and fnty.return_type == F64:
            specs["adjoint"] = (SimpleNamespace(argtypes=(INT64, FLOAT64), ret=FLOAT64, ir=name),
                                adjoint.entry, lambda blk, dy: adjoint.call(blk, dy),
                                lambda *a: adjoint_failed())
        arrays = fast_adjoint_arrays(self.plan, code.argtypes) if self.plan else None
        if arrays is not None and adjoint.fast_entry is not None:
            specs["fast_adjoint"] = (
                SimpleNamespace(argtypes=(INT64, FLOAT64, *arrays), ret=INT64, ir=name),
                adjoint.fast_entry, lambda *a: 1, lambda *a: adjoint_failed())
        for _, callee, _, _ in specs.values():
            callee.attributes.add("noinline")   # called, not copied, by its wrapper
        self.specs = {k: (emit_wrapper(module, *spec[:2]), spec) for k, spec in specs.items()}

    def finish(self) -> None:
        for key, (wname, (t, _, slow, fail)) in self.specs.items():
            if wname is not None:
                setattr(self, key, builtin(wname, t, slow, fail))
        self.specs = {}


__all__ = ["DEOPT", "NativeEntries", "fast_adjoint_arrays", "forward_error"]
