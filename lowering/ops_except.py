"""Handlers for `try`/`except`/`finally`, `with`, `raise` and `del`.

The reader (`lowering.reader`) finds the handler in force at each instruction: from
the exception table on 3.11+, from the SETUP_FINALLY/SETUP_WITH block stack on 3.10.
The driver (`Lowerer.protect`) puts each statement that runs under a handler in its
own block entered by `goto #k unwind #h`; an exception there continues at the
handler's IR block, which `Lowerer.enter_handler` starts with `caught()` and the
stack CPython's handler starts with.  This module lowers the opcodes that handler
code uses:

  * 3.11+: the handler starts with `[..depth] (lasti) exc`; PUSH_EXC_INFO swaps in
    the previous exception's slot (an `ExcInfo` marker), CHECK_EXC_MATCH tests
    `except E:`, POP_EXCEPT drops the marker, RERAISE raises the exception again;
  * 3.10: the handler starts with `[..depth] prev prev prev tb exc type`;
    JUMP_IF_NOT_EXC_MATCH tests, POP_EXCEPT drops the three previous slots;
  * `with`: BEFORE_WITH / SETUP_WITH call `__enter__` and keep `__exit__`, which the
    normal exit calls with three Nones and WITH_EXCEPT_START with the exception
    (a true result suppresses it).
"""
from __future__ import annotations

import sys

from ssair.ir import Const

from .handlers import handles
from .runtime import UNBOUND, exception_matches, raise_from
from .values import CaughtPart, ExcInfo

PY = sys.version_info[:2]


@handles("SETUP_FINALLY")
def op_setup_finally(lw, ins):
    lw.setup_depth[lw.reader.blocks[lw.bindex].setup] = len(lw.stack)


@handles("SETUP_WITH")
def op_setup_with(lw, ins):
    enter = _enter(lw)
    lw.setup_depth[lw.reader.blocks[lw.bindex].setup] = len(lw.stack)
    lw.push(lw.emit("call", enter))


@handles("BEFORE_WITH")
def op_before_with(lw, ins):
    enter = _enter(lw)
    lw.push(lw.emit("call", enter))


def _enter(lw):
    """Pop the context manager, push its `__exit__`; return its `__enter__`."""
    cm = lw.pop()
    enter = lw.emit("getattr", cm, Const("__enter__"))
    lw.push(lw.emit("getattr", cm, Const("__exit__")))
    return enter


@handles("POP_BLOCK")
def op_pop_block(lw, ins):
    pass


@handles("PUSH_EXC_INFO")
def op_push_exc_info(lw, ins):
    exc = lw.pop()
    lw.push(ExcInfo(exc))
    lw.push(exc)


@handles("POP_EXCEPT")
def op_pop_except(lw, ins):
    lw.popn(1 if PY >= (3, 11) else 3)


@handles("CHECK_EXC_MATCH")
def op_check_exc_match(lw, ins):
    kinds = lw.pop()
    match = lw.emit("call", Const(exception_matches), lw.stack[-1], kinds)
    lw.bools.add(match)
    lw.push(match)


@handles("JUMP_IF_NOT_EXC_MATCH")
def op_jump_if_not_exc_match(lw, ins):
    kinds, exc = lw.pop(), lw.pop()
    if isinstance(exc, CaughtPart):     # the handler's type slot: test the exception
        exc = exc.exc
    bb = lw.reader.blocks[lw.bindex]
    cond = lw.emit("call", Const(exception_matches), exc, kinds)
    lw.bools.add(cond)
    lw.branch(cond, bb.fall, lw.stack, bb.target, lw.stack)


@handles("WITH_EXCEPT_START")
def op_with_except_start(lw, ins):
    if PY >= (3, 11):
        exit_, exc = lw.stack[-4], lw.stack[-1]
        kind = lw.emit("call", Const(type), exc)
        tb = lw.emit("getattr", exc, Const("__traceback__"))
    else:
        exit_, tb, exc, kind = lw.stack[-7], lw.stack[-3], lw.stack[-2], lw.stack[-1]
        tb, kind = (v.materialize(lw) if isinstance(v, CaughtPart) else v for v in (tb, kind))
    lw.push(lw.emit("call", exit_, kind, exc, tb))


@handles("RERAISE")
def op_reraise(lw, ins):
    if PY >= (3, 11):
        exc = lw.pop()
    else:
        exc = lw.popn(3)[1]
    lw.raise_(exc)


@handles("RAISE_VARARGS")
def op_raise_varargs(lw, ins):
    if ins.arg == 0:
        info = next((v for v in reversed(lw.stack) if isinstance(v, ExcInfo)), None)
        if info is None:
            lw.refuse("bare 'raise' outside an except block")
        lw.raise_(info.exc)
    elif ins.arg == 1:
        lw.raise_(lw.pop())
    else:
        cause = lw.pop()
        lw.raise_(lw.emit("call", Const(raise_from), lw.pop(), cause))


@handles("LOAD_ASSERTION_ERROR")
def op_load_assertion_error(lw, ins):
    lw.push(Const(AssertionError))


@handles("DELETE_FAST")
def op_delete_fast(lw, ins):
    name = ins.arg if isinstance(ins.arg, str) else ins.arg.name
    lw.load_local(name)
    lw.ssa.write(name, lw.block, Const(UNBOUND))
    lw.assigned.discard(name)
    lw.fresh = None
