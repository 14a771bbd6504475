"""Tests of `ssair.ssabuild.SSABuilder` in its two modes: declared blocks sealed one
by one (the lowering's use) and undeclared blocks sealed at `finish` with their
predecessors taken from the IR (the adjoint's use)."""
from __future__ import annotations

from ssair import Branch, Const, Goto, Return, interpret, verify
from ssair.ir import IR
from ssair.ssabuild import SSABuilder


def _loop_ir():
    """#1: x = n; #2: loop head; #3: x = x - 1; #4: return x."""
    ir = IR("countdown")
    n = ir.add_arg("n")
    b1, b2, b3, b4 = (ir.add_block() for _ in range(4))
    b1.term = Goto(b2.id)
    b3.term = Goto(b2.id)
    b4.term = None
    return ir, n, (b1, b2, b3, b4)


def _fill(ir, ssa, n, blocks):
    b1, b2, b3, b4 = blocks
    ssa.write("x", b1, n)
    x = ssa.read("x", b2)
    c = ir.push(b2, "gt", x, 0)
    b2.term = Branch(c, b3.id, b4.id)
    ssa.write("x", b3, ir.push(b3, "sub", ssa.read("x", b3), 1))
    b4.term = Return(ssa.read("x", b4.id))


def test_generic_mode_seals_at_finish():
    ir, n, blocks = _loop_ir()
    ssa = SSABuilder(ir)
    _fill(ir, ssa, n, blocks)
    ssa.finish()
    verify(ir)
    assert [len(b.phis) for b in ir.blocks] == [0, 1, 0, 0]
    assert blocks[1].phis[0].name is None
    assert interpret(ir, 5) == 0 and interpret(ir, -2) == -2


def test_incremental_mode_names_phis_and_lines():
    ir, n, blocks = _loop_ir()
    b1, b2, b3, b4 = blocks
    ssa = SSABuilder(ir, phi_name=lambda k: k)
    for b in blocks:
        ssa.add_block(b)
    ssa.add_pred(b2, b1)
    ssa.add_pred(b3, b2)
    ssa.add_pred(b4, b2)
    ssa.seal(b1), ssa.seal(b3), ssa.seal(b4)
    ssa.phi_line[b2.id] = 7
    _fill(ir, ssa, n, blocks)
    ssa.add_pred(b2, b3)
    ssa.seal(b2)
    ssa.finish()
    verify(ir)
    (phi,) = b2.phis
    assert (phi.name, phi.line) == ("x", 7)
    assert list(phi.incoming) == [b1.id, b3.id]
    assert interpret(ir, 3) == 0


def test_undefined_reads_use_the_default():
    ir = IR("undef")
    ir.add_arg("c")
    b1, b2, b3 = ir.add_block(), ir.add_block(), ir.add_block()
    b1.term = Branch(ir.args[0].var, b2.id, b3.id)
    b2.term = Goto(b3.id)
    ssa = SSABuilder(ir, default=lambda key: Const(f"undefined {key}"))
    ssa.write("y", b2.id, Const(1))
    b3.term = Return(ssa.read("y", b3.id))
    ssa.finish()
    verify(ir)
    assert interpret(ir, True) == 1
    assert interpret(ir, False) == "undefined y"


def test_trivial_phis_are_removed():
    ir = IR("same")
    a = ir.add_arg("a")
    b1, b2, b3 = ir.add_block(), ir.add_block(), ir.add_block()
    b1.term = Goto(b2.id)
    ssa = SSABuilder(ir)
    ssa.write("v", b1.id, a)
    c = ir.push(b2, "gt", ssa.read("v", b2.id), 0)
    b2.term = Branch(c, b2.id, b3.id)
    b3.term = Return(ssa.read("v", b3.id))
    ssa.finish()
    verify(ir)
    assert all(not b.phis for b in ir.blocks)
    assert ir.blocks[2].term.value == a
