"""JAX, two ways (float64: `jax_enable_x64` is switched on before anything runs).

- `JaxEager`: `jax.grad` of the workloads' own plain code, not jitted: JAX traces the
  Python loops op by op, `math` is routed to `jax.numpy` / `jax.scipy.special`.
- `JaxJit`: `jax.jit(jax.grad(...))` of the idiomatic JAX rewrite of each workload
  (`bench.peers.jax_rewrites`), integer arguments static; its first call is the
  compile time the runner reports.  A workload without a rewrite (straight-line code
  of another suite) is jitted as written, which is what a JAX user would do.
"""
from __future__ import annotations

import os

from bench.peers import Rebound, is_plain_number, math_shim, numpy_as
from bench.systems import Task, Unavailable, grads_at
from bench.workloads import Workload


def _import_jax():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        import jax
    except ImportError as e:
        raise Unavailable(f"jax is not installed ({e})") from None
    jax.config.update("jax_enable_x64", True)
    return jax


def _device_args(jax, args: tuple) -> tuple:
    """Arrays and floats become device arrays up front, so that the host-to-device copy
    is not timed, also inside lists, tuples and dicts (a list of (W, b) layers);
    integers stay Python ints (loop bounds)."""
    return tuple(a if isinstance(a, int) else jax.tree_util.tree_map(jax.numpy.asarray, a)
                 for a in args)


def _plain_code(jax) -> Rebound:
    """The workloads' own code with `math` sent to `jax.numpy` for traced values and
    `np` bound to `jax.numpy`."""
    import jax.scipy.special as jsp
    funcs = {"exp": jax.numpy.exp, "log": jax.numpy.log, "sqrt": jax.numpy.sqrt,
             "erf": jsp.erf, "sin": jax.numpy.sin, "cos": jax.numpy.cos,
             "tanh": jax.numpy.tanh}
    shim = math_shim(funcs, lambda x: not is_plain_number(x))
    return Rebound(overrides={"math": shim, **numpy_as(jax.numpy)})


def _grad_result(w: Workload):
    def result(out):
        return None, grads_at(out, range(len(w.wrt)))
    return result


class JaxEager:
    name = "jax-eager"
    kinds = ("grad",)

    def setup(self) -> None:
        self.jax = _import_jax()
        self.rebound = _plain_code(self.jax)

    def warm(self) -> None:
        self.jax.grad(lambda x: x * x + 1.0)(1.5).block_until_ready()

    def tasks(self, w: Workload) -> list:
        f = self.rebound(w.func)
        args = _device_args(self.jax, w.args())
        g = self.jax.grad(f, argnums=w.wrt)

        def run():
            return self.jax.block_until_ready(g(*args))
        return [Task("grad", run, _grad_result(w))]


class JaxJit:
    name = "jax-jit"
    kinds = ("grad",)

    def setup(self) -> None:
        self.jax = _import_jax()
        from bench.peers import jax_rewrites
        self.rewrites = jax_rewrites
        self.rebound = _plain_code(self.jax)

    def warm(self) -> None:
        self.jax.jit(self.jax.grad(lambda x: x * x + 1.0))(1.5).block_until_ready()

    def tasks(self, w: Workload) -> list:
        rewrite = getattr(self.rewrites, w.name, None) or self.rebound(w.func)
        raw = w.args()
        static = tuple(i for i, a in enumerate(raw) if isinstance(a, int))
        g = self.jax.jit(self.jax.grad(rewrite, argnums=w.wrt), static_argnums=static)
        args = _device_args(self.jax, raw)

        def run():
            return self.jax.block_until_ready(g(*args))
        return [Task("grad", run, _grad_result(w))]
