"""Random draws from a `np.random.Generator` or `RandomState` passed to compiled code
(an argument, or a module-level generator): `rng.normal(size=(3, 2))` is a call back
into Python (`jit.runtime.host_calls`), so the stream of numbers is the generator's
own, exactly as in CPython, and the rest of the function stays native.

`rng.<method>` is a closure over the generator (`ObjectT`) whose function, built here
from the method's signature, calls the draw's registry entry.  A draw's result type
follows from its `size` (None: one number; an int: 1-D; a tuple: its length) and the
ranks of its array parameters; `integers`/`randint` draw int64.  A draw has no
derivative: a draw whose parameters depend on what is differentiated is refused by the
transform (write the reparametrisation, `mu + sigma * rng.standard_normal(...)`).

`np.random.default_rng(seed)` called inside differentiated code is a host call too:
numpy makes the generator, so its draws are CPython's, and they are constants for the
derivative.  The generator is kept alive under a handle of `jit.runtime.host_pullbacks`
that the pullback runner claims and releases with its tape.  Where no runner owns the
call (a plain `jit.jit` call, a compiled tangent), nothing would release it: the call
leaves compiled code (`NativeDeopt`, naming it), and the interpreter runs it.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from llvmlite import ir as L

from jit.codegen.function import lltype
from jit.codegen.host_calls import lower_calling
from jit.library.numpy_calls import Args, array_of
from jit.library.python_impls import NAMESPACE, make
from jit.runtime import host_pullbacks
from jit.runtime.native import NativeDeopt
from jit.library.registry import REGISTRY
from jit.typing.infer import Context, LiteralT
from jit.types import BOOL, FLOAT64, INT64, NONE, ArrayT, ClosureT, ObjectT, TupleT, Type

FAMILY = "random draws"
# method -> (parameters, the array-valued parameters, the dtype drawn, classes)
_BOTH = (np.random.Generator, np.random.RandomState)
METHODS = {
    "normal": ("loc=0.0, scale=1.0, size=None", ("loc", "scale"), FLOAT64, _BOTH),
    "uniform": ("low=0.0, high=1.0, size=None", ("low", "high"), FLOAT64, _BOTH),
    "exponential": ("scale=1.0, size=None", ("scale",), FLOAT64, _BOTH),
    "standard_normal": ("size=None", (), FLOAT64, _BOTH),
    "random": ("size=None", (), FLOAT64, _BOTH),
    "integers": ("low, high=None, size=None", ("low", "high"), INT64,
                 (np.random.Generator,)),
    "randint": ("low, high=None, size=None", ("low", "high"), INT64,
                (np.random.RandomState,)),
    "random_sample": ("size=None", (), FLOAT64, (np.random.RandomState,)),
    "randn": ("*dims", (), FLOAT64, (np.random.RandomState,)),
    "rand": ("*dims", (), FLOAT64, (np.random.RandomState,)),
}


def _size_rank(a: Args) -> int:
    t = a.type("size")
    if t == NONE:
        return 0
    if t in (INT64, BOOL):
        return 1
    if isinstance(t, TupleT):
        return len(t.elems)
    if isinstance(t, LiteralT):
        v = t.value
        return len(v) if isinstance(v, (tuple, list)) else 1
    a.ctx.fail(f"{a.name}: a size of type {t} is not compiled")


def _draw_rule(name: str) -> Callable:
    params, arrays, dtype, _ = METHODS[name]

    def rule(ctx: Context, s, ts: list) -> Type:
        a = Args(ctx, s, f"rng.{name}", "rng, " + params.replace("*dims", "dims"))
        if name in ("randn", "rand"):
            t = a.type("dims")
            return array_of(dtype, len(t.elems) if isinstance(t, TupleT) else 0)
        nd = _size_rank(a)
        for k in arrays:
            t = a.type(k)
            if isinstance(t, ArrayT):
                nd = max(nd, t.ndim)
        return array_of(dtype, nd)
    return rule


def _caller(name: str) -> Callable:
    if name in ("randn", "rand"):
        return lambda rng, dims: getattr(rng, name)(*dims)
    return lambda rng, *args: getattr(rng, name)(*args)


_BOUND: dict = {}


def bound_method(name: str) -> Any:
    """The function of `rng.<name>`: a closure over the generator `rng` calling the
    draw's entry (`_draw_<name>(rng, ...)`)."""
    if name not in _BOUND:
        params = METHODS[name][0]
        names = [p.split("=")[0].strip() for p in params.split(",")]
        passed = ", ".join(n.lstrip("*") for n in names)
        src = (f"def _bind_{name}(rng):\n    def {name}({params}):\n"
               f"        return _draw_{name}(rng, {passed})\n    return {name}\n")
        _BOUND[name] = make(src, f"_bind_{name}")(None)
    return _BOUND[name]


def _is_draw(ctx: Context, s, ts: list) -> bool:
    """Pattern: `rng.<method>` of a generator, a method listed in METHODS."""
    name = ctx.const(s.args[1]) if len(s.args) == 2 else None
    return isinstance(ts[0], ObjectT) and name in METHODS and \
        issubclass(ts[0].cls, METHODS[name][3])


def _t_method(ctx: Context, s, ts: list) -> Type:
    return ClosureT(bound_method(ctx.const(s.args[1])), (ts[0],))


def _cg_method(fc, s, ts) -> L.Value:
    return fc.b.insert_value(L.Constant(lltype(s.type), L.Undefined), fc.get(s.args[0]), 0)


UNOWNED = ("np.random.default_rng() made inside a function compiled outside "
           "differentiation is not compiled (pass the generator as an argument)")


def made_generator(*args: Any, **kwargs: Any) -> np.random.Generator:
    """`np.random.default_rng(...)` from compiled code: numpy's generator, kept alive
    under a handle the runner of the differentiated call releases."""
    if not host_pullbacks.owned():
        raise NativeDeopt(UNOWNED)
    g = np.random.default_rng(*args, **kwargs)
    host_pullbacks.store(g)
    return g


def _t_default_rng(ctx: Context, s, ts: list) -> Type:
    """A new generator (`ObjectT`); its handle is owned by the pullback runner, so the
    code takes the general path (`Typing.host_pullbacks`)."""
    if len(ts) > 1 or set(dict(s.kwargs)) - {"seed"} or \
            any(isinstance(t, ArrayT) or t == FLOAT64 for t in ts):
        ctx.fail("np.random.default_rng takes one seed: an int, a tuple of ints or None")
    ctx.typing.host_pullbacks = True
    return ObjectT(np.random.Generator)


def _declare() -> None:
    REGISTRY.declare(np.random.default_rng, family=FAMILY, pattern="a seed",
                     types=_t_default_rng, lower=lower_calling(made_generator),
                     name="np.random.default_rng")
    for name in METHODS:
        def draw(*args: Any) -> Any:
            raise TypeError("jit.library.random_draws: draws run only in compiled code")
        draw.__name__ = draw.__qualname__ = f"_draw_{name}"
        NAMESPACE[f"_draw_{name}"] = draw
        REGISTRY.declare(draw, family=FAMILY, pattern="generator, parameters",
                         types=_draw_rule(name), lower=lower_calling(_caller(name)),
                         numpy_too=True, name=f"rng.{name}")
    REGISTRY.overload("getattr", "a random generator's draw method", _is_draw, _t_method,
                      _cg_method, family=FAMILY)


_declare()
