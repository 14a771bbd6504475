"""zygopy's options kept apart from the keywords of the user's function.

`gradient(f, *args, **kwargs)`, `value_and_grad`, `pullback` and `jacobian` pass every
keyword that `f` can accept to `f`.  A keyword that `f` cannot accept and that names one
of the call's options (`backend=`, `checkpoint=`, `batch=`) is that option: the older
spelling, kept for the calls written before the JAX-style transforms
(`adjoint.transforms`), which take options as keywords of the transform instead.

`f` can accept keyword `name` when it has a parameter of that name that may be passed
by keyword and that a `functools.partial` does not bind already, or when it has
`**kwargs`.  So `gradient(loss, w, checkpoint=3.0)` for `def loss(w, checkpoint=1.0)`
runs `loss(w, checkpoint=3.0)`, and `gradient(partial(loss, checkpoint=3.0), w,
checkpoint=1)` checkpoints the tape.

`Checkpointed` is what `adjoint.checkpoint(f, megabytes)` returns: `f` itself when
called, and `checkpoint=megabytes` when it is the function differentiated.
"""
from __future__ import annotations

import functools
import inspect
import types
from typing import Any, Callable

from ssair.interpreter import Closure
from ssair.ir import IR

_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def accepts_keyword(f: Callable, name: str) -> bool:
    """Whether `f(..., name=v)` passes `v` to a parameter of `f` (see module doc)."""
    if type(f) is types.FunctionType and not hasattr(f, "__zygopy_transform__"):
        code = f.__code__                # (the usual case: read from the code object)
        hit = _KEYWORD_NAMES.get(id(code))
        if hit is None or hit[0] is not code:
            hit = _KEYWORD_NAMES[id(code)] = (code, _keyword_names(code))
        return hit[1] is True or name in hit[1]
    if isinstance(f, Closure):  # a function made inside interpreted code: its source's
        source = f.func.func if isinstance(f.func, IR) else f.func
        return type(source) is types.FunctionType and accepts_keyword(source, name)
    t = transform_of(f)
    if t is not None:           # (it passes its keywords to the function it wraps)
        return accepts_keyword(t.f, name)
    if isinstance(f, functools.partial) and name in f.keywords:
        return False
    try:
        params = inspect.signature(f).parameters
    except (TypeError, ValueError):
        return False
    p = params.get(name)
    if p is not None and p.kind in _KINDS:
        return True
    return any(q.kind is inspect.Parameter.VAR_KEYWORD for q in params.values())


def _keyword_names(code: types.CodeType) -> Any:
    """The names a call may pass to a function of `code` by keyword (True: any)."""
    if code.co_flags & inspect.CO_VARKEYWORDS:
        return True
    return frozenset(code.co_varnames[code.co_posonlyargcount:
                                      code.co_argcount + code.co_kwonlyargcount])


# id(code object) -> (code, `_keyword_names(code)`): co_varnames is built anew at each
# read, and a code object's hash is computed anew from its fields at each lookup
_KEYWORD_NAMES: dict = {}


def take_options(f: Callable, kwargs: dict, names: tuple) -> tuple:
    """(backend, checkpoint, batch), each taken out of `kwargs` when it is one of
    `names` and `f` cannot accept it as a keyword; what is left goes to `f`.  A
    `Checkpointed` `f` gives its budget as the checkpoint."""
    checkpoint = f.megabytes if type(f) is Checkpointed else None
    backend = batch = None
    for name in names if kwargs else ():
        if name in kwargs and not accepts_keyword(f, name):
            if name == "backend":
                backend = kwargs.pop(name)
            elif name == "checkpoint":
                checkpoint = kwargs.pop(name)
            else:
                batch = kwargs.pop(name)
    return backend or "auto", checkpoint, batch


class Transform:
    """What the transforms make (`Checkpointed` here, `adjoint.transforms.Transformed`,
    the spec of the function `grad` returns): an object over `f` whose `target` is the Python function that a pullback differentiates
    for it, and that differentiated and compiled callers run (`__zygopy_function__`,
    read by the lowering)."""

    target: Callable

    def _stand_in(self, target: Callable) -> None:
        self.target = target
        if type(target) is types.FunctionType:
            self.__zygopy_function__ = target


class Checkpointed(Transform):
    """`f` whose pullback keeps a bounded tape: `adjoint.checkpoint(f, megabytes)`.

    Called, it is `f`.  Differentiated (`grad`, `gradient`, `pullback`, ...), each of
    `f`'s outer loops keeps snapshots instead of its whole tape, as `checkpoint=MB`
    does.  Inside other differentiated or compiled code it stands for `f` itself."""

    def __init__(self, f: Callable, megabytes: float):
        if isinstance(megabytes, bool) or not isinstance(megabytes, (int, float)) \
                or not megabytes > 0:
            raise ValueError(f"checkpoint: the budget is a positive number of MiB, not "
                             f"{megabytes!r}")
        if not callable(f):
            raise TypeError(f"checkpoint: {f!r} is not callable")
        self.f, self.megabytes = f, megabytes
        functools.update_wrapper(self, f, updated=())
        self.__qualname__ = f"checkpoint({getattr(f, '__qualname__', type(f).__name__)})"
        self._stand_in(unwrap(f))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.f(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<checkpoint({getattr(self.f, '__name__', self.f)}, {self.megabytes} MiB)>"


def transform_of(f: Callable) -> Any:
    """The `Transform` that `f` is, or that a function a transform returned names in
    `__zygopy_transform__`; else None."""
    return f if isinstance(f, Transform) else getattr(f, "__zygopy_transform__", None)


def unwrap(f: Callable) -> Callable:
    """The function differentiated for `f`: a transform's `target`, else `f`."""
    t = transform_of(f)
    return f if t is None else t.target
