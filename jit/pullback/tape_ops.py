"""Type rules and LLVM lowering of the tape primitives (`push`, `pop`), the table
entries the compiled forward and adjoint of a pullback need (see jit.runtime.tape
for the native layout).  Further adjoint primitives register here the same way:
one `rule` (jit.typing.infer) and one `codegen` (jit.codegen.function) per op.
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir as L
from ssair.ir import IR, Const

from jit.codegen.function import (F64, I1, I64, PTR, FunctionGen, array_fields, codegen, lltype,
                                  size_and_alignment)
from jit.codegen.arrays import runtime_callee
from jit.typing.infer import Context, LiteralT, rule
from jit.types import (
    BOOL,
    FLOAT64,
    INT64,
    NONE,
    READER,
    TAPE,
    ArrayT,
    BuiltListT,
    ClosureT,
    FunctionT,
    ObjectT,
    StrT,
    TupleT,
    Type,
    TypingError,
    count_held,
    FLOAT32,
    INT32,
    wide,
)

ZERO = L.Constant(I64, 0)


def tape_leaves(t: Type) -> list:
    """The scalar leaf types a value occupies on the tape, in slot order."""
    if t in (FLOAT64, INT64, BOOL):
        return [t]
    if t in (FLOAT32, INT32):      # held in a double / an i64 (`jit.codegen.function`)
        return [wide(t)]
    if isinstance(t, (StrT, ObjectT)):
        return [INT64]
    if isinstance(t, BuiltListT):   # data, length, capacity (its entries stay in the arena)
        return [INT64] * 3
    if t == NONE or _no_data(t):
        return []
    if isinstance(t, ArrayT):  # data pointer, shapes, strides (the memory is kept alive
        # by the pullback: arguments and the forward's arena)
        return [INT64] * (1 + len(array_fields(t.ndim)))
    if isinstance(t, TupleT):
        return [x for e in t.elems for x in tape_leaves(e)]
    if isinstance(t, ClosureT):
        return [x for e in t.captured for x in tape_leaves(e)]
    raise TypeError(f"values of type {t} cannot be recorded on the tape yet")


def _no_data(t: Type) -> bool:
    """A function, a token, or a literal (a constant option a callee was specialised
    on, `keepdims=False`): its type is its value, nothing goes on the tape."""
    return isinstance(t, (FunctionT, LiteralT)) or getattr(t, "token", False)


@rule("push")
def _t_push(ctx: Context, s, ts) -> Type:
    if ts[0] != TAPE:
        ctx.fail(f"push onto a {ts[0]}, not a tape")
    try:
        tape_leaves(ts[1])
    except TypeError as e:
        ctx.fail(str(e))
    return NONE


@rule("pop")
def _t_pop(ctx: Context, s, ts) -> Type:
    if ts[0] != READER:
        ctx.fail(f"pop from a {ts[0]}, not a tape reader")
    t = ctx.typing.ir.meta.get("pop_types", {}).get(s.var.id)
    if t is None:
        ctx.fail("the type of this pop is not recorded (the adjoint IR must carry "
                 "meta['pop_types'][var id])")
    return t


def _word(fc: FunctionGen, v, t) -> L.Value:
    if isinstance(t, ObjectT):
        return fc.b.ptrtoint(v, I64)
    if t == FLOAT64 or t == FLOAT32:
        return fc.b.bitcast(v, I64)
    if t == BOOL:
        return fc.b.zext(v, I64)
    return v


def _unword(fc: FunctionGen, w, t) -> L.Value:
    if isinstance(t, ObjectT):
        return fc.b.inttoptr(w, PTR)
    if t == FLOAT64 or t == FLOAT32:
        return fc.b.bitcast(w, F64)
    if t == BOOL:
        return fc.b.trunc(w, I1)
    return w


def _flatten(fc: FunctionGen, v, t) -> list:
    if isinstance(t, (TupleT, ClosureT)):
        elems = t.elems if isinstance(t, TupleT) else t.captured
        return [w for i, e in enumerate(elems) for w in _flatten(fc, fc.b.extract_value(v, i), e)]
    if t == NONE or _no_data(t):
        return []
    if isinstance(t, ArrayT):
        words = [fc.b.extract_value(v, k) for k in array_fields(t.ndim)]
        return [fc.b.ptrtoint(fc.b.extract_value(v, 0), I64)] + words
    if isinstance(t, BuiltListT):
        return [fc.b.ptrtoint(fc.b.extract_value(v, 0), I64), fc.b.extract_value(v, 1),
                fc.b.extract_value(v, 2)]
    return [_word(fc, v, t)]


def _rebuild(fc: FunctionGen, words: list, t):
    if isinstance(t, (TupleT, ClosureT)):
        elems = t.elems if isinstance(t, TupleT) else t.captured
        out = L.Constant(lltype(t), L.Undefined)
        for i, e in enumerate(elems):
            out = fc.b.insert_value(out, _rebuild(fc, words, e), i)
        return out
    if t == NONE or _no_data(t):
        return L.Constant(L.IntType(8), 0)
    if isinstance(t, (ArrayT, BuiltListT)):
        out = L.Constant(lltype(t), L.Undefined)
        out = fc.b.insert_value(out, fc.b.inttoptr(words.pop(0), PTR), 0)
        for k in (array_fields(t.ndim) if isinstance(t, ArrayT) else (1, 2)):
            out = fc.b.insert_value(out, words.pop(0), k)
        return out
    return _unword(fc, words.pop(0), t)


def presize_tape(mg: Any, b: L.IRBuilder, data_word, cap_word,
                 hint: L.GlobalVariable) -> None:
    """Give an empty native tape (`data_word`, `cap_word`: the addresses of its data
    and capacity words) a buffer of `hint`'s words, the length a previous call ended
    with, so that a call made again grows its tape no more (the caller stores the new
    length into `hint` after its forward)."""
    words = b.load(hint, typ=I64)
    with b.if_then(b.icmp_signed(">", words, ZERO)):
        data = b.call(mg.extern("malloc", PTR, [I64]), [b.shl(words, L.Constant(I64, 3))])
        with b.if_then(b.icmp_unsigned("!=", data, L.Constant(PTR, None))):
            b.store(b.ptrtoint(data, I64), data_word)
            b.store(words, cap_word)


def _field(fc: FunctionGen, base, offset: int) -> L.Value:
    return fc.b.gep(base, [L.Constant(I64, offset)], source_etype=L.IntType(8))


def _run_of(fc: FunctionGen, s, op: str) -> list:
    """The statements of the run of consecutive `op`s on one tape/reader operand that
    starts at `s` (emit_stacks puts a block's pushes together at its end; the
    adjoint pops them together at its start): one capacity or bounds check each."""
    index = getattr(fc, "stmt_index", None)
    if index is None:
        index = fc.stmt_index = {st.var: (b, k) for b in fc.ir.blocks
                                 for k, st in enumerate(b.stmts)}
    block, k = index[s.var]
    run = []
    for st in block.stmts[k:]:
        if st.op != op or st.args[0] != s.args[0]:
            break
        run.append(st)
    return run


def _batched(fc: FunctionGen) -> dict:
    got = getattr(fc, "batched", None)
    if got is None:
        got = fc.batched = {}
    return got


def _static_phis(typed: IR) -> dict:
    """Var id -> value of the phis of a typed IR whose live incoming values are all
    one integer constant: a dummy phi whose other edges are dead for these types.
    The adjoint's branch on the popped edge is then decided at compile time, so
    the adjoint of a dead block (whose pops have no type) is never typed."""
    out = {}
    for b in typed.blocks:
        for p in b.phis:
            vals = {v.value for v in p.incoming.values() if isinstance(v, Const)
                    and type(v.value) is int}
            if len(vals) == 1 and all(isinstance(v, Const) for v in p.incoming.values()):
                out[p.var.id] = vals.pop()
    return out


def static_phis(typing: Any) -> dict:
    """`_static_phis` of a typed function, cached on its Typing."""
    got = getattr(typing, "static_phis", None)
    if got is None:
        got = typing.static_phis = _static_phis(typing.ir)
    return got


@codegen("push")
def _cg_push(fc: FunctionGen, s, ts):
    done = _batched(fc)
    if s.var in done:
        return
    from jit.pullback.dead_slots import decide
    run = _run_of(fc, s, "push")
    static = static_phis(fc.typing)
    dead = decide(fc.typing, frozenset())
    words = []
    for st in run:
        done[st.var] = None
        v = st.args[1]
        if getattr(v, "id", None) in static or getattr(v, "id", None) in dead:
            continue  # a constant (pop_static) or a value no adjoint reads (grad_dead)
        words += _flatten(fc, fc.get(v), fc.type_of(v))
    push_words(fc, fc.get(s.args[0]), words)
    return


def push_value(fc: FunctionGen, tape, v, t: Type) -> None:
    """Append the words of `v` (of type `t`) to the native tape `tape`: a record (a
    tuple or closure of several words, the env a `jcall` keeps for its `jback`) as one
    store of its struct, in the struct's own memory layout (`pop_value` loads it back
    whole; a word at a time was a quarter of a large gradient's instructions)."""
    k = _struct_words(fc, t)
    if k:
        fc.b.store(v, _reserve(fc, tape, k))
        return
    push_words(fc, tape, _flatten(fc, v, t))


def _struct_words(fc: FunctionGen, t: Type) -> int:
    """The tape words a record of type `t` takes when moved whole (0: moved word by
    word, as a single value is and as a device's tape (jit.cuda) moves everything)."""
    if not isinstance(t, (TupleT, ClosureT)) or getattr(fc.mg, "push_words", None) is not None:
        return 0
    if len(tape_leaves(t)) < 2:
        return 0
    size, _ = size_and_alignment(lltype(t))
    return -(-size // 8)


def push_words(fc: FunctionGen, tape, words: list) -> None:
    """Append 64-bit words to the tape; the buffer grows (a call) only when full.
    A module generator with its own tape layout (jit.cuda) supplies `push_words`."""
    if not words:
        return
    own = getattr(fc.mg, "push_words", None)
    if own is not None:
        return own(fc, tape, words)
    at = _reserve(fc, tape, len(words))
    for k, w in enumerate(words):
        fc.b.store(w, _word_at(fc.b, at, k))
    return


def _reserve(fc: FunctionGen, tape, k: int) -> L.Value:
    """Grow the tape by `k` words (a call only when its buffer is full) and return the
    address of the first."""
    b = fc.b
    lenp, capp = _field(fc, tape, 8), _field(fc, tape, 16)
    n = b.load(lenp, typ=I64)
    need = b.add(n, L.Constant(I64, k))
    with b.if_then(b.icmp_signed(">", need, b.load(capp, typ=I64)), likely=False):
        reserve = runtime_callee("zy_tape_reserve", L.FunctionType(L.IntType(32), [PTR, I64]))
        st = b.call(reserve, [tape, L.Constant(I64, k)])
        fc.raise_if(b.icmp_signed("!=", st, L.Constant(L.IntType(32), 0)), MemoryError,
                    "cannot grow the tape")
    at = b.gep(b.load(tape, typ=PTR), [n], source_etype=I64)
    b.store(need, lenp)
    return at


def _word_at(b: L.IRBuilder, at: L.Value, k: int) -> L.Value:
    """The address of the `k`-th word from `at` (one instruction per word of a record:
    a tape record of a large function has hundreds)."""
    return at if k == 0 else b.gep(at, [L.Constant(I64, k)], source_etype=I64)


@codegen("pop")
def _cg_pop(fc: FunctionGen, s, ts):
    done = _batched(fc)
    if s.var in done:
        return done[s.var]
    static = fc.ir.meta.get("pop_static", {})
    dead = _dead_pops(fc)
    run = _run_of(fc, s, "pop")
    live = [st for st in run if st.var.id not in static and st.var.id not in dead]
    sizes = [len(tape_leaves(st.type)) for st in live]
    words = pop_words(fc, fc.get(s.args[0]), sum(sizes))
    top = len(words)
    for st in run:
        if st.var.id in static:
            done[st.var] = L.Constant(lltype(st.type), static[st.var.id])
            continue
        if st.var.id in dead:
            from jit.codegen.function import zero_of
            done[st.var] = zero_of(st.type)
            continue
        k = sizes[live.index(st)]
        done[st.var] = _rebuild(fc, words[top - k:top], st.type)
        top -= k
    return done[s.var]


def _dead_pops(fc: FunctionGen) -> set:
    """Pops of this adjoint whose forward value was not pushed (jit.pullback.dead_slots);
    a pop that is read although its value was dropped is refused."""
    got = getattr(fc, "dead_pops", None)
    if got is not None:
        return got
    from jit.pullback.dead_slots import decide, live_pops
    meta = fc.ir.meta
    fwd = fc.mg.engine.table.get(meta.get("forward_key"))
    dead = decide(fwd, frozenset()) if fwd is not None else frozenset()
    pop_of = meta.get("pop_of") or {}
    got = fc.dead_pops = {p for p, f in pop_of.items() if f in dead}
    if got & live_pops(fc.typing):
        raise TypingError(f"jit: the adjoint {fc.ir.name} reads values its compiled "
                          "forward does not record")
    return got


def pop_value(fc: FunctionGen, reader, t: Type):
    """Move `reader` back over a value of type `t` and rebuild it (a record: one load
    of what `push_value` stored)."""
    k = _struct_words(fc, t)
    if k:
        return fc.b.load(_back(fc, reader, k), typ=lltype(t))
    return _rebuild(fc, pop_words(fc, reader, len(tape_leaves(t))), t)


def pop_words(fc: FunctionGen, reader, k: int) -> list:
    """Move `reader` back by `k` words and load them (in tape order)."""
    if not k:
        return []
    own = getattr(fc.mg, "pop_words", None)
    if own is not None:
        return own(fc, reader, k)
    at = _back(fc, reader, k)
    return [fc.b.load(_word_at(fc.b, at, i), typ=I64) for i in range(k)]


def _back(fc: FunctionGen, reader, k: int) -> L.Value:
    """Move `reader` back by `k` words and return the address of the first of them."""
    b = fc.b
    posp = _field(fc, reader, 8)
    new = b.sub(b.load(posp, typ=I64), L.Constant(I64, k))
    fc.raise_if(b.icmp_signed("<", new, ZERO), RuntimeError,
                "adjoint: tape read past its start (forward and adjoint disagree)")
    b.store(new, posp)
    return b.gep(b.load(b.load(reader, typ=PTR), typ=PTR), [new], source_etype=I64)


# -- marks and the scratch tapes of checkpointed loops (adjoint.passes.checkpoint) ----------
#    struct scratch { i64 *data; i64 len; i64 cap; i64 start; }   (a tape, and the
#    header visit its segment starts at: -1 before the first)
def _expect(ctx: Context, ts, want: tuple, op: str) -> None:
    if tuple(ts) != want:
        ctx.fail(f"{op} of ({', '.join(map(str, ts))}), not ({', '.join(map(str, want))})")


_SIGNATURES = {
    "tape_mark": ((TAPE,), INT64), "tape_cut": ((TAPE, INT64), NONE),
    "ckpt_tape": ((), TAPE), "ckpt_reader": ((TAPE,), READER),
    "ckpt_spent": ((TAPE, READER), BOOL), "ckpt_rewind": ((TAPE, READER, INT64), NONE),
    "ckpt_free": ((TAPE,), NONE),
}


def _typed(op: str):
    want, ret = _SIGNATURES[op]

    def type_rule(ctx: Context, s, ts) -> Type:
        _expect(ctx, ts, want, op)
        return ret
    return type_rule


for _op in _SIGNATURES:
    rule(_op)(_typed(_op))


@codegen("tape_mark")
def _cg_tape_mark(fc: FunctionGen, s, ts):
    return fc.b.load(_field(fc, fc.get(s.args[0]), 8), typ=I64)


@codegen("tape_cut")
def _cg_tape_cut(fc: FunctionGen, s, ts):
    fc.b.store(fc.get(s.args[1]), _field(fc, fc.get(s.args[0]), 8))


@codegen("ckpt_tape")
def _cg_ckpt_tape(fc: FunctionGen, s, ts):
    t = fc.alloca(L.ArrayType(I64, 4))
    for k, v in enumerate((0, 0, 0, -1)):
        fc.b.store(L.Constant(I64, v), fc.b.gep(t, [_I32(0), _I32(k)]))
    return _opaque(fc, t)


@codegen("ckpt_reader")
def _cg_ckpt_reader(fc: FunctionGen, s, ts):
    r = fc.alloca(L.LiteralStructType([PTR, I64]))
    fc.b.store(fc.get(s.args[0]), fc.b.gep(r, [_I32(0), _I32(0)]))
    fc.b.store(ZERO, fc.b.gep(r, [_I32(0), _I32(1)]))
    return _opaque(fc, r)


def _I32(k: int) -> L.Constant:
    return L.Constant(L.IntType(32), k)


def _opaque(fc: FunctionGen, p) -> L.Value:
    """An alloca's typed pointer as the opaque `ptr` the tape code addresses by byte
    offsets (LLVM folds the round trip)."""
    return fc.b.inttoptr(fc.b.ptrtoint(p, I64), PTR)


@codegen("ckpt_spent")
def _cg_ckpt_spent(fc: FunctionGen, s, ts):
    b = fc.b
    pos = b.load(_field(fc, fc.get(s.args[1]), 8), typ=I64)
    start = b.load(_field(fc, fc.get(s.args[0]), 24), typ=I64)
    return b.and_(b.icmp_signed("==", pos, ZERO), b.icmp_signed("!=", start, ZERO))


@codegen("ckpt_rewind")
def _cg_ckpt_rewind(fc: FunctionGen, s, ts):
    b, t = fc.b, fc.get(s.args[0])
    b.store(b.load(_field(fc, t, 8), typ=I64), _field(fc, fc.get(s.args[1]), 8))
    b.store(fc.get(s.args[2]), _field(fc, t, 24))


@codegen("ckpt_free")
def _cg_ckpt_free(fc: FunctionGen, s, ts):
    b, t = fc.b, fc.get(s.args[0])
    b.call(fc.mg.extern("free", L.VoidType(), [PTR]), [b.load(t, typ=PTR)])
    for k in range(3):
        b.store(ZERO, _field(fc, t, 8 * k))


@rule("ckpt_copy")       # (its lowering: jit.pullback.array_cotangents)
def _t_ckpt_copy(ctx: Context, s, ts) -> Type:
    if count_held(ts[0], BuiltListT):
        ctx.fail(f"checkpoint=: a loop whose state holds a {ts[0]} is not compiled yet")
    return ts[0]


@rule("ckpt_copy_joint")   # (its lowering: jit.pullback.array_cotangents)
def _t_ckpt_copy_joint(ctx: Context, s, ts) -> Type:
    """Copies of the state a loop writes into, as a tuple.  Compiled code copies each
    array apart, so more than one array (which may share memory) is refused."""
    held = tuple(ts[1:])
    if any(count_held(t, BuiltListT) for t in held):
        ctx.fail(f"checkpoint=: a loop that writes into a {held} it carries is not "
                 "compiled yet")
    if sum(count_held(t, ArrayT) for t in held) > 1:
        ctx.fail("checkpoint=: a loop that writes into one of several arrays it carries, "
                 "which may share memory, is not compiled yet")
    return TupleT(held)
