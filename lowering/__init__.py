"""lowering: CPython bytecode (3.10-3.13) to the SSA IR of `ssair`.

    >>> from lowering import lower, code_lowered
    >>> print(code_lowered(pow))
"""
from .api import CodeLowered, code_lowered, lower
from .errors import UnsupportedError
from .runtime import UNBOUND

__all__ = ["UNBOUND", "CodeLowered", "UnsupportedError", "code_lowered", "lower"]
