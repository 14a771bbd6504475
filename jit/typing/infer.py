"""Type inference: specialise an IR on its argument types.

`infer(ir, argtypes)` returns a `Typing`: a copy of the IR whose every Arg, Phi and
Stmt carries `.type`, the return type, and for every call statement the resolved
callee (another `Typing` for user functions and closures).  The engine is a monotone
fixed point over the blocks (phis and returns join, see `jit.types.join`); the
per-operation rules live in two tables:

  * `RULES[op](ctx, stmt, types) -> Type`, the core rules keyed by primitive name
    (jit.typing.primitives, and for adjoint IR jit.pullback.tape_ops and cotangents);
  * `jit.library.registry.REGISTRY`: every library callable (by the callee, or the
    class of a callable object) and the primitives' impls for library values such as
    arrays (tried before the core rule), each chosen by its argument-type pattern.

Only blocks reachable from the entry are typed: a branch on a value known at compile
time (`isinstance` of a typed value, `STATIC_CALLS`) reaches only its target, and
`_prune` drops the dead blocks from the typed copy, so rule functions written for
several types (arrays or floats) compile for the one at hand.

Recursion: a call to a signature that is still being inferred reads its current
return-type guess (unknown at first, so the call's result stays unknown); the
function is re-inferred until its return type stops changing.  A function that read
another in-progress guess is not cached, so mutual recursion converges too.
"""
from __future__ import annotations

import types as pytypes
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import lowering
from ssair import progress
from ssair.compile_lock import compiling
from ssair.ir import IR, Branch, Const, Goto, Phi, Raise, Return, Stmt, Var

from jit.typing.array_updates import with_explicit_updates
from ssair.passes.util import use_counts

from jit.types import (BOOL, CONSTANT_TYPE, NONE, BuiltListT, ClosureT, DictT, FunctionT,
                       ListLiteral, ListT, RecordT, StrT, TupleT, Type, TypingError, join,
                       typeof)
from jit.library.registry import REGISTRY
from jit.typing.spread import rewrite_needed
from jit.typing.choice import choice_needed
from jit.typing.block_order import flows_forward
from jit.typing.unroll import RetypeNeeded, carried_unroll
from jit.typing.refusals import (describe, internal_call, names_internals, refuse_exceptions,
                                 uncompiled_construct)
from jit.typing.formatted import formatted_use, holds_formatted
from jit.typing.unbound import expose_unbound, is_unbound
from jit.typing.binding import Packed, bind_call, bind_operands, pack_varargs  # noqa: F401

MAX_ROUNDS = 64


@dataclass(frozen=True, repr=False)
class LiteralT(Type):
    """A constant operand with no runtime representation (a string, a dtype, ...);
    rules that expect one (`getattr(a, 'shape')`) read its value."""

    value: Any

    def __str__(self) -> str:
        return f"literal({self.value!r})"


CONSTANT_TYPE[:] = [LiteralT]     # (an object's str attribute: jit.types)


@dataclass(eq=False)
class Call:
    """A resolved call: `target` is the callee's `Typing` for user code (None for a
    library callable) and `operands` its argument operands in parameter order
    (captured values of a closure first, defaults filled in)."""

    target: Optional["Typing"]
    operands: list
    callee: Any


@dataclass(eq=False)
class Typing:
    """One function specialised on `argtypes`: the typed IR copy, `ret` (the joined
    return type) and `calls` (call statement var -> `Call`)."""

    ir: IR
    argtypes: tuple
    source: Optional[IR] = None
    ret: Optional[Type] = None
    types: dict = field(default_factory=dict)
    calls: dict = field(default_factory=dict)
    # stmt var -> the registry Impl it uses; ('primal', var) -> the Impl of the library
    # call a `jcall` of a function value runs (jit.pullback.jcalls)
    impls: dict = field(default_factory=dict)
    done: bool = False
    reachable: set = field(default_factory=set)
    static: dict = field(default_factory=dict)
    taint: float = float("inf")
    # this round of `Engine._solve` handed out the guess `ret` to a call (a recursion)
    guessed: bool = False
    writes: bool = False
    # a call site, here or in a callee, runs in the interpreter (jit.pullback.host_jcalls)
    host_pullbacks: bool = False
    returns: bool = True        # some reachable path returns (else every one raises)
    stops: dict = field(default_factory=dict)   # block id -> its call that never returns
    # the source with its loops over differently typed tuple entries unrolled (what a
    # J transform of this signature must start from), or None
    unrolled: Optional[IR] = None
    # stmt var -> its RewriteStatement, applied once typed (all in one retype)
    deferred: dict = field(default_factory=dict)
    _uses: Optional[dict] = field(default=None, repr=False)

    @property
    def key(self) -> tuple:
        return (self.source, self.argtypes)

    def use_counts(self) -> dict:
        """Var -> its number of uses in the typed IR (counted once; typing does not
        change the IR's statements)."""
        if self._uses is None:
            self._uses = use_counts(self.ir)
        return self._uses


class Context:
    """What a rule sees: the engine, the function being typed and the statement."""

    def __init__(self, engine: "Engine", typing: Typing, stmt: Stmt) -> None:
        self.engine = engine
        self.typing = typing
        self.stmt = stmt

    def const(self, operand: Any, default: Any = None) -> Any:
        """The value of a constant operand (a literal, or a value whose type is a
        literal), else `default`."""
        if isinstance(operand, Const):
            return operand.value
        t = self.type_of(operand) if isinstance(operand, Var) else None
        if t == NONE:
            return None          # the only value of its type
        return t.value if isinstance(t, LiteralT) else default

    def is_const(self, operand: Any) -> bool:
        t = self.type_of(operand) if isinstance(operand, Var) else None
        return isinstance(operand, Const) or isinstance(t, LiteralT) or t == NONE

    def type_of(self, operand: Any) -> Optional[Type]:
        return self.engine.operand_type(self.typing, operand)

    def fail(self, why: str) -> None:
        raise TypingError(why)


MAX_UNROLLS = 16      # loops over differently typed tuple entries and spread calls, per function
RULES: dict = {}
# In-place rewrites of the IR copy a Typing owns, before inference: fn(ir) -> None
# (jit.library.built_lists: list displays that a loop appends to)
IR_REWRITES: list = []
# `rewrite(typing, source_copy) -> bool`, tried once a function is typed: True when it
# rewrote the copy, which is then typed instead (jit.library.fusion)
POST_TYPING_REWRITES: list = []
# `handler(ctx, stmt, types) -> Type or None`, asked for a call of a callable that has
# no registry entry (jit.library.numpy_calls.effect_call)
UNTYPED_CALLS: list = []
# `handler(ctx, stmt, types, why) -> Type`, asked for a call of a user function that
# cannot be lowered or typed (`why`): it runs in Python from compiled code, or `why`
# is raised again (jit.pullback.host_jcalls)
CALL_FALLBACKS: list = []
# [object_call]: the function a call of an object (`jit.types.RecordT`) runs, or None
# (jit.library.records: its class's `__call__` bound to it)
OBJECT_CALLS: list = []
# Calls whose result is known at compile time: fn(engine, typing, stmt) -> value | None.
STATIC_CALLS: dict = {}


def rule(*ops: str) -> Callable:
    """Register a type rule for the primitives `ops`."""
    def deco(fn):
        for op in ops:
            RULES[op] = fn
        return fn
    return deco


def _callee_key(f: Any) -> Any:
    try:
        hash(f)
        return f
    except TypeError:
        return None


def lower_function(func: Any) -> IR:
    """The IR of a user function: `lowering.lower` (which caches it on the function),
    with the in-place updates that may be of arrays made explicit
    (`jit.typing.array_updates`): the form its primal code compiles from."""
    return with_explicit_updates(lowering.lower(func))


def is_user_function(f: Any) -> bool:
    """A Python function the JIT compiles itself (not math/numpy/builtins)."""
    if not isinstance(f, pytypes.FunctionType):
        return False
    if getattr(f, "__zygopy_lowered__", False):     # code a transform made
        return True
    from ssair.interpreter import LIBRARY_MODULES
    mod = (getattr(f, "__module__", None) or "").split(".")[0]
    return mod not in LIBRARY_MODULES


def string_like(t: Any) -> bool:
    """A str constant or a StrT (see jit.types.StrT)."""
    return isinstance(t, StrT) or isinstance(t, LiteralT) and type(t.value) is str


def string_values(t: Any) -> frozenset:
    return t.values if isinstance(t, StrT) else frozenset([t.value])


def _static_is_none(a: Optional[Type], b: Optional[Type]) -> Optional[bool]:
    """`x is y` known from the types alone when one side is `none`."""
    if a is None or b is None or (a != NONE and b != NONE):
        return None
    if isinstance(a, LiteralT) or isinstance(b, LiteralT):
        return False        # a constant (typed none when it is None) is not None
    return a == b


def _user_callee(s: Stmt, ts: list) -> bool:
    """Does call (or jcall) `s` call a user function?"""
    f = s.args[0].value if isinstance(s.args[0], Const) else getattr(ts[0], "func", None)
    return is_user_function(f)


def empty_list(t: Any) -> bool:
    """Is `t` the type of `[]` (a list display with nothing in it)?"""
    return isinstance(t, LiteralT) and isinstance(t.value, ListLiteral) and not t.value


def _built_list_join(a: Optional[Type], b: Optional[Type]) -> Optional[Type]:
    """`[]` or a list display of the same entries joined with a built list is that list
    (the loop that appends to it)."""
    if isinstance(b, BuiltListT):
        a, b = b, a
    if isinstance(a, BuiltListT) and (empty_list(b) or b == a or (
            isinstance(b, ListT) and all(e == a.elem for e in b.elems))):
        return a
    return None


def _grows_a_list(a: Optional[Type], b: Optional[Type]) -> bool:
    """Tuples that differ where a list in them became a built list (the env of a loop)."""
    if not (isinstance(a, TupleT) and isinstance(b, TupleT)) or len(a.elems) != len(b.elems):
        return False
    return a != b and any(_built_list_join(x, y) is not None or _grows_a_list(x, y)
                          for x, y in zip(a.elems, b.elems))


def cotangent_join(a: Optional[Type], b: Optional[Type]) -> Optional[Type]:
    """Join where `none` is the zero of any float, int or tuple type."""
    if a is None or a == NONE and b is not None:
        return b
    if b is None or b == NONE or a == b:
        return a
    if isinstance(a, TupleT) and isinstance(b, TupleT) and len(a.elems) == len(b.elems):
        return TupleT(tuple(cotangent_join(x, y) for x, y in zip(a.elems, b.elems)))
    return join(a, b)


class Engine:
    """Holds every signature inferred so far: (IR, argtypes) -> Typing."""

    def __init__(self) -> None:
        self.table: dict = {}
        self.stack: list = []
        self.strict = False      # (see _stmt_type: `[]` operands)

    @compiling
    def infer(self, ir: IR, argtypes: tuple) -> Typing:
        key = (ir, tuple(argtypes))
        t = self.table.get(key)
        if t is None:
            progress.stage("type inference")
        if t is not None:
            if t.done or not self.stack:
                return t
            level = next((k for k, s in enumerate(self.stack) if s is t), None)
            if level is None:     # left unfinished by a solve that gave up
                raise TypingError(f"jit: cannot infer the result type of {ir.name} for "
                                  f"({', '.join(map(str, argtypes))}) (a recursion "
                                  "without a base case?)")
            top = self.stack[-1]  # a recursion: the callee's guess so far
            top.taint = min(top.taint, level)
            t.guessed = True
            return t
        unrolled = None        # the IR with loops over tuples unrolled (jit.typing.unroll)
        for _ in range(MAX_UNROLLS + 1):
            copy = expose_unbound((unrolled or ir).copy())
            for rewrite in IR_REWRITES:
                rewrite(copy)
            t = Typing(copy, tuple(argtypes), ir, unrolled=unrolled)
            self.table[key] = t
            try:
                self._solve(t)
                if t.done and t.deferred:     # rewrites typing asked for, all at once
                    self.table.pop(key, None)
                    unrolled = (unrolled or ir).copy()
                    for need in t.deferred.values():
                        need.apply(unrolled)
                    continue
                return self._rewritten(t, key, unrolled or ir, unrolled)
            except RetypeNeeded as need:    # retype with that loop unrolled, that call spread
                self.table.pop(key, None)
                unrolled = (unrolled or ir).copy()
                if not need.apply(unrolled):
                    raise TypingError(f"jit: cannot type a statement in {ir.name}: "
                                      f"{need}") from None
            except BaseException:
                self.table.pop(key, None)
                raise
        raise TypingError(f"jit: {ir.name} has more loops over tuples than are unrolled")

    def _rewritten(self, t: Typing, key: tuple, source: IR, unrolled: Optional[IR]) -> Typing:
        """`t`, or the typing of its source as a post-typing rewrite changed it (when
        that types; `t` stands otherwise)."""
        if not t.done or self.table.get(key) is not t:
            return t
        for rewrite in POST_TYPING_REWRITES:
            copy = expose_unbound(source.copy())
            for pre in IR_REWRITES:
                pre(copy)
            if not rewrite(t, copy):
                continue
            t2 = Typing(copy, t.argtypes, t.source, unrolled=unrolled)
            self.table[key] = t2
            try:
                self._solve(t2)
            except TypingError:
                t2 = None
            if t2 is None or not t2.done:
                self.table[key] = t
                return t
            t = t2
        return t

    def _solve(self, t: Typing) -> None:
        if len(t.argtypes) != len(t.ir.args):
            raise TypingError(f"{t.ir.name} takes {len(t.ir.args)} arguments "
                              f"({len(t.argtypes)} given)")
        refuse_exceptions(t)
        for a, at in zip(t.ir.args, t.argtypes):   # a constant flag the caller passed
            if isinstance(at, LiteralT) and isinstance(at.value, bool):
                t.static[a.var] = at.value
        level = len(self.stack)
        self.stack.append(t)
        try:
            for _ in range(MAX_ROUNDS):
                before = t.ret
                t.taint, t.guessed = float("inf"), False
                self._run(t)
                # (a round converges, `_run`; it is run again only when a call read
                # the guess `before`, which a recursion's calls are typed from)
                if t.ret == before or not t.guessed:
                    break
        finally:
            self.stack.pop()
        if t.taint < level:  # read the guess of a caller still in progress: redo later
            self.table.pop(t.key, None)
            top = self.stack[-1]
            top.taint = min(top.taint, t.taint)
            return
        self._finish(t)

    def _run(self, t: Typing) -> None:
        """Type the blocks reachable from the entry; a branch on a condition known
        at compile time (`isinstance` of a typed value) only reaches its target."""
        for a, at in zip(t.ir.args, t.argtypes):
            t.types[a.var] = at
        t.reachable = {t.ir.entry.id}
        by_id = {b.id: b for b in t.ir.blocks}
        one_round = flows_forward(t.ir)
        changed = True
        rounds = 0
        while changed and rounds < MAX_ROUNDS:
            changed = False
            rounds += 1
            pending = False     # something typed on what it has so far (or not at all)
            for b in t.ir.blocks:
                if b.id not in t.reachable:
                    continue
                for p in b.phis:
                    pending |= not self._incoming_typed(t, p)
                    changed |= self._update(t, p, self._phi_type(t, p, b.id, by_id))
                for s in b.stmts:
                    typed, moved = self._stmt_or_later(t, s, by_id)
                    pending |= typed is None or moved
                    changed |= self._update(t, s, typed) | moved
                    self._note_static(t, s)
                    if self._never_returns(t, s):
                        t.stops[b.id] = s
                        break
                for succ in self._live_successors(t, b):
                    if succ not in t.reachable:
                        t.reachable.add(succ)
                        changed = True
            if one_round and not pending:
                break   # (no edge back: a second round would read the very same types)
        t.ret = self._return_type(t)

    def _incoming_typed(self, t: Typing, p: Phi) -> bool:
        """Has every value phi `p` gets from a reachable block a type yet?"""
        return all(self.operand_type(t, v) is not None for pred, v in p.incoming.items()
                   if pred in t.reachable and not is_unbound(v))

    def _note_static(self, t: Typing, s: Stmt) -> None:
        """Record values known at compile time (isinstance, not/truth of those)."""
        if s.var in t.static:
            return
        if s.op == "call" and s.var in t.calls:
            fn = STATIC_CALLS.get(_callee_key(t.calls[s.var].callee))
            if fn is not None:
                val = fn(self, t, s)
                if val is not None:
                    t.static[s.var] = val
        elif s.op == "pop" and s.var.id in t.ir.meta.get("pop_static", {}):
            t.static[s.var] = t.ir.meta["pop_static"][s.var.id]
        elif s.op == "getitem" and t.ir.meta.get("env_static") and len(t.ir.args) > 1 \
                and s.args[0] == t.ir.args[1].var and isinstance(s.args[1], Const) \
                and s.args[1].value in t.ir.meta["env_static"]:
            # an adjoint's read of a forward env entry known at compile time
            t.static[s.var] = t.ir.meta["env_static"][s.args[1].value]
        elif s.op in ("eq", "ne") and all(isinstance(self.static_value(t, a), int)
                                          for a in s.args):
            same = self.static_value(t, s.args[0]) == self.static_value(t, s.args[1])
            t.static[s.var] = same if s.op == "eq" else not same
        elif s.op in ("eq", "ne") and all(self._one_string(t, a) is not None for a in s.args):
            same = self._one_string(t, s.args[0]) == self._one_string(t, s.args[1])
            t.static[s.var] = same if s.op == "eq" else not same
        elif s.op in ("is", "isnot") and isinstance(s.args[0], Var) and s.args[0] == s.args[1]:
            t.static[s.var] = s.op == "is"
        elif s.op in ("is", "isnot"):
            v = _static_is_none(self.operand_type(t, s.args[0]), self.operand_type(t, s.args[1]))
            if v is not None and (v or not t.ir.meta.get("none_is_zero")):
                # (where None is a zero, a number may be None: only `None is None` holds)
                t.static[s.var] = v if s.op == "is" else not v
        elif s.op in ("not", "truth") and self.operand_type(t, s.args[0]) == NONE:
            t.static[s.var] = s.op == "not"      # `if ax:` with ax None: never taken
        elif s.op in ("not", "truth") and self.static_value(t, s.args[0]) is not None:
            v = bool(self.static_value(t, s.args[0]))
            t.static[s.var] = (not v) if s.op == "not" else v

    def _one_string(self, t: Typing, a: Any) -> Any:
        """The one string operand `a` can hold (a constant, a str specialised on)."""
        at = self.operand_type(t, a)
        if string_like(at) and len(string_values(at)) == 1:
            return next(iter(string_values(at)))
        return None

    def static_value(self, t: Typing, a: Any) -> Any:
        if isinstance(a, Const):
            return a.value if isinstance(a.value, (bool, int, float)) else None
        return t.static.get(a)

    @staticmethod
    def _never_returns(t: Typing, s: Stmt) -> bool:
        """`s` calls a user function typed already whose every path raises."""
        call = t.calls.get(s.var) if s.op == "call" else None
        return call is not None and call.target is not None and call.target.done \
            and not call.target.returns

    def _live_successors(self, t: Typing, b) -> list:
        if b.id in t.stops:
            return []
        term = b.term
        if isinstance(term, Branch):
            v = self.static_value(t, term.cond)
            if isinstance(v, bool):
                return [term.then if v else term.else_]
        return b.successors()

    def _stmt_or_later(self, t: Typing, s: Stmt, by_id: dict) -> tuple:
        """(type of `s` or None, whether a phi it reads moved on).  A statement that
        fails on the type a phi has so far, where the phi's incoming values have
        moved on (a loop's `acc = 0` before `acc = acc + x` made it an array), is
        typed in a later round, once the phi's join has spoken (or raised)."""
        try:
            return self._stmt_type(t, s), False
        except RetypeNeeded:
            raise
        except TypingError:
            if not self._phis_move(t, s, by_id):
                raise
            return None, True

    def _phis_move(self, t: Typing, s: Stmt, by_id: dict) -> bool:
        reads = {a for a in s.operands() if isinstance(a, Var)}
        # (and one step further back: `sum(loop_items(acc))` reads the phi `acc` too)
        defs = {d.var: d for b in t.ir.blocks for d in b.stmts if d.var in reads}
        reads |= {a for d in defs.values() for a in d.operands() if isinstance(a, Var)}
        moved = False
        for b in t.ir.blocks:
            for p in b.phis:
                if p.var in reads and b.id in t.reachable:
                    moved |= self._update(t, p, self._phi_type(t, p, b.id, by_id))
        return moved

    def _update(self, t: Typing, d: Any, new: Optional[Type]) -> bool:
        if new is None:
            return False
        old = t.types.get(d.var)
        try:
            merged = self.join(t, old, new)
        except TypingError as e:
            raise TypingError(f"jit: {describe(t, d)}: {e}") from None
        if merged == old:
            return False
        t.types[d.var] = merged
        return True

    def _phi_type(self, t: Typing, p: Phi, here: Any = None, by_id: Any = None
                  ) -> Optional[Type]:
        """The join of the incoming values along live edges (a reachable predecessor
        whose branch here is decided against it contributes nothing)."""
        out = None
        seen = []
        for pred, v in p.incoming.items():
            if pred not in t.reachable or is_unbound(v):    # see jit.typing.unbound
                continue
            if by_id is not None and here not in self._live_successors(t, by_id[pred]):
                continue
            vt = self.operand_type(t, v)
            seen.append((pred, vt))
            if vt is not None:
                try:
                    out = self.join(t, out, vt)
                except TypingError as e:
                    seen += [(q, self.operand_type(t, w)) for q, w in p.incoming.items()
                             if q not in {x for x, _ in seen} and q in t.reachable
                             and not is_unbound(w)]
                    msg = f"jit: {describe(t, p)}: {e}"
                    need = choice_needed(p, seen, msg, is_user_function) or \
                        carried_unroll(t.ir, here, lambda a: self.operand_type(t, a), msg)
                    raise (need or TypingError(msg)) from None
        return out

    def _stmt_type(self, t: Typing, s: Stmt) -> Optional[Type]:
        ts = [self.operand_type(t, a) for a in s.args]
        if any(x is None for x in ts) or any(self.operand_type(t, v) is None
                                             for v in s.kwargs.values()):
            return None
        kws = [self.operand_type(t, v) for v in s.kwargs.values()]
        if not formatted_use(s, ts + kws, lambda f: REGISTRY.for_callee(f) is not None):
            raise TypingError(f"jit: cannot compile {describe(t, s)}: an f-string is compiled "
                              "only as an argument of print or of a call made for its effect "
                              "(a logger); other uses of the string run in the interpreter")
        if not self.strict and s.op in ("call", "jcall") and _user_callee(s, ts) and \
                any(empty_list(x) for x in ts[1:] + kws):
            return None   # a user function given `[]` that a loop before appends to is
            # typed once the list's type is known (else it is typed for `[]` and fails)
        try:
            return type_primitive(Context(self, t, s), s.op, s, ts)
        except RetypeNeeded:
            raise
        except TypingError as e:
            if any(empty_list(x) for x in ts) and not self.strict:
                return None   # `[]` before the loop that appends to it is typed (_finish)
            if internal_call(s) is not None and names_internals(str(e)):
                # the detail (a statement inside the helper) would name zygopy's own code
                raise TypingError(f"jit: cannot compile {describe(t, s)}") from None
            if str(e).startswith("jit: "):
                raise
            raise TypingError(f"jit: cannot type {describe(t, s)}: {e}") from None

    def _return_type(self, t: Typing) -> Optional[Type]:
        out = None
        for b in t.ir.blocks:
            if isinstance(b.term, Return) and b.id in t.reachable and b.id not in t.stops:
                out = self.join(t, out, self.operand_type(t, b.term.value))
        if holds_formatted(out):
            raise TypingError("jit: returning an f-string is not compiled (it is compiled "
                              "only as an argument of print or of a call made for its effect)")
        return out

    def join(self, t: Typing, a: Optional[Type], b: Optional[Type]) -> Optional[Type]:
        """`types.join`; in IR marked `meta["none_is_zero"]` (cotangent code, where
        None is the zero cotangent) None also joins with numbers and tuples."""
        if string_like(a) and string_like(b):
            return StrT(string_values(a) | string_values(b))
        built = _built_list_join(a, b)
        if built is not None:
            return built
        if _grows_a_list(a, b):
            return TupleT(tuple(self.join(t, x, y) for x, y in zip(a.elems, b.elems)))
        if t.ir.meta.get("none_is_zero"):
            return cotangent_join(a, b)
        return join(a, b)

    def operand_type(self, t: Typing, a: Any) -> Optional[Type]:
        if isinstance(a, Var):
            return t.types.get(a)
        if isinstance(a, Packed):
            parts = [self.operand_type(t, x) for x in a.operands]
            if any(p is None for p in parts):
                return None
            return TupleT(tuple(parts)) if a.keys is None else DictT(tuple(parts), keys=a.keys)
        try:
            t = typeof(a.value)
        except TypingError:
            return LiteralT(a.value)
        if isinstance(t, RecordT) and not t.is_tuple:
            # an object read from a global is the live object: its methods run in Python
            # for their effect, its data attributes and functions are read as constants
            # (jit.library.records), guarded (lowering.guards)
            return LiteralT(a.value)
        return t

    def _prune(self, t: Typing) -> None:
        """Drop blocks never reached and fold branches decided at compile time; a
        block ends at a call that never returns (`raise` of its result, which nothing
        reaches: see `raised_before`)."""
        live = [b for b in t.ir.blocks if b.id in t.reachable]
        for b in live:
            stop = t.stops.get(b.id)
            if stop is not None:
                b.stmts = b.stmts[:b.stmts.index(stop) + 1]
                b.term = Raise(stop.var, stop.line)
        for b in live:
            if isinstance(b.term, Branch) and isinstance(self.static_value(t, b.term.cond), bool):
                b.term = Goto(self._live_successors(t, b)[0], b.term.line)
        t.ir.blocks = live
        preds = t.ir.predecessors()
        for b in live:  # an edge of a folded branch is gone too, not only dead blocks
            for p in b.phis:
                p.incoming = {k: v for k, v in p.incoming.items() if k in preds[b.id]}

    def _finish(self, t: Typing) -> None:
        self._prune(t)
        for d in t.ir.definitions():
            ty = t.types.get(d.var)
            if ty is None and isinstance(d, Stmt):     # the error a `[]` operand deferred
                self.strict = True
                try:
                    self._stmt_type(t, d)
                finally:
                    self.strict = False
            if ty is None:
                raise TypingError(f"jit: cannot infer the type of {describe(t, d)} "
                                  "(it depends on a value that never gets a type, "
                                  "such as a recursion without a base case)")
            d.type = ty
        for b in t.ir.blocks:
            if isinstance(b.term, Branch) and self.operand_type(t, b.term.cond) != BOOL:
                raise TypingError(f"jit: branch condition of block #{b.id} in "
                                  f"{t.ir.name} is not a bool")
        t.returns = any(isinstance(b.term, Return) for b in t.ir.blocks)
        if t.ret is None:
            t.ret = NONE
        t.done = True
        for c in t.calls.values():
            if c.target is not None and not c.target.done:
                c.target = self.infer(c.target.source, c.target.argtypes)


# ---------------------------------------------------------------------------
# Calls and closures.

@rule("make_closure")
def _t_make_closure(ctx: Context, s: Stmt, ts: list) -> Type:
    f = ctx.const(s.args[0])
    if f is None:
        ctx.fail("make_closure needs a constant function")
    if s.kwargs and (set(s.kwargs) != {"defaults"} or getattr(f, "__defaults__", None)):
        ctx.fail("default arguments computed at run time (make_closure defaults=) "
                 "are not supported")
    # Defaults computed at run time are bound as operands where the lowering sees the
    # call (`lowering.ops_call.bind`); the function itself holds none, so a call
    # elsewhere that leaves such an argument out fails to bind rather than guess.
    for x in ts[1:]:
        if isinstance(x, LiteralT):
            ctx.fail(f"captured value {x} is not supported")
    return ClosureT(f, tuple(ts[1:]))


def type_primitive(ctx: Context, op: str, s: Stmt, ts: list) -> Type:
    """Type primitive `op` of `s`: the registry's impl for these operand types (arrays,
    strings, ...) when one matches, else the core rule (`jit.typing.primitives`)."""
    e = REGISTRY.get(op)
    impl = e.pick(ctx, s, ts) if e is not None else None
    if impl is not None:
        return REGISTRY.type_with(e, impl, ctx, s, ts)
    ctx.typing.impls.pop(s.var, None)
    fn = RULES.get(op)
    if fn is None:
        raise TypingError(uncompiled_construct(ctx.typing, s))
    return fn(ctx, s, ts)


@rule("call")
def _t_call(ctx: Context, s: Stmt, ts: list) -> Type:
    callee = ts[0]
    if isinstance(callee, ClosureT):     # (a bound array method names its options)
        return _user_call(ctx, s, callee.func, list(callee.captured), closure=True,
                          options=getattr(callee.func, "__zygopy_options__", ()))
    call = OBJECT_CALLS[0](callee) if OBJECT_CALLS else None
    if call is not None:     # `layer(x)`: its class's `__call__`, the object its receiver
        return _user_call(ctx, s, call, [callee], closure=True)
    if not isinstance(callee, FunctionT):
        ctx.fail(f"calling a value of type {callee} is not supported")
    f = callee.func
    if isinstance(f, IR):
        return _user_call(ctx, s, f, [], closure=False)
    if is_user_function(f):
        try:
            return _user_call(ctx, s, f, [], closure=False)
        except (TypingError, lowering.UnsupportedError) as why:
            if not CALL_FALLBACKS:
                raise
            return CALL_FALLBACKS[0](ctx, s, ts, why)
    need = rewrite_needed(f, s, ts)
    if need is not None:
        raise need
    entry = REGISTRY.for_callee(f)
    if entry is None and _rule_helper(f):  # plain-Python helpers of the derivative rules
        return _user_call(ctx, s, f, [], closure=False)
    if entry is None:
        for untyped in UNTYPED_CALLS:
            t = untyped(ctx, s, ts)
            if t is not None:
                return t
        from ssair.printer import object_name
        ctx.fail(f"the JIT has no rule for calling {object_name(f)}")
    ctx.typing.calls[s.var] = Call(None, list(s.args[1:]), f)
    return REGISTRY.type_stmt(entry, ctx, s, ts if entry.key is type(f) else ts[1:])


def _rule_helper(f: Any) -> bool:
    """A plain function of the adjoint package (derivative rules call them)."""
    return type(f) is pytypes.FunctionType and (f.__module__ or "").startswith("adjoint.")


def user_call(ctx: Context, s: Stmt, f: Any, options: tuple = ()) -> Optional[Type]:
    """Type a call statement as a native call of the user function `f` (public for
    registry entries that forward to a wrapped function).  `options`: parameters of
    `f` specialised on the call's constant operand (`option_type`)."""
    return _user_call(ctx, s, f, [], closure=False, options=options)


def option_type(ctx: Context, a: Any) -> Type:
    """The type an option parameter (a rule's axis) is specialised on: a constant int
    or tuple of ints as a literal, which the numpy calls in the callee read at compile
    time; any other operand as `call_argument_type` gives it."""
    v = a.value if isinstance(a, Const) else None
    if type(v) is int or isinstance(v, tuple) and all(type(x) is int for x in v):
        return LiteralT(v)
    return call_argument_type(ctx, a)


def _argument_type(t: Type) -> Type:
    """A constant string argument is passed as a string (its interned id)."""
    if isinstance(t, LiteralT) and isinstance(t.value, str):
        return StrT(frozenset((t.value,)))
    if isinstance(t, LiteralT) and not isinstance(t.value, (type, pytypes.ModuleType)):
        try:        # a global object passed on: an argument like any other object
            record = typeof(t.value)
        except TypingError:
            return t
        return record if isinstance(record, RecordT) else t
    return t


def call_argument_type(ctx: Context, a: Any) -> Type:
    """The type a user function is specialised on for operand `a`: a constant True or
    False (`keepdims=False`) as a literal, so that the callee's branches on it are
    decided at compile time (`Engine._solve` records it as static)."""
    if isinstance(a, Const) and type(a.value) is bool:
        return LiteralT(a.value)
    return _argument_type(ctx.type_of(a))


def _passable_literal(t: Type) -> bool:
    """Literals a user function may be specialised on: flags, constant lists, and an
    option a caller was specialised on (`option_type`) passed on."""
    v = t.value
    return isinstance(v, (bool, ListLiteral)) or type(v) is int or \
        isinstance(v, tuple) and all(type(x) is int for x in v)


def _user_call(ctx: Context, s: Stmt, f: Any, captured: list, closure: bool,
               options: tuple = ()) -> Type:
    ir = f if isinstance(f, IR) else lower_function(f)
    operands = bind_call(ctx, ir, f, s)
    lead = [s.args[0]] * len(captured)
    names = [a.name for a in ir.args[ir.nfree:]] if options else []
    opts = [k < len(names) and names[k] in options for k in range(len(operands))]
    argtypes = tuple(captured) + tuple(option_type(ctx, a) if o else call_argument_type(ctx, a)
                                       for a, o in zip(operands, opts))
    for a, o in zip(argtypes[len(captured):], opts):
        if isinstance(a, LiteralT) and not o and not _passable_literal(a):
            ctx.fail(f"argument {a} is not supported")
    target = ctx.engine.infer(ir, argtypes)
    ctx.typing.calls[s.var] = Call(target, lead + operands, f)
    ctx.typing.writes |= target.writes
    return target.ret


def infer(ir: IR, argtypes: tuple, engine: Optional[Engine] = None) -> Typing:
    """Type `ir` for `argtypes`; raises TypingError naming the value, op and line."""
    return (engine or ENGINE).infer(ir, tuple(argtypes))


ENGINE = Engine()

