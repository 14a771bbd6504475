"""The one exit every error of a compiled function leaves through (`FunctionGen`).

An edge into it is taken only on an error.  Its phis take, along each edge, the
status to return, the error site's word (0: recorded already, nothing to write), the
site's details and a caller's site word for the error record's CALLER_SLOT
(`FunctionGen._note_caller`); the exit writes them into the error record once and
returns the status.  A block of its own per site, with its call and stores, was a
seventh of a large gradient's instructions, and a `ret` of the result struct at every
site made LLVM's code generation several times slower on large functions.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from llvmlite import ir as L

I32, I64 = L.IntType(32), L.IntType(64)


class ErrorExit:
    """A function's error exit: made on the first edge into it, finished (`finish`)
    once the body is emitted."""

    def __init__(self, fn: L.Function) -> None:
        self.block = fn.append_basic_block("status.exit")
        b = L.IRBuilder(self.block)
        self.status = b.phi(I32, "status")
        self.site = b.phi(I64, "site")
        self.details: list = []
        self.caller: Optional[L.Value] = None

    def edge(self, here: L.Block, status: L.Value, site: L.Value, details: tuple = (),
             caller: Optional[L.Value] = None) -> None:
        """The phis' values along the edge from block `here` (`details`: i64 words)."""
        b = L.IRBuilder(self.block)
        b.position_at_start(self.block)
        while len(self.details) < len(details):
            self.details.append(b.phi(I64, f"detail{len(self.details)}"))
        if caller is not None and self.caller is None:
            self.caller = b.phi(I64, "caller")
        self.status.add_incoming(status, here)
        self.site.add_incoming(site, here)
        for phi, d in zip(self.details, details):
            phi.add_incoming(d, here)
        if caller is not None:
            self.caller.add_incoming(caller, here)

    def finish(self, fn: L.Function, errinfo_base: Callable, caller_slot: int,
               result: Callable) -> None:
        """Complete the phis (undefined details and a 0 caller along the edges that
        gave none) and emit the exit's code: record the site and its details when the
        site is not 0, the caller when it is not 0, and return `result(b, status)`."""
        edges = [blk for _, blk in self.status.incomings]
        for phi in self.details:
            _complete(phi, edges, L.Constant(I64, L.Undefined))
        if self.caller is not None:
            _complete(self.caller, edges, L.Constant(I64, 0))
        record = fn.append_basic_block("status.record")
        after = fn.append_basic_block("status.caller")
        done = fn.append_basic_block("status.return")
        b = L.IRBuilder(self.block)
        b.cbranch(b.icmp_unsigned("!=", self.site, L.Constant(I64, 0)), record, after)
        b.position_at_end(record)
        base = errinfo_base(b)
        for k, v in enumerate([self.site] + self.details):
            b.store(v, b.gep(base, [L.Constant(I64, 1 + k)], source_etype=I64))
        b.branch(after)
        b.position_at_end(after)
        if self.caller is None:
            b.branch(done)
        else:
            note = fn.append_basic_block("status.note")
            b.cbranch(b.icmp_unsigned("!=", self.caller, L.Constant(I64, 0)), note, done)
            b.position_at_end(note)
            b.store(self.caller, b.gep(errinfo_base(b), [L.Constant(I64, caller_slot)],
                                       source_etype=I64))
            b.branch(done)
        b.position_at_end(done)
        b.ret(result(b, self.status))


def _complete(phi: Any, edges: list, default: L.Value) -> None:
    """Give `phi` `default` along each of `edges` it has no value for."""
    have = {id(blk) for _, blk in phi.incomings}
    for blk in edges:
        if id(blk) not in have:
            phi.add_incoming(default, blk)
