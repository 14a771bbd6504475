"""Pass tables with checked order: the ssair pipeline (`ssair.passes.ORDER`,
`CLEANUPS`) and the J transform (`adjoint.passes.PASSES`).  Moving a pass to a
place where what it relies on has not run makes these fail."""
from __future__ import annotations

import adjoint.passes as jpasses
import adjoint.transform as jt
from adjoint import gradient
from lowering import lower
from ssair.passes import PASSES, PIPELINE, check_order


def test_the_pipeline_keeps_its_order_constraints():
    assert check_order(PIPELINE) == []


def test_a_pipeline_that_breaks_them_is_told_why():
    broken = check_order([(n, PASSES[n]) for n in ("inplace", "constfold", "cse",
                                                    "algebraic", "dce")])
    assert broken == ["algebraic must run before every cse: one form per expression, "
                      "so that more of them compare equal"]
    assert check_order([(n, PASSES[n]) for n in ("dce", "simplifycfg", "dce")]) == [
        "simplifycfg must run after the last dce: dce empties blocks, which only then "
        "merge or vanish"]


def square_in_a_loop(x, n):
    s = 0.0
    for _ in range(n):
        s = s + x * x
    return s


def test_the_j_transform_runs_its_table_in_order():
    assert gradient(square_in_a_loop, 1.5, 3, backend="interp") == (9.0, None)
    jf = jt.transform(lower(square_in_a_loop), (True, False))
    ran = list(jf.forward.meta["passes"])
    assert jpasses.check_order(ran) == []
    assert set(ran) == set(jpasses.PASSES) - {"checkpoint_loops"}   # only on request
    ck = list(jt.checkpointed(jf, 1.0).forward.meta["passes"])
    assert ck == ran + ["checkpoint_loops"] and jpasses.check_order(ck) == []


def test_a_j_transform_out_of_order_is_told_why():
    assert jpasses.check_order(["merge_returns", "canonical_inplace"]) == [
        "merge_returns runs before canonical_inplace, which it requires"]
    assert jpasses.check_order(["emit_stacks"])[0] == "emit_stacks runs before instrument, which it requires"
