"""Control-flow graphs as Graphviz DOT text.

    from ssair.dot import to_dot
    print(to_dot(ir))                       # one function
    print(to_dot(forward, adjoint))         # several, one cluster each

Each basic block is one node, labelled with its id, its phis, its statements and its
terminator in the printer's syntax (left-aligned lines).  Each CFG edge is one DOT
edge; the two edges of a conditional branch are labelled `true` and `false` (a branch
whose targets coincide gives a single unlabelled edge).  The entry block is drawn
bold, blocks that return with a double border.  With several functions, each sits in
its own `subgraph cluster_K` and node names are prefixed `fK_`, so names never clash.
"""
from __future__ import annotations

from .ir import IR, Branch, Return
from .printer import format_header, format_stmt, format_term


def quote(text: str) -> str:
    """A DOT double-quoted string (backslashes and quotes escaped, no raw newlines)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _label(lines: list) -> str:
    """A left-justified multi-line label: every line ends in DOT's `\\l`."""
    body = "".join(line.replace("\\", "\\\\").replace('"', '\\"') + "\\l" for line in lines)
    return f'"{body}"'


def block_lines(ir: IR, index: int) -> list:
    """The text lines of one block: header, phis, statements, terminator."""
    b = ir.blocks[index]
    next_id = ir.blocks[index + 1].id if index + 1 < len(ir.blocks) else None
    lines = [f"#{b.id}"]
    lines += ["  " + format_stmt(d) for d in b.definitions()]
    lines += ["  " + t for t in format_term(b.term, next_id)]
    return lines


def edges(ir: IR) -> list:
    """(source id, target id, label or None), one per CFG edge, in block order."""
    out = []
    for b in ir.blocks:
        t = b.term
        if isinstance(t, Branch) and t.then != t.else_:
            out += [(b.id, t.then, "true"), (b.id, t.else_, "false")]
            continue
        out += [(b.id, s, None) for s in b.successors()]
    return out


def _node_lines(ir: IR, prefix: str, indent: str) -> list:
    out = []
    for i, b in enumerate(ir.blocks):
        attrs = [f"label={_label(block_lines(ir, i))}"]
        if i == 0:
            attrs.append("style=bold")
        if isinstance(b.term, Return):
            attrs.append("peripheries=2")
        out.append(f"{indent}{prefix}b{b.id} [{', '.join(attrs)}];")
    return out


def _edge_lines(ir: IR, prefix: str, indent: str) -> list:
    out = []
    for src, dst, label in edges(ir):
        attr = f" [label={quote(label)}]" if label else ""
        out.append(f"{indent}{prefix}b{src} -> {prefix}b{dst}{attr};")
    return out


def function_lines(ir: IR, prefix: str = "", indent: str = "  ") -> list:
    """Node and edge statements of one function's CFG."""
    return _node_lines(ir, prefix, indent) + _edge_lines(ir, prefix, indent)


def to_dot(*irs: IR, name: str = "cfg") -> str:
    """One `digraph` holding the CFG of every function given (at least one)."""
    if not irs:
        raise ValueError("to_dot: no function given")
    head = [f"digraph {quote(name)} {{",
            '  node [shape=box, fontname="monospace", fontsize=10];',
            '  edge [fontname="monospace", fontsize=9];']
    if len(irs) == 1:
        ir = irs[0]
        body = [f"  label={quote(format_header(ir))};", "  labelloc=t;"]
        return "\n".join(head + body + function_lines(ir) + ["}"]) + "\n"
    body = []
    for k, ir in enumerate(irs):
        body += [f"  subgraph cluster_{k} {{", f"    label={quote(format_header(ir))};"]
        body += function_lines(ir, prefix=f"f{k}_", indent="    ")
        body.append("  }")
    return "\n".join(head + body + ["}"]) + "\n"
