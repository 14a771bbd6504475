"""The library registry: every callable and array operator the JIT compiles, declared
once, with everything the compiler needs side by side.

An `Entry` is keyed by what a statement calls: a library callable (`np.sum`), the
class of callable objects (adjoint's rule objects), or a primitive's name (`"add"`)
for operators on values the core rules do not cover (arrays).  It holds, per
argument-type pattern, an `Impl`:

  * `types(ctx, stmt, argtypes) -> Type`, the type rule;
  * the native code: `lower(fc, stmt, argtypes) -> llvm value` (codegen), or, where
    `lower` is None, a plain-Python implementation that the type rule hands to
    `jit.library.python_impls.impl_call` and the JIT compiles like user code.

The entry's derivative is adjoint's rule for the same key (`adjoint.rules.lookup_callee`
/ `lookup_op`: adjoint stays the one source of derivatives, `jit.library.listing`
shows it); where the JIT runs its own plain-Python version of a rule for some
argument types, that is declared here too (`declare_pullback`).  The GPU mapping is a
table per platform (`{"cuda": "__nv_sin"}`, or "inline" for code that needs no
library).

Dispatch is by (key, pattern): the patterns of an entry are disjoint by construction
(two that match the same argument types are an error, not a priority), so the order
in which the families are imported changes nothing.  At most one impl per entry
matches everything (`pattern="any"`); it is tried when no other matches.  A miss
says which patterns were tried.

Native impls are written for 1-D and 2-D arrays of numbers.  Where an argument is an
array of 3 or more dimensions or of booleans, only impls declared `numpy_too` are
considered: the calls of numpy itself (`jit.library.numpy_calls`) and the few native
ones written for any array.  An
entry may have one host-call impl: it is also tried when the type rule of the impl
that matches refuses the argument types (numpy computes what no loop is written for).
A function and its ndarray method (`np.sum`, `a.sum()`) are one entry
(`methods=("sum",)`).

`python -m jit.library` prints the registry.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from jit.types import TypingError


def called(typing: Any, s: Any) -> Any:
    """The callable that call statement `s` calls: its constant operand, or (a function
    read from a variable: `exp = np.exp` captured by a closure) the callable type
    inference resolved it to (`Typing.calls`)."""
    head = s.args[0]
    if hasattr(head, "value"):          # a Const
        return head.value
    return typing.calls[s.var].callee


def forwarded(params: str) -> str:
    """The arguments that pass a method's parameters on to its function: `repeats,
    axis=None` gives `repeats, axis=axis` (a default written as the argument would
    pass the default whatever the caller gave)."""
    sig = ast.parse(f"def m({params}): pass").body[0].args
    first_default = len(sig.posonlyargs) + len(sig.args) - len(sig.defaults)
    out = []
    for k, a in enumerate(sig.posonlyargs + sig.args):
        by_name = k >= first_default and k >= len(sig.posonlyargs)
        out.append(f"{a.arg}={a.arg}" if by_name else a.arg)
    out += [f"*{sig.vararg.arg}"] if sig.vararg else []
    out += [f"{a.arg}={a.arg}" for a in sig.kwonlyargs]
    out += [f"**{sig.kwarg.arg}"] if sig.kwarg else []
    return ", ".join(out)


@dataclass(frozen=True)
class Impl:
    """One (pattern, type rule, native code) of an entry."""
    pattern: str
    matches: Optional[Callable]          # (ctx, stmt, argtypes) -> bool; None: any
    types: Callable
    lower: Optional[Callable] = None     # None: the plain-Python implementation
    numpy_too: bool = False              # also for arrays only numpy handles (`numpy_only`)
    ndim_max: int = 2                    # the most dimensions its native code is written for

    @property
    def native(self) -> str:
        """"python", "codegen", or what a lowering says it is ("host call")."""
        return "python" if self.lower is None else getattr(self.lower, "native", "codegen")


@dataclass
class Entry:
    """A library callable (or an operator on arrays), declared once."""
    key: Any
    name: str
    family: str
    impls: list = field(default_factory=list)
    methods: tuple = ()
    gpu: dict = field(default_factory=dict)

    def pick(self, ctx: Any, s: Any, ts: list) -> Optional[Impl]:
        """The impl whose pattern matches `ts` (None when none does).  With an array of 3
        or more dimensions or of booleans among `ts`, only the impls declared
        `numpy_too`."""
        if numpy_only(ts):          # native code written for more dimensions goes first
            wide = [i for i in self.impls if not i.numpy_too and i.matches is not None
                    and not numpy_only(ts, i.ndim_max) and i.matches(ctx, s, ts)]
            if wide:
                return wide[0]
        impls = [i for i in self.impls if i.numpy_too] if numpy_only(ts) else self.impls
        hits = [i for i in impls if i.matches is not None and i.matches(ctx, s, ts)]
        if len(hits) > 1:
            raise TypingError(f"jit: the patterns {[h.pattern for h in hits]} of {self.name} "
                              "overlap (a registry bug)")
        if hits:
            return hits[0]
        return next((i for i in impls if i.matches is None), None)

    def fallback(self, impl: Impl) -> Optional[Impl]:
        """The impl tried when `impl`'s type rule refuses the argument types: the entry's
        call of the library itself (`jit.library.numpy_calls`), if it has one."""
        return next((i for i in self.impls if i is not impl and i.native == "host call"), None)

    def tried(self) -> str:
        return "; ".join(i.pattern for i in self.impls) or "none"


class Registry:
    """Entries by key; see the module docstring."""

    def __init__(self) -> None:
        self._entries: dict = {}     # id(key) -> Entry (callables need not be hashable)
        self._by_class: dict = {}    # class -> Entry, for callable objects
        self._methods: dict = {}     # ndarray method name -> Entry
        self._pullbacks: dict = {}   # id(adjoint rule) -> [(rule, pattern, pick)]
        self._absent: list = []      # declared, but this Python or numpy lacks the callable

    # -- declaring ---------------------------------------------------------------------
    def entry(self, key: Any, *, family: str, name: Optional[str] = None,
              by_class: bool = False, methods: tuple = (),
              gpu: Optional[dict] = None) -> Entry:
        """Declare `key` (once: a second declaration is an error)."""
        table = self._by_class if by_class else self._entries
        k = key if by_class else _k(key)
        if k in table:
            raise ValueError(f"jit.library: {name or key!r} is declared twice")
        e = Entry(key, name or _name_of(key), family, methods=tuple(methods),
                  gpu=dict(gpu or {}))
        table[k] = e
        for m in methods:     # "sum", "dot(b)", or "f(params) -> arguments" (see below)
            name, _, rest = m.partition("(")
            if name in self._methods:
                raise ValueError(f"jit.library: method {name!r} is declared twice")
            params, _, args = rest.partition(") -> ")
            params = params.rstrip(")")
            self._methods[name] = (e, params, args or forwarded(params))
        return e

    def declare(self, *keys: Any, family: str, pattern: str = "any",
                matches: Optional[Callable] = None, types: Callable,
                lower: Optional[Callable] = None, numpy_too: bool = False,
                ndim_max: int = 2, **entry_args: Any) -> None:
        """Declare each of `keys` with one impl (the common case)."""
        for key in keys:
            if key is None:         # a callable this numpy or Python lacks: listed only
                name = entry_args.get("name", "?")
                e = Entry(None, name, family, gpu=dict(entry_args.get("gpu") or {}))
                self._absent.append(self.add(e, pattern, matches, types, lower, numpy_too))
                continue
            e = self.entry(key, family=family, **entry_args)
            self.add(e, pattern, matches, types, lower, numpy_too, ndim_max)

    @staticmethod
    def add(e: Entry, pattern: str, matches: Optional[Callable], types: Callable,
            lower: Optional[Callable] = None, numpy_too: bool = False,
            ndim_max: int = 2) -> Entry:
        """Add an impl for one more pattern to entry `e` (its native code written for
        arrays of up to `ndim_max` dimensions)."""
        if matches is None and any(i.matches is None for i in e.impls):
            raise ValueError(f"jit.library: {e.name} has two catch-all patterns")
        impl = Impl(pattern, matches, types, lower, numpy_too, ndim_max)
        if impl.native == "host call" and e.fallback(impl) is not None:
            raise ValueError(f"jit.library: {e.name} has two host-call impls")
        e.impls.append(impl)
        return e

    def overload(self, op: str, pattern: str, matches: Callable, types: Callable,
                 lower: Optional[Callable] = None, family: str = "operators",
                 numpy_too: bool = False, ndim_max: int = 2) -> Entry:
        """An impl of primitive `op` for the values `matches` accepts (arrays, strings,
        slices...); other values keep the core rule of `jit.typing.primitives` and
        `jit.codegen`.  The entry of a primitive gathers patterns from several
        families; they must be disjoint like any entry's."""
        e = self._entries.get(op) or self.entry(op, family=family)
        return self.add(e, pattern, matches, types, lower, numpy_too, ndim_max)

    def declare_pullback(self, rule: Any, pattern: str, pick: Callable,
                         ndim_max: int = 2) -> None:
        """The JIT's plain-Python version of adjoint derivative rule `rule`:
        `pick(argtypes)` returns it for the argument types it covers, else None (asked
        only when no array has more than `ndim_max` dimensions)."""
        picks = self._pullbacks.setdefault(id(rule), [])
        if any(r is rule and p == pattern for r, p, _, _ in picks):
            raise ValueError(f"jit.library: the JIT version of {rule!r} for {pattern} is "
                             "declared twice")
        picks.append((rule, pattern, pick, ndim_max))

    def pullback_impl(self, rule: Any, argtypes: list) -> Any:
        """The JIT's version of derivative rule `rule` for `argtypes`, or None (the
        patterns of one rule are disjoint: at most one pick answers)."""
        for r, _, pick, ndim_max in self._pullbacks.get(id(rule), ()):
            if numpy_only(argtypes, ndim_max):
                continue      # (most of the JIT's versions are for 1-D and 2-D arrays)
            impl = pick(list(argtypes)) if r is rule else None
            if impl is not None:
                return impl
        return None

    def pullbacks(self) -> list:
        return [(rule, pattern) for picks in self._pullbacks.values()
                for rule, pattern, _, _ in picks]

    # -- looking up --------------------------------------------------------------------
    def get(self, key: Any) -> Optional[Entry]:
        e = self._entries.get(_k(key))
        return e if e is not None and e.key is key or isinstance(key, str) else None

    def for_callee(self, f: Any) -> Optional[Entry]:
        """The entry of callable `f`: by identity, else by its class."""
        e = self.get(f)
        if e is not None:
            return e
        return self._by_class.get(type(f))

    def method(self, name: str) -> Optional[tuple]:
        """(entry, parameters, arguments) of ndarray method `name`, or None: `a.f(params)`
        calls the entry's function as `f(a, arguments)` (the arguments are the
        parameters unless the declaration says `"f(params) -> arguments"`)."""
        return self._methods.get(name)

    def entries(self) -> list:
        return list(self._entries.values()) + list(self._by_class.values())

    def listed(self) -> list:
        """The entries, and the declarations of callables this Python lacks (so that
        the printed registry is the same on every supported version)."""
        return self.entries() + self._absent

    # -- dispatch ----------------------------------------------------------------------
    def type_stmt(self, e: Entry, ctx: Any, s: Any, ts: list) -> Any:
        """Type `s` by the impl of `e` that matches; remember the impl for codegen."""
        _refuse_out(e, ctx, s)
        impl = e.pick(ctx, s, ts)
        if impl is None:
            ctx.fail(f"{e.name} of ({', '.join(map(str, ts))}) is not compiled (patterns "
                     f"tried: {e.tried()})")
        return self.type_with(e, impl, ctx, s, ts)

    @staticmethod
    def type_with(e: Entry, impl: Impl, ctx: Any, s: Any, ts: list) -> Any:
        """Type `s` by `impl` of `e`, or by the entry's host call (`Entry.fallback`)
        when `impl`'s type rule refuses the argument types."""
        ctx.typing.impls[s.var] = impl
        fallback = e.fallback(impl)
        if fallback is None:
            return impl.types(ctx, s, ts)
        call = ctx.typing.calls.get(s.var)
        try:
            return impl.types(ctx, s, ts)
        except TypingError as exc:      # refused by its native code: numpy's turn
            ctx.typing.impls[s.var] = fallback
            if call is not None:
                ctx.typing.calls[s.var] = call
            try:
                return fallback.types(ctx, s, ts)
            except TypingError:
                raise exc from None


def _refuse_out(e: Entry, ctx: Any, s: Any) -> None:
    """`np.exp(x, out=o)`: compiled code hands numpy read-only views and keeps its
    arrays to itself, so a result written into an argument is refused, naming it."""
    out = getattr(s, "kwargs", {}).get("out")
    if out is None or ctx.const(out, 0) is None:     # (numpy's default, out=None)
        return
    ctx.fail(f"{e.name}(..., out=...) is not compiled: assign the result instead "
             "(`o = f(x)` or `o[...] = f(x)`)")


def numpy_only(ts: Any, ndim_max: int = 2) -> bool:
    """Is an array the native impls are not written for among the types `ts` (in
    tuples too): one of more than `ndim_max` dimensions, or of booleans?"""
    from jit.types import BOOL, ArrayT, TupleT
    for t in ts:
        if isinstance(t, ArrayT) and (t.ndim > ndim_max or t.dtype == BOOL) \
                or isinstance(t, TupleT) and numpy_only(t.elems, ndim_max):
            return True
    return False


def _k(key: Any) -> Any:
    """Primitive names by value, callables by identity (they need not be hashable)."""
    return key if isinstance(key, str) else id(key)


def _name_of(key: Any) -> str:
    if isinstance(key, str):
        return key
    mod = getattr(key, "__module__", None) or ""
    qual = getattr(key, "__qualname__", None) or getattr(key, "__name__", None) or repr(key)
    if mod.startswith("numpy") or type(key).__name__ == "ufunc":
        return f"np.{getattr(key, '__name__', qual)}"
    if mod in ("math", "builtins", "operator"):
        return qual if mod == "builtins" else f"{mod}.{qual}"
    return f"{mod}.{qual}" if mod else qual


REGISTRY = Registry()
