"""Algebraic simplification, only where it is exact for the operand's known kind."""
from __future__ import annotations

import math
from typing import Any

from ..ir import IR, Const, Var
from .scalars import BOOL, FLOAT, INT, Scalars

_INTS = (INT, BOOL)
_NUM = (INT, FLOAT, BOOL)
_REFLEXIVE_TRUE = {"eq", "le", "ge"}
_REFLEXIVE_FALSE = {"ne", "lt", "gt"}


def algebraic(ir: IR) -> IR:
    """Rewrite arithmetic identities whose operands are certainly Python scalars.

    Requires: a well-formed IR.
    Guarantees: returns a new IR (the input is untouched) computing the same values,
    of the same Python types, with the same exceptions.  Rules (K = the kind of `x`
    found by `scalars.Scalars`; unknown operands, e.g. numpy arrays, are never
    touched because `x * 1` is a new array and `x` is not):
      * K = int:   x+0, 0+x, x-0, x*1, 1*x, x//1, x**1 -> x;  x*0, x-x, x%1 -> 0;
                   x**0 -> 1;  0-x, x*-1 -> -x;  x|0, x^0, x<<0, x>>0, x&-1 -> x;
                   x&0 -> 0;  x==x, x<=x, x>=x -> True;  x!=x, x<x, x>x -> False
      * K = float: only the exact ones: x*1.0, x*1, x/1.0, x/1, x-0.0, x+(-0.0),
                   x**1, x**1.0 -> x;  x**0 -> 1.0;  x*-1.0, x/-1.0 -> -x.  Not
                   x+0.0 (-0.0), x*0 (nan, inf, -0.0), x-x (inf).
      * K = int or float: --x, +x -> x.  K = bool: truth(x) -> x, not not x -> x;
        any x: not not x -> truth(x), `x is x` -> True, `x is not x` -> False.
      * the result kind must equal K: `1.0 * n` (a float) and `True * 1` (an int)
        are left alone.
    """
    ir = ir.copy()
    while _round(ir):
        pass
    return ir


def _round(ir: IR) -> bool:
    sc = Scalars(ir)
    defs = ir.defs_by_var()
    mapping: dict = {}
    for b in ir.blocks:
        keep = []
        for s in b.stmts:
            rule = RULES.get(s.op)
            new = rule(s, sc, defs) if rule and not s.kwargs and len(s.args) == _arity(s) else None
            if isinstance(new, (Var, Const)):
                mapping[s.var] = new
                continue
            if new is not None:
                s.op, s.args = new
                mapping[s.var] = s.var
            keep.append(s)
        b.stmts = keep
    ir.replace_uses({k: v for k, v in mapping.items() if k != v})
    return bool(mapping)


def _arity(s) -> int:
    return 1 if s.op in ("neg", "pos", "not", "truth") else 2


# -- constant tests -------------------------------------------------------------
def _num(a: Any) -> Any | None:
    """The numeric value of a constant operand of exact type int, float or bool."""
    if isinstance(a, Const) and type(a.value) in (int, float, bool):
        return a.value
    return None


def _is(a: Any, value: Any, types: tuple) -> bool:
    v = _num(a)
    if v is None or type(v) not in types or v != value:
        return False
    return not (type(v) is float and math.copysign(1.0, v) != math.copysign(1.0, value))


_I = (int, bool)
_F = (int, bool, float)


def _pick(s, sc, test, kind_ok) -> tuple | None:
    """(x, const) when one operand passes `test` and the other has an accepted kind."""
    x, y = s.args
    if test(y) and sc.kind(x) in kind_ok:
        return x, y
    if test(x) and sc.kind(y) in kind_ok:
        return y, x
    return None


# -- rules ----------------------------------------------------------------------
def _add(s, sc, defs):
    x, y = s.args
    if _is(y, 0, _I) and sc.kind(x) == INT or _is(y, -0.0, (float,)) and sc.kind(x) == FLOAT:
        return x
    if _is(x, 0, _I) and sc.kind(y) == INT or _is(x, -0.0, (float,)) and sc.kind(y) == FLOAT:
        return y
    return None


def _sub(s, sc, defs):
    x, y = s.args
    k = sc.kind(x)
    if _is(y, 0, _I) and k in (INT, FLOAT) or _is(y, 0.0, (float,)) and k == FLOAT:
        return x
    if x == y and isinstance(x, Var) and k in _INTS:
        return Const(0)
    if _is(x, 0, _I) and sc.kind(y) == INT:
        return "neg", [y]
    return None


def _mul(s, sc, defs):
    one = _pick(s, sc, lambda a: _is(a, 1, _I), (INT,)) or \
        _pick(s, sc, lambda a: _is(a, 1, _F), (FLOAT,))
    if one:
        return one[0]
    if _pick(s, sc, lambda a: _is(a, 0, _I), _INTS):
        return Const(0)
    neg = _pick(s, sc, lambda a: _is(a, -1, _I), (INT,)) or \
        _pick(s, sc, lambda a: _is(a, -1, _F), (FLOAT,))
    return ("neg", [neg[0]]) if neg else None


def _truediv(s, sc, defs):
    x, y = s.args
    if sc.kind(x) != FLOAT:
        return None
    if _is(y, 1, _F):
        return x
    return ("neg", [x]) if _is(y, -1, _F) else None


def _floordiv(s, sc, defs):
    x, y = s.args
    return x if _is(y, 1, _I) and sc.kind(x) == INT else None


def _mod(s, sc, defs):
    x, y = s.args
    if (_is(y, 1, _I) or _is(y, -1, _I)) and sc.kind(x) in _INTS:
        return Const(0)
    return None


def _pow(s, sc, defs):
    x, y = s.args
    k = sc.kind(x)
    if _is(y, 1, _I) and k == INT or _is(y, 1, _F) and k == FLOAT:
        return x
    if _is(y, 0, _I) and k in _INTS:
        return Const(1)
    if _is(y, 0, _F) and k == FLOAT:
        return Const(1.0)
    return None


def _same_int_var(s, sc) -> bool:
    x, y = s.args
    return isinstance(x, Var) and x == y and sc.kind(x) in _INTS


def _bitand(s, sc, defs):
    if _same_int_var(s, sc):
        return s.args[0]
    if _pick(s, sc, lambda a: _is(a, 0, _I), (INT,)):
        return Const(0)
    hit = _pick(s, sc, lambda a: _is(a, -1, (int,)), (INT,))
    return hit[0] if hit else None


def _bitor(s, sc, defs):
    if _same_int_var(s, sc):
        return s.args[0]
    hit = _pick(s, sc, lambda a: _is(a, 0, (int,)), (INT,))
    return hit[0] if hit else None


def _bitxor(s, sc, defs):
    if _same_int_var(s, sc):
        return Const(False) if sc.kind(s.args[0]) == BOOL else Const(0)
    hit = _pick(s, sc, lambda a: _is(a, 0, (int,)), (INT,))
    return hit[0] if hit else None


def _shift(s, sc, defs):
    x, y = s.args
    return x if _is(y, 0, _I) and sc.kind(x) == INT else None


def _compare(s, sc, defs):
    if not _same_int_var(s, sc):
        return None
    return Const(s.op in _REFLEXIVE_TRUE)


def _identity(s, sc, defs):
    x, y = s.args
    if isinstance(x, Var) and x == y:
        return Const(s.op == "is")
    return None


def _inner(a: Any, op: str, defs: dict) -> Any | None:
    """`y` when `a` is defined by `op(y)`."""
    d = defs.get(a) if isinstance(a, Var) else None
    if d is None or getattr(d, "op", None) != op or d.kwargs or len(d.args) != 1:
        return None
    return d.args[0]


def _neg(s, sc, defs):
    y = _inner(s.args[0], "neg", defs)
    return y if y is not None and sc.kind(y) in (INT, FLOAT) else None


def _pos(s, sc, defs):
    x = s.args[0]
    return x if sc.kind(x) in (INT, FLOAT) else None


def _not(s, sc, defs):
    y = _inner(s.args[0], "not", defs)
    if y is None:
        return None
    return y if sc.kind(y) == BOOL else ("truth", [y])


def _truth(s, sc, defs):
    x = s.args[0]
    if sc.kind(x) == BOOL:
        return x
    y = _inner(x, "truth", defs)
    return ("truth", [y]) if y is not None else None


RULES = {
    "add": _add, "sub": _sub, "mul": _mul, "truediv": _truediv, "floordiv": _floordiv,
    "mod": _mod, "pow": _pow, "bitand": _bitand, "bitor": _bitor, "bitxor": _bitxor,
    "lshift": _shift, "rshift": _shift, "neg": _neg, "pos": _pos, "not": _not,
    "truth": _truth, "is": _identity, "isnot": _identity,
    **{op: _compare for op in _REFLEXIVE_TRUE | _REFLEXIVE_FALSE},
}
