"""Reading a code object: refuse whole-function constructs, split the abstract
bytecode (from the `bytecode` package) into basic blocks, and compute the block
graph facts the lowering needs (reachability, reverse postorder, edge counts,
membership in cycles)."""
from __future__ import annotations

import inspect
import linecache
from dataclasses import dataclass, field

from bytecode import Bytecode, Instr, Label

from .comprehensions import inline_comprehensions
from .dict_stores import entry_stores
from .errors import UnsupportedError
from .generators import as_list_builder

SETUPS = {"SETUP_FINALLY", "SETUP_WITH"}   # 3.10: push a handler on the block stack
UNCOND_JUMPS = {"JUMP_FORWARD", "JUMP_ABSOLUTE", "JUMP_BACKWARD",
                "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT"}
FINAL = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"}
FLAG_CONSTRUCTS = [
    (inspect.CO_COROUTINE, "async"),
    (inspect.CO_ASYNC_GENERATOR, "async"), (inspect.CO_ITERABLE_COROUTINE, "async"),
]


@dataclass(eq=False)
class BBlock:
    """A bytecode basic block: `instrs` end with at most one jump or return.

    `succs` lists the successor block indices: the handlers of its instructions
    (`handlers`), then fallthrough, then the jump target (FOR_ITER: body first, exit
    second); `target` is the jump target.  `handlers[k]` is the exception handler
    in force at `instrs[k]`: `(handler block, stack depth, push lasti)` (3.11+, from
    the exception table), `(handler block, None, None)` (3.10, from the block stack;
    the depth is the stack's at the SETUP), or None.  `tries` keeps the exception
    table's TryBegin/TryEnd markers out of `instrs`.
    """

    index: int
    instrs: list = field(default_factory=list)
    succs: list = field(default_factory=list)
    target: int | None = None
    fall: int | None = None
    tries: list = field(default_factory=list)      # (index into instrs, marker)
    handlers: list = field(default_factory=list)
    setup: int | None = None                      # 3.10: the handler a final SETUP_* adds

    @property
    def unwinds(self) -> list:
        """The handler blocks of this block's instructions, in order."""
        return list(dict.fromkeys(h[0] for h in self.handlers if h is not None))

    @property
    def first_line(self) -> int | None:
        return next((i.lineno for i in self.instrs if i.lineno is not None), None)


class CodeReader:
    """The blocks of one function's bytecode, with graph facts."""

    def __init__(self, func, qualname: str):
        self.func = func
        self.code = func.__code__
        self.qualname = qualname
        self.check_flags()
        self.extra_locals: frozenset = frozenset()   # comprehension variables, renamed
        self.cellvars = frozenset(self.code.co_cellvars)
        self.blocks = self.split(Bytecode.from_code(
            self.code, conserve_exception_block_stackdepth=True))
        self.link()
        self.find_handlers()
        self.rpo = self.reverse_postorder()
        self.reachable = set(self.rpo)
        self.in_edges = self.count_in_edges()
        self.cyclic = self.cyclic_blocks()
        self.assigned = self.definitely_assigned()

    def refuse(self, construct: str, line: int | None) -> None:
        raise UnsupportedError(construct, self.qualname, self.code.co_filename,
                               line if line is not None else self.code.co_firstlineno)

    def check_flags(self) -> None:
        for flag, construct in FLAG_CONSTRUCTS:
            if self.code.co_flags & flag:
                self.refuse(construct, def_line(self.code))

    def split(self, bc) -> list:
        blocks = [BBlock(0)]
        self.label_block = {}
        instrs = [i for i in bc if isinstance(i, (Instr, Label)) or _is_try(i)]
        yielded = frozenset()
        if self.code.co_flags & inspect.CO_GENERATOR:    # returns the list of its yields
            instrs, name = as_list_builder(instrs, self.code, self.refuse)
            yielded = frozenset({name})
        instrs, self.extra_locals, demoted = inline_comprehensions(
            self.func, self.code, self.qualname, instrs)
        self.extra_locals |= yielded
        self.cellvars = self.cellvars - demoted
        self.append_locals = append_locals(self.code, instrs)
        self.entry_stores = entry_stores(instrs, set(param_names(self.code)))
        for ins in instrs:
            cur = blocks[-1]
            if _is_try(ins):
                cur.tries.append((len(cur.instrs), ins))
                continue
            if isinstance(ins, Label):
                if cur.instrs:
                    cur = BBlock(len(blocks))
                    blocks.append(cur)
                self.label_block[ins] = cur.index
                continue
            cur.instrs.append(ins)
            if ins.has_jump() or ins.name in FINAL:
                blocks.append(BBlock(len(blocks)))
        if not blocks[-1].instrs and blocks[-1].index not in self.label_block.values():
            blocks.pop()
        return blocks

    def link(self) -> None:
        for b in self.blocks:
            last = b.instrs[-1] if b.instrs else None
            nxt = b.index + 1 if b.index + 1 < len(self.blocks) else None
            if last is not None and last.name in SETUPS:
                b.setup = self.label_block[last.arg]      # an exception edge, not a jump
            elif last is not None and last.has_jump():
                b.target = self.label_block[last.arg]
            if last is None or not (last.name in FINAL or last.name in UNCOND_JUMPS):
                b.fall = nxt
            b.succs = [s for s in (b.fall, b.target) if s is not None]
        self.thread_jumps()

    def thread_jumps(self) -> None:
        """Send edges that enter a block holding nothing but an unconditional jump
        straight to that jump's target (3.12+ puts each loop's back jump in its own
        block; this keeps one listing for every CPython version)."""
        def forward(i):
            seen = set()
            while i is not None and i not in seen and _only_jump(self.blocks[i]):
                seen.add(i)
                i = self.blocks[i].target
            return i
        for b in self.blocks:
            b.fall, b.target = forward(b.fall), forward(b.target)
            b.succs = [s for s in (b.fall, b.target) if s is not None]

    def find_handlers(self) -> None:
        """Fill each block's `handlers` and put the handlers first among its `succs`
        (so that reverse postorder lowers a handler after the blocks it protects)."""
        if any(b.setup is not None for b in self.blocks):
            self.block_stack_handlers()
        else:
            self.table_handlers()
        for b in self.blocks:
            b.succs = b.unwinds + [s for s in b.succs if s not in b.unwinds]

    def table_handlers(self) -> None:
        """3.11+: the TryBegin in force at each instruction, in layout order."""
        cur = None
        for b in self.blocks:
            tries = sorted(b.tries, key=lambda t: t[0])
            b.handlers = []
            for k in range(len(b.instrs)):
                while tries and tries[0][0] == k:
                    m = tries.pop(0)[1]
                    cur = m if type(m).__name__ == "TryBegin" else None
                b.handlers.append(None if cur is None else
                                  (self.label_block[cur.target], cur.stack_depth,
                                   cur.push_lasti))
            for _, m in tries:          # markers after the block's last instruction
                cur = m if type(m).__name__ == "TryBegin" else None

    def block_stack_handlers(self) -> None:
        """3.10: the innermost SETUP_FINALLY/SETUP_WITH in force at each instruction,
        from the block stack along the control flow (an exception handler's entry
        holds the SETUP's stack plus an EXCEPT_HANDLER entry, which POP_EXCEPT pops)."""
        entry = {0: ()}
        todo = [0]
        while todo:
            b = self.blocks[todo.pop()]
            stack = list(entry[b.index])
            b.handlers = []
            for ins in b.instrs:
                top = next((h for h in reversed(stack) if h != "except"), None)
                b.handlers.append(None if top is None else (top, None, None))
                if ins.name in SETUPS:
                    self.reach(entry, todo, b.setup, tuple(stack) + ("except",))
                    stack.append(b.setup)
                elif ins.name == "POP_BLOCK" and stack:
                    stack.pop()
                elif ins.name == "POP_EXCEPT" and stack and stack[-1] == "except":
                    stack.pop()
            for s in (b.fall, b.target):
                if s is not None:
                    self.reach(entry, todo, s, tuple(stack))

    def reach(self, entry: dict, todo: list, idx: int, stack: tuple) -> None:
        if idx in entry:
            if entry[idx] != stack:
                self.refuse("try/except (inconsistent block stack)", self.blocks[idx].first_line)
            return
        entry[idx] = stack
        todo.append(idx)

    def reverse_postorder(self) -> list:
        seen, order = set(), []
        stack = [(0, iter(self.blocks[0].succs))]
        seen.add(0)
        while stack:
            node, it = stack[-1]
            nxt = next((s for s in it if s not in seen), None)
            if nxt is None:
                order.append(node)
                stack.pop()
                continue
            seen.add(nxt)
            stack.append((nxt, iter(self.blocks[nxt].succs)))
        return order[::-1]

    def count_in_edges(self) -> dict:
        counts = {i: 0 for i in self.rpo}
        for i in self.rpo:
            for s in self.blocks[i].succs:
                counts[s] += 1
        return counts

    def definitely_assigned(self) -> dict:
        """Block index -> locals assigned on every path to the block's entry."""
        code = self.code
        params = set(param_names(code))
        universe = (params | set(code.co_varnames) | set(code.co_cellvars)
                    | set(code.co_freevars) | self.extra_locals)
        preds = {i: [] for i in self.rpo}
        for i in self.rpo:
            for s in self.blocks[i].succs:
                preds[s].append(i)
        entry = params | set(code.co_freevars)
        into = {i: (entry if i == 0 else universe) for i in self.rpo}
        changed = True
        while changed:
            changed = False
            for i in self.rpo:
                new = set(entry) if i == 0 else set(universe)
                for p in preds[i]:
                    new &= assigned_after(self.blocks[p], into[p], i)
                if i == 0:
                    new = entry
                if new != into[i]:
                    into[i], changed = new, True
        return into

    def cyclic_blocks(self) -> set:
        """Blocks that lie on a cycle (can reach themselves)."""
        out = set()
        for start in self.rpo:
            seen, todo = set(), list(self.blocks[start].succs)
            while todo:
                n = todo.pop()
                if n == start:
                    out.add(start)
                    break
                if n not in seen:
                    seen.add(n)
                    todo.extend(self.blocks[n].succs)
        return out


STORES = {"STORE_FAST", "STORE_DEREF", "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST"}


def assigned_after(block: BBlock, before: set, succ: int | None = None) -> set:
    """The locals surely assigned on leaving `block` for `succ`, given those assigned
    on entry (`before`): stores add, `del` removes.  On an exception edge only the
    instructions before the first one under handler `succ` surely ran."""
    out = set(before)
    for k, ins in enumerate(block.instrs):
        h = block.handlers[k] if k < len(block.handlers) else None
        if h is not None and h[0] == succ:
            break
        if ins.name == "DELETE_FAST":
            out.discard(ins.arg if isinstance(ins.arg, str) else ins.arg.name)
        if ins.name not in STORES:
            continue
        arg = ins.arg[:1] if ins.name == "STORE_FAST_LOAD_FAST" else ins.arg
        for a in (arg if isinstance(arg, tuple) else (arg,)):
            out.add(a if isinstance(a, str) else a.name)
    return out


def _only_jump(block: BBlock) -> bool:
    names = [i.name for i in block.instrs if i.name not in ("NOP", "NOT_TAKEN")]
    return len(names) == 1 and names[0] in UNCOND_JUMPS


def def_line(code) -> int:
    """The line of the `def` (co_firstlineno points at the first decorator)."""
    line = code.co_firstlineno
    for k in range(line, line + 50):
        text = linecache.getline(code.co_filename, k).lstrip()
        if text.startswith(("def ", "async def ")):
            return k
        if code.co_name == "<lambda>" and "lambda" in text:
            return k
        if not text:
            break
    return line


def _is_try(ins) -> bool:
    return type(ins).__name__ in ("TryBegin", "TryEnd")


def param_names(code) -> list:
    """The function's parameters in the order of its signature (and of its IR's
    arguments): positional ones, the `*args` tuple, keyword-only ones, the `**kwargs`
    dict."""
    n, nkw = code.co_argcount, code.co_kwonlyargcount
    names = list(code.co_varnames[:n])
    varargs = bool(code.co_flags & inspect.CO_VARARGS)
    if varargs:
        names.append(code.co_varnames[n + nkw])
    names += list(code.co_varnames[n:n + nkw])
    if code.co_flags & inspect.CO_VARKEYWORDS:
        names.append(code.co_varnames[n + nkw + varargs])
    return names


FRESH_LIST = {"BUILD_LIST", "LIST_EXTEND"}
ALIASING = {"STORE_FAST", "STORE_DEREF", "STORE_GLOBAL", "STORE_ATTR", "STORE_FAST_STORE_FAST",
            "STORE_FAST_LOAD_FAST"}     # (returning the list ends the function's appends)


def append_locals(code, instrs: list) -> frozenset:
    """Locals whose `x.append(v)` lowers to `list_append` (see `lowering.values.ListAppend`):
    not a parameter, every store into it is a list display (`x = []`, `x = [a, b]`),
    and every read of it is followed by neither a store (`y = x`) nor an attribute
    other than `append` (so no second name sees the list grow)."""
    params = set(param_names(code))
    ok, bad = set(), set(params)
    seq = [i for i in instrs if isinstance(i, Instr)]
    for k, ins in enumerate(seq):
        names = _local_names(ins)
        if ins.name == "STORE_FAST":
            (ok if k > 0 and seq[k - 1].name in FRESH_LIST else bad).update(names)
        elif ins.name in ("STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST", "DELETE_FAST"):
            bad.update(names[:1] if ins.name == "STORE_FAST_LOAD_FAST" else names)
        if ins.name.startswith("LOAD_FAST") and k + 1 < len(seq):
            nxt = seq[k + 1]
            attr = None
            if nxt.name in ("LOAD_ATTR", "LOAD_METHOD"):
                attr = nxt.arg[1] if isinstance(nxt.arg, tuple) else nxt.arg
            if nxt.name in ALIASING or attr not in (None, "append"):
                bad.update(names[-1:])
    return frozenset(ok - bad)


def _local_names(ins) -> tuple:
    if not isinstance(ins.arg, (str, tuple)) or ins.name.startswith(("LOAD_G", "LOAD_C")):
        return ()
    arg = ins.arg if isinstance(ins.arg, tuple) else (ins.arg,)
    return tuple(a for a in arg if isinstance(a, str))
