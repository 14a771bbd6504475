"""Differential tests of the optimisation passes: random scalar programs written as IR
text (hypothesis) and the lowered corpus, interpreted before and after each pass."""
from __future__ import annotations

import copy
import math
import os

import corpus
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_passes import same_behaviour

import lowering
from ssair import parse, verify
from ssair.passes import PASSES, PIPELINE, optimize

# -- property tests: random scalar programs, before == after ----------------------------

CONSTS = ["0", "1", "-1", "2", "0.0", "-0.0", "1.0", "-1.0", "0.5", "True", "False"]
BINOPS = ["add", "sub", "mul", "truediv", "floordiv", "mod", "bitand", "bitor", "bitxor",
          "eq", "lt", "le", "ne", "is", "isnot"]
UNOPS = ["neg", "pos", "not", "truth", "invert"]
ARGS = "function f(%1 a::int64, %2 x::float64, %3 b::bool, %4 u)"
INPUTS = [(0, 0.0, False, 0), (3, -0.0, True, 2.5), (-2, math.inf, False, True),
          (1, math.nan, True, np.array([1.0, -0.0])), (7, 2.5, False, -3)]


class Program:
    """Writes a random diamond-shaped IR listing: block 1, then #2 or #3, joined at #4."""

    def __init__(self, data):
        self.data, self.next, self.lines = data, 5, []

    def operand(self, pool):
        if self.data.draw(st.booleans()):
            return self.data.draw(st.sampled_from(CONSTS))
        return self.data.draw(st.sampled_from(pool))

    def stmt(self, pool, lead):
        v = f"%{self.next}"
        self.next += 1
        if self.data.draw(st.integers(0, 3)) == 0:
            op = self.data.draw(st.sampled_from(UNOPS))
            text = f"{v} = {op}({self.operand(pool)})"
        else:
            op = self.data.draw(st.sampled_from(BINOPS + ["pow", "lshift"]))
            a = self.operand(pool)
            b = self.data.draw(st.sampled_from(["0", "1", "2", "0.0", "1.0"])) \
                if op in ("pow", "lshift") else self.operand(pool)
            text = f"{v} = {op}({a}, {b})"
        self.lines.append(lead + text)
        return v

    def block(self, bid, pool, n, head=None):
        made = []
        for k in range(n):
            lead = f"{bid} ─ " if k == 0 and head is None else "│   "
            made.append(self.stmt(pool + made, lead))
        return made

    def text(self):
        d = self.data
        pool = ["%1", "%2", "%3", "%4"]
        p1 = pool + self.block(1, pool, d.draw(st.integers(1, 4)))
        cond = d.draw(st.sampled_from(["True", "False", p1[-1]]))
        self.lines.append(f"│   %{self.next} = truth({cond})")
        c = f"%{self.next}"
        self.next += 1
        self.lines.append(f"└──      goto #3 if not {c}")
        side = {}
        for bid in (2, 3):
            side[bid] = self.block(bid, p1, d.draw(st.integers(1, 3)))
            self.lines.append("└──      goto #4")
        phi = f"%{self.next}"
        self.next += 1
        self.lines.append(f"4 ┄ {phi} = φ (#2 => {self.operand(side[2])}, "
                          f"#3 => {self.operand(side[3])})")
        p4 = p1 + [phi] + self.block(4, p1 + [phi], d.draw(st.integers(0, 3)), head=True)
        picks = d.draw(st.lists(st.sampled_from(p4), min_size=1, max_size=4))
        self.lines.append(f"│   %{self.next} = tuple({', '.join(picks)})")
        self.lines.append(f"└──      return %{self.next}")
        return "\n".join([ARGS] + self.lines)

    def loop_text(self):
        """Block 1, a loop header #2 (counter, accumulator and a dead phi), a body #3
        running three times, and an exit #4."""
        d = self.data
        pool = ["%1", "%2", "%3", "%4"]
        p1 = pool + self.block(1, pool, d.draw(st.integers(0, 3)), head=None)
        if len(p1) == len(pool):
            self.lines.append(f"1 ─ %{self.next} = copy(%1)")
            self.next += 1
        self.lines.append("└──      goto #2")
        i, acc, dead, c = (f"%{self.next + k}" for k in range(4))
        self.next += 4
        outer, self.lines = self.lines, []
        body = self.block(3, p1 + [i, acc], d.draw(st.integers(1, 4)))
        inext = f"%{self.next}"
        self.next += 1
        self.lines += [f"│   {inext} = add({i}, 1)", "└──      goto #2"]
        body_lines, self.lines = self.lines, outer
        self.lines += [f"2 ┄ {i} = φ (#1 => 0, #3 => {inext})",
                       f"│   {acc} = φ (#1 => {self.operand(p1)}, #3 => {self.operand(body)})",
                       f"│   {dead} = φ (#1 => {self.operand(p1)}, #3 => {dead})",
                       f"│   {c} = lt({i}, 3)", "└──      goto #4 if not " + c]
        self.lines += body_lines
        p4 = p1 + [i, acc] + self.block(4, p1 + [i, acc], d.draw(st.integers(1, 3)))
        picks = d.draw(st.lists(st.sampled_from(p4), min_size=1, max_size=4))
        self.lines.append(f"│   %{self.next} = tuple({', '.join(picks)})")
        self.lines.append(f"└──      return %{self.next}")
        return "\n".join([ARGS] + self.lines)


@settings(max_examples=int(os.environ.get("PASSES_EXAMPLES", "60")), deadline=None)
@given(st.data(), st.booleans())
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # `~True` on 3.12+
def test_random_programs_keep_their_behaviour(data, loop):
    program = Program(data)
    ir = parse(program.loop_text() if loop else program.text())
    verify(ir)
    for name, fn in [*PIPELINE, ("optimize", optimize)]:
        out = fn(ir)
        verify(out)
        with np.errstate(all="ignore"):
            same_behaviour(ir, out, INPUTS)


# -- the corpus: every pass alone keeps the behaviour of lowered functions ------------
def _lowered_corpus():
    cases, _ = corpus.load()
    for c in cases:
        try:
            ir = lowering.lower(c.func)
        except lowering.UnsupportedError:
            continue  # refusals are the lowering tests' business
        yield c, ir, [copy.deepcopy(a) for a in c.args]


def test_each_pass_alone_on_the_corpus():
    seen = 0
    for c, ir, arglists in _lowered_corpus():
        for fn in PASSES.values():
            out = fn(ir)
            verify(out)
            with np.errstate(all="ignore"):
                same_behaviour(ir, out, arglists)
        seen += 1
    assert seen > 100
