"""Parser tests: print -> parse -> print is the identity, constants and types come back
as the same values, and malformed text fails with the line number."""
import itertools
import math
import re
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_texts import POW

from ssair import IR, Branch, Const, Goto, Return, Var, format_ir
from ssair import parser as parser_mod
from ssair.parser import ParseError, Symbol, TypeName, parse, register_type_resolver


def roundtrip(ir: IR) -> IR:
    text = format_ir(ir)
    back = parse(text)
    assert format_ir(back) == text
    return back


def test_pow_text_roundtrips_and_has_the_right_structure():
    ir = parse(POW)
    assert format_ir(ir) == POW
    assert (ir.name, ir.file, ir.firstline, ir.nfree) == ("pow", "demo.py", 1, 0)
    assert [a.name for a in ir.args] == ["x", "n"]
    assert [b.id for b in ir.blocks] == [1, 2, 3, 4]
    b2 = ir.block(2)
    assert b2.phis[0].incoming == {1: Const(1), 3: Var(7)}
    assert (b2.phis[0].name, b2.phis[0].line) == ("r", 2)
    assert (b2.stmts[0].name, b2.stmts[0].line) == (None, 3)
    assert isinstance(b2.term, Branch) and (b2.term.then, b2.term.else_) == (3, 4)
    assert b2.term.cond == Var(5) and b2.term.line == 3
    assert isinstance(ir.block(3).term, Goto) and ir.block(3).term.line == 5
    assert isinstance(ir.block(4).term, Return) and ir.block(4).term.value == Var(3)
    assert ir.next_id == 8


def _block_chain(ir: IR, n: int) -> list:
    blocks = [ir.add_block() for _ in range(n)]
    for a, b in itertools.pairwise(blocks):
        a.term = Goto(b.id)
    return blocks


def test_branch_with_explicit_true_target_and_last_block_branch():
    ir = IR("br")
    c = ir.add_arg("c")
    b1, b2, b3 = [ir.add_block() for _ in range(3)]
    b1.term = Branch(c, 3, 2)          # true target is not the next block
    b2.term = Return(Const(0))
    b3.term = Branch(Const(True), 1, 2)  # last block: true target always printed
    text = format_ir(ir)
    assert "goto #2 if not %1\n└──      goto #3" in text
    back = roundtrip(ir)
    assert (back.block(1).term.then, back.block(1).term.else_) == (3, 2)
    assert (back.block(3).term.then, back.block(3).term.else_) == (1, 2)
    assert back.block(3).term.cond == Const(True)


def test_wide_block_ids_free_args_types_and_kwargs():
    ir = IR("outer.<locals>.inner", file="/tmp/a b:c.py", firstline=12, nfree=2)
    ir.add_arg("k", type=TypeName("int64"))
    ir.add_arg(".0")
    x = ir.add_arg("x", type=TypeName("array(float64, 1d)"))
    blocks = _block_chain(ir, 12)
    v = ir.push(blocks[0], "call", Const(np.dot), x, x, kwargs={"out": x, "inf": Const(-0.0)},
                line=13, name="y", type=TypeName("tuple(float64, int64)"))
    blocks[-1].term = Return(v, line=20)
    text = format_ir(ir)
    assert text.startswith("function outer.<locals>.inner[%1 k::int64, %2 .0]"
                           "(%3 x::array(float64, 1d)) @ /tmp/a b:c.py:12")
    back = roundtrip(ir)
    assert back.nfree == 2 and back.file == "/tmp/a b:c.py"
    s = back.block(1).stmts[0]
    assert s.kwargs == {"out": Var(3), "inf": Const(-0.0)}
    assert isinstance(s.type, TypeName) and s.type == "tuple(float64, int64)"
    assert "\n12 ─      return %4" in text and "\n└───      goto #2" in text


CONSTS = [0, -7, 10**40, 1.5, -0.0, 1e-300, 1e300, math.inf, -math.inf, True, False, None,
          "a # b @ 3", 'it\'s "q"', "tab\tnl\n│", b"by\x00tes", (), (1,), ((1, 2.5), ("x",)),
          (None, (True,), -math.inf)]


@pytest.mark.parametrize("value", CONSTS, ids=repr)
def test_constants_roundtrip_to_equal_values(value):
    ir = IR("k")
    b = ir.add_block()
    v = ir.push(b, "copy", Const(value), line=1, name="v")
    b.term = Return(Const(value))
    back = roundtrip(ir)
    got = back.block(1).stmts[0].args[0]
    assert got == Const(value) and back.block(1).term.value == Const(value)
    assert back.block(1).stmts[0].var == v


def test_nan_constant():
    ir = parse("function f()\n1 ─      return nan")
    val = ir.block(1).term.value.value
    assert isinstance(val, float) and math.isnan(val)


@pytest.mark.parametrize("name, obj", [("math.sin", math.sin), ("numpy.dot", np.dot),
                                       ("numpy", np), ("len", len), ("float", float),
                                       ("numpy.float64", np.float64), ("math", math)])
def test_symbols_resolve_to_objects(name, obj):
    ir = parse(f"function f(%1 x)\n1 ─ %2 = call(@{name}, %1)\n└──      return %2")
    assert ir.block(1).stmts[0].args[0].value is obj
    assert format_ir(ir).split("\n")[1] == f"1 ─ %2 = call(@{name}, %1)"


@pytest.mark.parametrize("name", ["nosuchmodule_xyz.f", "math.nosuch", "mod.f.<locals>.g",
                                  "<lambda>", "<ndarray>", "numpy.abs"])
def test_unresolvable_symbols_print_back(name):
    text = f"function f()\n1 ─ %1 = call(@{name})\n└──      return %1"
    ir = parse(text)
    sym = ir.block(1).stmts[0].args[0].value
    assert isinstance(sym, Symbol) and sym.name == name
    assert format_ir(ir) == text
    with pytest.raises(NameError, match=re.escape(name)):
        sym()


def test_symbol_for_an_alias_keeps_the_target():
    sym = parser_mod.resolve_symbol("numpy.abs")  # np.abs prints as numpy.absolute
    assert isinstance(sym, Symbol) and sym.target is np.absolute


def test_type_resolver_hook():
    class T:
        def __init__(self, text):
            self.text = text

        def __str__(self):
            return self.text

    register_type_resolver(lambda s: T(s) if s == "float64" else None)
    try:
        ir = parse("function f(%1 x::float64, %2 n::int64)\n1 ─      return %1")
        assert isinstance(ir.args[0].type, T) and isinstance(ir.args[1].type, TypeName)
        assert format_ir(ir).startswith("function f(%1 x::float64, %2 n::int64)")
    finally:
        parser_mod._TYPE_RESOLVERS.pop()


def test_annotations_without_name_or_line_and_empty_function():
    ir = IR("g", file="<stdin>")
    b = ir.add_block()
    ir.push(b, "copy", 1, name="only_name")
    ir.push(b, "copy", 2, line=7)
    b.term = None
    back = roundtrip(ir)
    assert back.file == "<stdin>" and back.firstline == 0
    assert [(s.name, s.line) for s in back.block(1).stmts] == [("only_name", None), (None, 7)]
    assert back.block(1).term is None
    assert roundtrip(IR("empty")).blocks == []


def test_loose_spacing_is_accepted():
    text = """
        function f(%1 c)
        1 ─ goto #3 if not %1
        2 ─ goto #4
        3 ─ goto #4
        4 ┄ %2 = φ (#2 => 1, #3 => 2.0)
        └── return %2
    """
    ir = parse(textwrap.dedent(text))
    assert ir.block(1).term.then == 2 and ir.block(4).phis[0].incoming[3] == Const(2.0)


BAD = [
    ("", 1, "empty input"),
    ("func f()", 1, "expected 'function '"),
    ("function f(%1 x\n1 ─      return %1", 1, "argument list"),
    ("function f()\n  return 1", 2, "expected a block row"),
    ("function f()\n│   %1 = add(1, 2)", 2, "outside any block"),
    ("function f()\n1 ─ %1 = add(1, 2\n└──      return %1", 2, "operand list"),
    ("function f()\n1 ─ %1 = add(1, q)\n└──      return %1", 2, "expected an operand"),
    ("function f()\n1 ─ %1 = add(1, 'x)\n└──      return %1", 2, "unterminated string"),
    ("function f()\n1 ─ %1 = φ (#1 => 1, #1 => 2)\n└──      return %1", 2, "twice"),
    ("function f()\n1 ─      return 1\n└──      return 2", 3, "second terminator"),
    ("function f()\n1 ─      return 1\n│   %1 = add(1, 2)", 3, "after the terminator"),
    ("function f()\n1 ─ %1 = add(1, 2)", 2, "no terminator row"),
    ("function f(%1 c)\n1 ─      goto #1 if not %1", 2, "explicit 'goto #T'"),
    ("function f()\n1 ─ %1 = add(1, 2) junk\n└──      return %1", 2, "expected '#'"),
    ("function f()\n1 ─ %1 = copy(1)\n│   %2 = φ (#1 => 1)\n└── return 1", 3, "after a statement"),
    ("function f()\n1 ─ %1 = call(@f, a=1, 2)\n└── return 1", 2, "after a keyword"),
    ("function f() @ nowhere\n1 ─      return 1", 1, "FILE:LINE"),
    ("function f()\n1 ─ %1 = copy(1)::\n└── return 1", 2, "expected a type"),
]


@pytest.mark.parametrize("text, line, msg", BAD)
def test_malformed_text_names_the_line(text, line, msg):
    with pytest.raises(ParseError) as e:
        parse(text)
    assert str(e.value).startswith(f"line {line}:")
    assert msg in str(e.value)


# -- property test: random IR prints, parses and prints identically -----------------
_objects = st.sampled_from([math.sin, np.dot, np, len, float, Symbol("a.<locals>.b")])
_atoms = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
          | st.binary(max_size=4) | _objects)
_consts = st.recursive(_atoms, lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)
_names = st.none() | st.from_regex(r"[a-z_][a-z0-9_]{0,5}", fullmatch=True)
_lines = st.none() | st.integers(0, 5000)
_types = st.none() | st.sampled_from(["int64", "float64", "array(float64, 2d)", "none"])


@st.composite
def random_ir(draw):
    ir = IR(draw(st.from_regex(r"[a-z]\w{0,6}", fullmatch=True)),
            file=draw(st.none() | st.just("x.py")), firstline=draw(st.integers(1, 99)))
    for _ in range(draw(st.integers(0, 3))):
        ir.add_arg(draw(st.from_regex(r"[a-z]\w{0,4}", fullmatch=True)),
                   type=_tn(draw(_types)))
    ir.nfree = draw(st.integers(0, len(ir.args)))
    nblocks = draw(st.integers(1, 12))
    blocks = [ir.add_block(draw(st.integers(0, 200)) if i else None) for i in range(nblocks)]
    ids = [b.id for b in blocks]
    for b in blocks:
        _fill_block(draw, ir, b, ids)
    return ir


def _tn(t):
    return None if t is None else TypeName(t)


def _operand(draw, ir):
    if ir.next_id > 1 and draw(st.booleans()):
        return Var(draw(st.integers(1, ir.next_id - 1)))
    return Const(draw(_consts))


def _fill_block(draw, ir, b, ids):
    for _ in range(draw(st.integers(0, 2))):
        inc = {k: _operand(draw, ir) for k in draw(st.lists(st.sampled_from(ids), max_size=3, unique=True))}
        ir.add_phi(b, inc, line=draw(_lines), name=draw(_names))
        b.phis[-1].type = _tn(draw(_types))
    for _ in range(draw(st.integers(0, 3))):
        args = [_operand(draw, ir) for _ in range(draw(st.integers(0, 3)))]
        kw = {k: _operand(draw, ir) for k in draw(st.lists(st.sampled_from(["k", "inf", "out"]),
                                                         max_size=2, unique=True))}
        ir.push(b, draw(st.sampled_from(["add", "call", "getitem", "tuple"])), *args, kwargs=kw,
                line=draw(_lines), name=draw(_names), type=_tn(draw(_types)))
    kind = draw(st.sampled_from(["goto", "branch", "return"]))
    line = draw(_lines)
    if kind == "goto":
        b.term = Goto(draw(st.sampled_from(ids)), line)
    elif kind == "branch":
        b.term = Branch(_operand(draw, ir), draw(st.sampled_from(ids)), draw(st.sampled_from(ids)), line)
    else:
        b.term = Return(_operand(draw, ir), line)


@settings(max_examples=100, deadline=None)
@given(random_ir())
def test_random_ir_roundtrips(ir):
    back = roundtrip(ir)
    for b0, b1 in zip(ir.blocks, back.blocks):
        assert [s.args for s in b0.stmts] == [s.args for s in b1.stmts]
        assert [p.incoming for p in b0.phis] == [p.incoming for p in b1.phis]
        assert (b0.term.successors(), b0.term.operands()) == (b1.term.successors(), b1.term.operands())
    assert back.next_id <= ir.next_id
