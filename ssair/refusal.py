"""`Refusal`: the base of the errors zygopy raises about the program it runs (a
construct it does not lower, a call without a derivative rule), as opposed to the
errors the program itself raises.  A user's `try`/`except` or `with` block never
catches a refusal: CPython would have run that code, so handling the refusal would
quietly compute something else."""
from __future__ import annotations


class Refusal(Exception):
    """An error about what zygopy supports, never one of the user's program."""
