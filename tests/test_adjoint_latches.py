"""Loops whose header has several latches (an if/else at the end of the body, a
`continue`): the adjoint finds the first visit of the header from the rebuilt
counter and reads the recorded edge only to choose among the latches
(`adjoint.passes.induction`, `first_visit`).  Gradients must match central differences and
the interpreter must agree with the JIT, for every branch pattern."""
from __future__ import annotations

import numpy as np
import pytest
from jit_grad_check import check_llvm

import adjoint
from bench.workloads import leaky_sum as leaky


def skips(x, n):
    r = 1.0
    for i in range(n):
        if i % 3 == 0:
            r = r * x
            continue
        r = r + x * i
    return r


def countdown(x, n):
    r = 0.0
    i = n
    while i > 0:
        i -= 1
        if i % 2:
            r = r * x + 1.0
        else:
            r = r + x
    return r


def _fd(f, args, k, h=1e-6):
    lo, hi = list(args), list(args)
    if isinstance(args[k], np.ndarray):
        out = np.zeros_like(args[k])
        for j in range(args[k].size):
            lo[k], hi[k] = args[k].copy(), args[k].copy()
            lo[k][j] -= h
            hi[k][j] += h
            out[j] = (f(*hi) - f(*lo)) / (2 * h)
        return out
    lo[k], hi[k] = args[k] - h, args[k] + h
    return (f(*hi) - f(*lo)) / (2 * h)


CASES = [
    (leaky, (np.random.default_rng(3).normal(size=40),)),
    (skips, (1.01, 17)), (skips, (0.9, 0)), (skips, (0.9, 1)),
    (countdown, (0.97, 12)), (countdown, (0.97, 1)), (countdown, (1.2, 0)),
]


@pytest.mark.parametrize("f,args", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_gradients_match_differences_and_backends_agree(f, args):
    for backend in ("interp", "llvm"):
        y, back = adjoint.pullback(f, *args, backend=backend)
        g = back(1.0)
        assert y == pytest.approx(f(*args), rel=1e-12)
        assert np.allclose(g[0], _fd(f, args, 0), rtol=1e-6, atol=1e-7)
    assert check_llvm(f, *args) == "ok"


@pytest.mark.parametrize("f,args", CASES[:2],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_the_headers_first_visit_is_found_on_the_counter(f, args):
    from adjoint.transform import activity_of, arg_types, lower_function, transform
    jf = transform(lower_function(f), activity_of(args), arg_types(args))
    ind = jf.forward.meta.get("induction")
    assert ind is not None and ind.first_visit, "expected a multi-latch header"
    for h, (phi, entry, init) in ind.first_visit.items():
        assert h not in ind.implied and phi in ind.phis


def test_compiled_adjoint_of_the_branchy_loop_selects_instead_of_branching():
    from jit.pullback.backend import stage_listing
    xs = np.random.default_rng(5).normal(size=64)
    jf_adj = stage_listing("llvm", "adjoint", leaky, (xs,))
    body = jf_adj[jf_adj.index("define void @zy_adj_"):]
    body = body[:body.index("\n}\n")]
    assert "select i1" in body            # dy or 0.01 * dy, chosen without a branch
    assert "switch" not in body
    assert "sadd.with.overflow" not in body  # rebuilt counters are exact


def test_rebuilt_counters_and_cotangent_indices_are_marked_for_the_jit():
    from adjoint.transform import activity_of, arg_types, lower_function, transform
    args = (np.ones(5),)
    jf = transform(lower_function(leaky), activity_of(args), arg_types(args))
    meta = jf.adjoint.meta
    stmts = {s.var.id: s for b in jf.adjoint.blocks for s in b.stmts}
    # counters one step back, and the branch condition `xs[i] > 0.0` recomputed
    assert meta["exact_ints"] and all(stmts[v].op in ("add", "sub", "gt")
                                      for v in meta["exact_ints"])
    assert meta["inbounds"] and all(stmts[v].op in ("accum_index", "getitem")
                                    for v in meta["inbounds"])
