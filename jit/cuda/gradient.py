"""Gradient kernels: the J transform's forward and adjoint IR, compiled for the
device and run back to back in each thread.

    per element:  reset the thread's tape; (y, env) = forward(tape, args...)
                  if the tape overflowed: record the need, skip
                  grads = adjoint(reader, env, 1.0); store y and d y / d arg_k

The forward and adjoint IR come from `adjoint.transform.transform` (what
`adjoint.code_adjoint` prints); their typing and code from the CPU JIT's gradient
machinery (`jit.pullback.jcalls.adjoint_ir` for pop types, `jit.pullback.dead_slots`
for dead tape slots, the `push`/`pop`/`jcall`/`jback` lowerings of
`jit.pullback.tape_ops` and `jit.pullback.jcalls`), with only the tape's word moves
replaced (`jit.cuda.tape`).  The tape lives in device memory
(`jit.cuda.tape`); a launch whose threads needed more words than the buffer holds is
retried once with the largest need, and the learnt capacity is kept on the kernel.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

from llvmlite import ir as L

from lowering.guards import on_invalidate
from jit.codegen.function import F64, I32, I64
from jit.typing.infer import ENGINE
from jit.types import FLOAT64, INT64, NONE, READER, TAPE, TupleT, TypingError
from jit.cuda.compile import DeviceKernel, refuse_arrays, typing_for
from jit.cuda.kernel import KernelGen, KernelSpec
from jit.cuda.tape import TAPE_NEED, WORD_PTR, ThreadTape, forward_words
from jit.cuda.target import DeviceModuleGen, check_typed, nvvm_dialect

INITIAL_CAP = 64  # words per thread for loops/calls before a launch has measured the need
TAPE_BUDGET = 1 << 30  # bytes of tape buffer: fewer threads rather than more memory


@dataclass
class GradientKernel(DeviceKernel):
    """A gradient kernel: results are y then one gradient per active argument."""

    active: tuple = ()
    tape_cap: int = INITIAL_CAP
    history: list = field(default_factory=list)


def _typings(f, operands: tuple) -> tuple:
    """The typed forward and adjoint, exactly as the CPU JIT's pullback builds them
    (jit.pullback.runner.ForwardCode): pop types from `pop_of`, dead tape slots decided
    before any code is generated, jcall/jback typed through jit.pullback.jcalls."""
    from adjoint.transform import transform

    from jit.pullback.jcalls import adjoint_ir
    from jit.pullback.dead_slots import check_adjoint, dead_pushes, decide
    from jit.pullback.runner import cotangent_type
    argtypes = tuple(o.type for o in operands)
    primal = typing_for(f, argtypes)
    jf = transform(primal.source, tuple(t == FLOAT64 for t in argtypes),
                   tuple(str(t) for t in argtypes))
    ft = ENGINE.infer(jf.forward, (TAPE,) + argtypes)
    if not isinstance(ft.ret, TupleT) or ft.ret.elems[0] not in (FLOAT64, INT64):
        raise TypingError(f"jit.cuda: {primal.ir.name} must return a number for "
                          f"map_gradient, not {ft.ret}")
    dy_t = cotangent_type(ft.ret.elems[0], jf.inout)
    at = ENGINE.infer(adjoint_ir(jf, ft), (READER, ft.ret.elems[1], dy_t))
    decide(ft, dead_pushes(ft, at))
    check_adjoint(ft, at)
    return ft, at


def build_gradient(f, operands: tuple) -> GradientKernel:
    ft, at = _typings(f, operands)
    refuse_arrays(ft)
    refuse_arrays(at)
    active = tuple(k for k, o in enumerate(operands) if o.type == FLOAT64)
    mg = DeviceModuleGen(ENGINE, ft)
    fwd = mg.build()
    adj = mg.function(at)
    mg.build()
    spec = KernelSpec(f"zy_grad_{mg.uid}", list(operands), [FLOAT64] * (1 + len(active)),
                      extra=[WORD_PTR, I64])
    _GradientBody(mg, spec, fwd, adj, ft, at, active).emit()
    mg.finish_module()
    text = check_typed(nvvm_dialect(str(mg.module)), f"the gradient kernel of {ft.ir.name}")
    return GradientKernel(ft, spec, text, active=active, tape_cap=first_capacity(ft))


def first_capacity(ft) -> int:
    """Tape words per thread for the first launch: the forward's exact bound when it
    has one (no loop records, no user calls), else that part plus INITIAL_CAP."""
    words, bounded = forward_words(ft)
    return max(words, 1) if bounded else words + INITIAL_CAP


class _GradientBody:
    """Emits the per-element body of a gradient kernel (see the module doc)."""

    def __init__(self, mg, spec, fwd, adj, ft, at, active) -> None:
        self.mg, self.spec, self.fwd, self.adj = mg, spec, fwd, adj
        self.ft, self.at, self.active = ft, at, active

    def emit(self) -> None:
        KernelGen(self.mg, self.spec).emit(self.body)

    def body(self, kg: KernelGen, values: list, i):
        b = kg.b
        data, cap = kg.fn.args[self.spec.extra_index():self.spec.extra_index() + 2]
        tape = ThreadTape(kg, data, cap)
        status = kg.alloca(I32)
        slots = [kg.alloca(F64) for _ in self.spec.results]
        for s in slots:
            b.store(L.Constant(F64, 0.0), s)
        res = b.call(self.fwd, [L.Constant(I64, 0), tape.tape_arg()] + values)
        st = b.extract_value(res, 0)
        b.store(st, status)
        ok = b.icmp_signed("==", st, L.Constant(I32, 0))
        with b.if_then(ok):
            over = tape.overflowed()
            with b.if_then(b.not_(over)):
                self.run_adjoint(kg, tape, b.extract_value(res, 1), slots, status)
        return b.load(status), [b.load(s) for s in slots]

    def run_adjoint(self, kg: KernelGen, tape: ThreadTape, out, slots, status) -> None:
        b = kg.b
        y = b.extract_value(out, 0)
        b.store(y if self.ft.ret.elems[0] == FLOAT64 else b.sitofp(y, F64), slots[0])
        env = b.extract_value(out, 1)
        res = b.call(self.adj, [L.Constant(I64, 0), tape.reader_arg(), env,
                                L.Constant(F64, 1.0)])
        b.store(b.extract_value(res, 0), status)
        grads = b.extract_value(res, 1)
        for slot, k in zip(slots[1:], self.active):
            g = self.as_float(b, b.extract_value(grads, k), self.at.ret.elems[k])
            b.store(g, slot)

    @staticmethod
    def as_float(b: L.IRBuilder, v, t):
        if t == FLOAT64:
            return v
        if t == INT64:
            return b.sitofp(v, F64)
        if t == NONE:
            return L.Constant(F64, 0.0)
        raise TypingError(f"jit.cuda: a gradient of type {t} cannot be stored elementwise")


_CACHE: dict = {}
on_invalidate(_CACHE.clear)


def compile_gradient(f, operands: tuple) -> GradientKernel:
    """The gradient kernel of `f` for the given operand layout (cached)."""
    key = (f, operands)
    k = _CACHE.get(key)
    if k is None:
        k = _CACHE[key] = build_gradient(f, operands)
    return k


def tape_threads(dev, n: int, cap: int) -> int:
    """Grid size for a gradient launch: as many blocks as fit the tape budget."""
    from jit.cuda.driver import BLOCK
    per_block = BLOCK * cap * 8
    return max(1, min(dev.grid(n), TAPE_BUDGET // max(per_block, 1)))


def launch_gradient(kernel: GradientKernel, loaded, n: int, params: list, results: list) -> None:
    """Launch with a tape buffer; retry once with the measured need on overflow."""
    from jit.cuda.driver import BLOCK
    for _ in range(2):
        grid = tape_threads(loaded.dev, n, kernel.tape_cap)
        tape = loaded.alloc(grid * BLOCK * kernel.tape_cap * 8)
        extra = [ctypes.c_void_p(tape.ptr), ctypes.c_int64(kernel.tape_cap)]
        loaded.reset_global(TAPE_NEED)
        loaded.launch(n, params + extra + results, grid=grid)
        need = loaded.read_global(TAPE_NEED)
        kernel.history.append((kernel.tape_cap, need))
        if need <= kernel.tape_cap:
            return
        kernel.tape_cap = need
    raise MemoryError(f"jit.cuda: the tape of {kernel.name} kept overflowing "
                      f"(needs {kernel.tape_cap} words per thread)")
