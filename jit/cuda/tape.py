"""The per-thread tape of gradient kernels, in device memory.

Layout.  One buffer of `cap * threads` 8-byte words; word `k` of thread `t` lives at
`data[k * threads + t]` (consecutive threads touch consecutive words: coalesced).
Inside a thread the tape is a 4-word header (a private alloca, kept in registers by
NVVM) that the forward's `tape` argument points to:

    hdr[0] = address of data[t]     hdr[1] = threads (the word stride)
    hdr[2] = len                    hdr[3] = cap

and a reader is a 2-word record `[address of hdr, pos]`.  Both travel as `i64*`
(`DeviceModuleGen.value_type`).

Overflow.  `push` always advances `len` but writes only while `len + k <= cap`, so a
thread never writes out of bounds; after the forward, a thread whose `len` exceeds
`cap` raises its need into `@zy_tape_need` (atomic max) and skips its adjoint.  The
launcher then retries with `cap = need` (jit.cuda.gradient).  The first `cap` comes
from the typed forward (`forward_words`): exact when nothing is recorded in a loop or
a user call, else that part plus a default the first launch corrects.

Only the word moves are device-specific: `DeviceModuleGen.push_words/pop_words`
route `jit.pullback.tape_ops`'s hooks here, so the CPU lowering of `push`, `pop`,
`jcall` and `jback` (batched runs, constant and dead slots, callee envs on the
shared tape, the encoding of values in words) is the one that runs.
"""
from __future__ import annotations

from llvmlite import ir as L

from ssair.cfg import blocks_in_cycles

from jit.codegen.function import I64, FunctionGen
from jit.pullback.tape_ops import tape_leaves
from jit.pullback.jcalls import RulePBT, static_phis
from jit.pullback.dead_slots import decide
from jit.typing.infer import ENGINE
from jit.types import TupleT
from jit.cuda.nvvm import GLOBAL_AS

TAPE_NEED = "zy_tape_need"
WORD_PTR = L.PointerType(I64)
HDR_WORDS, READER_WORDS = 4, 2


def _word(b: L.IRBuilder, base, k: int):
    return b.gep(base, [L.Constant(I64, k)])


def _slot(b: L.IRBuilder, hdr, index):
    """The address of tape word `index` of this thread."""
    base = b.inttoptr(b.load(_word(b, hdr, 0)), WORD_PTR)
    return b.gep(base, [b.mul(index, b.load(_word(b, hdr, 1)))])


def push_words(fc: FunctionGen, hdr, words: list) -> None:
    """Append words to the thread's tape: `len` always advances, the words are
    written only while they fit (the kernel checks `len <= cap` afterwards)."""
    b = fc.b
    n = b.load(_word(b, hdr, 2))
    end = b.add(n, L.Constant(I64, len(words)))
    b.store(end, _word(b, hdr, 2))
    with b.if_then(b.icmp_signed("<=", end, b.load(_word(b, hdr, 3)))):
        for k, w in enumerate(words):
            b.store(w, _slot(b, hdr, b.add(n, L.Constant(I64, k))))


def pop_words(fc: FunctionGen, reader, k: int) -> list:
    """Move the reader back by `k` words and load them (in tape order)."""
    b = fc.b
    new = b.sub(b.load(_word(b, reader, 1)), L.Constant(I64, k))
    fc.raise_if(b.icmp_signed("<", new, L.Constant(I64, 0)), RuntimeError,
                "adjoint: tape read past its start (forward and adjoint disagree)")
    b.store(new, _word(b, reader, 1))
    hdr = b.inttoptr(b.load(_word(b, reader, 0)), WORD_PTR)
    return [b.load(_slot(b, hdr, b.add(new, L.Constant(I64, i)))) for i in range(k)]


def _stmt_words(ft, s, skip: set):
    """Tape words one forward statement pushes, or None when it is not bounded
    statically (a jcall of a user function: its env and its own pushes)."""
    if s.op == "push":
        v = s.args[1]
        if getattr(v, "id", None) in skip:
            return 0
        return len(tape_leaves(ENGINE.operand_type(ft, v)))
    if s.op != "jcall":
        return 0
    pbt = ft.types[s.var].elems[1]
    return len(tape_leaves(TupleT(pbt.saved))) if isinstance(pbt, RulePBT) else None


def forward_words(ft) -> tuple:
    """(words, bounded): an upper bound of the words the typed forward `ft` pushes
    outside cycles, and whether that bounds the whole forward (no push in a cycle,
    no call of a user function).  The gradient kernel's first tape capacity."""
    skip = set(static_phis(ft)) | set(decide(ft, frozenset()))
    cyclic = blocks_in_cycles(ft.ir)
    total, bounded = 0, True
    for blk in ft.ir.blocks:
        for st in blk.stmts:
            k = _stmt_words(ft, st, skip)
            if k is None or (k and blk.id in cyclic):
                bounded = False
            elif k:
                total += k
    return total, bounded


def need_global(mg) -> L.GlobalVariable:
    gv = mg.module.globals.get(TAPE_NEED)
    if gv is None:
        gv = L.GlobalVariable(mg.module, I64, TAPE_NEED, addrspace=GLOBAL_AS)
        gv.initializer = L.Constant(I64, 0)
    return gv


class ThreadTape:
    """Builds a thread's tape header and reader inside a kernel (see module doc)."""

    def __init__(self, kg, data, cap) -> None:
        self.kg, self.b = kg, kg.b
        b = self.b
        self.hdr = kg.alloca(L.ArrayType(I64, HDR_WORDS))
        self.rdr = kg.alloca(L.ArrayType(I64, READER_WORDS))
        threads = b.mul(kg.sreg("ntid"), kg.sreg("nctaid"))
        tid = b.add(b.mul(kg.sreg("ctaid"), kg.sreg("ntid")), kg.sreg("tid"))
        mine = b.ptrtoint(b.gep(data, [tid]), I64)
        for k, v in enumerate((mine, threads, L.Constant(I64, 0), cap)):
            b.store(v, self.word(self.hdr, k))

    def word(self, arr, k: int):
        return self.b.gep(arr, [L.Constant(I64, 0), L.Constant(I64, k)])

    def tape_arg(self):
        return self.b.bitcast(self.hdr, WORD_PTR)

    def reset(self) -> None:
        self.b.store(L.Constant(I64, 0), self.word(self.hdr, 2))

    def overflowed(self):
        """i1: this element's forward needed more than `cap` words (need recorded)."""
        b = self.b
        used = b.load(self.word(self.hdr, 2))
        over = b.icmp_signed(">", used, b.load(self.word(self.hdr, 3)))
        with b.if_then(over, likely=False):
            gv = need_global(self.kg.mg)
            b.atomic_rmw("max", b.addrspacecast(gv, WORD_PTR), used, "monotonic")
        return over

    def reader_arg(self):
        b = self.b
        b.store(b.ptrtoint(self.hdr, I64), self.word(self.rdr, 0))
        b.store(b.load(self.word(self.hdr, 2)), self.word(self.rdr, 1))
        return b.bitcast(self.rdr, WORD_PTR)
