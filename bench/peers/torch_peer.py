"""PyTorch (float64, one thread): the workloads' own plain code on tensors that require
grad, then `backward()`.  Each timed call makes fresh leaf tensors (cheap views of
prebuilt ones), runs the code, which builds the autograd graph op by op, and backs
through it, as a PyTorch user would."""
from __future__ import annotations

from bench.peers import Rebound, is_plain_number, math_shim
from bench.systems import Task, Unavailable
from bench.workloads import Workload


class Torch:
    name = "torch"
    kinds = ("grad",)

    def setup(self) -> None:
        try:
            import torch
        except ImportError as e:
            raise Unavailable(f"torch is not installed ({e})") from None
        torch.set_num_threads(1)
        self.torch = torch
        funcs = {name: getattr(torch, name) for name in
                 ("exp", "log", "sqrt", "erf", "sin", "cos", "tanh")}
        shim = math_shim(funcs, lambda x: not is_plain_number(x))
        self.rebound = Rebound(overrides={"math": shim})

    def warm(self) -> None:
        x = self.torch.tensor(1.5, dtype=self.torch.float64, requires_grad=True)
        (x * x + 1.0).backward()

    def tasks(self, w: Workload) -> list:
        f, raw = self.rebound(w.func), w.args()
        base = [self.torch.tensor(a, dtype=self.torch.float64) if i in w.wrt else a
                for i, a in enumerate(raw)]

        def run():
            leaves = [b.detach().requires_grad_() if i in w.wrt else b
                      for i, b in enumerate(base)]
            y = f(*leaves)
            y.backward()
            return y, [leaves[i].grad for i in w.wrt]

        def result(out):
            y, grads = out
            return y.item(), [g.numpy() for g in grads]
        return [Task("grad", run, result)]
