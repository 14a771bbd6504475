"""Verifier tests: well-formed IR passes; each invariant, broken on purpose (from text
or by mutating IR), gives a message naming the function, block and value."""
import textwrap

import pytest
from ir_texts import POW

from ssair import IR, Branch, Const, Goto, Phi, Return, Stmt, Var, format_ir
from ssair.parser import TypeName, parse
from ssair.verifier import VerifyError, verify

DIAMOND = """\
function d(%1 c, %2 x)
1 ─      goto #3 if not %1
2 ─ %3 = add(%2, 1)                       # y @ 3
└──      goto #4
3 ─ %4 = mul(%2, 2)                       # y @ 5
└──      goto #4
4 ┄ %5 = φ (#2 => %3, #3 => %4)           # y @ 5
│   %6 = call(@max, %5, 0, key=@abs)
└──      return %6"""


def P(text):
    return parse(textwrap.dedent(text))


def fails(ir, *fragments, **kw):
    with pytest.raises(VerifyError) as e:
        verify(ir, **kw)
    msg = str(e.value)
    for f in fragments:
        assert f in msg, msg
    return e.value


@pytest.mark.parametrize("text", [POW, DIAMOND])
def test_good_ir_passes(text):
    verify(parse(text))


def test_self_loop_phi_and_const_branch_pass():
    verify(P("""\
        function f(%1 n)
        1 ─      goto #2
        2 ┄ %2 = φ (#1 => %1, #2 => %3)
        │   %3 = sub(%2, 1)
        │   %4 = gt(%3, 0)
        │        goto #3 if not %4
        └──      goto #2
        3 ─      goto #4 if not True
        4 ┄      return %3"""))


# -- structure -------------------------------------------------------------------
def test_no_blocks():
    fails(IR("empty"), "empty: function has no blocks")


def test_duplicate_block_ids():
    ir = parse(DIAMOND)
    ir.blocks[2].id = 2
    fails(ir, "d: block #2: block id #2 is used by 2 blocks")


def test_missing_terminator():
    ir = parse(DIAMOND)
    ir.block(2).term = None
    fails(ir, "d: block #2: block has no terminator")
    fails(P("function f()\n1 ─ %1 = copy(1)\n└──      <no terminator>"), "f: block #1: block has no terminator")


def test_jump_to_missing_block():
    fails(P("function f()\n1 ─      goto #7"), "f: block #1: `goto #7`: jump target #7 is not a block")
    ir = parse(DIAMOND)
    ir.block(1).term.then = 9
    fails(ir, "d: block #1: `goto #3 if not %1`: jump target #9 is not a block")


def test_terminator_in_the_middle():
    ir = parse(DIAMOND)
    ir.block(2).stmts.append(Goto(4))
    fails(ir, "d: block #2: `goto #4`: terminator in the middle of the block")


def test_phi_after_statement():
    ir = parse(DIAMOND)
    b4 = ir.block(4)
    b4.stmts.append(b4.phis.pop())
    fails(ir, "d: block #4: `%5 = φ (#2 => %3, #3 => %4)` (line 5): phi after statements")


def test_non_phi_in_phi_list():
    ir = parse(DIAMOND)
    ir.block(4).phis.append(ir.block(2).stmts.pop())
    fails(ir, "d: block #4: `%3 = add(%2, 1)` (line 3): the phi list holds a non-phi")


def test_unknown_op_and_bad_arity():
    fails(P("function f(%1 x)\n1 ─ %2 = frobnicate(%1)\n└──      return %2"),
          "f: block #1: `%2 = frobnicate(%1)`: unknown op 'frobnicate'")
    fails(P("function f(%1 x)\n1 ─ %2 = add(%1, 1, 2)\n└──      return %2"),
          "f: block #1: `%2 = add(%1, 1, 2)`: op 'add' takes 2 operands, got 3")
    fails(P("function f(%1 x)\n1 ─ %2 = getitem(%1)\n└──      return %2"),
          "op 'getitem' takes at least 2 operands, got 1")


def test_kwargs_only_on_call():
    fails(P("function f(%1 x)\n1 ─ %2 = tuple(%1, k=1)\n└──      return %2"),
          "f: block #1: `%2 = tuple(%1, k=1)`: op 'tuple' has keyword operands (only 'call' may)")


def test_raw_operand_and_non_bool_branch_constant():
    ir = parse(DIAMOND)
    ir.block(2).stmts[0].args[1] = 1
    fails(ir, "d: block #2: ", "operand 1 is not a Var or a Const")
    fails(P("function f()\n1 ─      goto #2 if not 1\n2 ─      return 0"),
          "f: block #1: `goto #2 if not 1`: branch condition 1 is a non-bool constant")


def test_value_defined_twice():
    fails(P("function f(%1 x)\n1 ─ %2 = add(%1, 1)\n│   %2 = add(%1, 2)\n└──      return %2"),
          "f: block #1: `%2 = add(%1, 2)`: %2 is defined more than once (also in block #1)")
    fails(P("function f(%1 x)\n1 ─ %1 = add(%1, 1)\n└──      return %1"),
          "%1 is defined more than once (also in the arguments)")


def test_next_id_too_small():
    ir = parse(POW)
    ir.next_id = 5
    fails(ir, "pow: next_id 5 is not above the largest value %7")


# -- control flow ------------------------------------------------------------------
def test_predecessor_lists_must_agree():
    ir = parse(DIAMOND)
    ir.predecessors = lambda: {1: [], 2: [1], 3: [1, 2], 4: [2]}
    e = fails(ir, "d: block #3: predecessor #2 does not jump here")
    assert "d: block #4: predecessor list lacks #3, which jumps here" in e.errors


def test_entry_with_predecessor_and_phi():
    fails(P("""\
        function f(%1 c)
        1 ─ %2 = φ (#2 => 1)
        └──      goto #3 if not %1
        2 ─      goto #1
        3 ─      return 0"""),
          "f: block #1: the entry block has predecessors #2",
          "f: block #1: `%2 = φ (#2 => 1)`: the entry block has a phi")


def test_unreachable_block():
    text = "function f()\n1 ─      return 0\n2 ─ %1 = add(1, 2)\n└──      return %1"
    fails(P(text), "f: block #2: block is unreachable from the entry")
    verify(P(text), allow_unreachable=True)


def test_phi_missing_and_extra_incoming():
    ir = parse(DIAMOND)
    phi = ir.block(4).phis[0]
    del phi.incoming[3]
    phi.incoming[1] = Const(0)
    e = fails(ir, "d: block #4: `%5 = φ (#2 => %3, #1 => 0)` (line 5): no incoming value for predecessor #3")
    assert any("incoming value for #1, which is not a predecessor" in m for m in e.errors)


# -- dominance -----------------------------------------------------------------------
def test_use_not_dominated():
    ir = parse(DIAMOND)
    ir.block(4).stmts[0].args[1] = Var(3)
    fails(ir, "d: block #4: `%6 = call(@max, %3, 0, key=@abs)`: uses %3, defined in block #2, "
              "which does not dominate this use")


def test_use_before_definition_in_block_and_self_use():
    fails(P("function f(%1 x)\n1 ─ %2 = add(%3, 1)\n│   %3 = add(%1, 1)\n└──      return %2"),
          "f: block #1: `%2 = add(%3, 1)`: uses %3 before its definition")
    fails(P("function f(%1 x)\n1 ─ %2 = add(%2, 1)\n└──      return %2"),
          "`%2 = add(%2, 1)`: uses %2 before its definition")


def test_terminator_use_not_dominated():
    ir = parse(DIAMOND)
    ir.block(4).term = Return(Var(4), line=9)
    fails(ir, "d: block #4: `return %4` (line 9): uses %4, defined in block #3")


def test_phi_operand_must_dominate_end_of_predecessor():
    ir = parse(DIAMOND)
    ir.block(4).phis[0].incoming[2] = Var(4)
    fails(ir, "d: block #4: `%5 = φ (#2 => %4, #3 => %4)` (line 5): incoming %4 from #2 is "
              "defined in block #3, which does not dominate the end of #2")


def test_undefined_value():
    fails(P("function f()\n1 ─      return %9"), "f: block #1: `return %9`: uses %9, which is never defined")


def test_loop_phi_using_later_loop_value_is_fine_but_not_from_entry():
    ir = parse(POW)
    verify(ir)
    ir.block(2).phis[0].incoming[1] = Var(7)
    fails(ir, "pow: block #2: `%3 = φ (#1 => %7, #3 => %7)` (line 2): incoming %7 from #1")


# -- types -----------------------------------------------------------------------------
def _typed_diamond(t3: str, t4: str) -> IR:
    ir = parse(DIAMOND)
    types = {1: "bool", 3: t3, 4: t4}
    for d in ir.definitions():
        d.type = TypeName(types.get(d.var.id, "float64"))
    return ir


def test_phi_types_must_agree_when_all_typed():
    verify(_typed_diamond("float64", "float64"))
    ir = _typed_diamond("float64", "int64")
    fails(ir, "d: block #4: `%5 = φ (#2 => %3, #3 => %4)::float64` (line 5): "
              "incoming %4 from #3 has type int64, the phi has type float64")
    verify(ir, check_types=False)
    verify(ir, type_eq=lambda a, b: {a, b} <= {"int64", "float64"})
    ir.block(2).stmts[0].type = None
    verify(ir)  # not fully typed: the type check is skipped


def test_all_errors_are_collected():
    ir = parse(DIAMOND)
    ir.block(2).stmts[0].op = "nope"
    ir.block(3).stmts[0].args.append(Const(1))
    e = fails(ir, "unknown op 'nope'", "op 'mul' takes 2 operands, got 3")
    assert len(e.errors) == 2


def test_verify_accepts_ir_built_with_the_api():
    ir = IR("api")
    x = ir.add_arg("x")
    b1, b2 = ir.add_block(), ir.add_block()
    c = ir.push(b1, "gt", x, 0)
    b1.term = Branch(c, 2, 2)
    y = ir.add_phi(b2, {1: x})
    b2.term = Return(y)
    verify(ir)
    assert isinstance(b2.phis[0], Phi) and isinstance(b1.stmts[0], Stmt)
    assert "φ (#1 => %1)" in format_ir(ir)
