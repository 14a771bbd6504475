"""Shared pytest setup: every optimisation pass is verified after it runs.

`ssair.passes.optimize` runs each pass through `ssair.passes.run_pass`; the autouse
fixture below wraps it so that, during every test, the IR a pass returns is checked
with `ssair.verify` and the pass's input is checked to be unchanged.  A failure
names the pass and the function.
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))
# compiled code goes to a disk cache of this session (`jit.disk_cache`), not to the
# checkout's __pycache__ folders; processes the tests start share it
# (removed when the session ends, so that a test run leaves no folder behind)
# the J transform and forward mode verify their IR after every step here
# (`adjoint.transform.VERIFY`; off by default outside the tests)
os.environ.setdefault("ZYGOPY_VERIFY", "1")
if "ZYGOPY_CACHE_DIR" not in os.environ:
    os.environ["ZYGOPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="zygopy-test-cache-")
    atexit.register(shutil.rmtree, os.environ["ZYGOPY_CACHE_DIR"], ignore_errors=True)


def _checked_run_pass(original):
    import ssair

    def run_pass(name, fn, ir):
        before = ssair.format_ir(ir)
        out = original(name, fn, ir)
        if ssair.format_ir(ir) != before:
            raise AssertionError(f"pass {name} modified its input IR ({ir.name})")
        try:
            ssair.verify(out)
        except ssair.VerifyError as e:
            raise AssertionError(f"IR of {ir.name} fails to verify after pass {name}:\n"
                                 f"{e}\n--- before {name}:\n{before}\n--- after:\n{out}"
                                 ) from None
        return out
    return run_pass


@pytest.fixture(autouse=True)
def verify_after_each_pass(monkeypatch):
    """Wrap `ssair.passes.run_pass` (when the passes package exists)."""
    try:
        from ssair import passes
    except ImportError:
        yield
        return
    original = getattr(passes, "run_pass", None)
    if original is not None:
        monkeypatch.setattr(passes, "run_pass", _checked_run_pass(original))
    yield


# The files whose subject the Python version does not change.  `.ci/run` runs them on
# Python 3.11 only: with `ZYGOPY_TESTS=version-dependent` in the environment they are
# deselected, and what reads bytecode, which each version writes differently, runs:
# lowering, the corpora (lowered, interpreted, compiled and differentiated), Python's
# forms (calls, closures, cells, classes, exceptions, strings, globals, comprehensions,
# list building, indexing), programs as written, and the in-project fuzzer.  Left to
# 3.11: derivative rules and numpy entries called on small programs; forward mode and
# nested differentiation (transforms of the IR that lowering has already made); the
# compiled numpy kernels, containers and library calls; the disk cache, checkpointing
# and batching schedules; fused and vectorised loops; dtypes; the CLI, the benchmarks'
# smoke runs and CUDA text; the IR's own passes, parser and properties.
ONE_VERSION = frozenset("""
test_rule_table test_disk_cache test_checkpoint test_bench_smoke test_regressions_numpy_rules
test_numpy_entries test_rules_linalg test_rules_shapes test_rules_ufuncs test_convolve_rules
test_cuda_api test_cuda_emulated test_cuda_ptx test_papers test_threads test_cache_cli test_cli
test_compile_feedback test_compile_speed_paths test_batch test_vectorised_paths test_fusion
test_dtypes_compiled test_complex_convention test_layering test_library
test_library_option_compare test_regressions_checkpoint test_regressions_checkpoint_loops
test_rounding_compiled test_array_sums test_builtin_sum_arrays test_host_calls test_jit_fastcall
test_jit_fastpath test_autograd_shapes_compiled test_reshape_views_compiled test_jit_array_methods
test_passes_random test_property test_parser test_pass_order test_nested_pullback
test_forward_mode test_forward_mode_objects test_regressions_forward_mode
test_nested_compiled test_nested_forward_reverse test_adjoint_nested test_jit_nested_gradient
test_nested_captured_compiled test_user_programs_transforms test_value_and_grad test_transforms
test_jit_numpy_programs test_jit_grad test_index_gradients test_jit_containers_and_ranks
test_jit_library_calls test_builtins_over_arrays test_regressions_array_scalars
test_fallback_per_call_site test_jit test_hidden_writes test_regressions_container_writes
test_regressions_api_checks test_custom_derivatives test_regressions_object_gradients
test_regressions_inplace test_regressions_property_gradients test_regressions_none_cotangents
test_adjoint_recompute test_shards
""".split())


def _file_of(item) -> str:
    return os.path.splitext(os.path.basename(str(getattr(item, "path", None)
                                                 or item.fspath)))[0]


def _deselect(config, items, keep) -> None:
    drop = [item for item in items if not keep(item)]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if keep(item)]


def pytest_collection_modifyitems(config, items):
    """`ZYGOPY_TESTS=version-dependent`: deselect the files of `ONE_VERSION`.
    `ZYGOPY_SHARD=k/n`: keep the files of shard k of n (`tests/shards.py`)."""
    if os.environ.get("ZYGOPY_TESTS") == "version-dependent":
        here = os.path.dirname(__file__)
        missing = sorted(n for n in ONE_VERSION if not os.path.exists(os.path.join(here, n + ".py")))
        if missing:
            raise pytest.UsageError(f"conftest.ONE_VERSION names no test file: {missing}")
        _deselect(config, items, lambda item: _file_of(item) not in ONE_VERSION)
    shard = os.environ.get("ZYGOPY_SHARD")
    if shard:
        import shards
        try:
            k, n = shards.parse_shard(shard)
        except ValueError as e:
            raise pytest.UsageError(str(e)) from None
        where = shards.assign({_file_of(item) for item in items}, n, shards.file_times())
        _deselect(config, items, lambda item: where[_file_of(item)] == k - 1)
