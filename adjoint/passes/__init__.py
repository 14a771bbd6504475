"""The passes and analyses of the J transform, one per module, and their order.

`adjoint.transform._build` runs them in this order (its docstring says what each
does); `PASSES` maps each to the ones it requires to have run before it, and
`check_order` holds a run to that table: every transform checks the sequence it ran
while `adjoint.transform.VERIFY` is on, and `tests/test_pass_order.py` checks the
messages.  Nothing is imported here, so that a pass module may import another.

  canonical_inplace  `inplace`        in-place operators made explicit
  merge_returns      `merge_returns`  one exit block, an entry without predecessors
  record_branches    `branches`       dummy phis at joins
  forward_tuple_elements `container_writes`  a write through a tuple's element
                                      writes into the element's own value
  activity           `activity`       which values carry derivatives
  instrument         `instrument`     pullback records, alphas, jcalls, `%tape`
  rebuildable        `induction`      loop counters the adjoint rebuilds
  silent_joins       `branches`       joins whose edge the adjoint does not need
  emit_stacks        `stacks`         pushes in cyclic blocks, env slots elsewhere
  reverse            `reverse`        the adjoint IR
  cleanup            (ssair passes)   simplifycfg and dce on the adjoint IR
  cut_tapes          `unwind`         handlers truncate what a raising callee pushed
  checkpoint_loops   `checkpoint`     snapshots in place of loop records (only for
                                      `pullback(..., checkpoint=MB)`, after the rest)
"""
from __future__ import annotations

PASSES: dict = {
    "canonical_inplace": (),
    "merge_returns": ("canonical_inplace",),     # sees the explicit array writes
    "record_branches": ("merge_returns",),       # the entry has no predecessors
    "forward_tuple_elements": ("canonical_inplace",),   # sees the explicit writes
    "activity": ("record_branches",),            # dummy phis are values too
    "instrument": ("activity", "canonical_inplace"),
    "rebuildable": ("instrument",),              # counters among the records
    "silent_joins": ("instrument",),             # needs the records per block
    "emit_stacks": ("instrument", "rebuildable", "silent_joins"),
    "reverse": ("emit_stacks",),                 # pops what emit_stacks pushed
    "cleanup": ("reverse",),
    "cut_tapes": ("reverse",),                   # adds nothing the adjoint reads
    "checkpoint_loops": ("cut_tapes", "cleanup"),   # rewrites the finished pair
}


def check_order(ran: list) -> list:
    """The requirements of `PASSES` that the pass sequence `ran` breaks."""
    broken = [f"unknown pass {n!r}" for n in ran if n not in PASSES]
    for k, name in enumerate(ran):
        for need in PASSES.get(name, ()):
            if need not in ran[:k]:
                broken.append(f"{name} runs before {need}, which it requires")
    return broken
