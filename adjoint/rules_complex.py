"""Complex numbers: zygopy's convention, and the rules that follow it.

zygopy follows JAX's and autograd's convention.  A complex number z = x + iy is the
pair of reals (x, y), and a cotangent c stands for the real-linear map
dz -> Re(c * dz), so `gradient` of a real f of z is df/dx - i df/dy (the conjugate
of the direction of steepest ascent: step along its conjugate), and `back(ct)` of a
holomorphic f is ct * f'(z), linear in ct as JAX's `vjp` is.  At z = 1 + 2j,
`gradient(lambda z: abs(z * z), z)` is 2 - 4j, as `jax.grad` and `autograd.grad`
give.  A real value's cotangent is real: `Pullback.complex_call` keeps the real part
of a real operand's.

Every real-linear rule with real coefficients (sums, reshapes, indexing, the tape's
accumulation) is the same in every convention; the convention lives in the rules
below, each a pullback's `on_complex`, and nowhere else: `gradient`, `pullback`,
`batch=`, `checkpoint=` and nested differentiation pass cotangents through unchanged.
Complex values run in the interpreter only (the JIT refuses them), so these are plain
Python that nothing compiles.  A rule without an `on_complex` refuses a complex operand
or cotangent with a TypeError rather than give a number in another convention:
  * holomorphic ones (`holomorphic`): the arithmetic operators, the elementary
    functions.  Their real pullback computes dy * f'(z), which numpy evaluates for
    complex z as well, so it serves unchanged;
  * `np.sum`/`np.mean`, `math.log`/`np.log`, `x ** y` (the real rules take a list,
    a base, compare with 0 or call math.log) and the Euclidean `np.linalg.norm`;
  * what loops and unpacking read (`loop_items`, zip's columns, `a, b = v`), and
    `complex(re, im)`;
  * the non-holomorphic parts: `abs`, `.real`, `.imag`, `np.real`, `np.imag`,
    `np.conjugate` (and the `conjugate`/`conj` methods), `np.angle`; and `np.sign`,
    refused for complex values (its real rule is the zero of a piecewise constant
    function).
The cotangent primitives of nested differentiation register theirs in
`adjoint.nested` (linear), which differentiates these complex forms where complex
values flow through a derivative of a derivative.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from . import rules_elementary as E
from . import rules_math as M
from . import rules_norms as NR
from . import rules_numpy as N
from . import rules_ufuncs as U
from .rule_table import OP_RULES, Pullback, defmethod, pullback_rule
from .rules_ufuncs import cotangent_like
from .tape import unbcast


def holomorphic(*pullbacks: Pullback) -> None:
    """The real pullback of each (dy * f'(z)) is its complex one too."""
    for pb in pullbacks:
        pb.on_complex = pb.fn


def on_complex(*pullbacks: Pullback) -> Callable:
    """Decorator: `fn` is the complex pullback of `pullbacks`."""
    def deco(fn: Callable) -> Callable:
        for pb in pullbacks:
            pb.on_complex = fn
        return fn
    return deco


def _op_pullbacks(op: str) -> tuple:
    """The pullback of op `op` and of its scalar and partial variants."""
    rule = OP_RULES[op]
    return (rule.pullback,) + tuple(v.pullback for v in rule.scalar + rule.partial)


for _op in ("add", "sub", "mul", "truediv", "neg", "matmul"):
    holomorphic(*_op_pullbacks(_op))
# what a loop or an unpacking reads (linear, real coefficients: the same for complex values)
holomorphic(M.d_loop_items, M.d_column, M.d_check_bound)
holomorphic(E.d_sin, E.d_cos, E.d_tan, E.d_asin, E.d_acos, E.d_atan, E.d_sinh, E.d_cosh,
            E.d_tanh, E.d_exp, E.d_expm1, E.d_log1p, E.d_log2, E.d_log10, E.d_sqrt)


def _expand(dy, x, axis, keepdims):
    """A reduction's cotangent broadcast back over the reduced axes of array `x`."""
    g = np.asarray(dy)
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
    return np.array(np.broadcast_to(g, np.shape(x)))


@on_complex(N.d_np_sum)
def d_np_sum_complex(dy, x, axis=None, keepdims=False):
    if not isinstance(x, (np.ndarray, complex, float, int)):
        raise TypeError("adjoint: the derivative of numpy.sum of a list does not support "
                        "complex numbers yet")
    g = _expand(dy, x, axis, keepdims)
    return (g if isinstance(x, np.ndarray) else complex(g),)


@on_complex(N.d_np_mean)
def d_np_mean_complex(dy, x, axis=None, keepdims=False):
    n = np.size(x) if axis is None else np.prod([np.shape(x)[a] for a in np.atleast_1d(axis)])
    return (d_np_sum_complex(dy, x, axis, keepdims)[0] / n,)


@on_complex(E.d_log)
def d_log_complex(dy, x, base=None):
    if base is not None:
        raise TypeError("adjoint: the derivative of math.log with a base does not support "
                        "complex numbers yet")
    return (dy / x,)


# -- x ** y ---------------------------------------------------------------------------------
def _pow_parts(dy, x, y):
    """(dy * d/dx x**y, dy * d/dy x**y) for any numbers or arrays."""
    xa, ya = np.asarray(x, dtype=complex), np.asarray(y, dtype=complex)
    gx = np.where(ya == 0, 0.0, ya * xa ** np.where(ya == 0, 1.0, ya - 1))
    gy = np.where(xa == 0, 0.0, xa ** ya * np.log(np.where(xa == 0, 1.0, xa)))
    return _shaped(dy * gx, x), _shaped(dy * gy, y)


def _shaped(g, x):
    g = unbcast(np.asarray(g), x) if isinstance(x, np.ndarray) else np.sum(g)
    return complex(g) if not isinstance(x, np.ndarray) else g


pow_rule = OP_RULES["pow"]
on_complex(pow_rule.pullback)(_pow_parts)


@on_complex(*(v.pullback for v in pow_rule.scalar))
def d_pow_base_complex(dy, x, y):
    return _pow_parts(dy, x, y)[0], 0.0


# -- abs and the parts of a complex number ---------------------------------------------------
def _unit(z):
    """conj(z) / |z| (0 at 0): the gradient of |z|.  Written with differentiable
    operations only: a derivative of a derivative differentiates it."""
    r = np.abs(z)
    if isinstance(z, np.ndarray):
        return np.conj(z) / np.where(r == 0, 1.0, r) * (r != 0)
    return 0j if r == 0 else np.conj(z) / r


@on_complex(E.d_abs)
def d_abs_complex(dy, x):
    return (np.real(dy) * _unit(x),)


@on_complex(M.d_getattr)
def d_getattr_complex(dy, x, name):
    if name == "real":
        return np.real(dy) + 0j, None
    if name == "imag":
        return -1j * np.real(dy), None
    if name == "T":
        return np.transpose(dy), None
    return dy, None


@on_complex(M.d_unpack)
def d_unpack_complex(dy, x, n):
    """`a, b = x`: the rows' cotangents stacked (complex ones kept complex)."""
    if not isinstance(x, np.ndarray):
        return dy, None
    rows = [np.zeros(x.shape[1:], dtype=x.dtype) if g is None else g for g in dy]
    return np.array(rows, dtype=np.result_type(x.dtype, *rows)), None


def _zero_like(dy, x):
    """The zero cotangent of operand `x` (a piecewise constant function of a real)."""
    return cotangent_like(0.0 * np.real(dy), x)


def _like_operand(g, x):
    """A complex cotangent of operand `x` from `g` (the result's broadcast shape)."""
    if isinstance(x, np.ndarray):
        return np.asarray(unbcast(np.asarray(g), x)) + 0j
    return complex(np.sum(g))


@on_complex(U.d_np_real)     # np.real, np.real_if_close
def d_np_real_complex(dy, x, tol=100):
    return (_like_operand(np.real(dy), x),)


@pullback_rule(np.conjugate)
def d_np_conjugate(dy, x):
    """For a real x, the identity."""
    return cotangent_like(np.real(dy), x)


@pullback_rule(np.imag)
def d_np_imag(dy, x):
    """np.imag of a real value: the constant 0."""
    return (_zero_like(dy, x),)


@pullback_rule(np.angle)
def d_np_angle(dy, x, deg=False):
    """np.angle of a real value: piecewise constant (0 or pi)."""
    return (_zero_like(dy, x),)


@pullback_rule(np.sign)
def d_np_sign(dy, x):
    """np.sign of a real value: piecewise constant (refused for a complex one)."""
    return (_zero_like(dy, x),)


@on_complex(d_np_conjugate)
def d_np_conjugate_complex(dy, x):
    return (_like_operand(np.conj(dy), x),)


for _cls, _name in ((complex, "conjugate"), (float, "conjugate"), (np.ndarray, "conjugate"),
                   (np.ndarray, "conj")):      # (the methods: as np.conjugate)
    defmethod(_cls, _name, d_np_conjugate.fn).pullback.on_complex = d_np_conjugate_complex


@on_complex(d_np_imag)
def d_np_imag_complex(dy, x):
    return (_like_operand(-1j * np.real(dy), x),)


@on_complex(d_np_angle)
def d_np_angle_complex(dy, x, deg=False):
    r2 = np.abs(x) ** 2
    g = np.where(r2 == 0, 0.0, -1j * np.conj(x) / np.where(r2 == 0, 1.0, r2))
    scale = math.pi / 180.0 if deg else 1.0
    return (_like_operand(np.real(dy) * scale * g, x),)


# -- np.linalg.norm --------------------------------------------------------------------------
def _is_euclidean(ord, naxes: int) -> bool:
    """Whether norm(..., ord) over `naxes` axes is the square root of a sum of |x|**2."""
    return ord is None or (ord == 2 and naxes == 1) or (ord == "fro" and naxes == 2)


@on_complex(NR.d_np_norm)
def d_np_norm_complex(dy, y, x, ord=None, axis=None, keepdims=False):
    """The Euclidean (Frobenius) norm: real(dy) * conj(x) / norm; other orders refused."""
    xa = np.asarray(x)
    axes = tuple(range(xa.ndim)) if axis is None else \
        tuple(int(a) % xa.ndim for a in np.atleast_1d(axis))
    if not _is_euclidean(ord, len(axes)):
        raise TypeError(f"adjoint: the derivative of numpy.linalg.norm with ord={ord!r} "
                        "does not support complex numbers yet (only the Euclidean norm)")
    if axis is not None and not keepdims:
        y, dy = np.expand_dims(y, axes), np.expand_dims(dy, axes)
    r = np.asarray(y, dtype=float)
    g = np.where(r == 0, 0.0, np.conj(xa) / np.where(r == 0, 1.0, r)) * np.real(dy)
    return (g if isinstance(x, np.ndarray) else complex(g),)


# -- complex(re, im) -------------------------------------------------------------------------
@pullback_rule(complex)
def d_complex(dy, *parts):
    """complex(re, im) of real numbers: (Re dy, -Im dy), dy being dL/dx - i dL/dy."""
    if any(isinstance(p, (complex, np.complexfloating, str)) for p in parts):
        raise TypeError("adjoint: the derivative of complex() of a complex number or a "
                        "string is not supported yet")
    return (float(np.real(dy)), -float(np.imag(dy)))[:len(parts)]


d_complex.on_complex = d_complex.fn
