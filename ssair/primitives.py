"""The primitive table: every `op` a `Stmt` may carry, with its operand count, its
Python semantics (used by the interpreter and by constant folding) and whether it is
pure (free of side effects, so DCE/CSE may drop or merge it).

Other stages keep their own tables keyed by the same names (derivative rules, type
rules, LLVM lowering).  Stages that introduce new operations (the adjoint's tape
operations) register them here with `register`.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class Primitive:
    """One row of the table.

    `nargs` is the exact positional operand count, or `(lo, None)` for variadic ops
    (at least `lo`).  `impl` implements the op on Python values (None for ops the
    interpreter handles itself, such as `call`).  `pure` ops have no side effects and
    depend only on their operands; `foldable` ops may be evaluated at compile time
    when all operands are constants.  `symbol` is the Python spelling, for docs.
    """

    name: str
    nargs: Any
    impl: Optional[Callable]
    pure: bool = True
    foldable: bool = True
    symbol: str = ""

    def arity_ok(self, n: int) -> bool:
        if isinstance(self.nargs, tuple):
            lo, hi = self.nargs
            return n >= lo and (hi is None or n <= hi)
        return n == self.nargs


PRIMITIVES: dict = {}
REVISION: list = [0]    # bumped by every `register` (for caches of the table)


def register(name: str, nargs: Any, impl: Optional[Callable], *, pure: bool = True,
             foldable: bool = True, symbol: str = "") -> Primitive:
    """Add (or replace) a primitive in the table and return it."""
    p = Primitive(name, nargs, impl, pure, foldable, symbol)
    PRIMITIVES[name] = p
    REVISION[0] += 1
    return p


def primitive(name: str) -> Primitive:
    """Look `name` up, failing with a message that names it."""
    try:
        return PRIMITIVES[name]
    except KeyError:
        raise KeyError(f"unknown primitive {name!r}") from None


BINARY = {
    "add": (operator.add, "+"), "sub": (operator.sub, "-"), "mul": (operator.mul, "*"),
    "truediv": (operator.truediv, "/"), "floordiv": (operator.floordiv, "//"),
    "mod": (operator.mod, "%"), "pow": (operator.pow, "**"), "matmul": (operator.matmul, "@"),
    "lshift": (operator.lshift, "<<"), "rshift": (operator.rshift, ">>"),
    "bitand": (operator.and_, "&"), "bitor": (operator.or_, "|"), "bitxor": (operator.xor, "^"),
}
UNARY = {
    "neg": (operator.neg, "-"), "pos": (operator.pos, "+"), "invert": (operator.invert, "~"),
    "not": (operator.not_, "not"), "truth": (operator.truth, "bool"),
}
COMPARE = {
    "lt": (operator.lt, "<"), "le": (operator.le, "<="), "gt": (operator.gt, ">"),
    "ge": (operator.ge, ">="), "eq": (operator.eq, "=="), "ne": (operator.ne, "!="),
    "is": (operator.is_, "is"), "isnot": (operator.is_not, "is not"),
    "in": (lambda a, b: a in b, "in"), "notin": (lambda a, b: a not in b, "not in"),
}

# In-place operators (`x += y`): Python's `operator.iadd` etc.  On numbers they are the
# plain operators; on mutable objects (numpy arrays, lists) they update the left operand
# in place, so they are impure until `ssair.passes.inplace` proves the operand a scalar.
INPLACE = {"i" + name: name for name in BINARY}
_INPLACE_IMPL = {
    "add": operator.iadd, "sub": operator.isub, "mul": operator.imul,
    "truediv": operator.itruediv, "floordiv": operator.ifloordiv, "mod": operator.imod,
    "pow": operator.ipow, "matmul": operator.imatmul, "lshift": operator.ilshift,
    "rshift": operator.irshift, "bitand": operator.iand, "bitor": operator.ior,
    "bitxor": operator.ixor,
}

# Python's binary-operator spelling -> primitive name (lowering uses this).
SYMBOL_TO_BINARY = {sym: name for name, (_, sym) in BINARY.items()}
SYMBOL_TO_COMPARE = {sym: name for name, (_, sym) in COMPARE.items()}


def _getitem(obj, *idx):
    return obj[idx[0] if len(idx) == 1 else tuple(idx)]


def _setitem(obj, value, *idx):
    obj[idx[0] if len(idx) == 1 else tuple(idx)] = value
    return None


def _unpack(seq, n):
    t = tuple(seq)
    if len(t) != n:
        if len(t) < n:
            raise ValueError(f"not enough values to unpack (expected {n}, got {len(t)})")
        raise ValueError(f"too many values to unpack (expected {n})")
    return t


def _make_tuple(*xs):
    return tuple(xs)


def _make_dict(*items):
    """`{k0: v0, k1: v1, ...}` from the operands k0, v0, k1, v1, ..."""
    return dict(zip(items[0::2], items[1::2]))


def _make_list(*xs):
    return list(xs)


def _list_append(xs, x):
    """A comprehension's append: `xs` is read by nothing else, so it is extended in
    place and returned."""
    xs.append(x)
    return xs


for _name, (_fn, _sym) in BINARY.items():
    register(_name, 2, _fn, symbol=_sym)
for _name, _base in INPLACE.items():
    register(_name, 2, _INPLACE_IMPL[_base], pure=False, symbol=BINARY[_base][1] + "=")
for _name, (_fn, _sym) in UNARY.items():
    register(_name, 1, _fn, symbol=_sym)
for _name, (_fn, _sym) in COMPARE.items():
    register(_name, 2, _fn, symbol=_sym)

# The `operator` module's functions that are exactly a primitive, with its arity:
# `operator.add(a, b)` is `a + b` (lowering emits the primitive for a call of one).
# `in`/`notin` are left out: `operator.contains(a, b)` is `b in a`.
OPERATOR_FUNCTIONS = {
    fn: (name, nargs)
    for table, nargs in ((BINARY, 2), (UNARY, 1), (COMPARE, 2))
    for name, (fn, _) in table.items()
    if getattr(fn, "__module__", None) in ("_operator", "operator")
}
OPERATOR_FUNCTIONS.update({fn: ("i" + name, 2) for name, fn in _INPLACE_IMPL.items()})


def operator_primitive(fn: Any) -> Optional[tuple]:
    """(primitive name, arity) when `fn` is an `operator` function that is exactly a
    primitive, else None."""
    try:
        return OPERATOR_FUNCTIONS.get(fn)
    except TypeError:       # an unhashable callable
        return None

register("tuple", (0, None), _make_tuple, symbol="(a, b)")
register("list", (0, None), _make_list, foldable=False, symbol="[a, b]")
register("dict", (0, None), _make_dict, foldable=False, symbol="{k: v}")
register("list_append", 2, _list_append, pure=False, foldable=False, symbol="[*a, v]")
register("getitem", (2, None), _getitem, symbol="a[i]")
register("setitem", (3, None), _setitem, pure=False, foldable=False, symbol="a[i] = v")
register("getattr", 2, getattr, symbol="a.name")
register("unpack", 2, _unpack, symbol="a, b = t")
# call(f, args...; kwargs): f is a Const callable or a Var holding one.  The
# interpreter lowers and interprets user functions; anything else is called directly.
register("call", (1, None), None, pure=False, foldable=False, symbol="f(x)")
# make_closure(f, freevals...): a closure of the nested function f over the values.
register("make_closure", (1, None), None, foldable=False, symbol="lambda")
# copy(x): an identity; lowering and passes may use it to name a value.
register("copy", 1, lambda x: x, symbol="x")
# caught(): the exception that sent control to this handler block (the first
# statement of every handler; see `Goto.unwind` in `ssair.ir`).  The interpreter
# fills it in when it unwinds.
register("caught", 0, None, pure=False, foldable=False, symbol="except ... as e")


# Cells (Python's closure cells, for variables a nested function reads after the
# enclosing function reassigns them): `make_cell()` / `make_cell(v)` makes a cell,
# `cell_get(c, name, kind)` reads it (`kind` "local" in the function owning the cell,
# "free" in a nested function: CPython's two errors for an empty cell), `cell_set(c, v)`
# writes it.  All impure: a cell's identity and contents are state.
def _make_cell(*value):
    import types
    return types.CellType(*value)


def _cell_get(cell, name, kind):
    try:
        return cell.cell_contents
    except ValueError:
        if kind == "free":
            raise NameError(f"cannot access free variable {name!r} where it is not "
                            f"associated with a value in enclosing scope") from None
        raise UnboundLocalError(f"cannot access local variable {name!r} where it is not "
                                f"associated with a value") from None


def _cell_set(cell, value):
    cell.cell_contents = value


register("make_cell", (0, 1), _make_cell, pure=False, foldable=False, symbol="cell")
register("cell_get", 3, _cell_get, pure=False, foldable=False, symbol="cell.get")
register("cell_set", 2, _cell_set, pure=False, foldable=False, symbol="cell.set")
