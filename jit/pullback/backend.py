"""The runner `adjoint.api` calls for `backend="llvm"` (and first for `"auto"`).

    forward(jf, tape, args) -> (y, NativeEnv)     compiles on the first call per
                                                  (J transform, argument types)
    adjoint(jf, reader, env, dy) -> grads         one per argument of the primal IR

The interpreter's `tape`/`reader` objects the API passes are not used: the native
block inside `NativeEnv` holds the tape (see jit.pullback.runner).  A signature that
cannot be compiled raises `TypingError` (remembered, so later calls fail fast);
`errors` tells the API which exceptions mean "use the interpreter instead", and
`fallback(exc)` emits the one-time warning saying why.
"""
from __future__ import annotations

import warnings
from typing import Any

from ssair import progress
from ssair.compile_lock import compiling

from jit.pullback.runner import ForwardCode, NativeDeopt, NativeEnv
from jit.runtime import host_pullbacks as handles
from jit.runtime.host_pullbacks import ResultTypeNeeded
from jit.types import INT64_MAX, INT64_MIN, TypingError, typeof

_SCALARS = (float, int, bool)


class JitFallbackWarning(RuntimeWarning):
    """backend="auto" ran a pullback in the interpreter because the JIT cannot
    compile it; the message says why."""


class InterpEnv:
    """The env of a forward that left the native types (int64 overflow) and ran in
    the interpreter; its adjoint runs there too."""

    __slots__ = ("env",)

    def __init__(self, env: Any) -> None:
        self.env = env


class LLVMBackend:
    """Compiled forward/adjoint for `adjoint.pullback(..., backend="llvm")`."""

    errors = (TypingError, NativeDeopt)

    def __init__(self) -> None:
        self.codes: dict = {}
        self.warned: set = set()
        self.learned: set = set()     # (J transform, missing result type) learned once

    @staticmethod
    def typed_ir(ir: Any, values: tuple) -> Any:
        """`ir` with the calls its types make static rewritten (`pullback` of a function
        value: `jit.pullback.nested_gradient.typed_ir`), before it is differentiated."""
        from jit.pullback.nested_gradient import typed_ir
        return typed_ir(ir, values)

    def code_for(self, jf: Any, args: tuple) -> ForwardCode:
        """The compiled forward for these argument values (cached; failures too)."""
        if any(type(a) is int and not INT64_MIN <= a <= INT64_MAX for a in args):
            raise NativeDeopt("an integer argument does not fit in int64")
        key = (id(jf), tuple(map(type, args)))
        if not all(type(a) in _SCALARS for a in args):
            key = (id(jf), tuple(typeof(a) for a in args))
        hit = self.codes.get(key)
        if hit is None or hit[0] is not jf:
            hit = self._compile(key, jf, args)
        if isinstance(hit[1], str):  # a refusal: a fresh exception (a stored one
            raise TypingError(hit[1])  # would keep the frames it passed alive)
        return hit[1]

    @compiling
    def _compile(self, key: tuple, jf: Any, args: tuple) -> tuple:
        """`codes[key]`, compiled by the first thread that asks: (jf, the code or the
        message of a refusal); raises what the contract says is raised at once."""
        hit = self.codes.get(key)
        if hit is not None and hit[0] is jf:
            return hit
        primal = jf.primal
        progress.label(f"gradient of {primal.name} ({primal.file}:{primal.firstline})", True)
        try:
            argtypes = tuple(typeof(a) for a in args)
            with handles.learning():
                code = ForwardCode(jf, argtypes)
        except ResultTypeNeeded:
            raise      # not remembered: an interpreted run teaches the type
        except TypingError as e:
            self.codes[key] = (jf, str(e))
            raise
        except _unsupported():
            raise      # the contract on every backend: the construct, function and line
        except (RecursionError, KeyError, ValueError, TypeError, AttributeError) as e:
            msg = f"jit: cannot compile {jf.primal.name}: {type(e).__name__}: {e}"
            self.codes[key] = (jf, msg)
            raise TypingError(msg) from None
        hit = self.codes[key] = (jf, code)
        return hit

    def forward(self, jf: Any, tape: Any, args: tuple) -> tuple:
        try:
            code = self.code_for(jf, args)
        except ResultTypeNeeded as need:
            return self._learn_result_types(jf, tape, args, need)
        except NativeDeopt:  # a value beyond int64: exact Python semantics instead
            return self._interpreted(jf, tape, args)
        start = handles.mark()
        try:
            y, blk = code.call(*args)
        except NativeDeopt:
            handles.release(handles.claim(start))
            return self._interpreted(jf, tape, args)
        except BaseException:
            handles.release(handles.claim(start))
            raise
        return y, NativeEnv(blk, code, args, handles.claim(start))

    def _interpreted(self, jf: Any, tape: Any, args: tuple) -> tuple:
        from ssair import interpret
        y, env = interpret(jf.forward, tape, *args)
        return y, InterpEnv(env)

    def _learn_result_types(self, jf: Any, tape: Any, args: tuple, need: Exception):
        """This call in the interpreter, recording what the callees compiled code
        calls through the interpreter return; the next call compiles.  (Warned when
        a run did not teach the missing type: the call was not reached.)"""
        if (id(jf), str(need)) in self.learned:
            self.fallback(TypingError(f"{need} (no interpreted run has reached the call)"))
        self.learned.add((id(jf), str(need)))
        with handles.observing(need.functions):
            return self._interpreted(jf, tape, args)

    def adjoint(self, jf: Any, reader: Any, env: Any, dy: Any) -> tuple:
        if type(env) is InterpEnv:
            from ssair import interpret
            return interpret(jf.adjoint, reader, env.env, dy)
        try:
            code = env.code.adjoint_for(dy)
        except TypingError as e:
            return self._adjoint_in_interpreter(jf, env, dy, e)
        if not env.code.host_pullbacks:
            return code.call(env.blk, dy)
        start = handles.mark()      # (a checkpointed loop's recompute makes handles)
        try:
            return code.call(env.blk, dy)
        finally:
            env.handles = list(env.handles) + handles.claim(start)

    def _adjoint_in_interpreter(self, jf: Any, env: NativeEnv, dy: Any, why: Exception):
        """A `dy` whose type the compiled adjoint cannot take: rerun the forward in
        the interpreter (its inputs are unchanged unless the function writes into
        arrays) and run the adjoint there."""
        from adjoint.tape import Tape
        from ssair import interpret
        if env.code.typing.writes:
            raise why
        self.fallback(why)
        tape = Tape()
        _, ienv = interpret(jf.forward, tape, *env.args)
        return interpret(jf.adjoint, tape.reader(), ienv, dy)

    def fallback(self, exc: BaseException) -> None:
        """Warn once per reason that backend="auto" uses the interpreter."""
        why = str(exc).split("\n")[0]
        if why in self.warned or isinstance(exc, NativeDeopt):
            return
        self.warned.add(why)
        warnings.warn(f"zygopy: pullback runs in the interpreter, the JIT cannot "
                      f"compile it: {why}", JitFallbackWarning, stacklevel=4)


def _unsupported() -> type:
    try:
        from lowering import UnsupportedError
    except ImportError:  # pragma: no cover
        return TypingError
    return UnsupportedError


BACKEND = LLVMBackend()


def pullback_code(f: Any, args: tuple) -> ForwardCode:
    """The compiled forward (with its default adjoint) of `f` for these arguments."""
    from adjoint.api import _copy_in, _prepare
    from adjoint.transform import activity_of, arg_types, transform
    ir, free = _prepare(f, args)
    all_args = free + tuple(_copy_in(a) for a in args)
    jf = transform(ir, activity_of(all_args), arg_types(all_args))
    return BACKEND.code_for(jf, all_args)


def stage_listing(kind: str, stage: str, f: Any, args: tuple) -> str:
    """The `kind` listing ("typed", "llvm", "llvm-raw", "native") of the compiled
    forward, adjoint or both ("pullback") of `f` for these arguments."""
    from jit.runtime import native as runtime
    code = pullback_code(f, args)
    parts = [code] if stage == "forward" else [code.default_adjoint] if stage == "adjoint" \
        else [code, code.default_adjoint]
    out = []
    for c in parts:
        if kind == "typed":
            out.append(str(c.typing.ir))
        elif kind == "llvm":
            out.append(str(c.module))
        elif kind == "llvm-raw":
            out.append(c.llvm_text)
        else:
            out.append(runtime.native_assembly(c.module))
    return "\n\n".join(out)


def register() -> None:
    """Make `backend="llvm"` (and `"auto"`) use the compiled pullbacks."""
    try:
        from adjoint.api import register_backend
    except ImportError:
        return
    register_backend("llvm", BACKEND)
