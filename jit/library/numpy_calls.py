"""numpy functions whose native code is numpy's own: the compiled function calls them
through the host callback (`jit.runtime.host_calls`), the way Numba's object mode
calls Python, but only for the one statement: the rest of the function stays native.

Each entry here is declared with its numpy signature and a result rule, which reads
the argument types and the constant arguments (an axis, a subscript string, a number
of sections) and gives the result's type; numpy itself computes the values.  The
derivative is adjoint's rule for the callable, as for every entry; where the JIT
cannot compile that rule's Python, the compiled adjoint calls it the same way
(`jit.pullback.cotangents`).  `add_host` gives an entry of another family a fallback impl of
the same kind for argument types its native patterns do not cover.

A host call adds about 6 us to numpy's own time (the callback, the views, a copy of
the result).  Where a loop of its own would be faster, an entry belongs in a native
family (as np.roll of a line in `jit.library.shapes`).
"""
from __future__ import annotations

import inspect
import re
from typing import Any, Callable, Optional

import numpy as np

from adjoint import contraction
from ssair.ir import Const, Var
from ssair.primitives import BINARY, COMPARE, UNARY

from adjoint.rules_numpy import scatter_added
from jit.codegen.host_calls import lower_calling, lower_library_call, lower_operator
from jit.library.registry import REGISTRY, numpy_only
from jit.runtime.host_calls import passable
from jit.typing.infer import Context, LiteralT
from jit.types import (BOOL, FLOAT32, FLOAT64, INT32, INT64, MAX_NDIM, NARROW, NONE, NUMPY_DTYPE,
                       ArrayT, BuiltListT, DictT, FunctionT, ListT, TupleT, Type, is_numeric,
                       promote, promote_arrays)

HOST = "any"
OTHER = "other types"


class Args:
    """A call's operands bound to a numpy signature: their types and constant values."""

    def __init__(self, ctx: Context, s, name: str, params: str, fn: Any = None) -> None:
        self.ctx, self.name, self.fn = ctx, name, fn
        sig = _signature(params)
        try:
            bound = sig.bind(*s.args[1:], **s.kwargs)
        except TypeError as exc:
            ctx.fail(f"{name}: {exc}")
        bound.apply_defaults()
        self.ops = {}
        for k, v in bound.arguments.items():
            many = sig.parameters[k].kind is inspect.Parameter.VAR_POSITIONAL
            self.ops[k] = tuple(v) if many else v if isinstance(v, (Var, Const)) else Const(v)

    @classmethod
    def without_operands(cls, ctx: Context, name: str, fn: Any) -> "Args":
        """For the result rules of operators, which read their types directly."""
        a = cls.__new__(cls)
        a.ctx, a.name, a.fn, a.ops = ctx, name, fn, {}
        return a

    def type(self, k: str) -> Type:
        return self.ctx.type_of(self.ops[k])

    def types(self, k: str) -> list:
        return [self.ctx.type_of(v) for v in self.ops[k]]

    def const(self, k: str) -> Any:
        op = self.ops[k]
        if isinstance(op, Const):
            return op.value
        t = self.ctx.type_of(op)
        if isinstance(t, LiteralT):
            return t.value
        if t == NONE:
            return None
        self.ctx.fail(f"{self.name}: argument {k!r} must be a constant in compiled code")

    def array(self, k: str) -> ArrayT:
        return _as_array(self, self.type(k))


_SIGS: dict = {}


def _signature(params: str) -> inspect.Signature:
    sig = _SIGS.get(params)
    if sig is None:
        sig = _SIGS[params] = inspect.signature(eval(f"lambda {params}: None"))  # noqa: S307
    return sig


# -- result types ------------------------------------------------------------------------

def array_of(dtype: Type, ndim: int) -> Type:
    """An array type, or the number type for a 0-D result (numpy returns a scalar)."""
    return dtype if ndim == 0 else ArrayT(dtype, ndim)


def dtype_of(*ts: Type) -> Type:
    """numpy's result dtype for operands of these types: the arrays' dtypes promoted
    (float32 with float64 is float64, int32 with int64 is int64), then the numbers
    as Python numbers (NEP 50, `jit.types.promote`)."""
    flat = []
    for t in ts:
        flat += list(t.elems) if isinstance(t, TupleT) else [t]
    arrays = [t.dtype for t in flat if isinstance(t, ArrayT)]
    numbers = [t for t in flat if not isinstance(t, ArrayT) and is_numeric(t)]
    out = None
    for k in arrays:
        out = k if out is None else promote_arrays(out, k)
    for k in numbers:
        out = k if out is None else promote(out, k)
    return INT64 if out is None else out


def _axes(a: Args, k: str, ndim: int) -> Optional[tuple]:
    """The axes argument `k` (None: all): constant, or computed at run time (an int or
    a tuple of ints: numpy checks them, only their number matters to the rank)."""
    t, op = a.type(k), a.ops[k]
    if not isinstance(op, Const) and t == INT64:
        return (0,)
    if not isinstance(op, Const) and isinstance(t, TupleT) and all(e == INT64 for e in t.elems):
        return tuple(range(len(t.elems)))
    axis = a.const(k)
    if axis is None:
        return None
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    for x in axes:
        if type(x) is not int or not -ndim <= x < max(ndim, 1):
            a.ctx.fail(f"{a.name}: axis {x!r} is out of bounds for a {ndim}-D array")
    return axes


def reduction(dtype: Optional[Type] = FLOAT64, arg: str = "a") -> Callable:
    """np.var/np.std/np.prod-like: over all axes, or `axis` (int or tuple), `keepdims`."""
    def result(a: Args) -> Type:
        x = a.array(arg)
        axes, keep = _axes(a, "axis", x.ndim), bool(a.const("keepdims"))
        nd = x.ndim if keep else (0 if axes is None else x.ndim - len(set(axes)))
        if x.dtype in NARROW and a.fn is not None:     # float32 stays, int32 sums to int64
            return array_of(probe_dtype(a, a.fn, [x]), nd)
        return array_of(dtype or x.dtype, nd)
    return result


def cumulative(a: Args) -> Type:
    x = a.array("a")
    return array_of(x.dtype, 1 if _axes(a, "axis", x.ndim) is None else x.ndim)


def elementwise(dtype: Optional[Type] = None, *names: str) -> Callable:
    """A ufunc or broadcasting function: the larger rank of its operands; its dtype
    `dtype`, or (None) the one numpy gives for operands of these kinds."""
    def result(a: Args) -> Type:
        ts = [a.type(k) for k in names]
        nd = max(t.ndim if isinstance(t, ArrayT) else 0 for t in ts)
        return array_of(dtype or probe_dtype(a, a.fn, ts), nd)
    return result


_KINDS = {d: t for t, d in NUMPY_DTYPE.items()}
_PROBES = {FLOAT64: (np.float64, 0.5), INT64: (np.int64, 1), BOOL: (np.bool_, True),
           FLOAT32: (np.float32, 0.5), INT32: (np.int32, 1)}


def probe_dtype(a: Any, fn: Callable, ts: list) -> Type:
    """The result dtype of `fn` on operands of types `ts`, as numpy computes it: `fn`
    applied to one-element arrays of their dtypes, and to Python numbers for numbers."""
    args = []
    for t in ts:
        if isinstance(t, ArrayT):
            args.append(np.full(1, _PROBES[t.dtype][1], _PROBES[t.dtype][0]))
        elif t in NARROW:      # a numpy scalar, which numpy 2 does not take as weak
            args.append(_PROBES[t][0](_PROBES[t][1]))
        elif t in _PROBES:
            args.append(_PROBES[t][1])
        else:
            a.ctx.fail(f"{a.name} of a {t} is not compiled")
    with np.errstate(all="ignore"):
        kind = np.asarray(fn(*args)).dtype
    if kind in _KINDS:
        return _KINDS[kind]
    a.ctx.fail(f"{a.name} of {', '.join(map(str, ts))} gives {kind} values, which the JIT "
               "does not represent")


def same(dtype: Optional[Type] = None, arg: str = "a") -> Callable:
    def result(a: Args) -> Type:
        x = a.array(arg)
        return array_of(dtype or x.dtype, x.ndim)
    return result


def flat_unless_axis(a: Args) -> Type:
    """np.sort / np.repeat-like: 1-D when axis is None, else the operand's rank."""
    x = a.array("a")
    return array_of(x.dtype, 1 if a.const("axis") is None else x.ndim)


def _rank(t: Type) -> int:
    """The rank of an index or shape operand: an array's, 1 for a tuple or a list
    constant, 0 for a number."""
    if isinstance(t, ArrayT):
        return t.ndim
    if isinstance(t, TupleT) or isinstance(t, LiteralT) and isinstance(t.value, (tuple, list)):
        return 1
    return 0


def _length(t: Type) -> int:
    """The number of entries of a shape operand (a number: 1)."""
    if isinstance(t, TupleT):
        return len(t.elems)
    if isinstance(t, LiteralT) and isinstance(t.value, (tuple, list)):
        return len(t.value)
    return 1


def taken(a: Args) -> Type:
    """np.take: the indices' dimensions in place of the axis taken (of the flattened
    array without an axis)."""
    x = a.array("a")
    rest = 0 if a.const("axis") is None else x.ndim - 1
    return array_of(x.dtype, rest + _rank(a.type("indices")))


def broadcast_shape(a: Args) -> Type:
    """np.broadcast_to: as many dimensions as the shape has entries."""
    return array_of(a.array("array").dtype, _length(a.type("shape")))


def diagonal(a: Args) -> Type:
    x = a.array("a")
    return array_of(x.dtype, x.ndim - 1)


def clipped(a: Args) -> Type:
    """np.clip: the operands broadcast; numpy's dtype of those given."""
    ts = [t for t in (a.type("a"), a.type("a_min"), a.type("a_max"), a.type("min"),
                      a.type("max")) if t != NONE]
    return array_of(dtype_of(*ts), max(_rank(t) for t in ts))


def at_least(k: int) -> Callable:
    def result(a: Args) -> Type:
        ts = a.types("arys")
        if len(ts) != 1:
            a.ctx.fail(f"{a.name} of several arrays is not compiled")
        x = _as_array(a, ts[0])
        return ArrayT(x.dtype, max(k, x.ndim))
    return result


def _as_array(a: Args, t: Type) -> ArrayT:
    if isinstance(t, ArrayT):
        return t
    if t in (FLOAT64, INT64, BOOL):
        return ArrayT(FLOAT64 if t == FLOAT64 else INT64, 0)
    a.ctx.fail(f"{a.name} of a {t} is not compiled")


def _sequence(a: Args, k: str) -> list:
    """The element types of a sequence argument (an array is the sequence of its rows)."""
    t = a.type(k)
    if isinstance(t, ArrayT) and t.ndim >= 1:
        return [ArrayT(t.dtype, t.ndim - 1) if t.ndim > 1 else _as_array(a, t.dtype)]
    if isinstance(t, BuiltListT):
        return [_as_array(a, t.elem)]
    if not isinstance(t, TupleT) or not t.elems:
        a.ctx.fail(f"{a.name} takes a tuple or list of arrays in compiled code, not {t}")
    return [_as_array(a, e) for e in t.elems]


def joined(extra: int = 0, least: int = 0, flat_if_none: bool = False) -> Callable:
    """concatenate (`extra` 0), stack (1), hstack (least 1), vstack (least 2)."""
    def result(a: Args) -> Type:
        xs = _sequence(a, "arrays")
        nd = max(max(x.ndim for x in xs) + extra, least)
        if flat_if_none and a.const("axis") is None:
            nd = 1
        return ArrayT(dtype_of(*xs), nd)
    return result


def column_stack(a: Args) -> Type:
    xs = _sequence(a, "arrays")
    return ArrayT(dtype_of(*xs), 2)


def split_parts(a: Args) -> Type:
    """np.split and its family: as many parts as sections, or indices plus one."""
    x = a.array("ary")
    n = a.const("indices_or_sections")
    parts = n if type(n) is int else len(n) + 1
    return ListT((ArrayT(x.dtype, x.ndim),) * parts)


def tile(a: Args) -> Type:
    x, reps = a.array("A"), a.const("reps")
    return ArrayT(x.dtype, max(x.ndim, len(reps) if isinstance(reps, (tuple, list)) else 1))


def diag(a: Args) -> Type:
    x = a.array("v")
    if x.ndim not in (1, 2):
        a.ctx.fail(f"{a.name} of a {x.ndim}-D array is not compiled")
    return ArrayT(x.dtype, 3 - x.ndim)


def trace(a: Args) -> Type:
    x = a.array("a")
    return array_of(x.dtype, x.ndim - 2)


def kron(a: Args) -> Type:
    x, y = a.array("a"), a.array("b")
    return array_of(dtype_of(x, y), max(x.ndim, y.ndim))


def tensordot(a: Args) -> Type:
    x, y, axes = a.array("a"), a.array("b"), a.const("axes")
    n = axes if type(axes) is int else len(axes[0]) if isinstance(axes[0], (tuple, list)) \
        else 1
    return array_of(dtype_of(x, y), x.ndim + y.ndim - 2 * n)


def einsum(a: Args) -> Type:
    """np.einsum with a subscript string, or in its sublist form (operand, [axes], ...,
    [output axes]): the output's axes (and broadcast axes)."""
    if isinstance(a.type("subscripts"), ArrayT):
        spec, ops = _sublists(a)
    else:
        spec = a.const("subscripts")
        ops = [_as_array(a, t) for t in a.types("operands")]
    if not isinstance(spec, str):
        a.ctx.fail("np.einsum in compiled code takes its subscripts as a string")
    spec = spec.replace(" ", "")
    ins, arrow, out = spec.partition("->")
    terms = ins.split(",")
    if len(terms) != len(ops):
        a.ctx.fail(f"np.einsum: {len(terms)} subscripts for {len(ops)} operands")
    ell = max((x.ndim - len(t.replace("...", "")) for t, x in zip(terms, ops) if "..." in t),
              default=0)
    if not arrow:
        letters = re.sub(r"[^A-Za-z]", "", ins)
        out = ("..." if "..." in ins else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    nd = len(out.replace("...", "")) + (ell if "..." in out else 0)
    return array_of(dtype_of(*ops), nd)


def _sublists(a: Args) -> tuple:
    """np.einsum(x, [0, 1], y, [1, 2], [0, 2]) as ("ab,bc->ac", [x, y])."""
    ops = [a.ops["subscripts"]] + list(a.ops["operands"])
    n = len(ops) // 2
    terms = [_sublist(a, op) for op in ops[1:2 * n:2]]
    spec = ",".join(terms) + ("->" + _sublist(a, ops[-1]) if len(ops) % 2 else "")
    return spec, [_as_array(a, a.ctx.type_of(x)) for x in ops[0:2 * n:2]]


def _sublist(a: Args, op: Any) -> str:
    t = a.ctx.type_of(op)
    if isinstance(op, Const):
        axes = op.value
    elif isinstance(t, LiteralT):
        axes = t.value
    else:
        a.ctx.fail("np.einsum: the axes of an operand must be constants")
    return "".join("..." if x is Ellipsis else chr(ord("a") + x) for x in axes)


def gradient(a: Args) -> Type:
    """np.gradient: one array per differentiated axis (a tuple of them unless one)."""
    x = a.array("f")
    axis = a.const("axis")
    n = x.ndim if axis is None else len(axis) if isinstance(axis, (tuple, list)) else 1
    part = ArrayT(FLOAT64, x.ndim)
    return part if n == 1 and (x.ndim == 1 or axis is not None and not isinstance(
        axis, (tuple, list))) else TupleT((part,) * n)


def cross(a: Args) -> Type:
    """np.cross of 3-vectors: the broadcast rank (numpy's deprecated 2-vectors, whose
    product loses an axis, end in a TypeError naming np.cross)."""
    x, y = a.array("a"), a.array("b")
    return ArrayT(dtype_of(x, y), max(x.ndim, y.ndim))


def select(a: Args) -> Type:
    conds, choices = _sequence(a, "condlist"), _sequence(a, "choicelist")
    default = _as_array(a, a.type("default"))
    nd = max(x.ndim for x in conds + choices + [default])
    return ArrayT(dtype_of(*choices, default), nd)


def moved(a: Args) -> Type:
    x = a.array("a")
    return ArrayT(x.dtype, x.ndim)


def expand_dims(a: Args) -> Type:
    x = a.array("a")
    axis = a.const("axis")
    return ArrayT(x.dtype, x.ndim + (len(axis) if isinstance(axis, (tuple, list)) else 1))


def squeeze(a: Args) -> Type:
    """np.squeeze over `axis`; without one, only of an array whose every length is known
    to be 1 (a whole reduction with keepdims=True, and elementwise work on such): the
    rank of the result otherwise depends on the lengths."""
    x = a.array("a")
    axes = _axes(a, "axis", x.ndim)
    if axes is None:
        if not all_ones(a.ctx, a.ops["a"], depth=8):
            a.ctx.fail("np.squeeze without an axis is not compiled (its rank depends on "
                       "the shape)")
        return array_of(x.dtype, 0)
    return array_of(x.dtype, x.ndim - len(set(axes)))


_WHOLE_KEPT = ("max", "min", "sum", "mean", "prod", "amax", "amin", "var", "std")
_ELEMENTWISE_OPS = ("add", "sub", "mul", "truediv", "pow", "neg")


def all_ones(ctx: Context, op: Any, depth: int) -> bool:
    """Is every length of array `op` 1, by how it was computed in this function?"""
    t = ctx.type_of(op)
    if not isinstance(t, ArrayT):
        return True         # a number broadcasts as lengths 1
    if depth == 0 or not isinstance(op, Var):
        return False
    s = _definitions(ctx.typing).get(op)
    if s is None:
        return False
    if s.op in _ELEMENTWISE_OPS:
        return all(all_ones(ctx, x, depth - 1) for x in s.args)
    if s.op != "call" or not isinstance(s.args[0], Const):
        return False
    f = s.args[0].value
    name = getattr(f, "__name__", "")
    if name in _WHOLE_KEPT and getattr(f, "__module__", "").startswith("numpy"):
        keep, axis = s.kwargs.get("keepdims"), s.kwargs.get("axis")
        return len(s.args) == 2 and ctx.const(keep, False) is True and (
            axis is None or ctx.const(axis, "?") is None)
    if type(f).__name__ == "ufunc" and f.nin == 1:
        return len(s.args) == 2 and all_ones(ctx, s.args[1], depth - 1)
    return False


def _definitions(typing: Any) -> dict:
    got = getattr(typing, "definitions", None)
    if got is None:
        got = typing.definitions = {d.var: d for b in typing.ir.blocks for d in b.stmts}
    return got


def shaped(dtype: Optional[Type] = FLOAT64, shape: str = "shape",
           value: str = "fill_value") -> Callable:
    """np.full-like builders and np.broadcast_to: the rank is the length of the shape
    (an int: 1-D); the dtype is `dtype`, else that of argument `value`."""
    def result(a: Args) -> Type:
        t = a.type(shape)
        nd = len(t.elems) if isinstance(t, TupleT) else 1
        if isinstance(t, LiteralT) or isinstance(a.ops[shape], Const):
            v = a.const(shape)
            nd = len(v) if isinstance(v, (tuple, list)) else 1
        return array_of(dtype or dtype_of(a.type(value)), nd)
    return result


def dtype_arg(a: Args, default: Type, narrow: bool = False) -> Type:
    """The array dtype a `dtype=` argument names (float64 or int64; with `narrow`, for
    a function numpy itself runs, also bool, float32 and int32)."""
    dt = a.const("dtype")
    if dt is None:
        return default
    kind = np.dtype(dt)
    if kind == np.float64:
        return FLOAT64
    if kind == np.int64:
        return INT64
    if narrow and kind in (np.bool_, np.float32, np.int32):
        return {np.dtype(np.bool_): BOOL, np.dtype(np.float32): FLOAT32,
                np.dtype(np.int32): INT32}[kind]
    allowed = "bool, float32, int32, float64 or int64" if narrow else "float64 or int64"
    a.ctx.fail(f"{a.name} with dtype={dt!r} is not compiled ({allowed})")


def reshaped(a: Args) -> Type:
    """np.reshape(a, shape) / a.reshape(n, m): the rank is the number of dimensions."""
    x, t = a.array("a"), a.type("shape")
    if a.type("m") != NONE:
        nd = 2
    elif isinstance(t, TupleT):
        nd = len(t.elems)
    elif isinstance(a.ops["shape"], Const) or isinstance(t, LiteralT):
        v = a.const("shape")
        nd = len(v) if isinstance(v, (tuple, list)) else 1
    else:
        nd = 1
    return array_of(x.dtype, nd)


def reshape(a, shape, m=None):
    """np.reshape, and the method form a.reshape(n, m) the registry passes as (a, n, m)."""
    return np.reshape(a, shape if m is None else (shape, m))


def array_from(a: Args) -> Type:
    """np.array / np.asarray of an array, a number, or a list or tuple of numbers or of
    arrays of one rank (nested too)."""
    if a.type("dtype") != NONE and a.const("dtype") is not None:
        base = dtype_arg(a, FLOAT64)
    else:
        base = None
    op, t = a.ops["object"], a.type("object")
    least = a.const("ndmin") if "ndmin" in a.ops else 0
    if isinstance(op, Const) or isinstance(t, LiteralT):
        v = np.asarray(a.const("object"))
        kind = _KINDS.get(v.dtype)
        if kind is None:
            a.ctx.fail(f"{a.name} of {a.const('object')!r} is not compiled")
        return array_of(base or kind, max(v.ndim, least))
    nd, kind = _nested(a, t)
    return array_of(base or kind, max(nd, least))


def _nested(a: Args, t: Type) -> tuple:
    if isinstance(t, ArrayT):
        return t.ndim, t.dtype
    if t in (FLOAT64, INT64, BOOL):
        return 0, t
    if isinstance(t, LiteralT):
        v = np.asarray(t.value)
        return v.ndim, _KINDS.get(v.dtype, FLOAT64)
    if isinstance(t, BuiltListT):
        nd, kind = _nested(a, t.elem)
        return nd + 1, kind
    if isinstance(t, TupleT) and t.elems and not isinstance(t, DictT):
        parts = [_nested(a, e) for e in t.elems]
        if len({nd for nd, _ in parts}) == 1:
            return parts[0][0] + 1, dtype_of(*[ArrayT(k, 1) for _, k in parts])
    a.ctx.fail(f"{a.name} of a {t} is not compiled (numbers, or arrays of one rank)")


def _linspace(a: Args) -> Type:
    if a.const("retstep") or a.const("axis") != 0:
        a.ctx.fail("np.linspace with retstep or axis is not compiled")
    ts = [a.type("start"), a.type("stop")]
    if any(isinstance(t, ArrayT) for t in ts):
        a.ctx.fail("np.linspace between arrays is not compiled")
    return ArrayT(dtype_arg(a, FLOAT64), 1)


def _full(a: Args) -> Type:
    t = shaped(None)(a)
    dt = dtype_arg(a, t.dtype if isinstance(t, ArrayT) else t)
    return array_of(dt, t.ndim if isinstance(t, ArrayT) else 0)


def like(a: Args) -> Type:
    x = a.array("a")
    return array_of(dtype_arg(a, x.dtype), x.ndim)


# -- declaring -----------------------------------------------------------------------------

def host_rule(name: str, params: str, result: Callable, fn: Any = None) -> Callable:
    """The type rule of a host-called entry: bind, check the operands pass, the result."""
    def rule(ctx: Context, s, ts: list) -> Type:
        a = Args(ctx, s, name, params, fn)
        out = result(a)
        for op in list(s.args[1:]) + list(s.kwargs.values()):
            t = ctx.type_of(op)
            if not (isinstance(op, Const) or isinstance(t, (LiteralT, FunctionT))
                    or passable(t)):
                ctx.fail(f"{name}: an argument of type {t} cannot be passed to numpy from "
                         "compiled code")
        if isinstance(out, ArrayT) and out.ndim > MAX_NDIM:
            ctx.fail(f"{name} would return a {out} (the JIT has arrays of 1 to {MAX_NDIM} "
                     "dimensions)")
        return out
    return rule


def add_host(fn: Any, params: str, result: Callable, via: Any = None) -> None:
    """Give the entry of `fn` (declared with native impls in its family's module) a
    catch-all impl calling numpy itself (or `via`, taking the same operands), for the
    argument types its impls refuse."""
    e = REGISTRY.get(fn)
    REGISTRY.add(e, OTHER, None, host_rule(e.name, params, result, fn),
                 lower_calling(via) if via is not None else lower_library_call, numpy_too=True)


def _solve(a: Args) -> Type:
    """np.linalg.solve: b's shape (a 1-D b is one right-hand side)."""
    return ArrayT(FLOAT64, a.array("b").ndim)


def matmul_rank(a: Args, x: ArrayT, y: ArrayT) -> int:
    """The rank of x @ y: batched over the leading axes; a 1-D side loses its axis."""
    if x.ndim == 0 or y.ndim == 0:
        a.ctx.fail("matmul of a number is not defined")
    return max(x.ndim, y.ndim) - (x.ndim == 1) - (y.ndim == 1) + (x.ndim == y.ndim == 1)


def matmul(a: Args) -> Type:
    x, y = a.array("a"), a.array("b")
    nd = matmul_rank(a, x, y)
    return array_of(dtype_of(x, y), 0 if x.ndim == y.ndim == 1 else nd)


def dot(a: Args) -> Type:
    """np.dot / np.matmul: the contracted ranks (a number scales the other operand)."""
    x, y = a.array("a"), a.array("b")
    nd = x.ndim + y.ndim - 2 if x.ndim and y.ndim else max(x.ndim, y.ndim)
    return array_of(dtype_of(x, y), nd)


def declare(fn: Any, params: str, result: Callable, family: str,
            methods: tuple = (), name: str = "", via: Any = None) -> None:
    """Declare numpy function `fn` (None where this numpy lacks it: then only listed,
    under `name`) as called through the host callback (calling `via`, taking the
    same arguments, where given)."""
    name = name or f"np.{fn.__name__}"
    REGISTRY.declare(fn, family=family, pattern=HOST, types=host_rule(name, params, result, fn),
                     lower=lower_library_call if via is None else lower_calling(via),
                     methods=methods, gpu={}, name=name, numpy_too=True)


UFUNC2 = "x1, x2, /, out=None, *, where=True, casting='same_kind', order='K', dtype=None"
REDUCE = "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False"
UFUNC1 = "x, /, out=None, *, where=True, casting='same_kind', order='K', dtype=None"
_SPLIT = "ary, indices_or_sections, axis=0"


def _declare() -> None:
    red, ufn, shp, lin, sel = ("reductions", "ufuncs", "shapes and joining",
                               "linear algebra", "selection")
    declare(np.var, REDUCE + ", *, where=True, mean=None, correction=None", reduction(),
            red, methods=("var(axis=None, dtype=None, out=None, ddof=0, keepdims=False)",))
    declare(np.std, REDUCE + ", *, where=True, mean=None, correction=None", reduction(),
            red, methods=("std(axis=None, dtype=None, out=None, ddof=0, keepdims=False)",))
    for f in (np.any, np.all):
        declare(f, "a, axis=None, out=None, keepdims=False, *, where=True", reduction(BOOL),
                red, methods=(f"{f.__name__}(axis=None, out=None, keepdims=False)",))
    declare(np.cumprod, "a, axis=None, dtype=None, out=None", cumulative, red,
            methods=("cumprod(axis=None, dtype=None, out=None)",))
    declare(np.cumsum, "a, axis=None, dtype=None, out=None", cumulative, red,
            methods=("cumsum(axis=None, dtype=None, out=None)",))
    for f in (np.remainder, np.fmod, np.fmax, np.fmin):
        declare(f, UFUNC2, elementwise(None, "x1", "x2"), ufn)
    for f in (np.logaddexp, np.logaddexp2):
        declare(f, UFUNC2, elementwise(FLOAT64, "x1", "x2"), ufn)
    for f in (np.conjugate, ):
        declare(f, UFUNC1, elementwise(None, "x"), ufn)
    declare(np.real, "val", same(arg="val"), ufn)
    declare(np.imag, "val", same(arg="val"), ufn)
    declare(np.angle, "z, deg=False", same(FLOAT64, "z"), ufn)
    declare(np.real_if_close, "a, tol=100", same(), ufn)
    declare(np.where, "condition, x, y, /", elementwise(None, "condition", "x", "y"), sel)
    declare(np.sort, "a, axis=-1, kind=None, order=None, *, stable=None", flat_unless_axis, sel)
    declare(np.partition, "a, kth, axis=-1, kind='introselect', order=None", flat_unless_axis,
            sel)
    declare(np.diff, "a, n=1, axis=-1, prepend=None, append=None", same(), shp)
    declare(np.atleast_1d, "*arys", at_least(1), shp)
    declare(np.atleast_2d, "*arys", at_least(2), shp)
    declare(np.concatenate, "arrays, /, axis=0, out=None, *, dtype=None, casting='same_kind'",
            joined(flat_if_none=True), shp)
    declare(np.stack, "arrays, axis=0, out=None, *, dtype=None, casting='same_kind'",
            joined(1), shp)
    declare(np.hstack, "arrays, *, dtype=None, casting='same_kind'", joined(least=1), shp)
    declare(np.vstack, "arrays, *, dtype=None, casting='same_kind'", joined(least=2), shp)
    row_stack = getattr(np, "row_stack", None)     # removed or an alias in some numpy
    declare(row_stack if row_stack is not np.vstack else None,
            "arrays, *, dtype=None, casting='same_kind'", joined(least=2), shp,
            name="np.row_stack")
    declare(np.column_stack, "arrays", column_stack, shp)
    for f in (np.split, np.array_split):
        declare(f, _SPLIT, split_parts, shp)
    declare(np.hsplit, "ary, indices_or_sections", split_parts, shp)
    declare(np.vsplit, "ary, indices_or_sections", split_parts, shp)
    declare(np.tile, "A, reps", tile, shp)
    declare(np.repeat, "a, repeats, axis=None", flat_unless_axis, shp,
            methods=("repeat(repeats, axis=None)",))
    declare(np.roll, "a, shift, axis=None", same(), shp)
    declare(np.pad, "array, pad_width, mode='constant', **kwargs", same(arg="array"), shp)
    declare(np.flip, "m, axis=None", same(arg="m"), shp)
    declare(np.fliplr, "m", same(arg="m"), shp)
    declare(np.flipud, "m", same(arg="m"), shp)
    declare(np.rot90, "m, k=1, axes=(0, 1)", same(arg="m"), shp)
    declare(np.swapaxes, "a, axis1, axis2", moved, shp, methods=("swapaxes(axis1, axis2)",))
    declare(np.moveaxis, "a, source, destination", moved, shp)
    declare(np.transpose, "a, axes=None", moved, shp)
    declare(np.expand_dims, "a, axis", expand_dims, shp)
    declare(np.squeeze, "a, axis=None", squeeze, shp, methods=("squeeze(axis=None)",))
    declare(np.gradient, "f, *varargs, axis=None, edge_order=1", gradient, shp)
    declare(np.rollaxis, "a, axis, start=0", moved, shp)
    declare(np.dsplit, "ary, indices_or_sections", split_parts, shp)
    declare(np.atleast_3d, "*arys", at_least(3), shp)
    declare(np.cross, "a, b, axisa=-1, axisb=-1, axisc=-1, axis=None", cross, lin)
    declare(scatter_added, "a, indices, values", same(arg="a"), sel,
            name="np.add.at (as a[...] = scatter_added(a, i, v))")
    pair = lambda a: TupleT((ArrayT(INT64, 1),) * 2)   # noqa: E731 (rows, columns)
    for f in (np.triu_indices, np.tril_indices):
        declare(f, "n, k=0, m=None", pair, sel)
    for f in (np.triu_indices_from, np.tril_indices_from):
        declare(f, "arr, k=0", pair, sel)
    for f in (np.convolve, np.correlate):
        declare(f, "a, v, mode='full'" if f is np.convolve else "a, v, mode='valid'",
                elementwise(None, "a", "v"), lin)
    declare(np.polyval, "p, x", lambda a: array_of(    # x's shape; p's and x's dtype
        dtype_of(a.type("p"), a.type("x")), getattr(a.type("x"), "ndim", 0)), lin)
    declare(np.select, "condlist, choicelist, default=0", select, sel)
    bld = "array builders"
    declare(np.array, "object, dtype=None, *, copy=True, order='K', subok=False, ndmin=0, "
            "like=None", array_from, bld)
    declare(np.asarray, "object, dtype=None, order=None, *, device=None, copy=None, "
            "like=None", array_from, bld)
    declare(np.linspace, "start, stop, num=50, endpoint=True, retstep=False, dtype=None, "
            "axis=0, *, device=None", _linspace, bld)
    declare(np.full, "shape, fill_value, dtype=None, order='C', *, device=None, like=None",
            _full, bld)
    declare(np.eye, "N, M=None, k=0, dtype=float, order='C', *, device=None, like=None",
            lambda a: ArrayT(dtype_arg(a, FLOAT64, narrow=True), 2), bld)
    declare(np.identity, "n, dtype=None, *, like=None",
            lambda a: ArrayT(dtype_arg(a, FLOAT64, narrow=True), 2), bld)
    for f in (np.zeros_like, np.ones_like, np.empty_like):
        declare(f, "a, dtype=None, order='K', subok=True, shape=None, *, device=None", like,
                bld)
    declare(np.full_like, "a, fill_value, dtype=None, order='K', subok=True, shape=None, *, "
            "device=None", like, bld)
    la = np.linalg
    declare(la.det, "a", lambda a: array_of(FLOAT64, a.array("a").ndim - 2), lin,
            name="np.linalg.det")
    declare(la.slogdet, "a", lambda a: TupleT((array_of(FLOAT64, a.array("a").ndim - 2),) * 2),
            lin, name="np.linalg.slogdet")
    declare(la.inv, "a", same(FLOAT64), lin, name="np.linalg.inv")
    declare(la.eigh, "a, UPLO='L'", lambda a: TupleT((array_of(FLOAT64, a.array("a").ndim - 1),
                                                       array_of(FLOAT64, a.array("a").ndim))),
            lin, name="np.linalg.eigh")
    declare(la.eigvalsh, "a, UPLO='L'", lambda a: array_of(FLOAT64, a.array("a").ndim - 1),
            lin, name="np.linalg.eigvalsh")
    declare(la.cholesky, "a, /, *, upper=False", same(FLOAT64), lin, name="np.linalg.cholesky")
    declare(la.solve, "a, b", _solve, lin, name="np.linalg.solve")
    declare(la.norm, "x, ord=None, axis=None, keepdims=False", reduction(FLOAT64, "x"), lin,
            name="np.linalg.norm")
    declare(np.diag, "v, k=0", diag, lin)
    declare(np.diagflat, "v, k=0", lambda a: ArrayT(a.array("v").dtype, 2), lin)
    declare(np.tril, "m, k=0", same(arg="m"), lin)
    declare(np.triu, "m, k=0", same(arg="m"), lin)
    declare(np.take, "a, indices, axis=None, out=None, mode='raise'", taken, sel,
            methods=("take(indices, axis=None, out=None, mode='raise')",))
    declare(np.broadcast_to, "array, shape, subok=False", broadcast_shape, shp)
    declare(np.diagonal, "a, offset=0, axis1=0, axis2=1", diagonal, lin,
            methods=("diagonal(offset=0, axis1=0, axis2=1)",))
    declare(np.clip, "a, a_min=None, a_max=None, out=None, *, min=None, max=None", clipped,
            ufn, methods=("clip(min=None, max=None, out=None) -> min, max, out=out",))
    declare(np.trace, "a, offset=0, axis1=0, axis2=1, dtype=None, out=None", trace, lin,
            methods=("trace(offset=0, axis1=0, axis2=1, dtype=None, out=None)",))
    declare(np.kron, "a, b", kron, lin)
    declare(np.inner, "a, b, /", dot, lin)
    declare(np.tensordot, "a, b, axes=2", tensordot, lin)
    declare(np.einsum, "subscripts, *operands, out=None, dtype=None, order='K', "
            "casting='safe', optimize=False", einsum, lin, via=contraction.einsum)


OPERATORS = {op: fn for table in (BINARY, UNARY, COMPARE) for op, (fn, _) in table.items()}


def _t_operator(ctx: Context, s, ts: list) -> Type:
    """An operator on arrays computed by numpy: broadcasting, numpy's dtypes."""
    fn = OPERATORS[s.op]
    a = Args.without_operands(ctx, f"the operator {s.op}", fn)
    if s.op == "matmul":
        return array_of(probe_dtype(a, fn, ts), matmul_rank(a, *(_as_array(a, t) for t in ts)))
    nd = max(t.ndim if isinstance(t, ArrayT) else 0 for t in ts)
    return array_of(probe_dtype(a, fn, ts), nd)


def host_operator(op: str, family: str) -> None:
    """Arrays of any rank under primitive `op`, by numpy: the impl for arrays of 3 or
    more dimensions, and the fallback of the native impls (int64 arrays)."""
    REGISTRY.overload(op, "arrays of 3 or more dimensions", _numpy_operands, _t_operator,
                      lower_operator(OPERATORS[op]), family=family, numpy_too=True)


def _numpy_operands(ctx: Context, s, ts: list) -> bool:
    """An operand is an array the native loops do not take (two tuples holding such
    arrays are concatenated by `+` as tuples are, not by numpy)."""
    return _has_array(ctx, s, ts) and numpy_only(ts)


def _has_array(ctx: Context, s, ts: list) -> bool:
    return any(isinstance(t, ArrayT) for t in ts)


def _declare_python() -> None:
    # operators on arrays that have no native loop: numpy's, for every array
    for op in ("mod", "floordiv", "lt", "le", "gt", "ge", "eq", "ne", "bitand", "bitor",
               "bitxor", "invert"):
        REGISTRY.overload(op, "arrays", _has_array, _t_operator, lower_operator(OPERATORS[op]),
                          family="ufuncs", numpy_too=True)


_declare()
_declare_python()
