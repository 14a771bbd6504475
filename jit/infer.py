"""Type inference: specialise an IR on its argument types.

`infer(ir, argtypes)` returns a `Typing`: a copy of the IR whose every Arg, Phi and
Stmt carries `.type`, the return type, and for every call statement the resolved
callee (another `Typing` for user functions and closures).  The engine is a monotone
fixed point over the blocks (phis and returns join, see `jit.types.join`); the
per-operation rules live in two tables:

  * `RULES[op](ctx, stmt, types) -> Type`      keyed by primitive name;
  * `jit.infer_calls.CALL_RULES[callee]`        keyed by the library callable.

Recursion: a call to a signature that is still being inferred reads its current
return-type guess (unknown at first, so the call's result stays unknown); the
function is re-inferred until its return type stops changing.  A function that read
another in-progress guess is not cached, so mutual recursion converges too.
"""
from __future__ import annotations

import types as pytypes
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ssair.ir import IR, Branch, Const, Phi, Return, Stmt, Var

from .types import (BOOL, FLOAT64, INT64, NONE, ArrayT, ClosureT, FunctionT, Scalar,
                    TupleT, Type, TypingError, is_int_like, is_numeric, join, numeric_join,
                    typeof)

MAX_ROUNDS = 64


@dataclass(frozen=True, repr=False)
class LiteralT(Type):
    """A constant operand with no runtime representation (a string, a dtype, ...);
    rules that expect one (`getattr(a, 'shape')`) read its value."""

    value: Any

    def __str__(self) -> str:
        return f"literal({self.value!r})"


@dataclass(eq=False)
class Call:
    """A resolved call: `target` is the callee's `Typing` for user code (None for a
    library callable) and `operands` its argument operands in parameter order
    (captured values of a closure first, defaults filled in)."""

    target: Optional["Typing"]
    operands: list
    callee: Any


@dataclass(eq=False)
class Typing:
    """One function specialised on `argtypes`: the typed IR copy, `ret` (the joined
    return type) and `calls` (call statement var -> `Call`)."""

    ir: IR
    argtypes: tuple
    source: Optional[IR] = None
    ret: Optional[Type] = None
    types: dict = field(default_factory=dict)
    calls: dict = field(default_factory=dict)
    done: bool = False
    taint: float = float("inf")
    writes: bool = False

    @property
    def key(self) -> tuple:
        return (self.source, self.argtypes)


class Context:
    """What a rule sees: the engine, the function being typed and the statement."""

    def __init__(self, engine: "Engine", typing: Typing, stmt: Stmt) -> None:
        self.engine = engine
        self.typing = typing
        self.stmt = stmt

    def const(self, operand: Any, default: Any = None) -> Any:
        return operand.value if isinstance(operand, Const) else default

    def is_const(self, operand: Any) -> bool:
        return isinstance(operand, Const)

    def type_of(self, operand: Any) -> Optional[Type]:
        return self.engine.operand_type(self.typing, operand)

    def fail(self, why: str) -> None:
        raise TypingError(why)


RULES: dict = {}


def rule(*ops: str) -> Callable:
    """Register a type rule for the primitives `ops`."""
    def deco(fn):
        for op in ops:
            RULES[op] = fn
        return fn
    return deco


def describe(typing: Typing, d: Any) -> str:
    """`%5 = mul(%3, %4)` in f at file.py:12, for error messages."""
    from ssair.printer import format_stmt
    ir = typing.ir
    text = format_stmt(d) if isinstance(d, (Stmt, Phi)) else str(d)
    where = f"{ir.file}:{getattr(d, 'line', None) or ir.firstline}"
    return f"{text} in {ir.name} at {where}"


def lower_function(func: Any) -> IR:
    """The IR of a user function, lowered once and cached on the function."""
    cached = _IR_CACHE.get(func)
    if cached is not None:
        return cached
    import lowering
    ir = lowering.lower(func)
    _IR_CACHE[func] = ir
    return ir


_IR_CACHE: dict = {}


def is_user_function(f: Any) -> bool:
    """A Python function the JIT compiles itself (not math/numpy/builtins)."""
    if not isinstance(f, pytypes.FunctionType):
        return False
    from ssair.interpreter import LIBRARY_MODULES
    mod = (getattr(f, "__module__", None) or "").split(".")[0]
    return mod not in LIBRARY_MODULES


class Engine:
    """Holds every signature inferred so far: (IR, argtypes) -> Typing."""

    def __init__(self) -> None:
        self.table: dict = {}
        self.stack: list = []

    def infer(self, ir: IR, argtypes: tuple) -> Typing:
        key = (ir, tuple(argtypes))
        t = self.table.get(key)
        if t is not None:
            if not t.done and self.stack:
                top = self.stack[-1]
                top.taint = min(top.taint, self.stack.index(t))
            return t
        t = Typing(ir.copy(), tuple(argtypes), ir)
        self.table[key] = t
        try:
            self._solve(t)
        except BaseException:
            self.table.pop(key, None)
            raise
        return t

    def _solve(self, t: Typing) -> None:
        if len(t.argtypes) != len(t.ir.args):
            raise TypingError(f"{t.ir.name} takes {len(t.ir.args)} arguments "
                              f"({len(t.argtypes)} given)")
        level = len(self.stack)
        self.stack.append(t)
        try:
            for _ in range(MAX_ROUNDS):
                before = t.ret
                t.taint = float("inf")
                self._run(t)
                if t.ret == before:
                    break
        finally:
            self.stack.pop()
        if t.taint < level:  # read the guess of a caller still in progress: redo later
            self.table.pop(t.key, None)
            top = self.stack[-1]
            top.taint = min(top.taint, t.taint)
            return
        self._finish(t)

    def _run(self, t: Typing) -> None:
        for a, at in zip(t.ir.args, t.argtypes):
            t.types[a.var] = at
        changed = True
        rounds = 0
        while changed and rounds < MAX_ROUNDS:
            changed = False
            rounds += 1
            for b in t.ir.blocks:
                for p in b.phis:
                    changed |= self._update(t, p, self._phi_type(t, p))
                for s in b.stmts:
                    changed |= self._update(t, s, self._stmt_type(t, s))
        t.ret = self._return_type(t)

    def _update(self, t: Typing, d: Any, new: Optional[Type]) -> bool:
        if new is None:
            return False
        old = t.types.get(d.var)
        try:
            merged = join(old, new)
        except TypingError as e:
            raise TypingError(f"jit: {describe(t, d)}: {e}") from None
        if merged == old:
            return False
        t.types[d.var] = merged
        return True

    def _phi_type(self, t: Typing, p: Phi) -> Optional[Type]:
        out = None
        for v in p.incoming.values():
            vt = self.operand_type(t, v)
            if vt is not None:
                try:
                    out = join(out, vt)
                except TypingError as e:
                    raise TypingError(f"jit: {describe(t, p)}: {e}") from None
        return out

    def _stmt_type(self, t: Typing, s: Stmt) -> Optional[Type]:
        ts = [self.operand_type(t, a) for a in s.args]
        if any(x is None for x in ts) or any(self.operand_type(t, v) is None
                                             for v in s.kwargs.values()):
            return None
        fn = RULES.get(s.op)
        if fn is None:
            raise TypingError(f"jit: no type rule for primitive {s.op!r}: {describe(t, s)}")
        try:
            return fn(Context(self, t, s), s, ts)
        except TypingError as e:
            if str(e).startswith("jit: "):
                raise
            raise TypingError(f"jit: cannot type {describe(t, s)}: {e}") from None

    def _return_type(self, t: Typing) -> Optional[Type]:
        out = None
        for b in t.ir.blocks:
            if isinstance(b.term, Return):
                out = join(out, self.operand_type(t, b.term.value))
        return out

    def operand_type(self, t: Typing, a: Any) -> Optional[Type]:
        if isinstance(a, Var):
            return t.types.get(a)
        try:
            return typeof(a.value)
        except TypingError:
            return LiteralT(a.value)

    def _finish(self, t: Typing) -> None:
        for d in t.ir.definitions():
            ty = t.types.get(d.var)
            if ty is None:
                raise TypingError(f"jit: cannot infer the type of {describe(t, d)} "
                                  "(it depends on a value that never gets a type, "
                                  "such as a recursion without a base case)")
            d.type = ty
        for b in t.ir.blocks:
            if isinstance(b.term, Branch) and self.operand_type(t, b.term.cond) != BOOL:
                raise TypingError(f"jit: branch condition of block #{b.id} in "
                                  f"{t.ir.name} is not a bool")
        if t.ret is None:
            t.ret = NONE
        t.done = True
        for c in t.calls.values():
            if c.target is not None and not c.target.done:
                c.target = self.infer(c.target.source, c.target.argtypes)


# ---------------------------------------------------------------------------
# Arithmetic, comparisons, logic.

def _numeric(ts: list) -> bool:
    return all(is_numeric(x) for x in ts)


def _arith_result(ts: list) -> Scalar:
    out = numeric_join(ts[0], ts[1])
    return INT64 if out is BOOL else out


@rule("add", "sub", "mul")
def _t_arith(ctx: Context, s: Stmt, ts: list) -> Type:
    if _numeric(ts):
        return _arith_result(ts)
    if s.op == "add" and all(isinstance(x, TupleT) for x in ts):
        return TupleT(ts[0].elems + ts[1].elems)
    ctx.fail(f"unsupported operand types {ts[0]} and {ts[1]}")


@rule("truediv")
def _t_truediv(ctx: Context, s: Stmt, ts: list) -> Type:
    if not _numeric(ts):
        ctx.fail(f"unsupported operand types {ts[0]} and {ts[1]}")
    return FLOAT64


@rule("floordiv", "mod")
def _t_floordiv(ctx: Context, s: Stmt, ts: list) -> Type:
    if not _numeric(ts):
        ctx.fail(f"unsupported operand types {ts[0]} and {ts[1]}")
    return _arith_result(ts)


@rule("pow")
def _t_pow(ctx: Context, s: Stmt, ts: list) -> Type:
    if not _numeric(ts):
        ctx.fail(f"unsupported operand types {ts[0]} and {ts[1]}")
    if FLOAT64 in ts:
        return FLOAT64
    e = ctx.const(s.args[1])
    if isinstance(e, int) and e < 0:
        return FLOAT64
    return INT64  # a negative runtime exponent falls back to the interpreter


@rule("lshift", "rshift", "bitand", "bitor", "bitxor")
def _t_bits(ctx: Context, s: Stmt, ts: list) -> Type:
    if not all(is_int_like(x) for x in ts):
        ctx.fail(f"unsupported operand types {ts[0]} and {ts[1]}")
    if ts[0] == BOOL and ts[1] == BOOL and s.op in ("bitand", "bitor", "bitxor"):
        return BOOL
    return INT64


@rule("neg", "pos")
def _t_neg(ctx: Context, s: Stmt, ts: list) -> Type:
    if not is_numeric(ts[0]):
        ctx.fail(f"bad operand type {ts[0]}")
    return INT64 if ts[0] == BOOL else ts[0]


@rule("invert")
def _t_invert(ctx: Context, s: Stmt, ts: list) -> Type:
    if not is_int_like(ts[0]):
        ctx.fail(f"bad operand type {ts[0]}")
    return INT64


@rule("not", "truth")
def _t_truth(ctx: Context, s: Stmt, ts: list) -> Type:
    if is_numeric(ts[0]) or ts[0] == NONE or isinstance(ts[0], TupleT):
        return BOOL
    ctx.fail(f"truth value of {ts[0]} is not supported")


@rule("lt", "le", "gt", "ge")
def _t_order(ctx: Context, s: Stmt, ts: list) -> Type:
    if not _numeric(ts):
        ctx.fail(f"cannot order {ts[0]} and {ts[1]}")
    return BOOL


@rule("eq", "ne")
def _t_eq(ctx: Context, s: Stmt, ts: list) -> Type:
    if _numeric(ts) or NONE in ts and all(isinstance(x, (Scalar, TupleT)) for x in ts):
        return BOOL
    ctx.fail(f"cannot compare {ts[0]} and {ts[1]}")


@rule("is", "isnot")
def _t_is(ctx: Context, s: Stmt, ts: list) -> Type:
    if NONE in ts or ts[0] == BOOL and ts[1] == BOOL:
        return BOOL
    ctx.fail(f"'is' between {ts[0]} and {ts[1]} is only supported against None or bools")


@rule("in", "notin")
def _t_in(ctx: Context, s: Stmt, ts: list) -> Type:
    if is_numeric(ts[0]) and isinstance(ts[1], TupleT) and _numeric(list(ts[1].elems)):
        return BOOL
    ctx.fail(f"'in' is supported for a number in a tuple of numbers, not {ts[1]}")


@rule("copy")
def _t_copy(ctx: Context, s: Stmt, ts: list) -> Type:
    return ts[0]


# ---------------------------------------------------------------------------
# Tuples and arrays.

@rule("tuple")
def _t_tuple(ctx: Context, s: Stmt, ts: list) -> Type:
    for x in ts:
        if isinstance(x, LiteralT):
            ctx.fail(f"tuple element {x} is not supported")
    return TupleT(tuple(ts))


@rule("unpack")
def _t_unpack(ctx: Context, s: Stmt, ts: list) -> Type:
    n = ctx.const(s.args[1])
    if isinstance(ts[0], TupleT) and len(ts[0].elems) == n:
        return ts[0]
    if isinstance(ts[0], TupleT):
        ctx.fail(f"cannot unpack {ts[0]} into {n} values")
    if isinstance(ts[0], ArrayT):
        inner = ts[0].dtype if ts[0].ndim == 1 else ArrayT(ts[0].dtype, 1)
        return TupleT((inner,) * n)
    ctx.fail(f"cannot unpack {ts[0]}")


def index_types(ctx: Context, ts: list) -> list:
    """Flatten `a[i, j]` given as one tuple operand or as several operands."""
    if len(ts) == 1 and isinstance(ts[0], TupleT):
        return list(ts[0].elems)
    return list(ts)


@rule("getitem")
def _t_getitem(ctx: Context, s: Stmt, ts: list) -> Type:
    obj, idx = ts[0], index_types(ctx, ts[1:])
    if isinstance(obj, TupleT):
        return _tuple_item(ctx, s, obj, idx)
    if not isinstance(obj, ArrayT):
        ctx.fail(f"indexing {obj} is not supported")
    if not all(is_int_like(i) for i in idx):
        ctx.fail(f"array index of type {', '.join(map(str, idx))} is not supported "
                 "(only integer indices)")
    if len(idx) > obj.ndim:
        ctx.fail(f"too many indices for {obj}")
    if len(idx) == obj.ndim:
        return obj.dtype
    return ArrayT(obj.dtype, obj.ndim - len(idx))


def _tuple_item(ctx: Context, s: Stmt, obj: TupleT, idx: list) -> Type:
    if len(idx) != 1 or not is_int_like(idx[0]):
        ctx.fail(f"tuple index must be one integer, got {idx}")
    k = ctx.const(s.args[1])
    if isinstance(k, int):
        n = len(obj.elems)
        if not -n <= k < n:
            ctx.fail(f"tuple index {k} out of range for {obj}")
        return obj.elems[k]
    if obj.elems and all(e == obj.elems[0] for e in obj.elems) and is_numeric(obj.elems[0]):
        return obj.elems[0]
    ctx.fail(f"a variable index into the heterogeneous {obj} is not supported")


@rule("setitem")
def _t_setitem(ctx: Context, s: Stmt, ts: list) -> Type:
    obj, val, idx = ts[0], ts[1], index_types(ctx, ts[2:])
    if not isinstance(obj, ArrayT):
        ctx.fail(f"item assignment into {obj} is not supported")
    if len(idx) != obj.ndim or not all(is_int_like(i) for i in idx):
        ctx.fail(f"assignment to {obj} needs {obj.ndim} integer indices")
    if not is_numeric(val) or val == FLOAT64 and obj.dtype == INT64:
        ctx.fail(f"cannot store {val} into {obj}")
    ctx.typing.writes = True
    return NONE


ARRAY_ATTRS = {
    "shape": lambda a: TupleT((INT64,) * a.ndim),
    "ndim": lambda a: INT64,
    "size": lambda a: INT64,
}


@rule("getattr")
def _t_getattr(ctx: Context, s: Stmt, ts: list) -> Type:
    name = ctx.const(s.args[1])
    if isinstance(ts[0], ArrayT) and name in ARRAY_ATTRS:
        return ARRAY_ATTRS[name](ts[0])
    ctx.fail(f"attribute {name!r} of {ts[0]} is not supported")


# ---------------------------------------------------------------------------
# Calls and closures.

@rule("make_closure")
def _t_make_closure(ctx: Context, s: Stmt, ts: list) -> Type:
    f = ctx.const(s.args[0])
    if f is None:
        ctx.fail("make_closure needs a constant function")
    for x in ts[1:]:
        if isinstance(x, LiteralT):
            ctx.fail(f"captured value {x} is not supported")
    return ClosureT(f, tuple(ts[1:]))


@rule("call")
def _t_call(ctx: Context, s: Stmt, ts: list) -> Type:
    from .infer_calls import CALL_RULES, call_rule_for
    callee = ts[0]
    if isinstance(callee, ClosureT):
        return _user_call(ctx, s, callee.func, list(callee.captured), closure=True)
    if not isinstance(callee, FunctionT):
        ctx.fail(f"calling a value of type {callee} is not supported")
    f = callee.func
    if isinstance(f, IR) or is_user_function(f):
        return _user_call(ctx, s, f, [], closure=False)
    fn = call_rule_for(f)
    if fn is None:
        from ssair.printer import object_name
        ctx.fail(f"the JIT has no rule for calling {object_name(f)}")
    ctx.typing.calls[s.var] = Call(None, list(s.args[1:]), f)
    return fn(ctx, s, ts[1:])


def _user_call(ctx: Context, s: Stmt, f: Any, captured: list, closure: bool) -> Type:
    ir = f if isinstance(f, IR) else lower_function(f)
    operands = bind_call(ctx, ir, f, s)
    lead = [s.args[0]] * len(captured)
    argtypes = tuple(captured) + tuple(ctx.type_of(a) for a in operands)
    for a in argtypes:
        if isinstance(a, LiteralT):
            ctx.fail(f"argument {a} is not supported")
    target = ctx.engine.infer(ir, argtypes)
    ctx.typing.calls[s.var] = Call(target, lead + operands, f)
    ctx.typing.writes |= target.writes
    return target.ret


def bind_call(ctx: Context, ir: IR, f: Any, s: Stmt) -> list:
    """Operands for the callee's non-free parameters: positional, keywords, defaults."""
    args, kwargs = list(s.args[1:]), dict(s.kwargs)
    params = [a.name for a in ir.args[ir.nfree:]]
    if not kwargs and len(args) == len(params):
        return args
    code = getattr(f, "__code__", None)
    if code is not None and code.co_flags & 0x0C:
        ctx.fail("calls to functions with *args or **kwargs are not supported")
    if len(args) > len(params):
        ctx.fail(f"{ir.name}() takes {len(params)} positional arguments")
    out = args + [None] * (len(params) - len(args))
    for k, v in kwargs.items():
        if k not in params or out[params.index(k)] is not None:
            ctx.fail(f"{ir.name}() got an unexpected or repeated keyword {k!r}")
        out[params.index(k)] = v
    defaults = _defaults(f, params)
    for i, v in enumerate(out):
        if v is None:
            if params[i] not in defaults:
                ctx.fail(f"{ir.name}() missing argument {params[i]!r}")
            out[i] = Const(defaults[params[i]])
    return out


def _defaults(f: Any, params: list) -> dict:
    f = getattr(f, "func", f)
    d = dict(getattr(f, "__kwdefaults__", None) or {})
    pos = getattr(f, "__defaults__", None) or ()
    if pos:
        n = getattr(getattr(f, "__code__", None), "co_argcount", len(params))
        names = params[:n]
        d.update(zip(names[len(names) - len(pos):], pos))
    return d


def infer(ir: IR, argtypes: tuple, engine: Optional[Engine] = None) -> Typing:
    """Type `ir` for `argtypes`; raises TypingError naming the value, op and line."""
    return (engine or ENGINE).infer(ir, tuple(argtypes))


ENGINE = Engine()
