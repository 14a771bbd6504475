"""The `zygopy` command line.

    zygopy demo                                    every stage on the paper's examples
    zygopy cache info|clear [FOLDER ...]           the disk cache of compiled code
    zygopy show FILE.py:FUNC [--stage S] [--args A ...] [--dot [OUT]] [--svg OUT]
    zygopy grad FILE.py:FUNC ARGS... [--backend auto|interp|llvm] [--dot [OUT]] [--svg OUT]

Stages (`jit.cli.stages.STAGES`): lowered, optimized, typed, adjoint, llvm, native, ptx;
all but the first two specialise on argument values given with `--args`.  Arguments
are Python literals, lists becoming numpy arrays (`jit.cli.args`).  `--dot` writes the
control-flow graph as Graphviz DOT (to stdout, or to OUT), `--svg OUT` renders it with
the `dot` program.  User mistakes (a bad path, a missing function, a bad argument, a
construct the lowering refuses, an error raised by the function) print one line on
stderr and exit with status 2, never a traceback (`ZYGOPY_TRACEBACK=1` shows it).
"""
from __future__ import annotations

import argparse
import inspect
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from jit.cli.cache import add_parser as add_cache_parser
from jit.cli.args import format_call, format_value, load_function, parse_args
from jit.cli.stages import STAGES, CliError, stage

EXIT_USAGE = 2


def _user_errors() -> tuple:
    """Exception classes that mean 'this function cannot go through this stage'."""
    found = []
    try:
        import lowering
        found.append(getattr(lowering, "UnsupportedError", None))
    except ImportError:
        pass
    try:
        import jit
        found.append(getattr(jit, "TypingError", None))
    except ImportError:
        pass
    return tuple(e for e in found if isinstance(e, type))


# -- zygopy show -----------------------------------------------------------------------

def cmd_show(args: argparse.Namespace) -> int:
    _check_svg(args)
    f = load_function(args.target)
    st = stage(args.stage)
    values = parse_args(args.args or [])
    if st.needs_args and args.args is None:
        raise CliError(f"stage {st.name!r} specialises on argument values: give them with "
                       f"--args (e.g. --args 2.0 3)")
    listing = _run(lambda: st.listing(f, values), f"stage {st.name} of {f.__name__}")
    graphs = None
    if args.dot is not None or args.svg:
        graphs = _run(lambda: st.graphs(f, values), f"stage {st.name} of {f.__name__}")
    if args.dot != "-":
        print(listing)
    _write_graphs(args, graphs, f"{f.__name__}_{st.name}")
    return 0


def _run(thunk: Callable[[], Any], what: str) -> Any:
    """Run a stage; an exception the user's code or arguments cause becomes a CliError."""
    try:
        return thunk()
    except (CliError, *_user_errors()):
        raise
    except (ArithmeticError, LookupError, TypeError, ValueError, RecursionError) as e:
        if os.environ.get("ZYGOPY_TRACEBACK"):
            raise
        first = str(e).splitlines()[0] if str(e) else ""
        raise CliError(f"{what}: {type(e).__name__}: {first}") from e


# -- --dot / --svg -------------------------------------------------------------------------

def _write_graphs(args: argparse.Namespace, graphs: list | None, name: str) -> None:
    if graphs is None:
        return
    from ssair.dot import to_dot
    text = to_dot(*graphs, name=name)
    if args.dot == "-":
        sys.stdout.write(text)
    elif args.dot is not None:
        _write_file(args.dot, text)
    if args.svg:
        render_svg(text, args.svg)


def _write_file(path: str, text: str) -> None:
    try:
        with open(path, "w") as fh:
            fh.write(text)
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror}")


def _check_svg(args: argparse.Namespace) -> None:
    """Fail before any output when --svg cannot work."""
    if args.svg and shutil.which("dot") is None:
        raise CliError("--svg needs the Graphviz 'dot' program, which is not installed "
                       "(apt install graphviz); --dot writes the DOT text without it")


def render_svg(dot_text: str, path: str) -> None:
    """Render DOT text to an SVG file with Graphviz's `dot` program."""
    exe = shutil.which("dot")
    if exe is None:
        raise CliError("--svg: the Graphviz 'dot' program is not installed")
    proc = subprocess.run([exe, "-Tsvg", "-o", path], input=dot_text, text=True, check=False,
                          capture_output=True, timeout=60)
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["failed"])[0]
        raise CliError(f"dot -Tsvg {path}: {first}")


# -- zygopy grad -------------------------------------------------------------------------

def cmd_grad(args: argparse.Namespace) -> int:
    from jit.cli.gradients import run_gradient
    _check_svg(args)
    f = load_function(args.target)
    values = parse_args(args.values)
    call = format_call(f, values)
    res = _run(lambda: run_gradient(f, values, args.backend), call)
    if args.dot != "-":
        _print_gradient(f, call, values, res)
    if args.dot is not None or args.svg:
        graphs = _run(lambda: STAGES["adjoint"].graphs(f, values), call)
        _write_graphs(args, graphs, f"{f.__name__}_adjoint")
    return 0


def _print_gradient(f: Callable, call: str, values: tuple, res: Any) -> None:
    print(f"{call} = {format_value(res.value)}")
    note = f"  ({res.reason})" if res.reason else ""
    print(f"gradient (backend {res.backend}){note}:")
    for name, g, v in zip(_param_names(f, len(values)), res.grads, values):
        why = f"  (not differentiable: {type(v).__name__})" if g is None else ""
        print(f"  d/d{name} = {format_value(g)}{why}")


def _param_names(f: Callable, n: int) -> list:
    try:
        names = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        names = []
    return (names + [f"arg{i}" for i in range(len(names), n)])[:n]


# -- zygopy demo -------------------------------------------------------------------------

def cmd_demo(args: argparse.Namespace) -> int:
    from jit.cli.demo import run_demo
    return run_demo(timing=not args.no_timing)


# -- entry point -------------------------------------------------------------------------

def _add_dot_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dot", nargs="?", const="-", default=None, metavar="OUT",
                   help="write the control-flow graph as Graphviz DOT (stdout, or OUT)")
    p.add_argument("--svg", metavar="OUT", help="render the CFG to OUT with Graphviz 'dot'")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zygopy", description="Differentiate ordinary Python: "
                                "SSA IR, the Zygote J transform and an llvmlite JIT.")
    sub = p.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print one stage of FILE.py:FUNC")
    show.add_argument("target", metavar="FILE.py:FUNC")
    show.add_argument("--stage", choices=list(STAGES), default="lowered",
                      help="; ".join(f"{s.name}: {s.help}" for s in STAGES.values()))
    show.add_argument("--args", nargs="*", metavar="ARG",
                      help="argument values (Python literals; [lists] are numpy arrays)")
    _add_dot_options(show)
    show.set_defaults(run=cmd_show)
    grad = sub.add_parser("grad", help="value and gradient of FILE.py:FUNC at ARGS")
    grad.add_argument("target", metavar="FILE.py:FUNC")
    grad.add_argument("values", nargs="*", metavar="ARG")
    grad.add_argument("--backend", choices=["auto", "interp", "llvm"], default="auto")
    _add_dot_options(grad)
    grad.set_defaults(run=cmd_grad)
    demo = sub.add_parser("demo", help="every stage on the paper's pow and leaky ReLU")
    demo.add_argument("--no-timing", action="store_true", help="skip the speed comparison")
    demo.set_defaults(run=cmd_demo)
    add_cache_parser(sub)
    return p


def main(argv: list | None = None) -> int:
    """Console entry point (`zygopy`); returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CliError as e:
        return _fail(str(e))
    except _user_errors() as e:
        return _fail(str(e))
    except Exception as e:
        if os.environ.get("ZYGOPY_TRACEBACK"):
            raise
        return _fail(f"internal error: {type(e).__name__}: {e} "
                     "(set ZYGOPY_TRACEBACK=1 for the traceback)")


def _fail(message: str) -> int:
    first = message.splitlines()[0] if message else "error"
    print(f"zygopy: {first}", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
