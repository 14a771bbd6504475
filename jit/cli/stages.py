"""The stages `zygopy show` can print, and the control-flow graphs `--dot` draws.

`STAGES` maps a stage name to a `Stage`: a function `(f, args) -> listing` (anything
whose `str()` is the text) and one `(f, args) -> [IR, ...]` giving the CFGs to draw.
A stage whose provider is not in this build (the CUDA `ptx` stage until `jit.code_ptx`
exists, or where the CUDA toolchain is missing) raises `CliError` with one line saying
so.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


@dataclass(frozen=True)
class Stage:
    """One `--stage` value: what it prints, what it draws, whether it needs `--args`."""

    name: str
    listing: Callable
    graphs: Callable
    needs_args: bool
    help: str


def _lowering() -> Any:
    import lowering
    if not hasattr(lowering, "lower"):
        raise CliError("the lowering stage is not available in this build")
    return lowering


def lowered_ir(f: Callable, args: tuple | None = None) -> Any:
    return _lowering().lower(f)


def optimized_ir(f: Callable, args: tuple | None = None) -> Any:
    try:
        from ssair.passes import optimize
    except ImportError:
        raise CliError("stage 'optimized' is not available yet (no ssair.passes.optimize)")
    return optimize(lowered_ir(f))


def _jit_api(name: str) -> Callable:
    try:
        import jit
    except ImportError as e:
        raise CliError(f"the JIT is not available in this build ({e})")
    fn = getattr(jit, name, None)
    if fn is None:
        raise CliError(f"this build has no jit.{name} yet")
    return fn


def _code_adjoint() -> Callable:
    try:
        import adjoint
    except ImportError as e:
        raise CliError(f"the adjoint stage is not available in this build ({e})")
    fn = getattr(adjoint, "code_adjoint", None)
    if fn is None:
        raise CliError("this build has no adjoint.code_adjoint yet")
    return fn


def typed_listing(f: Callable, args: tuple) -> Any:
    return _jit_api("code_typed")(f, *args)


def llvm_listing(f: Callable, args: tuple) -> Any:
    return _jit_api("code_llvm")(f, *args)


def native_listing(f: Callable, args: tuple) -> Any:
    return _jit_api("code_native")(f, *args)


def ptx_listing(f: Callable, args: tuple) -> Any:
    try:
        import jit
    except ImportError:
        jit = None
    code_ptx = getattr(jit, "code_ptx", None)
    if code_ptx is None:
        raise CliError("stage 'ptx' is not available yet: this build has no CUDA backend "
                       "(jit.code_ptx)")
    try:
        return code_ptx(f, *args)
    except (ImportError, OSError, RuntimeError) as e:
        first = str(e).splitlines()[0] if str(e) else ""
        raise CliError(f"stage 'ptx': the CUDA toolchain is not usable here: "
                       f"{type(e).__name__}: {first}") from e


def adjoint_listing(f: Callable, args: tuple) -> Any:
    return _code_adjoint()(f, *args)


def tangent_listing(f: Callable, args: tuple) -> Any:
    from adjoint.forward import code_tangent
    return code_tangent(f, *args)


def tangent_irs(f: Callable, args: tuple) -> list:
    return [tangent_listing(f, args).ir]


def typed_ir(f: Callable, args: tuple) -> Any:
    """The IR the JIT specialises (types set), for drawing; the lowered IR when the
    JIT's inference is not reachable."""
    try:
        import jit
        d = jit.api.dispatcher_for(f)
        return jit.infer(d.get_ir(), d.signature(args)).ir
    except (ImportError, AttributeError):
        return lowered_ir(f)


def adjoint_irs(f: Callable, args: tuple) -> list:
    code = _code_adjoint()(f, *args)
    return [code.forward, code.adjoint]


def _one(fn: Callable) -> Callable:
    return lambda f, args: [fn(f, args)]


STAGES: dict = {s.name: s for s in [
    Stage("lowered", lowered_ir, _one(lowered_ir), False, "the SSA IR lowered from bytecode"),
    Stage("optimized", optimized_ir, _one(optimized_ir), False,
          "after ssair.passes.optimize"),
    Stage("typed", typed_listing, _one(typed_ir), True, "every value with its inferred type"),
    Stage("adjoint", adjoint_listing, adjoint_irs, True,
          "forward IR (dummy phis, tape pushes) and adjoint IR"),
    Stage("tangent", tangent_listing, tangent_irs, True,
          "forward mode: each statement followed by its tangent (jvp)"),
    Stage("llvm", llvm_listing, _one(typed_ir), True, "the optimised LLVM IR"),
    Stage("native", native_listing, _one(typed_ir), True, "the machine code"),
    Stage("ptx", ptx_listing, _one(typed_ir), True, "CUDA PTX of the primal and gradient kernels (jit.code_ptx)"),
]}


def stage(name: str) -> Stage:
    try:
        return STAGES[name]
    except KeyError:
        raise CliError(f"unknown stage {name!r} (one of {', '.join(STAGES)})") from None
