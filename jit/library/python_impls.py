"""Library functions implemented in plain Python and compiled by the JIT like user
code (the design guide's recipe: an array operation the JIT has no native lowering
for is a small function of loops and element indexing, which LLVM inlines and
vectorises).

`impl_call` types a statement as a call of such an implementation; `make` builds one
from a source template; `mark` tells inference that a function is one of these (the
interpreter would otherwise take a function of the jit package for a library call).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from jit.typing.infer import Call, Context, lower_function
from jit.types import FLOAT64, ArrayT, Type

MARK = "jit_array_impls"      # the __module__ of every plain-Python implementation
NAMESPACE: dict = {"np": np}  # globals of the implementations built from templates


def mark(*fns: Any) -> None:
    """Mark plain-Python implementations (compiled as user code, never a library call)."""
    for f in fns:
        f.__module__ = MARK


def make(src: str, name: str) -> Any:
    """Compile template source `src` defining `name` in NAMESPACE; return it, marked."""
    exec(compile(src, f"<jit.library {name}>", "exec"), NAMESPACE)
    fn = NAMESPACE[name]
    mark(fn)
    return fn


def impl_call(ctx: Context, s, impl: Any, operands: list) -> Type:
    """Type statement `s` as a call of the Python implementation `impl`."""
    argtypes = tuple(ctx.type_of(a) for a in operands)
    target = ctx.engine.infer(lower_function(impl), argtypes)
    ctx.typing.calls[s.var] = Call(target, list(operands), impl)
    ctx.typing.writes |= target.writes
    return target.ret


def is_float_array(t: Type) -> bool:
    return isinstance(t, ArrayT) and t.dtype == FLOAT64


def has_array(ctx, s, ts: list) -> bool:
    """Pattern: some argument is an array."""
    return any(isinstance(t, ArrayT) for t in ts)


def no_array(ctx, s, ts: list) -> bool:
    """Pattern: no argument is an array (numbers, tuples, ...)."""
    return not any(isinstance(t, ArrayT) for t in ts)
