"""The systems under comparison, one adapter each, and the registry the runner reads.

An adapter has a `name`, the `kinds` of task it produces ("primal", "grad"), a
`setup()` that imports what it needs (raising `Unavailable` when it cannot), an
optional `warm()` that pays one-time library initialisation before any workload is
timed (so that the first workload's compile time is not inflated by it), and
`tasks(workload)` returning one `Task` per kind.  CPython and zygopy live here; the
peers live in `bench.peers`.
"""
from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bench.workloads import Workload, is_structured, leaves


class Unavailable(Exception):
    """The system, or one of its features, is not there (not installed, no API yet)."""


@dataclass
class Task:
    """One thing to time for one workload.

    `run()` performs one complete evaluation (for "grad": the value and every
    gradient, as a user would call it); `result(out)` turns what `run` returned into
    `(value or None, [one float64 array per differentiated argument] or None)` for the
    cross-check.  `missing` names why the task cannot run (then `run` is None).
    `result` may set `note`, which the table shows as a footnote on the cell's number
    (e.g. "ran in the interpreter").  `batch` is the number of evaluations one `run()`
    performs (a native loop, so that a call's fixed cost from Python is not timed as
    the computation's); the worker divides every time it measures by it.
    """

    kind: str
    run: Callable[[], object] | None = None
    result: Callable[[object], tuple] | None = None
    missing: str = ""
    note: str = ""
    batch: int = 1


def grads_at(grads, wrt: tuple) -> list:
    """The gradients at positions `wrt` of a per-argument sequence, as float64 arrays;
    the gradient of a structured argument (a list of (W, b) tuples) as one flat array
    of its leaves in `bench.workloads.leaves` order."""
    return [_flat(grads[i]) if is_structured(grads[i]) else np.asarray(grads[i], np.float64)
            for i in wrt]


def _flat(grad) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(g, dtype=np.float64)) for g in leaves(grad)])


def _value_only(out) -> tuple:
    return float(out), None


def warm_function(x, n):
    """A small loop with a branch: each system pays its one-time start-up on it."""
    s = 0.0
    for _ in range(n):
        if x > 0.0:
            s = s + x * 1.5
    return s


class CPython:
    """The plain function called by the interpreter running this benchmark."""

    name = "cpython"
    kinds = ("primal",)

    def setup(self) -> None:
        return None

    def tasks(self, w: Workload) -> list:
        f, args = w.func, w.args()
        return [Task("primal", lambda: f(*args), _value_only)]


class Zygopy:
    """zygopy: `jit.jit(f)` for the primal, `adjoint.value_and_grad(f, *args, backend)`
    for the gradient (forward and adjoint in one native call; before value_and_grad
    existed, `adjoint.pullback` followed by `back(1.0)`).  The gradient uses
    `backend="auto"`, what a user gets: compiled code, or the interpreter where the JIT
    refuses the function; such a cell carries a note with the JIT's reason."""

    name = "zygopy"
    kinds = ("grad", "primal")
    backend = "auto"

    def setup(self) -> None:
        try:
            self.jit_mod = importlib.import_module("jit")
            self.adjoint_mod = importlib.import_module("adjoint")
        except Exception as e:  # noqa: BLE001 (a failing system fills n/a cells)
            raise Unavailable(f"zygopy does not import: {type(e).__name__}: {e}") from None

    def warm(self) -> None:
        """Compile a trivial function both ways; each part fails on its own (a missing
        pullback must not leave the primal JIT's initialisation to the first workload)."""
        errors = []
        tasks = self.tasks_for(warm_function, (0.5, 3), (0,))
        for task in (t for t in tasks if t.run is not None):
            try:
                task.run()
            except Exception as e:  # noqa: BLE001 (reported as the init error)
                errors.append(f"{task.kind}: {type(e).__name__}: {e}")
        if errors:
            raise RuntimeError("; ".join(errors))

    def tasks(self, w: Workload) -> list:
        return self.tasks_for(w.func, w.args(), w.wrt)

    def tasks_for(self, f: Callable, args: tuple, wrt: tuple) -> list:
        return [self._grad_task(f, args, wrt), self._primal_task(f, args)]

    def _grad_task(self, f: Callable, args: tuple, wrt: tuple) -> Task:
        pullback = getattr(self.adjoint_mod, "pullback", None)
        if pullback is None:
            return Task("grad", missing="adjoint.pullback does not exist yet")
        backend = self.backend
        value_and_grad = getattr(self.adjoint_mod, "value_and_grad", None)

        def run():
            if value_and_grad is not None:     # (the default backend: a user's call)
                return value_and_grad(f, *args) if backend == "auto" else \
                    value_and_grad(f, *args, backend=backend)
            y, back = pullback(f, *args, backend=backend)
            return y, back(1.0)
        task = Task("grad", run)

        def result(out):
            if backend == "auto":
                task.note = self._fallback_reason(pullback, f, args)
            return float(out[0]), grads_at(out[1], wrt)
        task.result = result
        return task

    @staticmethod
    def _fallback_reason(pullback: Callable, f: Callable, args: tuple) -> str:
        """Why `backend="auto"` ran `f` in the interpreter, or "" when it ran compiled:
        the same call under `backend="llvm"` (the JIT caches its compiled code and its
        refusals, so this costs one forward; it is not timed)."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pullback(f, *args, backend="llvm")
        except Exception as e:  # noqa: BLE001 (any refusal is the reason)
            text = str(e).strip().splitlines()
            return ("zygopy grad ran in the interpreter (backend=\"auto\" fell back; "
                    f"\"llvm\" raises {type(e).__name__}: {text[0] if text else ''})")
        return ""

    def _primal_task(self, f: Callable, args: tuple) -> Task:
        jit = getattr(self.jit_mod, "jit", None)
        if jit is None:
            return Task("primal", missing="jit.jit does not exist yet")
        compiled = jit(f)
        return Task("primal", lambda: compiled(*args), _value_only)


class ZygopyInterp(Zygopy):
    """zygopy's reference path: forward and adjoint IR run by `ssair.interpret`."""

    name = "zygopy-interp"
    kinds = ("grad",)
    backend = "interp"

    def tasks_for(self, f: Callable, args: tuple, wrt: tuple) -> list:
        return [self._grad_task(f, args, wrt)]


# name -> "module:Class"; the order is the order of the table's columns.
SYSTEMS = {
    "cpython": "bench.systems:CPython",
    "zygopy": "bench.systems:Zygopy",
    "zygopy-interp": "bench.systems:ZygopyInterp",
    "numba": "bench.peers.numba_peer:Numba",
    "jax-eager": "bench.peers.jax_peer:JaxEager",
    "jax-jit": "bench.peers.jax_peer:JaxJit",
    "autograd": "bench.peers.autograd_peer:Autograd",
    "torch": "bench.peers.torch_peer:Torch",
    "c-adjoint": "bench.peers.c_adjoint:CAdjoint",
}


def load(name: str):
    """An instance of the adapter registered as `name` (its module is imported here, the
    library it wraps only in `setup`)."""
    if name not in SYSTEMS:
        raise KeyError(f"bench.systems.load: unknown system {name!r} "
                       f"(known: {', '.join(SYSTEMS)})")
    module, cls = SYSTEMS[name].split(":")
    return getattr(importlib.import_module(module), cls)()


def kinds_of(name: str) -> tuple:
    return load(name).kinds
