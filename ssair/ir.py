"""The SSA IR: functions made of basic blocks, phi nodes and statements.

A function (`IR`) owns an ordered list of `Block`s; block ids are small integers and
the first block is the entry.  A block holds its phi nodes, its statements and one
terminator.  Every phi and statement defines exactly one SSA value, written `%n`;
function arguments are SSA values too.  Operands are either `Var`s or `Const`s.

Terminators:
  * `Goto(target)`                      prints as `goto #k`
  * `Branch(cond, then, else_)`         prints as `goto #else if not %c` (and `goto #then`
                                        on the next line unless `then` is the next block)
  * `Return(value)`                     prints as `return %v`
  * `Raise(value)`                      prints as `raise %v`: raises the exception %v
  * `Goto(target, unwind=h)`            prints as `goto #k unwind #h`: enter the
                                        *protected* block #k; if one of its statements
                                        (or its `raise`) raises, control goes to the
                                        handler #h instead, along the edge from this
                                        block (so #h's phis read this block's values),
                                        and #h's first statement `caught()` is the
                                        exception.  The statements of #k that ran are
                                        not undone; the lowering puts at most one
                                        statement that can raise in a protected block.

Phi semantics are parallel: all phis of a block read their incoming values as they
were at the end of the predecessor, before any phi of the block is assigned.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Union


@dataclass(frozen=True)
class Var:
    """A reference to the SSA value `%id`."""

    id: int

    def __repr__(self) -> str:
        return f"%{self.id}"


@dataclass(frozen=True)
class Const:
    """A literal operand: int, float, bool, None, str, a tuple of those, or any
    Python object resolved at lowering time (functions, modules' attributes)."""

    value: Any

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Const):
            return NotImplemented
        a, b = self.value, other.value
        return type(a) is type(b) and _same(a, b)

    def __hash__(self) -> int:
        try:
            return hash((type(self.value), self.value))
        except TypeError:
            return id(self.value)

    def __repr__(self) -> str:
        return TEXT_OF["const"](self.value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float):
        return a == b and str(a) == str(b) or (a != a and b != b)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(type(x) is type(y) and _same(x, y) for x, y in zip(a, b))
    try:
        return bool(a is b or a == b)
    except Exception:
        return a is b


Operand = Union[Var, Const]

# How `Const` and `IR` print: `ssair.printer` installs its `format_const` and
# `format_ir` here when imported (ssair/__init__ imports it, so every user of ssair
# prints listings); these stand-ins are never seen outside the package's own import.
TEXT_OF: dict = {
    "const": lambda value: f"Const({value!r})",
    "ir": lambda ir: f"<IR {ir.name}>",
}


@dataclass(eq=False)
class Stmt:
    """`%var = op(args..., kw=...)`: one primitive application defining one value.

    `op` names an entry of `ssair.primitives.PRIMITIVES`.  `kwargs` holds keyword
    operands of a `call` in order.  `line` is the source line, `name` the source
    variable the value was assigned to (if any), `type` the inferred type (if any).
    """

    var: Var
    op: str
    args: list
    kwargs: dict = field(default_factory=dict)
    line: Optional[int] = None
    name: Optional[str] = None
    type: Any = None

    def operands(self) -> list:
        return list(self.args) + list(self.kwargs.values())

    def map_operands(self, fn) -> None:
        self.args = [fn(a) for a in self.args]
        self.kwargs = {k: fn(v) for k, v in self.kwargs.items()}


@dataclass(eq=False)
class Phi:
    """`%var = φ (#b1 => v1, #b2 => v2)`: one incoming operand per predecessor block."""

    var: Var
    incoming: dict  # predecessor block id -> Operand, in print order
    line: Optional[int] = None
    name: Optional[str] = None
    type: Any = None

    op = "phi"

    def operands(self) -> list:
        return list(self.incoming.values())

    def map_operands(self, fn) -> None:
        self.incoming = {b: fn(v) for b, v in self.incoming.items()}


@dataclass(eq=False)
class Goto:
    """Unconditional jump to block `target`; with `unwind`, `target` is protected by
    the handler block `unwind` (see the module docstring)."""

    target: int
    line: Optional[int] = None
    unwind: Optional[int] = None

    def successors(self) -> list:
        return [self.target] if self.unwind is None else [self.target, self.unwind]

    def operands(self) -> list:
        return []

    def map_operands(self, fn) -> None:
        pass

    def retarget(self, old: int, new: int) -> None:
        if self.target == old:
            self.target = new
        if self.unwind == old:
            self.unwind = new


@dataclass(eq=False)
class Branch:
    """Jump to `then` when `cond` is true, to `else_` otherwise.  `cond` must be a
    bool (lowering inserts `truth(x)` for other values)."""

    cond: Operand
    then: int
    else_: int
    line: Optional[int] = None

    def successors(self) -> list:
        return [self.then, self.else_] if self.then != self.else_ else [self.then]

    def operands(self) -> list:
        return [self.cond]

    def map_operands(self, fn) -> None:
        self.cond = fn(self.cond)

    def retarget(self, old: int, new: int) -> None:
        if self.then == old:
            self.then = new
        if self.else_ == old:
            self.else_ = new


@dataclass(eq=False)
class _Exit:
    """A terminator that leaves the function with `value`."""

    value: Operand
    line: Optional[int] = None

    def successors(self) -> list:
        return []

    def operands(self) -> list:
        return [self.value]

    def map_operands(self, fn) -> None:
        self.value = fn(self.value)

    def retarget(self, old: int, new: int) -> None:
        pass


@dataclass(eq=False)
class Return(_Exit):
    """Return `value` from the function."""


@dataclass(eq=False)
class Raise(_Exit):
    """Raise the exception `value` (to the handler of this block when it is
    protected, else out of the function)."""


Terminator = Union[Goto, Branch, Return, Raise]


@dataclass(eq=False)
class Block:
    """A basic block: phis, then statements, then exactly one terminator."""

    id: int
    phis: list = field(default_factory=list)
    stmts: list = field(default_factory=list)
    term: Optional[Terminator] = None

    def successors(self) -> list:
        return self.term.successors() if self.term is not None else []

    def definitions(self) -> Iterator:
        yield from self.phis
        yield from self.stmts


@dataclass(eq=False)
class Arg:
    """A function argument: defines `var`; `name` is the Python parameter name."""

    var: Var
    name: str
    type: Any = None


@dataclass(eq=False)
class IR:
    """One function in SSA form.

    `args` are the positional parameters, preceded by the closure's free variables
    when `nfree > 0` (the first `nfree` args are the captured values, in the order of
    `func.__code__.co_freevars`).  `func` is the Python function it came from (if any),
    `file`/`firstline` locate it, `meta` carries pass-specific annotations.
    """

    name: str
    args: list = field(default_factory=list)
    blocks: list = field(default_factory=list)
    nfree: int = 0
    func: Any = None
    file: Optional[str] = None
    firstline: Optional[int] = None
    next_id: int = 1
    meta: dict = field(default_factory=dict)

    # -- construction -------------------------------------------------------
    def new_var(self) -> Var:
        v = Var(self.next_id)
        self.next_id += 1
        return v

    def add_arg(self, name: str, type: Any = None) -> Var:
        v = self.new_var()
        self.args.append(Arg(v, name, type))
        return v

    def add_block(self, id: Optional[int] = None) -> Block:
        if id is None:
            id = max((b.id for b in self.blocks), default=0) + 1
        b = Block(id)
        self.blocks.append(b)
        return b

    def push(self, block: Block, op: str, *args, line=None, name=None, kwargs=None, type=None) -> Var:
        """Append `op(args...)` to `block` and return its value."""
        v = self.new_var()
        kw = {k: as_operand(x) for k, x in (kwargs or {}).items()}
        block.stmts.append(Stmt(v, op, [as_operand(a) for a in args], kw, line, name, type))
        return v

    def add_phi(self, block: Block, incoming: dict, line=None, name=None) -> Var:
        v = self.new_var()
        block.phis.append(Phi(v, {b: as_operand(x) for b, x in incoming.items()}, line, name))
        return v

    # -- queries --------------------------------------------------------------
    @property
    def entry(self) -> Block:
        return self.blocks[0]

    def block(self, id: int) -> Block:
        for b in self.blocks:
            if b.id == id:
                return b
        raise KeyError(f"{self.name}: no block #{id}")

    def block_map(self) -> dict:
        return {b.id: b for b in self.blocks}

    def predecessors(self) -> dict:
        """Block id -> list of predecessor ids (in block order, without repeats)."""
        preds = {b.id: [] for b in self.blocks}
        for b in self.blocks:
            for s in b.successors():
                if s in preds and b.id not in preds[s]:
                    preds[s].append(b.id)
        return preds

    def definitions(self) -> Iterator:
        """All Args, Phis and Stmts in order."""
        yield from self.args
        for b in self.blocks:
            yield from b.definitions()

    def defs_by_var(self) -> dict:
        return {d.var: d for d in self.definitions()}

    def uses(self) -> Iterator:
        """(user, operand) pairs for every operand of every phi, statement, terminator."""
        for b in self.blocks:
            for d in b.definitions():
                for a in d.operands():
                    yield d, a
            if b.term is not None:
                for a in b.term.operands():
                    yield b.term, a

    def copy(self) -> "IR":
        """A deep copy of the structure (constant values are shared)."""
        new = IR(self.name, [Arg(a.var, a.name, a.type) for a in self.args], [], self.nfree,
                 self.func, self.file, self.firstline, self.next_id, dict(self.meta))
        for b in self.blocks:
            nb = Block(b.id)
            nb.phis = [Phi(p.var, dict(p.incoming), p.line, p.name, p.type) for p in b.phis]
            nb.stmts = [Stmt(s.var, s.op, list(s.args), dict(s.kwargs), s.line, s.name, s.type)
                        for s in b.stmts]
            nb.term = _copy_term(b.term)
            new.blocks.append(nb)
        return new

    def replace_uses(self, mapping: dict) -> None:
        """Rewrite every operand `Var` found in `mapping` (transitively)."""
        def sub(a):
            seen = 0
            while isinstance(a, Var) and a in mapping and seen < 10_000:
                a = mapping[a]
                seen += 1
            return a
        for b in self.blocks:
            for d in b.definitions():
                d.map_operands(sub)
            if b.term is not None:
                b.term.map_operands(sub)

    def __str__(self) -> str:
        return TEXT_OF["ir"](self)

    __repr__ = __str__


def _copy_term(t):
    if t is None:
        return None
    if isinstance(t, Goto):
        return Goto(t.target, t.line, t.unwind)
    if isinstance(t, Branch):
        return Branch(t.cond, t.then, t.else_, t.line)
    return type(t)(t.value, t.line)


def as_operand(x: Any) -> Operand:
    """Wrap a Python value as a `Const` unless it already is an operand."""
    return x if isinstance(x, (Var, Const)) else Const(x)
