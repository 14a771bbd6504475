"""`backend="llvm"` for adjoint.pullback: the forward and adjoint IR of a J transform
compiled to native code (registered with `adjoint.api.register_backend`).

One forward call allocates one native *block*:

    struct block { tape (i64 *data, i64 len, i64 cap); ptr chain; ptr mark; env }

The block starts with the tape (so the block pointer is the `%tape` operand), then the
arrays the forward allocated (`chain`, detached from the runtime arena down to
`mark`, so they outlive the call: the tape and the env may point into them), then
the forward's env (the second half of its `(y, env)` result) in its native layout.
`back(dy)` calls the adjoint entry with the block: it builds a reader on its stack at
the tape's end and loads the env, so reading never changes the block and `back` runs
any number of times.  The block is freed when the env object (`NativeEnv`, held by
the `Pullback`) is garbage-collected.

Entries (C ABI, called through ctypes with the GIL held):

    <y>  zy_fwd_N(<flattened args>[, ptr yout])   ERRINFO[0] status, ERRINFO[6] block
    <g>  zy_adj_N(ptr block, <flattened dy>[, ptr gout])

A float64 / int64 / bool result (or a gradient tuple with one float leaf) comes back
directly; anything else through a ctypes structure (`jit.codegen.entry`).
"""
from __future__ import annotations

import ctypes
from typing import Any

from llvmlite import ir as L

from adjoint.passes.stacks import entry_forward
from ssair import progress
from ssair.compile_lock import compiling

from jit.runtime import native as runtime
from jit.runtime import symbols
from jit.runtime.native import BLOCK_SLOT, NativeDeopt, adjoint_failed
from jit.codegen.function import I32, I64, PTR, ModuleGen, lltype, size_and_alignment
from jit.codegen.entry import (
    _LL_OF_CTYPE,
    _rebuild,
    _release,
    _return,
    contains_array,
    copy_array,
    ctype_of,
    flat_ctypes,
    flat_names,
    out_leaves,
    range_checks,
    unbox_expr,
)
from jit.pullback.jcalls import adjoint_ir
from jit.pullback.dead_slots import check_adjoint, dead_pushes, decide
from jit.pullback.tape_ops import presize_tape
from jit.runtime.gradient_entry import build_fast_adjoint_entry
from jit.runtime.host_pullbacks import release
from jit.runtime.pullback_builtins import NativeEntries
from jit.typing.infer import ENGINE
from jit.types import (
    BOOL,
    FLOAT32,
    FLOAT64,
    INT32,
    INT64,
    NONE,
    READER,
    TAPE,
    ArrayT,
    TupleT,
    Type,
    TypingError,
    typeof,
)

ENV_OFF, CHAIN_OFF, MARK_OFF = 40, 24, 32
_DIRECT = {FLOAT64: ctypes.c_double, INT64: ctypes.c_int64, BOOL: ctypes.c_bool}


# -- the block -------------------------------------------------------------------------
_FREE_IR = r"""
declare void @free(ptr)
declare void @zy_free_run(ptr, ptr)

define void @zy_block_free(ptr %blk) {
entry:
  %chainp = getelementptr i8, ptr %blk, i64 24
  %markp = getelementptr i8, ptr %blk, i64 32
  %chain = load ptr, ptr %chainp
  %mark = load ptr, ptr %markp
  call void @zy_free_run(ptr %chain, ptr %mark)
  %data = load ptr, ptr %blk
  call void @free(ptr %data)
  call void @free(ptr %blk)
  ret void
}
"""
_STATE: dict = {}


_FREE_INT_IR = r"""
declare void @zy_block_free(ptr)

define i64 @zy_block_free_int(i64 %blk) {
entry:
  %p = inttoptr i64 %blk to ptr
  call void @zy_block_free(ptr %p)
  ret i64 0
}
"""


def block_free() -> Any:
    """`free(block)`: a `jit.runtime.fastcall` builtin (a ctypes function where the object
    layout does not allow one), compiled once."""
    fn = _STATE.get("free")
    return fn if fn is not None else _compile_block_free()


@compiling
def _compile_block_free() -> Any:
    fn = _STATE.get("free")
    if fn is None:
        from types import SimpleNamespace

        from jit.runtime.fastcall import builtin, emit_wrapper
        runtime.arena_functions()   # zy_free_run, which _FREE_IR calls
        runtime.compile_ir(_FREE_IR)
        addr = runtime.function_address("zy_block_free")
        slow = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addr)
        runtime.compile_ir(_FREE_INT_IR)
        sig = SimpleNamespace(argtypes=(INT64,), ret=INT64,
                              ir=SimpleNamespace(name="zy_block_free"))
        # the wrapper calls zy_block_free_int by name, so its text is the same in every
        # process (`runtime.compile_ir` finds its object on disk)
        mod = L.Module(name="zy_block_free_fast")
        callee = L.Function(mod, L.FunctionType(I64, [I64]), "zy_block_free_int")
        name = emit_wrapper(mod, sig, callee, "zy_block_free_fast")
        fn = None
        if name is not None:
            runtime.compile_ir(str(mod), level=0)
            fn = builtin(name, sig, slow, lambda blk: None)  # a status left by an earlier call
        _STATE["free"] = fn = fn or slow
    return fn


class NativeEnv:
    """The native block of one forward run; freed with this object."""

    __slots__ = ("__weakref__", "args", "blk", "code", "free", "handles")

    def __init__(self, blk: int, code: ForwardCode, args: tuple, handles: list = ()) -> None:
        self.blk, self.code, self.args, self.free = blk, code, args, code.free
        self.handles = handles     # of the interpreter's pullbacks on its tape

    def __del__(self) -> None:
        if self.blk:
            self.free(self.blk)
            self.blk = 0
        if self.handles:
            release(self.handles)
            self.handles = ()

    def tape_words(self) -> int:
        """The number of 8-byte tape slots the forward recorded."""
        return ctypes.c_int64.from_address(self.blk + 8).value

    def __repr__(self) -> str:
        return f"<native pullback block of {self.code.jf.primal.name}>"


# -- entries -------------------------------------------------------------------------------
def _errinfo(b: L.IRBuilder, k: int) -> L.Value:
    base = symbols.errinfo_ptr(b)
    return b.gep(base, [L.Constant(I64, k)], source_etype=I64)


def _at(b: L.IRBuilder, p, off: int) -> L.Value:
    return b.gep(p, [L.Constant(I64, off)], source_etype=L.IntType(8))


def _direct_leaf(t: Type) -> Any:
    """The one scalar leaf returned by value, or None (results through memory)."""
    if t in _DIRECT:
        return t
    leaves = out_leaves(t)
    if isinstance(t, TupleT) and len(leaves) == 1 and leaves[0][1] == FLOAT64:
        return FLOAT64
    return None


def no_out(t: Type) -> bool:
    """Is a result of type `t` returned by value (or not at all), without `out`?"""
    return _direct_leaf(t) is not None or not out_leaves(t)


def _ret_type(t: Type) -> L.Type:
    leaf = _direct_leaf(t)
    return {FLOAT64: L.DoubleType(), INT64: I64, BOOL: L.IntType(8)}.get(leaf, L.VoidType())


def _return_value(b: L.IRBuilder, t: Type, value, outp) -> None:
    """Return `value` of type `t`: by value when `_direct_leaf`, else through outp."""
    leaf = _direct_leaf(t)
    if leaf is None and not out_leaves(t):
        b.ret_void()
        return
    if leaf is not None and isinstance(t, TupleT):
        path = out_leaves(t)[0][0]
        for i in path:
            value = b.extract_value(value, i)
        b.ret(value)
        return
    slot = b.alloca(lltype(t))
    b.store(value, slot)
    _return(b, t, slot, outp)


def _tape_hint(mg: ModuleGen) -> L.GlobalVariable:
    """The module's word holding the tape length its forward's last call ended with."""
    hint = mg.module.globals.get("zy_tape_hint")
    if hint is None:
        hint = L.GlobalVariable(mg.module, I64, "zy_tape_hint")
        hint.linkage = "internal"
        hint.initializer = L.Constant(I64, 0)
    return hint


def build_forward_entry(mg: ModuleGen, t, impl: L.Function) -> L.Function:
    """`zy_fwd_N`: allocate the block (its tape presized from `_tape_hint`), run the
    forward, detach what it allocated into the block, store its env; the tape's final
    length becomes the next call's size hint."""
    y_t = t.ret.elems[0]
    params = [_LL_OF_CTYPE[c] for a in t.argtypes[1:] for c in flat_ctypes(a)]
    outp = not no_out(y_t)
    fn = L.Function(mg.module, L.FunctionType(_ret_type(y_t), params + [PTR] * outp),
                    f"zy_fwd_{mg.uid}")
    b = L.IRBuilder(fn.append_basic_block("entry"))
    it = iter(fn.args)
    values = [_rebuild(b, a, it) for a in t.argtypes[1:]]
    env_size = size_and_alignment(lltype(t.ret.elems[1]))[0]
    malloc = mg.extern("malloc", PTR, [I64])
    blk = b.call(malloc, [L.Constant(I64, ENV_OFF + max(env_size, 8))])
    for off in (0, 8, 16):
        b.store(L.Constant(I64, 0), _at(b, blk, off))
    presize_tape(mg, b, blk, _at(b, blk, 16), _tape_hint(mg))   # the block starts with its tape
    headp = symbols.arena_head_ptr(b)
    mark = b.load(headp, typ=PTR)
    call = b.call(impl, [L.Constant(I64, 0), blk] + values)
    status = b.extract_value(call, 0)
    b.store(b.sext(status, I64), _errinfo(b, 0))
    b.store(b.ptrtoint(blk, I64), _errinfo(b, BLOCK_SLOT))
    b.store(b.load(_at(b, blk, 8), typ=I64), _tape_hint(mg))
    b.store(b.load(headp, typ=PTR), _at(b, blk, CHAIN_OFF))
    b.store(mark, _at(b, blk, MARK_OFF))
    b.store(mark, headp)
    res = b.extract_value(call, 1)
    b.store(b.extract_value(res, 1), _at(b, blk, ENV_OFF))
    _return_value(b, y_t, b.extract_value(res, 0), fn.args[-1] if outp else None)
    return fn


def build_adjoint_entry(mg: ModuleGen, t, impl: L.Function) -> L.Function:
    env_t, dy_t, g_t = t.argtypes[1], t.argtypes[2], t.ret
    params = [PTR] + [_LL_OF_CTYPE[c] for c in flat_ctypes(dy_t)]
    outp = not no_out(g_t)
    fn = L.Function(mg.module, L.FunctionType(_ret_type(g_t), params + [PTR] * outp),
                    f"zy_adj_{mg.uid}")
    b = L.IRBuilder(fn.append_basic_block("entry"))
    blk = fn.args[0]
    it = iter(fn.args[1:])
    dy = _rebuild(b, dy_t, it)
    reader = b.alloca(L.LiteralStructType([PTR, I64]))
    b.store(blk, b.gep(reader, [L.Constant(I32, 0), L.Constant(I32, 0)]))
    b.store(b.load(_at(b, blk, 8), typ=I64), b.gep(reader, [L.Constant(I32, 0),
                                                           L.Constant(I32, 1)]))
    env = b.load(_at(b, blk, ENV_OFF), typ=lltype(env_t))
    release = mg.allocates and not contains_array(g_t)
    mark = b.load(symbols.arena_head_ptr(b), typ=PTR) if release else None
    call = b.call(impl, [L.Constant(I64, 0), reader, env, dy])
    b.store(b.sext(b.extract_value(call, 0), I64), _errinfo(b, 0))
    if release:
        _release(mg, b, mark)
    _return_value(b, g_t, b.extract_value(call, 1), fn.args[-1] if outp else None)
    return fn


# -- Python wrappers --------------------------------------------------------------------------
def make_call(name: str, addr: int, argtypes: tuple, ret: Type, lead: list, tail: list,
              env: dict, result: str = "{}") -> Any:
    """A Python function `name(<lead names>, <arg names>)` around a compiled entry:
    int64 range checks, one ctypes call, the `tail` lines (status tests), then
    `return result.format(<the result rebuilt>)`.  Arrays in a result are copied
    into numpy memory, then the arena blocks the call allocated are released."""
    names = [f"a{i}" for i in range(len(argtypes))]
    flat = [x for n, a in zip(names, argtypes) for x in flat_names(n, a, strict=True)]
    cargs = [ctypes.c_void_p] * len(lead) + [c for a in argtypes for c in flat_ctypes(a)]
    direct = no_out(ret)
    restype = _DIRECT.get(_direct_leaf(ret)) if direct else None
    if not direct:
        cargs.append(ctypes.c_void_p)
    env.update(cf=ctypes.PYFUNCTYPE(restype, *cargs)(addr), err=runtime.ERRINFO,
               copy_array=copy_array, rt=runtime)
    lines = [f"def {name}({', '.join(lead + names)}):"]
    for c in (c for n, a in zip(names, argtypes) for c in range_checks(n, a)):
        lines.append(f"    if not ({c}): deopt()")
    keep = not direct and contains_array(ret) and name == "adjoint"
    if keep:
        lines.append("    mark = rt.ARENA_HEAD.value")
    if not direct:
        env["o"] = o = ctype_of(ret)()
        env["oaddr"] = ctypes.addressof(o)
    call = ", ".join(lead + flat + ([] if direct else ["oaddr"]))
    lines.append(f"    r = cf({call})")
    lines += ["    " + x for x in tail]
    value = unbox_expr(ret, env, [0], direct)
    if keep:
        lines += [f"    v = {value}", "    rt.arena_release(mark)"]
        value = "v"
    lines.append(f"    return {result.format(value)}")
    exec(compile("\n".join(lines), f"<jit pullback {name}>", "exec"), env)
    return env[name]


def _unrolled_transform(jf: Any, argtypes: tuple) -> Any:
    """`jf`, or the J transform of its primal with the loops over tuples of differently
    typed entries unrolled where the primal's typing for `argtypes` unrolled them
    (`jit.typing.unroll`): the forward and the adjoint then agree copy by copy."""
    from adjoint.transform import transform
    from adjoint.transform import lower_function as lowered
    func = jf.primal.func
    if func is None:
        return jf
    try:        # the function's own IR, as lowered (jf.primal is the transform's copy)
        unrolled = ENGINE.infer(lowered(func), argtypes).unrolled
    except Exception:       # noqa: BLE001  (the forward's typing reports what fails)
        return jf
    if unrolled is None:
        return jf
    unrolled = unrolled.copy()       # (the caller seeds the cotangents `jf` takes in)
    unrolled.meta["inout_floor"] = jf.inout
    out = transform(unrolled, jf.active_args, tuple(str(t) for t in argtypes))
    if jf.recompute:        # checkpointed as `jf` was
        from adjoint.transform import checkpointed
        out = checkpointed(out, jf.forward.meta["checkpoint_mb"])
    return out


def _raise_deopt() -> None:
    raise NativeDeopt("compiled pullback: an argument does not fit in int64")


class ForwardCode:
    """The compiled forward of one J transform for one argument signature, and its
    compiled adjoints keyed by the type of `dy`."""

    def __init__(self, jf: Any, argtypes: tuple) -> None:
        jf = _unrolled_transform(jf, argtypes)
        self.jf, self.argtypes = jf, argtypes
        self.typing = ENGINE.infer(entry_forward(jf.forward), (TAPE,) + argtypes)
        if not isinstance(self.typing.ret, TupleT):
            raise TypingError(f"jit: {jf.forward.name} does not return (y, env)")
        self.env_t = self.typing.ret.elems[1]
        self.host_pullbacks = self.typing.host_pullbacks   # (jit.pullback.host_jcalls)
        self.free = block_free()
        dy_t = cotangent_type(self.typing.ret.elems[0], jf.inout)
        adj_typing = ENGINE.infer(adjoint_ir(jf, self.typing), (READER, self.env_t, dy_t))
        # a checkpointed loop's recompute function pushes as its own typing decides,
        # so the forward drops no slot either (adjoint.passes.checkpoint)
        decide(self.typing, frozenset() if jf.recompute else
               dead_pushes(self.typing, adj_typing))
        progress.stage("LLVM IR generation")
        mg = ModuleGen(ENGINE, self.typing)
        entry = build_forward_entry(mg, self.typing, mg.build())
        # the adjoint for the usual dy goes into the same module: one LLVM compile
        adjoint = AdjointCode(self, dy_t, mg)
        self.native = NativeEntries(mg.module, self, entry, adjoint)
        self.llvm_text = str(mg.module)
        self.module = runtime.compile_ir(self.llvm_text)
        adjoint.finish(self.module, self.llvm_text)
        self.native.finish()
        addr = runtime.function_address(entry.name)
        env = {"deopt": _raise_deopt, "failed": self._failed}
        tail = [f"blk = err[{BLOCK_SLOT}]", "if err[0]: failed(blk)"]
        self.call = make_call("forward", addr, argtypes, self.typing.ret.elems[0], [], tail,
                              env, "{}, blk")
        self.adjoints: dict = {dy_t: adjoint}
        if dy_t == FLOAT64:
            self.adjoints[float] = adjoint
        self.default_adjoint = adjoint

    def _failed(self, blk: int) -> Any:
        status = runtime.ERRINFO[0]
        err = runtime.current_error() if status == runtime.ERROR else None
        self.free(blk)
        if err is not None:
            raise err
        site = runtime.current_site()
        raise NativeDeopt(f"{site.template} in compiled {site.func} at {site.file}:{site.line}")

    def adjoint_for(self, dy: Any) -> AdjointCode:
        code = self.adjoints.get(type(dy))
        if code is not None:
            return code
        return self.adjoint_for_type(typeof(dy))

    def adjoint_for_type(self, dy_t: Type) -> AdjointCode:
        code = self.adjoints.get(dy_t)
        return code if code is not None else self._compile_adjoint(dy_t)

    @compiling
    def _compile_adjoint(self, dy_t: Type) -> AdjointCode:
        code = self.adjoints.get(dy_t)
        if code is None:
            code = self.adjoints[dy_t] = AdjointCode(self, dy_t)
            if dy_t == FLOAT64:
                self.adjoints[float] = code
        return code


def cotangent_type(t: Type, inout: tuple = ()) -> Type:
    """The type of the `dy` that `back` usually gets for a result of type `t` (what
    `gradient` and `jacobian` pass); with in-out arguments it is `(dy, None)`."""
    if inout:
        return TupleT((cotangent_type(t), NONE))
    if t in (FLOAT64, INT64, BOOL, FLOAT32, INT32):
        return FLOAT64           # (a float32 result's too: `gradient` passes 1.0)
    if isinstance(t, ArrayT):
        return ArrayT(FLOAT64, t.ndim)
    if isinstance(t, TupleT):
        return TupleT(tuple(cotangent_type(e) for e in t.elems))
    return NONE


class AdjointCode:
    """The compiled adjoint for one forward signature and one type of `dy`."""

    def __init__(self, fwd: ForwardCode, dy_t: Type, mg: Any = None) -> None:
        """Compile now, or (given the forward's `mg`) emit into that module and wait
        for `finish` once the module is compiled."""
        adj = adjoint_ir(fwd.jf, fwd.typing)
        self.dy_t = dy_t
        self.typing = ENGINE.infer(adj, (READER, fwd.env_t, dy_t))
        check_adjoint(fwd.typing, self.typing)
        own = mg is None
        mg = mg or ModuleGen(ENGINE, self.typing)
        impl = mg.function(self.typing)
        mg.build()  # emits every function declared but not yet emitted
        self.entry = build_adjoint_entry(mg, self.typing, impl)
        # the fast entry calls this one: one copy of the adjoint's (vectorised) loops
        # to compile, not one inlined into each entry
        self.entry.attributes.add("noinline")
        self.fast_entry = build_fast_adjoint_entry(mg, self.typing, self.entry)
        if own:
            text = str(mg.module)
            self.finish(runtime.compile_ir(text), text)

    def finish(self, module: Any, text: str) -> None:
        self.module, self.llvm_text = module, text
        addr = runtime.function_address(self.entry.name)
        env = {"deopt": _raise_deopt, "failed": adjoint_failed}
        tail = ["if err[0]: failed()"]
        self.call = make_call("adjoint", addr, (self.dy_t,), self.typing.ret, ["blk"], tail,
                              env)


