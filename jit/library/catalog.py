"""Every family of the library, imported once so that the registry is complete before
anything is typed (`jit/__init__.py` imports this module)."""
from jit.pullback import tape_ops, cotangents, array_cotangents, jcalls  # noqa: F401
from jit.library import (elementwise, array_calls, linalg, builders, slicing,  # noqa: F401
                         tuple_slicing, reductions, numbers, strings)
