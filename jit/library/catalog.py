"""Every module that fills the type and lowering tables, imported once (by
`jit/__init__.py`) so that the core tables and the registry are complete before
anything is typed.  Which module declares what does not depend on this order: each
callable is declared once, and the patterns of an entry are disjoint."""
from jit.codegen import arrays, scalar  # noqa: F401  (core lowering of the primitives)
from jit.library import (advanced_index, array_calls, broadcast, builders, builtin_sum,  # noqa: F401
                         built_lists, dict_methods, elementwise, escape_hatch, fusion, linalg,
                         live_globals, math_builtins,
                         number_builtins, numpy_calls, operators, random_draws, records, reductions,
                         reductions_nd, reshape_nd,
                         exceptions, sequence_builtins, sequence_values,
                         shape_queries, shapes, slicing, string_values, tuple_slicing, ufuncs)
from jit.pullback import (array_cotangents, cotangents, custom_calls,  # noqa: F401
                          jcalls, nested_gradient, tape_ops)
from jit.typing import primitives  # noqa: F401  (core type rules of the primitives)
