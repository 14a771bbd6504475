"""The differential program fuzzer (see `fuzz_programs`): random differentiable
programs through CPython, the interpreter and the JIT.  CI runs a bounded number;
`ZYGOPY_FUZZ_EXAMPLES=20000` runs more; `ZYGOPY_FUZZ_SHAPES` picks the optional
program shapes and their checks (`fuzz_programs.SHAPES`: a comma-separated list, "all"
or "none"; the default is `fuzz_programs.DEFAULT_SHAPES`)."""
from __future__ import annotations

import os

from fuzz_programs import check_program, inputs, programs, shapes_from_env
from hypothesis import HealthCheck, given, settings

EXAMPLES = int(os.environ.get("ZYGOPY_FUZZ_EXAMPLES", "120"))
SHAPES = shapes_from_env()


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(source=programs(SHAPES), values=inputs)
def test_random_programs_agree_everywhere(source, values):
    check_program(source, values, SHAPES)
