"""Tests of ssair.dot: the CFG as Graphviz DOT, checked structurally."""
import re

import pytest

from ssair import parse
from ssair.dot import edges, to_dot

LOOP = """\
function f(%1 x, %2 n)
1 ─ %3 = gt(%2, 0)
└──      goto #3 if not %3
2 ┄ %4 = φ (#1 => %2, #2 => %5)
│   %6 = φ (#1 => 1, #2 => %7)
│   %5 = sub(%4, 1)
│   %7 = mul(%6, %1)
│   %8 = gt(%5, 0)
│        goto #3 if not %8
└──      goto #2
3 ┄ %9 = φ (#1 => 1, #2 => %7)
└──      return %9"""

BRANCH = """\
function g(%1 x)
1 ─ %2 = gt(%1, 0)
└──      goto #3 if not %2
2 ─      return %1
3 ─ %3 = mul(0.01, %1)
└──      return %3"""


def structure(text: str) -> tuple:
    """(node ids, edges, brace depth ok) of DOT text, quoted strings removed first."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    depth, ok = 0, True
    for c in bare:
        depth += (c == "{") - (c == "}")
        ok = ok and depth >= 0
    nodes = re.findall(r"^\s*(\w+) \[", bare, flags=re.MULTILINE)
    arcs = re.findall(r"^\s*(\w+) -> (\w+)", bare, flags=re.MULTILINE)
    return nodes, arcs, ok and depth == 0


def test_loop_cfg_has_one_node_per_block_and_one_edge_per_cfg_edge():
    ir = parse(LOOP)
    nodes, arcs, balanced = structure(to_dot(ir))
    assert balanced
    assert [n for n in nodes if n not in ("node", "edge")] == ["b1", "b2", "b3"]
    assert sorted(arcs) == sorted([("b1", "b2"), ("b1", "b3"), ("b2", "b2"), ("b2", "b3")])
    assert len(arcs) == len(edges(ir)) == 4


def test_branch_edges_are_labelled_true_and_false():
    text = to_dot(parse(BRANCH))
    assert 'b1 -> b2 [label="true"]' in text and 'b1 -> b3 [label="false"]' in text


def test_labels_hold_phis_statements_and_terminators():
    text = to_dot(parse(LOOP))
    assert "%4 = φ (#1 => %2, #2 => %5)\\l" in text
    assert "goto #3 if not %8\\l" in text and "return %9\\l" in text


def test_several_functions_get_a_cluster_each_with_distinct_names():
    a, b = parse(LOOP), parse(BRANCH)
    text = to_dot(a, b)
    nodes, arcs, balanced = structure(text)
    blocks = [n for n in nodes if n not in ("node", "edge")]
    assert balanced and len(blocks) == len(set(blocks)) == 6
    assert len(arcs) == len(edges(a)) + len(edges(b))
    assert text.count("subgraph cluster_") == 2


def test_quotes_and_backslashes_in_constants_are_escaped():
    ir = parse('function h(%1 s)\n1 ─ %2 = add(%1, \'a"b\\\\c\')\n└──      return %2')
    _, _, balanced = structure(to_dot(ir))
    assert balanced and '\\"' in to_dot(ir)


def test_no_function_is_an_error():
    with pytest.raises(ValueError, match="to_dot"):
        to_dot()
