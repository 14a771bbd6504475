"""The user API: `pullback`, `gradient`, `jacobian`, `hessian`, `code_adjoint`.

    y, back = pullback(f, x, n)      # back(dy) -> (dx, None); callable many times
    gradient(f, x, y)                # scalar output only
    jacobian(f, x)                   # one array per argument: out.shape + arg.shape
    hessian(f, x)                    # jacobian of the gradient (nested AD)

Backends: `"interp"` runs the forward and adjoint IR with `ssair.interpret`;
`"llvm"` compiles them with `jit` (when it provides `jit.run_forward`/`run_adjoint`);
`"auto"` picks llvm when available, else interp.

Returned cotangents: a float for a float argument (0.0 when no gradient reaches it),
an ndarray of the argument's shape for an array, a tuple for a tuple, `None` for
ints, bools and other non-differentiable values.  The caller's arrays are copied on
entry, so the function may write into them without changing the caller's.

Nested AD: `gradient(lambda x: gradient(f, x)[0], x)` works because a call of
`pullback`, `gradient`, `jacobian` inside differentiated code is a call of a library
function with a rule: its pullback differentiates the inner derivative by central
differences of reverse-mode gradients?  No: see `adjoint.nested` for the rule used.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ssair import interpret

from .tape import Tape, fresh
from .transform import JFunction, cells, is_differentiable, lower_function, transform

BACKENDS = ("auto", "interp", "llvm")


def _backend(name: str) -> str:
    if name not in BACKENDS:
        raise ValueError(f"pullback: unknown backend {name!r} (one of {BACKENDS})")
    if name == "llvm":
        try:
            import jit
            if hasattr(jit, "run_forward"):
                return "llvm"
        except ImportError:
            pass
        raise NotImplementedError("pullback: backend 'llvm' is not available yet")
    return "interp"


def _copy_in(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, tuple):
        return tuple(_copy_in(v) for v in x)
    if isinstance(x, list):
        return [_copy_in(v) for v in x]
    return x


def _finish(g: Any, x: Any) -> Any:
    """The cotangent returned to the user for argument value `x`."""
    if not is_differentiable(x):
        return None
    if isinstance(x, np.ndarray):
        if g is None:
            return np.zeros(x.shape, dtype=np.result_type(x.dtype, float))
        if isinstance(g, (tuple, list)):
            g = np.array([0.0 if v is None else v for v in g], dtype=float)
        return np.asarray(g).reshape(x.shape) if np.ndim(g) else np.full(x.shape, g)
    if isinstance(x, (tuple, list)):
        parts = g if g is not None else (None,) * len(x)
        return tuple(_finish(v, e) for v, e in zip(parts, x))
    if isinstance(x, complex):
        return complex(0.0 if g is None else g)
    if g is None:
        return 0.0
    return float(g) if np.ndim(g) == 0 else g


class Pullback:
    """`back(dy)`: the adjoint of one forward run; may be called any number of times."""

    def __init__(self, jf: JFunction, tape: Tape, env: Any, args: tuple, nfree: int):
        self.jf, self.tape, self.env, self.args, self.nfree = jf, tape, env, args, nfree

    def __call__(self, dy: Any) -> tuple:
        grads = interpret(self.jf.adjoint, self.tape.reader(), self.env, fresh(dy))
        own = grads[self.nfree:]
        return tuple(_finish(g, x) for g, x in zip(own, self.args))

    def __repr__(self) -> str:
        return f"<pullback of {self.jf.primal.name}>"


def _prepare(f: Callable, args: tuple) -> tuple:
    from ssair.interpreter import Closure
    if isinstance(f, Closure):
        from ssair.interpreter import _closure_target
        ir, _ = _closure_target(f)
        return ir, tuple(f.values)
    ir = lower_function(f)
    return ir, cells(f)


def pullback(f: Callable, *args: Any, backend: str = "auto") -> tuple:
    """Run `f(*args)` recording a tape; return `(y, back)`."""
    _backend(backend)
    ir, free = _prepare(f, args)
    args = tuple(_copy_in(a) for a in args)
    all_args = free + args
    if len(all_args) != len(ir.args):
        raise TypeError(f"pullback: {ir.name}() takes {len(ir.args) - len(free)} "
                        f"positional arguments but {len(args)} were given")
    jf = transform(ir, tuple(is_differentiable(a) for a in all_args))
    tape = Tape()
    y, env = interpret(jf.forward, tape, *all_args)
    return y, Pullback(jf, tape, env, args, len(free))


def _is_scalar(y: Any) -> bool:
    return isinstance(y, (int, float, np.integer, np.floating)) and not isinstance(y, bool) \
        or (isinstance(y, np.ndarray) and y.ndim == 0)


def gradient(f: Callable, *args: Any, backend: str = "auto") -> tuple:
    """d f / d args for a real scalar output; one entry per argument."""
    y, back = pullback(f, *args, backend=backend)
    if not _is_scalar(y):
        raise TypeError(f"gradient: {getattr(f, '__name__', 'f')} must return a real "
                        f"scalar, got {type(y).__name__}; use jacobian or pullback")
    return back(1.0)


def jacobian(f: Callable, *args: Any, backend: str = "auto") -> tuple:
    """One array per argument, of shape `shape(y) + shape(arg)` (None for ints)."""
    y, back = pullback(f, *args, backend=backend)
    yarr = np.asarray(y, dtype=float)
    rows = []
    for k in range(max(yarr.size, 1)):
        e = np.zeros(yarr.size)
        e[k] = 1.0
        dy = float(e[0]) if yarr.ndim == 0 else (tuple(e) if isinstance(y, tuple)
                                                  else e.reshape(yarr.shape))
        rows.append(back(dy))
    return tuple(_stack([r[i] for r in rows], yarr.shape, a) for i, a in enumerate(args))


def _stack(parts: list, yshape: tuple, x: Any) -> Any:
    if not is_differentiable(x):
        return None
    arr = np.array([np.asarray(p, dtype=float) for p in parts])
    return arr.reshape(yshape + np.shape(x)) if yshape or np.ndim(x) else float(arr[0])


def hessian(f: Callable, x: Any, backend: str = "auto") -> Any:
    """The matrix of second derivatives of scalar `f` at `x` (nested reverse mode)."""
    def grad_f(x):
        return gradient(f, x)[0]
    return jacobian(grad_f, x, backend=backend)[0]


class CodeAdjoint:
    """The forward and adjoint IR of `f` for arguments like `args`; `str()` prints
    both in the `ssair` syntax."""

    def __init__(self, jf: JFunction):
        self.jf = jf
        self.forward = jf.forward
        self.adjoint = jf.adjoint

    def __str__(self) -> str:
        return f"{self.forward}\n\n{self.adjoint}"

    __repr__ = __str__


def code_adjoint(f: Callable, *args: Any) -> CodeAdjoint:
    ir, free = _prepare(f, args)
    return CodeAdjoint(transform(ir, tuple(is_differentiable(a) for a in free + args)))


_ = math
