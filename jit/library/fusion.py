"""Pass `fuse_elementwise` (run on a function once it is typed): an elementwise
expression over float64 arrays whose intermediates are used once becomes one loop.

`np.tanh(x @ W + b)` types as two whole-array statements, `add` and `tanh`, each a
call of a loop template of `jit.library.elementwise` with an array of its own.  When
the `add`'s result is read only by the `tanh`, in the same block, the pair is
replaced by one call of a kernel generated for the expression, `out[i, j] =
np.tanh(a[i, j] + b[j])`: one pass over memory and no temporary array.

What is fused, and why it gives the same result bit for bit:
  * a statement joins when typing chose one of the templates for it (a binary
    `+ - * /` of `BINARY_IMPLS`, a negation of `NEG_IMPLS`, a ufunc of `UFUNC_IMPLS`):
    float64 arrays of 1 or 2 dimensions and numbers.  The kernel computes each
    element with the same operations in the same order, only without storing the
    intermediates (LLVM contracts no multiply-add without fast-math);
  * shapes broadcast node by node in evaluation order with the templates' checks
    (`broadcast_length`), so a mismatch raises the same ValueError, naming the same
    lengths; a 1-D operand of a 2-D expression is a row;
  * an intermediate is absorbed only when its one use is a member in the same block,
    and no statement between the group's first member and its root writes memory or
    calls anything but numpy (a write into an operand between would be read late).
The rest of the JIT sees an ordinary call of a plain-Python kernel (`python_impls`),
typed and compiled like a template.  The J transform never sees a kernel: it runs on
the source IR, and this pass on the forward and adjoint IRs it produced (and on the
rule bodies they call), after their typing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from adjoint.transform import WRITES_INTO_ARGUMENT
from ssair.ir import IR, Const, Stmt, Var
from ssair.passes.util import is_pure

from jit.library.elementwise import _SYMBOLS, BINARY_IMPLS, NEG_IMPLS, UFUNC_IMPLS
from jit.library.python_impls import make
from jit.types import FLOAT64, INT64, ArrayT
from jit.typing.infer import POST_TYPING_REWRITES, Typing

_SYMBOL = {op: sym for op, sym in _SYMBOLS.items() if op != "pow"}   # (pow is not fused)
# template implementation -> what its statement computes
_KIND: dict = {}
for (_op, _kind, _nd), _fn in BINARY_IMPLS.items():
    if _op in _SYMBOL:
        _KIND[_fn] = ("binary", _op)
for _fn in NEG_IMPLS.values():
    _KIND[_fn] = ("neg", None)
for (_uf, _nd), _fn in UFUNC_IMPLS.items():
    _KIND[_fn] = ("ufunc", _uf.__name__)


@dataclass(eq=False)
class Group:
    """One fused expression: the `root` statement's var, the member vars absorbed
    into it, and (built by `_tree`) its leaves and expression."""
    root: Var
    members: list = field(default_factory=list)
    leaves: list = field(default_factory=list)     # operands (Var or Const), in order
    expr: Any = None                                # nested tuples over leaf indices


def _member_kind(t: Typing, s: Stmt):
    """(kind, op, operands) when `s` is a template statement that may be fused."""
    call = t.calls.get(s.var)
    kind = _KIND.get(getattr(call, "callee", None)) if call is not None else None
    if kind is None or s.kwargs:
        return None
    ops = list(s.args[1:]) if s.op == "call" else list(s.args)
    want = 1 if kind[0] != "binary" else 2
    rt = t.types.get(s.var)
    if len(ops) != want or not (isinstance(rt, ArrayT) and rt.dtype == FLOAT64):
        return None
    for a in ops:
        at = t.types.get(a) if isinstance(a, Var) else None
        if isinstance(a, Const):
            if type(a.value) not in (float, int):
                return None
        elif not (at in (FLOAT64, INT64) or isinstance(at, ArrayT) and at.dtype == FLOAT64
                  and at.ndim in (1, 2)):
            return None
    return kind[0], kind[1], ops


def _may_sit_between(t: Typing, s: Stmt) -> bool:
    """A statement that may run between a group's members: it writes nothing."""
    if s.op != "call":
        return is_pure(s.op)
    if s.kwargs.get("out") is not None:
        return False
    call = t.calls.get(s.var)
    if call is not None and call.callee in _KIND:
        return True
    f = getattr(s.args[0], "value", None)
    return callable(f) and (getattr(f, "__module__", None) or "").startswith("numpy") \
        and not any(f is g for g in WRITES_INTO_ARGUMENT)


def fusion_groups(t: Typing) -> list:
    """The groups of two or more members in typed function `t`."""
    uses = t.use_counts()
    groups = []
    for b in t.ir.blocks:
        info = {s.var: (k, s) for k, s in enumerate(b.stmts)
                if _member_kind(t, s) is not None}
        absorbed = {}       # member var -> the member that absorbs it
        for v, (k, s) in info.items():
            for a in _member_kind(t, s)[2]:
                if isinstance(a, Var) and a in info and uses.get(a) == 1:
                    absorbed[a] = v
        for v in info:
            if v in absorbed:
                continue
            members = _collect(v, info, absorbed, t)
            if len(members) < 2:
                continue
            first = min(info[m][0] for m in members)
            last = info[v][0]
            inside = set(members)
            if all(s.var in inside or _may_sit_between(t, s)
                   for s in b.stmts[first:last + 1]):
                groups.append(Group(v, members))
    return groups


def _collect(root: Var, info: dict, absorbed: dict, t: Typing) -> list:
    out, todo = [], [root]
    while todo:
        v = todo.pop()
        out.append(v)
        todo.extend(a for a in _member_kind(t, info[v][1])[2]
                    if isinstance(a, Var) and absorbed.get(a) == v)
    return out


def apply_groups(ir: IR, t: Typing, groups: list) -> None:
    """Replace, in `ir` (a fresh copy of the typed function's source), each group's
    root by a call of its kernel and delete the other members."""
    defs = {s.var: s for b in t.ir.blocks for s in b.stmts}
    drop, replace = set(), {}
    for g in groups:
        inside = set(g.members)
        g.leaves, index = [], {}

        def tree(v):
            kind, op, ops = _member_kind(t, defs[v])
            parts = []
            for a in ops:
                if isinstance(a, Var) and a in inside:
                    parts.append(tree(a))
                    continue
                key = a if isinstance(a, Var) else ("const", repr(a.value))
                if key not in index:
                    index[key] = len(g.leaves)
                    g.leaves.append(a)
                parts.append(index[key])
            return (kind, op) + tuple(parts)
        g.expr = tree(g.root)
        types = tuple(_leaf_type(t, a) for a in g.leaves)
        kernel = kernel_for(g.expr, types, t.types[g.root].ndim)
        replace[g.root] = Stmt(g.root, "call", [Const(kernel)] + list(g.leaves), {},
                               defs[g.root].line, defs[g.root].name)
        drop |= inside - {g.root}
    for b in ir.blocks:
        b.stmts = [replace.get(s.var, s) for s in b.stmts if s.var not in drop]


def _leaf_type(t: Typing, a: Any) -> Any:
    if isinstance(a, Const):
        return "s"
    at = t.types[a]
    return at.ndim if isinstance(at, ArrayT) else "s"


_KERNELS: dict = {}


def kernel_for(expr: tuple, leaves: tuple, ndim: int) -> Any:
    """The plain-Python kernel computing `expr` elementwise over leaves of the given
    kinds (1 or 2: an array of that rank, "s": a number), made once per shape."""
    key = (expr, leaves, ndim)
    fn = _KERNELS.get(key)
    if fn is None:
        name = f"_fused{len(_KERNELS)}"
        fn = _KERNELS[key] = make(kernel_source(name, expr, leaves, ndim), name)
    return fn


def kernel_source(name: str, expr: tuple, leaves: tuple, ndim: int) -> str:
    """The kernel's source: the shapes broadcast node by node as the templates do,
    then one loop (a plain one when every array operand has the result's shape)."""
    args = [f"x{k}" for k in range(len(leaves))]
    lines = [f"def {name}({', '.join(args)}):"]
    for k, nd in enumerate(leaves):      # each array's rows (1 for a row) and columns
        if nd == 2:
            lines.append(f"    r{k}, c{k} = x{k}.shape")
        elif nd == 1:
            if ndim == 2:
                lines.append(f"    r{k} = 1")
            lines.append(f"    c{k} = x{k}.shape[0]")
    counter = [0]

    def shape(e):
        """(rows, cols) names of node `e`'s shape, or None for a number."""
        if isinstance(e, int):
            return None if leaves[e] == "s" else (f"r{e}", f"c{e}")
        parts = [shape(p) for p in e[2:]]
        arrays = [p for p in parts if p is not None]
        if len(arrays) < 2:
            return arrays[0] if arrays else None
        counter[0] += 1
        n = counter[0]
        (ra, ca), (rb, cb) = arrays
        if ndim == 2:
            lines.append(f"    rr{n} = broadcast_length({ra}, {rb})")
        lines.append(f"    cc{n} = broadcast_length({ca}, {cb})")
        return (f"rr{n}" if ndim == 2 else "0", f"cc{n}")
    rows, cols = shape(expr)
    arrays = [k for k, nd in enumerate(leaves) if nd != "s"]
    if ndim == 2:
        lines.append(f"    n = {rows}")
        lines.append(f"    m = {cols}")
        lines.append("    out = np.empty((n, m))")
        full = " and ".join([f"r{k} == n and c{k} == m" if leaves[k] == 2 else f"c{k} == m"
                             for k in arrays])
        lines.append(f"    if {full}:")
        lines += ["        for i in range(n):", "            for j in range(m):",
                  f"                out[i, j] = {_element(expr, leaves, 'plain2')}",
                  "        return out"]
        for k in arrays:
            if leaves[k] == 2:
                lines.append(f"    si{k} = 1 if r{k} == n else 0")
            lines.append(f"    sj{k} = 1 if c{k} == m else 0")
        lines += ["    for i in range(n):", "        for j in range(m):",
                  f"            out[i, j] = {_element(expr, leaves, 'strided2')}",
                  "    return out"]
    else:
        lines.append(f"    n = {cols}")
        lines.append("    out = np.empty(n)")
        full = " and ".join(f"c{k} == n" for k in arrays)
        lines += [f"    if {full}:", "        for i in range(n):",
                  f"            out[i] = {_element(expr, leaves, 'plain1')}",
                  "        return out"]
        for k in arrays:
            lines.append(f"    sj{k} = 1 if c{k} == n else 0")
        lines += ["    for i in range(n):",
                  f"        out[i] = {_element(expr, leaves, 'strided1')}", "    return out"]
    return "\n".join(lines) + "\n"


def _element(e: Any, leaves: tuple, how: str) -> str:
    """The expression of one element of node `e`."""
    if isinstance(e, int):
        nd = leaves[e]
        if nd == "s":
            return f"x{e}"
        if how == "plain2":
            return f"x{e}[i, j]" if nd == 2 else f"x{e}[j]"
        if how == "strided2":
            return f"x{e}[i * si{e}, j * sj{e}]" if nd == 2 else f"x{e}[j * sj{e}]"
        return f"x{e}[i]" if how == "plain1" else f"x{e}[i * sj{e}]"
    kind, op = e[0], e[1]
    parts = [_element(p, leaves, how) for p in e[2:]]
    if kind == "neg":
        return f"(-{parts[0]})"
    if kind == "ufunc":
        return f"np.{op}({parts[0]})"
    if op == "truediv":
        return f"_fdiv({parts[0]}, {parts[1]})"
    return f"({parts[0]} {_SYMBOL[op]} {parts[1]})"


ENABLED = [True]     # False: compile each elementwise statement as its own loop


def fuse_elementwise(t: Typing, source: IR) -> bool:
    """Rewrite `source` (a fresh copy of `t`'s source) with `t`'s groups fused; False
    when there is nothing to fuse."""
    groups = fusion_groups(t) if ENABLED[0] else []
    if not groups:
        return False
    apply_groups(source, t, groups)
    return True


POST_TYPING_REWRITES.append(fuse_elementwise)
