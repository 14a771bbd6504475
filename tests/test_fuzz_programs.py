"""The differential program fuzzer (see `fuzz_programs`): random differentiable
programs through CPython, the interpreter and the JIT.  CI runs a bounded number;
`ZYGOPY_FUZZ_EXAMPLES=20000` runs more."""
from __future__ import annotations

import os

from fuzz_programs import check_program, inputs, programs
from hypothesis import HealthCheck, given, settings

EXAMPLES = int(os.environ.get("ZYGOPY_FUZZ_EXAMPLES", "120"))


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(source=programs(), values=inputs)
def test_random_programs_agree_everywhere(source, values):
    check_program(source, values)
