"""Function transforms in JAX's spelling, over the Zygote-style calls of `adjoint.api`.

    dloss = adjoint.grad(loss)                        # dloss(w, X, y) -> d loss / d w
    vg = adjoint.value_and_grad(loss, argnums=(0, 1), has_aux=True)
    (value, aux), (dw, dX) = vg(w, X, y)
    adjoint.vmap(adjoint.grad(loss), in_axes=(0, None, None))(W, X, y)   # per row of W
    adjoint.grad(adjoint.checkpoint(simulate, 64))    # each outer loop's tape ~64 MiB

zygopy's options are keywords of the transform (`grad(f, backend="interp",
checkpoint=MB)`); every keyword given to the function a transform returns goes to `f`
(`adjoint.options`).  The transforms nest to any order (`grad(grad(grad(f)))`:
reverse over reverse, compiled as nested `gradient` calls are; a stand-in takes f's
own parameters where f has no `*args` or defaults), and differentiated or compiled code
that calls a transformed function runs its stand-in, a plain function calling
`gradient` / `value_and_grad`, which the lowering and the JIT know
(`Transform.target`).
"""
from __future__ import annotations

import functools
import types
from typing import Any, Callable

import numpy as np

from lowering.api import register_ir, stub_function
from ssair import IR, Return

from . import api
from .api import gradient, value_and_grad
from .batching import normalize_axes, row, rows_of
from .generated import generated_function
from .options import Checkpointed, Transform, transform_of, unwrap
from .special_callees import SPECIAL_CALLEES
from .transform import NondiffPB

_TRANSFORM_KEYWORDS = ("argnums", "has_aux", "backend", "checkpoint")


class Transformed(Transform):
    """The spec of a function that `grad` or `value_and_grad` returns (its
    `__zygopy_transform__`): calling that function with `f`'s arguments gives the
    gradient (`with_value`: `(value, gradient)`) for `argnums`.  It is a plain Python
    function, not this object, since CPython calls an object's `__call__` several
    hundred nanoseconds slower than a function (`entry`)."""

    def __init__(self, f: Callable, argnums: Any, has_aux: bool, with_value: bool,
                 backend: str, checkpoint: Any):
        name = "value_and_grad" if with_value else "grad"
        if not callable(f):
            raise TypeError(f"{name}: {f!r} is not callable")
        _check_argnums(name, argnums)
        if backend not in api.BACKENDS:
            raise ValueError(f"{name}: unknown backend {backend!r} (one of {api.BACKENDS})")
        if checkpoint is None and type(f) is Checkpointed:
            checkpoint = f.megabytes
        self.f, self.fn = f, unwrap(f)
        self.argnums, self.has_aux, self.with_value = argnums, bool(has_aux), with_value
        self.backend, self.checkpoint, self.name = backend, checkpoint, name
        self.plain = backend == "auto" and checkpoint is None and not has_aux
        self._stand_in(_stand_in(self))

    def call(self, args: tuple, kwargs: dict) -> Any:
        """The transformed function's result for `f(*args, **kwargs)`."""
        _check_range(self.name, self.argnums, len(args))
        if self.has_aux:
            return self._with_aux(args, kwargs)
        return self.finish(api.gradient_call(self.fn, args, kwargs, self.backend,
                                             self.checkpoint, None, self.with_value))

    def finish(self, out: Any) -> Any:
        """The gradients of `argnums` taken from a gradient call's result."""
        if self.with_value:
            return out[0], pick(out[1], self.argnums)
        return pick(out, self.argnums)

    def _with_aux(self, args: tuple, kwargs: dict) -> Any:
        y, back = api.run_pullback(self.fn, args, kwargs, self.backend, self.checkpoint)
        if not isinstance(y, (tuple, list)) or len(y) != 2:
            raise TypeError(f"{self.name}(has_aux=True): {_name(self.f)} must return a "
                            f"pair (value, aux), got {type(y).__name__}")
        value, aux = y
        if not api._is_scalar(value):
            raise TypeError(f"{self.name}(has_aux=True): the value {_name(self.f)} "
                            f"returns must be a real scalar, got {type(value).__name__}")
        g = pick(back(type(y)((1.0, None))), self.argnums)
        return ((value, aux), g) if self.with_value else (g, aux)

    def __repr__(self) -> str:
        return f"<{self.name}({_name(self.f)}, argnums={self.argnums})>"


def entry(t: Transformed) -> Callable:
    """The function `grad` / `value_and_grad` returns for spec `t`: the one-call
    compiled gradient's hot path where it applies, else `t.call`."""
    fn, k = t.fn, t.argnums
    if not (t.plain and type(k) is int):
        def transformed(*args, **kwargs):
            return t.call(args, kwargs)
    elif t.with_value:
        def transformed(*args, **kwargs):
            if kwargs or not -len(args) <= k < len(args):
                return t.call(args, kwargs)
            y, g = value_and_grad(fn, *args)
            return y, g[k]
    else:
        def transformed(*args, **kwargs):
            if kwargs or not -len(args) <= k < len(args):
                return t.call(args, kwargs)
            return gradient(fn, *args)[k]
    functools.update_wrapper(transformed, t.f, updated=())
    transformed.__qualname__ = f"{t.name}({_name(t.f)})"
    transformed.__zygopy_transform__ = t
    if type(t.target) is types.FunctionType:
        transformed.__zygopy_function__ = t.target
    return transformed


def grad(f: Callable, argnums: Any = 0, has_aux: bool = False, *, backend: str = "auto",
         checkpoint: Any = None) -> Callable:
    """JAX's `grad`: a function that gives the gradient of scalar `f` with respect to
    argument `argnums` (a tuple of them gives a tuple).  `has_aux`: `f` returns
    `(value, aux)` and the function gives `(gradient, aux)`.  Options: `backend=` and
    `checkpoint=MB` as for `adjoint.pullback`; the function's own keywords go to `f`."""
    return entry(Transformed(f, argnums, has_aux, False, backend, checkpoint))


def value_and_grad_transform(f: Callable, argnums: Any = 0, has_aux: bool = False, *,
                             backend: str = "auto", checkpoint: Any = None,
                             **unknown: Any) -> Callable:
    """JAX's `value_and_grad(f, ...)`, which `adjoint.value_and_grad` returns when it
    is given no positional argument after `f`: a function that gives `(value,
    gradient)` (with `has_aux`, `((value, aux), gradient)`)."""
    if unknown:
        raise TypeError(f"value_and_grad({_name(f)}, {next(iter(unknown))}=...): with no "
                        f"positional argument after the function, value_and_grad is "
                        f"JAX's transform, which takes {', '.join(_TRANSFORM_KEYWORDS)}; "
                        f"pass {_name(f)}'s arguments to the function it returns")
    return entry(Transformed(f, argnums, has_aux, True, backend, checkpoint))


def checkpoint(f: Any, megabytes: Any = None) -> Any:
    """`checkpoint(f, MB)`, or `checkpoint(MB)(f)` as a decorator: `f`, whose pullback
    (through `grad`, `gradient`, `pullback`, ...) bounds the tape of each of its outer
    loops to about MB MiB (snapshots and recompute, the same gradient bit for bit;
    `checkpoint=MB`).  It applies when `f` itself is the function differentiated."""
    if not callable(f):
        if megabytes is not None:
            raise TypeError("checkpoint: call it as checkpoint(f, megabytes) or "
                            "checkpoint(megabytes)(f)")
        return lambda g: Checkpointed(g, f)
    if megabytes is None:
        raise TypeError(f"checkpoint({_name(f)}): give the tape budget in MiB, "
                        f"checkpoint({_name(f)}, megabytes)")
    return Checkpointed(f, megabytes)


def pick(grads: tuple, argnums: Any) -> Any:
    """The entries `argnums` (an int, or a tuple of them) of a gradient tuple."""
    if isinstance(argnums, int):
        return grads[argnums]
    return tuple(grads[k] for k in argnums)


def _check_argnums(name: str, argnums: Any) -> None:
    ks = argnums if isinstance(argnums, tuple) else (argnums,)
    if not ks or any(isinstance(k, bool) or not isinstance(k, int) for k in ks):
        raise TypeError(f"{name}: argnums is an int or a non-empty tuple of ints, "
                        f"not {argnums!r}")


def _check_range(name: str, argnums: Any, nargs: int) -> None:
    for k in argnums if isinstance(argnums, tuple) else (argnums,):
        if not -nargs <= k < nargs:
            raise ValueError(f"{name}: argnums {argnums!r} names argument {k}, but the "
                             f"function was called with {nargs} positional arguments")


def _name(f: Any) -> str:
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


# -- stand-ins: what differentiated and compiled callers run for a transformed function -
def _stand_in(t: Transformed) -> Callable:
    """A plain function computing `t(*args)` with `gradient` / `value_and_grad`
    calls, which nested AD (`adjoint.nested`) and the JIT know; one that refuses
    clearly for what they do not run (an aux output, a checkpoint budget)."""
    if t.has_aux or t.checkpoint is not None:
        return _refusal(t)
    f, take = t.fn, entries(t.argnums)
    params = positional_params(f)
    if params is not None:      # f's own parameters: no `*args`, whose call a transform
        # of the stand-in would meet as a call of a packed tuple at every order
        ps = ", ".join(params)
        lines = ([f"__zy_y__, __zy_g__ = __zy_value_and_grad__(__zy_f__, {ps})",
                  "return __zy_y__, __zy_take__(__zy_g__)"] if t.with_value else
                 [f"return __zy_take__(__zy_gradient__(__zy_f__, {ps}))"])
        env = {"__zy_f__": f, "__zy_take__": take, "__zy_gradient__": gradient,
               "__zy_value_and_grad__": value_and_grad}
        base = getattr(f, "__name__", "")
        name = ("value_and_grad_" if t.with_value else "grad_") + \
            (base if base.isidentifier() else "f")
        stand_in = generated_function(name, params, lines, env, f)
        stand_in.__qualname__ = f"{t.name}({_name(t.f)})"
        return _explained(stand_in, t)
    if t.with_value:
        def value_and_grad_f(*args):
            y, g = value_and_grad(f, *args)
            return y, take(g)
        return _explained(value_and_grad_f, t)

    def grad_f(*args):
        return take(gradient(f, *args))
    return _explained(grad_f, t)


def positional_params(f: Any) -> Any:
    """The parameter names of plain Python function `f` when it takes positional
    parameters only, with no defaults (so every call names each of them); else None."""
    code = getattr(f, "__code__", None)
    if type(f) is not types.FunctionType or f.__defaults__ or code.co_flags & 0x0C \
            or code.co_kwonlyargcount or not code.co_argcount:
        return None
    return list(code.co_varnames[:code.co_argcount])


def _explained(stand_in: Callable, t: Transformed) -> Callable:
    """`stand_in`, which the JIT's refusals name as the call of `t` the user wrote."""
    stand_in.__zygopy_explain__ = lambda *operands: f"a call of {t.name}({_name(t.f)})"
    return stand_in


def entries(ks: Any) -> Callable:
    """A function of IR reading `g[k]` for an int `ks`, or `(g[k0], g[k1], ...)` for
    a tuple, each entry read at a constant index (as compiled code reads a tuple whose
    entries differ in type: an index held in a closure cell would be read per call,
    a variable index); built once per `ks`, and run only as IR, by the code that
    calls a stand-in."""
    hit = _ENTRIES.get(ks)
    if hit is not None:
        return hit
    one = isinstance(ks, int)
    name = ("argnum_" if one else "argnums_") + "_".join(
        str(k).replace("-", "m") for k in ((ks,) if one else ks))
    ir = IR(name, file=__file__, firstline=1)
    g = ir.add_arg("g")
    b = ir.add_block()
    if one:
        b.term = Return(ir.push(b, "getitem", g, ks))
    else:
        b.term = Return(ir.push(b, "tuple", *[ir.push(b, "getitem", g, k) for k in ks]))
    fn = stub_function(name, 1, globals(), __file__)
    register_ir(fn, ir)
    _ENTRIES[ks] = fn
    return fn


_ENTRIES: dict = {}    # argnums tuple -> its `entries` function


def _refusal(t: Transformed) -> Callable:
    what = "has_aux=True" if t.has_aux else "checkpoint="
    message = (f"adjoint.{t.name}({_name(t.f)}, {what}) called inside differentiated "
               f"or compiled code is not supported; call it outside, or drop {what}")

    def refused(*args):
        if message:           # (always: a function that only raises cannot be lowered)
            raise TypeError(message)
        return None
    refused.__zygopy_explain__ = lambda *operands: message   # what the JIT's refusal says
    refused.__qualname__ = refused.__name__ = f"{t.name}({_name(t.f)})"
    return refused


# -- vmap --------------------------------------------------------------------------
class Mapped:
    """What `vmap` returns: `fun` of each row, stacked along a new first axis."""

    def __init__(self, fun: Callable, in_axes: Any):
        if not callable(fun):
            raise TypeError(f"vmap: {fun!r} is not callable")
        if not (in_axes is None or isinstance(in_axes, (int, tuple, list))) \
                or isinstance(in_axes, bool):
            raise TypeError(f"vmap: in_axes is an int, None or a tuple of them, not "
                            f"{in_axes!r}")
        self.fun, self.in_axes = fun, in_axes
        functools.update_wrapper(self, fun, updated=())
        self.__qualname__ = f"vmap({_name(fun)})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"vmap({_name(self.fun)}): keyword arguments are not mapped "
                            f"(got {', '.join(kwargs)}=); pass them by position with an "
                            f"in_axes entry (None holds one constant)")
        if isinstance(self.in_axes, int) or self.in_axes is None:
            axes = normalize_axes((self.in_axes,) * len(args), len(args))
        else:
            axes = normalize_axes(tuple(self.in_axes), len(args))
        t = transform_of(self.fun)
        if isinstance(t, Transformed) and not t.has_aux and t.checkpoint is None:
            _check_range(t.name, t.argnums, len(args))
            return t.finish(api.gradient_call(t.fn, args, {}, t.backend, None, axes,
                                              t.with_value))
        fun = self.fun
        moved, n = rows_of(args, axes)
        if n == 0:
            raise ValueError(f"vmap({_name(fun)}): no rows")
        return stack([fun(*row(moved, axes, i)) for i in range(n)], _name(fun))

    def __repr__(self) -> str:
        return f"<vmap({_name(self.fun)}, in_axes={self.in_axes!r})>"


def vmap(fun: Callable, in_axes: Any = 0, out_axes: int = 0) -> Mapped:
    """JAX's `vmap`: `fun` of each row of its arguments, stacked along a new first
    axis.  `in_axes`: one axis for every argument, or a tuple with an axis or None
    (the same value for every row) per argument.  `vmap(grad(f))` and
    `vmap(value_and_grad(f))` run as `gradient(f, ..., batch=axes)`: compiled, on a
    thread pool (`adjoint.batching`, `jit.batch`); any other `fun` is called once a
    row in Python, and its results (numbers, arrays, and tuples, lists and dicts of
    them) are stacked."""
    if out_axes != 0:
        raise NotImplementedError("vmap: only out_axes=0 (results stacked along a new "
                                  "first axis) is supported")
    return Mapped(fun, in_axes)


def stack(results: list, name: str) -> Any:
    """Per-row results stacked along a new first axis, entry by entry."""
    first = results[0]
    if first is None:
        return None
    if isinstance(first, (tuple, list)):
        parts = [stack([r[k] for r in results], name) for k in range(len(first))]
        return tuple(parts) if isinstance(first, tuple) else parts
    if isinstance(first, dict):
        return {k: stack([r[k] for r in results], name) for k in first}
    arrays = [np.asarray(r) for r in results]
    if any(a.dtype.kind not in "biufc" for a in arrays):
        raise TypeError(f"vmap({name}): a row gave a {type(first).__name__}, which "
                        f"cannot be stacked; return numbers, arrays, or tuples, lists "
                        f"and dicts of them")
    return np.stack(arrays)


api.as_transform = value_and_grad_transform



# -- a transform made inside differentiated code ----------------------------------------
def made_inside(state: Any, make: Callable, tape: Any, pos: tuple, kw: dict) -> tuple:
    """jcall of `grad(g)` (`value_and_grad(g)`, `checkpoint(g, MB)`) inside a function
    being differentiated: over a function made outside (a global, a module function),
    the transform is made in Python, a value without a derivative, and calling it runs
    its stand-in (nested reverse mode).  Over a function made there (a lambda or a
    nested def, a partial) it is refused: its captured values would be held constant,
    so their share of the gradient would be lost."""
    g = pos[0] if pos else kw.get("f")
    if type(g) is not types.FunctionType and transform_of(g) is None:
        name = make.__name__.replace("_transform", "")
        raise TypeError(f"adjoint.{name}({_name(g)}) made inside a "
                        f"differentiated function is not supported: the values it "
                        f"captures would get no gradient; call adjoint.gradient({_name(g)}, "
                        f"...) or adjoint.value_and_grad({_name(g)}, ...) there instead")
    return make(*pos, **kw), NondiffPB(1 + len(pos) + len(kw))


for _make in (grad, value_and_grad_transform, checkpoint):
    SPECIAL_CALLEES[id(_make)] = (_make, made_inside)
