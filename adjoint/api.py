"""The user API: `pullback`, `gradient`, `jacobian`, `code_adjoint`, and `rule` (a
derivative rule for a user function); `hessian` is forward mode's (`adjoint.forward`).

    y, back = pullback(f, x, n)      # back(dy) -> (dx, None); callable many times
    gradient(f, x, y)                # scalar output only
    jacobian(f, x)                   # one array per argument: out.shape + arg.shape

Backends: `"interp"` runs the forward and adjoint IR with `ssair.interpret`;
`"llvm"` is whatever `jit` registers with `register_backend("llvm", runner)` (a
`runner` has `forward(jf, tape, args) -> (y, env)`, `adjoint(jf, reader, env, dy)
-> tuple` and `errors`, the exception types meaning "cannot compile this");
`"auto"` uses llvm when registered and able, else interp.

Returned cotangents: a float for a float argument (0.0 when no gradient reaches it),
an ndarray of the argument's shape for an array, a tuple for a tuple, `None` for
ints, bools and other non-differentiable values.  The caller's arrays are copied on
entry, so the function may write into them without changing the caller's.

Nested AD: `gradient(lambda x: gradient(f, x)[0], x)` gives the second derivative by
reverse over reverse: a call of `gradient` inside differentiated code runs f's
gradient program (its forward and adjoint IR), which the J transform differentiates
again, tape operations included (see `adjoint.nested`).
"""
from __future__ import annotations

import functools
import inspect
import types
from typing import Any, Callable, Optional

import numpy as np

from lowering import guards
from lowering.guards import MISSING
from ssair import Var, interpret

from .passes.inplace import arg_types
from .passes.activity import SHAPE_ATTRS
from .pytrees import (PULLBACK, as_cotangent, copy_record, finish_record, is_namedtuple, is_record,
                      record_fields, refuse_shadowed_fields)
from .rule_table import FORWARD_REFUSAL, IN_FORWARD_MODE, in_dtype_of
from .rules import Pullback as RulePullback
from .rules import callee_name, defpullback, lookup_callee
from .options import Checkpointed, take_options, unwrap
from .structure import conform, has_complex
from .tape import Tape
from .transform import (ArgSlot, JFunction, activity_of, cells, checkpointed, clear_cache,
                        is_differentiable, lower_function, transform)

class InterpBackend:
    """Runs forward and adjoint IR with the reference interpreter."""

    errors: tuple = ()

    def forward(self, jf: JFunction, tape: Tape, args: tuple) -> tuple:
        return interpret(jf.forward, tape, *args)

    def adjoint(self, jf: JFunction, reader: Any, env: Any, dy: Any) -> tuple:
        return interpret(jf.adjoint, reader, env, dy)


RUNNERS: dict = {"interp": InterpBackend()}
# backend name -> fast(f, args) -> (y, back) or None: a runner's shortcut for calls it
# has compiled (see jit.grad_fast); None means "take the general path".
FAST_PATHS: dict = {}
# backend name -> fast(f, args, with_value) -> gradient (or (y, gradient)) or None: a
# runner's one-call `gradient` / `value_and_grad` (see jit.pullback.fast_gradient).
FAST_GRADIENTS: dict = {}
# Per `with_value`: f -> (f.__code__, call, compiled, guard), the one-call gradient the runner
# compiled last for f.  `call(*args)` checks the number and classes of the arguments
# itself and takes the runner's lookup for anything else.  Not `compiled`: a shortcut to
# the general path of backend "auto" (so `backend="llvm"` does not take it: a function
# the JIT refuses must raise there).  Emptied when a backend changes.
HOT_GRADIENTS: tuple = ({}, {})
# backend name -> run(f, args, axes, mode, strict) -> stacked results or None: a
# runner's `gradient(..., batch=)` (jit.batch); None means "row by row".
BATCH_RUNNERS: dict = {}
BACKENDS = ("auto", "interp", "llvm")


def _drop_hot_gradients() -> None:
    for hot in HOT_GRADIENTS:
        hot.clear()
    _BACKEND_IS_OPTION.clear()


guards.on_invalidate(_drop_hot_gradients)


def register_backend(name: str, runner: Any) -> None:
    """Make `backend=name` run forward/adjoint IR with `runner` (see module doc)."""
    RUNNERS[name] = runner
    _drop_hot_gradients()


def _load_jit() -> None:
    """Load the compiled backends once: the `zygopy.backends` entry points of the
    installed packages (zygopy's own is `jit.register_backends`).  Lazy, so that
    `adjoint` alone does not pay for llvmlite; adjoint never imports jit."""
    global _JIT_TRIED
    if _JIT_TRIED:
        return
    _JIT_TRIED = True
    from importlib.metadata import entry_points
    why = "no `zygopy.backends` entry point is installed (pip install zygopy)"
    for ep in entry_points(group="zygopy.backends"):
        try:
            ep.load()()
        except ImportError as e:
            why = f"loading backend {ep.name!r} failed: {e}"
    if "llvm" not in RUNNERS:
        import warnings
        warnings.warn(f"zygopy: no compiled backend, pullbacks run in the interpreter: "
                      f"{why}", RuntimeWarning, stacklevel=4)


_JIT_TRIED = False


def _runners(name: str) -> list:
    """Runners to try in order for backend `name`."""
    if name not in BACKENDS:
        raise ValueError(f"pullback: unknown backend {name!r} (one of {BACKENDS})")
    if name != "interp":
        _load_jit()
    if name == "auto":
        return [RUNNERS[k] for k in ("llvm", "interp") if k in RUNNERS]
    if name not in RUNNERS:
        raise NotImplementedError(f"pullback: backend {name!r} is not available yet")
    return [RUNNERS[name]]


def _copy_in(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.copy(order="K")     # the same layout: order="A" reads it as CPython does
    if isinstance(x, tuple):
        out = tuple(_copy_in(v) for v in x)
        return type(x)._make(out) if is_namedtuple(x) else out
    if isinstance(x, list):
        return [_copy_in(v) for v in x]
    if isinstance(x, dict):
        return {k: _copy_in(v) for k, v in x.items()}
    return copy_record(x, _copy_in)


def _finish(g: Any, x: Any) -> Any:
    """The cotangent returned to the user for argument value `x`."""
    if not is_differentiable(x):
        return None
    if isinstance(x, np.ndarray):
        if g is None:
            return np.zeros(x.shape, dtype=x.dtype if x.dtype.kind in "fc" else float)
        if x.dtype.kind != "c" and np.iscomplexobj(g):   # a real input's: the real part
            g = np.real(g)
        if isinstance(g, (tuple, list)):
            g = np.array([0.0 if v is None else v for v in g], dtype=float)
        g = np.asarray(g).reshape(x.shape) if np.ndim(g) else np.full(x.shape, g)
        return in_dtype_of(g, x)     # a float32 argument's gradient is float32
    if isinstance(x, (tuple, list)):     # the argument's own structure (pytree-like)
        parts = g if g is not None else (None,) * len(x)
        out = [_finish(v, e) for v, e in zip(parts, x)]
        if isinstance(x, list):
            return out
        return type(x)._make(out) if is_namedtuple(x) else tuple(out)
    if isinstance(x, dict):
        parts = g if g is not None else {}
        if isinstance(parts, tuple):     # a compiled backend's: the values in key order
            parts = dict(zip(x, parts))
        return {k: _finish(parts.get(k), v) for k, v in x.items()}
    if isinstance(x, complex):
        return complex(0.0 if g is None else g)
    if is_record(x):      # a dataclass, or a namespace of attribute gradients
        return finish_record(g, x, _finish)
    if g is None:
        return 0.0
    if np.iscomplexobj(g):       # (a real input's cotangent is real: see rules_complex)
        g = np.real(g)
    return in_dtype_of(float(g), x) if np.ndim(g) == 0 else g


class Pullback:
    """`back(dy)`: the adjoint of one forward run; may be called any number of times."""

    def __init__(self, jf: JFunction, tape: Tape, env: Any, args: tuple, nfree: int,
                 runner: Any = None, select: Any = None, y: Any = None):
        self.jf, self.tape, self.env, self.args, self.nfree = jf, tape, env, args, nfree
        self.y = y     # the output: `dy` must have its structure (adjoint.structure)
        self.runner = runner or RUNNERS["interp"]
        # for each argument the user passed, (parameter, entry of a `*args` tuple or
        # None); None: one per parameter
        self.select = select

    def __call__(self, dy: Any) -> tuple:
        dy = check_cotangent(self.y, dy, self.jf.primal)
        if self.jf.inout:
            dy = (dy, None)
        grads = self.runner.adjoint(self.jf, self.tape.reader(), self.env, dy)
        own = grads[self.nfree:]
        out = tuple(_finish(g, x) for g, x in zip(own, self.args))
        if self.select is None:
            return out
        return tuple(out[p] if j is None else out[p][j] for p, j in self.select)

    def __repr__(self) -> str:
        return f"<pullback of {self.jf.primal.name}>"


def check_cotangent(y: Any, dy: Any, primal: Any) -> Any:
    """`dy` for output `y` of the user function whose IR is `primal`, checked against
    `y`'s structure and converted (fresh arrays) as the adjoint IR takes it."""
    if type(dy) is float and type(y) is float:    # (the common case: no message built)
        return dy
    return cotangent_for(y, dy, primal.meta.get("source_name", primal.name))


def cotangent_for(y: Any, dy: Any, name: str) -> Any:
    """`dy` checked against the value `y` of the function called `name` in messages."""
    return conform(as_cotangent(y), as_cotangent(dy), f"back(dy) of the pullback of {name}: dy")


def as_function(f: Callable, nargs: int) -> Callable:
    """`f`, or for a library callable with a derivative rule (`np.sqrt`, `math.sin`)
    a Python function of `nargs` parameters that calls it: such a callable is a valid
    `f` for `pullback` and `gradient` (as `jax.grad(jnp.sin)` is), at every order."""
    if hasattr(f, "__code__") or type(f) is functools.partial or lookup_callee(f) is None:
        return f
    try:
        hit = _LIBRARY_CALLS.get((f, nargs))
    except TypeError:
        return f
    if hit is None:
        name = getattr(f, "__name__", "f")
        params = ", ".join(f"x{k}" for k in range(nargs))
        scope = {"__name__": name, "callee": f}
        exec(compile(f"def {name}({params}):\n    return callee({params})\n",
                     f"<{callee_name(f)}>", "exec"), scope)
        hit = _LIBRARY_CALLS[(f, nargs)] = scope[name]
    return hit


_LIBRARY_CALLS: dict = {}    # (library callable, number of arguments) -> function
_FUNCTION = type(_finish)


def _prepare(f: Callable, args: tuple) -> tuple:
    from ssair.interpreter import Closure
    if isinstance(f, Closure):
        from ssair.interpreter import _closure_target
        ir, _ = _closure_target(f)
        return ir, tuple(f.values)
    if isinstance(f, types.MethodType) and isinstance(f.__func__, types.FunctionType):
        # a bound method: its function, the object held constant as a captured value
        # (after the function's own cells: the IR's free arguments, then `self`)
        return lower_function(f.__func__), cells(f.__func__) + (f.__self__,)
    ir = lower_function(f)
    return ir, cells(f)


def pullback(f: Callable, *args: Any, **kwargs: Any) -> tuple:
    """Run `f(*args, **kwargs)` recording a tape; return `(y, back)`.  `back(dy)` gives
    one cotangent per positional argument; keyword arguments, and the arguments a
    `functools.partial` binds, are held constant (as JAX's `grad` holds them).

    Every keyword `f` can accept goes to `f` (`adjoint.options`).  Two keywords `f`
    cannot accept are pullback's own options (the older spelling; the transforms of
    `adjoint.transforms` take them instead): `backend=` ("auto", "interp", "llvm"),
    and `checkpoint=MB`, which bounds the tape of each of `f`'s outer loops to about
    MB MiB: the forward keeps a snapshot of the loop's state every k iterations (k
    from the words an iteration records) and `back` recomputes each segment's records
    from its snapshot (`adjoint.passes.checkpoint`); the gradient is the same, bit
    for bit.  `adjoint.checkpoint(f, MB)` is `f` with that budget."""
    if kwargs or type(f) is Checkpointed:
        backend, checkpoint, _ = take_options(f, kwargs, ("backend", "checkpoint"))
        return run_pullback(unwrap(f), args, kwargs, backend, checkpoint)
    return run_pullback(f, args, kwargs)


def run_pullback(f: Callable, args: tuple, kwargs: dict, backend: str = "auto",
                 checkpoint: Any = None) -> tuple:
    """`pullback` with its options apart: every entry of `kwargs` goes to `f`."""
    if not _JIT_TRIED and backend != "interp":
        _load_jit()
    if type(f) is not _FUNCTION:
        f = as_function(f, len(args))
    guards.check(f, args)   # a global it read was rebound: lower and compile again
    code = getattr(f, "__code__", None)
    plain = not kwargs and type(f) is not functools.partial and not (
        code is not None and (code.co_kwonlyargcount or code.co_flags & inspect.CO_VARKEYWORDS))
    fast = FAST_PATHS.get(backend) if plain and checkpoint is None else None
    if fast is not None:    # the JIT's per-signature shortcut (jit.grad_fast)
        hit = fast(f, args)
        if hit is not None:
            return hit
    runners = _runners(backend)
    if plain:
        ir, free = _prepare(f, args)
        args = tuple(_copy_in(a) for a in args)
        packed = _varargs_position(f)
        select = None
        if packed is not None:      # `def f(a, *rest)`: the IR takes `rest` as one tuple
            select = tuple((k, None) for k in range(packed)) + \
                tuple((packed, j) for j in range(len(args) - packed))
            args = args[:packed] + (tuple(args[packed:]),)
        all_args = free + args + _defaults(f, len(ir.args) - len(free) - len(args))
    else:
        f, args, select = _bind_all(f, tuple(_copy_in(a) for a in args), _copy_in(kwargs))
        ir, free = _prepare(f, args)
        all_args = free + args
    if len(all_args) != len(ir.args):
        raise TypeError(f"pullback: {ir.name}() takes {len(ir.args) - len(free)} "
                        f"positional arguments but {len(args)} were given")
    refuse_shadowed_fields(args, SHAPE_ATTRS)
    typed = getattr(runners[0], "typed_ir", None) if typed_rewrite_wanted(ir) else None
    if typed is not None:       # a compiled runner's rewrite of calls by their types
        ir = typed(ir, all_args)
    jf = transform(ir, activity_of(all_args), arg_types(all_args))
    if checkpoint is not None:
        jf = checkpointed(jf, checkpoint)
    for k, runner in enumerate(runners):
        tape = Tape()
        try:
            y, env = runner.forward(jf, tape, all_args)
        except runner.errors as exc:
            if k == len(runners) - 1:
                raise
            if hasattr(runner, "fallback"):  # the JIT's one-time warning saying why
                runner.fallback(exc)
            continue
        _check_output(y, ir.name)
        return y, Pullback(jf, tape, env, args, len(free), runner, select, y)
    raise RuntimeError("pullback: no backend ran")


PULLBACK[:] = [pullback]     # (a property's cotangent: adjoint.pytrees)


def typed_rewrite_wanted(ir: Any) -> bool:
    """Does `ir` call a callee marked `__zygopy_typed__` on a function operand that is a
    value (one a compiled runner rewrites by its operands' types, its `typed_ir`: a
    pullback of a function value; the lowering rewrote those of a known function)?
    Asked once per IR."""
    hit = ir.meta.get("typed_rewrite")
    if hit is None:
        hit = ir.meta["typed_rewrite"] = any(
            s.op == "call" and len(s.args) > 1 and isinstance(s.args[1], Var)
            and getattr(getattr(s.args[0], "value", None), "__zygopy_typed__", False)
            for b in ir.blocks for s in b.stmts)
    return hit


def _bind_all(f: Callable, args: tuple, kwargs: dict) -> tuple:
    """(the function called, the values of all its parameters, where each positional
    argument went) for `f(*args, **kwargs)`, `f` maybe a `functools.partial`."""
    lead, kw = (), {}
    while type(f) is functools.partial:
        lead, kw = tuple(f.args) + lead, {**f.keywords, **kw}
        f = f.func
    kw.update(kwargs)
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        raise TypeError(f"pullback: cannot bind keyword arguments to {f!r}") from None
    markers = [ArgSlot(k) for k in range(len(args))]
    try:
        bound = sig.bind(*lead, *markers, **kw)
    except TypeError as e:
        raise TypeError(f"pullback: {getattr(f, '__name__', 'f')}() {e} (keyword arguments "
                        "go to pullback after the positional ones)") from None
    bound.apply_defaults()
    values, select = [], [None] * len(args)
    for i, (name, v) in enumerate(bound.arguments.items()):
        if sig.parameters[name].kind is inspect.Parameter.VAR_POSITIONAL:
            for j, m in enumerate(v):
                if isinstance(m, ArgSlot):
                    select[m.k] = (i, j)
            v = tuple(args[m.k] if isinstance(m, ArgSlot) else m for m in v)
        elif isinstance(v, ArgSlot):
            select[v.k] = (i, None)
            v = args[v.k]
        values.append(v)
    return f, tuple(values), tuple(select)


def _defaults(f: Callable, missing: int) -> tuple:
    """The default values of the last `missing` positional parameters of `f` (as a
    call fills them); the caller differentiates only the arguments it passed."""
    given = getattr(f, "__defaults__", None) or ()
    if missing <= 0 or missing > len(given):
        return ()
    return tuple(_copy_in(a) for a in given[len(given) - missing:])


def _varargs_position(f: Callable) -> Any:
    """The index of `f`'s `*args` parameter among its parameters, or None."""
    code = getattr(f, "__code__", None)
    if code is None or not code.co_flags & inspect.CO_VARARGS:
        return None
    return code.co_argcount


def _check_output(y: Any, name: str) -> None:
    """Reverse mode needs a numeric output: None (no output), a number, a numeric
    array, or a tuple, list or dict with at least one of those among its leaves."""
    if _numeric_output(y):
        return
    raise TypeError(f"pullback: {name} returned a {type(y).__name__}, which has no "
                    "derivative; differentiate a function that returns numbers or "
                    "numeric arrays (or tuples, lists and dicts holding them)")


def _numeric_output(y: Any) -> bool:
    if y is None or isinstance(y, (int, float, complex, np.number, np.bool_)):
        return True
    if isinstance(y, np.ndarray):
        return y.dtype.kind in "biufc"
    if isinstance(y, dict):
        y = tuple(y.values())
    if is_record(y):
        y = tuple(v for _, v in record_fields(y))
    if isinstance(y, (tuple, list)):   # other leaves (labels) get no cotangent
        return not y or any(v is not None and _numeric_output(v) for v in y)
    return False


def _is_scalar(y: Any) -> bool:
    return isinstance(y, (int, float, np.integer, np.floating)) and not isinstance(y, bool) \
        or (isinstance(y, np.ndarray) and y.ndim == 0)


def gradient(f: Callable, *args: Any, **kwargs: Any) -> tuple:
    """d f / d args for a real scalar output; one entry per positional argument
    (keyword arguments are passed to `f` and held constant).

    Every keyword `f` can accept goes to `f` (`adjoint.options`).  Keywords `f`
    cannot accept that name gradient's options are those options (the older
    spelling; `adjoint.grad(f, ...)` takes them on the transform): `backend=`;
    `checkpoint=MB`, as for `pullback`; `batch=k`, the gradient of each row of the
    first argument along its axis k (a tuple gives an axis or None per argument, as
    JAX's `in_axes`), stacked along a new first axis.  Compiled, the rows are split
    over a thread pool of native calls that run without the GIL (`adjoint.batching`,
    `jit.batch`)."""
    hot = _HOT_GRADIENT.get(f)
    if hot is not None and hot[0] is f.__code__ and (not kwargs or hot[2] and kwargs == _LLVM
                                                     and _BACKEND_IS_OPTION.get(f) is hot[0]):
        for d, n, v in hot[3]:    # the globals it was compiled with, still bound so
            if d.get(n, MISSING) is not v:
                break
        else:
            return hot[1](*args)
    backend, checkpoint, batch = take_options(f, kwargs, OPTIONS)
    if hot is not None and backend == "llvm" and not kwargs:
        _BACKEND_IS_OPTION[f] = hot[0]
    return gradient_call(unwrap(f), args, kwargs, backend, checkpoint, batch)


OPTIONS = ("backend", "checkpoint", "batch")
_LLVM = {"backend": "llvm"}     # (the one keyword a hot call may have)
# f -> f.__code__, for the functions of the hot tables whose `backend=` was found to be
# zygopy's option (`adjoint.options`): a hot call with `backend="llvm"` need not ask
# again.  Emptied with the hot tables.
_BACKEND_IS_OPTION: dict = {}


def gradient_call(f: Callable, args: tuple, kwargs: dict, backend: str = "auto",
                  checkpoint: Any = None, batch: Any = None, with_value: bool = False) -> Any:
    """`gradient` (or, `with_value`, `value_and_grad`) with its options apart: every
    entry of `kwargs` goes to `f`."""
    if batch is not None:
        return _batched_gradient(f, args, batch, backend, kwargs, checkpoint, with_value)
    if checkpoint is not None:
        return general_gradient(f, args, with_value, backend, kwargs, checkpoint)
    if backend == "llvm" and not kwargs:     # a one-call gradient compiled already
        hot = HOT_GRADIENTS[with_value].get(f)
        if hot is not None and hot[2] and hot[0] is f.__code__:
            for d, n, v in hot[3]:
                if d.get(n, MISSING) is not v:
                    break
            else:
                return hot[1](*args)
    return _gradient(f, args, with_value, backend, kwargs)


def _batched_gradient(f: Callable, args: tuple, batch: Any, backend: str, kwargs: dict,
                      checkpoint: Any, with_value: bool = False) -> tuple:
    from .batching import normalize_axes, per_row
    if kwargs or checkpoint is not None:
        raise TypeError("gradient: batch= does not take keyword arguments for f or "
                        "checkpoint= yet")
    axes = normalize_axes(batch, len(args))
    guards.check(f, args)
    if not _JIT_TRIED and backend != "interp":
        _load_jit()
    run = BATCH_RUNNERS.get(backend)
    if run is not None:
        got = run(f, args, axes, "value_and_grad" if with_value else "gradient",
                  backend == "llvm")
        if got is not None:
            return got
    return per_row(_ROW_CALLS[with_value], f, args, axes, backend)


def _row_gradient(f: Callable, *args: Any, backend: str = "auto") -> tuple:
    return gradient_call(f, args, {}, backend)


def _row_value_and_grad(f: Callable, *args: Any, backend: str = "auto") -> tuple:
    return gradient_call(f, args, {}, backend, with_value=True)


_ROW_CALLS = (_row_gradient, _row_value_and_grad)   # (per row: options apart from f's)

# `value_and_grad(f)`, with no arguments for f: the JAX-style transform of f, which
# `adjoint.transforms` (the module that builds transforms on this API) installs here.
as_transform: Optional[Callable] = None


def value_and_grad(f: Callable, *args: Any, **kwargs: Any) -> Any:
    """`(f(*args), gradient(f, *args))` for a real scalar output, computed together;
    keywords as for `gradient`.

    With no positional argument after `f` it is JAX's transform instead:
    `value_and_grad(f, argnums=0, has_aux=False, backend=...)` returns a function
    that gives `(value, gradient)` (`adjoint.transforms`)."""
    if not args:
        return as_transform(f, **kwargs)
    hot = _HOT_VALUE_AND_GRAD.get(f)
    if hot is not None and hot[0] is f.__code__ and (not kwargs or hot[2] and kwargs == _LLVM
                                                     and _BACKEND_IS_OPTION.get(f) is hot[0]):
        for d, n, v in hot[3]:    # the globals it was compiled with, still bound so
            if d.get(n, MISSING) is not v:
                break
        else:
            return hot[1](*args)
    backend, checkpoint, batch = take_options(f, kwargs, OPTIONS)
    if hot is not None and backend == "llvm" and not kwargs:
        _BACKEND_IS_OPTION[f] = hot[0]
    return gradient_call(unwrap(f), args, kwargs, backend, checkpoint, batch, True)


_HOT_GRADIENT, _HOT_VALUE_AND_GRAD = HOT_GRADIENTS


def _gradient(f: Callable, args: tuple, with_value: bool, backend: str, kwargs: dict) -> tuple:
    guards.check(f, args)
    if not kwargs:
        fast = FAST_GRADIENTS.get(backend)
        if fast is None and not _JIT_TRIED and backend != "interp":
            _load_jit()
            fast = FAST_GRADIENTS.get(backend)
        if fast is not None:   # forward and adjoint in one native call
            got = fast(f, args, with_value)
            if got is not None:
                return got
    return general_gradient(f, args, with_value, backend, kwargs)


def general_gradient(f: Callable, args: tuple, with_value: bool, backend: str = "auto",
                     kwargs: Optional[dict] = None, checkpoint: Any = None) -> tuple:
    """`gradient` / `value_and_grad` through `pullback` and `back(1.0)`."""
    y, back = run_pullback(f, args, dict(kwargs or {}), backend, checkpoint)
    if not _is_scalar(y):
        if IN_FORWARD_MODE.get() and np.iscomplexobj(y):    # (hvp's tangent: complex)
            raise TypeError(f"hvp: {FORWARD_REFUSAL}")
        name = "value_and_grad" if with_value else "gradient"
        raise TypeError(f"{name}: {getattr(f, '__name__', 'f')} must return a real "
                        f"scalar, got {type(y).__name__}; use jacobian or pullback")
    return (y, back(1.0)) if with_value else back(1.0)


def jacobian(f: Callable, *args: Any, **kwargs: Any) -> tuple:
    """One array per positional argument, of shape `shape(y) + shape(arg)` (None for
    ints); keyword arguments go to `f` and are held constant, with `backend=` and
    `checkpoint=` as for `pullback`."""
    backend, checkpoint, _ = take_options(f, kwargs, ("backend", "checkpoint"))
    y, back = run_pullback(unwrap(f), args, kwargs, backend, checkpoint)
    if has_complex(y) or has_complex(args):   # (its rows would be real parts only)
        raise TypeError("jacobian: complex values are not supported yet; use pullback "
                        "or gradient")
    yarr = np.asarray(y, dtype=float)
    rows = []
    for k in range(max(yarr.size, 1)):
        e = np.zeros(yarr.size)
        e[k] = 1.0
        rows.append(back(_shaped_like(y, e.reshape(yarr.shape))))
    return tuple(_stack([r[i] for r in rows], yarr.shape, a) for i, a in enumerate(args))


def _shaped_like(y: Any, e: np.ndarray) -> Any:
    """The entries of `e` (shaped as `np.asarray(y)`) in the structure of output `y`:
    `back`'s cotangent for that output."""
    if isinstance(y, (tuple, list)):
        parts = [_shaped_like(v, e[k]) for k, v in enumerate(y)]
        return tuple(parts) if isinstance(y, tuple) else parts
    return e if isinstance(y, np.ndarray) else float(e)


def _stack(parts: list, yshape: tuple, x: Any) -> Any:
    if not is_differentiable(x):
        return None
    if is_record(x):
        raise TypeError(f"jacobian: the jacobian of a {type(x).__name__} argument is not "
                        "supported; use pullback, whose back gives it per attribute")
    arr = np.array([np.asarray(p, dtype=float) for p in parts])
    if yshape or np.ndim(x):
        return in_dtype_of(arr.reshape(yshape + np.shape(x)), x)   # (float32 stays)
    return in_dtype_of(float(arr[0]), x)


class CodeAdjoint:
    """The forward and adjoint IR of `f` for arguments like `args`; `str()` prints
    both in the `ssair` syntax."""

    def __init__(self, jf: JFunction):
        self.jf = jf
        self.forward = jf.forward
        self.adjoint = jf.adjoint
        self.recompute = jf.recompute

    def __str__(self) -> str:
        return "\n\n".join(str(ir) for ir in (self.forward, self.adjoint, *self.recompute))

    __repr__ = __str__


def code_adjoint(f: Callable, *args: Any, checkpoint: Any = None) -> CodeAdjoint:
    """The forward and adjoint IR (with `checkpoint=MB`, also the recompute function
    of each checkpointed loop)."""
    ir, free = _prepare(f, args)
    jf = transform(ir, activity_of(free + args), arg_types(free + args))
    return CodeAdjoint(jf if checkpoint is None else checkpointed(jf, checkpoint))


def rule(f: Callable, uses_result: bool = False):
    """User decorator: `@adjoint.rule(f)` registers `pb(dy, *args) -> tuple` as the
    pullback of `f`.  Calls to `f` in differentiated code then run `f` itself (as a
    library function, not lowered) and use `pb` in the adjoint."""
    def deco(pb: Callable) -> Callable:
        wrapped = RulePullback(pb, uses_result)
        wrapped.check = _check_rule_result
        wrapped.of = callee_name(f)
        defpullback(f, wrapped).keeps_operands = True   # f may return an argument
        clear_cache()
        return pb
    return deco


def _check_rule_result(pb: RulePullback, out: tuple, operands: tuple) -> tuple:
    """What a user's rule returned, checked against its operands (one cotangent each,
    of its structure) as `back` checks its `dy`."""
    if len(out) != len(operands):
        raise TypeError(f"adjoint: the rule of {pb.of} returned {len(out)} "
                        f"cotangents for {len(operands)} arguments")
    return tuple(conform(x, g, f"adjoint: the rule of {pb.of}: cotangent {k}")
                 for k, (x, g) in enumerate(zip(operands, out)))


def _explain_nested(name: str) -> Callable:
    def explain(*operands: Any) -> str:
        return f"a nested {name}() call"
    return explain


# how the JIT's refusal of a nested call tells it (jit.infer.internal_call)
gradient.__zygopy_explain__ = _explain_nested("gradient")
value_and_grad.__zygopy_explain__ = _explain_nested("value_and_grad")
pullback.__zygopy_explain__ = _explain_nested("pullback")
jacobian.__zygopy_explain__ = _explain_nested("jacobian")
