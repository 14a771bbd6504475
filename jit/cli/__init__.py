"""The `zygopy` command line (`python -m jit.cli`)."""
from jit.cli.commands import main

__all__ = ["main"]
