"""The hand-written C adjoint (`c_adjoint.c` next to this file): the speed limit a
compiler of gradients is measured against, one function per workload of the default
suite computing its value and every gradient the other systems compute.

The source is compiled with `gcc -O2` (plus `-ffp-contract=off`, so that no multiply
and add are fused into one rounding and the values equal CPython's) into a shared
library at first use, cached in the temporary directory (one folder per user) by the
hash of the source, the flags and the compiler's version, and called through ctypes.

A ctypes call costs about a microsecond, more than the whole black_scholes adjoint;
so one timed `run()` is one ctypes call of `adjoint_repeat`, which runs the adjoint
`batch` times in a C loop, and the worker divides every time by `batch` (`Task.batch`).
The batch is sized once per workload, from the adjoint's own time read by the C loop's
clock, so that a batch lasts about `BATCH_NS`: the ctypes call is then about 1% of it.
"""
from __future__ import annotations

import ctypes
import hashlib
import math
import os
import shutil
import subprocess
import tempfile

import numpy as np

from bench.systems import Task, Unavailable
from bench.workloads import Workload

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c_adjoint.c")
COMPILER = "gcc"
CFLAGS = ("-O2", "-fPIC", "-shared", "-ffp-contract=off")
BATCH_NS = 100_000
MAX_BATCH = 1_000_000

# workload -> the role of each argument: "s" a float (into `s`), "a" the float array
# (into `xs`), "n" the integer (the trip count).  The C function is `<name>_adjoint`
# and differentiates every "s" and "a" argument, in argument order.
ROLES = {
    "pow_loop": "sn",
    "pow_rec": "sn",
    "leaky_sum": "a",
    "horner": "sa",
    "logsumexp": "a",
    "rosenbrock": "a",
    "lotka_volterra": "ssssn",
    "black_scholes": "sssss",
}

_DOUBLE_P = ctypes.POINTER(ctypes.c_double)


def compiler_version(cc: str = COMPILER) -> str:
    """"gcc 12.2.0", or "not installed"."""
    if shutil.which(cc) is None:
        return "not installed"
    out = subprocess.run([cc, "-dumpfullversion", "-dumpversion"], capture_output=True,
                         text=True, check=False)
    return f"{cc} {out.stdout.strip()}" if out.returncode == 0 else f"{cc} (version unknown)"


def build(cc: str = COMPILER, cache_dir: str | None = None) -> str:
    """The path of the compiled library, compiling it when the cache has no library for
    this source, these flags and this compiler.  Raises Unavailable without a compiler
    and RuntimeError (with the compiler's message) when compilation fails."""
    if shutil.which(cc) is None:
        raise Unavailable(f"{cc} not found: the hand-written C adjoint needs a C compiler")
    with open(SOURCE, "rb") as f:
        source = f.read()
    key = hashlib.sha256(source + " ".join(CFLAGS).encode() + compiler_version(cc).encode())
    user = getattr(os, "getuid", lambda: "")()  # one cache per user
    cache_dir = cache_dir or os.path.join(tempfile.gettempdir(), f"zygopy-bench-c-{user}")
    os.makedirs(cache_dir, exist_ok=True)
    lib = os.path.join(cache_dir, f"c_adjoint-{key.hexdigest()[:16]}.so")
    if os.path.exists(lib):
        return lib
    partial = f"{lib}.{os.getpid()}.tmp"  # renamed when complete: a racing build is harmless
    out = subprocess.run([cc, *CFLAGS, "-o", partial, SOURCE, "-lm"], capture_output=True,
                         text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{cc} failed on {SOURCE}: {out.stderr.strip()[:300]}")
    os.replace(partial, lib)
    return lib


def load(cc: str = COMPILER) -> ctypes.CDLL:
    lib = ctypes.CDLL(build(cc))
    lib.adjoint_repeat.restype = ctypes.c_double
    lib.adjoint_repeat.argtypes = (ctypes.c_void_p, ctypes.c_long, _DOUBLE_P, _DOUBLE_P,
                                   ctypes.c_long, _DOUBLE_P, ctypes.POINTER(ctypes.c_longlong))
    return lib


def has_adjoint(w: Workload) -> bool:
    """Whether `w` is a workload of bench/workloads.py with a C adjoint (another suite's
    function of the same name is not)."""
    if w.name not in ROLES:
        return False
    differentiated = tuple(i for i, r in enumerate(ROLES[w.name]) if r != "n")
    return (getattr(w.func, "__name__", "") == w.name and w.wrt == differentiated
            and getattr(w.func, "__module__", "") == "bench.workloads")


class NativeCall:
    """One workload's arguments laid out for its C adjoint, with the output buffer and
    the ctypes arguments of `adjoint_repeat` built once."""

    def __init__(self, lib: ctypes.CDLL, name: str, args: tuple) -> None:
        roles = ROLES[name]
        if len(args) != len(roles):
            raise ValueError(f"{name}: the C adjoint takes {len(roles)} arguments, "
                             f"got {len(args)}")
        self.s = np.array([float(a) for a, r in zip(args, roles) if r == "s"] or [0.0])
        arrays = [a for a, r in zip(args, roles) if r == "a"]
        self.xs = np.ascontiguousarray(arrays[0] if arrays else [0.0], dtype=np.float64)
        count = [a for a, r in zip(args, roles) if r == "n"]
        self.n = int(count[0]) if count else (len(self.xs) if arrays else 0)
        self.sizes = [1 if r == "s" else len(self.xs) for r in roles if r != "n"]
        self.g = np.zeros(max(sum(self.sizes), 1))
        self.elapsed = ctypes.c_longlong(0)
        fn = ctypes.cast(getattr(lib, f"{name}_adjoint"), ctypes.c_void_p)
        self._repeat = lib.adjoint_repeat
        self._args = (fn, self.s.ctypes.data_as(_DOUBLE_P), self.xs.ctypes.data_as(_DOUBLE_P),
                      self.n, self.g.ctypes.data_as(_DOUBLE_P), ctypes.byref(self.elapsed))
        self.name = name

    def repeat(self, k: int) -> float:
        """Run the adjoint k times in C; the value (the gradients are in `self.g`)."""
        fn, s, xs, n, g, elapsed = self._args
        return self._repeat(fn, k, s, xs, n, g, elapsed)

    def result(self, value: float) -> tuple:
        """(value, one gradient per differentiated argument: 0-d for a float)."""
        if math.isnan(value):
            raise RuntimeError(f"the C adjoint of {self.name} returned NaN "
                               "(tape allocation failed or an input Python refuses)")
        grads, at = [], 0
        for size, role in zip(self.sizes, (r for r in ROLES[self.name] if r != "n")):
            part = self.g[at:at + size].copy()
            grads.append(part.reshape(()) if role == "s" else part)
            at += size
        return value, grads

    def batch_size(self) -> int:
        """Evaluations per timed call so that one lasts about BATCH_NS (the fastest of
        three single runs, by the C clock)."""
        single = []
        for _ in range(3):
            self.repeat(1)
            single.append(self.elapsed.value)
        return int(min(MAX_BATCH, max(1, math.ceil(BATCH_NS / max(min(single), 1)))))


def evaluate(lib: ctypes.CDLL, name: str, args: tuple) -> tuple:
    """The C adjoint of workload `name` at `args`, once: (value, gradients)."""
    call = NativeCall(lib, name, args)
    return call.result(call.repeat(1))


class CAdjoint:
    """`c-adjoint`: the hand-written C adjoint of each workload, value and every
    gradient, `batch` evaluations per timed call (see the module's doc)."""

    name = "c-adjoint"
    kinds = ("grad",)
    in_overhead = False  # the batch hides the per-call cost the overhead line is about

    @staticmethod
    def version() -> str:
        return compiler_version()

    def setup(self) -> None:
        self.lib = load()

    def warm(self) -> None:
        evaluate(self.lib, "pow_loop", (1.5, 3))

    def tasks(self, w: Workload) -> list:
        if not has_adjoint(w):
            return [Task("grad", missing=f"no hand-written C adjoint for {w.name}")]
        call = NativeCall(self.lib, w.name, w.args())
        batch = call.batch_size()
        return [Task("grad", lambda: call.repeat(batch), call.result, batch=batch)]
