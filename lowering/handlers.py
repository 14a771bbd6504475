"""The opcode handler table of the lowering: opcode name -> handler `fn(lw, ins)`.

The `ops_*` modules, `loops` and `closures` fill it with `@handles`; the driver
(`lowering.frame.Lowerer`) looks opcodes up in it.
"""
from __future__ import annotations

from collections.abc import Callable

HANDLERS: dict = {}


def handles(*names: str) -> Callable:
    """Register the decorated function as the handler of the named opcodes."""
    def deco(fn):
        for n in names:
            HANDLERS[n] = fn
        return fn
    return deco
