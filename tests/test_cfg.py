"""CFG analysis tests on hand-written IR: diamond, while loop, nested loops, a loop
with break and continue, an irreducible graph, a self loop and unreachable code."""
import textwrap

import pytest
from ir_texts import POW_PLAIN

from ssair import cfg
from ssair.parser import parse
from ssair.verifier import verify

DIAMOND = """\
function diamond(%1 c)
1 ─ goto #3 if not %1
2 ─ goto #4
3 ─ goto #4
4 ┄ return 0"""

WHILE = POW_PLAIN

NESTED = """\
function nested(%1 a, %2 b)
1 ─ goto #2
2 ┄ goto #7 if not %1
3 ─ goto #4
4 ┄ goto #6 if not %2
5 ─ goto #4
6 ─ goto #2
7 ─ return 0"""

BREAK_CONTINUE = """\
function bc(%1 a, %2 b, %3 c)
1 ─ goto #2
2 ┄ goto #7 if not %1
3 ─ goto #5 if not %2
4 ─ goto #8
5 ─ goto #2 if not %3
6 ─ goto #2
7 ─ goto #8
8 ┄ return 0"""

IRREDUCIBLE = """\
function irr(%1 a, %2 b)
1 ─ goto #3 if not %1
2 ┄ goto #3
3 ┄ goto #2 if not %2
4 ─ return 0"""

SELF_LOOP = """\
function spin(%1 a)
1 ─ goto #2
2 ┄ goto #3 if not %1
└── goto #2
3 ─ return 0"""

UNREACHABLE = """\
function dead(%1 a)
1 ─ return 0
2 ─ goto #3
3 ┄ goto #3"""


def P(text):
    return parse(textwrap.dedent(text))


@pytest.mark.parametrize("text", [DIAMOND, WHILE, NESTED, BREAK_CONTINUE, IRREDUCIBLE, SELF_LOOP])
def test_examples_verify_and_preds_match_ir(text):
    ir = P(text)
    verify(ir)
    assert cfg.predecessors(ir) == ir.predecessors()


def test_successors_predecessors_and_orders():
    ir = P(BREAK_CONTINUE)
    assert cfg.successors(ir) == {1: [2], 2: [3, 7], 3: [4, 5], 4: [8], 5: [6, 2], 6: [2],
                                  7: [8], 8: []}
    assert cfg.predecessors(ir)[2] == [1, 5, 6]
    rpo = cfg.reverse_postorder(ir)
    assert rpo[0] == 1 and sorted(rpo) == list(range(1, 9))
    pos = {b: i for i, b in enumerate(rpo)}
    back = set(cfg.back_edges(ir))
    for b, ss in cfg.successors(ir).items():
        for s in ss:
            assert pos[b] < pos[s] or (b, s) in back
    assert cfg.postorder(ir) == rpo[::-1]


def test_missing_target_raises_key_error():
    ir = P("function f()\n1 ─ goto #5")
    with pytest.raises(KeyError, match="block #1 jumps to missing block #5"):
        cfg.successors(ir)


def test_diamond_dominators_frontiers_postdominators():
    ir = P(DIAMOND)
    assert cfg.immediate_dominators(ir) == {1: None, 2: 1, 3: 1, 4: 1}
    dt = cfg.DomTree(ir)
    assert dt.dominates(1, 4) and dt.dominates(4, 4) and not dt.dominates(2, 4)
    assert not dt.strictly_dominates(4, 4) and dt.dominators(4) == [4, 1]
    assert sorted(dt.children[1]) == [2, 3, 4]
    assert cfg.dominates(ir, 1, 3) and not cfg.dominates(ir, 3, 1)
    assert cfg.dominance_frontiers(ir) == {1: set(), 2: {4}, 3: {4}, 4: set()}
    assert cfg.immediate_post_dominators(ir) == {1: 4, 2: 4, 3: 4, 4: None}
    assert cfg.blocks_in_cycles(ir) == set() and cfg.natural_loops(ir) == {}


def test_while_loop():
    ir = P(WHILE)
    assert cfg.immediate_dominators(ir) == {1: None, 2: 1, 3: 2, 4: 2}
    assert cfg.dominance_frontiers(ir) == {1: set(), 2: {2}, 3: {2}, 4: set()}
    assert cfg.back_edges(ir) == [(3, 2)]
    assert cfg.natural_loops(ir) == {2: {2, 3}}
    assert cfg.blocks_in_cycles(ir) == {2, 3}
    assert cfg.immediate_post_dominators(ir) == {1: 2, 2: 4, 3: 2, 4: None}
    assert cfg.is_reducible(ir)
    assert cfg.loop_depth(ir) == {1: 0, 2: 1, 3: 1, 4: 0}


def test_nested_loops():
    ir = P(NESTED)
    assert cfg.immediate_dominators(ir) == {1: None, 2: 1, 3: 2, 4: 3, 5: 4, 6: 4, 7: 2}
    assert sorted(cfg.back_edges(ir)) == [(5, 4), (6, 2)]
    assert cfg.natural_loops(ir) == {2: {2, 3, 4, 5, 6}, 4: {4, 5}}
    assert cfg.blocks_in_cycles(ir) == {2, 3, 4, 5, 6}
    assert cfg.loop_depth(ir) == {1: 0, 2: 1, 3: 1, 4: 2, 5: 2, 6: 1, 7: 0}
    df = cfg.dominance_frontiers(ir)
    assert df[5] == {4} and df[6] == {2} and df[4] == {2, 4} and df[3] == {2}


def test_loop_with_break_and_continue():
    ir = P(BREAK_CONTINUE)
    assert sorted(cfg.back_edges(ir)) == [(5, 2), (6, 2)]
    assert cfg.natural_loops(ir) == {2: {2, 3, 5, 6}}
    assert cfg.blocks_in_cycles(ir) == {2, 3, 5, 6}
    assert cfg.immediate_dominators(ir)[8] == 2
    assert cfg.dominance_frontiers(ir)[4] == {8} and cfg.dominance_frontiers(ir)[7] == {8}
    assert cfg.immediate_post_dominators(ir)[3] == 8


def test_irreducible_cycle():
    ir = P(IRREDUCIBLE)
    assert cfg.immediate_dominators(ir) == {1: None, 2: 1, 3: 1, 4: 3}
    assert cfg.back_edges(ir) == [] and cfg.natural_loops(ir) == {}
    assert cfg.blocks_in_cycles(ir) == {2, 3}
    assert len(cfg.retreating_edges(ir)) == 1 and not cfg.is_reducible(ir)
    assert sorted(map(sorted, cfg.strongly_connected_components(ir))) == [[1], [2, 3], [4]]


def test_self_loop():
    ir = P(SELF_LOOP)
    assert cfg.successors(ir)[2] == [2, 3]
    assert cfg.back_edges(ir) == [(2, 2)]
    assert cfg.natural_loops(ir) == {2: {2}}
    assert cfg.blocks_in_cycles(ir) == {2}
    assert cfg.dominance_frontiers(ir)[2] == {2}


def test_scc_order_is_reverse_topological():
    ir = P(NESTED)
    comps = cfg.strongly_connected_components(ir)
    where = {b: i for i, c in enumerate(comps) for b in c}
    for b, ss in cfg.successors(ir).items():
        for s in ss:
            assert where[s] <= where[b]


def test_unreachable_blocks_are_left_out():
    ir = P(UNREACHABLE)
    assert cfg.reachable(ir) == {1} and cfg.unreachable(ir) == [2, 3]
    assert cfg.immediate_dominators(ir) == {1: None}
    assert not cfg.DomTree(ir).dominates(2, 3)
    assert cfg.blocks_in_cycles(ir) == {3}  # on a cycle, though it never runs
    assert cfg.immediate_post_dominators(ir) == {1: None}
    assert cfg.natural_loops(ir) == {}


def test_deep_chain_needs_no_recursion():
    n = 5000
    rows = ["0 ─ goto #1"] + [f"{i} ─ goto #{i + 1}" for i in range(1, n)]
    rows += [f"{n} ─ goto #{n + 1} if not %1", "└── goto #1", f"{n + 1} ─ return 0"]
    ir = parse("function chain(%1 c)\n" + "\n".join(rows))
    verify(ir)
    assert cfg.reverse_postorder(ir)[:3] == [0, 1, 2]
    assert cfg.immediate_dominators(ir)[n] == n - 1
    assert cfg.blocks_in_cycles(ir) == set(range(1, n + 1))
    assert cfg.natural_loops(ir)[1] == set(range(1, n + 1))
