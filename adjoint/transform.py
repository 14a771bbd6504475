"""The J transform, orchestrated: primal IR -> (forward IR, adjoint IR), plus the
runtime of calls between transformed functions.

Pass order (each output verified with `ssair.verify`):
  0. `canonical_inplace` in-place operators: `OP` on scalars (argument types seeded
                        from the runtime values), an explicit array write otherwise;
  1. `merge_returns`    one exit block, an entry without predecessors;
  2. `record_branches`  dummy phis in blocks with >= 2 predecessors;
  3. activity analysis  (`adjoint.passes.activity.analyze`) on the result;
  4. `instrument`       pullback records and alphas, `jcall`s, snapshots, `%tape`
                        (scalar rule variants where operands are proven numbers);
     `rebuildable`      loop counters the adjoint rebuilds (`adjoint.passes.induction`);
     `silent_joins`     joins whose edge the adjoint does not need (`adjoint.passes.branches`);
  5. `emit_stacks`      pushes in cyclic blocks, env slots elsewhere, returns (y, env);
  6. `reverse`          the adjoint IR;
  7. cleanup            `simplifycfg` and `dce` on the adjoint IR;
  8. `cut_tapes`        a handler truncates what a raising callee pushed (forward IR).
`adjoint.passes.PASSES` holds these requirements as a table, and its `check_order`
checks every transform against it.  `ZYGOPY_DUMP=adjoint` prints both results to stderr.

Transforms are cached per (IR, which arguments are differentiable), and built
lazily: a recursive function's forward contains `jcall(@f, ...)`, which transforms
`f` (from the cache) only when it runs, so recursion never transforms forever.

Calls.  `jcall(f, tape, kwnames, args...)` (an interpreter handler) runs the
callee's forward on the same tape and returns `(y, pb)`; `jback(pb, reader, dy, cur)`
runs its adjoint with the same reader and returns the new cotangents of the jcall
operands `(d_f, d_args...)` given their current ones `cur`: an argument the callee may
write into (`JFunction.inout`) starts the callee's adjoint with the caller's cotangent
and comes back replaced; the others come back accumulated.  The callee is
resolved at run time, so functions passed as arguments and closures work: a rule in
the table (math.sin passed as a value) is applied directly; a `Closure` or user
function is lowered, transformed for the activity of the actual argument values,
and interpreted; `d_f` of a closure is the tuple of its captured values'
cotangents, which `make_closure`'s adjoint routes back to the enclosing function.
"""
from __future__ import annotations

import dataclasses

import functools
import inspect
import os
import sys
import types
import weakref
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

import lowering
import ssair
from lowering import guards
from lowering.ops_call import stands_for
from lowering.runtime import call_unpacked
from ssair import IR
from ssair import progress
from ssair.compile_lock import compiling
from ssair import interpreter as interp

from . import tape as _tape  # noqa: F401  (registers the tape primitives)
from .container_methods import python_method
from .passes import check_order
from .passes.activity import Activity, analyze
from .passes.branches import record_branches, silent_joins
from .passes.container_writes import forward_tuple_elements
from .passes.induction import rebuildable
from .passes.inplace import arg_types, canonical_inplace
from .passes.instrument import instrument
from .passes.merge_returns import merge_returns
from .partials import partials_as_closures
from .passes.reverse import build_adjoint
from .passes.stacks import emit_stacks
from .passes.unwind import cut_tapes
from .pytrees import is_record, record_differentiable
from .rule_table import method_key
from .rules import METHOD_RULES, lookup_callee, missing_rule_error
from .special_callees import SPECIAL_CALLEES, SPECIAL_TYPES, own_rule_code, rule_function
from .special_callees import special_handler as _special  # jit imports it as _special


@dataclass
class JFunction:
    """The J transform of one IR for one activity pattern of its arguments."""

    primal: IR
    forward: IR
    adjoint: IR
    active_args: tuple
    activity: Activity
    inout: tuple = ()
    recompute: tuple = ()     # the IRs of its checkpointed loops' recompute functions

    @property
    def nargs(self) -> int:
        return len(self.primal.args)


_CACHE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
VERIFY = True
# Each pass's output verified too (not only the transform's): names the pass that broke
# the IR.  On under the tests (`tests/conftest.py`) and with ZYGOPY_VERIFY_PASSES=1; off
# otherwise, where the eight checks per transform were a twentieth of a first gradient.
VERIFY_EACH_PASS = os.environ.get("ZYGOPY_VERIFY_PASSES", "").lower() not in (
    "", "0", "false", "no")


def clear_cache() -> None:
    """Forget every lowering and everything compiled from one, in every layer (the
    next call lowers and compiles again, with the globals as they are now)."""
    guards.invalidate()


def _drop_transforms() -> None:
    _CACHE.clear()
    _CHECKPOINTED.clear()


def transform(ir: IR, active_args: tuple, types: tuple | None = None) -> JFunction:
    """J(ir) for arguments whose differentiability is `active_args` (cached): per
    argument 0 (not differentiable), 1 (a float or tuple) or 2 (an array, which the
    function may write into); `activity_of(values)` computes it.  Booleans work.
    `types` (`adjoint.passes.inplace.arg_types(values)`, or the JIT's type names) lets
    in-place operators on scalar arguments become plain operators.  A cached one is
    found without the compile lock (every warm call asks)."""
    per_ir = _CACHE.get(ir)
    if per_ir is not None:
        jf = per_ir.get((tuple(int(a) for a in active_args), tuple(types) if types else None))
        if jf is not None:
            return jf
    return _transform_built(ir, active_args, types)


@compiling
def _transform_built(ir: IR, active_args: tuple, types: tuple | None) -> JFunction:
    """`transform`, built under the compile lock by the first thread that asks."""
    per_ir = _CACHE.get(ir)
    if per_ir is None:
        per_ir = _CACHE[ir] = {}
    key = (tuple(int(a) for a in active_args), tuple(types) if types else None)
    jf = per_ir.get(key)
    if jf is None:
        progress.stage("J transform", f"{ir.name} ({ir.file}:{ir.firstline})")
        jf = per_ir[key] = _build(ir, *key)
    return jf


_CHECKPOINTED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # forward ->
# {budget words: checkpointed JFunction} (its own forward is a copy: the key dies with jf)
guards.on_invalidate(_drop_transforms)


@compiling
def checkpointed(jf: JFunction, megabytes: float) -> JFunction:
    """`jf` with its outer loops checkpointed for a memory budget of `megabytes` MiB
    (`adjoint.passes.checkpoint`; cached)."""
    from lowering.api import register_ir, stub_function

    from .passes.checkpoint import budget_words, checkpoint_loops
    words = budget_words(megabytes)
    per_jf = _CHECKPOINTED.setdefault(jf.forward, {})
    if words in per_jf:
        return per_jf[words]
    func = jf.primal.func
    scope = getattr(func, "__globals__", {})

    def function_of(ir: IR) -> Any:
        fn = stub_function(ir.name, len(ir.args), scope, ir.file or "<checkpoint>")
        register_ir(fn, ir)
        return fn
    fwd, adj, recompute = checkpoint_loops(jf.forward, jf.adjoint, words, function_of)
    for ir in (fwd, adj, *recompute):
        _check(ir, "checkpoint_loops")
    fwd.meta["passes"] = tuple(fwd.meta.get("passes", ())) + ("checkpoint_loops",)
    fwd.meta["checkpoint_mb"] = megabytes
    out = dataclasses.replace(jf, forward=fwd, adjoint=adj, recompute=tuple(recompute))
    per_jf[words] = out
    return out


def _check(ir: IR, stage: str) -> IR:
    if VERIFY:
        try:
            ssair.verify(ir)
        except ssair.VerifyError as e:
            raise RuntimeError(f"adjoint: {stage} produced invalid IR for {ir.name}:\n"
                               f"{e}\n{ir}") from None
    return ir


def _build(ir: IR, active: tuple, types: tuple | None = None) -> JFunction:
    if len(active) != len(ir.args):
        raise TypeError(f"adjoint: {ir.name} takes {len(ir.args)} arguments (with "
                        f"captured values), got {len(active)}")
    ran: list = []
    # arguments a caller already passes their cotangent into (a rewrite of this IR,
    # `jit.pullback.runner`, keeps the calling convention of the transform it replaces)
    floor = ir.meta.get("inout_floor", ())

    def step(name: str, value: Any, verify: bool = True) -> Any:
        ran.append(name)
        return _check(value, name) if verify and VERIFY_EACH_PASS else value

    ir = step("canonical_inplace", canonical_inplace(partials_as_closures(ir), types))
    primal = step("record_branches", record_branches(step("merge_returns", merge_returns(ir))))
    primal = step("forward_tuple_elements", forward_tuple_elements(primal))
    act = step("activity", analyze(primal, active), verify=False)
    refuse_active_cells(primal, act)
    inout = tuple(sorted(set(inout_args(primal, act, active)) | set(floor)))
    kinds = _kinds(primal, types)
    fwd = step("instrument", instrument(primal, act, kinds), verify=False)
    fwd.meta["induction"] = step("rebuildable", rebuildable(fwd, kinds), verify=False)
    fwd.meta["silent"] = step("silent_joins", silent_joins(fwd, act), verify=False)
    fwd.meta["inout"] = inout
    fwd.meta.pop("varargs", None)    # its callers pass the packed tuple (and the tape)
    fwd.meta.pop("varkw", None)      # and the dict of the other keywords
    fwd.name = f"{ir.name}_forward"
    # errors raised by compiled forward/adjoint code name the user's function
    fwd.meta["source_name"] = ir.meta.get("source_name", ir.name)
    fwd.meta["ret"] = fwd.block(fwd.meta["exit"]).term.value
    step("emit_stacks", emit_stacks(fwd))
    adj = step("reverse", build_adjoint(fwd, act, [a.var for a in primal.args]))
    adj = step("cleanup", _cleanup(adj))
    step("cut_tapes", cut_tapes(fwd))
    if not VERIFY_EACH_PASS:     # what the transform returns is always verified
        for out in (primal, fwd, adj):
            _check(out, "the J transform (ZYGOPY_VERIFY_PASSES=1 names the pass)")
    if VERIFY:
        broken = check_order(ran)
        if broken:
            raise RuntimeError("adjoint: pass order broken: " + "; ".join(broken))
    fwd.meta["passes"] = tuple(ran)
    adj.meta["source_name"] = fwd.meta["source_name"]
    adj.meta.pop("varargs", None)
    adj.meta.pop("varkw", None)
    fwd.meta["none_is_zero"] = adj.meta["none_is_zero"] = True
    # the user's own phis: a None there is a value, not a zero cotangent
    fwd.meta["primal_phis"] = frozenset(p.var.id for b in primal.blocks for p in b.phis)
    _dump(fwd, adj)
    return JFunction(primal, fwd, adj, active, act, inout)


def _kinds(primal: IR, types: tuple | None):
    """`Scalars` of `primal` with its arguments' types seeded from `types`."""
    from ssair.passes.scalars import Scalars
    seeded = primal.copy()
    for a, t in zip(seeded.args, types or ()):
        if a.type is None and t is not None:
            a.type = t
    return Scalars(seeded)


def refuse_active_cells(ir: IR, act: Activity) -> None:
    """Cells (`make_cell`, `cell_set`: variables a nested function reads after they
    are reassigned) hide data flow from activity analysis: refuse them when they
    would hold a differentiable value."""
    from ssair import Var
    defs = ir.defs_by_var()
    for b in ir.blocks:
        for s in b.stmts:
            value = s.args[-1] if s.op in ("make_cell", "cell_set") and s.args else None
            if isinstance(value, Var) and value in act.varied:
                cell = defs.get(s.args[0]) if s.op == "cell_set" else s
                name = f"variable {cell.name!r}" if getattr(cell, "name", None) else "a variable"
                raise TypeError(
                    f"adjoint: {name} is read by a nested function through "
                    f"a cell (a closure made in a loop, inner functions that call each other, or a "
                    f"variable assigned after the closure is made) and holds a "
                    f"differentiable value in {ir.meta.get('source_name', ir.name)} at "
                    f"{ir.file}:{s.line}: reverse mode does not support such a closure yet")


def inout_args(ir: IR, act: Activity, active: tuple) -> tuple:
    """Indices of active array arguments this function may write into (`a[i] = v`,
    or passed on to a user call that may): their cotangent is passed *in* to the
    adjoint as well as out (see `adjoint.passes.reverse`)."""
    from .passes.activity import is_user_call
    from .passes.writes import call_written_operands
    from ssair import Var
    written = set()
    for b in ir.blocks:
        for s in b.stmts:
            if s.op == "setitem" and isinstance(s.args[0], Var):
                written.add(s.args[0])
            elif is_user_call(s):     # (what the callee's code may write: `passes.writes`)
                ws = call_written_operands(s)
                written.update(v for k, v in enumerate(s.operands()[1:])
                               if isinstance(v, Var) and (ws is None or k in ws))
    return tuple(k for k, a in enumerate(ir.args)
                 if active[k] == 2 and a.var in written and act.is_active(a.var))


def _cleanup(adj: IR) -> IR:
    """Bypass the empty edge blocks and drop unused cotangent parts (`simplifycfg`,
    `dce` of `ssair.passes`; tape ops and calls are impure, so they stay)."""
    try:
        from ssair.passes.dce import dce
        from ssair.passes.simplifycfg import simplifycfg
    except ImportError:
        return adj
    return dce(simplifycfg(adj))


def _dump(fwd: IR, adj: IR) -> None:
    names = os.environ.get("ZYGOPY_DUMP", "")
    if "adjoint" in names.split(",") or names == "all":
        print(f"{fwd}\n{adj}", file=sys.stderr)


# -- which values are differentiable ---------------------------------------------------
def is_differentiable(x: Any, _seen: Optional[set] = None) -> bool:
    """Floats, float/complex arrays, and tuples, lists, dicts, closures and objects
    (dataclasses, user objects: `adjoint.pytrees`) holding them."""
    if isinstance(x, (bool, np.bool_)) or x is None:
        return False
    if isinstance(x, (float, complex, np.floating, np.complexfloating)):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "fc" or (x.dtype == object)
    if isinstance(x, (int, str, np.integer)):
        return False
    seen = set() if _seen is None else _seen

    def inner(v: Any) -> bool:
        return is_differentiable(v, seen)
    if isinstance(x, (tuple, list)):
        return any(inner(v) for v in x)
    if isinstance(x, dict):
        return any(inner(v) for v in x.values())
    if isinstance(x, interp.Closure):
        return any(inner(v) for v in x.values)
    if isinstance(x, CallPB):     # a recorded call: its env (nested AD)
        return inner(x.env)
    if isinstance(x, RulePB):
        return inner(x.args) or inner(x.y)
    return is_record(x) and record_differentiable(x, inner, seen)


def activity_of(values: tuple) -> tuple:
    """The `transform` key of argument values: 0, 1, or 2 for mutable arrays."""
    return tuple(0 if not is_differentiable(v) else 2 if isinstance(v, (np.ndarray, list, dict))
                 else 1 for v in values)


def lower_function(f: Any) -> IR:
    """`lowering.lower(f)`: lowered once, cached on the function by the lowering."""
    return lowering.lower(f)


def cells(f: types.FunctionType) -> tuple:
    return tuple(c.cell_contents for c in f.__closure__ or ())


# -- runtime of jcall / jback -------------------------------------------------------------
def combine(out: tuple, cur: Any, replaced: set) -> tuple:
    """`out[k]` where operand k was seeded, else `cur[k] + out[k]`."""
    if cur is None:
        return out
    return tuple(g if k in replaced else _tape.accum(c, g)
                 for k, (g, c) in enumerate(zip(out, cur)))


class RulePB:
    """Pullback data of a call that used a rule of the table."""

    __slots__ = ("pb", "args", "kw", "y", "nops", "bound")

    def __init__(self, pb, args, kw, y, nops, bound):
        self.pb, self.args, self.kw, self.y, self.nops, self.bound = pb, args, kw, y, nops, bound

    def back(self, state, reader, dy) -> tuple:
        lead = (self.y,) if self.pb.uses_result else ()
        grads = self.pb(dy, *lead, *self.args, **self.kw)
        if self.bound:
            return tuple(grads) + (None,) * (self.nops - len(grads))
        return (None,) + tuple(grads) + (None,) * (self.nops - 1 - len(grads))


class OpaquePB:
    """A library call without a rule: fine as long as no cotangent reaches it."""

    __slots__ = ("f", "nops")

    def __init__(self, f, nops):
        self.f, self.nops = f, nops

    def back(self, state, reader, dy) -> tuple:
        if dy is not None:
            raise missing_rule_error(f"callee {_name(self.f)}", "")
        return (None,) * self.nops


class NondiffPB:
    """A call of a non-differentiable function: no cotangent flows back."""

    __slots__ = ("nops",)

    def __init__(self, nops):
        self.nops = nops

    def back(self, state, reader, dy) -> tuple:
        return (None,) * self.nops


class CallPB:
    """Pullback data of a transformed call: the callee's J, its env, and where each
    jcall operand went among the callee IR's arguments."""

    __slots__ = ("jf", "env", "nfree", "slots", "closure")
    seeds = True        # `back` takes the operands' current cotangents (see `_jback`)

    def __init__(self, jf, env, nfree, slots, closure):
        self.jf, self.env, self.nfree, self.slots, self.closure = jf, env, nfree, slots, closure

    def back(self, state, reader, dy, cur=None) -> tuple:
        """New cotangents of the jcall operands, given their current ones `cur`:
        arguments the callee may write into are seeded with theirs and replaced,
        the others accumulate (see `adjoint.passes.reverse`).  A closure's entry in `cur`
        is the tuple of its captured values' cotangents."""
        seeded, replaced = self._seed(cur)
        arg = dy if not self.jf.inout else (dy, seeded)
        out = self.route(interp._call_ir(state, self.jf.adjoint, (reader, self.env, arg)))
        if self.closure and cur is not None and out[0] is not None:
            out = (self._free_combine(out[0], cur[0]),) + out[1:]
            replaced.add(0)
        return combine(out, cur, replaced)

    def _seed(self, cur) -> tuple:
        """(initial adjoints of the callee's arguments, operands to replace)."""
        if not self.jf.inout or cur is None:
            return None, set()
        init = [None] * len(self.jf.primal.args)
        if self.closure and cur[0] is not None:
            for k in range(self.nfree):
                if k in self.jf.inout:
                    init[k] = cur[0][k]
        replaced = set()
        for k, slot in enumerate(self.slots):
            if slot in self.jf.inout and init[slot] is None and k + 1 not in replaced:
                init[slot] = cur[k + 1]
                replaced.add(k + 1)
        return tuple(init), replaced

    def _free_combine(self, d_free: tuple, cur_free: Any) -> tuple:
        """A closure's captured values: written ones come back whole, others add."""
        if cur_free is None:
            return d_free
        return tuple(g if k in self.jf.inout else _tape.accum(c, g)
                     for k, (g, c) in enumerate(zip(d_free, cur_free)))

    def route(self, grads: tuple) -> tuple:
        """The adjoint's per-argument cotangents -> one per jcall operand (a slot (i, j)
        is element j of the `*args` tuple parameter i)."""
        df = tuple(grads[:self.nfree]) if self.closure else None
        return (df,) + tuple(_slot_value(grads, k) for k in self.slots)

    def unroute(self, d: Any, nargs: int) -> Any:
        """The transpose of `route`: a cotangent of its result -> one of `grads`."""
        if d is None:
            return None
        out = [None] * nargs
        if self.closure and d[0] is not None:
            out[:self.nfree] = list(d[0])
        packed = {}
        for k, g in zip(self.slots, d[1:]):
            if isinstance(k, tuple):
                packed.setdefault(k[0], {})[k[1]] = g
            elif k is not None and g is not None:
                out[k] = g if out[k] is None else out[k] + g
        for i, parts in packed.items():
            keyed = any(isinstance(j, str) for j in parts)
            out[i] = dict(parts) if keyed else tuple(parts.get(j) for j in range(len(parts)))
        return tuple(out)


def _slot_value(grads: tuple, k: Any) -> Any:
    if k is None:
        return None
    if isinstance(k, tuple):
        g = grads[k[0]]
        return None if g is None else g.get(k[1]) if isinstance(g, dict) else g[k[1]]
    return grads[k]


def _name(f: Any) -> str:
    from ssair.printer import object_name
    return object_name(f)


def _jcall(state, stmt, values) -> tuple:
    f, tape, kwnames = values[0], values[1], values[2]
    rest = values[3:]
    npos = len(rest) - len(kwnames)
    pos, kw = tuple(rest[:npos]), dict(zip(kwnames, rest[npos:]))
    return call_forward(state, f, tape, pos, kw)


def _jback(state, stmt, values) -> tuple:
    pb, reader, dy, cur = values
    if getattr(pb, "seeds", False):
        return pb.back(state, reader, dy, cur)
    return combine(pb.back(state, reader, dy), cur, set())


def call_forward(state, f: Any, tape, pos: tuple, kw: dict, plain: bool = False) -> tuple:
    """Run callee `f`'s forward on `tape`: returns `(y, pullback data)`."""
    nops = 1 + len(pos) + len(kw)
    special = None if plain else _special(f)
    if special is not None:
        return special(state, f, tape, pos, kw)
    rule = lookup_callee(f)
    if rule is not None:
        y = f(*pos, **kw)
        if rule.pullback is None:
            return y, NondiffPB(nops)
        owner = getattr(f, "__self__", None)
        bound = owner is not None and lookup_callee(f) is not None and _is_method_rule(f)
        args = ((owner,) + pos) if bound else pos
        return y, RulePB(rule.pullback, args, kw, y, nops, bound)
    if isinstance(f, types.MethodType) and not plain:
        return forward_method(state, f, tape, pos, kw)
    method = None if plain else python_method(f)
    if method is not None:       # `d.get(k, v)`: its plain-Python function, d first
        y, data = call_forward(state, method[0], tape, (method[1],) + tuple(pos), kw)
        return y, MethodPB(data)
    if not plain and is_record(f) and \
            isinstance(getattr(type(f), "__call__", None), types.FunctionType):
        # `layer(x)`: its class's `__call__`, the object's cotangent the callee's
        return forward_method(state, types.MethodType(type(f).__call__, f), tape, pos, kw)
    try:
        target = (lower_function(f), f, cells(f), False) if plain else _target(f)
    except lowering.UnsupportedError:
        if any(is_differentiable(a) for a in pos + tuple(kw.values())):
            raise
        return interp.observed(f, pos, kw, f(*pos, **kw)), NondiffPB(nops)  # CPython's call
    if target is None:
        _refuse_opaque_write(f, pos, kw)
        return f(*pos, **kw), OpaquePB(f, nops)
    jf, args, slots, nfree, closure = resolve_call(target, pos, kw)
    if closure and f.defaults is not None:
        refuse_runtime_defaults(f, args[nfree:], slots, nfree)
    y, env = interp._call_ir(state, jf.forward, (tape,) + args)
    return interp.observed(f, pos, kw, y), CallPB(jf, env, nfree, slots, closure)


class UnpackedPB:
    """Pullback data of `call_unpacked(f, t, d)` (`f(*t, **d)`): that of the call
    `f(t[0], ..., k=d[k], ...)`, with the cotangents of the items packed back into
    a tuple for `t` and a dict for `d`."""

    __slots__ = ("inner", "n", "keys")
    seeds = True

    def __init__(self, inner, n, keys):
        self.inner, self.n, self.keys = inner, n, keys

    def back(self, state, reader, dy, cur=None) -> tuple:
        inner_cur = None
        if cur is not None:
            t, d = cur[2], cur[3]
            inner_cur = (cur[1],) + (tuple(t) if t is not None else (None,) * self.n) \
                + tuple(None if d is None else d.get(k) for k in self.keys)
        out = _jback(state, None, (self.inner, reader, dy, inner_cur))
        n = self.n
        kw = dict(zip(self.keys, out[1 + n:])) if self.keys else None
        return (None if cur is None else cur[0], out[0], tuple(out[1:1 + n]), kw)


def forward_unpacked(state, _fn, tape, pos: tuple, kw: dict) -> tuple:
    """jcall of `call_unpacked(f, t, d)`: the forward of the call it stands for."""
    f, t, d = pos
    t, d = tuple(t), dict(d) if d is not None else {}
    y, data = call_forward(state, f, tape, t, d)
    return y, UnpackedPB(data, len(t), tuple(d))


SPECIAL_CALLEES[id(call_unpacked)] = (call_unpacked, forward_unpacked)


class PartialPB:
    """Pullback data of a call of a `functools.partial` object: that of the call it
    makes, `func(*bound, *pos, **{**keywords, **kw})`.  The partial's cotangent is
    `(d func, d bound args tuple, d keywords dict)`, as `functools.partial`'s rule
    (adjoint.rules) reads it."""

    __slots__ = ("inner", "nbound", "npos", "keys", "passed")
    seeds = True

    def __init__(self, inner, nbound, npos, keys, passed):
        self.inner, self.nbound, self.npos, self.keys, self.passed = \
            inner, nbound, npos, keys, passed

    def back(self, state, reader, dy, cur=None) -> tuple:
        nb, npos = self.nbound, self.npos
        inner_cur = None
        if cur is not None:
            dp = cur[0] if cur[0] is not None else (None, (None,) * nb, {})
            given = dict(zip(self.passed, cur[1 + npos:]))
            inner_cur = (dp[0],) + tuple(dp[1]) + tuple(cur[1:1 + npos]) + tuple(
                given[k] if k in given else dp[2].get(k) for k in self.keys)
        out = _jback(state, None, (self.inner, reader, dy, inner_cur))
        d_kw = dict(zip(self.keys, out[1 + nb + npos:]))
        d_bound = tuple(out[1:1 + nb])
        kept = {k: g for k, g in d_kw.items() if k not in self.passed}
        dp = None if out[0] is None and all(g is None for g in d_bound) \
            and all(g is None for g in kept.values()) else (out[0], d_bound, kept)
        return (dp,) + tuple(out[1 + nb:1 + nb + npos]) + tuple(d_kw[k] for k in self.passed)


def forward_partial(state, p, tape, pos: tuple, kw: dict) -> tuple:
    """jcall of a `functools.partial` object: the forward of the call it makes."""
    inner_kw = {**p.keywords, **kw}
    y, data = call_forward(state, p.func, tape, tuple(p.args) + tuple(pos), inner_kw)
    return y, PartialPB(data, len(p.args), len(pos), tuple(inner_kw), tuple(kw))


SPECIAL_TYPES.append((functools.partial, forward_partial))


class MethodPB:
    """Pullback data of a call of a bound method with no rule of its own: that of
    `method.__func__(self, *pos, **kw)`.  The bound method's cotangent is its
    object's (`getattr` of a method passes it through to the object)."""

    __slots__ = ("inner",)
    seeds = True

    def __init__(self, inner):
        self.inner = inner

    def back(self, state, reader, dy, cur=None) -> tuple:
        inner_cur = None if cur is None else (None, cur[0]) + tuple(cur[1:])
        out = _jback(state, None, (self.inner, reader, dy, inner_cur))
        return (out[1],) + tuple(out[2:])


def forward_method(state, m, tape, pos: tuple, kw: dict) -> tuple:
    """jcall of a bound method (`obj.method(x)`, `cm.__enter__()`): the forward of
    its function called with the object as its first argument."""
    y, data = call_forward(state, m.__func__, tape, (m.__self__,) + tuple(pos), kw)
    return y, MethodPB(data)


MUTABLE_RECEIVERS = (list, dict, set, bytearray, np.ndarray)


# numpy functions without a rule that write into an array argument
WRITES_INTO_ARGUMENT = (np.copyto, np.put, np.place, np.putmask, np.fill_diagonal,
                        np.put_along_axis)


def _refuse_opaque_write(f: Any, pos: tuple, kw: dict) -> None:
    """A call without a rule that may write into its receiver or an argument
    (`acc.append(x)`, `np.add.at(a, i, x)`, `np.copyto(a, x)`, `out=`) when a
    differentiable value is involved: the adjoint cannot see that write, so the
    gradient would be silently wrong.  Refuse it."""
    owner = getattr(f, "__self__", None)
    writes_owner = isinstance(owner, MUTABLE_RECEIVERS)
    writes_arg = (isinstance(owner, np.ufunc) or "out" in kw
                  or any(f is g for g in WRITES_INTO_ARGUMENT))
    if not (writes_owner or writes_arg):
        return
    if any(is_differentiable(a) for a in pos + tuple(kw.values())):
        if writes_owner:
            name = f"method {type(owner).__name__}.{getattr(f, '__name__', '?')}"
            raise missing_rule_error(name, " (it stores a differentiable value)")
        what = f"numpy.{owner.__name__}.{f.__name__}" if isinstance(owner, np.ufunc) \
            else _name(f)
        raise TypeError(f"adjoint: {what} writes into an array argument, which "
                        "reverse mode cannot follow in a library call; compute the "
                        "result out of place instead (e.g. `y = y + v`)")


def resolve_call(target: tuple, pos: tuple, kw: dict) -> tuple:
    """(J of the callee, its argument values, operand -> argument slots, nfree,
    is a Closure) for a call of `target` (see `_target`)."""
    ir, sig_fn, free, closure = target
    params, slots = _bind(ir, sig_fn, pos, kw)
    args = tuple(free) + params
    jf = transform(ir, activity_of(args), arg_types(args))
    slots = [None if s is None else (s[0] + len(free), s[1]) if isinstance(s, tuple)
             else s + len(free) for s in slots]
    return jf, args, slots, len(free), closure


def refuse_runtime_defaults(f: Any, params: tuple, slots: list, nfree: int) -> None:
    """A closure whose defaults were computed when it was made (`def g(n=x)`), called
    where the lowering did not see it made, binds the omitted parameters from those
    values: their cotangents would have nowhere to go (a silent zero for `x`).
    Refuse the call when such a value is differentiable.  (Where the lowering sees
    the closure made, the defaults are passed as operands and differentiate.)"""
    filled = {(s[0] if isinstance(s, tuple) else s) - nfree for s in slots if s is not None}
    for i, v in enumerate(params):
        if i not in filled and any(activity_of((v,))):
            code = getattr(f.func, "__code__", None)
            name = getattr(f.func, "__qualname__", None) or getattr(f.func, "name", "a function")
            where = f" ({code.co_filename}:{code.co_firstlineno})" if code else ""
            raise TypeError(
                f"adjoint: {name}{where} is called without its argument {i + 1}, whose default "
                "was computed when the function was made (a differentiable value); reverse "
                "mode does not carry a gradient through such a default yet: pass that "
                "argument explicitly")


def _is_method_rule(f: Any) -> bool:
    return method_key(f) in METHOD_RULES


def _target(f: Any):
    """(IR, signature function, captured values, is a Closure) or None."""
    if isinstance(f, interp.Closure):
        ir, sig_fn = interp._closure_target(f)
        return ir, sig_fn, f.values, True
    if isinstance(f, IR):
        return f, f.func if isinstance(f.func, types.FunctionType) else None, (), False
    f = stands_for(rule_function(f))     # (a wrapper's stand-in: `adjoint.transforms`)
    if type(f) is types.FunctionType and (interp.is_user_function(f) or own_rule_code(f)):
        return lower_function(f), f, cells(f), False
    return None


class ArgSlot:
    """Stands for the k-th operand of a call while a signature binds it (`_bind`,
    `adjoint.api`): where it lands is where that operand goes."""

    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k


def _bind(ir: IR, fn: Any, pos: tuple, kw: dict) -> tuple:
    """(parameter values, for each jcall operand after the callee the index of the
    parameter it binds or None)."""
    n = len(ir.args) - ir.nfree
    if not kw and len(pos) == n and ir.meta.get("varargs") is None \
            and ir.meta.get("varkw") is None:
        return tuple(pos), list(range(n))
    if fn is None:
        return interp._bind_names(ir, pos, kw), _name_slots(ir, len(pos), kw)
    markers = [ArgSlot(k) for k in range(len(pos) + len(kw))]
    sig = inspect.signature(fn)
    b = sig.bind(*markers[:len(pos)], **dict(zip(kw, markers[len(pos):])))
    slots = [None] * len(markers)
    for i, (name, v) in enumerate(b.arguments.items()):
        if isinstance(v, ArgSlot):
            slots[v.k] = i
        elif sig.parameters[name].kind is inspect.Parameter.VAR_POSITIONAL:
            for j, m in enumerate(v):      # `*args`: element j of the tuple parameter i
                slots[m.k] = (i, j)
        elif sig.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            for key, m in v.items():       # `**kwargs`: entry `key` of the dict parameter i
                slots[m.k] = (i, key)
    values = interp._bind(ir, fn, pos, kw)
    return values, slots


def _name_slots(ir: IR, npos: int, kw: dict) -> list:
    names = [a.name for a in ir.args[ir.nfree:]]
    packed = ir.meta.get("varargs")
    pos = list(range(npos)) if packed is None else \
        [k if k < packed else (packed, k - packed) for k in range(npos)]
    varkw = ir.meta.get("varkw")
    return pos + [(varkw, k) if varkw is not None and (k not in names or names.index(k) == varkw)
                  else names.index(k) for k in kw]


interp.register_handler("jcall", _jcall)
interp.register_handler("jback", _jback)
ssair.register("jcall", (3, None), None, pure=False, foldable=False, symbol="J(f)(args)")
ssair.register("jback", 4, None, pure=False, foldable=False, symbol="back(dy)")
