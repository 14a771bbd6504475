"""Generator functions lowered as functions that return the list of what they yield.

A generator function's body runs when it is called and collects every `yield e`
into a list, which the call returns.  A `for` loop, `sum`, `list`, `tuple`, `zip`,
`enumerate` and the other consumers then read that list exactly as they would have
read the generator: the values, their order and their gradients are the same.  What
differs is only when the body runs (all at once, at the call), so a generator that
never ends, or one consumed only in part, is not what this lowering is for.

The rewrite, on the abstract instructions of `bytecode` (every CPython version):

    RETURN_GENERATOR; POP_TOP / GEN_START      -> BUILD_LIST 0; STORE_FAST yielded
    e; YIELD_VALUE; (RESUME); POP_TOP          -> e; LOAD_FAST yielded; SWAP 2;
                                                  LIST_APPEND 1; STORE_FAST yielded
    ...; RETURN_VALUE / RETURN_CONST v         -> (POP_TOP); LOAD_FAST yielded; RETURN_VALUE

3.12+ wraps the whole body in a handler that turns a StopIteration escaping the body
into a RuntimeError; its try markers are dropped (a StopIteration raised by the
body then propagates as such).  Refused, naming the construct: `yield from`, a
yield whose sent value is used (`x = yield v`), and async generators.

Requires: abstract instructions (Instr, Label, TryBegin, TryEnd) of a CO_GENERATOR code.
Guarantees: no YIELD_VALUE, RETURN_GENERATOR or GEN_START remains; each return
returns the list of values yielded so far.
"""
from __future__ import annotations

import sys
import types

from bytecode import Instr, Label

PY = sys.version_info[:2]
START = {"RETURN_GENERATOR", "GEN_START"}
RETURNS = {"RETURN_VALUE", "RETURN_CONST"}
AFTER_YIELD = {"RESUME", "NOP", "CACHE"}


def yielded_name(code: types.CodeType) -> str:
    """A local name for the list of yielded values, distinct from the code's own."""
    taken = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
    name, k = "yielded", 0
    while name in taken:
        k += 1
        name = f"yielded_{k}"
    return name


def as_list_builder(instrs: list, code: types.CodeType, refuse) -> tuple:
    """(`instrs` of generator `code` rewritten to return the list of its yields, the
    new local's name).  `refuse(construct, line)` raises the lowering's error."""
    acc = yielded_name(code)
    instrs = _without_stop_handler(instrs)
    out: list = []
    k = 0
    while k < len(instrs):
        ins = instrs[k]
        k += 1
        if not isinstance(ins, Instr):
            out.append(ins)
            continue
        loc = ins.location
        if ins.name in START:
            if ins.name == "RETURN_GENERATOR":
                k += 1                        # its POP_TOP
            out += [Instr("BUILD_LIST", 0, location=loc), Instr("STORE_FAST", acc, location=loc)]
        elif ins.name in ("YIELD_FROM", "SEND", "GET_YIELD_FROM_ITER"):
            refuse("yield from", ins.lineno)
        elif ins.name == "YIELD_VALUE":
            k = _after_yield(instrs, k, refuse, ins.lineno)
            out += _append(acc, loc)
        elif ins.name in RETURNS:
            drop = [Instr("POP_TOP", location=loc)] if ins.name == "RETURN_VALUE" else []
            out += drop + [Instr("LOAD_FAST", acc, location=loc),
                           Instr("RETURN_VALUE", location=loc)]
        else:
            out.append(ins)
    return out, acc


def _after_yield(instrs: list, k: int, refuse, line) -> int:
    """The index after the POP_TOP that drops a yield's sent value (refused when the
    sent value is used)."""
    while k < len(instrs) and isinstance(instrs[k], Instr) and instrs[k].name in AFTER_YIELD:
        k += 1
    if not (k < len(instrs) and isinstance(instrs[k], Instr) and instrs[k].name == "POP_TOP"):
        refuse("the value of a yield expression (x = yield v)", line)
    return k + 1


def _append(acc: str, loc) -> list:
    swap = Instr("ROT_TWO", location=loc) if PY == (3, 10) else Instr("SWAP", 2, location=loc)
    return [Instr("LOAD_FAST", acc, location=loc), swap, Instr("LIST_APPEND", 1, location=loc),
            Instr("STORE_FAST", acc, location=loc)]


def _without_stop_handler(instrs: list) -> list:
    """3.12+: drop the handler that turns StopIteration into RuntimeError, with the
    try markers that lead to it (the user's own try blocks keep theirs)."""
    stop = _stop_handler_label(instrs)
    if stop is None:
        return instrs
    out, skipping = [], False
    for ins in instrs:
        if ins is stop:
            skipping = True
            continue
        if skipping:
            if isinstance(ins, Label) or _is_try(ins):
                skipping = False
            elif isinstance(ins, Instr):
                continue
        if type(ins).__name__ == "TryBegin" and ins.target is stop:
            continue
        if type(ins).__name__ == "TryEnd" and ins.entry.target is stop:
            continue
        out.append(ins)
    return out


def _stop_handler_label(instrs: list):
    for k, ins in enumerate(instrs[1:], 1):
        if isinstance(ins, Instr) and ins.name == "CALL_INTRINSIC_1" \
                and "STOPITERATION" in getattr(ins.arg, "name", str(ins.arg)) \
                and isinstance(instrs[k - 1], Label):
            return instrs[k - 1]
    return None


def _is_try(ins) -> bool:
    return type(ins).__name__ in ("TryBegin", "TryEnd")
