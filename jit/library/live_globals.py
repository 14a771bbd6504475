"""Globals the program itself rebinds (`global n; n += 1` in the loss or in a helper of
its module): lowering reads them when the statement runs (`lowering.runtime.read_global`
of a `GlobalRef`) instead of as constants, and writes them with `write_global`, which
compiled code calls for its effect (`jit.library.escape_hatch`).

A read is a host call.  Its type is the type of the value bound when the function is
compiled (a number, a string, an array, ...); a value of another type at run time
leaves compiled code (`NativeDeopt`), and the interpreter runs the call, as for a
call site that runs in Python.  A read of a name that is not bound raises CPython's
NameError.  Globals are never differentiated: the value read is a constant of the
derivative (`adjoint.rules_math`).

An entry of a global dict that the program may write into (`CONFIG["l2"]` where some
function stores into `CONFIG`: `lowering.guards.sealed_dict`) is read the same way
(`read_entry` of an `EntryRef`); a removed entry raises CPython's KeyError."""
from __future__ import annotations

from lowering.runtime import read_entry, read_global

from jit.codegen.host_calls import call_host, operand_recipe
from jit.library.registry import REGISTRY
from jit.runtime import host_calls as host
from jit.runtime.host_pullbacks import checked_result
from jit.codegen.function import const_value
from jit.typing.infer import Context, LiteralT
from jit.types import NONE, Type, TypingError, typeof


def _ref(s):
    return s.args[1].value


def _t_read_global(ctx: Context, s, ts: list) -> Type:
    ref = _ref(s)
    try:
        value = read_global(ref)
    except NameError:
        ctx.fail(f"the global {ref.name!r}, which the program rebinds, is not bound when "
                 "the function is compiled")
    try:
        return typeof(value)
    except TypingError as exc:
        ctx.fail(f"the global {ref.name!r} holds a value compiled code cannot read: {exc}")


def _cg_read_global(fc, s, ts):
    ref, want = _ref(s), s.type
    name = f"global {ref.name}"

    def read(r):
        return checked_result(read_global(r), want, name)
    read.__qualname__ = name
    recipe, values = operand_recipe(fc, [s.args[1]])
    return call_host(fc, host.HostSite(read, name, recipe, (), want), values)


_cg_read_global.native = "host call"

REGISTRY.declare(read_global, family="runtime checks", pattern="a global the program rebinds",
                 types=_t_read_global, lower=_cg_read_global, numpy_too=True)


def _t_read_entry(ctx: Context, s, ts: list) -> Type:
    ref = _ref(s)
    try:
        return typeof(read_entry(ref))
    except (KeyError, TypingError) as exc:
        ctx.fail(f"the entry {ref.key!r} of a global dict cannot be read by compiled code "
                 f"({type(exc).__name__}: {exc})")


def _cg_read_entry(fc, s, ts):
    """A host call reading the entry; a string entry (a constant of the compiled code,
    whose branches on it are folded) is only checked to be the same string."""
    ref, want = _ref(s), s.type
    name = f"entry {ref.key!r} of a global dict"
    literal = isinstance(want, LiteralT)

    def read(r):
        y = checked_result(read_entry(r), want, name)
        return None if literal else y
    read.__qualname__ = name
    recipe, values = operand_recipe(fc, [s.args[1]])
    got = call_host(fc, host.HostSite(read, name, recipe, (), NONE if literal else want),
                    values)
    return const_value(ref.mapping[ref.key], want) if literal else got


_cg_read_entry.native = "host call"

REGISTRY.declare(read_entry, family="runtime checks",
                 pattern="an entry of a global dict the program may write into",
                 types=_t_read_entry, lower=_cg_read_entry, numpy_too=True)
