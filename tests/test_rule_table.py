"""Gradient tests driven by the rule table (as JAX's `lax_autodiff_test` is by its
op records): every library callable with a derivative rule is either in `SPECS`, with
a call of it on inputs from its domain, or on `EXEMPT` with the reason.  A rule added
to the table without either fails `test_every_rule_has_a_spec`.

For each spec, with s(xs) = sum(w * f(xs)) for a fixed random cotangent w:
  * reverse mode (interpreter) against central differences of s;
  * the compiled gradient (`backend="llvm"`) against the interpreter's, to 1e-10,
    unless the call is on `NOT_COMPILED` (the JIT refuses it, saying so);
  * forward mode against reverse mode: <J v, w> = <v, J^T w> for a random tangent v,
    unless on `NO_FORWARD`;
  * second order: the Hessian of s times v (`hvp`, reverse over forward) against
    central differences of the gradient, for specs of one argument marked `order=2`.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from adjoint import gradient, hvp, jvp
from adjoint_check import central_differences
from adjoint.rule_table import CALL_RULES, OP_RULES, _BY_ID

RNG = np.random.default_rng(20261129)
NUMPY_2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"    # (cholesky's upper=)


def A(lo=-0.9, hi=0.9, shape=(3,)):
    return lambda: RNG.uniform(lo, hi, size=shape)


def S(lo=-0.9, hi=0.9):
    return lambda: float(RNG.uniform(lo, hi))


POS, UNIT, BIG = A(0.3, 1.7), A(-0.8, 0.8), A(1.2, 2.5)
SPOS, SUNIT, SBIG = S(0.3, 1.7), S(-0.8, 0.8), S(1.2, 2.5)
M22, M33 = A(-1, 1, (2, 2)), A(-1, 1, (3, 3))
SPD = (lambda: (lambda m: m @ m.T + 3 * np.eye(3))(RNG.uniform(-1, 1, (3, 3))))


def _eig_readout(wv):
    """A smooth readout of eigh's result: the eigenvalues, and each eigenvector's outer
    product (unchanged by the sign numpy picks), weighted."""
    w, v = wv
    return np.sum(w * w) + np.sum((v[:, 0:1] @ v[:, 0:1].T) * np.arange(9.0).reshape(3, 3)) \
        + np.sum(v[:, 2:3] @ v[:, 2:3].T)


def _row_stack_of(parts):
    """np.row_stack, deprecated in numpy 2 (its warning is not the rule's concern)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return np.row_stack(parts)


_ROW_STACK = _row_stack_of if "row_stack" in vars(np) else None   # (gone in numpy 2.4)


class Spec:
    """`fn` called on inputs drawn by `args`; `order=2` adds the Hessian check; `step`
    and `rtol`: the central differences' step and tolerance (a float32 rounding is a
    step of the function, so its differences need a longer step and get fewer digits)."""

    def __init__(self, fn, *args, order=1, step=1e-6, rtol=1e-6, agree=1e-10):
        self.fn, self.args, self.order, self.step, self.rtol = fn, args, order, step, rtol
        self.agree = agree     # compiled against interpreted


def _u(f, dom=UNIT, order=2):
    return Spec(f, dom, order=order)


SPECS = {
    # -- math: numbers -------------------------------------------------------------
    "math.sin": _u(math.sin, SUNIT), "math.cos": _u(math.cos, SUNIT),
    "math.tan": _u(math.tan, SUNIT), "math.asin": _u(math.asin, SUNIT),
    "math.acos": _u(math.acos, SUNIT), "math.atan": _u(math.atan, SUNIT),
    "math.sinh": _u(math.sinh, SUNIT), "math.cosh": _u(math.cosh, SUNIT),
    "math.tanh": _u(math.tanh, SUNIT), "math.asinh": _u(math.asinh, SUNIT),
    "math.acosh": _u(math.acosh, SBIG), "math.atanh": _u(math.atanh, SUNIT),
    "math.exp": _u(math.exp, SUNIT), "math.exp2": _u(getattr(math, "exp2", None), SUNIT),
    "math.expm1": _u(math.expm1, SUNIT), "math.log": _u(math.log, SPOS),
    "math.log2": _u(math.log2, SPOS), "math.log10": _u(math.log10, SPOS),
    "math.log1p": _u(math.log1p, SPOS), "math.sqrt": _u(math.sqrt, SPOS),
    "math.cbrt": _u(getattr(math, "cbrt", None), SPOS),
    "math.erf": _u(math.erf, SUNIT), "math.erfc": _u(math.erfc, SUNIT),
    "math.gamma": _u(math.gamma, SBIG), "math.lgamma": _u(math.lgamma, SBIG),
    "math.fabs": _u(math.fabs, SPOS), "math.degrees": _u(math.degrees, SUNIT),
    "math.radians": _u(math.radians, SUNIT),
    "math.atan2": Spec(math.atan2, SUNIT, SPOS, order=2),
    "math.hypot": Spec(math.hypot, SPOS, SPOS, order=2),
    "math.pow": Spec(math.pow, SPOS, SUNIT, order=2),
    "math.copysign": Spec(math.copysign, SPOS, SPOS),
    "math.fmod": Spec(math.fmod, S(2.1, 2.9), S(0.6, 0.9)),
    "math.fsum": Spec(lambda a, b: math.fsum([a, b, a * b]), SUNIT, SUNIT),
    "math.prod": Spec(lambda a, b: math.prod([a, b, a * b, 2.0]), SUNIT, SUNIT, order=2),
    "builtins.abs": _u(abs, SPOS), "builtins.pow": Spec(pow, SPOS, SUNIT, order=2),
    "builtins.float": _u(float, SUNIT, order=1),
    "builtins.max": Spec(lambda a, b: max(a, 2 * b), SUNIT, SPOS),
    "builtins.min": Spec(lambda a, b: min(a, 2 * b), SUNIT, SPOS),
    "builtins.sum": Spec(lambda x: sum(x), UNIT),
    "builtins.sorted": Spec(lambda x: sorted(x)[0] + 2 * sorted(x)[2], UNIT),
    "builtins.enumerate": Spec(lambda x: sum(v * (i + 1.0) for i, v in list(enumerate(x))), UNIT),
    "builtins.list": Spec(lambda x: list(x)[1] * 3.0, UNIT),
    "builtins.tuple": Spec(lambda x: tuple(x)[2] * 3.0, UNIT),
    # -- numpy: elementwise ----------------------------------------------------------
    "numpy.sin": _u(np.sin), "numpy.cos": _u(np.cos), "numpy.tan": _u(np.tan),
    "numpy.arcsin": _u(np.arcsin), "numpy.arccos": _u(np.arccos),
    "numpy.arctan": _u(np.arctan), "numpy.sinh": _u(np.sinh), "numpy.cosh": _u(np.cosh),
    "numpy.tanh": _u(np.tanh), "numpy.arcsinh": _u(np.arcsinh),
    "numpy.arccosh": _u(np.arccosh, BIG), "numpy.arctanh": _u(np.arctanh),
    "numpy.exp": _u(np.exp), "numpy.exp2": _u(np.exp2), "numpy.expm1": _u(np.expm1),
    "numpy.log": _u(np.log, POS), "numpy.log2": _u(np.log2, POS),
    "numpy.log10": _u(np.log10, POS), "numpy.log1p": _u(np.log1p, POS),
    "numpy.sqrt": _u(np.sqrt, POS), "numpy.cbrt": _u(np.cbrt, POS),
    "numpy.square": _u(np.square), "numpy.absolute": _u(np.abs, POS),
    "numpy.fabs": _u(np.fabs, POS), "numpy.negative": _u(np.negative),
    "numpy.sign": _u(lambda x: np.sign(x) * x, POS),
    "numpy.degrees": _u(np.degrees), "numpy.radians": _u(np.radians),
    "numpy.deg2rad": _u(np.deg2rad), "numpy.rad2deg": _u(np.rad2deg),
    "numpy.real": _u(np.real, order=1), "numpy.imag": _u(lambda x: np.imag(x) + x, order=1),
    "numpy.conjugate": _u(np.conjugate, order=1),
    "numpy.angle": _u(lambda x: np.angle(x) + x, POS, order=1),
    "numpy.real_if_close": _u(np.real_if_close, order=1),
    "numpy.add": Spec(np.add, UNIT, UNIT, order=2),
    "numpy.subtract": Spec(np.subtract, UNIT, UNIT, order=2),
    "numpy.multiply": Spec(np.multiply, UNIT, UNIT, order=2),
    "numpy.divide": Spec(np.divide, UNIT, POS, order=2),
    "numpy.power": Spec(np.power, POS, UNIT, order=2),
    "numpy.arctan2": Spec(np.arctan2, UNIT, POS, order=2),
    "numpy.hypot": Spec(np.hypot, POS, POS, order=2),
    "numpy.logaddexp": Spec(np.logaddexp, UNIT, UNIT, order=2),
    "numpy.logaddexp2": Spec(np.logaddexp2, UNIT, UNIT, order=2),
    "numpy.maximum": Spec(lambda a, b: np.maximum(a, b + 2.0), UNIT, UNIT),
    "numpy.minimum": Spec(lambda a, b: np.minimum(a, b + 2.0), UNIT, UNIT),
    "numpy.fmax": Spec(lambda a, b: np.fmax(a, b + 2.0), UNIT, UNIT),
    "numpy.fmin": Spec(lambda a, b: np.fmin(a, b + 2.0), UNIT, UNIT),
    "numpy.fmod": Spec(np.fmod, A(2.1, 2.9), A(0.6, 0.9)),
    "numpy.remainder": Spec(np.remainder, A(2.1, 2.9), A(0.6, 0.9)),
    "numpy.clip": Spec(lambda x: np.clip(x, -0.5, 0.5), A(-0.45, 0.45, (4,))),
    "numpy.where": Spec(lambda a, b: np.where(a > 0, a * b, b), UNIT, UNIT),
    "numpy.select": Spec(lambda a: np.select([a > 0.3, a < -0.3], [a * a, 2 * a], a), UNIT),
    "numpy.choose": Spec(lambda a, b: np.choose([0, 1, 0], [a, b]), UNIT, UNIT),
    "numpy.float64": _u(lambda x: np.float64(x) * x, SUNIT, order=1),
    # (the interpreter rounds the cotangent of the float32 number to float32, as JAX
    # does; compiled code and forward mode keep it in a double: float32's last bit)
    "numpy.float32": Spec(lambda x: np.float64(np.float32(x)) + x, SUNIT, step=1e-2,
                          rtol=1e-4, agree=1e-7),
    # -- numpy: reductions -------------------------------------------------------------
    "numpy.sum": Spec(lambda m: np.sum(m * m, axis=0), M33, order=2),
    "numpy.mean": Spec(lambda m: np.mean(m, axis=1), M33),
    "numpy.prod": Spec(lambda m: np.prod(m, axis=0), M33, order=2),
    "numpy.max": Spec(lambda m: np.max(m, axis=1), M33),
    "numpy.min": Spec(lambda m: np.min(m, axis=0), M33),
    "numpy.amax": Spec(lambda m: np.amax(m), M33),
    "numpy.amin": Spec(lambda m: np.amin(m), M33),
    "numpy.std": Spec(lambda m: np.std(m, axis=0), M33, order=2),
    "numpy.var": Spec(lambda m: np.var(m), M33, order=2),
    "numpy.cumsum": Spec(lambda x: np.cumsum(x), A(shape=(4,))),
    "numpy.cumprod": Spec(lambda x: np.cumprod(x), A(0.5, 1.5, (4,)), order=2),
    "numpy.diff": Spec(lambda x: np.diff(x) ** 2, A(shape=(5,))),
    "numpy.trace": Spec(np.trace, M33),
    "numpy.gradient": Spec(lambda x: np.gradient(x) ** 2, A(shape=(5,))),
    "numpy.linalg.norm": Spec(np.linalg.norm, M33, order=2),
    "numpy.sort": Spec(lambda x: np.sort(x) * np.arange(4.0), A(shape=(4,))),
    "numpy.partition": Spec(lambda x: np.partition(x, 2)[2] * x, A(shape=(4,))),
    # -- numpy: linear algebra ---------------------------------------------------------
    "numpy.dot": Spec(np.dot, M33, A(), order=2),
    "numpy.matmul": Spec(np.matmul, M33, M33, order=2),
    "numpy.inner": Spec(np.inner, A(), A(), order=2),
    "numpy.outer": Spec(np.outer, A(), A(shape=(2,)), order=2),
    "numpy.tensordot": Spec(lambda a, b: np.tensordot(a, b, axes=1), M33, M33),
    "numpy.einsum": Spec(lambda a, b: np.einsum("ij,jk->ik", a, b), M33, M33, order=2),
    "numpy.kron": Spec(np.kron, M22, M22),
    "numpy.cross": Spec(np.cross, A(), A()),
    "numpy.convolve": Spec(np.convolve, A(shape=(4,)), A(shape=(2,))),
    "numpy.polyval": Spec(np.polyval, A(shape=(4,)), A(), order=2),
    "numpy.correlate": Spec(lambda a, b: np.correlate(a, b, "full"), A(shape=(4,)),
                            A(shape=(2,))),
    "numpy.linalg.inv": Spec(np.linalg.inv, SPD, order=2),
    "numpy.linalg.det": Spec(np.linalg.det, SPD, order=2),
    "numpy.linalg.slogdet": Spec(lambda m: np.linalg.slogdet(m)[1], SPD, order=2),
    "numpy.linalg.solve": Spec(np.linalg.solve, SPD, A()),
    # (eigenvectors have a sign: a smooth function of them is v v^T, or |v|)
    "numpy.linalg.eigh": Spec(lambda m: _eig_readout(np.linalg.eigh(m)), SPD, order=2),
    "numpy.linalg.eigvalsh": Spec(lambda m: np.linalg.eigvalsh(m) ** 2, SPD, order=2),
    "numpy.linalg.cholesky": Spec(lambda m: np.linalg.cholesky(m) + (
        np.linalg.cholesky(m, upper=True) if NUMPY_2 else 0.0), SPD),
    # -- numpy: shapes -------------------------------------------------------------------
    "numpy.reshape": Spec(lambda m: np.reshape(m, (9,)) * np.arange(9.0), M33),
    "numpy.linspace": Spec(lambda a, b: np.linspace(a, b, 5) ** 2, SUNIT, SUNIT, order=2),
    "numpy.arange": Spec(lambda a, b: np.arange(a, a + 2.0, b) ** 2, SUNIT, S(0.6, 0.65)),
    "numpy.reciprocal": _u(np.reciprocal, POS),
    "numpy.float_power": Spec(lambda a, b: np.float_power(a, b), POS, UNIT, order=2),
    "numpy.ravel": Spec(lambda m: np.ravel(m) * np.arange(9.0), M33),
    "numpy.ndarray.flatten": Spec(lambda m: m.T.flatten() * np.arange(9.0), M33),
    "numpy.transpose": Spec(lambda m: np.transpose(m) * np.arange(9.0).reshape(3, 3), M33),
    "numpy.swapaxes": Spec(lambda m: np.swapaxes(m, 0, 1)[0], M33),
    "numpy.moveaxis": Spec(lambda m: np.moveaxis(m, 0, 1)[0], M33),
    "numpy.rollaxis": Spec(lambda m: np.rollaxis(m, 1)[0], M33),
    "numpy.squeeze": Spec(lambda m: np.squeeze(m[None]) * m, M33),
    "numpy.expand_dims": Spec(lambda x: np.expand_dims(x, 0) * x[:, None], A()),
    "numpy.atleast_1d": Spec(lambda x: np.atleast_1d(x) * 2.0, SUNIT),
    "numpy.atleast_2d": Spec(lambda x: np.atleast_2d(x)[0] * x, A()),
    "numpy.atleast_3d": Spec(lambda x: np.atleast_3d(x)[0, :, 0] * x, A()),
    "numpy.broadcast_to": Spec(lambda x: np.broadcast_to(x, (2, 3)) * np.arange(6.0)
                               .reshape(2, 3), A()),
    "numpy.tile": Spec(lambda x: np.tile(x, 2) * np.arange(6.0), A()),
    "numpy.repeat": Spec(lambda x: np.repeat(x, 2) * np.arange(6.0), A()),
    "numpy.flip": Spec(lambda x: np.flip(x) * np.arange(3.0), A()),
    "numpy.fliplr": Spec(lambda m: np.fliplr(m)[0], M33),
    "numpy.flipud": Spec(lambda m: np.flipud(m)[0], M33),
    "numpy.rot90": Spec(lambda m: np.rot90(m)[0], M33),
    "numpy.roll": Spec(lambda x: np.roll(x, 1) * np.arange(3.0), A()),
    "numpy.pad": Spec(lambda x: np.pad(x, 1) * np.arange(5.0), A()),
    "numpy.diag": Spec(lambda x: np.diag(x)[0] + np.diag(np.outer(x, x)), A()),
    "numpy.diagflat": Spec(lambda x: np.diagflat(x)[1], A()),
    "numpy.diagonal": Spec(lambda m: np.diagonal(m), M33),
    "numpy.tril": Spec(lambda m: np.tril(m)[2], M33),
    "numpy.triu": Spec(lambda m: np.triu(m)[0], M33),
    "numpy.take": Spec(lambda x: np.take(x, [2, 0, 2]), A()),
    "numpy.take_along_axis": Spec(lambda m: np.take_along_axis(
        m, np.array([[0], [2], [1]]), axis=1)[:, 0], M33),
    "numpy.concatenate": Spec(lambda a, b: np.concatenate([a, b, a]), A(), A()),
    "numpy.stack": Spec(lambda a, b: np.stack([a, b])[1] * a, A(), A()),
    "numpy.hstack": Spec(lambda a, b: np.hstack([a, b]) * np.arange(6.0), A(), A()),
    "numpy.vstack": Spec(lambda a, b: np.vstack([a, b])[0] * b, A(), A()),
    "numpy.row_stack": Spec(_ROW_STACK and (lambda a, b: _ROW_STACK([a, b])[1] * a), A(), A()),
    "numpy.dstack": Spec(lambda a, b: np.dstack([a, b])[0, :, 1] * a, A(), A()),
    "numpy.column_stack": Spec(lambda a, b: np.column_stack([a, b])[:, 0] * b, A(), A()),
    "numpy.split": Spec(lambda x: np.split(x, 2)[1] * 3.0, A(shape=(4,))),
    "numpy.array_split": Spec(lambda x: np.array_split(x, 2)[0] * 3.0, A()),
    "numpy.hsplit": Spec(lambda x: np.hsplit(x, 2)[1] * 3.0, A(shape=(4,))),
    "numpy.vsplit": Spec(lambda m: np.vsplit(m, 2)[0][0], A(shape=(4, 2))),
    "numpy.dsplit": Spec(lambda m: np.dsplit(m, 2)[1][0, 0], A(shape=(1, 2, 4))),
    "numpy.array": Spec(lambda a, b: np.array([a, b, a * b]), SUNIT, SUNIT),
    "numpy.asarray": Spec(lambda x: np.asarray(x) * x, A()),
    "numpy.copy": Spec(lambda x: np.copy(x) * x, A()),
    "numpy.full": Spec(lambda a: np.full(3, a) * np.arange(3.0), SUNIT),
    "numpy.full_like": Spec(lambda a, x: np.full_like(x, a) * x, SUNIT, A()),
}

def _inplace(op):
    """A function `(a, b) -> a op= b` on a copy of a (the in-place operators' rules)."""
    space = {"np": np}
    exec(f"def f(a, b):\n    a = a * 1.0\n    a {op}= b\n    return a\n", space)
    return space["f"]


# primitives of the IR with a derivative rule, called through Python's operators
OP_SPECS = {
    "add": Spec(lambda a, b: a + b, UNIT, UNIT, order=2),
    "sub": Spec(lambda a, b: a - b, UNIT, UNIT, order=2),
    "mul": Spec(lambda a, b: a * b, UNIT, UNIT, order=2),
    "truediv": Spec(lambda a, b: a / b, UNIT, POS, order=2),
    "pow": Spec(lambda a, b: a ** b, POS, UNIT, order=2),
    "mod": Spec(lambda a, b: a % b, A(2.1, 2.9), A(0.6, 0.9)),
    "neg": Spec(lambda a: -a, UNIT, order=2),
    "pos": Spec(lambda a: +a * a, UNIT, order=2),
    "abs": Spec(lambda a: abs(a), POS, order=2),
    "matmul": Spec(lambda a, b: a @ b, M33, M33, order=2),
    "iadd": Spec(_inplace("+"), UNIT, UNIT), "isub": Spec(_inplace("-"), UNIT, UNIT),
    "imul": Spec(_inplace("*"), UNIT, UNIT), "itruediv": Spec(_inplace("/"), UNIT, POS),
    "ipow": Spec(_inplace("**"), POS, UNIT), "imod": Spec(_inplace("%"), A(2.1, 2.9),
                                                           A(0.6, 0.9)),
    "imatmul": Spec(_inplace("@"), M33, M33),
    "getitem": Spec(lambda m: m[1:, 0] * m[0, ::-1][:2], M33, order=2),
}
# the J transform's own primitives (tape, cotangent and container plumbing), tested
# through every gradient that uses them
OP_EXEMPT = {"accum", "accum_index", "call", "contiguous", "copy", "dget", "dict",
             "getattr", "list", "list_append", "make_closure", "pop", "push", "setitem",
             "snapshot", "take_index", "tuple", "unbcast", "unpack", "zero_index"}
SPECS.update({f"op.{k}": v for k, v in OP_SPECS.items()})


# Callables with a rule that no spec calls, and why.
EXEMPT = {
    "adjoint.custom.checked_cotangents": "a custom_vjp's plumbing (tests/test_custom_derivatives.py)",
    "adjoint.custom.dense_cotangent": "a custom_vjp's plumbing (tests/test_custom_derivatives.py)",
    "adjoint.nested.finish_grads": "nested AD's plumbing (tests/test_adjoint_nested.py)",
    "adjoint.nested.seed_like": "nested AD's plumbing (tests/test_adjoint_nested.py)",
    "adjoint.nested_hv.captured_values": "nested AD's plumbing "
                                         "(tests/test_nested_captured_compiled.py)",
    "adjoint.tape.unbcast": "the adjoint's own helper, differentiated at second order",
    "builtins.complex": "complex values (tests/test_complex_convention.py)",
    "functools.partial": "a closure maker (tests/test_partials_and_config_compiled.py)",
    "lowering.runtime.check_bound": "lowering's plumbing for loops",
    "lowering.runtime.column": "lowering's plumbing for loops",
    "lowering.runtime.keywords": "lowering's plumbing for calls",
    "lowering.runtime.loop_items": "lowering's plumbing for loops",
    "lowering.runtime.merged": "lowering's plumbing for calls",
    "lowering.runtime.with_entry": "lowering's plumbing for `with`",
}

# Calls the JIT refuses (a TypingError naming the construct); the default backend
# runs them in the interpreter.
NOT_COMPILED: set = {"builtins.enumerate"}     # (as a value: `list(enumerate(x))`)
# Calls forward mode refuses (it says so).
NO_FORWARD: set = set()


LIBRARIES = ("math", "numpy", "builtins", "functools")


def _rule_names() -> set:
    """The library callables with a derivative rule (not the rules users add with
    `custom_vjp`, `@adjoint.rule` or a class, which other tests may have made by now),
    and zygopy's own plumbing named in `EXEMPT`."""
    out = set()
    for key, rule in list(CALL_RULES.items()) + list(_BY_ID.items()):
        if not rule.varied or (rule.pullback is None and rule.emit is None):
            continue
        module = getattr(key, "__module__", None) or getattr(   # (an ndarray method)
            getattr(key, "__objclass__", None), "__module__", None) or type(key).__name__
        name = f"{module}.{getattr(key, '__qualname__', getattr(key, '__name__', key))}"
        if module.partition(".")[0] in LIBRARIES or name in EXEMPT:
            out.add(name)
    return out


def test_every_op_rule_has_a_spec():
    ops = {k for k, r in OP_RULES.items() if r.varied and (r.pullback or r.emit)}
    missing = sorted(ops - set(OP_SPECS) - OP_EXEMPT)
    assert not missing, f"primitives with a rule but neither a spec nor an exemption: {missing}"
    assert not (set(OP_SPECS) | OP_EXEMPT) - ops


def test_every_rule_has_a_spec():
    names = _rule_names() | {f"op.{k}" for k in OP_SPECS}
    missing = sorted(n for n in names if n not in SPECS and n not in EXEMPT)
    assert not missing, f"rules with neither a spec nor an exemption: {missing}"
    stale = sorted(n for n in set(SPECS) | set(EXEMPT) if n not in names
                   and not (n in SPECS and SPECS[n].fn is None))   # (not in this Python)
    assert not stale, f"specs of callables that have no rule: {stale}"


def _setup(name):
    spec = SPECS[name]
    if spec.fn is None:
        pytest.skip(f"{name} is not in this Python")
    xs = tuple(g() for g in spec.args)
    y = spec.fn(*xs)
    w = RNG.uniform(0.5, 1.5, size=np.shape(y))
    w = float(w) if np.ndim(y) == 0 else w
    # s is a module-level function of its own (forward mode takes no closure), with
    # the callable and the cotangent as its globals
    params = ", ".join(f"x{k}" for k in range(len(xs)))
    space = {"np": np, "FN": spec.fn, "W": w}
    exec(f"def s({params}):\n    return np.sum(W * FN({params}))\n", space)
    return spec, xs, space["s"]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_rule(name):
    spec, xs, s = _setup(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = gradient(s, *xs, backend="interp")
        for k in range(len(xs)):
            np.testing.assert_allclose(want[k], central_differences(s, xs, k, spec.step),
                                       rtol=spec.rtol, atol=1e-8,
                                       err_msg=f"{name}: reverse mode vs differences, "
                                               f"argument {k}")
        if name not in NOT_COMPILED:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                got = gradient(s, *xs, backend="llvm")
            for k in range(len(xs)):
                np.testing.assert_allclose(got[k], want[k], rtol=spec.agree, atol=1e-12,
                                           err_msg=f"{name}: compiled vs interpreter")
        if name not in NO_FORWARD:
            vs = tuple(RNG.uniform(-1, 1, size=np.shape(x)) if np.ndim(x) else
                       float(RNG.uniform(-1, 1)) for x in xs)
            _, t = jvp(s, xs, vs, backend="interp")
            back = sum(float(np.sum(v * g)) for v, g in zip(vs, want))
            assert float(t) == pytest.approx(back, rel=max(1e-9, spec.agree), abs=1e-11), \
                f"{name}: <J v, w> {t} vs <v, J^T w> {back}"


SECOND = sorted(n for n, sp in SPECS.items() if sp.order == 2 and len(sp.args) == 1)


@pytest.mark.parametrize("name", SECOND)
def test_rule_second_order(name):
    spec, xs, s = _setup(name)
    x = xs[0]
    v = RNG.uniform(-1, 1, size=np.shape(x)) if np.ndim(x) else float(RNG.uniform(-1, 1))
    got = hvp(s, x, v, backend="interp")
    h = 1e-5
    want = (gradient(s, x + h * v, backend="interp")[0] -
            gradient(s, x - h * v, backend="interp")[0]) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7,
                               err_msg=f"{name}: H v vs differences of the gradient")
