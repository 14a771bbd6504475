"""Handlers for jumps and returns."""
from __future__ import annotations

from ssair.ir import Const

from .handlers import handles


def _targets(lw):
    bb = lw.reader.blocks[lw.bindex]
    return bb.fall, bb.target


@handles("JUMP_FORWARD", "JUMP_ABSOLUTE", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT",
         "JUMP", "JUMP_NO_INTERRUPT")
def op_jump(lw, ins):
    lw.goto(_targets(lw)[1])


def _pop_jump(lw, cond, jump_if: bool) -> None:
    fall, target = _targets(lw)
    if jump_if:
        lw.branch(cond, target, lw.stack, fall, lw.stack)
    else:
        lw.branch(cond, fall, lw.stack, target, lw.stack)


@handles("POP_JUMP_IF_FALSE", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE")
def op_pop_jump_if_false(lw, ins):
    _pop_jump(lw, lw.pop(), False)


@handles("POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE")
def op_pop_jump_if_true(lw, ins):
    _pop_jump(lw, lw.pop(), True)


@handles("POP_JUMP_IF_NONE", "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE")
def op_pop_jump_if_none(lw, ins):
    _pop_jump(lw, lw.emit("is", lw.pop(), Const(None)), True)


@handles("POP_JUMP_IF_NOT_NONE", "POP_JUMP_FORWARD_IF_NOT_NONE",
         "POP_JUMP_BACKWARD_IF_NOT_NONE")
def op_pop_jump_if_not_none(lw, ins):
    _pop_jump(lw, lw.emit("isnot", lw.pop(), Const(None)), True)


@handles("JUMP_IF_FALSE_OR_POP")
def op_jump_if_false_or_pop(lw, ins):
    fall, target = _targets(lw)
    cond = lw.as_bool(lw.stack[-1])
    lw.branch(cond, fall, lw.stack[:-1], target, lw.stack)


@handles("JUMP_IF_TRUE_OR_POP")
def op_jump_if_true_or_pop(lw, ins):
    fall, target = _targets(lw)
    cond = lw.as_bool(lw.stack[-1])
    lw.branch(cond, target, lw.stack, fall, lw.stack[:-1])


@handles("RETURN_VALUE")
def op_return_value(lw, ins):
    lw.ret(lw.pop())


@handles("RETURN_CONST")
def op_return_const(lw, ins):
    lw.ret(Const(ins.arg))
