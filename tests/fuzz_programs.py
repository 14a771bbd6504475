"""A generator of random differentiable Python programs, and the differential check
that runs each one through CPython, the interpreter and the JIT.

A program is a module with a main function `f(x, y, k, arr)` (two floats, a small
int, a float array of length 3) and a helper `h(u, v)` it may call.  Bodies mix
arithmetic and `math` calls, if/elif/else, for and while loops with break, continue
and early return, nested loops, tuples, a closure, a bounded recursion `r(u, n)`,
and a local array written in loops.  Values stay bounded (sin, cos, tanh, division
by `1 + e*e`), so every program terminates and is smooth away from its branch
points; a rare `math.sqrt` of a raw expression raises ValueError on some inputs,
which every executor must raise too.  `try` statements (`except ValueError`, `else`,
`finally`, around a `math.log` that raises on some inputs, or a `raise`) and
`with np.errstate(...)` blocks (lowered as their bodies: `lowering.errstate_blocks`) compile.

Optional shapes (`SHAPES`; `ZYGOPY_FUZZ_SHAPES` picks them: a comma-separated list,
"all" or "none"; the default is `DEFAULT_SHAPES`), each with its own checks:
  * `early_return`: `if ...: return a` inside for and while loops, on a test that is
    taken (`i == 1`), never taken (`i == 5`, `a > 20.0`) or drawn, where `a` is often
    what `f` returns after its loops too;
  * `slice_write`: a local array written with a product of its own slice or row
    (`w[0:2] = w[0:2] * b`, `w[1:] *= b`, `m[1] *= arr`, ...);
  * `ckpt`: loops that run zero times (`range(k - 2)`, `while j < k - 2`) and two
    loops in a row; every gradient is checked again with `checkpoint=` small budgets
    (`CKPT_BUDGETS`), bit for bit equal to the plain one, values and errors too;
  * `jvp_after_error`: `h` may call a function made by a closure (forward mode
    refuses it, reverse mode does not); `jvp(f, ...)` is called three times and
    must give the same answer each time (the same error, or a tangent equal to
    <gradient, tangents> by reverse mode);
  * `nested_batch`: `f` takes `gradient` (or `pullback` and `back`) of a helper `hn(u, w)`
    whose array argument `w` is reached on one path only (an array cotangent that is
    not there on the other); every gradient is checked again with `batch=` over rows of
    x and y, against a loop of gradients over the rows (values and errors).

`check_program(source, inputs)` raises `FuzzFailure` naming what disagreed:
  * CPython, the interpreter and the JIT give the same value or the same exception
    type (the JIT may refuse a program at typing time: counted, not a failure);
  * interpreter and JIT gradients agree to 1e-10;
  * the interpreter's gradient matches central differences wherever the central and
    one-sided differences of two step sizes all agree (next to a kink or a branch
    point they do not, and nothing is checked; nor where |f| is so large that
    rounding f hides a step of 1e-6), unless the gradient is not finite: at
    an infinite slope (`sqrt` at 0) the chain rule gives inf or nan, as JAX does, or
    the input sits on a tie that only it takes (`b <= 0.0` at exactly 0, joining the
    other branch continuously): there the gradient at both neighbours must match;
  * the inputs are unmodified, and `back` called twice gives the same answer.
"""
from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
import tempfile
import warnings

import numpy as np
from hypothesis import strategies as st

from adjoint import gradient, jvp, pullback
from adjoint.passes.checkpoint import CheckpointError
from jit import TypingError
from jit.pullback.backend import JitFallbackWarning

FLOATS = ("a", "b", "c", "x", "y")
_DIR = tempfile.mkdtemp(prefix="zygopy_fuzz_")
SHAPES = ("early_return", "slice_write", "ckpt", "jvp_after_error", "nested_batch")
DEFAULT_SHAPES = ()      # CI: the programs and checks as before (same time)
# MiB: one tape word a segment (a snapshot at every header visit), 64 words; the JIT
# is checked with the first only (each budget is a compile of its own)
CKPT_BUDGETS = {"interp": (1e-9, 64 * 32 / 2**20), "llvm": (1e-9,)}


def shapes_from_env() -> frozenset:
    """The optional shapes `ZYGOPY_FUZZ_SHAPES` names ("all", "none", or a list)."""
    text = os.environ.get("ZYGOPY_FUZZ_SHAPES", ",".join(DEFAULT_SHAPES)).strip()
    if text == "all":
        return frozenset(SHAPES)
    names = {n.strip() for n in text.split(",") if n.strip() and n.strip() != "none"}
    unknown = names - set(SHAPES)
    if unknown:
        raise ValueError(f"ZYGOPY_FUZZ_SHAPES: unknown shape(s) {sorted(unknown)}; "
                         f"known: {', '.join(SHAPES)}, all, none")
    return frozenset(names)


class FuzzFailure(AssertionError):
    """An executor disagreed with another, or with finite differences."""


# -- expressions ------------------------------------------------------------------------
def _leaf(draw, env: dict) -> str:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return repr(draw(st.sampled_from([0.5, 1.5, -0.75, 2.0, 0.25])))
    if kind == 1 and env.get("index"):
        return f"arr[{env['index']} % 3]"
    if kind == 2:
        return f"arr[{draw(st.integers(-3, 2))}]"
    return draw(st.sampled_from(FLOATS))


def expr(draw, env: dict, depth: int) -> str:
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        return _leaf(draw, env)
    lhs = expr(draw, env, depth - 1)
    kind = draw(st.integers(0, 9))
    if kind <= 3:
        op = draw(st.sampled_from(["+", "-", "*"]))
        return f"({lhs} {op} {expr(draw, env, depth - 1)})"
    if kind == 4:
        return f"({lhs} / (1.0 + {lhs} * {lhs}))"
    if kind == 5:
        fn = draw(st.sampled_from(["math.sin", "math.cos", "math.tanh", "np.tanh", "np.sin"]))
        return f"{fn}({lhs})"
    if kind == 6:
        return f"math.exp(math.tanh({lhs}))"
    if kind == 7 and env.get("calls"):
        return f"h({lhs}, {expr(draw, env, depth - 1)})"
    if kind == 8 and env.get("calls"):
        return draw(st.sampled_from([f"g({lhs})", f"r({lhs}, k)", f"math.sqrt(abs({lhs}) + 0.1)"]))
    if draw(st.integers(0, 7)) == 0:
        return f"math.sqrt({lhs})"   # ValueError for a negative argument, on every backend
    return f"(-{lhs})"


def cond(draw, env: dict) -> str:
    op = draw(st.sampled_from(["<", ">", "<=", ">="]))
    test = f"{expr(draw, env, 1)} {op} {draw(st.sampled_from(['0.0', '0.3', '-0.4']))}"
    if draw(st.integers(0, 3)) == 0:
        join = draw(st.sampled_from(["and", "or"]))
        return f"{test} {join} {_leaf(draw, env)} > 0.1"
    return test


# -- statements -------------------------------------------------------------------------
class Body:
    """One function body; counters name the loops so nested loops do not clash."""

    def __init__(self, draw, env: dict, shapes: frozenset = frozenset()):
        self.draw, self.env, self.lines, self.loops = draw, env, [], 0
        self.shapes = shapes
        self.returning = False     # the next loop body starts with an early return

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def block(self, indent: int, depth: int, in_loop: bool) -> None:
        for _ in range(self.draw(st.integers(1, 3))):
            self.stmt(indent, depth, in_loop)

    def stmt(self, indent: int, depth: int, in_loop: bool) -> None:
        kinds = ["assign", "assign", "assign", "tuple"] + (["store"] if self.env["main"] else [])
        if depth > 0:
            kinds += ["if", "for", "while", "try" if self.draw(st.integers(0, 3)) == 0 else "if"]
        if in_loop:
            kinds += ["break", "continue"]
        if self.env.get("calls"):
            kinds += ["return"]
        if self.env["main"]:
            kinds += self._shape_kinds(depth, in_loop)
        getattr(self, "stmt_" + self.draw(st.sampled_from(kinds)))(indent, depth, in_loop)

    def _shape_kinds(self, depth: int, in_loop: bool) -> list:
        """The statements of the optional shapes that are on (main function only)."""
        kinds = []
        if "early_return" in self.shapes:
            kinds += ["loop_return", "loop_return"] if in_loop else []
            kinds += ["returning_loop"] if depth > 0 else []
        if "slice_write" in self.shapes:
            kinds += ["slice_write"]
        if "ckpt" in self.shapes and depth > 0:
            kinds += ["two_loops"]
        if "nested_batch" in self.shapes:
            kinds += ["nested"]
        return kinds

    def stmt_assign(self, indent, depth, in_loop) -> None:
        target = self.draw(st.sampled_from(["a", "b", "c"]))
        op = self.draw(st.sampled_from(["=", "=", "+=", "-=", "*="]))
        value = expr(self.draw, self.env, 2)
        if op == "*=":
            value = f"math.tanh({value})"
        self.emit(indent, f"{target} {op} {value}")

    def stmt_tuple(self, indent, depth, in_loop) -> None:
        self.emit(indent, f"t = ({expr(self.draw, self.env, 1)}, {expr(self.draw, self.env, 1)})")
        self.emit(indent, self.draw(st.sampled_from(["a, b = t[1], t[0]", "b, c = t",
                                                     "a = t[0] * t[1]"])))

    def stmt_store(self, indent, depth, in_loop) -> None:
        where = f"{self.env['index']} % 3" if self.env.get("index") else \
            str(self.draw(st.integers(0, 2)))
        op = self.draw(st.sampled_from(["=", "+="]))
        self.emit(indent, f"buf[{where}] {op} {expr(self.draw, self.env, 1)}")
        if self.draw(st.booleans()):
            self.emit(indent, f"a = a + buf[{self.draw(st.integers(0, 2))}]")

    def stmt_if(self, indent, depth, in_loop) -> None:
        self.emit(indent, f"if {cond(self.draw, self.env)}:")
        self.block(indent + 1, depth - 1, in_loop)
        if self.draw(st.booleans()):
            self.emit(indent, f"elif {cond(self.draw, self.env)}:")
            self.block(indent + 1, depth - 1, in_loop)
        if self.draw(st.booleans()):
            self.emit(indent, "else:")
            self.block(indent + 1, depth - 1, in_loop)

    def stmt_try(self, indent, depth, in_loop) -> None:
        if self.draw(st.integers(0, 4)) == 0:
            self.emit(indent, "with np.errstate(all='ignore'):")
            self.block(indent + 1, depth - 1, in_loop)
            return
        self.emit(indent, "try:")
        target = self.draw(st.sampled_from(["a", "b", "c"]))
        if self.draw(st.booleans()):
            self.emit(indent + 1, f"{target} = math.log({expr(self.draw, self.env, 1)})")
        else:
            self.emit(indent + 1, f"if {cond(self.draw, self.env)}:")
            self.emit(indent + 2, "raise ValueError('drawn')")
        self.block(indent + 1, depth - 1, in_loop)
        form = self.draw(st.sampled_from(["except", "except else", "finally",
                                          "except finally"]))
        for part in form.split():
            self.emit(indent, "except ValueError:" if part == "except" else part + ":")
            self.block(indent + 1, depth - 1, in_loop)

    def _loop_body(self, indent, depth, counter) -> None:
        saved = self.env.get("index")
        self.env["index"] = counter
        if self.returning:       # (`stmt_returning_loop`)
            self.returning = False
            if self.draw(st.booleans()):
                self.stmt(indent + 1, depth - 1, True)
            self.stmt_loop_return(indent + 1, depth - 1, True)
        self.block(indent + 1, depth - 1, True)
        self.env["index"] = saved

    def _bounds(self, main_bounds: list) -> list:
        """Loop bounds: with the `ckpt` shape the main function's loops may also run
        zero times whatever k is, or unless k is 3."""
        if not self.env["main"]:
            return ["2", "3"]
        return main_bounds + (["0", "k - 2"] if "ckpt" in self.shapes else [])

    def stmt_for(self, indent, depth, in_loop) -> None:
        self.loops += 1
        i = f"i{self.loops}"
        bound = self.draw(st.sampled_from(self._bounds(["k", "3", "k + 1", "len(arr)"])))
        self.emit(indent, f"for {i} in range({bound}):")
        self._loop_body(indent, depth, i)

    def stmt_while(self, indent, depth, in_loop) -> None:
        self.loops += 1
        j = f"j{self.loops}"
        self.emit(indent, f"{j} = 0")
        bound = self.draw(st.sampled_from(self._bounds(["k", "2", "3"])))
        self.emit(indent, f"while {j} < {bound}:")
        self.emit(indent + 1, f"{j} += 1")
        self._loop_body(indent, depth, j)

    def stmt_break(self, indent, depth, in_loop) -> None:
        self.emit(indent, f"if {cond(self.draw, self.env)}:")
        self.emit(indent + 1, self.draw(st.sampled_from(["break", "continue"])))

    stmt_continue = stmt_break

    def stmt_return(self, indent, depth, in_loop) -> None:
        self.emit(indent, f"if {cond(self.draw, self.env)}:")
        value = f"float({expr(self.draw, self.env, 2)})"
        if "early_return" in self.shapes and self.env["main"] and self.draw(st.booleans()):
            value = self.env["final"]      # every return may return one variable
        self.emit(indent + 1, f"return {value}")

    def stmt_loop_return(self, indent, depth, in_loop) -> None:
        """`early_return`: leave the function from inside a loop, on a test that is
        taken on the second visit, never taken, or drawn; often returning the same
        variable `f` returns at its end."""
        counter = self.env.get("index")
        tests = ["a > 20.0", cond(self.draw, self.env)]
        if counter:
            tests += [f"{counter} == 1", f"{counter} == 5"]
        self.emit(indent, f"if {self.draw(st.sampled_from(tests))}:")
        final = self.env.get("final", "a")
        value = self.draw(st.sampled_from([final, final, final, "b",
                                           f"float({expr(self.draw, self.env, 1)})"]))
        self.emit(indent + 1, f"return {value}")

    def stmt_returning_loop(self, indent, depth, in_loop) -> None:
        """`early_return`: a for or while loop whose body may return early."""
        self.returning = True
        getattr(self, self.draw(st.sampled_from(["stmt_for", "stmt_while"])))(
            indent, depth, in_loop)

    def stmt_slice_write(self, indent, depth, in_loop) -> None:
        """`slice_write`: a local array updated with a product of its own slice or
        row, read afterwards (the update's pullback needs the values it overwrote)."""
        if self.draw(st.booleans()):
            start = self.draw(st.sampled_from(["arr * a", "arr + b", "np.sin(arr) * c"]))
            self.emit(indent, f"w = {start}")
            self.emit(indent, self.draw(st.sampled_from([
                "w[0:2] = w[0:2] * b", "w[1:] *= b", "w[0:2] *= w[1:3]", "w[1] *= a",
                "w[::2] = w[::2] * c", "w[1:] = w[1:] * w[:2]"])))
            self.emit(indent, "a = a + math.tanh(float(np.sum(w * w)))")
            return
        self.emit(indent, "m = np.zeros((2, 3))")
        self.emit(indent, "m[0] = arr * a")
        self.emit(indent, "m[1] = arr + b")
        self.emit(indent, self.draw(st.sampled_from([
            "m[1] *= arr", "m[1] *= m[0]", "m[0:1] = m[0:1] * b", "m[:, 1:] *= c",
            "m[1] = m[1] * m[0]"])))
        self.emit(indent, "b = b + math.tanh(float(np.sum(m)))")

    def stmt_nested(self, indent, depth, in_loop) -> None:
        """`nested_batch`: a nested gradient (or pullback) of `hn`, its array entry read."""
        choice = self.draw(st.sampled_from([
            "a = a + gradient(hn, a, arr)[1][0]",
            "b = b + gradient(hn, b, arr * a)[0]",
            "c = c + float(np.sum(gradient(hn, a * b, arr)[1]))",
            "pullback"]))
        if choice != "pullback":
            self.emit(indent, choice)
            return
        self.emit(indent, "hy, hback = pullback(hn, b, arr)")
        self.emit(indent, self.draw(st.sampled_from([
            "a = a + hback(c)[0] + hy", "a = a + hback(0.5)[0] * hn(a, arr)",
            "c = c + float(np.sum(hback(1.0)[1])) * hy"])))

    def stmt_two_loops(self, indent, depth, in_loop) -> None:
        """`ckpt`: two loops in a row (either may run zero times)."""
        for _ in range(2):
            getattr(self, self.draw(st.sampled_from(["stmt_for", "stmt_while"])))(
                indent, depth, in_loop)


# `nested_batch`: a helper whose array argument one path does not reach
NESTED = ["def hn(u, w):", "    if u > {cut}:", "        return u * u + 0.5",
          "    return u * float(np.sum(w * w)) + math.sin(u)", "", ""]

# `jvp_after_error`: a function made by a closure, which forward mode refuses to call
# from inside another function (reverse mode and the JIT call it)
MADE = ["def make(s):", "    def scaled(u, v):", "        return u * s + v",
        "    return scaled", "", "", "hc = make(0.5)", "", ""]


@st.composite
def programs(draw, shapes: frozenset = frozenset()) -> str:
    """The source text of one program module, with the optional `shapes` on."""
    helper = Body(draw, {"calls": False, "main": False})
    helper.emit(1, "a, b, c = u, v, 0.5")
    helper.block(1, 1, False)
    helper_value = "a * b + c"
    if "jvp_after_error" in shapes and draw(st.booleans()):
        helper_value += " + math.tanh(hc(a, b))"
    final = "float(a + b * c + np.sum(buf))"
    if "early_return" in shapes and draw(st.booleans()):
        final = "a"
    main = Body(draw, {"calls": True, "main": True, "final": final}, shapes)
    main.emit(1, "a, b, c = x, y, 0.25")
    main.emit(1, "buf = np.zeros(3)")
    main.emit(1, f"scale = {draw(st.sampled_from(['0.5', 'y', 'arr[0]']))}")
    main.emit(1, "g = lambda u: u * scale + x")
    if "jvp_after_error" in shapes and draw(st.booleans()):
        main.emit(1, "c = c + h(x, y)")
    returning = draw(st.sampled_from(["first", "last", "inside"])) \
        if "early_return" in shapes else "inside"
    if returning == "first":
        main.stmt_returning_loop(1, 2, False)
    if "ckpt" in shapes and draw(st.booleans()):
        main.stmt_two_loops(1, 2, False)
    main.block(1, 2, False)
    if returning == "last":      # its early return may return what `f` returns
        main.stmt_returning_loop(1, 2, False)
    main.emit(1, f"return {final}")
    nested = [line.format(cut=draw(st.sampled_from(["0.3", "-0.2", "5.0", "-5.0"])))
              for line in NESTED] if "nested_batch" in shapes else []
    return "\n".join([
        "import math", "import numpy as np",
        *(["from adjoint import gradient, pullback"] if nested else []), "", "",
        *(MADE if "jvp_after_error" in shapes else []), *nested,
        "def h(u, v):", "    x, y, arr = u, v, (u, v, 0.5)", *helper.lines,
        f"    return {helper_value}", "", "",
        "def r(u, n):", "    if n <= 0:", "        return u",
        "    return math.sin(r(u, n - 1)) + 0.5 * u", "", "",
        "def f(x, y, k, arr):", *main.lines, ""])


inputs = st.tuples(st.floats(-1.5, 1.5), st.floats(-1.5, 1.5), st.integers(0, 3),
                   st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3))


# -- running one program ------------------------------------------------------------------
def load(source: str):
    """Module of `source`, written to a real file (the lowering reads its lines)."""
    name = "fuzz_" + hashlib.sha1(source.encode()).hexdigest()[:16]
    path = os.path.join(_DIR, name + ".py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _outcome(thunk):
    try:
        return "ok", thunk()
    except (ValueError, ZeroDivisionError, OverflowError, UnboundLocalError) as e:
        return "raised", type(e)


# a documented limitation, not a wrong answer: `v OP= e` on a value whose kind is
# known only at run time while another name still refers to the same object
ALIAS_REFUSAL = "adjoint: in-place update of"


def _run(f, args: tuple, backend: str, checkpoint=None):
    def go():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitFallbackWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            y, back = pullback(f, *args, backend=backend, checkpoint=checkpoint)
            g1, g2 = back(1.0), back(1.0)
        return y, g1, g2
    try:
        return _outcome(go)
    except TypeError as e:
        if str(e).startswith(ALIAS_REFUSAL):
            return "alias-refused", str(e)
        raise


def _flat(g: tuple) -> np.ndarray:
    return np.concatenate([np.atleast_1d(np.asarray(v, dtype=float)).ravel()
                           for v in (g[0], g[1], g[3])])


def _same(a: float, b: float, tol: float) -> bool:
    return a == b or abs(a - b) <= tol * max(1.0, abs(a), abs(b)) or (a != a and b != b)


def check_program(source: str, values: tuple, shapes: frozenset = frozenset()) -> str:
    """Run one program on one input, with the checks of the optional `shapes`;
    returns "compiled" or "refused" (the JIT's answer), or "alias-refused" (see
    ALIAS_REFUSAL), or raises FuzzFailure."""
    f = load(source).f
    x, y, k, arr = values
    args = (x, y, k, np.array(arr, dtype=float))
    before = args[3].copy()
    expect = _outcome(lambda: f(*args))
    interp = _run(f, args, "interp")
    if interp[0] == "alias-refused":
        return "alias-refused"
    _agree("interpreter", expect, interp)
    if not np.array_equal(args[3], before):
        raise FuzzFailure("the interpreter modified an input array")
    try:
        compiled = _run(f, args, "llvm")
    except TypingError:
        compiled = None
    if compiled is not None:
        _agree("JIT", expect, compiled)
        if interp[0] == "ok" and not np.allclose(_flat(interp[1][1]), _flat(compiled[1][1]),
                                                 rtol=1e-10, atol=1e-10, equal_nan=True):
            raise FuzzFailure(f"JIT gradient {compiled[1][1]} != interpreter {interp[1][1]}")
    if interp[0] == "ok":
        _check_twice(interp[1])
        _check_differences(f, args, _flat(interp[1][1]))
    if "ckpt" in shapes and ("for " in source or "while " in source):
        _check_checkpointed(f, args, {"interp": interp, "llvm": compiled})
    if "jvp_after_error" in shapes:
        _check_jvp_repeated(f, args, expect, interp)
    if "nested_batch" in shapes:
        _check_batched(f, args)
    return "refused" if compiled is None else "compiled"


def _check_batched(f, args: tuple) -> None:
    """`gradient(f, X, Y, k, arr, batch=(0, 0, None, None))` against a loop of gradients
    over the rows of X and Y: the same gradients, or the first failing row's error."""
    x, y, k, arr = args
    X, Y = np.array([x, y, 0.5 * (x + y)]), np.array([y, -0.25, x])

    def quiet(thunk):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitFallbackWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            return _outcome(thunk)
    rows = [quiet(lambda i=i: gradient(f, float(X[i]), float(Y[i]), k, arr))
            for i in range(3)]
    got = quiet(lambda: gradient(f, X, Y, k, arr, batch=(0, 0, None, None)))
    failed = [r for r in rows if r[0] != "ok"]
    if failed:
        if got != failed[0]:
            raise FuzzFailure(f"batch=: {got} where the rows give {failed[0]}")
        return
    if got[0] != "ok":
        raise FuzzFailure(f"batch= raised {got[1]} where every row has a gradient")
    for j in (0, 1, 3):
        want = np.array([np.asarray(r[1][j], dtype=float) for r in rows])
        if not np.allclose(np.asarray(got[1][j], dtype=float), want, rtol=1e-10, atol=1e-10,
                           equal_nan=True):
            raise FuzzFailure(f"batch= gradient {j}: {got[1][j]} where the rows give {want}")


def _same_bits(a, b) -> bool:
    """Equal bit for bit (floats, arrays, None, tuples of them)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and \
            all(map(_same_bits, a, b))
    if a is None or b is None:
        return a is b
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def _check_checkpointed(f, args: tuple, plain: dict) -> None:
    """`ckpt`: with `checkpoint=` each small budget, every backend that ran gives the
    plain value and gradient bit for bit, or raises what the plain pullback raised.
    A loop with a try statement is refused (CheckpointError): not checked."""
    for backend, want in plain.items():
        if want is None or want[0] == "alias-refused":
            continue
        for mb in CKPT_BUDGETS[backend]:
            try:
                got = _run(f, args, backend, checkpoint=mb)
            except CheckpointError:
                return
            tag = f"{backend} checkpoint={mb:g}"
            if got[0] != want[0]:
                raise FuzzFailure(f"{tag}: {got[0]} {got[1]!r} where the plain pullback "
                                  f"{want[0]} {want[1]!r}")
            if got[0] == "raised":
                if got[1] is not want[1]:
                    raise FuzzFailure(f"{tag} raised {got[1].__name__}, plain "
                                      f"{want[1].__name__}")
                continue
            if not _same_bits(got[1][0], want[1][0]):
                raise FuzzFailure(f"{tag}: value {got[1][0]!r} != plain {want[1][0]!r}")
            for k in (1, 2):
                if not _same_bits(got[1][k], want[1][1]):
                    raise FuzzFailure(f"{tag}: gradient {got[1][k]} != plain {want[1][1]}")


TANGENTS = (0.5, -0.25, None, np.array([0.3, -0.2, 0.1]))


def _jvp_outcome(f, args: tuple, backend: str):
    """("ok", (y, tangent)) or ("raised", "Type: message") of one jvp call."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JitFallbackWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            return "ok", jvp(f, args, TANGENTS, backend=backend)
    except Exception as e:      # noqa: BLE001 -- every call must fail the same way
        return "raised", f"{type(e).__name__}: {e}"


def _check_jvp_repeated(f, args: tuple, expect, interp) -> None:
    """`jvp_after_error`: three jvp calls in a row give the same outcome (a forward
    mode refusal stays a refusal, not a later wrong answer); an answer's tangent is
    <gradient, tangents> by reverse mode and its value CPython's."""
    for backend in ("interp", "llvm"):
        runs = [_jvp_outcome(f, args, backend) for _ in range(3)]
        first = runs[0]
        for k, run in enumerate(runs[1:], 2):
            same = run[0] == first[0] and (run[1] == first[1] if run[0] == "raised" else
                                            _same_bits(run[1], first[1]))
            if not same:
                raise FuzzFailure(f"jvp ({backend}) call {k} gave {run[1]!r}, the first "
                                  f"{first[1]!r}")
        if first[0] == "raised" or expect[0] != "ok" or interp[0] != "ok":
            continue
        y, t = first[1]
        if not _same(expect[1], float(y), 1e-12):
            raise FuzzFailure(f"jvp ({backend}) value {y!r} != CPython {expect[1]!r}")
        g = interp[1][1]
        parts = [g[0] * TANGENTS[0], g[1] * TANGENTS[1], float(np.dot(g[3], TANGENTS[3]))]
        want = sum(parts)
        if math.isfinite(want) and \
                abs(float(t) - want) > 1e-9 * sum(abs(p) for p in parts) + 1e-12:
            raise FuzzFailure(f"jvp ({backend}) tangent {t!r} != <gradient, tangents> "
                              f"{want!r}")


def _agree(who: str, expect, got) -> None:
    if expect[0] != got[0]:
        raise FuzzFailure(f"{who}: {got[0]} {got[1]!r} where CPython {expect[0]} {expect[1]!r}")
    if expect[0] == "raised":
        if expect[1] is not got[1]:
            raise FuzzFailure(f"{who} raised {got[1].__name__}, CPython {expect[1].__name__}")
        return
    if not _same(expect[1], got[1][0], 1e-12):
        raise FuzzFailure(f"{who} value {got[1][0]!r} != CPython {expect[1]!r}")


def _check_twice(result) -> None:
    if not np.array_equal(_flat(result[1]), _flat(result[2]), equal_nan=True):
        raise FuzzFailure("back(1.0) called twice gave different gradients")


def _check_differences(f, args: tuple, grad: np.ndarray) -> None:
    """Central differences with two steps; where they agree, the gradient must too."""
    base = [args[0], args[1]] + list(args[3])

    def at(v):
        return f(v[0], v[1], args[2], np.array(v[2:]))
    for p in range(len(base)):
        est = []
        for h in (1e-5, 1e-6):
            up, down = list(base), list(base)
            up[p] += h
            down[p] -= h
            try:
                mid, hi, lo = at(base), at(up), at(down)
            except (ValueError, ZeroDivisionError, OverflowError):
                return
            est += [(hi - lo) / (2 * h), (hi - mid) / h, (mid - lo) / h]
        if not all(math.isfinite(e) and _same(est[0], e, 1e-3) for e in est):
            continue   # a kink or a branch point nearby (one-sided slopes differ)
        if not math.isfinite(grad[p]):
            continue   # an infinite slope met a zero factor (sqrt(x * x) at 0): nan, as JAX
        if abs(mid) * 2.2e-16 / 1e-6 > 0.1 * 1e-4 * max(1.0, abs(grad[p])):
            continue   # |f| so large that rounding f (an ulp) swamps a step of 1e-6
        if not _same(grad[p], est[3], 1e-4):
            if not _same(est[4], est[5], 1e-5) and any(_same(grad[p], e, 1e-5)
                                                        for e in est[4:6]):
                continue   # a kink at the input: the branch taken gives one side's slope
            if _isolated_branch(f, args, base, p, est[3]):
                continue
            raise FuzzFailure(f"gradient {p} is {grad[p]!r}, central differences "
                              f"give {est[3]!r}")


def _isolated_branch(f, args: tuple, base: list, p: int, slope: float) -> bool:
    """The input sits exactly on a branch that no neighbouring input takes (a tie
    such as `b <= 0.0` at b == 0 whose branch joins the others continuously): the
    gradient is that branch's, as in JAX and autograd, while differences see the
    neighbours'.  Recognised by the gradient at both neighbours matching the
    differences."""
    for h in (1e-6, -1e-6):
        v = list(base)
        v[p] += h
        shifted = (v[0], v[1], args[2], np.array(v[2:]))
        got = _run(f, shifted, "interp")
        if got[0] != "ok" or not _same(_flat(got[1][1])[p], slope, 1e-4):
            return False
    return True
