"""autograd: `autograd.grad` of the workloads' own plain code, with `math` routed to
`autograd.numpy` / `autograd.scipy.special` and `np` bound to `autograd.numpy`
(autograd traces by boxing values, so the
Python loops and branches run as written)."""
from __future__ import annotations

from bench.peers import Rebound, is_plain_number, math_shim, numpy_as
from bench.systems import Task, Unavailable, grads_at
from bench.workloads import Workload


class Autograd:
    name = "autograd"
    kinds = ("grad",)

    def setup(self) -> None:
        try:
            import autograd
            import autograd.numpy as anp
            import autograd.scipy.special as asp
        except ImportError as e:
            raise Unavailable(f"autograd is not installed ({e})") from None
        self.autograd = autograd
        funcs = {"exp": anp.exp, "log": anp.log, "sqrt": anp.sqrt, "erf": asp.erf,
                 "sin": anp.sin, "cos": anp.cos, "tanh": anp.tanh}
        shim = math_shim(funcs, lambda x: not is_plain_number(x))
        self.rebound = Rebound(overrides={"math": shim, **numpy_as(anp)})

    def warm(self) -> None:
        self.autograd.grad(lambda x: x * x + 1.0)(1.5)

    def tasks(self, w: Workload) -> list:
        f, args = self.rebound(w.func), w.args()
        g = self.autograd.grad(f, argnum=w.wrt)

        def result(out):
            return None, grads_at(out, range(len(w.wrt)))
        return [Task("grad", lambda: g(*args), result)]
