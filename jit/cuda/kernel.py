"""Elementwise kernels around a device function: one element per thread, grid-stride.

    void @zy_map(i64 %n, <operand>..., <result>...)

Each operand of the scalar function is either a broadcast scalar (one parameter of
its LLVM type; a bool travels as i8) or an array of float64/int64 given as
`(T* data, i64 stride)` with the stride counted in elements (0 broadcasts, negative
strides work).  Each result is `(R* data)`, written densely; a bool result is
stored as one byte.  Thread `t` handles elements `t, t + grid, t + 2 grid, ...` below
`n`.  A device function that returns a non-OK status has already written the site
and details into `@zy_errinfo`; the kernel stores the status into word 0 and the
launcher turns it into the Python exception.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from llvmlite import ir as L

from jit.codegen.function import I8, I32, I64, lltype
from jit.types import BOOL, FLOAT64, INT64, Type, TypingError
from jit.cuda.target import DeviceModuleGen

_SREG = "llvm.nvvm.read.ptx.sreg.{}.x"
ELEMENT_TYPES = (FLOAT64, INT64)


@dataclass(frozen=True)
class Operand:
    """How one scalar argument reaches the kernel: `array` or broadcast `scalar`."""

    type: Type
    array: bool

    def params(self) -> list:
        if self.array:
            return [L.PointerType(lltype(self.type)), I64]
        return [I8 if self.type == BOOL else lltype(self.type)]


@dataclass
class KernelSpec:
    """A kernel's parameter layout: `n`, operands in, `extra` (the gradient kernel's
    tape), results out (all scalar types)."""

    name: str
    operands: list
    results: list
    extra: list = field(default_factory=list)  # LLVM types between operands and results
    param_types: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.param_types = [I64] + [p for o in self.operands for p in o.params()]
        self.param_types += list(self.extra)
        self.param_types += [L.PointerType(storage_type(r)) for r in self.results]

    def extra_index(self) -> int:
        """The position of the first extra parameter."""
        return 1 + sum(len(o.params()) for o in self.operands)


def storage_type(t: Type) -> L.Type:
    """The LLVM type of one element of a result array."""
    if t == BOOL:
        return I8
    if t in ELEMENT_TYPES:
        return lltype(t)
    raise TypingError(f"jit.cuda: a kernel cannot return values of type {t} "
                      "(scalar functions only: float64, int64, bool)")


class KernelGen:
    """Emits one grid-stride kernel; `body(kb, values, i)` returns the status and
    the per-element results, given the loaded operand values and the index."""

    def __init__(self, mg: DeviceModuleGen, spec: KernelSpec) -> None:
        self.mg = mg
        self.spec = spec
        fnty = L.FunctionType(L.VoidType(), spec.param_types)
        self.fn = L.Function(mg.module, fnty, spec.name)
        mg.mark_kernel(self.fn)
        self.entry = self.fn.append_basic_block("entry")
        self.b = L.IRBuilder(self.entry)

    def sreg(self, reg: str) -> L.Value:
        fn = self.mg.extern_raw(_SREG.format(reg), I32, [])
        return self.b.zext(self.b.call(fn, []), I64)

    def alloca(self, ty: L.Type) -> L.Value:
        with self.b.goto_block(self.entry):
            self.b.position_at_start(self.entry)
            return self.b.alloca(ty)

    def emit(self, body: Callable) -> L.Function:
        b = self.b
        n = self.fn.args[0]
        start = b.add(b.mul(self.sreg("ctaid"), self.sreg("ntid")), self.sreg("tid"))
        step = b.mul(self.sreg("ntid"), self.sreg("nctaid"))
        head = self.fn.append_basic_block("loop")
        work = self.fn.append_basic_block("body")
        done = self.fn.append_basic_block("done")
        pre = b.block
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64, name="i")
        i.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", i, n), work, done)
        b.position_at_end(work)
        status, results = body(self, self.load_operands(i), i)
        self.record_status(status)
        self.store_results(results, i)
        nxt = b.add(i, step)
        i.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(done)
        b.ret_void()
        return self.fn

    def load_operands(self, i) -> list:
        b, args, values = self.b, iter(self.fn.args[1:]), []
        for o in self.spec.operands:
            p = next(args)
            if o.array:
                stride = next(args)
                values.append(b.load(b.gep(p, [b.mul(i, stride)])))
            elif o.type == BOOL:
                values.append(b.icmp_unsigned("!=", p, L.Constant(I8, 0)))
            else:
                values.append(p)
        return values

    def result_pointers(self) -> list:
        return list(self.fn.args[len(self.fn.args) - len(self.spec.results):])

    def store_results(self, results: list, i) -> None:
        for v, r, p in zip(results, self.spec.results, self.result_pointers()):
            v = self.b.zext(v, I8) if r == BOOL else v
            self.b.store(v, self.b.gep(p, [i]))

    def record_status(self, status) -> None:
        with self.b.if_then(self.b.icmp_signed("!=", status, L.Constant(I32, 0)),
                            likely=False):
            self.b.store(self.b.sext(status, I64), self.mg.errinfo_base(self.b))


def map_kernel(mg: DeviceModuleGen, root: L.Function, spec: KernelSpec) -> L.Function:
    """The primal kernel: out[i] = f(operands at i)."""
    def body(kg: KernelGen, values: list, i):
        res = kg.b.call(root, [L.Constant(I64, 0)] + values)
        return kg.b.extract_value(res, 0), [kg.b.extract_value(res, 1)]
    return KernelGen(mg, spec).emit(body)
