"""The `zygopy` command line.

    zygopy show FILE.py:FUNC [--stage lowered|optimized]   print the IR of one function
    zygopy demo                                             lower, print and run examples

Subcommands are a table (`COMMANDS`) so later stages can add theirs (`grad`, more
stages for `show`, `--dot`).  User mistakes (a bad path, a missing function, a
construct the lowering refuses) print one line on stderr and exit with status 2;
they never print a traceback.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
from typing import Any, Callable, Optional

EXIT_USAGE = 2


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


# -- stages -------------------------------------------------------------------------

def _lower(f: Callable) -> Any:
    import lowering
    if not hasattr(lowering, "lower"):
        raise CliError("the lowering stage is not available in this build")
    return lowering.lower(f)


def _optimized(f: Callable) -> Any:
    try:
        from ssair.passes import optimize
    except ImportError:
        raise CliError("stage 'optimized' is not available yet (no ssair.passes.optimize)")
    return optimize(_lower(f))


# stage name -> function(python function) -> IR; later stages add entries.
STAGES: dict = {"lowered": _lower, "optimized": _optimized}


def _lowering_errors() -> tuple:
    """The exception classes that mean 'this function cannot be lowered'."""
    import lowering
    err = getattr(lowering, "UnsupportedError", None)
    return (err,) if isinstance(err, type) else ()


# -- zygopy show ------------------------------------------------------------------------

def load_function(spec: str) -> Callable:
    """`path/to/file.py:name` (or `:Outer.name`) -> the function object."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise CliError(f"expected FILE.py:FUNC, got {spec!r}")
    if not os.path.isfile(path):
        raise CliError(f"no such file: {path}")
    module = _import_file(path)
    obj: Any = module
    for part in name.split("."):
        if not hasattr(obj, part):
            raise CliError(f"{path} has no function {name!r}")
        obj = getattr(obj, part)
    if not callable(obj) or not hasattr(obj, "__code__"):
        raise CliError(f"{path}:{name} is not a Python function")
    return obj


def _import_file(path: str) -> Any:
    modname = os.path.splitext(os.path.basename(path))[0]
    if modname in sys.modules or not modname.isidentifier():
        modname = "_zygopy_user_" + "".join(c if c.isalnum() else "_" for c in modname)
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot import {path}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise CliError(f"cannot import {path}: syntax error at line {e.lineno}: {e.msg}")
    except Exception as e:
        raise CliError(f"cannot import {path}: {type(e).__name__}: {e}")
    return module


def cmd_show(args: argparse.Namespace) -> int:
    f = load_function(args.target)
    print(STAGES[args.stage](f))
    return 0


# -- zygopy demo ------------------------------------------------------------------------

def demo_pow(x, n):
    r = 1
    while n > 0:
        n -= 1
        r *= x
    return r


def demo_leaky_relu(x, slope=0.01):
    if x > 0:
        return x
    return slope * x


# (function, argument tuples) shown by `zygopy demo`; later stages add their own.
DEMOS: list = [
    (demo_pow, [(2.0, 3), (3, 40), (1.5, 0)]),
    (demo_leaky_relu, [(2.5,), (-4.0,), (0.0,)]),
]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


def _demo_one(f: Callable, inputs: list) -> bool:
    from ssair import interpret
    ir = _lower(f)
    print(f"== {f.__name__}: lowered IR")
    print(ir)
    ok = True
    for args in inputs:
        want, got = f(*args), interpret(ir, *args)
        same = _same(want, got)
        ok = ok and same
        call = f"{f.__name__}{args}" if len(args) > 1 else f"{f.__name__}({args[0]!r})"
        print(f"   {call:<28} CPython {want!r:<22} interpreter {got!r:<22} "
              f"{'ok' if same else 'MISMATCH'}")
    print()
    return ok


def cmd_demo(args: argparse.Namespace) -> int:
    ok = all([_demo_one(f, inputs) for f, inputs in DEMOS])
    print("all results agree with CPython" if ok else "some results differ from CPython")
    return 0 if ok else 1


# -- entry point ----------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zygopy", description="Differentiate ordinary Python: "
                                "lowering to SSA IR, interpretation, (soon) gradients and a JIT.")
    sub = p.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print the IR of FILE.py:FUNC")
    show.add_argument("target", metavar="FILE.py:FUNC")
    show.add_argument("--stage", choices=sorted(STAGES), default="lowered")
    show.set_defaults(run=cmd_show)
    demo = sub.add_parser("demo", help="lower, print and interpret example functions")
    demo.set_defaults(run=cmd_demo)
    return p


def main(argv: Optional[list] = None) -> int:
    """Console entry point (`zygopy`); returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CliError as e:
        return _fail(str(e))
    except _lowering_errors() as e:
        return _fail(str(e))
    except Exception as e:
        if os.environ.get("ZYGOPY_TRACEBACK"):
            raise
        return _fail(f"internal error: {type(e).__name__}: {e} "
                     "(set ZYGOPY_TRACEBACK=1 for the traceback)")


def _fail(message: str) -> int:
    print(f"zygopy: {message}", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
