"""The lowering driver: walks the bytecode blocks in reverse postorder, simulates
the operand stack, and hands opcodes to the handler table `lowering.handlers.HANDLERS`
(filled by the `ops_*` modules with `@handles`).

Every bytecode block gets one IR block (more when an opcode needs to split it,
like FOR_ITER or a dynamic-step `range`).  Stack values that cross an edge go
through SSA as variables `("$s", k)`, so values left on the stack by `and`/`or`
and conditional expressions get phis like locals do; markers (NULL, loop state)
travel in the per-block stack shape instead.
"""
from __future__ import annotations

import inspect
import sys

from ssair.ir import IR, Branch, Const, Goto, Raise, Return, Var
from ssair.ssabuild import SSABuilder

from .closures import make_cells
from .errors import REFUSED_OPCODES, UnsupportedError
from .errstate_blocks import drop_errstate_blocks
from .handlers import HANDLERS
from .materialize import materialize
from .reader import CodeReader, param_names
from .runtime import UNBOUND, check_bound, missing_name, unbound_local
from .values import EXHAUSTED, LASTI, NULL, CaughtPart, ExcInfo, ForState, Lazy

PY = sys.version_info[:2]
BOOL_OPS = {"lt", "le", "gt", "ge", "eq", "ne", "is", "isnot", "in", "notin", "not", "truth"}


LOOP_CALLEES = (range, enumerate, zip, reversed)


def is_marker(v) -> bool:
    """Values carried across edges in the stack shape rather than through SSA: the
    markers, and the constant `range`, `enumerate`, `zip` or `reversed` waiting for
    its call (`zip([... for ...], ys)` crosses the comprehension's loop: its call
    must still see which callable it is, to become a counter loop)."""
    return v is NULL or v is EXHAUSTED or v is LASTI or isinstance(v, (ForState, ExcInfo, CaughtPart)) \
        or isinstance(v, Const) and any(v.value is f for f in LOOP_CALLEES)


class Lowerer:
    """Lowers one Python function to an `ssair.IR`."""

    def __init__(self, func, cells: frozenset = frozenset()):
        self.func = func
        self.code = func.__code__
        self.qualname = f"{func.__module__}.{func.__qualname__}"
        self.reader = CodeReader(func, self.qualname)
        self.ir = IR(func.__qualname__, func=func, file=self.code.co_filename,
                     firstline=self.code.co_firstlineno)
        self.ssa = SSABuilder(self.ir, default=_unbound, phi_name=_local_name)
        self.line = self.code.co_firstlineno
        self.bools, self.ints = set(), set()
        self.known_funcs = {}      # Var of a make_closure -> the Python function
        self.known_defaults = {}   # Var of a make_closure -> (its run-time defaults, count)
        self.def_of = {}           # Var -> Stmt
        self.shapes = {}           # bytecode block -> stack shape at entry
        self.pending = dict(self.reader.in_edges)
        self.chains = {}
        self.kwnames = None
        self.counters = 0
        self.prologues = {}        # bytecode block -> action run at its head
        self.cells = set(cells)    # cell variables kept in real cells (lowering.closures)
        self.free_cells = set(getattr(func, "__zygopy_cells__", ()))
        self.self_name = getattr(func, "__zygopy_self__", None)   # lowering.closures
        self.cell_of = {}          # cell or free variable name -> Var of its cell
        self.handler = None        # (handler block, depth, lasti) in force, or None
        self.stopped = False       # the current bytecode block raises before its end
        self.prot = {}             # IR block id -> handler bytecode block protecting it
        self.fresh = None          # the protected IR block nothing has run in yet
        self.setup_depth = {}      # 3.10: handler bytecode block -> stack depth at SETUP
        self.entered = set()       # handler blocks that have an exception edge
        self.last_local = None     # (name, value) of the last local read (ops_call.attribute)
        self.restores = {}         # 3.12+: local -> (LOAD_FAST_AND_CLEAR's value, was assigned)

    # -- driver -------------------------------------------------------------
    def run(self) -> IR:
        self.make_blocks()
        self.make_args()
        for idx in self.reader.rpo:
            if idx in self.shapes:
                self.lower_block(idx)
            else:
                self.skip_block(idx)
        self.ssa.finish()
        self.renumber()
        drop_errstate_blocks(self.ir)
        return self.ir

    def make_blocks(self) -> None:
        self.entry = None
        if self.pending[0] > 0:
            self.entry = self.new_ir_block()
        self.irb = {i: self.new_ir_block() for i in sorted(self.reader.reachable)}
        if self.entry is None:
            self.entry = self.irb[0]
        else:
            self.entry.term = Goto(self.irb[0].id)
            self.ssa.add_pred(self.irb[0], self.entry)
        self.ssa.seal(self.entry)
        self.shapes[0] = []

    def new_ir_block(self):
        b = self.ir.add_block()
        self.ssa.add_block(b)
        return b

    def make_args(self) -> None:
        code = self.code
        names = list(code.co_freevars) + param_names(code)
        if code.co_flags & inspect.CO_VARARGS:
            self.ir.meta["varargs"] = code.co_argcount     # printed `*name`
        if code.co_flags & inspect.CO_VARKEYWORDS:         # printed `**name`, the last
            self.ir.meta["varkw"] = len(param_names(code)) - 1
        self.ir.nfree = len(code.co_freevars)
        for name in names:
            self.ssa.write(name, self.entry, self.ir.add_arg(name))
        if self.cells or self.free_cells:
            self.block = self.entry
            make_cells(self)

    def lower_block(self, idx: int) -> None:
        bb = self.reader.blocks[idx]
        self.bindex = idx
        self.block = self.irb[idx]
        self.chains[idx] = [self.block]
        self.line = bb.first_line or self.line
        self.ssa.phi_line[self.block.id] = self.line
        self.stack = [m if m is not None else self.ssa.read(("$s", k), self.block)
                      for k, m in enumerate(self.shapes[idx])]
        self.assigned = set(self.reader.assigned[idx])
        self.handler = None
        if idx in self.prologues:
            self.prologues.pop(idx)()
        self.stopped = False
        for k, ins in enumerate(bb.instrs):
            if ins.lineno is not None:
                self.line = ins.lineno
            self.handler = bb.handlers[k]
            handler = HANDLERS.get(ins.name)
            if handler is None:
                self.refuse(REFUSED_OPCODES.get(ins.name, f"opcode {ins.name}"))
            handler(self, ins)
            if self.stopped:
                self.drop_edges(bb)
                break
        if self.block.term is None:
            self.goto(bb.fall)
        for h in bb.unwinds:
            self.pending[h] -= 1
            if self.pending[h] == 0:
                self.ssa.seal(self.irb[h])

    def skip_block(self, idx: int) -> None:
        """A handler that nothing in its region can raise into (and code reached only
        from such handlers) is dead: it gets no IR, and its successors one edge less."""
        self.ssa.seal(self.irb[idx])
        for s in self.reader.blocks[idx].succs:
            self.pending[s] -= 1
            if self.pending[s] == 0:
                self.ssa.seal(self.irb[s])

    def drop_edges(self, bb) -> None:
        """The rest of bytecode block `bb` never runs (`raise_when_run` ended it): its
        normal successors get one edge less, as from a skipped block."""
        for s in bb.succs:
            if s in bb.unwinds:
                continue                  # (counted at the end of `lower_block`)
            self.pending[s] -= 1
            if self.pending[s] == 0:
                self.ssa.seal(self.irb[s])

    def raise_when_run(self, exc_type: type, message: str) -> Const:
        """End the block raising `exc_type(message)` where CPython raises it when this
        instruction runs (a global that is not defined, a module attribute that does
        not exist): found when lowering, it is an error only on a path that runs.  The
        rest of the bytecode block is not lowered; the placeholder returned stands for
        the value that never comes."""
        self.raise_(self.emit("call", Const(missing_name), Const(exc_type), Const(message)))
        self.stopped = True
        return Const(None)

    def refuse(self, construct: str, line: int | None = None):
        raise UnsupportedError(construct, self.qualname, self.code.co_filename,
                               line if line is not None else self.line)

    # -- stack and values -----------------------------------------------------
    def push(self, v) -> None:
        self.stack.append(v)

    def pop(self):
        if not self.stack:
            self.refuse("stack underflow (unexpected bytecode)")
        return self.stack.pop()

    def popn(self, n: int) -> list:
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    def emit(self, op: str, *args, kwargs=None, name=None) -> Var:
        args = [self.operand(a) for a in args]
        kwargs = {k: self.operand(v) for k, v in (kwargs or {}).items()}
        self.protect()
        self.fresh = None
        v = self.ir.push(self.block, op, *args, line=self.line, name=name, kwargs=kwargs)
        self.def_of[v] = self.block.stmts[-1]
        if op in BOOL_OPS:
            self.bools.add(v)
        return v

    def operand(self, v):
        """An SSA operand for a stack value, materialising lazy values once."""
        if isinstance(v, (Var, Const)):
            return v
        if isinstance(v, Lazy):
            if v.var is None:
                v.var = materialize(self, v)
            return v.var
        if isinstance(v, CaughtPart):
            return v.materialize(self)
        self.refuse(f"{v!r} used as a value")

    def is_int(self, v) -> bool:
        if isinstance(v, Const):
            return type(v.value) is int
        return isinstance(v, Var) and v in self.ints

    def as_bool(self, v):
        v = self.operand(v)
        if isinstance(v, Const) and isinstance(v.value, bool):
            return v
        if isinstance(v, Var) and v in self.bools:
            return v
        return self.emit("truth", v)

    def load_local(self, name: str):
        v = self.ssa.read(name, self.block)
        self.last_local = (name, v)
        if isinstance(v, Const) and v.value is UNBOUND:
            return self.emit("call", Const(unbound_local), Const(name))
        if name not in self.assigned:
            self.assigned.add(name)
            return self.emit("call", Const(check_bound), v, Const(name))
        return v

    def store_local(self, name: str, value) -> None:
        value = self.operand(value)
        d = self.def_of.get(value) or self.ssa_phi(value)
        if d is not None and d.name is None:
            d.name = name
        self.ssa.write(name, self.block, value)
        self.assigned.add(name)
        self.fresh = None

    def ssa_phi(self, v):
        return self.ssa.phis.get(v) if isinstance(v, Var) else None

    # -- control flow ---------------------------------------------------------
    def new_block(self, *preds):
        """A fresh IR block in the current bytecode block's chain, sealed with `preds`."""
        b = self.new_ir_block()
        self.chains[self.bindex].append(b)
        for p in preds:
            self.ssa.add_pred(b, p)
        self.ssa.seal(b)
        self.ssa.phi_line[b.id] = self.line
        return b

    def edge(self, target: int, stack: list) -> int:
        """Leave the current IR block for bytecode block `target` with `stack`."""
        self.carry(target, stack, "a join")
        tb = self.irb[target]
        self.pending[target] -= 1
        if self.pending[target] == 0:
            self.ssa.seal(tb)
        return tb.id

    def carry(self, target: int, stack: list, what: str) -> None:
        """Send `stack` along an edge from the current IR block into bytecode block
        `target`: markers in its shape, operands through SSA as ("$s", k)."""
        stack = [v if is_marker(v) else self.operand(v) for v in stack]
        shape = [v if is_marker(v) else None for v in stack]
        known = self.shapes.setdefault(target, shape)
        if len(known) != len(shape) or any(a is not b for a, b in zip(known, shape)):
            self.refuse(f"stack shape mismatch at {what}")
        for k, v in enumerate(stack):
            if shape[k] is None:
                self.ssa.write(("$s", k), self.block, v)
        self.ssa.add_pred(self.irb[target], self.block)

    def goto(self, target: int | None) -> None:
        if target is None:
            self.refuse("falling off the end of the bytecode")
        self.block.term = Goto(self.edge(target, self.stack), self.line)

    def branch(self, cond, then: int, then_stack: list, else_: int, else_stack: list) -> None:
        cond = self.as_bool(cond)
        t = self.edge(then, then_stack)
        e = self.edge(else_, else_stack)
        self.block.term = Goto(t, self.line) if t == e else Branch(cond, t, e, self.line)

    def ret(self, value) -> None:
        self.block.term = Return(self.operand(value), self.line)

    def raise_(self, exc) -> None:
        """End the block raising `exc` (to the handler in force, if any)."""
        exc = self.operand(exc)
        self.protect()
        self.block.term = Raise(exc, self.line)

    # -- exception regions ----------------------------------------------------
    def protect(self) -> None:
        """Make the current IR block right for what comes next under the handler in
        force: a fresh block entered by `goto .. unwind` from the block so far
        (whose values are what the handler sees), or, with no handler in force, a
        block outside every protected region.  A protected block thus holds at most
        one statement that can raise, with no local assigned before it."""
        want = None if self.handler is None else self.handler[0]
        have = self.prot.get(self.block.id)
        if want is None:
            if have is not None:
                self.split(Goto(None, self.line))
            return
        if have == want and self.fresh == self.block.id:
            return
        depth = self.handler[1]
        depth = self.setup_depth.get(want) if depth is None else depth
        if depth is None or depth > len(self.stack):
            self.refuse("try/except (unexpected stack at a protected region)")
        self.unwind_edge(want, self.stack[:depth])
        new = self.split(Goto(None, self.line, self.irb[want].id))
        self.prot[new.id] = want
        self.fresh = new.id

    def split(self, term):
        """End the current IR block with `term` (its target filled in) and continue
        in a new one."""
        new = self.new_block(self.block)
        term.target = new.id
        self.block.term = term
        self.block = new
        return new

    def unwind_edge(self, target: int, stack: list) -> None:
        """The exception edge from the current IR block to handler block `target`;
        `stack` is what the handler keeps of the operand stack."""
        for v in stack:
            if isinstance(v, Lazy) and v.var is None:
                self.refuse("try/except (a pending value crosses into a handler)")
        self.carry(target, stack, "an exception handler")
        if target not in self.entered:
            self.entered.add(target)
            lasti = bool(self.handler and self.handler[2])
            self.prologues[target] = lambda: self.enter_handler(lasti)

    def enter_handler(self, lasti: bool) -> None:
        """At the head of a handler block: `caught()` (first, unprotected), then the
        stack CPython's handler starts with: 3.11+ `[..depth] (lasti) exc`; 3.10
        `[..depth] prev prev prev tb exc type` (`tb` and `type` `CaughtPart` markers; the previous exception's slots are
        one `ExcInfo` marker, which a bare `raise` reads)."""
        exc = self.ir.push(self.block, "caught", line=self.line)
        if PY >= (3, 11):
            self.stack += [LASTI, exc] if lasti else [exc]
            return
        self.stack += [ExcInfo(exc)] * 3
        self.stack += [CaughtPart(exc, "traceback"), exc, CaughtPart(exc, "type")]

    # -- finishing ------------------------------------------------------------
    def renumber(self) -> None:
        order = [] if self.entry is self.irb[0] else [self.entry]
        for idx in sorted(self.chains):
            order.extend(self.chains[idx])
        ids = {b.id: k + 1 for k, b in enumerate(order)}
        for b in order:
            if b.term is None:
                self.refuse(f"block without terminator (#{b.id})")
            b.id = ids[b.id]
            for p in b.phis:
                p.incoming = {ids[k]: v for k, v in p.incoming.items()}
            _retarget(b.term, ids)
        self.ir.blocks = order


def _unbound(key) -> Const:
    return Const(UNBOUND)


def _local_name(key):
    return key if isinstance(key, str) else None


def _retarget(term, ids: dict) -> None:
    if isinstance(term, Goto):
        term.target = ids[term.target]
        if term.unwind is not None:
            term.unwind = ids[term.unwind]
    elif isinstance(term, Branch):
        term.then, term.else_ = ids[term.then], ids[term.else_]
