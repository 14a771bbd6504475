"""A phi of different functions (`k = g if x > 0 else h`), compiled.

Compiled code has no value that is "g or h": each closure is its own type.  When
inference meets a phi whose incoming values are functions or closures of different
types (`ChoiceNeeded`, raised by the phi's join), the phi is rewritten into one
closure of a dispatcher that holds a tag and every alternative:

    %k = φ(#a => %g, #b => %h)
becomes
    %tag = φ(#a => 0, #b => 1)
    %k0 = φ(#a => %g, #b => UNBOUND)
    %k1 = φ(#a => UNBOUND, #b => %h)
    %k = make_closure(@chosen, %tag, %k0, %k1)

where `chosen(*args, **kwargs)` calls the alternative its tag names.  UNBOUND is
the lowering's "no value here" (`jit.typing.unbound`): the slot of an alternative
not taken compiles to its type's zero and is never read.  The dispatcher is plain
Python, so it is typed, compiled and differentiated like user code: a call of `%k`
branches on the tag, and the cotangent of the closure taken reaches what it
captured.  The function is then retyped from the start on the rewritten copy
(`Engine.infer`, as for `jit.typing.unroll`).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from jit.types import ClosureT, FunctionT, TypingError
from jit.typing.unroll import RetypeNeeded
from lowering.runtime import UNBOUND
from ssair.ir import IR, Const, Phi, Stmt, Var

# the __module__ of the library's plain-Python code (jit.library.python_impls.MARK):
# compiled as user code, never taken for a library call
_IMPL_MODULE = "jit_array_impls"
_DISPATCHERS: dict = {}     # number of alternatives -> the dispatcher's inner function


def is_user_callable(t: Any, user_function: Callable) -> bool:
    """A closure, or a user function (a library function held in a variable is
    called through its constant only, so it cannot be a dispatcher's slot)."""
    return isinstance(t, ClosureT) or isinstance(t, FunctionT) and (
        isinstance(t.func, IR) or user_function(t.func))


class ChoiceNeeded(RetypeNeeded):
    """Phi `var` merges functions of different types: `groups` lists, per type, the
    predecessors that bring a function of that type."""

    def __init__(self, message: str, var: Var, groups: list) -> None:
        super().__init__(message)
        self.var, self.groups = var, groups

    def apply(self, ir: IR) -> bool:
        return choose_by_tag(ir, self.var, self.groups)


def dispatcher(n: int) -> Any:
    """The inner function `chosen(*args, **kwargs)` of a closure over (tag, f0, ...,
    f{n-1}) that calls the alternative numbered tag."""
    fn = _DISPATCHERS.get(n)
    if fn is not None:
        return fn
    slots = ", ".join(f"f{k}" for k in range(n))
    lines = [f"def choose_of_{n}(tag, {slots}):", "    def chosen(*args, **kwargs):"]
    for k in range(n - 1):
        lines += [f"        if tag == {k}:", f"            return f{k}(*args, **kwargs)"]
    lines += [f"        return f{n - 1}(*args, **kwargs)", "    return chosen"]
    namespace: dict = {}
    exec(compile("\n".join(lines) + "\n", f"<choice of {n} functions>", "exec"), namespace)
    outer = namespace[f"choose_of_{n}"]
    fn = outer(*([None] * (n + 1)))
    for f in (outer, fn):
        f.__module__ = _IMPL_MODULE
    _DISPATCHERS[n] = fn
    return fn


def choice_groups(incoming: list) -> list:
    """[(pred, type or None)] -> the predecessors grouped by type (a predecessor whose
    type is not known yet gets a group of its own)."""
    groups: dict = {}
    out = []
    for pred, t in incoming:
        if t is None:
            out.append([pred])
        elif t in groups:
            groups[t].append(pred)
        else:
            groups[t] = [pred]
            out.append(groups[t])
    return out


def choose_by_tag(ir: IR, var: Var, groups: list) -> bool:
    """Rewrite phi `var` (in place, in a copy the JIT owns) into a dispatcher closure
    over a tag phi and one slot phi per group; False when `var` is not a phi."""
    for b in ir.blocks:
        phi = next((p for p in b.phis if p.var == var), None)
        if phi is None:
            continue
        which = {pred: k for k, g in enumerate(groups) for pred in g}
        if set(which) != set(phi.incoming):
            return False
        tag = Phi(ir.new_var(), {p: Const(which[p]) for p in phi.incoming}, phi.line)
        slots = [Phi(ir.new_var(), {p: (v if which[p] == k else Const(UNBOUND))
                                    for p, v in phi.incoming.items()}, phi.line)
                 for k in range(len(groups))]
        b.phis = [p for p in b.phis if p is not phi] + [tag] + slots
        fn = dispatcher(len(groups))
        held = {"tag": tag.var, **{f"f{k}": s.var for k, s in enumerate(slots)}}
        captured = [held[name] for name in fn.__code__.co_freevars]
        b.stmts.insert(0, Stmt(var, "make_closure", [Const(fn)] + captured, {}, phi.line,
                               phi.name))
        return True
    return False


def choice_needed(p: Phi, incoming: list, message: str, user_function: Callable
                  ) -> Optional[ChoiceNeeded]:
    """`ChoiceNeeded` for phi `p` when its incoming values whose types are known
    ([(pred, type or None)]) are all closures or user functions, else None."""
    known = [t for _, t in incoming if t is not None]
    if len(known) < 2 or not all(is_user_callable(t, user_function) for t in known):
        return None
    if any(isinstance(t, ClosureT) and t.func in _DISPATCHERS.values() for t in known):
        where = message.split(": cannot unify")[0]
        raise TypingError(f"{where}: a variable holding one of several functions, chosen "
                          "again in a loop, is not compiled")
    return ChoiceNeeded(message, p.var, choice_groups(incoming))
