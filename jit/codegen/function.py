"""LLVM code generation for typed IR: functions, blocks, phis, calls between user
functions.  Per-operation lowering lives in the core table keyed by primitive
(`CODEGEN`, filled by `jit.codegen.scalar` and `jit.codegen.arrays`) and, for library
callables and the primitives' library impls, in the impl that type inference chose
from `jit.library.registry` (`Typing.impls`).

Every specialised user function becomes one internal LLVM function

    { i32, <result> } @name(i64 %depth, <args>)

returning a status (`jit.runtime.native.OK/ERROR/DEOPT`) and its result (undefined
unless the status is OK) as one value, which LLVM returns in registers: a recursion's
result never goes through memory.  A call checks the callee's status and returns it
unchanged when it is not OK, so an error raised deep in a recursion reaches the entry
with its site intact (`ModuleGen.call_function` is the one way to call one).
`%depth` counts native frames; past `runtime.MAX_DEPTH` a function raises
RecursionError instead of overflowing the stack.  Phis map one to one to LLVM phis;
numeric widening for a phi (int64 -> float64) is emitted at the end of the
predecessor.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Optional

from llvmlite import ir as L

from ssair.cfg import reverse_postorder
from ssair.ir import Branch, Const, Goto, Raise, Return, Var

from adjoint.partials import partial_captures
from jit.typing.unbound import is_unbound
from jit.typing.raising import CAUGHT, argument_specs, protected_blocks, raised
from jit.typing.formatted import holds_formatted
from jit.runtime import native as runtime
from jit.runtime import symbols
from jit.codegen.error_exit import ErrorExit
from jit.typing.infer import Engine, LiteralT, Packed, Typing
from jit.types import (BOOL, FLOAT32, FLOAT64, INT32, INT64, NARROW, NONE, NUMPY_DTYPE, ArrayT,
                       BuiltListT, ClosureT, DictT, FunctionT, ObjectT, OpaqueT, PartialT, RecordT,
                       Scalar, StrT, TupleT, Type, TypingError, wide)

I1, I8, I32, I64, F64 = L.IntType(1), L.IntType(8), L.IntType(32), L.IntType(64), L.DoubleType()
PTR = L.PointerType()
NAMED_STRUCTS: dict = {}     # name -> NamedStructType


class NamedStructType(L.LiteralStructType):
    """A struct type that the module text names (`%"zy.array"`) instead of spelling
    out at every use: the array structs appear in almost every instruction of a
    gradient's module, and naming them halves its text (and the time to print and
    parse it).  It compares equal to the literal struct of the same elements, as
    llvmlite's checks expect; `Module` declares the ones its text uses."""

    def __init__(self, name: str, elems: list) -> None:
        super().__init__(elems)
        self.name = name
        NAMED_STRUCTS[name] = self

    def _to_string(self) -> str:
        return f'%"{self.name}"'

    def declaration(self) -> str:
        return f'%"{self.name}" = type {self.structure_repr()}'


class Module(L.Module):
    """An llvmlite module whose text declares the named structs it uses."""

    def _get_body_lines(self) -> list:
        lines = super()._get_body_lines()
        body = "\n".join(lines)
        return [t.declaration() for name, t in list(NAMED_STRUCTS.items())
                if f'%"{name}"' in body] + lines


def size_and_alignment(t: L.Type) -> tuple:
    """The bytes and alignment of a value of LLVM type `t` in memory, by the C layout
    rules every 64-bit host target uses for these types (llvmlite's `get_abi_size`
    prints the type into a module of its own, which does not declare named structs)."""
    if isinstance(t, L.IntType):
        n = max(1, t.width // 8)
        return n, n
    if isinstance(t, (L.DoubleType, L.PointerType)):
        return 8, 8
    if isinstance(t, L.FloatType):
        return 4, 4
    if isinstance(t, L.ArrayType):
        size, align = size_and_alignment(t.element)
        return size * t.count, align
    if isinstance(t, L.LiteralStructType):
        offset, most = 0, 1
        for e in t.elements:
            size, align = size_and_alignment(e)
            offset = -(-offset // align) * align + size
            most = max(most, align)
        return -(-offset // most) * most, most
    raise TypeError(f"jit: no memory layout for the LLVM type {t}")


ARRAY = NamedStructType("zy.array", [PTR, I64, I64, I64, I64])  # data, shapes, strides


BUILT_LIST = NamedStructType("zy.list", [PTR, I64, I64])


def nd_array_type(ndim: int) -> L.LiteralStructType:
    """The native struct of an array of 3 or more dimensions: {data, [shape], [strides]}
    (a layout of its own, so that code written for the 1-D/2-D struct cannot read it)."""
    name = f"zy.array{ndim}d"
    known = NAMED_STRUCTS.get(name)
    if known is not None:
        return known
    return NamedStructType(name, [PTR, L.ArrayType(I64, ndim), L.ArrayType(I64, ndim)])


def array_lltype(t: ArrayT) -> L.Type:
    return ARRAY if t.ndim <= 2 else nd_array_type(t.ndim)


def array_fields(ndim: int) -> list:
    """The struct positions of an array's shape and stride words, in the order the tape
    and host calls store them after its data pointer (4 words for 1-D and 2-D, the
    shapes then the strides beyond)."""
    if ndim <= 2:
        return [1, 2, 3, 4]
    return [[1, k] for k in range(ndim)] + [[2, k] for k in range(ndim)]

CODEGEN: dict = {}
# Module numbers (in the names a module exports).  Each sequence gives the same names
# to the same compiles in every process, which is what lets an object file keyed by its
# text (`jit.runtime.native.compile_ir`) be found again; `compile_typing`'s modules,
# cached by function instead, number themselves apart (ENTRY_NUMBERS) so that loading
# one from the disk cache leaves the other numbers as they were.
MODULE_NUMBERS = itertools.count()
ENTRY_NUMBERS = itertools.count()


def codegen(*ops: str):
    """Register an LLVM lowering for the primitives `ops`: fn(fc, stmt, types) -> value."""
    def deco(fn):
        for op in ops:
            CODEGEN[op] = fn
        return fn
    return deco


def lltype(t: Type) -> L.Type:
    """The LLVM type of a value of JIT type `t` (a float32 number is held in a double,
    an int32 in an i64: `narrowed`)."""
    if t == BOOL:
        return I1
    if t == INT64 or t == INT32:
        return I64
    if t == FLOAT64 or t == FLOAT32:
        return F64
    if isinstance(t, ArrayT):
        return array_lltype(t)
    if isinstance(t, StrT):
        return I64
    if isinstance(t, TupleT):
        return L.LiteralStructType([lltype(e) for e in t.elems])
    if isinstance(t, ClosureT):
        return L.LiteralStructType([lltype(e) for e in t.captured])
    if t == NONE or isinstance(t, (FunctionT, LiteralT)) or getattr(t, "token", False):
        return I8
    if isinstance(t, (OpaqueT, ObjectT)):
        return PTR
    if isinstance(t, BuiltListT):        # data, length, capacity (jit.library.built_lists)
        return BUILT_LIST
    raise TypingError(f"jit: no native representation for {t}")


F32 = L.FloatType()


def narrowed(b: L.IRBuilder, v: L.Value, t: Type) -> L.Value:
    """A float32 (int32) number computed in a double (i64) rounded (wrapped) to its
    width and held wide again: after every operation that makes one, so that the
    result is numpy's (a float32 sum, product, quotient or square root of float32
    operands rounded once from double is the float32 operation's exact result)."""
    if t == FLOAT32:
        return b.fpext(b.fptrunc(v, F32), F64)
    return b.sext(b.trunc(v, I32), I64)


def memory_type(dtype: Type) -> L.Type:
    """The LLVM type of an array element of `dtype` in memory."""
    return F32 if dtype == FLOAT32 else I32 if dtype == INT32 else lltype(dtype)


def const_value(value: Any, t: Type) -> L.Constant:
    """A constant operand as an LLVM constant of type `t`."""
    if t == BOOL:
        return L.Constant(I1, int(bool(value)))
    if t == INT64 or t == INT32:
        return L.Constant(I64, int(NUMPY_DTYPE[t].type(value)))
    if t == FLOAT64 or t == FLOAT32:
        return L.Constant(F64, float(NUMPY_DTYPE[t].type(value)))
    if isinstance(t, RecordT):       # an object read from a global: its attributes now
        from adjoint.pytrees import record_structure
        value = record_structure(value)[1]
    if isinstance(t, DictT):         # a dict read from a global: its values in key order
        value = [value[k] for k in t.keys]
    if isinstance(t, TupleT):
        return L.Constant.literal_struct([const_value(v, e) for v, e in zip(value, t.elems)])
    if t == NONE or isinstance(t, (FunctionT, LiteralT)) or getattr(t, "token", False):
        return L.Constant(I8, 0)
    if isinstance(t, ArrayT):
        return array_constant(value)
    if isinstance(t, ObjectT):       # a module-level generator: kept alive with the code
        _OBJECTS.append(value)
        return symbols.object_ptr(value)
    if isinstance(t, ClosureT):      # a closure read from a global: its captured values
        cells = list(partial_captures(value)) if isinstance(t, PartialT) else \
            [c.cell_contents for c in value.__closure__]
        return L.Constant.literal_struct([const_value(v, e) for v, e in zip(cells, t.captured)])
    raise TypingError(f"jit: constant {value!r} of type {t} cannot be compiled")


_OBJECTS: list = []     # Python objects compiled code addresses as constants


def array_constant(a: Any) -> L.Constant:
    """A module-level array read by compiled code: its own memory, addressed directly
    (the IR constant keeps the array alive as long as the compiled code), so a write
    in place is seen as in CPython.  One whose strides are not multiples of its item
    size is refused: compiled code steps by elements, and a copy would miss later
    writes (globals are live, `lowering.guards`)."""
    if not a.flags.aligned:
        raise TypingError("jit: a module-level array whose memory is not aligned to its "
                          "item size (strides of "
                          f"{', '.join(str(s) for s in a.strides)} bytes) is read in "
                          "place, which compiled code cannot do; pass it as an argument "
                          "or make it with np.ascontiguousarray")
    data = symbols.live_ptr("array", a.ctypes.data)   # (it may change: not on disk)
    if a.ndim > 2:
        row = L.ArrayType(I64, a.ndim)
        return L.Constant(nd_array_type(a.ndim), [data,
                                                  L.Constant(row, [int(v) for v in a.shape]),
                                                  L.Constant(row, [int(v) for v in a.strides])])
    shape = list(a.shape) + [0] * (2 - a.ndim)
    strides = list(a.strides) + [0] * (2 - a.ndim)
    return L.Constant(ARRAY, [data] + [L.Constant(I64, int(v)) for v in shape + strides])


def zero_of(t: Type) -> L.Constant:
    """The zero value of `t` (what `None` stands for in cotangent code)."""
    if isinstance(t, TupleT):
        return L.Constant.literal_struct([zero_of(e) for e in t.elems])
    if isinstance(t, ArrayT) and t.ndim > 2:
        row = L.ArrayType(I64, t.ndim)
        return L.Constant(array_lltype(t), [L.Constant(PTR, None), L.Constant(row, None),
                                            L.Constant(row, None)])
    if isinstance(t, ArrayT):  # data == NULL: the None cotangent of an array
        return L.Constant(ARRAY, [L.Constant(PTR, None)] + [L.Constant(I64, 0)] * 4)
    if isinstance(t, BuiltListT):    # no entries (data NULL: also the None cotangent)
        return L.Constant(BUILT_LIST, [L.Constant(PTR, None), L.Constant(I64, 0),
                                       L.Constant(I64, 0)])
    if isinstance(t, ClosureT):
        return L.Constant.literal_struct([zero_of(e) for e in t.captured])
    return L.Constant(lltype(t), 0)


class ModuleGen:
    """One LLVM module: the root function and every user function it reaches."""

    def __init__(self, engine: Engine, root: Typing, numbers: Any = MODULE_NUMBERS) -> None:
        self.engine = engine
        self.root = root
        self.uid = next(numbers)
        self.module = Module(name=f"zy{self.uid}_{root.ir.name}")
        import llvmlite.binding as llvm
        self.module.triple = llvm.get_process_triple()
        # without the target's data layout LLVM aligns i64 to 4 bytes in structs,
        # which would not match the C (ctypes) layout of results
        self.module.data_layout = str(runtime.target_machine().target_data)
        self.functions: dict = {}
        self.pending: list = []
        self.externs: dict = {}
        self.allocates = False

    def function(self, t: Typing) -> L.Function:
        """The LLVM function for a specialised user function (declared on first use)."""
        t = self.engine.table.get(t.key, t)
        fn = self.functions.get(t.key)
        if fn is not None:
            return fn
        params = [I64] + [self.value_type(a) for a in t.argtypes]
        name = f"{_sanitize(t.ir.name)}.{len(self.functions)}"
        fn = L.Function(self.module, L.FunctionType(result_struct(t.ret), params), name=name)
        fn.linkage = "internal"
        self.functions[t.key] = fn
        self.pending.append((t, fn))
        return fn

    def extern(self, name: str, ret: L.Type, args: list) -> L.Function:
        fn = self.externs.get(name)
        if fn is None:
            fn = self.module.globals.get(name) or L.Function(self.module,
                                                              L.FunctionType(ret, args), name)
            self.externs[name] = fn
        return fn

    def intrinsic(self, name: str, ret: L.Type, args: list) -> L.Function:
        return self.extern(name, ret, args)

    # Target hooks (jit.cuda.target overrides them for NVVM, which wants typed
    # pointers, a device-resident error record and a shallower native stack).
    max_depth = runtime.MAX_DEPTH
    vector_math = True     # glibc's vector math may widen library loops (runtime.VECTOR_MATH)
    reruns = True          # a DEOPT status reruns the call in Python (not on a device)

    def call_function(self, b: L.IRBuilder, t: Typing, depth, args: list) -> tuple:
        """Call the function of specialised user function `t` at native depth `depth`:
        (its status, its result)."""
        res = b.call(self.function(t), [depth] + args)
        return b.extract_value(res, 0), b.extract_value(res, 1)

    def value_type(self, t: Type) -> L.Type:
        """The LLVM type of a parameter of JIT type `t` (the device gives the tape and
        reader typed pointers)."""
        return lltype(t)

    def errinfo_base(self, b: L.IRBuilder) -> L.Value:
        """A pointer to the i64 error record (`runtime.ERRINFO` on the CPU), on an
        error path (one call: see `symbols.errinfo_ptr_cold`)."""
        return symbols.errinfo_ptr_cold(b)

    def site_word(self, sid: int) -> L.Value:
        """Error site `sid` as the i64 stored in the error record (a symbol on the
        CPU, `jit.runtime.symbols`)."""
        return symbols.site_word(sid)

    def string_word(self, text: str) -> L.Value:
        """The native id of the string constant `text` (`jit.types.StrT`)."""
        return symbols.string_word(text)

    def lowering(self, op: str):
        """The lowering of primitive `op` for this target (None when missing)."""
        return CODEGEN.get(op)

    def build(self) -> L.Function:
        root = self.function(self.root)
        while self.pending:
            t, fn = self.pending.pop()
            FunctionGen(self, t, fn).emit()
        return root


def result_struct(t: Type) -> L.LiteralStructType:
    """What the LLVM function of a user function returning `t` returns: its status
    and its result."""
    return L.LiteralStructType([I32, lltype(t)])


def _sanitize(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_." else "_" for c in name) or "f"


def _drops_none(have: Type, want: Type) -> bool:
    """Whether converting `have` to `want` turns a None (or one in a tuple) into a zero."""
    if have == NONE:
        return want != NONE
    if isinstance(have, TupleT) and isinstance(want, TupleT):
        return any(_drops_none(h, w) for h, w in zip(have.elems, want.elems))
    return False


class FunctionGen:
    """Emits the body of one specialised function."""

    handler: Optional[L.Block] = None     # where an ERROR goes in a protected block
    landings: dict = {}                   # (see _make_landings)

    def __init__(self, mg: ModuleGen, t: Typing, fn: L.Function) -> None:
        self.mg = mg
        self.typing = t
        self.ir = t.ir
        self.fn = fn
        self.values: dict = {}
        self.line = t.ir.firstline
        self.b = L.IRBuilder()
        self._status_exit: Optional[ErrorExit] = None    # see _exit

    # -- structure -------------------------------------------------------------
    def emit(self) -> None:
        entry = self.fn.append_basic_block("entry")
        start = self.fn.append_basic_block("start")
        self.alloca_builder = L.IRBuilder(entry)
        self.alloca_builder.branch(start)
        self.alloca_builder.position_at_start(entry)
        self.b.position_at_end(start)
        self.depth = self.fn.args[0]
        for a, v in zip(self.ir.args, self.fn.args[1:]):
            self.values[a.var] = v
        self._depth_guard()
        order = reverse_postorder(self.ir)
        blocks = self.ir.block_map()
        self.llblocks = {bid: self.fn.append_basic_block(f"b{bid}") for bid in order}
        self.ends: dict = {}
        self._make_landings()
        self.b.branch(self.llblocks[order[0]])
        for bid in order:
            self._emit_block(blocks[bid])
        self._wire_phis([blocks[bid] for bid in order])
        if self._status_exit is not None:
            self._status_exit.finish(self.fn, self.mg.errinfo_base, runtime.CALLER_SLOT,
                                     self._result)

    def _depth_guard(self) -> None:
        limit = L.Constant(I64, self.mg.max_depth)
        self.raise_if(self.b.icmp_signed(">", self.depth, limit), RecursionError,
                      "maximum recursion depth exceeded")

    def _make_landings(self) -> None:
        """A landing block per `goto #k unwind #h` edge from #p (`protected_blocks`):
        an error raised in #k branches there, and from there to #h, whose phis read
        #p's values along it."""
        self.protected = protected_blocks(self.ir)
        self.landings: dict = {}
        for p, h in self.protected.values():
            if (p, h) not in self.landings and h in self.llblocks:
                land = self.fn.append_basic_block(f"unwind{p}_{h}")
                L.IRBuilder(land).branch(self.llblocks[h])
                self.landings[(p, h)] = land
        self.handler = None

    def _emit_block(self, block) -> None:
        self.handler = self.landings.get(self.protected.get(block.id))
        self.b.position_at_end(self.llblocks[block.id])
        for p in block.phis:
            self.values[p.var] = self.b.phi(lltype(p.type), name=f"v{p.var.id}")
        for s in block.stmts:
            self.line = s.line or self.line
            self.values[s.var] = self._emit_stmt(s)
        self.line = getattr(block.term, "line", None) or self.line
        self._deopt_on_none_edges(block)
        self.ends[block.id] = self.b.block
        self._emit_term(block.term)

    def _deopt_on_none_edges(self, block) -> None:
        """DEOPT on an edge that would turn a primal None into a number: in a
        J-transformed forward (`meta["none_is_zero"]`) a phi joins None with numbers,
        which is right for the transform's own records but not for a value of the
        user's program (`meta["primal_phis"]`, e.g. a result that is None on one path),
        whose None CPython keeps: the interpreter reruns such a call."""
        primal = self.ir.meta.get("primal_phis")
        if not primal:
            return
        term = block.term
        edges = [(term.target, None)] if isinstance(term, Goto) else \
            [(term.then, True), (term.else_, False)] if isinstance(term, Branch) else []
        for target, taken in edges:
            if self._loses_none(self.ir.block(target), block.id, primal):
                cond = L.Constant(I1, 1) if taken is None else self.get(term.cond, BOOL)
                self.deopt_if(cond if taken in (None, True) else self.b.not_(cond),
                              "a value that is None on this path")

    def _loses_none(self, target, pred: int, primal: frozenset) -> bool:
        return any(p.var.id in primal and pred in p.incoming
                   and _drops_none(self.type_of(p.incoming[pred]), p.type)
                   for p in target.phis)

    def _emit_stmt(self, s) -> L.Value:
        impl = self.typing.impls.get(s.var)
        if impl is not None:
            v = self.emit_impl(impl, s)
            if s.type in NARROW and v is not None:
                v = narrowed(self.b, v, s.type)
            return v if v is not None else L.Constant(I8, 0)
        fn = self.mg.lowering(s.op)
        if fn is None:
            raise TypingError(f"jit: no LLVM lowering for primitive {s.op!r} "
                              f"in {self.ir.name} at {self.ir.file}:{s.line}")
        ts = [self.type_of(a) for a in s.args]
        v = fn(self, s, ts)
        if s.type in NARROW and v is not None:
            v = narrowed(self.b, v, s.type)
        return v if v is not None else L.Constant(I8, 0)

    def emit_impl(self, impl, s) -> L.Value:
        """Lower `s` by the registry impl inference chose: its codegen, or a native call
        of its plain-Python implementation."""
        if impl.lower is None:
            call = self.typing.calls[s.var]
            return self.call_user(call.target, call.operands, [])
        args = s.args[1:] if s.op == "call" else s.args
        return impl.lower(self, s, [self.type_of(a) for a in args])

    def _emit_term(self, term) -> None:
        if isinstance(term, Goto):
            self.b.branch(self.llblocks[term.target])
        elif isinstance(term, Branch):
            cond = self.get(term.cond, BOOL)
            self.b.cbranch(cond, self.llblocks[term.then], self.llblocks[term.else_])
        elif isinstance(term, Return):
            value = self.get(term.value, self.typing.ret)
            self.b.ret(self.b.insert_value(self._result(self.b, L.Constant(I32, runtime.OK)),
                                           value, 1))
        elif isinstance(term, Raise):
            self._emit_raise(term)
        else:
            raise TypingError(f"jit: block without terminator in {self.ir.name}")

    def _emit_raise(self, term: Raise) -> None:
        """A user's `raise E(args)` records E and its arguments and returns ERROR
        (`jit.typing.raising`); any other `raise` follows a call that raised
        (`raised_before`) and is never reached."""
        if self.type_of(term.value) == CAUGHT:     # a re-raise: the record names it
            self._exit_if(L.Constant(L.IntType(1), 1), runtime.ERROR, None, (),
                          word=self.b.ptrtoint(self.get(term.value), I64))
        made = raised(self.typing, term)
        types = [] if made is None else [self.type_of(op) for op in made[1]]
        if made is not None and not any(holds_formatted(t) for t in types):
            cls, operands = made    # (with an f-string, the call left before: a rerun)
            details = tuple(self.get(op) for op, t in zip(operands, types)
                            if not isinstance(op, Const))
            sid = runtime.site(cls, "", self.source_name, self.ir.file, term.line, False,
                               argument_specs(types, operands))
            self._exit_if(L.Constant(L.IntType(1), 1), runtime.ERROR, sid, details)
        self.b.unreachable()

    def _wire_phis(self, blocks: list) -> None:
        for block in blocks:
            for p in block.phis:
                node = self.values[p.var]
                for pred, operand in p.incoming.items():
                    end = self.landings.get((pred, block.id)) or self.ends.get(pred)
                    if end is None:
                        continue
                    self.b.position_before(end.terminator)
                    node.add_incoming(self.get(operand, p.type), end)

    # -- values ----------------------------------------------------------------
    def type_of(self, operand: Any) -> Type:
        return self.mg.engine.operand_type(self.typing, operand)

    def get(self, operand: Any, want: Optional[Type] = None) -> L.Value:
        """The LLVM value of an operand, converted to `want` if given."""
        if want is not None and is_unbound(operand):    # never read (see jit.typing.unbound)
            return zero_of(want)
        if isinstance(operand, Packed):                  # a call's `*args` tuple
            t = self.type_of(operand)
            out = L.Constant(lltype(t), L.Undefined)
            for i, (x, e) in enumerate(zip(operand.operands, t.elems)):
                out = self.b.insert_value(out, self.get(x, e), i)
            return out if want is None else self.convert(out, t, want)
        have = self.type_of(operand)
        if isinstance(operand, Var):
            v = self.values[operand]
        else:
            v = const_value(operand.value, have)
        return v if want is None else self.convert(v, have, want)

    def convert(self, v: L.Value, have: Type, want: Type) -> L.Value:
        """Numeric widening bool -> int64 -> float64 (element-wise for tuples); a
        float32 or int32 result is rounded (wrapped) to its width."""
        if have == want:
            return v
        if have in NARROW or want in NARROW:
            w = self.convert(v, wide(have), wide(want))
            return narrowed(self.b, w, want) if want in NARROW else w
        if isinstance(want, LiteralT):      # a constant the callee was specialised on
            return L.Constant(I8, 0)
        if isinstance(want, BuiltListT) and isinstance(have, LiteralT):   # [] grown
            return zero_of(want)
        if have == BOOL and want == INT64:
            return self.b.zext(v, I64)
        if have == BOOL and want == FLOAT64:
            return self.b.uitofp(v, F64)
        if have == INT64 and want == FLOAT64:
            return self.b.sitofp(v, F64)
        if have == NONE and self.ir.meta.get("none_is_zero"):
            return zero_of(want)
        if isinstance(want, StrT) and isinstance(have, (LiteralT, StrT)):
            return v if isinstance(have, StrT) else self.mg.string_word(have.value)
        if isinstance(want, RecordT) and isinstance(have, LiteralT):
            return const_value(have.value, want)   # a global object passed on: its fields
        if isinstance(have, LiteralT) and type(have.value) in (int, float, bool) and \
                want in (INT64, FLOAT64, BOOL):     # a number known from the types
            return const_value(have.value, want)
        if isinstance(have, TupleT) and isinstance(want, TupleT):
            out = L.Constant(lltype(want), L.Undefined)
            for i, (h, w) in enumerate(zip(have.elems, want.elems)):
                out = self.b.insert_value(out, self.convert(self.b.extract_value(v, i), h, w), i)
            return out
        raise TypingError(f"jit: cannot convert {have} to {want} in {self.ir.name} "
                          f"at {self.ir.file}:{self.line}")

    def alloca(self, ty: L.Type) -> L.Value:
        return self.alloca_builder.alloca(ty)

    # -- errors ----------------------------------------------------------------
    def raise_if(self, cond: L.Value, exc: type, template: str, details: tuple = (),
                 float_details: bool = False) -> None:
        """If `cond`, record the error site and details and return ERROR."""
        sid = runtime.site(exc, template, self.source_name, self.ir.file, self.line,
                           float_details)
        self._exit_if(cond, runtime.ERROR, sid, details)

    @property
    def source_name(self) -> str:
        """The user's name for this function (not `f_forward`/`f_adjoint`)."""
        return self.ir.meta.get("source_name", self.ir.name)

    def deopt_if(self, cond: L.Value, why: str, exc: type = OverflowError) -> None:
        """If `cond`, return DEOPT: the result needs exact Python semantics.  `exc` is
        raised instead where the call cannot be rerun (a function that writes arrays)."""
        sid = runtime.site(exc, why, self.source_name, self.ir.file, self.line)
        self._exit_if(cond, runtime.DEOPT, sid, ())

    def zero_division_if(self, cond: L.Value, template: str) -> None:
        """A division (`/`, `//`, `%`, `**` of 0.0) by zero.  CPython raises
        ZeroDivisionError for Python numbers, but a numpy scalar (an element read from
        an array, `np.float64` or `np.int64`) gives inf, nan or 0 with a warning, and
        the JIT types both as one float64/int64: the call deoptimises, and its rerun
        has exact Python semantics.  A device cannot rerun: it raises."""
        if self.mg.reruns:
            self.deopt_if(cond, template, ZeroDivisionError)
        else:
            self.raise_if(cond, ZeroDivisionError, template)

    def _exit_if(self, cond: L.Value, status: int, sid: Optional[int], details: tuple,
                 word: Optional[L.Value] = None) -> None:
        """If `cond`, record error site `sid` (or the site word `word`) and its details,
        and leave with `status`: an ERROR raised in a protected block goes to its
        handler instead (`_make_landings`)."""
        details = tuple(self._detail_word(d) for d in details)
        site = self.mg.site_word(sid) if word is None else word
        to_handler = self.handler is not None and (status == runtime.ERROR or self._raises_deopts)
        if not to_handler:
            ok = self.fn.append_basic_block("ok")
            exit_ = self._exit()
            exit_.edge(self.b.block, L.Constant(I32, status), site, details)
            self.b.cbranch(cond, exit_.block, ok).set_weights([1, 99])
            self.b.position_at_end(ok)
            return
        with self.b.if_then(cond, likely=False):
            base = self.mg.errinfo_base(self.b)
            self.b.store(site, self.b.gep(base, [L.Constant(I64, 1)], source_etype=I64))
            for k, d in enumerate(details):
                self.b.store(d, self.b.gep(base, [L.Constant(I64, 2 + k)], source_etype=I64))
            self.b.branch(self.handler)

    def _detail_word(self, d: L.Value) -> L.Value:
        d = self.b.bitcast(d, I64) if d.type == F64 else d
        return self.b.zext(d, I64) if d.type == I1 else d

    @property
    def _raises_deopts(self) -> bool:
        """A function that writes to arrays is not rerun: a DEOPT raises its site's
        exception (`jit.api._not_rerun`), which a handler here catches like an error."""
        return bool(self.typing.writes)

    def leave_with(self, status: L.Value, caller: Optional[L.Value] = None) -> None:
        """Return `status` and no result, through the function's one exit block (a
        `ret` of the result struct at every error site made LLVM's code generation
        several times slower on large functions); `caller`: a site word for the
        error record's CALLER_SLOT (see `_note_caller`)."""
        exit_ = self._exit()
        exit_.edge(self.b.block, status, L.Constant(I64, 0), (), caller)   # (site recorded)
        self.b.branch(exit_.block)

    def _exit(self) -> ErrorExit:
        """The exit every error leaves through (`jit.codegen.error_exit`), made on first
        use and finished once the body is emitted."""
        if self._status_exit is None:
            self._status_exit = ErrorExit(self.fn)
        return self._status_exit

    def _result(self, b: L.IRBuilder, status: L.Value) -> L.Value:
        """This function's return value with `status` and no result yet."""
        undef = L.Constant(result_struct(self.typing.ret), L.Undefined)
        return b.insert_value(undef, status, 0)

    def propagate(self, status: L.Value, on_error: Optional[Callable] = None,
                  note_caller: bool = False) -> None:
        """Return a callee's non-OK status unchanged (after `on_error()` emits its
        clean-up code there; with `note_caller`, after `_note_caller`)."""
        with self.b.if_then(self.b.icmp_signed("!=", status, L.Constant(I32, 0)), likely=False):
            caller = None
            if note_caller and self.handler is not None:
                self._note_caller()
            elif note_caller:
                caller = self.mg.site_word(self._caller_site())
            if on_error is not None:
                on_error()
            if self.handler is not None and self._raises_deopts:
                self.b.branch(self.handler)
                return
            if self.handler is not None:        # an ERROR is caught; a DEOPT reruns
                error = self.b.icmp_signed("==", status, L.Constant(I32, runtime.ERROR))
                with self.b.if_then(error):
                    self.b.branch(self.handler)
            self.leave_with(status, caller)

    # -- calls -----------------------------------------------------------------
    def call_user(self, target: Typing, operands: list, lead: list,
                  on_error: Optional[Callable] = None) -> L.Value:
        """A native call of another specialised user function (`on_error`: see
        `propagate`)."""
        target = self.mg.engine.table.get(target.key, target)
        args = list(lead)
        for a, want in zip(operands, target.argtypes[len(lead):]):
            args.append(self.get(a, want))
        depth = self.b.add(self.depth, L.Constant(I64, 1))
        status, value = self.mg.call_function(self.b, target, depth, args)
        note = runtime.internal_file(target.ir.file) and not runtime.internal_file(self.ir.file)
        self.propagate(status, on_error, note)
        return value

    def _note_caller(self) -> None:
        """On the path where a library helper failed (an error, or a deopt that
        cannot be rerun): record this statement as the place it is reported at
        (`runtime.CALLER_SLOT`), so that no helper's name reaches a user."""
        base = self.mg.errinfo_base(self.b)
        self.b.store(self.mg.site_word(self._caller_site()),
                     self.b.gep(base, [L.Constant(I64, runtime.CALLER_SLOT)], source_etype=I64))

    def _caller_site(self) -> int:
        return runtime.site(RuntimeError, "", self.source_name, self.ir.file, self.line)


@codegen("copy")
def _cg_copy(fc: FunctionGen, s, ts):
    return fc.get(s.args[0], s.type)


@codegen("call")
def _cg_call(fc: FunctionGen, s, ts):
    call = fc.typing.calls.get(s.var)
    if call is None:
        raise TypingError(f"jit: unresolved call {s.var} in {fc.ir.name}")
    if call.target is None:
        raise TypingError(f"jit: no LLVM lowering for calling {call.callee!r}")
    lead = []
    if isinstance(ts[0], ClosureT):
        clo = fc.get(s.args[0])
        lead = [fc.b.extract_value(clo, i) for i in range(len(ts[0].captured))]
    elif isinstance(ts[0], RecordT):     # the object called is `__call__`'s receiver
        lead = [fc.get(s.args[0])]
    return fc.call_user(call.target, call.operands[len(lead):], lead)


@codegen("make_closure")
def _cg_make_closure(fc: FunctionGen, s, ts):
    ty = lltype(s.type)
    out = L.Constant(ty, L.Undefined)
    for i, a in enumerate(s.args[1:]):
        out = fc.b.insert_value(out, fc.get(a, s.type.captured[i]), i)
    return out


def const_operand(operand: Any) -> Any:
    return operand.value if isinstance(operand, Const) else None


def scalar_kind(t: Scalar) -> str:
    return "f" if t == FLOAT64 else "i"
