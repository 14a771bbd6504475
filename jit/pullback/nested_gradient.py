"""`adjoint.gradient(f, *args)` and `adjoint.value_and_grad(f, *args)` called inside
compiled code: their registry entry, compiled as f's compiled forward and adjoint run
back to back on a tape of the caller's frame.  (`jit.pullback.fast_gradient` compiles
a top-level `gradient` call this way too: one native call.)

    g = gradient(loss, w, X, y)[0]     # in a function `jit` compiles (a training loop)

The call is typed by J-transforming f (as a `jcall` does, `jit.pullback.jcalls`) for the
activity of the entries the caller reads: with `g[0]` the only use, X and y are taken
as constants and their gradients read None (`_needed_entries`).  Its forward is typed
for `(tape, args...)` and its adjoint for `(reader, env, 1.0)`.  The native code:

  1. a tape head `{data, len, cap}` on the caller's stack, empty;
  2. a native call of f's forward, which pushes onto it and returns `(y, env)`;
  3. a reader at the tape's end, and a native call of f's adjoint seeded with 1.0;
  4. the tape's buffer freed (also when f raises); each cotangent turned into what
     `gradient` returns for its argument (`adjoint.api._finish`): a float for a float
     (0.0 where f does not depend on it), an array of the argument's shape for a float
     array (zeros likewise), None for ints, bools and int arrays, and tuples, lists
     and dicts entry by entry;
  5. the gradient's arrays copied, and everything f's forward and adjoint allocated
     freed (`_reclaim`): a compiled training loop does not keep each step's
     temporaries until it returns.

Keyword arguments are passed to f and held constant, as `gradient` does; `backend=` has
no effect (it is f's when f takes a keyword of that name: `adjoint.options`).  Refused, saying why: a function that writes into its array arguments,
`*args`/`**kwargs` callees, a non-scalar result, and argument kinds other than numbers,
arrays and tuples, lists and dicts of them.  Differentiating a function that calls
`gradient` compiles by its Hessian-vector rule (`jit.pullback.jcalls`).  `pullback`
whose `back` is only called becomes nested gradients (`adjoint.passes.nested_pullback`;
here `_t_pullback` for a function value); another `pullback`, and `jacobian`, are
refused inside compiled code.

`argument_cotangents(f, *args)` is the same code without step 4's conversion: the
cotangents as reverse mode carries them (an object's as the tuple of its entries').
The pullback of an object's property is made of it (`property_pullback`): the cotangent
it hands back joins the object's other cotangents, where `gradient`'s object would not.
"""
from __future__ import annotations

import types as pytypes
from typing import Any

import numpy as np

from llvmlite import ir as L

from lowering.guards import on_invalidate
from ssair.ir import IR
from adjoint.nested_hv import captured_values
from adjoint.options import accepts_keyword
from adjoint.rules import lookup_callee

from jit.codegen.arrays import allocate, runtime_callee, shape
from jit.codegen.entry import out_leaves
from jit.codegen.function import F64, I64, PTR, FunctionGen, lltype
from jit.library.registry import REGISTRY
from jit.runtime import symbols
from jit.pullback.array_values import copy_array, ensure_array
from jit.pullback.cotangents import RULE_OBJECTS, record_property
from jit.pullback.dead_slots import check_adjoint, dead_pushes, decide
from jit.pullback.tape_ops import presize_tape
from jit.pullback.jcalls import _callee, _unrolled, adjoint_ir, type_activity
from jit.typing.infer import (Call, Context, LiteralT, Packed, bind_operands,
                              call_argument_type)
from jit.types import (BOOL, FLOAT32, FLOAT64, INT32, INT64, NONE, READER, TAPE, ArrayT, ClosureT,
                       DictT, FunctionT, ListT, RecordT, TupleT, Type)

FAMILY = "nested differentiation"
_TAPE_HEAD = L.ArrayType(I64, 3)          # data, len, cap (jit.runtime.tape)
_READER = L.LiteralStructType([PTR, I64])  # tape, position


def _gradient_type(ctx: Context, c: Type, a: Type) -> Type:
    """What `gradient` returns for an argument of type `a` whose cotangent is `c`."""
    if a in (INT64, BOOL, NONE) or isinstance(a, LiteralT) or not type_activity(a):
        return NONE             # nothing differentiable in it (a tuple of ints too)
    if a == FLOAT64 and c in (FLOAT64, INT64, BOOL, NONE):
        return FLOAT64
    if isinstance(a, ArrayT):
        if a.dtype not in (FLOAT64, FLOAT32):
            return NONE
        if c == NONE or c == a:        # (a float32 array's gradient is float32)
            return a
    if isinstance(a, TupleT) and (c == NONE or isinstance(c, TupleT)):
        cs = c.elems if isinstance(c, TupleT) else (NONE,) * len(a.elems)
        if len(cs) == len(a.elems):      # in the argument's own structure
            elems = tuple(_gradient_type(ctx, ci, ai) for ci, ai in zip(cs, a.elems))
            if isinstance(a, RecordT):
                return _gradient_record(a, elems)
            if isinstance(a, DictT):
                return DictT(elems, a.keys)
            return ListT(elems) if isinstance(a, ListT) else TupleT(elems)
    ctx.fail(f"gradient: the gradient of an argument of type {a} (cotangent {c}) is not "
             "compiled inside compiled code")


def _gradient_record(a: RecordT, elems: tuple) -> RecordT:
    """The gradient of an object, as `adjoint.api` gives it: the same class for a named
    tuple, a dataclass or a registered class, else a `types.SimpleNamespace`."""
    import dataclasses
    from adjoint.pytrees import is_registered_class
    same = a.is_tuple or dataclasses.is_dataclass(a.cls) or is_registered_class(a.cls)
    return RecordT(elems, a.keys, a.cls if same else pytypes.SimpleNamespace, a.aux)


def _t_gradient(ctx: Context, s, ts: list) -> Type:
    cots, argtypes, nfree, y_t, needed = _typed(ctx, s, ts)
    grads = TupleT(tuple(_gradient_type(ctx, cots[nfree + k], argtypes[nfree + k])
                         if k in needed else NONE for k in range(len(s.args) - 2)))
    return TupleT((y_t, grads)) if _with_value(s) else grads


def _t_cotangents(ctx: Context, s, ts: list) -> Type:
    cots, argtypes, nfree, _, needed = _typed(ctx, s, ts)
    return TupleT(tuple(cots[nfree + k] if k in needed else NONE
                        for k in range(len(s.args) - 2)))


def _typed(ctx: Context, s, ts: list) -> tuple:
    """Type f's forward and adjoint for the call `s` (of `gradient`, `value_and_grad`
    or `argument_cotangents`; its positional arguments are `s.args[2:]`); returns (the
    adjoint's cotangents, the argument types with f's captured values first, the
    number of those, f's result type, the positional entries read)."""
    from adjoint.generated import fixed_arity, library_caller
    from adjoint.nested_hv import library_callee
    from adjoint.transform import lower_function as lowered
    f, captured, closure = _callee(ctx, ts[0])
    if captured is None and type(f) is pytypes.FunctionType and lookup_callee(f) is None:
        captured = []    # a Python function of a library module: differentiated all the same
    if captured is None and library_callee(f):      # `gradient(math.tanh, x)`
        f, captured = library_caller(f, len(s.args) - 2), []
    elif captured == [] and not s.kwargs:   # `def g(*xs)`: the caller of its arity
        f = fixed_arity(f, len(s.args) - 2)
    if captured is None:
        ctx.fail("gradient of a library function inside compiled code is not compiled; "
                 "wrap it in a Python function")
    ir = f if isinstance(f, IR) else lowered(f)     # the transform's input, as lowered
    name = ir.meta.get("source_name", ir.name)
    pos = list(s.args[2:])
    kw = {k: v for k, v in s.kwargs.items()      # held constant, as in the API; backend=
          if k != "backend" or accepts_keyword(f, k)}    # is f's where f takes one
    operands, _ = bind_operands(ctx, ir, f, pos, tuple(kw), list(kw.values()))
    if any(isinstance(o, Packed) for o in operands):
        ctx.fail(f"gradient of {name}, which takes *args or **kwargs, is not compiled "
                 "inside compiled code")
    argtypes = tuple(captured) + tuple(call_argument_type(ctx, a) for a in operands)
    nfree = len(captured)
    needed = _needed_entries(ctx, s, len(pos))
    activity = tuple(type_activity(t) if nfree <= j < nfree + len(pos) and j - nfree in needed
                     else 0 for j, t in enumerate(argtypes))
    from adjoint.transform import transform
    ir = _unrolled(ctx, ir, argtypes)
    jf = transform(ir, activity, tuple(str(t) for t in argtypes))
    if jf.inout:
        ctx.fail(f"gradient of {name}, which writes into an array argument, is not "
                 "compiled inside compiled code")
    fwd = ctx.engine.infer(jf.forward, (TAPE,) + argtypes)
    if not isinstance(fwd.ret, TupleT):
        ctx.fail(f"the forward of {name} does not return (y, env)")
    if fwd.host_pullbacks:      # (no owner for their handles in a native frame yet)
        ctx.fail(f"gradient of {name}, which calls a function that runs in the "
                 "interpreter, is not compiled inside compiled code")
    y_t, env_t = fwd.ret.elems
    if y_t not in (FLOAT64, INT64, FLOAT32, INT32):   # (a bool is not a real scalar)
        ctx.fail(f"gradient: {name} must return a real scalar, got {y_t}; "
                 "use jacobian or pullback")
    adj = ctx.engine.infer(adjoint_ir(jf, fwd), (READER, env_t, FLOAT64))
    decide(fwd, dead_pushes(fwd, adj))  # what this adjoint never reads is not recorded
    check_adjoint(fwd, adj)
    cots = adj.ret.elems if isinstance(adj.ret, TupleT) else (NONE,) * len(argtypes)
    ctx.typing.calls[s.var] = Call(fwd, operands, f)
    ctx.typing.calls[("adjoint", s.var)] = Call(adj, [], f)
    return cots, argtypes, nfree, y_t, needed


def _needed_entries(ctx: Context, s, n: int) -> set:
    """The entries of the gradient tuple the caller reads: those of `g[k]` (constant k)
    when that is all it does with `g`, else all `n`.  The others are not computed (the
    J transform takes their arguments as constants) and read None: a training loop's
    `gradient(loss, w, X, y)[0]` differentiates w only, not the data."""
    everything = set(range(n))
    if isinstance(s.var, tuple):     # a jcall's primal (`nested_jcall`): all are read
        return everything
    if not _with_value(s):
        got = _indices_read(ctx.typing.ir, s.var)
        return everything if got is None else {k % n for k in got if -n <= k < n}
    pair = _indices_read(ctx.typing.ir, s.var, keep_vars=True)
    if pair is None or any(not isinstance(k, tuple) for k in pair):
        return everything
    out: set = set()
    for k, var in pair:
        if k % 2 == 1:                   # the gradient half of (y, gradient)
            got = _indices_read(ctx.typing.ir, var)
            if got is None:
                return everything
            out |= {j % n for j in got if -n <= j < n}
    return out


def _indices_read(ir: IR, var, keep_vars: bool = False):
    """The constant indices `getitem(var, k)` reads, if that is every use of `var` (None
    otherwise); with `keep_vars`, `(k, the getitem's var)` pairs."""
    from ssair.ir import Const as C
    found = []
    for b in ir.blocks:
        if any(var in p.incoming.values() for p in b.phis) or \
                (b.term is not None and var in b.term.operands()):
            return None
        for st in b.stmts:
            if var not in st.args and var not in st.kwargs.values():
                continue
            if st.op != "getitem" or st.args[0] != var or len(st.args) != 2 \
                    or not isinstance(st.args[1], C) or type(st.args[1].value) is not int:
                return None
            found.append((st.args[1].value, st.var) if keep_vars else st.args[1].value)
    return found


def _with_value(s) -> bool:
    from adjoint import api
    return s.args[0].value is api.value_and_grad


def _raw(s) -> bool:
    return s.args[0].value is argument_cotangents


def argument_cotangents(f, *args):
    """The cotangents of f's arguments for a seed of 1.0 (f returns a real scalar) in
    the form reverse mode carries them, not `gradient`'s: an object's is made of its
    attributes' (`adjoint.pytrees.as_cotangent`; compiled, a tuple in the order of its
    entries), None where nothing reaches an argument.  Compiled, it is `gradient`'s
    code without its last step; a compiled property's pullback is made of it
    (`property_pullback`)."""
    from adjoint.api import pullback
    from adjoint.pytrees import as_cotangent
    _, back = pullback(f, *args, backend="interp")
    return tuple(as_cotangent(c) for c in back(1.0))


def _finish(fc: FunctionGen, g: L.Value, c: Type, x: L.Value, out: Type) -> L.Value:
    """The value `gradient` returns (type `out`) from cotangent `g` (type `c`) of the
    argument value `x`."""
    if out == NONE:
        return L.Constant(lltype(NONE), L.Undefined)
    if out == FLOAT64:
        return L.Constant(F64, 0.0) if c == NONE else fc.convert(g, c, FLOAT64)
    if isinstance(out, ArrayT):
        if c != NONE:       # (NULL where nothing reached x on this run's path: zeros)
            return ensure_array(fc, g, c, x, out)
        dims = [shape(fc, x, k) for k in range(out.ndim)]
        return allocate(fc, dims, out.dtype, 0.0)
    v = L.Constant(lltype(out), L.Undefined)
    for i, e in enumerate(out.elems):
        gi = fc.b.extract_value(g, i) if isinstance(c, TupleT) else None
        ci = c.elems[i] if isinstance(c, TupleT) else NONE
        v = fc.b.insert_value(v, _finish(fc, gi, ci, fc.b.extract_value(x, i), e), i)
    return v


_PROPERTY_PULLBACKS: dict = {}    # getter -> (it, the pullback below)


def property_pullback(getter: Any) -> Any:
    """`d(dy, obj) -> (cotangent of obj, None)` for a property computed by `getter`:
    the cotangent of obj in `sum(getter(obj) * dy)`, which compiled code computes as a
    nested gradient (the getter runs again: the forward kept no tape for it).  It is
    the cotangent reverse mode carries for obj (a tuple of its entries'), not the
    object `gradient` would return."""
    hit = _PROPERTY_PULLBACKS.get(id(getter))
    if hit is not None and hit[0] is getter:
        return hit[1]
    env = {"_F": getter, "_SUM": np.sum, "_COTANGENTS": argument_cotangents}
    src = ("def _weighted(obj, dy):\n    return _SUM(_F(obj) * dy)\n"
           "def _d_property(dy, obj):\n    return _COTANGENTS(_weighted, obj, dy)[0], None\n")
    exec(compile(src, getter.__code__.co_filename, "exec"), env)
    for name in ("_weighted", "_d_property"):
        env[name].__module__ = getter.__module__
        env[name].__qualname__ = f"{getter.__qualname__}.{name}"
    _PROPERTY_PULLBACKS[id(getter)] = (getter, env["_d_property"])
    return env["_d_property"]


def _presize(fc: FunctionGen, tape) -> L.GlobalVariable:
    """Presize the empty tape from the length this gradient's previous call ended with
    (`presize_tape`; a word of the module per gradient site); returns that word, for
    the caller to update."""
    module = fc.mg.module
    k = sum(1 for name in module.globals if name.startswith("zy_grad_tape_hint."))
    hint = L.GlobalVariable(module, I64, f"zy_grad_tape_hint.{k}")
    hint.linkage = "internal"
    hint.initializer = L.Constant(I64, 0)
    zero = L.Constant(L.IntType(32), 0)
    presize_tape(fc.mg, fc.b, fc.b.gep(tape, [zero, zero]),
                 fc.b.gep(tape, [zero, L.Constant(L.IntType(32), 2)]), hint)
    return hint


def _cg_gradient(fc: FunctionGen, s, ts: list) -> L.Value:
    b = fc.b
    call = fc.typing.calls[s.var]
    adj = fc.typing.calls[("adjoint", s.var)].target
    mark = b.load(symbols.arena_head_ptr(b), typ=PTR)
    tape = fc.alloca(_TAPE_HEAD)
    b.store(L.Constant(_TAPE_HEAD, [0, 0, 0]), tape)
    hint = _presize(fc, tape)
    lead = [tape]
    if isinstance(ts[0], ClosureT):
        clo = fc.get(s.args[1])
        lead += [b.extract_value(clo, i) for i in range(len(ts[0].captured))]
    free = fc.mg.extern("free", L.VoidType(), [PTR])
    zero = L.Constant(L.IntType(32), 0)

    def release() -> None:
        b.call(free, [b.load(b.gep(tape, [zero, zero]), typ=PTR)])

    res = fc.call_user(call.target, call.operands, lead, on_error=release)
    reader = fc.alloca(_READER)
    b.store(tape, b.gep(reader, [zero, zero]))
    used = b.load(b.gep(tape, [zero, L.Constant(L.IntType(32), 1)]), typ=I64)
    b.store(used, hint)
    b.store(used, b.gep(reader, [zero, L.Constant(L.IntType(32), 1)]))
    g = fc.call_user(adj, [], [reader, b.extract_value(res, 1), L.Constant(F64, 1.0)],
                     on_error=release)
    release()
    nfree = len(lead) - 1
    adj_t = fc.mg.engine.table.get(adj.key, adj).ret
    fwd_t = fc.mg.engine.table.get(call.target.key, call.target).ret
    grads_t = s.type.elems[1] if _with_value(s) else s.type
    out = L.Constant(lltype(grads_t), L.Undefined)
    for k, want in enumerate(grads_t.elems):
        c = adj_t.elems[nfree + k] if isinstance(adj_t, TupleT) else NONE
        gk = b.extract_value(g, nfree + k) if isinstance(adj_t, TupleT) else None
        if _raw(s):         # the cotangent as compiled reverse mode holds it
            part = L.Constant(lltype(NONE), L.Undefined) if want == NONE else gk
        else:
            part = _finish(fc, gk, c, fc.get(call.operands[k]), want)
        out = b.insert_value(out, part, k)
    out = _reclaim(fc, mark, out, grads_t)
    if not _with_value(s):
        return out
    y = fc.convert(b.extract_value(res, 0), fwd_t.elems[0], s.type.elems[0])
    pair = b.insert_value(L.Constant(lltype(s.type), L.Undefined), y, 0)
    return b.insert_value(pair, out, 1)


def _reclaim(fc: FunctionGen, mark: L.Value, out: L.Value, t: Type) -> L.Value:
    """Free what f's forward and adjoint allocated since `mark` (the arena block list's
    head before them), keeping copies of the gradient's arrays: in a compiled loop, a
    gradient's temporaries would otherwise stay until the outermost call returns.  The
    copies are the newest blocks; the run below them down to `mark` is freed."""
    b = fc.b
    paths = [(p, leaf) for p, leaf in out_leaves(t) if isinstance(leaf, ArrayT)]
    if not paths:
        b.call(runtime_callee("zy_release", L.FunctionType(L.VoidType(), [PTR])), [mark])
        return out
    first = None
    for path, at in paths:
        leaf = out
        for i in path:
            leaf = b.extract_value(leaf, i)
        leaf = copy_array(fc, leaf, at)
        if first is None:     # its block: 16 bytes before its data (jit.runtime.native)
            first = b.gep(b.extract_value(leaf, 0), [L.Constant(I64, -16)],
                          source_etype=L.IntType(8))
        out = b.insert_value(out, leaf, list(path)) if path else leaf
    below = runtime_callee("zy_release_below", L.FunctionType(L.VoidType(), [PTR, PTR]))
    b.call(below, [first, mark])
    return out


def _t_property_pullback(ctx: Context, s, ts) -> Type:
    """d_getattr of an object's property: the getter's own gradient (`property_pullback`)."""
    from jit.library.python_impls import impl_call
    from jit.library.records import property_getter
    name = ctx.const(s.args[3])
    if ts[1] not in (FLOAT64, INT64) and not isinstance(ts[1], ArrayT):
        ctx.fail(f"the gradient of property {name!r} of a {ts[2].cls.__name__} object, "
                 f"whose cotangent is {ts[1]}, is not compiled (a number or an array is)")
    impl = property_pullback(property_getter(ts[2], name))
    ret = impl_call(ctx, s, impl, [s.args[1], s.args[2]])
    ctx.typing.calls[s.var].callee = s.args[0].value
    return ret


def _t_captured(ctx: Context, s, ts: list) -> Type:
    """`captured_values(f)` (the pullback of a nested gradient of a closure reads the
    values it closes over): the tuple of a closure's captured values, () for a plain
    function."""
    if isinstance(ts[0], ClosureT):
        return TupleT(tuple(ts[0].captured))
    if getattr(ts[0], "func", None) is not None and not getattr(ts[0].func, "__closure__", 1):
        return TupleT(())
    ctx.fail(f"the captured values of a {ts[0]}")


def _cg_captured(fc: FunctionGen, s, ts: list) -> L.Value:
    """A closure's native value is the struct of its captured values, laid out as the
    tuple of them."""
    if isinstance(ts[0], ClosureT):
        return fc.get(s.args[1])
    return L.Constant(lltype(TupleT(())), [])


def _cg_check_seed(fc: FunctionGen, s, ts: list) -> L.Value:
    """`check_seed(y, dy, name)`: nothing to check for two floats; for two float arrays of
    one rank their shapes compared natively, the host call (which raises `back`'s error)
    made only when they differ; anything else by the host call."""
    from jit.codegen.host_calls import lower_library_call
    y_t, dy_t = ts[0], ts[1]
    none = L.Constant(lltype(NONE), L.Undefined)
    if y_t in (FLOAT64, FLOAT32) and dy_t in (FLOAT64, FLOAT32, INT64):
        return none
    if isinstance(y_t, ArrayT) and isinstance(dy_t, ArrayT) and y_t.ndim == dy_t.ndim and \
            y_t.dtype in (FLOAT64, FLOAT32) and dy_t.dtype in (FLOAT64, FLOAT32):
        b = fc.b
        y, dy = fc.get(s.args[1]), fc.get(s.args[2])
        bad = L.Constant(L.IntType(1), 0)
        for k in range(y_t.ndim):
            bad = b.or_(bad, b.icmp_signed("!=", shape(fc, y, k), shape(fc, dy, k)))
        with b.if_then(bad, likely=False):
            lower_library_call(fc, s, ts)
        return none
    return lower_library_call(fc, s, ts)


def _check_pure(ctx: Context, fn: Any, n: int) -> bool:
    """Refuse (saying why) a pullback's function that may write into its arguments or
    repeat an effect when run again, or is not called with all of its positional
    parameters."""
    from adjoint.passes.nested_pullback import writes_nothing
    if not writes_nothing(fn, n):
        ctx.fail(f"pullback() of {fn.__qualname__} inside compiled code is compiled for a "
                 "function called with all its positional parameters, that writes into "
                 "none of them and has no effect a second run repeats (a random draw, a "
                 "print)")
    return True


def _t_pullback(ctx: Context, s, ts: list) -> Type:
    """`pullback(f, xs...)` whose `back` is only called, for an f its type fixes (a
    function value: the lowering rewrote the other forms, `adjoint.passes.nested_pullback`):
    the same rewrite, a closure's captured values read from it."""
    from adjoint.nested_hv import captured_values, library_callee
    from adjoint.passes.nested_pullback import back_calls, rewritten, with_captured
    from jit.typing.spread import RewriteStatement
    from ssair.ir import Const, Stmt
    f, n = ts[0], len(s.args) - 2
    if s.kwargs or n < 1 or back_calls(ctx.typing.ir, s.var) is None:
        ctx.fail("pullback() inside compiled code is not compiled yet where its back "
                 "escapes (returned, stored or passed on); gradient() is")
    if isinstance(f, ClosureT) and _check_pure(ctx, f.func, n):
        fn, nfree = with_captured(f.func), len(f.captured)
    elif isinstance(f, FunctionT) and (library_callee(f.func) or type(f.func) is
                                       pytypes.FunctionType and _check_pure(ctx, f.func, n)):
        fn, nfree = f.func, 0
    else:
        ctx.fail(f"pullback() of a {f} inside compiled code is not compiled")

    def build(ir: IR, st) -> list:
        made = []
        if nfree:
            made.append(Stmt(ir.new_var(), "call", [Const(captured_values), st.args[1]],
                             line=st.line))
            made += [Stmt(ir.new_var(), "getitem", [made[0].var, Const(j)], line=st.line)
                     for j in range(nfree)]
        return rewritten(ir, st, back_calls(ir, st.var), fn, made, [m.var for m in made[1:]])
    raise RewriteStatement("a pullback and its back", s.var, build)


def typed_ir(ir: IR, values: tuple) -> IR:
    """`ir` as the JIT types it for these argument values, its statements rewritten by
    their types (`_t_pullback`): what a top-level pullback differentiates (the
    runner's `typed_ir`, `jit.pullback.backend`).  `ir` itself when its typing fails
    (the compiled forward then reports why).  Kept per IR and argument types: a
    refusal is not typed again at every call."""
    from jit.typing.infer import ENGINE
    from jit.types import typeof
    argtypes = tuple(typeof(v) for v in values)
    hit = _TYPED.get((id(ir), argtypes))
    if hit is not None and hit[0] is ir:
        return hit[1]
    try:
        out = ENGINE.infer(ir, argtypes).unrolled or ir
    except Exception:       # noqa: BLE001  (the forward's typing reports what fails)
        out = ir
    _TYPED[(id(ir), argtypes)] = (ir, out)
    return out


_TYPED: dict = {}     # (id(ir), argument types) -> (ir, what typed_ir gives for them)
on_invalidate(_TYPED.clear)      # (a global was rebound: everything is lowered again)


def _refused(name: str):
    def refuse(ctx: Context, s, ts: list) -> Type:
        ctx.fail(f"{name}() inside compiled code is not compiled yet; gradient() is")
    return refuse


def _declare() -> None:
    from adjoint import api
    from adjoint.forward import hessian
    from adjoint.passes.nested_pullback import check_seed
    from jit.library.numpy_calls import host_rule
    for f in (api.gradient, api.value_and_grad):
        REGISTRY.declare(f, family=FAMILY, pattern="function, arguments", types=_t_gradient,
                         lower=_cg_gradient, numpy_too=True, name=f"adjoint.{f.__name__}")
    REGISTRY.declare(argument_cotangents, family=FAMILY, pattern="function, arguments",
                     types=_t_cotangents, lower=_cg_gradient, numpy_too=True,
                     name="the cotangents of a function's arguments")
    REGISTRY.declare(captured_values, family=FAMILY, pattern="a function",
                     types=_t_captured, lower=_cg_captured, numpy_too=True,
                     name="the values a closure captured")
    REGISTRY.add(RULE_OBJECTS, "d_getattr of an object's property (its getter's gradient)",
                 record_property, _t_property_pullback, None, numpy_too=True)
    REGISTRY.declare(check_seed, family=FAMILY, pattern="a value and a cotangent (numbers "
                     "and float arrays natively; else, and to raise, a host call)",
                     types=host_rule("back(dy)", "y, dy, name", lambda a: NONE, check_seed),
                     lower=_cg_check_seed, numpy_too=True,
                     name="back(dy)'s check of dy in a nested pullback")
    REGISTRY.declare(api.pullback, family=FAMILY, pattern="a function its type fixes, "
                     "arguments; back only called", types=_t_pullback, numpy_too=True,
                     name="adjoint.pullback")
    for f in (api.jacobian, hessian):   # (their code is not the user's)
        REGISTRY.declare(f, family=FAMILY, pattern="any (refused, saying so)",
                         types=_refused(f.__name__),
                         numpy_too=True, name=f"adjoint.{f.__name__}")


_declare()
