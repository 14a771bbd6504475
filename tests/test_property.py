"""Property tests: random arithmetic and branchy Python functions, generated as source
text, lowered and interpreted (before and after optimisation) must agree with CPython,
exceptions included (ZeroDivisionError from `/`, `//`, `%`).

The generated functions take `a, b` (ints) and `x` (float, including inf, nan, -0.0);
expressions use arithmetic, comparison, bitwise and `and`/`or` operators, conditional
expressions, `abs`, `min`, `max` and `** 2`.  Statements are
assignments and augmented assignments, if/elif/else, while loops with bounded counters
(with break/continue), for over range(...) with 1-3 arguments and negative steps,
and early returns.  Loop bodies keep integers small (`% 1009`, or additions only) so
that no example spends its time multiplying huge integers.

Each source is written to a real file (and linecache) so that its bytecode has
source lines.
"""
from __future__ import annotations

import hashlib
import linecache
import os
import tempfile

from harness import CheckFailure, check_lowering
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

VARS = ("a", "b", "x", "y", "z")
PARAMS = "a, b, x"
SETTINGS = settings(max_examples=100, deadline=None, derandomize=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])
_DIR = tempfile.mkdtemp(prefix="zygopy_prop_")


# -- expressions --------------------------------------------------------------------

def _leaf(draw, readable) -> str:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return str(draw(st.integers(-3, 5)))
    if kind == 1:
        return repr(draw(st.sampled_from([0.5, 1.5, -2.0, 0.0, 3.25])))
    return draw(st.sampled_from(readable))


def _expr(draw, readable, depth: int) -> str:
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        return _leaf(draw, readable)
    kind = draw(st.integers(0, 6))
    lhs = _expr(draw, readable, depth - 1)
    if kind <= 2:
        op = draw(st.sampled_from(["+", "-", "*", "+", "-", "*", "/", "//", "%"]))
        return f"({lhs} {op} {_expr(draw, readable, depth - 1)})"
    if kind == 3:
        return draw(st.sampled_from([f"(-{lhs})", f"abs({lhs})", f"({lhs} ** 2)"]))
    if kind == 4:
        cond = _cond(draw, readable, depth - 1)
        return f"({lhs} if {cond} else {_expr(draw, readable, depth - 1)})"
    rhs = _expr(draw, readable, depth - 1)
    if kind == 5:
        op = draw(st.sampled_from(["and", "or", "<", "==", "&", "|", "^", ">>", "<<"]))
        if op == "<<":  # a small literal count: no runaway integer sizes
            rhs = str(draw(st.integers(0, 8)))
        return f"({lhs} {op} {rhs})"
    fn = draw(st.sampled_from(["min", "max"]))
    return f"{fn}({lhs}, {rhs})"


def _cond(draw, readable, depth: int) -> str:
    kind = draw(st.integers(0, 4))
    e1, e2 = _expr(draw, readable, depth), _expr(draw, readable, depth)
    op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
    if kind == 0:
        return f"{e1} {op} {e2} < {_expr(draw, readable, depth)}"
    if kind == 1 and depth > 0:
        join = draw(st.sampled_from(["and", "or"]))
        return f"({e1} {op} {e2} {join} {_cond(draw, readable, depth - 1)})"
    if kind == 2:
        return f"not ({e1} {op} {e2})"
    return f"{e1} {op} {e2}"


# -- statements ---------------------------------------------------------------------

class _Gen:
    """Builds one function body; `loops` counts loops to name their counters."""

    def __init__(self, draw):
        self.draw = draw
        self.loops = 0
        self.lines: list = []

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def block(self, indent, readable, depth, in_loop) -> None:
        for _ in range(self.draw(st.integers(1, 2))):
            self.stmt(indent, readable, depth, in_loop)

    def stmt(self, indent, readable, depth, in_loop) -> None:
        kinds = ["assign", "assign", "if", "return"]
        if depth > 0:
            kinds += ["while", "for", "if"]
        if in_loop:
            kinds += ["break", "continue"]
        kind = self.draw(st.sampled_from(kinds))
        getattr(self, "stmt_" + kind)(indent, readable, depth, in_loop)

    def stmt_assign(self, indent, readable, depth, in_loop) -> None:
        target = self.draw(st.sampled_from(VARS))
        value = _expr(self.draw, readable, 1 + self.draw(st.integers(0, 1)))
        if not in_loop:
            op = self.draw(st.sampled_from(["=", "=", "+=", "-=", "*="]))
            self.emit(indent, f"{target} {op} {value}")
        elif self.draw(st.booleans()):
            self.emit(indent, f"{target} = ({value}) % 1009")
        else:
            op = self.draw(st.sampled_from(["+=", "-="]))
            self.emit(indent, f"{target} {op} {_leaf(self.draw, readable)}")

    def stmt_if(self, indent, readable, depth, in_loop) -> None:
        self.emit(indent, f"if {_cond(self.draw, readable, 1)}:")
        self.block(indent + 1, readable, depth - 1, in_loop)
        for _ in range(self.draw(st.integers(0, 1))):
            self.emit(indent, f"elif {_cond(self.draw, readable, 1)}:")
            self.block(indent + 1, readable, depth - 1, in_loop)
        if self.draw(st.booleans()):
            self.emit(indent, "else:")
            self.block(indent + 1, readable, depth - 1, in_loop)

    def stmt_return(self, indent, readable, depth, in_loop) -> None:
        self.emit(indent, f"if {_cond(self.draw, readable, 1)}:")
        self.emit(indent + 1, f"return {_expr(self.draw, readable, 1)}")

    def stmt_break(self, indent, readable, depth, in_loop) -> None:
        self.emit(indent, f"if {_cond(self.draw, readable, 1)}:")
        self.emit(indent + 1, self.draw(st.sampled_from(["break", "continue"])))

    stmt_continue = stmt_break

    def stmt_while(self, indent, readable, depth, in_loop) -> None:
        c = f"c{self.loops}"
        self.loops += 1
        self.emit(indent, f"{c} = 0")
        self.emit(indent, f"while {c} < {self.draw(st.integers(0, 4))}:")
        self.emit(indent + 1, f"{c} += 1")
        self.block(indent + 1, readable + (c,), depth - 1, True)
        self.loop_else(indent, readable, depth, in_loop)

    def stmt_for(self, indent, readable, depth, in_loop) -> None:
        k = f"k{self.loops}"
        self.loops += 1
        lo, hi = self.draw(st.integers(-3, 3)), self.draw(st.integers(-3, 4))
        step = self.draw(st.sampled_from([1, 2, -1, -2]))
        rng = self.draw(st.sampled_from([f"range({hi})", f"range({lo}, {hi})",
                                         f"range({hi}, {lo}, {step})", "range(b % 4)"]))
        self.emit(indent, f"for {k} in {rng}:")
        self.block(indent + 1, readable + (k,), depth - 1, True)
        self.loop_else(indent, readable, depth, in_loop)

    def loop_else(self, indent, readable, depth, in_loop) -> None:
        if self.draw(st.integers(0, 3)) == 0:
            self.emit(indent, "else:")
            self.block(indent + 1, readable, depth - 1, in_loop)


@st.composite
def straight_sources(draw) -> str:
    g = _Gen(draw)
    g.emit(1, "y = 1")
    g.emit(1, "z = 0.5")
    for _ in range(draw(st.integers(1, 5))):
        g.stmt_assign(1, VARS, 0, False)
    g.emit(1, f"return {_expr(draw, VARS, 3)}")
    return _function(g.lines)


@st.composite
def branchy_sources(draw) -> str:
    g = _Gen(draw)
    g.emit(1, "y = 1")
    g.emit(1, "z = 0.5")
    for _ in range(draw(st.integers(1, 3))):
        g.stmt(1, VARS, 2, False)
    g.emit(1, draw(st.sampled_from(["return a, b, x, y, z", f"return {_expr(draw, VARS, 2)}"])))
    return _function(g.lines)


def _function(body: list) -> str:
    return f"def generated({PARAMS}):\n" + "\n".join(body) + "\n"


FLOATS = st.one_of(st.floats(-10.0, 10.0, allow_nan=False, width=32),
                   st.sampled_from([0.0, -0.0, float("inf"), float("-inf"), float("nan")]))
ARGS = st.tuples(st.integers(-20, 20), st.integers(-20, 20), FLOATS)


def compile_source(source: str):
    """Write `source` to a real file, register it with linecache, exec it and
    return the function `generated`."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    path = os.path.join(_DIR, f"gen_{digest}.py")
    with open(path, "w") as fh:
        fh.write(source)
    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    namespace = {"__name__": f"zygopy_generated_{digest}"}
    exec(compile(source, path, "exec"), namespace)  # noqa: S102 - generated test programs
    return namespace["generated"]


def _check(source: str, arglists: list) -> None:
    f = compile_source(source)
    try:
        check_lowering(f, *arglists)
    except CheckFailure as e:
        raise AssertionError(f"{e}\n--- source:\n{source}") from None


@SETTINGS
@given(straight_sources(), st.lists(ARGS, min_size=1, max_size=3))
def test_straight_line(source, arglists):
    _check(source, arglists)


@SETTINGS
@given(branchy_sources(), st.lists(ARGS, min_size=1, max_size=3))
def test_branchy(source, arglists):
    _check(source, arglists)


def test_generator_makes_valid_python():
    """The generator's own sanity: a fixed source compiles and runs under CPython."""
    src = ("def generated(a, b, x):\n    y = 1\n    z = 0.5\n    c0 = 0\n"
           "    while c0 < 3:\n        c0 += 1\n        y = (y * a + c0) % 1009\n"
           "    return a, b, x, y, z\n")
    f = compile_source(src)
    assert f(2, 0, 1.0) == (2, 0, 1.0, 19, 0.5)
    _check(src, [(2, 0, 1.0), (-5, 3, 0.25)])
