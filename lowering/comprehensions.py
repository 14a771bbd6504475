"""Comprehensions inlined into the function that contains them, before it is split
into blocks.

CPython 3.12+ compiles a list comprehension inline (PEP 709): the loop runs in the
function's own frame, with `LOAD_FAST_AND_CLEAR` saving the outer value of each
comprehension variable and a cleanup handler restoring it on an exception.  Before
3.12 a list comprehension is a nested function called once on the iterator, and a
generator expression is a nested generator on every version.  This module gives the
lowering one shape for all of them, the 3.12 one without its saved variables:

    <iterable>; GET_ITER; BUILD_LIST 0; SWAP 2
    L: FOR_ITER end; STORE_FAST x'; ...; LIST_APPEND k; JUMP L
    end: (END_FOR)            -> the list is on the stack

* `inline_calls` replaces the call of a `<listcomp>`, `<setcomp>` or `<dictcomp>`
  function (3.10, 3.11) by its body, and that of a `<genexpr>` (every version) when
  the generator is the iterable of a `for` loop or an argument of a builtin that
  consumes it (`sum`, `any`, `all`, `min`, `max`, `list`, `tuple`, `sorted`,
  `set`, `frozenset`, `dict`, `enumerate`, `zip`): building the list first gives the
  same values in the same order (as for a generator function,
  `lowering.generators`).  The body's locals are renamed apart from the function's
  (`x` stays `x` unless the function has an `x` too), its free variables become the
  function's own variables, and a function variable that was a cell only for the
  comprehension becomes an ordinary local.  A generator expression used any other
  way is refused, naming it.
* `drop_restore_handlers` (3.12+) removes the cleanup handler of an inlined
  comprehension when nothing in the function can catch the exception it re-raises:
  the locals it restores are dead once the exception leaves the function.

Requires: abstract instructions of `bytecode` (Instr, Label, TryBegin, TryEnd).
Guarantees: no comprehension function is made (a dict or set comprehension's
MAP_ADD / SET_ADD steps stay, `lowering.ops_basic` lowers them); the result computes
what CPython computes (a comprehension variable never leaks: it has its own name).
"""
from __future__ import annotations

import builtins
import sys
import types

from bytecode import Instr, Label

from .errors import COMPREHENSION_NAMES, UnsupportedError

PY = sys.version_info[:2]
CONSUMERS = frozenset({"sum", "any", "all", "min", "max", "list", "tuple", "sorted", "set",
                       "frozenset", "dict", "enumerate", "zip"})
INLINE_SINCE_312 = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"})   # PEP 709
LOCAL_OPS = {"LOAD_FAST", "STORE_FAST", "DELETE_FAST", "LOAD_FAST_CHECK",
             "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST", "LOAD_FAST_LOAD_FAST"}
DEREF_AS_FAST = {"LOAD_DEREF": "LOAD_FAST", "STORE_DEREF": "STORE_FAST",
                 "DELETE_DEREF": "DELETE_FAST"}
PROLOGUE = {"RESUME", "COPY_FREE_VARS", "MAKE_CELL", "RETURN_GENERATOR", "GEN_START", "NOP"}


class Inliner:
    """Inlines the comprehension calls of one function's instruction list."""

    def __init__(self, func, code: types.CodeType, qualname: str):
        self.func = func
        self.code = code
        self.qualname = qualname
        self.taken = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
        self.new_locals: set = set()
        self.inlined = False

    def refuse(self, construct: str, line) -> None:
        raise UnsupportedError(construct, self.qualname, self.code.co_filename,
                               line if line is not None else self.code.co_firstlineno)

    def run(self, instrs: list) -> tuple:
        """(the instructions, the cell variables now plain locals)."""
        instrs = self.inline_calls(instrs)
        if not self.inlined:
            return instrs, frozenset()
        return demote_cells(instrs, self.code)

    def inline_calls(self, instrs: list) -> list:
        """Every comprehension call in `instrs`, innermost (last) first."""
        while True:
            sites = [k for k, ins in enumerate(instrs) if _comprehension_code(ins)]
            if not sites:
                return instrs
            instrs = self.inline_site(instrs, sites[-1])

    def inline_site(self, instrs: list, c: int) -> list:
        code = instrs[c].arg
        line = instrs[c].lineno
        if code.co_name in INLINE_SINCE_312 and PY >= (3, 12):
            self.refuse("comprehension", line)
        start, after = _function_build(instrs, c)
        call = _find_call(instrs, after)
        if call is None:
            self.refuse("comprehension called in an unexpected way", line)
        get_iter, end = call
        is_gen = code.co_name == "<genexpr>"
        if is_gen and not (_iterated(instrs, end) or self.consumed(instrs, start, end)):
            self.refuse("generator expression (other than the iterable of a for loop or "
                        "an argument of sum, any, all, min, max, list, tuple, sorted, set, "
                        "frozenset, dict, enumerate or zip)", line)
        body = self.body(code, is_gen, line)
        self.inlined = True
        return instrs[:start] + instrs[after:get_iter + 1] + body + instrs[end:]

    def consumed(self, instrs: list, start: int, end: int) -> bool:
        """The generator made at `start` and called just before `end` is an argument
        of a call of a consuming builtin (`sum(g)`, `zip(xs, g)`)."""
        arg = _global_name(consumer_load(instrs, start, end))
        if arg not in CONSUMERS:
            return False
        found = self.func.__globals__.get(arg, getattr(builtins, arg))
        return found is getattr(builtins, arg)

    def body(self, code: types.CodeType, is_gen: bool, line) -> list:
        """The comprehension's instructions, renamed, as a loop that leaves its list on
        the stack (the iterator is on the stack when it starts)."""
        from bytecode import Bytecode
        inner = Inliner(self.func, code, self.qualname)
        inner.taken = self.taken
        instrs = [i for i in Bytecode.from_code(code) if isinstance(i, (Instr, Label))]
        instrs = [i for i in _without_generator_start(_until_return(instrs))
                  if not (isinstance(i, Instr) and i.name in PROLOGUE)]
        instrs = inner.inline_calls(instrs)
        self.new_locals |= inner.new_locals
        names = self.rename_map(code)
        out = [Instr("BUILD_LIST", 0, location=_loc(instrs)), _swap(instrs)] if is_gen else []
        depths = stack_depths(instrs) if is_gen else {}
        skip_after_yield = 0
        for k, ins in enumerate(instrs):
            if skip_after_yield and isinstance(ins, Instr) and ins.name in ("RESUME", "POP_TOP"):
                skip_after_yield -= 1 if ins.name == "POP_TOP" else 0
                continue
            skip_after_yield = 0
            if isinstance(ins, Label):
                out.append(ins)
            elif ins.name == "LOAD_FAST" and ins.arg == ".0":
                if not is_gen:
                    out.append(_swap(instrs))
            elif ins.name == "YIELD_VALUE":
                out.append(Instr("LIST_APPEND", depths[k], location=ins.location))
                skip_after_yield = 1
            elif ins.name == "LOAD_CLOSURE":
                out.append(self.enclosing_cell(ins, code))
            else:
                out.append(_renamed(ins, names, code, self.code))
        return out

    def enclosing_cell(self, ins: Instr, code: types.CodeType) -> Instr:
        """`LOAD_CLOSURE v` of a closure made in the comprehension: `v` is a variable
        of the enclosing function (a cell there, which stays one), read as such.  A
        closure over the comprehension's own variable (`lambda: k` in `for k in`)
        would need a cell per run of the comprehension, which is refused."""
        from bytecode import CellVar, FreeVar
        name = ins.arg.name
        if name in code.co_cellvars or name in code.co_varnames:
            self.refuse("closure over a comprehension's own variable (pass it as a default "
                        "argument, `lambda y, k=k: ...`)", ins.lineno)
        kind = FreeVar if name in self.code.co_freevars else CellVar
        return Instr("LOAD_CLOSURE", kind(name), location=ins.location)

    def rename_map(self, code: types.CodeType) -> dict:
        """Comprehension local (or cell) -> its name in the enclosing function."""
        out = {}
        for name in list(code.co_varnames) + list(code.co_cellvars):
            if name == ".0" or name in out:
                continue
            new, k = name, 0
            while new in self.taken:
                k += 1
                new = f"{name}_{k}"
            self.taken.add(new)
            self.new_locals.add(new)
            out[name] = new
        return out


def _comprehension_code(ins) -> bool:
    return (isinstance(ins, Instr) and ins.name == "LOAD_CONST"
            and isinstance(ins.arg, types.CodeType)
            and ins.arg.co_name in COMPREHENSION_NAMES)


def _function_build(instrs: list, c: int) -> tuple:
    """(first index of the function build around code constant `c`, index after it)."""
    k = c + 1
    if PY == (3, 10):
        k += 1                           # the qualname constant
    flags = instrs[k].arg if PY < (3, 13) else 0
    k += 1                               # MAKE_FUNCTION
    while k < len(instrs) and isinstance(instrs[k], Instr) \
            and instrs[k].name == "SET_FUNCTION_ATTRIBUTE":
        flags |= instrs[k].arg
        k += 1
    start = c
    if flags & 8:                         # a closure tuple: BUILD_TUPLE n after n loads
        n = instrs[c - 1].arg
        start = c - 1 - n
    return start, k


def _global_name(load):
    """The name a LOAD_GLOBAL that pushes a callable (with its NULL slot) loads."""
    if not isinstance(load, Instr) or load.name != "LOAD_GLOBAL":
        return None
    arg = load.arg
    if isinstance(arg, tuple):
        return arg[1] if arg[0] else None
    return arg


CALLS = {"CALL_FUNCTION", "CALL_FUNCTION_KW", "PRECALL", "CALL", "CALL_KW"}


def consumer_load(instrs: list, start: int, end: int):
    """The instruction that loaded the callee of the call taking the value made by
    instrs[start:end] as an argument, or None: the first instruction after it that
    takes the stack below that value's slot must be that call (what lies between,
    other arguments and comprehensions inlined already, stays above it)."""
    code = [(k, i) for k, i in enumerate(instrs) if isinstance(i, (Instr, Label))]
    at = {k: n for n, (k, _) in enumerate(code)}
    if start not in at or end not in at:
        return None
    depths = stack_depths([i for _, i in code])
    base = depths.get(at[start])
    for n in range(at[end], len(code)):
        ins = code[n][1]
        if isinstance(ins, Label) or n not in depths:
            continue
        if depths[n] + ins.stack_effect(jump=False) > base:
            continue
        if ins.name not in CALLS:
            return None
        names = 1 if ins.name in ("CALL_FUNCTION_KW", "CALL_KW") else 0   # the names tuple
        args_at = depths[n] - names - ins.arg
        return None if args_at > base else _callee_load(code, depths, at[start], args_at)
    return None


def _callee_load(code: list, depths: dict, before: int, args_at: int):
    """The LOAD_GLOBAL before `before` that pushed the callee (and its NULL slot) of
    a call whose arguments start at depth `args_at`."""
    push_at = args_at - 2 if PY >= (3, 11) else args_at - 1
    for n in range(before - 1, -1, -1):
        if depths.get(n) == push_at:
            ins = code[n][1]
            return ins if isinstance(ins, Instr) and ins.name == "LOAD_GLOBAL" else None
    return None


def _iterated(instrs: list, k: int) -> bool:
    """The value made just before `k` is the iterable of a `for` loop."""
    return k < len(instrs) and isinstance(instrs[k], Instr) and instrs[k].name == "GET_ITER" \
        and any(isinstance(i, Instr) and i.name == "FOR_ITER" for i in instrs[k + 1:k + 3])


def _is_call(instrs: list, k: int, nargs: int) -> bool:
    names = [i.name for i in instrs[k:k + 2] if isinstance(i, Instr)]
    if PY == (3, 10):
        return names[:1] == ["CALL_FUNCTION"] and instrs[k].arg == nargs
    if PY == (3, 11):
        return names == ["PRECALL", "CALL"] and instrs[k].arg == nargs
    return names[:1] == ["CALL"] and instrs[k].arg == nargs


def _find_call(instrs: list, k: int):
    """(index of GET_ITER, index after the call) of the comprehension call whose
    iterable starts at `k`: the first GET_ITER followed by a call of no argument
    (the comprehension function takes the iterator; 3.10 counts it)."""
    for j in range(k, len(instrs)):
        ins = instrs[j]
        if isinstance(ins, Instr) and ins.name == "GET_ITER" \
                and _is_call(instrs, j + 1, 1 if PY == (3, 10) else 0):
            return j, j + 1 + (2 if PY == (3, 11) else 1)
    return None


def _until_return(instrs: list) -> list:
    """The body up to its final return, which is dropped (a generator's
    `return None`, a list comprehension's `return list`); what follows it is the
    generator's StopIteration handler."""
    last = max(k for k, i in enumerate(instrs)
               if isinstance(i, Instr) and i.name in ("RETURN_VALUE", "RETURN_CONST"))
    body = instrs[:last]
    if instrs[last].name == "RETURN_VALUE" and body and isinstance(body[-1], Instr) \
            and body[-1].name == "LOAD_CONST" and body[-1].arg is None:
        body = body[:-1]
    return body


def _without_generator_start(instrs: list) -> list:
    """A generator's body without `RETURN_GENERATOR; POP_TOP` (3.11+)."""
    for k, ins in enumerate(instrs[:-1]):
        if isinstance(ins, Instr) and ins.name == "RETURN_GENERATOR":
            return instrs[:k] + instrs[k + 2:]
    return instrs


def _loc(instrs: list):
    return next((i.location for i in instrs if isinstance(i, Instr)), None)


def _swap(instrs: list) -> Instr:
    if PY == (3, 10):
        return Instr("ROT_TWO", location=_loc(instrs))
    return Instr("SWAP", 2, location=_loc(instrs))


def _renamed(ins: Instr, names: dict, code: types.CodeType,
             enclosing: types.CodeType) -> Instr:
    """`ins` with the comprehension's (`code`) locals and cells renamed and its free
    variables read as the `enclosing` code's variables of the same name."""
    if ins.name in LOCAL_OPS:
        arg = ins.arg
        new = tuple(names.get(a, a) for a in arg) if isinstance(arg, tuple) \
            else names.get(arg, arg)
        return Instr(ins.name, new, location=ins.location)
    if ins.name in DEREF_AS_FAST:
        name = ins.arg.name
        if name in code.co_cellvars or name in code.co_varnames:
            return Instr(DEREF_AS_FAST[ins.name], names[name], location=ins.location)
        from bytecode import CellVar, FreeVar
        kind = FreeVar if name in enclosing.co_freevars else CellVar
        return Instr(ins.name, kind(name), location=ins.location)
    return ins


def demote_cells(instrs: list, code: types.CodeType) -> tuple:
    """The function's cell variables that no closure captures any more (they were
    cells for an inlined comprehension) read and written as ordinary locals."""
    captured = set()
    for k, ins in enumerate(instrs):
        if isinstance(ins, Instr) and ins.name == "LOAD_CLOSURE":
            captured.add(ins.arg.name)
        if isinstance(ins, Instr) and ins.name == "BUILD_TUPLE" and PY >= (3, 13):
            captured |= _closure_tuple_names(instrs, k)
    demoted = set(code.co_cellvars) - captured
    out = []
    for ins in instrs:
        if isinstance(ins, Instr) and ins.name in DEREF_AS_FAST:
            if ins.arg.name in demoted:
                ins = Instr(DEREF_AS_FAST[ins.name], ins.arg.name, location=ins.location)
        elif isinstance(ins, Instr) and ins.name == "MAKE_CELL" and ins.arg.name in demoted:
            continue
        out.append(ins)
    return out, frozenset(demoted)


def _closure_tuple_names(instrs: list, k: int) -> set:
    """3.13 builds a closure tuple from LOAD_FAST of cells: the names loaded by the
    BUILD_TUPLE at `k` when a function build follows it."""
    nxt = instrs[k + 1] if k + 1 < len(instrs) else None
    if not (isinstance(nxt, Instr) and nxt.name == "LOAD_CONST"
            and isinstance(nxt.arg, types.CodeType)):
        return set()
    n = instrs[k].arg
    return {i.arg for i in instrs[k - n:k] if isinstance(i, Instr) and isinstance(i.arg, str)}


def stack_depths(instrs: list) -> dict:
    """Index of each instruction -> the stack depth before it, following jumps (a
    comprehension body starts with its iterator on the stack: depth 1 after `.0`)."""
    at_label: dict = {}
    out = {}
    depth = 0
    for k, ins in enumerate(instrs):
        if isinstance(ins, Label):
            depth = at_label.get(ins, depth)
            continue
        if depth is None:
            continue
        out[k] = depth
        if ins.has_jump():
            at_label.setdefault(ins.arg, depth + ins.stack_effect(jump=True))
        if ins.is_uncond_jump() or ins.is_final():
            depth = None
        else:
            depth += ins.stack_effect(jump=False)
    return out


def drop_restore_handlers(instrs: list) -> list:
    """3.12+: remove the try markers of inlined comprehensions' cleanup handlers (a
    handler that only moves values, stores locals and re-raises) when what covers
    that cleanup code is nothing, or another such handler (nested comprehensions)."""
    covering = {}          # label -> the TryBegin in force at its first instruction
    region, pending = None, []
    for ins in instrs:
        kind = type(ins).__name__
        if kind == "TryBegin":
            region = ins
        elif kind == "TryEnd":
            region = None
        elif isinstance(ins, Label):
            pending.append(ins)
        else:
            covering.update((label, region) for label in pending)
            pending = []
    memo: dict = {}

    def droppable(t) -> bool:
        if t not in memo:
            memo[t] = False
            outer = covering.get(t.target)
            memo[t] = _only_restores(instrs, t.target) and (outer is None or droppable(outer))
        return memo[t]
    tries = [i for i in instrs if type(i).__name__ == "TryBegin"]
    drop = {t for t in tries if droppable(t)}
    if not drop:
        return instrs
    return [ins for ins in instrs
            if not (type(ins).__name__ == "TryBegin" and ins in drop)
            and not (type(ins).__name__ == "TryEnd" and ins.entry in drop)]


def _only_restores(instrs: list, label) -> bool:
    """The handler at `label` only moves values, stores locals and re-raises."""
    names = []
    for ins in instrs[instrs.index(label) + 1:]:
        if isinstance(ins, Label):
            break
        if isinstance(ins, Instr):
            names.append(ins.name)
            if ins.name == "RERAISE":
                break
    return bool(names) and names[-1] == "RERAISE" and all(
        n in ("SWAP", "POP_TOP", "STORE_FAST", "RERAISE") for n in names)


def inline_comprehensions(func, code: types.CodeType, qualname: str, instrs: list) -> tuple:
    """(`instrs` with comprehensions inlined, the new local names, the cell variables
    that became plain locals)."""
    inl = Inliner(func, code, qualname)
    instrs, demoted = inl.run(instrs)
    if PY >= (3, 12):
        instrs = drop_restore_handlers(instrs)
    return instrs, frozenset(inl.new_locals), demoted
