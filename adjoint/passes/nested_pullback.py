"""`pullback` called in user code, its `back` only called there: nested gradients.

    y, back = pullback(loss, w, X)       # in a function that is compiled or differentiated
    g = back(dy)[0]

`back(dy)` is the gradient of `<f(xs), dy>` in the xs (`dy` a constant of it), so where
the lowering sees such a call it rewrites it as ordinary code:

    y = loss(w, X)
    g = vjp_of_loss(w, X, dy)[0]      # gradient(weighted_loss, w, X, dy)[:2]
                                      # weighted_loss(w, X, dy) = <loss(w, X), dy>

The result is a call of f and calls of `gradient`, which the interpreter, reverse mode,
forward mode and the JIT run, differentiate and compile as they do any nested gradient,
to any order (`adjoint.nested_hv`, `jit.pullback.nested_gradient`).  f's forward runs
once for `y` and once more for each `back(dy)`: the price of not keeping a tape
alive between two statements.  `back(dy)` checks `dy` against `y` first, raising what the
top-level `back` raises for a cotangent of the wrong structure or shape (`check_seed`).

Rewritten only where f is known where the lowering sees the call (a function constant, a
library function with a rule, or a lambda or def made in the function), called with
positional arguments only; where f writes into none of them and running it again repeats
nothing (`writes_nothing`: no random draws, prints or writes into global containers);
and where `back` is used only by calling it with one argument.  Where f is a value (an
argument, a captured variable), the JIT makes the same rewrite once f's type says which
function it is (`jit.pullback.nested_gradient`, with `rewritten`).  Anything else keeps
its meaning: `pullback`'s own code runs, and the nested modes refuse what they do not
support, by name.
"""
from __future__ import annotations

import random
import types
from typing import Any, Optional

import numpy as np

from ssair import IR, Const, Stmt, Var

from ..api import cotangent_for, pullback
from ..nested_hv import library_callee


def rewrite_pullback_calls(ir: IR) -> None:
    """Rewrite `ir`'s `pullback` calls whose `back` is only called (see the docstring)."""
    sites = [(b, s) for b in ir.blocks for s in b.stmts
             if s.op == "call" and s.args and isinstance(s.args[0], Const)
             and s.args[0].value is pullback and not s.kwargs and len(s.args) >= 3]
    for block, s in sites:
        made = _rewrite(ir, s)
        if made is not None:
            k = next(i for i, t in enumerate(block.stmts) if t is s)
            block.stmts[k:k + 1] = made


def _rewrite(ir: IR, s: Stmt) -> Optional[list]:
    f, xs = s.args[1], list(s.args[2:])
    if any(not isinstance(x, (Var, Const)) for x in xs):
        return None
    callee = _callee(ir, f, len(xs))
    calls = back_calls(ir, s.var) if callee is not None else None
    if calls is None:
        return None
    return rewritten(ir, s, calls, callee[0], [], callee[1])


def rewritten(ir: IR, s: Stmt, calls: list, fn: Any, made: list, lead: list) -> list:
    """The statements replacing the pullback call `s` (its pair `(f(xs...), None)`,
    after the statements `made`), the calls `back(dy)` of `calls` made calls of
    `vjp_function(fn, len(lead), len(xs))` with the operands `lead` leading (the values
    f captured, made by `made` or already operands)."""
    xs = list(s.args[2:])
    for call in calls:
        vjp = vjp_function(fn, len(lead), len(xs), _entries_read(ir, call.var, len(xs)))
        call.args = [Const(vjp), *lead, *xs, call.args[1]]
    y = Stmt(ir.new_var(), "call", [s.args[1], *xs], line=s.line)
    return [*made, y, Stmt(s.var, "tuple", [y.var, Const(None)], line=s.line, name=s.name)]


def _callee(ir: IR, f: Any, nargs: int) -> Optional[tuple]:
    """(a function a generated function can call, the operands it takes first) for the
    pullback's function operand `f`: a Python function constant or a library function
    with a derivative rule, called as it is; a closure made in `ir`, as its code with
    the values it captured as leading parameters (`with_captured`).  None for
    anything else (a function value: the JIT rewrites the call where f's type says
    which function it is, `jit.pullback.nested_gradient`; a bound method, a class, a
    partial: their pullback keeps its own code)."""
    from ..nested_hv import static_function
    if isinstance(f, Const):
        fn = f.value
        if library_callee(fn):
            return fn, []
        if type(fn) is not types.FunctionType or not writes_nothing(fn, nargs):
            return None
        if fn.__closure__:      # its cells' values lead (forward mode takes them so)
            return with_captured(fn), [Const(c.cell_contents) for c in fn.__closure__]
        return fn, []
    got = static_function(f, nargs, ir.defs_by_var(), ir)
    if got is None or not got[1] or not writes_nothing(got[0], nargs):
        return None
    fn, captured = got
    return with_captured(fn), list(captured)


def writes_nothing(fn: Any, nargs: int) -> bool:
    """May the rewrite call Python function `fn` (with `nargs` positional arguments, all
    its parameters) on the xs themselves, and again in each `back(dy)`?  Only when it is
    known to write into none of them (`pullback` runs f on copies) and to have no effect
    that a second run repeats or changes (`repeatable`)."""
    from .writes import written_params
    code = fn.__code__
    if code.co_flags & 0x0C or code.co_kwonlyargcount or code.co_argcount != nargs:
        return False
    return written_params(fn, nargs) == frozenset() and repeatable(fn)


# methods that draw from a random generator, or write into the container they belong to
_EFFECT_METHODS = frozenset("""normal uniform random randn rand randint integers choice
    shuffle permutation permuted standard_normal binomial poisson exponential gamma beta
    multivariate_normal lognormal laplace logistic seed bit_generator
    append extend insert pop remove clear update setdefault add discard sort reverse fill
    put itemset resize write info debug warning error""".split())
_LOCAL_CONTAINERS = ("list", "dict", "set", "tuple")


def _own_code(fn: Any) -> bool:
    """zygopy's own functions (this module's, a rule's), which draw and print nothing."""
    from ..rule_table import lookup_callee
    module = getattr(fn, "__module__", None) or ""
    return lookup_callee(fn) is not None or module.partition(".")[0] in (
        "adjoint", "lowering", "ssair", "jit") and not getattr(fn, "__zygopy_lowered__", False)


def repeatable(fn: Any, seen: Optional[set] = None) -> bool:
    """Does running Python function `fn` twice give the same result, with nothing else
    seen twice?  False when it, or a function it calls or makes, draws from a random
    generator, prints, writes a global, or calls a method that may write into a
    container it did not make (`HIST.append(y)`); False when its code cannot be read."""
    import lowering
    from lowering.runtime import write_global
    seen = set() if seen is None else seen
    if fn in seen:
        return True
    seen.add(fn)
    try:
        ir = lowering.lower(fn)
    except Exception:       # noqa: BLE001  (code the lowering refuses: not known)
        return False
    made = {st.var for b in ir.blocks for st in b.stmts if st.op in _LOCAL_CONTAINERS}
    for b in ir.blocks:
        for st in b.stmts:
            if st.op == "getattr" and isinstance(st.args[1], Const) and \
                    st.args[1].value in _EFFECT_METHODS and st.args[0] not in made:
                return False
            callee = st.args[0].value if st.op in ("call", "make_closure") and st.args and \
                isinstance(st.args[0], Const) else None
            if callee is None:
                continue
            owner = getattr(callee, "__self__", None)
            module = getattr(callee, "__module__", None) or ""
            if callee is print or callee is write_global or module.startswith(
                    ("numpy.random", "random")) or isinstance(
                    owner, (np.random.Generator, np.random.RandomState, random.Random)):
                return False
            if isinstance(callee, types.CodeType):
                continue            # (a closure's code: read where it is called)
            if type(callee) is types.FunctionType and not _own_code(callee) and \
                    not repeatable(callee, seen):
                return False
    return True


def with_captured(fn: types.FunctionType) -> types.FunctionType:
    """A function of (the values `fn` captured..., its parameters...) running fn's code:
    its IR is fn's, whose leading arguments those values already are."""
    import lowering
    from lowering.api import register_ir, stub_function
    hit = _MADE.get((fn, fn.__code__, "captured"))
    if hit is not None and hit[0] is fn:
        return hit[1]
    ir = lowering.lower(fn).copy()
    ir.nfree = 0
    stub = stub_function(_tail(fn), len(ir.args), fn.__globals__, fn.__code__.co_filename)
    stub.__qualname__ = fn.__qualname__
    stub.__module__ = fn.__module__
    stub.__zygopy_lowered__ = True
    register_ir(stub, ir)
    _MADE[(fn, fn.__code__, "captured")] = (fn, stub)
    return stub


def _tail(fn: Any) -> str:
    name = getattr(fn, "__name__", "f")
    return name if name.isidentifier() else "lambda"


def back_calls(ir: IR, pair: Var) -> Optional[list]:
    """The statements `back(dy)` calling the pullback half of the pair `pair`, when
    that is every use of it and of the pair (the value half may be used in any way);
    else None."""
    pairs, backs = {pair}, set()
    for b in ir.blocks:           # (in order: a read comes after what it reads)
        for st in b.stmts:
            if not st.args or st.args[0] not in pairs:
                continue
            if st.op == "unpack" and st.args[1:] == [Const(2)]:
                pairs.add(st.var)
            elif st.op == "getitem" and len(st.args) == 2 and isinstance(st.args[1], Const) \
                    and st.args[1].value in (1, -1):
                backs.add(st.var)
    tracked = pairs | backs
    calls = []
    for b in ir.blocks:
        if any(v in tracked for p in b.phis for v in p.incoming.values()) or \
                b.term is not None and any(v in tracked for v in b.term.operands()):
            return None
        for st in b.stmts:
            used = [a for a in list(st.args) + list(st.kwargs.values()) if a in tracked]
            if not used:
                continue
            alone = len(used) == 1 and st.args[0] in tracked
            value_read = st.op == "getitem" and st.args[0] in pairs and \
                st.args[1:] in ([Const(0)], [Const(-2)])
            if alone and (st.var in tracked or value_read):
                continue            # the unpacking, and the reads of the halves
            if alone and st.args[0] in backs and st.op == "call" and len(st.args) == 2 \
                    and not st.kwargs:
                calls.append(st)    # back(dy)
                continue
            return None             # the pair or back escapes: stored, passed, returned
    return calls or None


_MADE: dict = {}      # (function, its code, what...) -> (it, the function made for it)


def _entries_read(ir: IR, var: Var, n: int) -> frozenset:
    """The entries of `back(dy)`'s tuple that are read, when every use of it reads one
    at a constant index (`back(1.0)[0]`); else all `n`."""
    got = set()
    for b in ir.blocks:
        if any(var in p.incoming.values() for p in b.phis) or \
                (b.term is not None and var in b.term.operands()):
            return frozenset(range(n))
        for st in b.stmts:
            if var not in st.args and var not in st.kwargs.values():
                continue
            k = st.args[1].value if st.op == "getitem" and len(st.args) == 2 and \
                st.args[0] == var and isinstance(st.args[1], Const) else None
            if type(k) is not int or not -n <= k < n:
                return frozenset(range(n))
            got.add(k % n)
    return frozenset(got)


def vjp_function(fn: Any, nfree: int, nargs: int, wanted: Optional[frozenset] = None) -> Any:
    """`(captured..., x0, ..., dy) -> back(dy)` of `pullback(f, x0, ...)`, `fn` being f
    (a function of the values it captured and of the xs): the gradient of
    `<fn(...), dy>` in the xs, as plain Python; the entries not `wanted` (the caller
    reads none of them) are None, so nested gradients take those xs as constants."""
    from ..api import gradient
    from ..generated import generated_function
    wanted = frozenset(range(nargs)) if wanted is None else wanted
    key = (fn, getattr(fn, "__code__", None), nfree, nargs, wanted)
    hit = _MADE.get(key)
    if hit is not None and hit[0] is fn:
        return hit[1]
    cs = [f"c{j}" for j in range(nfree)]
    xs = [f"x{k}" for k in range(nargs)]
    of = fn if type(fn) is types.FunctionType else None
    tail = _tail(fn)
    weighted = generated_function(
        f"weighted_{tail}", cs + xs + ["dy"],
        [f"return __seed_inner__(__f__({', '.join(cs + xs)}), dy, {tail!r})"],
        {"__f__": fn, "__seed_inner__": seed_inner}, of)
    weighted.__zygopy_lowered__ = True
    lines = [f"__g__ = __gradient__(__weighted__, {', '.join(cs + xs)}, dy)",
             "return (" + "".join(f"__g__[{nfree + k}], " if k in wanted else "None, "
                                  for k in range(nargs)) + ")"]
    out = generated_function(f"back_of_{tail}", cs + xs + ["dy"], lines,
                             {"__gradient__": gradient, "__weighted__": weighted}, of)
    out.__zygopy_lowered__ = True
    out.__zygopy_explain__ = lambda *operands: f"back(dy) of the pullback of {tail}"
    import lowering
    for made, what in ((weighted, "the pullback of"), (out, "back(dy) of the pullback of")):
        lowering.lower(made).meta["source_name"] = f"{what} {tail}"   # (in messages)
    _MADE[key] = (fn, out)
    return out


def check_seed(y: Any, dy: Any, name: str) -> None:
    """Raise what `back(dy)` of the pullback of `name` raises for a cotangent `dy` that
    does not fit the value `y` (its structure, shape or kind): `back`'s own check."""
    if not (type(y) is float and type(dy) is float):
        cotangent_for(y, dy, name)


def seed_inner(y: Any, dy: Any, name: str) -> Any:
    """`<y, dy>`, summed over the entries of a tuple, list or dict (a None entry of dy
    adds nothing), after `check_seed`.  (Each loop is a function of its own: a branch
    the JIT finds dead then holds no loop.)"""
    check_seed(y, dy, name)
    if dy is None:
        return 0.0
    if isinstance(y, dict):
        return dict_inner(y, dy)
    if isinstance(y, (tuple, list)):
        return entries_inner(y, dy)
    return np.sum(y * dy)


def dict_inner(y: Any, dy: Any) -> Any:
    total = 0.0
    for k in y:
        if k in dy:
            total = total + entry_inner(y[k], dy[k])
    return total


def entries_inner(y: Any, dy: Any) -> Any:
    total = 0.0
    for a, b in zip(y, dy):
        total = total + entry_inner(a, b)
    return total


def entry_inner(a: Any, b: Any) -> Any:
    return 0.0 if b is None else np.sum(a * b)


def _register() -> None:
    from lowering.api import CALL_REWRITES
    from ..rule_table import nondiff
    from ..special_callees import READ_ONLY_CALLEES
    CALL_REWRITES.append(rewrite_pullback_calls)
    nondiff(check_seed)
    for f in (check_seed, seed_inner, dict_inner, entries_inner, entry_inner):   # (read only)
        READ_ONLY_CALLEES[id(f)] = f
    pullback.__zygopy_typed__ = True    # (the JIT rewrites one of a function value)


_register()
