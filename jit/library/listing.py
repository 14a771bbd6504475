"""The registry as a table: what `python -m jit.library` prints, and the README's
"what the JIT compiles" table (`--markdown`; tests/test_library.py keeps the two equal).

One row per entry, or per group of entries of one family that agree on everything
but the name (`math.sin, math.cos, ...`).  Columns: the patterns it compiles, the kind
of native code per pattern (codegen, or Python compiled by the JIT), its derivative in
adjoint's rule table, and its GPU mapping.
"""
from __future__ import annotations

from typing import Any

from jit.library.registry import REGISTRY, Entry

# how a primitive's entry reads in the table
OPERATORS = {
    "add": "a + b", "sub": "a - b", "mul": "a * b", "truediv": "a / b", "pow": "a ** b",
    "neg": "-a", "matmul": "a @ b", "getitem": "a[i]", "setitem": "a[i] = v",
    "getattr": "a.attr", "is": "a is b", "isnot": "a is not b", "eq": "a == b",
    "ne": "a != b", "truth": "bool(a) in a test", "not": "not a",
}
FAMILY_ORDER = ("math and builtins", "ufuncs", "elementwise operators on arrays", "reductions",
                "linear algebra", "array builders", "shape and slicing", "strings",
                "derivatives", "runtime checks")


def derivative(e: Entry) -> str:
    """Where adjoint's rule table has this entry's derivative (adjoint is the one
    source of derivatives, for the interpreter and the JIT alike)."""
    from adjoint.rules import lookup_callee, lookup_op
    from adjoint.special_callees import special_handler
    if e.family in ("derivatives", "runtime checks"):
        return "n/a"
    key = e.key
    if key is None:     # a callable this Python or numpy lacks (see Registry.listed):
        key = _numpy_twin(e.name)    # list the rule of its twin, which adjoint shares
        if key is None:
            return "none"
    rule = lookup_op(key) if isinstance(key, str) else lookup_callee(key)
    if rule is None and special_handler(key) is not None:
        return "adjoint.nested"    # nested differentiation: a handler, not a rule
    if rule is None:
        return "none"
    if rule.pullback is None:
        return "not differentiable"
    return "yes"


def _numpy_twin(name: str):
    """np.<f> for a declared-but-absent `math.<f>` (math.exp2 -> np.exp2), np.vstack for
    np.row_stack (its alias until numpy 2.5 removed it), or None."""
    import numpy as np
    if name == "np.row_stack":
        return np.vstack
    if not name.startswith("math."):
        return None
    return getattr(np, name.split(".", 1)[1].split(" ")[0], None)


def gpu(e: Entry) -> str:
    where = e.gpu.get("cuda")
    if where is None:
        return "no"
    return "inline" if where == "inline" else "libdevice"


def _name(e: Entry) -> str:
    if isinstance(e.key, str):
        return OPERATORS.get(e.key, e.key)
    return e.name + "".join(f", a.{m.partition('(')[0]}()" for m in sorted(e.methods))


def _patterns(e: Entry) -> str:
    parts = [f"{i.pattern} ({i.native})" for i in e.impls]
    if isinstance(e.key, str):
        parts.append("other values (core rule)")
    return "; ".join(parts)


def rows() -> list:
    """(family, names, patterns, derivative, gpu) rows, grouped and in a fixed order."""
    groups: dict = {}
    for e in REGISTRY.listed():
        key = (e.family, _patterns(e), derivative(e), gpu(e))
        groups.setdefault(key, []).append(_name(e))
    out = [(fam, ", ".join(sorted(names)), pats, der, g)
           for (fam, pats, der, g), names in groups.items()]
    rank = {f: i for i, f in enumerate(FAMILY_ORDER)}
    return sorted(out, key=lambda r: (rank.get(r[0], len(rank)), r[1]))


def pullback_rows() -> list:
    """The JIT's own plain-Python versions of derivative rules, by rule."""
    return sorted((getattr(getattr(rule, "fn", rule), "__name__", repr(rule)), pattern)
                  for rule, pattern in REGISTRY.pullbacks())


def markdown() -> str:
    lines = ["| family | callables | patterns (native code) | derivative | GPU |",
             "|---|---|---|---|---|"]
    for fam, names, pats, der, g in rows():
        lines.append(f"| {fam} | {_md(names)} | {_md(pats)} | {der} | {g} |")
    lines.append("")
    lines.append("JIT versions of derivative rules: " + ", ".join(
        f"`{name}` ({pattern})" for name, pattern in pullback_rows()) + ".")
    return "\n".join(lines) + "\n"


def text() -> str:
    out = []
    fam = None
    for family, names, pats, der, g in rows():
        if family != fam:
            fam = family
            out.append(f"\n{family}")
        out.append(f"  {names}\n      patterns: {pats}\n      derivative: {der}; GPU: {g}")
    out.append("\nJIT versions of derivative rules")
    out += [f"  {name}: {pattern}" for name, pattern in pullback_rows()]
    n = len(REGISTRY.listed())
    return f"zygopy library registry: {n} entries" + "\n".join(out) + "\n"


def _md(s: str) -> str:
    return s.replace("|", "\\|")


def main(argv: Any = None) -> int:
    import sys
    args = sys.argv[1:] if argv is None else argv
    sys.stdout.write(markdown() if "--markdown" in args else text())
    return 0
