"""The classic reverse-mode evaluation trace, produced from zygopy's IR.

    f(x1, x2) = ln(x1) + x1 * x2 - sin(x2)      at (x1, x2) = (2, 5)

The forward primal trace (v-1 .. v5) comes from the lowered IR: every statement is one
v_i, and its value is read from the reference interpreter running a copy of the IR
that returns every value.  The reverse adjoint trace comes from the adjoint IR that the
J transform builds: each pullback call in it is matched to the primal statement it
reverses, and each `dget` it feeds is one row `vbar_i = vbar_i + vbar_k * dv_k/dv_i`,
with the value the interpreter computed for it.  Exits 1 when a number disagrees with
the reference table (Baydin et al., "Automatic differentiation in machine learning: a
survey", JMLR 2018, table 3) beyond its tolerance.

    python papers/reverse_trace/run.py
"""
from __future__ import annotations

import argparse
import math
import sys

import lowering
from adjoint import code_adjoint, gradient
from adjoint.tape import Tape
from ssair import IR, Return, Var, interpret

X1, X2 = 2.0, 5.0
# The reference table, as printed (three decimals), keyed by the operation of each row:
# the table computes sin(v0) as v3 and v1 + v2 as v4; CPython (and so our IR) evaluates
# ln(x1) + x1 * x2 before sin(x2), so there the two rows trade numbers.
PAPER_FORWARD = {"x1": 2.0, "x2": 5.0, "log": 0.693, "mul": 10.0, "sin": -0.959,
                 "add": 10.693, "sub": 11.652}
PAPER_ADJOINT = {"x1bar": 5.5, "x2bar": 1.716}
PRINTED_TOL = 5e-4      # the table rounds to three decimals
EXACT_TOL = 1e-12       # against the closed forms 1/x1 + x2 and x1 - cos(x2)


def f(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def probe(ir: IR) -> tuple:
    """A copy of straight-line `ir` that returns (its result, every statement value)."""
    out = ir.copy()
    exit_block = next(b for b in out.blocks if isinstance(b.term, Return))
    every = [s.var for b in out.blocks for s in b.stmts]
    values = out.push(exit_block, "tuple", *every)
    pair = out.push(exit_block, "tuple", exit_block.term.value, values)
    exit_block.term = Return(pair)
    return out, every


def primal_operands(stmt) -> list:
    return stmt.args[1:] if stmt.op == "call" else stmt.args


def forward_trace(ir: IR) -> tuple:
    """names: Var -> 'v_i'; rows: (name, expression, value, operation)."""
    names = {a.var: f"v{i - len(ir.args) + 1}" for i, a in enumerate(ir.args)}
    prog, every = probe(ir)
    _, values = interpret(prog, X1, X2)
    rows = [(names[a.var], a.name, v, a.name) for a, v in zip(ir.args, (X1, X2))]
    for k, (var, value) in enumerate(zip(every, values), start=1):
        stmt = next(s for b in ir.blocks for s in b.stmts if s.var == var)
        names[var] = f"v{k}"
        rows.append((f"v{k}", describe(stmt, names), value, operation(stmt)))
    return names, rows


def operation(stmt) -> str:
    """`mul`, `add`, ... for an op; the callee's name (`log`, `sin`) for a call."""
    fn = getattr(stmt.args[0], "value", None) if stmt.op == "call" else None
    return getattr(fn, "__name__", stmt.op)


def describe(stmt, names: dict) -> str:
    ops = [names.get(a, repr(a)) for a in primal_operands(stmt)]
    symbol = {"add": "+", "sub": "-", "mul": "*", "truediv": "/"}.get(stmt.op)
    if symbol:
        return f" {symbol} ".join(ops)
    fn = getattr(stmt.args[0], "value", None)
    return f"{getattr(fn, '__name__', stmt.op)}({', '.join(ops)})"


def adjoint_trace(names: dict) -> tuple:
    """rows: (target, text, contribution, running value); returns (rows, grads)."""
    code = code_adjoint(f, X1, X2)
    tape = Tape()
    _, env = interpret(code.forward, tape, X1, X2)
    prog, every = probe(code.adjoint)
    grads, values = interpret(prog, tape.reader(), env, 1.0)
    value_of = dict(zip(every, values))
    primal = [s for b in lowering.lower(f).blocks for s in b.stmts][::-1]
    calls = [s for s in code.adjoint.blocks[0].stmts if s.op == "call"]
    if len(calls) != len(primal):
        raise SystemExit(f"reverse_trace: {len(calls)} pullback calls for {len(primal)} "
                         "primal statements")
    result = primal[0].var
    vbar = {result: 1.0}
    rows = [(names[result], "ybar", None, 1.0)]
    for stmt, call in zip(primal, calls):
        rows += _pullback_rows(stmt, call, code.adjoint, value_of, names, vbar)
    return rows, grads


def _pullback_rows(stmt, call, adj: IR, value_of: dict, names: dict, vbar: dict) -> list:
    rule = getattr(call.args[0].value, "__name__", "")
    want = operation(stmt)
    if rule.removesuffix("_num") != f"d_{want}":   # d_mul_num: the rule for numbers
        raise SystemExit(f"reverse_trace: pullback {rule} does not reverse {want}")
    rows = []
    for d in (s for s in adj.blocks[0].stmts if s.op == "dget" and s.args[0] == call.var):
        operand = primal_operands(stmt)[d.args[1].value]
        if not isinstance(operand, Var):
            continue
        k, i = names[stmt.var], names[operand]
        text = f"vbar{k[1:]} * d{k}/d{i}"
        text = (f"vbar{i[1:]} + " if operand in vbar else "") + text
        vbar[operand] = vbar.get(operand, 0.0) + value_of[d.var]
        rows.append((i, text, value_of[d.var], vbar[operand]))
    return rows


def print_tables(ir: IR, fwd: list, rev: list) -> None:
    print("f(x1, x2) = ln(x1) + x1 * x2 - sin(x2) at (2, 5); lowered IR:")
    print(ir)
    print("\nForward primal trace                      Reverse adjoint trace")
    width = max(len(fwd), len(rev))
    for j in range(width):
        left = right = ""
        if j < len(fwd):
            name, expr, v, _ = fwd[j]
            left = f"{name:>3} = {expr:<12} = {v:9.3f}"
        if j < len(rev):
            name, expr, _, run = rev[j]
            right = f"vbar{name[1:]:<3} = {expr:<26} = {run:7.3f}"
        print(f"  {left:<38}  {right}")


def check(fwd: list, grads: tuple, rev_final: tuple) -> list:
    """Disagreements with the reference table and with the closed forms."""
    bad = []
    for name, expr, v, op in fwd:
        if abs(v - PAPER_FORWARD[op]) > PRINTED_TOL:
            bad.append(f"{name} = {expr} = {v} but the table prints {PAPER_FORWARD[op]}")
    if sorted(op for *_, op in fwd) != sorted(PAPER_FORWARD):
        bad.append(f"the IR computes {[op for *_, op in fwd]}, the table {list(PAPER_FORWARD)}")
    exact = (1 / X1 + X2, X1 - math.cos(X2))
    for label, got, run, paper, want in zip(("x1bar", "x2bar"), grads, rev_final,
                                            PAPER_ADJOINT.values(), exact):
        if abs(got - paper) > PRINTED_TOL or abs(got - want) > EXACT_TOL or got != run:
            bad.append(f"{label} = {got} (trace {run}); table {paper}, exact {want}")
    api = gradient(f, X1, X2, backend="interp")
    if any(abs(a - g) > EXACT_TOL for a, g in zip(api, grads)):
        bad.append(f"adjoint.gradient gives {api}, the adjoint IR {grads}")
    return bad


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="accepted for uniformity with the other papers/ scripts (no timing here)")
    p.parse_args(argv)
    ir = lowering.lower(f)
    names, fwd = forward_trace(ir)
    rev, grads = adjoint_trace(names)
    print_tables(ir, fwd, rev)
    finals = {name: run for name, _, _, run in rev}
    x1bar, x2bar = grads
    print(f"\n  x1bar = vbar-1 = {x1bar!r}   (table: 5.5)")
    print(f"  x2bar = vbar0  = {x2bar!r}   (table: 1.716)")
    bad = check(fwd, grads, (finals["v-1"], finals["v0"]))
    for line in bad:
        print(f"MISMATCH: {line}")
    print("reverse_trace: " + ("agrees with the reference table" if not bad else "FAILED"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
