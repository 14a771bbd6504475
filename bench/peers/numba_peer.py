"""Numba: `numba.njit` applied to the workloads' own code (the primal only; Numba has
no reverse mode).  Compilation happens at the first call, which the runner times."""
from __future__ import annotations

from bench.peers import Rebound
from bench.systems import Task, Unavailable, warm_function
from bench.workloads import Workload


class Numba:
    name = "numba"
    kinds = ("primal",)

    def setup(self) -> None:
        try:
            import numba
        except ImportError as e:
            raise Unavailable(f"numba is not installed ({e})") from None
        self.numba = numba
        self.rebound = Rebound(wrap=numba.njit)

    def warm(self) -> None:
        self.numba.njit(warm_function)(0.5, 3)

    def tasks(self, w: Workload) -> list:
        f, args = self.rebound(w.func), w.args()
        return [Task("primal", lambda: f(*args), lambda out: (float(out), None))]
