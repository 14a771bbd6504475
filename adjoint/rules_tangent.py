"""Forward-mode (tangent, jvp) rules: the `jvp` field of the rule table's entries.

A `jvp` is an emitter `jvp(em, s, ts) -> operand`: given statement `s` of the primal
and the tangents `ts` of its positional operands (after the callee for a `call`; None
where an operand carries no tangent, which is zero), it emits the IR that computes the
tangent of `s`'s result through `em` (`adjoint.passes.tangent.Emitter`) and returns
it.  What it emits is ordinary IR: primitive ops, library calls, and calls of the
small plain-Python functions below (wrapped as `Pullback` objects, the rule table's
"plain Python callable by the interpreter and compiled by the JIT"), so both
executors run it and the JIT compiles it like any function.

Where a rule has no `jvp` of its own, one is derived from its pullback, but only in
the two ways that are exact:
  * `elementwise`: a function applied element by element has a diagonal Jacobian, so
    the pullback at `dy = t` (the operands broadcast to the result's shape) is the jvp;
  * otherwise the Jacobian's rows: `(J t)[k] = <pullback(e_k), t>` for every element
    k of the result, one pullback per element (exact, but slow for a large result:
    declare such a function `linear` or give it a `jvp`).
The table: `linear` (the function itself applied to the tangents of its data
operands), `multilinear` (one term per varied operand, the others at their primal
values), `elementwise`, and explicit emitters for the operators.
"""
from __future__ import annotations

import builtins
import inspect
import math
import types

import numpy as np

from lowering.runtime import check_bound, column, keywords, loop_items, merged, with_entry
from ssair import Const

from .passes.tangent import HELPERS, zero_tangent
from .pytrees import computed_attribute_error, is_namedtuple, is_record, record_fields
from .rule_table import OP_RULES, TangentHelper, lookup_callee, nondiff
from .rules_linalg import eigen_gaps
from .rules_numpy import scatter_added
from . import rules as _all_rules  # noqa: F401  (the table is filled before this adds to it)


# -- plain-Python helpers (None is a zero tangent) ------------------------------------
def _helper(fn):
    return TangentHelper(fn)


def _axis_helper(fn):
    """A helper whose `axis` the JIT takes as a constant (`TangentHelper.options`);
    each assumes real values (a maximum, a spread)."""
    return TangentHelper(fn, options=("axis",), real_only=fn.__name__ != "j_squeeze")


def _real_helper(fn):
    """A helper that assumes real values (compares them, or takes a real logarithm or
    transpose): a complex operand is refused (`TangentHelper.real_only`)."""
    return TangentHelper(fn, real_only=True)


def _widen(t, other):
    """Tangent `t` of one operand broadcast against the other operand's shape (the
    result's), for a sum whose other side has no tangent: a new array, as the sum is
    (a later in-place update of the result must not reach the operand's tangent)."""
    if isinstance(other, np.ndarray):
        return t + np.zeros_like(other, dtype=np.float64)
    return t + 0.0


@_helper
def j_add(a, b, ta, tb):
    """d(a + b) (for tuples and lists, the concatenation of the tangents)."""
    if isinstance(a, (tuple, list)):
        return (zero_tangent(a) if ta is None else ta) + (zero_tangent(b) if tb is None
                                                          else tb)
    if ta is None and tb is None:       # (zero tangents: a cotangent that is None)
        return None
    if ta is None:
        return _widen(tb, a)
    if tb is None:
        return _widen(ta, b)
    return ta + tb


@_helper
def j_add_left(a, b, ta):
    """d(a + b) where only a has a tangent (no test of a None tangent: a compiled
    derivative of this code types every branch)."""
    if isinstance(a, (tuple, list)):
        return ta + zero_tangent(b)
    return _widen(ta, b)


@_helper
def j_add_right(a, b, tb):
    """d(a + b) where only b has a tangent."""
    if isinstance(a, (tuple, list)):
        return zero_tangent(a) + tb
    return _widen(tb, a)


@_helper
def j_sub_left(a, b, ta):
    """d(a - b) where only a has a tangent."""
    return _widen(ta, b)


@_helper
def j_sub_right(a, b, tb):
    """d(a - b) where only b has a tangent."""
    return _widen(-tb, a)


@_helper
def j_astype(t, dtype):
    """The tangent of `a.astype(dtype)`: zero for an integer or boolean dtype."""
    if np.dtype(dtype).kind in "fc":
        return t.astype(dtype)
    return np.zeros(t.shape)


@_helper
def j_sub(a, b, ta, tb):
    if ta is None:
        return _widen(-tb, a)
    if tb is None:
        return _widen(ta, b)
    return ta - tb


@_helper
def j_mul(a, b, ta, tb):
    if ta is None:
        return a * tb
    if tb is None:
        return ta * b
    return ta * b + a * tb


@_helper
def j_mul_left(a, b, ta):
    """d(a * b) where only a has a tangent (no None test: see `j_add_left`)."""
    return ta * b


@_helper
def j_mul_right(a, b, tb):
    """d(a * b) where only b has a tangent."""
    return a * tb


@_helper
def j_truediv_left(a, b, ta):
    """d(a / b) where only a has a tangent."""
    return ta / b


@_helper
def j_truediv_right(a, b, tb):
    """d(a / b) where only b has a tangent."""
    return -(a / b) * tb / b


@_helper
def j_truediv(a, b, ta, tb):
    if tb is None:
        return ta / b
    if ta is None:
        return -(a / b) * tb / b
    return (ta - (a / b) * tb) / b


def _pow_slope(a, b):
    """d(a ** b)/da = b * a ** (b - 1), and 0 where b == 0 (a ** 0 is the constant 1),
    without evaluating 0 ** -1 there (as JAX and autograd, and the pullback, take it)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.where(b == 0, 0.0, b * a ** np.where(b == 0, 1.0, b - 1.0))
    if b == 0:
        return 0.0
    return b * a ** (b - 1)


def _pow_rate(y, a):
    """d(a ** b)/db = log(a) * a ** b (y = a ** b), and 0 where a <= 0 (as the
    pullback takes it: no log of zero or of a negative base)."""
    if isinstance(a, np.ndarray) or isinstance(y, np.ndarray):
        return np.where(a > 0, y * np.log(np.where(a > 0, a, 1.0)), 0.0)
    if a > 0:
        return y * math.log(a)
    return 0.0


j_pow_slope = _real_helper(_pow_slope)
j_pow_rate = _real_helper(_pow_rate)


@_real_helper
def j_pow(a, b, ta, tb):
    """d(a ** b): the slope in a times ta, plus the rate in b times tb only where b
    varies (so a constant exponent of a negative base has a finite derivative)."""
    if tb is None:
        return _pow_slope(a, b) * ta
    term = _pow_rate(a ** b, a) * tb
    if ta is None:
        return term
    return _pow_slope(a, b) * ta + term


@_helper
def j_matmul(a, b, ta, tb):
    if ta is None:
        return a @ tb
    if tb is None:
        return ta @ b
    return ta @ b + a @ tb


@_real_helper
def j_mod(a, b, ta, tb):
    """d(a % b) = ta - floor(a / b) tb."""
    if tb is None:
        return _widen(ta, b)
    k = np.floor(a / b)
    if ta is None:
        return -k * tb
    return ta - k * tb


@_helper
def j_assign(t, new):
    """The tangent of an in-place update: an array's tangent is updated in place (its
    views see it), a number's is replaced."""
    if isinstance(t, np.ndarray):
        t[...] = new
        return t
    return new


def _inner(g, t):
    """<g, t> for a cotangent and a tangent of the same structure (None is zero)."""
    if g is None or t is None:
        return 0.0
    if isinstance(g, (list, tuple)):
        total = 0.0
        for k in range(len(g)):
            total += _inner(g[k], t[k])
        return total
    return float(np.sum(g * t))


j_inner = _helper(_inner)


def _call_value(f, n, *operands):
    """`(f(*args), its tangent)` for a function value `f` known only at run time, given
    its `n` arguments and then their tangents (through `adjoint.forward.jvp_of_value`,
    which it registers in VALUE_JVP)."""
    return VALUE_JVP[0](f, operands[:n], operands[n:])


j_call_value = TangentHelper(_call_value, interpreted=(
    "forward mode calls this function value (a closure made elsewhere, a library "
    "function) through the interpreter"))


VALUE_JVP: list = [None]


def _rows(pb, y, ts, args, kwargs):
    """J t by rows: `(J t)[k] = sum_i <pullback(e_k)[i], t_i>`, one pullback per element
    of y (exact for any rule; the fallback for one without a `jvp`)."""
    yarr = np.asarray(y, dtype=float)
    rows = []           # (a list, not writes into a view: nested modes differentiate this)
    for k in range(yarr.size):
        e = (np.arange(yarr.size) == k).astype(float).reshape(yarr.shape)
        dy = float(e) if yarr.ndim == 0 else e
        grads = pb(dy, y, *args, **kwargs) if pb.uses_result else pb(dy, *args, **kwargs)
        total = 0.0
        for g, t in zip(grads, ts):
            if g is not None and t is not None:
                total += float(np.sum(np.asarray(g) * np.asarray(t)))
        rows.append(total)
    out = np.array(rows, dtype=float).reshape(yarr.shape)
    return float(out) if yarr.ndim == 0 and not isinstance(y, np.ndarray) else out


@_helper
def j_rows(pb, y, ts, args, **kwargs):
    return _rows(pb, y, ts, args, kwargs)


# -- declaring rules ------------------------------------------------------------------
def _set(keys, jvp) -> None:
    """Give the rules of `keys` (op names or callees, each with a rule) this jvp."""
    for k in keys:
        rule = OP_RULES.get(k) if isinstance(k, str) else lookup_callee(k)
        if rule is None:
            raise KeyError(f"adjoint.rules_tangent: {k!r} has no rule to add a jvp to")
        rule.jvp = jvp


def linear(keys, data=(0,)) -> None:
    """Functions linear in the operands at positions `data` (jointly; the others are
    parameters such as an axis or a shape): the tangent is the function of the tangents."""
    def jvp(em, s, ts):
        args = list(em.operands(s))
        for i in data:
            if i < len(args):
                args[i] = ts[i] if ts[i] is not None else em.zero(args[i])
        return em.same(s, args)
    _set(keys, jvp)


def multilinear(keys, data=(0, 1)) -> None:
    """Functions linear in each operand at `data` separately (products): one term per
    varied operand, with the others at their primal values."""
    def jvp(em, s, ts):
        total = None
        for i in data:
            if i < len(ts) and ts[i] is not None:
                args = list(em.operands(s))
                args[i] = ts[i]
                term = em.same(s, args)
                total = term if total is None else em.op("add", total, term)
        return total
    _set(keys, jvp)


def elementwise(keys) -> None:
    """Functions applied element by element: the jvp through the pullback (exact)."""
    def jvp(em, s, ts):
        pb = em.rule_of(s).pullback
        args = em.operands(s)
        varied = [i for i, t in enumerate(ts) if t is not None]
        arrays = [i for i, a in enumerate(args) if not em.is_number(a)]
        if arrays and arrays != varied or len(arrays) > 1:   # broadcast to y's shape
            z = em.op("zero_tangent", s.var)
            args = [a if isinstance(a, Const) and not isinstance(a.value, (int, float))
                    else em.op("add", a, z) for a in args]
            ts = [None if t is None else em.op("add", t, z) for t in ts]
        total = None
        for i in varied:
            pre = (s.var,) if pb.uses_result else ()
            g = em.op("call", pb, ts[i], *pre, *args, **s.kwargs)   # (np.clip's a_min=)
            term = em.op("dget", g, i)
            total = term if total is None else em.op("add", total, term)
        return total
    _set(keys, jvp)


def scalar_result(keys, data_only=True) -> None:
    """Functions whose result is a number when called on their data alone (`np.max(x)`,
    `max(a, b)`): J is one row, `pullback(1.0)`, so J t = sum_i <pullback(1)[i], t_i>
    (exact).  With other operands (an axis), the rows fallback."""
    _set(keys, _one_row(data_only))


def _one_row(data_only: bool):
    """`scalar_result`'s jvp."""
    def jvp(em, s, ts):
        rule = em.rule_of(s)
        pb = rule.pullback
        args = em.operands(s)
        if s.kwargs or data_only and len(args) > 1:
            return rows(em, s, ts)
        pre = (s.var,) if pb.uses_result else ()
        g = em.op("call", pb, 1.0, *pre, *args)
        total = None
        for i, t in enumerate(ts):
            if t is None:
                continue
            term = em.op("call", j_inner, em.op("dget", g, i), t)
            total = term if total is None else em.op("add", total, term)
        return em.op("call", float, total)
    return jvp


def rows(em, s, ts):
    """The exact fallback for a rule without a jvp: J t row by row (`j_rows`)."""
    pb = em.rule_of(s).pullback
    return em.op("call", j_rows, pb, s.var, em.tuple(ts), em.tuple(em.operands(s)),
                 **s.kwargs)


def _binary(helper, scalar):
    """An operator's jvp: plain ops on proven numbers (`scalar(em, a, b, ta, tb)`),
    else the helper (which also broadcasts)."""
    def jvp(em, s, ts):
        a, b = s.args[0], s.args[1]
        if scalar is not None and em.is_number(a) and em.is_number(b):
            return scalar(em, a, b, ts[0], ts[1])
        if helper is j_add and (em.is_tuple(a) or em.is_tuple(b)):    # concatenation
            return em.op("add", *[t if t is not None else em.zero(x)
                                  for x, t in ((a, ts[0]), (b, ts[1]))])
        one = _ONE_SIDED.get((helper, ts[0] is None, ts[1] is None))
        if one is not None:         # (one tangent: a helper without None branches)
            return em.op("call", one, a, b, ts[1] if ts[0] is None else ts[0])
        return em.op("call", helper, a, b, em.or_none(ts[0]), em.or_none(ts[1]))
    return jvp


_ONE_SIDED = {(j_add, False, True): j_add_left, (j_add, True, False): j_add_right,
              (j_sub, False, True): j_sub_left, (j_sub, True, False): j_sub_right,
              (j_mul, False, True): j_mul_left, (j_mul, True, False): j_mul_right,
              (j_truediv, False, True): j_truediv_left,
              (j_truediv, True, False): j_truediv_right}


def _s_add(em, a, b, ta, tb):
    return ta if tb is None else tb if ta is None else em.op("add", ta, tb)


def _s_sub(em, a, b, ta, tb):
    return ta if tb is None else em.op("neg", tb) if ta is None else em.op("sub", ta, tb)


def _s_mul(em, a, b, ta, tb):
    left = None if ta is None else em.op("mul", ta, b)
    right = None if tb is None else em.op("mul", a, tb)
    return _s_add(em, None, None, left, right)


def _s_truediv(em, a, b, ta, tb):
    if tb is None:
        return em.op("truediv", ta, b)
    q = em.op("truediv", a, b)
    num = em.op("mul", q, tb)
    num = em.op("neg", num) if ta is None else em.op("sub", ta, num)
    return em.op("truediv", num, b)


def _s_pow(em, a, b, ta, tb):
    out = None
    if ta is not None and isinstance(b, Const):     # the exponent's arithmetic folded
        n = b.value
        if n == 0:
            out = Const(0.0)       # x ** 0 is the constant 1 (no 0 ** -1 to evaluate)
        else:
            power = a if n - 1 == 1 else em.op("pow", a, n - 1)
            out = em.op("mul", em.op("mul", n, power), ta) if n - 1 != 0 else \
                em.op("mul", n, ta)
    elif ta is not None:          # (no 0 ** -1 where the exponent is 0 at run time)
        out = em.op("mul", em.op("call", j_pow_slope, a, b), ta)
    if tb is not None:
        y = em.op("pow", a, b)
        term = em.op("mul", em.op("call", j_pow_rate, y, a), tb)
        out = term if out is None else em.op("add", out, term)
    return out


def _in_place(plain):
    """`a op= b`: the tangent of the plain operator from the operands before the update
    (emitted before the statement), then the tangent of `a` updated in place."""
    def jvp(em, s, ts):
        new = plain(em, s, ts)
        if new is None:
            return None
        ta = ts[0] if ts[0] is not None else None
        if ta is None or em.is_number(s.args[0]):
            return new
        return em.after(lambda: em.op("call", j_assign, ta, new))
    return jvp


_OPERATORS = {
    "add": _binary(j_add, _s_add), "sub": _binary(j_sub, _s_sub),
    "mul": _binary(j_mul, _s_mul), "truediv": _binary(j_truediv, _s_truediv),
    "pow": _binary(j_pow, _s_pow), "matmul": _binary(j_matmul, None),
    "mod": _binary(j_mod, None),
}
for _op, _jvp in _OPERATORS.items():
    _set([_op], _jvp)
    _set(["i" + _op], _in_place(_jvp))

# -- linear algebra: the jvps of the matrix functions (the pullbacks' transposes) ------
def _tr(m):
    return np.trace(m, axis1=-2, axis2=-1)


@_helper
def j_det(y, a, ta):
    """d det(A) = det(A) tr(A^-1 dA)."""
    return y * _tr(np.linalg.solve(a, ta))


@_real_helper
def j_slogdet(y, a, ta):
    """(sign, log|det A|): the sign's tangent is zero, log|det|'s is tr(A^-1 dA) (a
    plain tuple: `j_field` reads it by the result's field names)."""
    return (np.zeros_like(y[0]), _tr(np.linalg.solve(a, ta)))


def _field(t, y, name):
    """The tangent of `y.name` from the tangent `t` of a named tuple or an object `y`
    (a tuple of its fields' tangents, the object's own form, or None: zero); a
    property's from its getter's jvp.  (Differentiable in reverse mode, for `hvp`: the
    entry's position is a constant.)"""
    if has_field(t, y, name):       # (the JIT decides both from the types)
        return t[field_position(t, y, name)]
    return _field_otherwise(t, y, name)


def field_position(t, y, name):
    """The position of `y.name`'s tangent in tuple `t` (-1: `t` is not a tuple of
    entries)."""
    if not isinstance(t, tuple):
        return -1
    if is_namedtuple(y):
        return type(y)._fields.index(name)
    names = [n for n, _ in record_fields(y)]
    return names.index(name) if name in names else -1


def has_field(t, y, name):
    """Is `y.name`'s tangent an entry of tuple `t`?"""
    return field_position(t, y, name) >= 0


nondiff(field_position, has_field)


def _field_otherwise(t, y, name):
    """`_field` where `t` is not a tuple of entries, or `name` is computed (a property)."""
    if t is None:
        return zero_tangent(getattr(y, name))
    if isinstance(t, dict):
        return t.get(name) if name in t else zero_tangent(getattr(y, name))
    if not isinstance(t, tuple) and hasattr(t, name):
        return getattr(t, name)
    getter = getattr(inspect.getattr_static(type(y), name, None), "fget", None)
    if isinstance(getter, types.FunctionType):
        return VALUE_JVP[0](getter, (y,), (t,))[1]
    raise computed_attribute_error(type(y).__name__, name)


j_field = TangentHelper(_field, interpreted="an object's attribute is read in the "
                                            "interpreter")


def _call_method(obj, name, where, n, *operands):
    """`(obj.name(*args), its tangent)` given the `n` arguments, then the tangent of
    `obj`, then the arguments' tangents: a method defined in Python in obj's class is
    its function with `obj` (and its tangent) first; a function stored in the object
    is called with its arguments (through `VALUE_JVP`, as `j_call_value`)."""
    args, tobj, ts = operands[:n], operands[n], operands[n + 1:]
    static = inspect.getattr_static(type(obj), name, None)
    own = name in getattr(obj, "__dict__", ())
    if isinstance(static, types.FunctionType) and not own:
        return VALUE_JVP[0](static, (obj,) + tuple(args), (tobj,) + tuple(ts))
    if isinstance(static, staticmethod) and not own:
        return VALUE_JVP[0](static.__func__, args, ts)
    if tobj is not None and not (is_record(obj) or is_namedtuple(obj)):
        raise TypeError(f"jvp: forward mode has no rule for the method {name!r} ({where}) "
                        "yet")
    return VALUE_JVP[0](getattr(obj, name), args, ts)


j_call_method = TangentHelper(_call_method, interpreted=(
    "forward mode calls a method of an object through the interpreter"))


def _getattr_jvp(em, s, ts):
    """`x.T`, `x.real`, `x.imag`: the same attribute of the tangent; any other (a named
    tuple's field) through `j_field`."""
    if ts[0] is None:
        return None
    name = s.args[1].value if isinstance(s.args[1], Const) else None
    if name == "T":
        # np.transpose, not `.T`: the tangent of a numpy scalar may be a Python float
        # (a rule's derivative of `np.maximum(-0.5, s)`), which has no `.T`
        return em.op("call", np.transpose, ts[0])
    if name in ("real", "imag", "mT"):
        return em.op("getattr", ts[0], name)
    return em.op("call", j_field, ts[0], s.args[0], s.args[1])


@_helper
def j_inv(y, a, ta):
    """d A^-1 = -A^-1 dA A^-1."""
    return -(y @ ta @ y)


@_helper
def j_solve(x, a, b, ta, tb):
    """x = A^-1 b: dx = A^-1 (db - dA x) (b a vector or a matrix of columns)."""
    rhs = np.zeros_like(x) if tb is None else tb + np.zeros_like(x)
    if ta is not None:
        rhs = rhs - ta @ x
    return np.linalg.solve(a, rhs)


@_real_helper
def j_cholesky(y, a, ta, upper=False):
    """A = L L^T: dL = L Phi(L^-1 dA L^-T), Phi the lower triangle with half the
    diagonal.  numpy reads one triangle of A (the lower; the upper with upper=True,
    returning U = L^T), so dA is the symmetric matrix of that triangle of the tangent:
    the tangent of a matrix that is not symmetric otherwise disagrees with reverse
    mode, which folds onto the same triangle."""
    ta = np.asarray(ta, dtype=float)
    if upper:
        lower = np.swapaxes(y, -1, -2)
        sym = np.triu(ta) + np.swapaxes(np.triu(ta, 1), -1, -2)
    else:
        lower = y
        sym = np.tril(ta) + np.swapaxes(np.tril(ta, -1), -1, -2)
    inner = np.linalg.solve(lower, np.swapaxes(np.linalg.solve(lower, sym), -1, -2))
    phi = np.tril(inner) - 0.5 * np.eye(inner.shape[-1]) * inner
    dl = lower @ phi
    return np.swapaxes(dl, -1, -2) if upper else dl


@_real_helper
def j_eigh(y, a, ta, UPLO="L"):
    """A = V diag(w) V^T: dw = diag(P), dV = V (F o P) with P = V^T dA V (F: the
    inverse gaps), dA the symmetric matrix of the triangle of the tangent numpy reads
    (a plain tuple: `j_field` reads it by the result's field names)."""
    w, v = y[0], y[1]
    p = np.swapaxes(v, -1, -2) @ _read_triangle(ta, UPLO) @ v
    return (np.diagonal(p, axis1=-2, axis2=-1).copy(), v @ (eigen_gaps(w) * p))


@_real_helper
def j_eigvalsh(y, a, ta, UPLO="L"):
    _, v = np.linalg.eigh(a, UPLO=UPLO)
    p = np.swapaxes(v, -1, -2) @ _read_triangle(ta, UPLO) @ v
    return np.diagonal(p, axis1=-2, axis2=-1).copy()


def _read_triangle(ta, uplo):
    """The symmetric matrix of the triangle of `ta` that numpy reads."""
    ta = np.asarray(ta, dtype=float)
    if uplo == "U":
        return np.triu(ta) + np.swapaxes(np.triu(ta, 1), -1, -2)
    return np.tril(ta) + np.swapaxes(np.tril(ta, -1), -1, -2)


@_helper
def j_loop_items(v, t):
    """The tangent of the sequence a loop reads: a dict's keys and a set's items have a
    zero tangent (never the keys of the dict's tangent); anything else reads its
    tangent the way it is read."""
    if isinstance(v, (dict, set, frozenset)):
        return zero_tangent(loop_items(v))
    return loop_items(t)


def _matrix_jvp(helper, data=1):
    """A jvp `helper(y, *operands, *their tangents)` of a function of `data` operands."""
    def jvp(em, s, ts):
        args = em.operands(s)[:data]
        return em.op("call", helper, s.var, *args, *[em.or_none(t) for t in ts[:data]])
    return jvp


@_helper
def j_polyval(p, x, tp, tx):
    """d polyval(p, x) = polyval(dp, x) + dx * polyval(p', x), p' the coefficients of
    the derivative (each tangent a zero where it has none)."""
    n = len(p)
    return np.polyval(tp, x) + tx * np.polyval(p[:n - 1] * np.arange(n - 1, 0, -1), x)


_set([np.polyval], lambda em, s, ts: em.op(
    "call", j_polyval, *em.operands(s)[:2],
    *[t if t is not None else em.zero(a) for t, a in zip(ts[:2], em.operands(s)[:2])]))
_set([np.linalg.det], _matrix_jvp(j_det))
_set([np.linalg.slogdet], _matrix_jvp(j_slogdet))
_set([np.linalg.inv], _matrix_jvp(j_inv))
_set([np.linalg.solve], _matrix_jvp(j_solve, data=2))
for _f, _j in ((np.linalg.eigh, j_eigh), (np.linalg.eigvalsh, j_eigvalsh)):
    _set([_f], lambda em, s, ts, _j=_j: em.op(
        "call", _j, s.var, em.operands(s)[0], em.or_none(ts[0]), **s.kwargs))
_set([np.linalg.cholesky], lambda em, s, ts: em.op(
    "call", j_cholesky, s.var, em.operands(s)[0], em.or_none(ts[0]), **s.kwargs))


@_axis_helper
def j_extreme(y, x, t, axis=None, keepdims=False):
    """The tangent of `np.max(x, axis)` (min too): the mean of t over the entries that
    attain the extreme (as the pullback shares dy among ties)."""
    yk = y if keepdims or axis is None else np.expand_dims(y, axis)
    mask = (x == yk) * 1.0
    share = np.sum(t * mask, axis=axis, keepdims=keepdims) / \
        np.sum(mask, axis=axis, keepdims=keepdims)
    return share + np.zeros_like(y)       # (y's shape, whatever the reduction's type)


def _var_tangent(x, t, axis, ddof, keepdims):
    """d var = 2 sum((x - mean) t) / (N - ddof) over the axes (the mean's own tangent
    drops out: the deviations sum to zero)."""
    mean = np.mean(x, axis=axis, keepdims=True)
    count = x.size // mean.size
    return 2.0 * np.sum((x - mean) * t, axis=axis, keepdims=keepdims) / (count - ddof)


@_axis_helper
def j_var(y, x, t, axis=None, dtype=None, out=None, ddof=0, keepdims=False,
          correction=None):
    return _var_tangent(x, t, axis, ddof if correction is None else correction, keepdims)


@_axis_helper
def j_std(y, x, t, axis=None, dtype=None, out=None, ddof=0, keepdims=False,
          correction=None):
    """d std = d var / (2 std), 0 where the spread is zero (as the pullback takes it)."""
    dv = _var_tangent(x, t, axis, ddof if correction is None else correction, keepdims)
    return np.where(y == 0.0, 0.0, dv / (2.0 * np.where(y == 0.0, 1.0, y)))


def _reduction_jvp(helper):
    """The jvp of a reduction `helper(y, x, t, *options)` with the call's options."""
    def jvp(em, s, ts):
        if ts[0] is None:
            return None
        args = em.operands(s)
        return em.op("call", helper, s.var, args[0], ts[0], *args[1:], **s.kwargs)
    return jvp


@_axis_helper
def j_squeeze(y, t, axis=None):
    """The tangent of `np.squeeze(x, axis)`: without an axis, of an array of one
    element, that element (a number, as the JIT types such a squeeze)."""
    if axis is None and not isinstance(y, np.ndarray):
        return np.sum(t)
    return np.squeeze(t, axis=axis)


def _named(module, names: str) -> list:
    """The functions of `module` called `names` that this Python and numpy have
    (`math.cbrt` is 3.11's, `np.row_stack` is gone from numpy 2.x)."""
    return [getattr(module, n) for n in names.split() if hasattr(module, n)]


linear(["neg"])
linear(["copy", "pos", "unpack"])
elementwise(["abs"])
_set(["getattr"], _getattr_jvp)          # (methods: see the transform)
multilinear(_named(np, "multiply matmul dot inner outer kron cross tensordot convolve "
                       "correlate"))
multilinear([np.einsum], data=tuple(range(1, 33)))   # after the subscripts
linear([np.full, np.full_like], data=(1,))
linear([tuple, list, np.float32, np.gradient, np.ndarray.flatten])
linear([np.linspace], data=(0, 1))       # start * (1 - t) + stop * t: jointly linear
linear([scatter_added], data=(0, 2))     # (np.add.at, made explicit: the indices fixed)
linear([np.add, np.subtract], data=(0, 1))
linear(_named(np, """negative conjugate real sum mean cumsum diff reshape ravel transpose
    swapaxes moveaxis rollaxis expand_dims atleast_1d atleast_2d atleast_3d
    broadcast_to flip fliplr flipud rot90 roll tile repeat diag diagflat diagonal trace
    tril triu take copy array asarray float64 split array_split hsplit vsplit dsplit
    concatenate stack hstack vstack dstack column_stack row_stack pad real_if_close
    degrees radians deg2rad rad2deg take_along_axis""")
       + _named(math, "fsum degrees radians") + [float])
linear([builtins.sum], data=(0, 1))      # sum(xs, start): start is summed too
linear([np.where], data=(1, 2))
linear([column, check_bound])            # zip's column i, a read of a local
def _loop_items_jvp(em, s, ts):
    """The tangent of the sequence a loop reads (`j_loop_items`); none for the keys of
    a dict or the items of a set built here, which never carry a tangent (compiled
    code then carries no tangent for a str key)."""
    v = em.operands(s)[0]
    made = em.defs.get(v)
    if ts[0] is None or getattr(made, "op", None) in ("dict", "set"):
        return None
    return em.op("call", j_loop_items, v, ts[0])


_set([loop_items], _loop_items_jvp)
linear([merged, keywords], data=tuple(range(32)))   # `{**a, **b}`, `f(k=v, **d)`
linear([with_entry], data=(0, 2))        # a dict comprehension's step
elementwise(_named(math, """sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh exp
    expm1 exp2 log1p log2 log10 sqrt cbrt fabs erf erfc gamma lgamma atan2 hypot log
    copysign fmod pow""") + [builtins.abs, builtins.pow]
            + _named(np, """sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh
    arctanh exp expm1 exp2 log log1p log2 log10 sqrt cbrt square fabs abs arctan2 hypot
    maximum minimum fmax fmin power float_power reciprocal divide fmod remainder logaddexp
    logaddexp2 clip"""))
_set(_named(np, "max min amax amin"), _reduction_jvp(j_extreme))
_set([np.var], _reduction_jvp(j_var))
_set([np.squeeze], lambda em, s, ts: None if ts[0] is None else em.op(
    "call", j_squeeze, s.var, ts[0], *em.operands(s)[1:], **s.kwargs))
_set([np.std], _reduction_jvp(j_std))
scalar_result([np.prod, np.linalg.norm])
nondiff("zero_tangent")
HELPERS.update(rows=rows, astype=j_astype, call_value=j_call_value, call_method=j_call_method,
               zero=TangentHelper(zero_tangent))
