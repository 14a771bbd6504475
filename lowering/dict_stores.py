"""Which `d[k] = v` statements lower to `%d2 = with_entry(%d, k, v)`, a new value of `d`.

A dict built entry by entry in a local (`out = {}`, then `out[key] = value` in a loop)
is then an SSA value like any other, as a list grown by `append` is
(`lowering.values.ListAppend`): typing follows its keys, and reverse mode gives each
entry its own cotangent.  In Python the store changes the one dict in place, so the
rewrite is exact only when no other reference to that dict can see the change.  A
store qualifies (`entry_stores`) when its local `d`:

  * is not a parameter, and every assignment to it is a dict display (`d = {}`,
    `d = {"a": x}`), never `del d` or a save of a comprehension;
  * is the container of the `STORE_SUBSCR`, loaded right before its key (found by
    following the stack from the load, with no jump or label in between);
  * is read in any other way (returned, passed to a call, put in a tuple, read by
    `d[k]`) only after every such store in the bytecode's order, and never inside a
    loop (a backward jump's span) that also holds a store, so no earlier reference
    of the dict outlives a store into it.

`with_entry` sets the entry in place and returns the dict, so the interpreter runs
exactly what Python runs; compiled code treats the dict as a value.
"""
from __future__ import annotations

from bytecode import Instr, Label

MAPS = {"BUILD_MAP", "BUILD_CONST_KEY_MAP"}


def _names(ins: Instr) -> tuple:
    arg = ins.arg if isinstance(ins.arg, tuple) else (ins.arg,)
    return tuple(a for a in arg if isinstance(a, str))


def _loaded(ins: Instr) -> tuple:
    """The locals `ins` pushes, in push order."""
    if ins.name.startswith("LOAD_FAST"):
        return _names(ins)
    if ins.name == "STORE_FAST_LOAD_FAST":
        return _names(ins)[1:]
    return ()


def _stored(ins: Instr) -> tuple:
    """The locals `ins` assigns or deletes."""
    if ins.name in ("STORE_FAST", "STORE_FAST_STORE_FAST", "DELETE_FAST",
                    "LOAD_FAST_AND_CLEAR"):
        return _names(ins)
    if ins.name == "STORE_FAST_LOAD_FAST":
        return _names(ins)[:1]
    return ()


def _candidates(instrs: list, params: set) -> set:
    """Locals every assignment of which is `STORE_FAST` of a fresh dict display."""
    ok, bad = set(), set(params)
    prev = None
    for ins in instrs:
        if not isinstance(ins, Instr):
            prev = None
            continue
        for name in _stored(ins):
            fresh = ins.name == "STORE_FAST" and prev is not None and prev.name in MAPS
            (ok if fresh else bad).add(name)
        prev = ins
    return ok - bad


def _container_of_store(instrs: list, p: int, depth: int):
    """The index of the STORE_SUBSCR whose container is the value pushed at `p`
    (`depth` values above it once `instrs[p]` ran), or None if something else
    consumes that value or a jump or label comes first."""
    for q in range(p + 1, len(instrs)):
        ins = instrs[q]
        if not isinstance(ins, Instr) or ins.has_jump():
            return None
        if ins.name == "STORE_SUBSCR":
            return q if depth == 1 else None
        pre, post = ins.pre_and_post_stack_effect(jump=False)
        if -pre > depth:
            return None
        depth += pre + post
    return None


def _loops(instrs: list) -> list:
    """(first, last) index spans of the backward jumps."""
    where = {id(x): k for k, x in enumerate(instrs) if isinstance(x, Label)}
    return [(where[id(x.arg)], k) for k, x in enumerate(instrs)
            if isinstance(x, Instr) and isinstance(x.arg, Label)
            and where.get(id(x.arg), k + 1) < k]


def entry_stores(instrs: list, params: set) -> dict:
    """id(STORE_SUBSCR instruction) -> (the instruction, the local it stores into),
    for the stores that lower to `with_entry` (see the module doc)."""
    names = _candidates(instrs, params)
    if not names:
        return {}
    stores: dict = {n: [] for n in names}
    reads: dict = {n: [] for n in names}
    for p, ins in enumerate(instrs):
        loaded = _loaded(ins) if isinstance(ins, Instr) else ()
        for j, name in enumerate(loaded):
            if name not in names:
                continue
            q = _container_of_store(instrs, p, len(loaded) - 1 - j)
            (stores[name] if q is not None else reads[name]).append(q if q is not None else p)
    loops = _loops(instrs)
    out = {}
    for name in names:
        if stores[name] and all(_after(r, s, loops) for r in reads[name] for s in stores[name]):
            out.update({id(instrs[q]): (instrs[q], name) for q in stores[name]})
    return out


def _after(r: int, s: int, loops: list) -> bool:
    """Read `r` runs only after store `s` has run for the last time."""
    return r > s and not any(a <= r <= b and a <= s <= b for a, b in loops)
