"""The IR parser: reads exactly the text that `ssair.printer.format_ir` prints.

    parse(format_ir(ir))  prints back identically:  format_ir(parse(t)) == t

The grammar is the printer's docstring.  A listing is a header line followed by
blocks; a block's first line starts with its id and a glyph (`─`, or `┄` for a block
with several predecessors; the glyph is recomputed on printing, so it is not checked),
its other lines start with `│` or `└`.  Each row holds one phi, statement or
terminator, optionally followed by a `# name @ line` annotation.

`goto #F if not %c` jumps to `#F` when `%c` is false; its true target is the next block
in layout unless a `goto #T` row follows in the same block.

Constants `@dotted.name` are resolved by importing the longest importable module
prefix and following attributes (`@math.sin`, `@numpy.dot`, `@numpy`); a single name
that is not a module is looked up in `builtins` (`@len`).  A name that does not
resolve, or that resolves to an object printing under another name, becomes a
`Symbol`, which prints back as the same text.  Types after `::` become `TypeName`s
unless a resolver registered with `register_type_resolver` recognises the text.

Malformed input raises `ParseError` naming the line number and the offending text.
The parser checks syntax only; `ssair.verifier.verify` checks the semantics, so
broken-but-well-formed IR (missing targets, undefined values) parses fine.
"""
from __future__ import annotations

import ast
import builtins
import importlib
import re
from collections.abc import Callable
from typing import Any

from .ir import IR, Arg, Block, Branch, Const, Goto, Phi, Raise, Return, Stmt, Var


class ParseError(ValueError):
    """Malformed IR text; the message starts with `line N:`."""


class Symbol:
    """An object constant whose dotted name did not resolve to a Python object.

    It prints back as `@name` (the printer reads `__zygopy_symbol__`).  `target` holds
    the object the name resolved to when that object prints under another name.
    Calling a Symbol raises `NameError`, so running IR that uses one fails loudly.
    """

    def __init__(self, name: str, target: Any = None):
        self.__zygopy_symbol__ = name
        self.target = target

    @property
    def name(self) -> str:
        return self.__zygopy_symbol__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Symbol) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("Symbol", self.name))

    def __repr__(self) -> str:
        return f"Symbol({self.name!r})"

    def __call__(self, *args, **kwargs):
        raise NameError(f"unresolved IR constant @{self.name}")


class TypeName(str):
    """A type read from `::text` that no registered resolver recognised; `str()` gives
    the text back, so it prints identically."""

    def __repr__(self) -> str:
        return f"TypeName({str.__repr__(self)})"


_TYPE_RESOLVERS: list = []


def register_type_resolver(fn: Callable[[str], Any]) -> None:
    """Let `fn(text)` turn type text into a type object (or return None to decline).
    The object's `str()` must give `text` back, or round trips break."""
    _TYPE_RESOLVERS.append(fn)


def parse_type(text: str) -> Any:
    """The type for `::text`: the first resolver's answer, else a `TypeName`."""
    for fn in reversed(_TYPE_RESOLVERS):
        t = fn(text)
        if t is not None:
            return t
    return TypeName(text)


def resolve_symbol(name: str) -> Any:
    """The object `@name` denotes, or a `Symbol` when it does not resolve to an object
    that prints as `@name`."""
    from .printer import object_name
    obj = _lookup(name)
    if obj is _MISSING:
        return Symbol(name)
    try:
        same = object_name(obj) == name
    except (AttributeError, TypeError):
        same = False
    return obj if same else Symbol(name, obj)


_MISSING = object()


def _lookup(name: str) -> Any:
    parts = name.split(".")
    if not all(p.isidentifier() for p in parts):
        return _MISSING
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except Exception:  # noqa: BLE001, S112 - importing runs arbitrary module code
            continue
        return _getattrs(obj, parts[k:])
    if hasattr(builtins, parts[0]):
        return _getattrs(builtins, parts)
    return _MISSING


def _getattrs(obj: Any, names: list) -> Any:
    for n in names:
        try:
            obj = getattr(obj, n)
        except AttributeError:
            return _MISSING
    return obj


# -- the row scanner -------------------------------------------------------------
_INT = re.compile(r"-?\d+")
_NUMBER = re.compile(r"-?(?:inf|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_OPNAME = re.compile(r"[A-Za-z_][\w.]*")
_SYMBOL = re.compile(r"[^\s,()]+")
_ARGNAME = re.compile(r"[^\s,:()\[\]]+")
_KWARG = re.compile(r"([A-Za-z_]\w*)=(?!=)")
_ANNOT_LINE = re.compile(r"(?:(.*?) )?@ (-?\d+)")
_WORDS = {"True": True, "False": False, "None": None}


class _Scanner:
    """A cursor over one line of text; errors name the line number."""

    def __init__(self, text: str, lineno: int, pos: int = 0):
        self.text, self.lineno, self.pos = text, lineno, pos

    def error(self, msg: str) -> ParseError:
        return ParseError(f"line {self.lineno}: {msg} at column {self.pos + 1}: {self.text!r}")

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def peek(self, s: str) -> bool:
        return self.text.startswith(s, self.pos)

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str) -> None:
        if not self.accept(s):
            raise self.error(f"expected {s!r}")

    def match(self, pattern: re.Pattern, what: str) -> str:
        m = pattern.match(self.text, self.pos)
        if m is None:
            raise self.error(f"expected {what}")
        self.pos = m.end()
        return m.group(0)

    def integer(self, what: str = "an integer") -> int:
        return int(self.match(_INT, what))

    def var(self) -> Var:
        self.expect("%")
        return Var(self.integer("a value number after '%'"))

    def block_ref(self) -> int:
        self.expect("#")
        return self.integer("a block number after '#'")

    # operands and constants
    def operand(self) -> Any:
        if self.peek("%"):
            return self.var()
        return Const(self.constant())

    def constant(self) -> Any:
        c = self.text[self.pos:self.pos + 1]
        if c == "@":
            self.pos += 1
            return resolve_symbol(self.match(_SYMBOL, "a name after '@'"))
        if c == "(":
            return self.tuple_const()
        if c in "'\"" or (c == "b" and self.text[self.pos + 1:self.pos + 2] in ("'", '"')):
            return self.string_const()
        m = _NUMBER.match(self.text, self.pos)
        if m is not None:
            self.pos = m.end()
            t = m.group(0)
            return float(t) if any(ch in t for ch in ".eEinfa") else int(t)
        m = _IDENT.match(self.text, self.pos)
        if m is not None and m.group(0) in _WORDS:
            self.pos = m.end()
            return _WORDS[m.group(0)]
        raise self.error("expected an operand (%n, a literal or @name)")

    def tuple_const(self) -> tuple:
        self.expect("(")
        items = []
        while not self.accept(")"):
            items.append(self.constant())
            if self.accept(","):
                self.skip_ws()
            elif not self.peek(")"):
                raise self.error("expected ',' or ')' in a tuple constant")
        return tuple(items)

    def string_const(self) -> Any:
        start = self.pos
        if self.text[self.pos] == "b":
            self.pos += 1
        quote = self.text[self.pos]
        self.pos += 1
        while self.pos < len(self.text) and self.text[self.pos] != quote:
            self.pos += 2 if self.text[self.pos] == "\\" else 1
        if self.pos >= len(self.text):
            raise self.error("unterminated string constant")
        self.pos += 1
        try:
            return ast.literal_eval(self.text[start:self.pos])
        except (ValueError, SyntaxError) as e:
            raise self.error(f"bad string constant ({e})") from None

    def type_text(self, stops: str) -> str:
        """Text up to a depth-0 character in `stops`, or an annotation, or the end."""
        start, depth = self.pos, 0
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if depth == 0 and (c in stops or (c in " \t" and _annotation_follows(self.text, self.pos))):
                break
            depth += (c in "([{") - (c in ")]}")
            self.pos += 1
        if self.pos == start:
            raise self.error("expected a type after '::'")
        return self.text[start:self.pos]

    def opt_type(self, stops: str = "") -> Any:
        return parse_type(self.type_text(stops)) if self.accept("::") else None


def _annotation_follows(text: str, pos: int) -> bool:
    return text[pos:].lstrip(" \t").startswith("#")


# -- rows ----------------------------------------------------------------------------
def _annotation(sc: _Scanner) -> tuple:
    """`# name @ line`, `# name`, `# @ line` or nothing -> (name, line)."""
    sc.skip_ws()
    if sc.at_end():
        return None, None
    sc.expect("#")
    rest = sc.text[sc.pos:].strip()
    m = _ANNOT_LINE.fullmatch(rest)
    if m is None:
        return rest, None
    return m.group(1), int(m.group(2))


def _definition(sc: _Scanner) -> Any:
    var = sc.var()
    sc.skip_ws()
    sc.expect("=")
    sc.skip_ws()
    if sc.accept("φ"):
        sc.skip_ws()
        d = Phi(var, _phi_incoming(sc))
    else:
        op = sc.match(_OPNAME, "an op name or 'φ'")
        args, kwargs = _call_operands(sc)
        d = Stmt(var, op, args, kwargs)
    d.type = sc.opt_type()
    d.name, d.line = _annotation(sc)
    return d


def _phi_incoming(sc: _Scanner) -> dict:
    sc.expect("(")
    incoming = {}
    while not sc.accept(")"):
        b = sc.block_ref()
        if b in incoming:
            raise sc.error(f"phi lists block #{b} twice")
        sc.skip_ws()
        sc.expect("=>")
        sc.skip_ws()
        incoming[b] = sc.operand()
        _list_sep(sc, "phi")
    return incoming


def _call_operands(sc: _Scanner) -> tuple:
    sc.expect("(")
    args, kwargs = [], {}
    while not sc.accept(")"):
        m = _KWARG.match(sc.text, sc.pos)
        if m is not None:
            sc.pos = m.end()
            kwargs[m.group(1)] = sc.operand()
        elif kwargs:
            raise sc.error("positional operand after a keyword operand")
        else:
            args.append(sc.operand())
        _list_sep(sc, "operand list")
    return args, kwargs


def _list_sep(sc: _Scanner, what: str) -> None:
    if sc.accept(","):
        sc.skip_ws()
    elif not sc.peek(")"):
        raise sc.error(f"expected ',' or ')' in the {what}")


def _terminator(sc: _Scanner) -> Any:
    """A terminator row; a Branch's `then` is None until the block is complete."""
    if sc.accept("return"):
        sc.skip_ws()
        t = Return(sc.operand())
    elif sc.accept("raise"):
        sc.skip_ws()
        t = Raise(sc.operand())
    elif sc.accept("goto"):
        sc.skip_ws()
        target = sc.block_ref()
        sc.skip_ws()
        if sc.accept("if not"):
            sc.skip_ws()
            t = Branch(sc.operand(), None, target)
        elif sc.accept("unwind"):
            sc.skip_ws()
            t = Goto(target, unwind=sc.block_ref())
        else:
            t = Goto(target)
    elif sc.accept("<no terminator>"):
        t = None
    else:
        raise sc.error("expected '%n = ...', 'goto', 'return' or 'raise'")
    _, t_line = _annotation(sc)
    if t is not None:
        t.line = t_line
    return t


# -- header and blocks -------------------------------------------------------------
def _header(ir: IR, sc: _Scanner) -> None:
    sc.expect("function ")
    start = sc.pos
    while not sc.at_end() and sc.text[sc.pos] not in "[(":
        sc.pos += 1
    ir.name = sc.text[start:sc.pos]
    if not ir.name:
        raise sc.error("expected a function name")
    if sc.peek("["):
        ir.args += _arg_list(sc, "[", "]")
        ir.nfree = len(ir.args)
        if ir.nfree == 0:
            raise sc.error("empty free-variable list '[]' (the printer omits it)")
    params = _arg_list(sc, "(", ")")
    for k, a in enumerate(params):
        if a.name.startswith("**"):
            a.name = a.name[2:]
            ir.meta["varkw"] = k
        elif a.name.startswith("*"):
            a.name = a.name[1:]
            ir.meta["varargs"] = k
    ir.args += params
    if sc.at_end():
        return
    sc.expect(" @ ")
    loc = sc.text[sc.pos:]
    file, colon, line = loc.rpartition(":")
    if not colon or not _INT.fullmatch(line):
        raise sc.error("expected ' @ FILE:LINE'")
    ir.file, ir.firstline = file, int(line)


def _arg_list(sc: _Scanner, open_: str, close: str) -> list:
    sc.expect(open_)
    args = []
    while not sc.accept(close):
        var = sc.var()
        sc.expect(" ")
        name = sc.match(_ARGNAME, "an argument name")
        args.append(Arg(var, name, sc.opt_type(",)]")))
        if sc.accept(","):
            sc.skip_ws()
        elif not sc.peek(close):
            raise sc.error(f"expected ',' or {close!r} in the argument list")
    return args


_BLOCK_START = re.compile(r"(-?\d+)\s*[─┄] ")
_CONT_START = re.compile(r"(│\s*|└─+ )")


class _BlockBuilder:
    """Collects the rows of one block and checks their order."""

    def __init__(self, block: Block, lineno: int):
        self.block, self.lineno = block, lineno
        self.has_term = False
        self.last = False

    def add_row(self, sc: _Scanner) -> None:
        b = self.block
        if self.last:
            raise sc.error(f"block #{b.id} continues after its '└' line")
        if sc.peek("%"):
            if self.has_term:
                raise sc.error(f"block #{b.id}: definition after the terminator")
            d = _definition(sc)
            (b.phis if isinstance(d, Phi) else b.stmts).append(d)
            if isinstance(d, Phi) and b.stmts:
                raise sc.error(f"block #{b.id}: phi %{d.var.id} after a statement")
            return
        self.add_term(sc)

    def add_term(self, sc: _Scanner) -> None:
        b = self.block
        start = sc.pos
        t = _terminator(sc)
        if not self.has_term:
            b.term, self.has_term = t, True
            return
        if isinstance(b.term, Branch) and b.term.then is None and isinstance(t, Goto):
            b.term.then = t.target
            return
        sc.pos = start
        raise sc.error(f"block #{b.id} has a second terminator")

    def finish(self, next_id: int | None) -> None:
        b = self.block
        if not self.has_term:
            raise ParseError(f"line {self.lineno}: block #{b.id} has no terminator row")
        if isinstance(b.term, Branch) and b.term.then is None:
            if next_id is None:
                raise ParseError(f"line {self.lineno}: block #{b.id}: branch in the last "
                                 "block needs an explicit 'goto #T' row")
            b.term.then = next_id


def parse(text: str) -> IR:
    """Read a listing printed by `format_ir`; raise `ParseError` on malformed text."""
    lines = [(i + 1, ln) for i, ln in enumerate(text.splitlines()) if ln.strip()]
    if not lines:
        raise ParseError("line 1: empty input, expected 'function NAME(...)'")
    ir = IR("")
    _header(ir, _Scanner(lines[0][1].rstrip(), lines[0][0]))
    builders = []
    for lineno, ln in lines[1:]:
        _read_line(ir, builders, lineno, ln.rstrip())
    for i, bb in enumerate(builders):
        bb.finish(builders[i + 1].block.id if i + 1 < len(builders) else None)
    ir.next_id = _max_id(ir) + 1
    return ir


def _read_line(ir: IR, builders: list, lineno: int, ln: str) -> None:
    m = _BLOCK_START.match(ln)
    if m is not None:
        bb = _BlockBuilder(ir.add_block(int(m.group(1))), lineno)
        builders.append(bb)
    else:
        m = _CONT_START.match(ln)
        if m is None:
            raise ParseError(f"line {lineno}: expected a block row ('K ─', '│' or '└──'): {ln!r}")
        if not builders:
            raise ParseError(f"line {lineno}: row outside any block: {ln!r}")
        bb = builders[-1]
    sc = _Scanner(ln, lineno, m.end())
    sc.skip_ws()
    bb.add_row(sc)
    if ln.startswith("└"):
        bb.last = True


def _max_id(ir: IR) -> int:
    ids = [d.var.id for d in ir.definitions()]
    ids += [a.id for _, a in ir.uses() if isinstance(a, Var)]
    return max(ids, default=0)
