"""What autograd's example programs import from autograd, for zygopy, in our own words.

`bench.autograd_upstream` runs autograd's `examples/*.py` with their import lines
swapped: `autograd.numpy` becomes numpy, and every other name they take from autograd
(`grad`, `value_and_grad`, `elementwise_grad`, `hessian_vector_product`, `flatten`,
`flatten_func`, `adam`, `sgd`, `check_grads`, scipy's `logsumexp`, `expit`, `norm`,
`t` and `multivariate_normal`) comes from here.  The derivative operators are thin
spellings of `adjoint.gradient` / `adjoint.pullback` / `adjoint.hvp`; the densities
are written from their textbook formulas in plain numpy, so zygopy differentiates
them like any user code.
"""
from __future__ import annotations

import math
import types

import numpy as np

from adjoint import gradient, hvp, pullback
from adjoint import value_and_grad as _value_and_grad

# -- derivative operators ---------------------------------------------------------------


def grad(fun, argnum=0):
    """d fun / d (argument `argnum`), as a function of fun's arguments."""
    return lambda *args, **kwargs: gradient(fun, *args, **kwargs)[argnum]


def value_and_grad(fun, argnum=0):
    """(fun(*args), d fun / d argument `argnum`) as a function of fun's arguments."""
    def both(*args, **kwargs):
        value, grads = _value_and_grad(fun, *args, **kwargs)
        return value, grads[argnum]
    return both


def elementwise_grad(fun, argnum=0):
    """The vector-Jacobian product of `fun` with a cotangent of ones (the elementwise
    derivative of a function applied element by element): the gradient of the sum of
    fun's output, as JAX's users write it.  For a function of plain positional
    parameters it is made with those parameters and `fun` a constant of its code, so
    that it nests to any order as `grad` does; otherwise a `pullback` of ones."""
    code = getattr(fun, "__code__", None)
    if type(fun) is types.FunctionType and not fun.__defaults__ and code.co_argcount \
            and not code.co_flags & 0x0C and not code.co_kwonlyargcount:
        ps = ", ".join(code.co_varnames[:code.co_argcount])
        src = (f"def summed({ps}):\n    return np.sum(fun({ps}))\n"
               f"def vjp_ones({ps}):\n    return gradient(summed, {ps})[{argnum}]\n")
        scope = {"np": np, "fun": fun, "gradient": gradient, "__name__": __name__}
        exec(compile(src, f"<elementwise_grad of {fun.__qualname__}>", "exec"), scope)
        return scope["vjp_ones"]

    def vjp_ones(*args):
        y, back = pullback(fun, *args)
        return back(np.ones_like(y))[argnum]
    return vjp_ones


def hessian_vector_product(fun, argnum=0):
    """(x, v) -> the Hessian of scalar `fun` at x, times v."""
    if argnum != 0:
        raise NotImplementedError("hessian_vector_product stand-in: argnum 0 only")
    return lambda x, v, *rest: hvp(fun, x, v, *rest)


def check_grads(fun, modes=("rev",), order=1):
    """Checks fun's gradient against central differences at a point (first order)."""
    def at(x):
        g = np.ravel(grad(fun)(x))
        flat = np.ravel(np.asarray(x, dtype=float))
        for k in range(flat.size):
            step = np.zeros(flat.size)
            step[k] = 1e-6
            up = fun(np.reshape(flat + step, np.shape(x)))
            down = fun(np.reshape(flat - step, np.shape(x)))
            fd = (up - down) / 2e-6
            if not math.isclose(g[k], fd, rel_tol=1e-4, abs_tol=1e-6):
                raise AssertionError(f"gradient entry {k}: {g[k]} vs central difference {fd}")
    return at

# -- pytrees as one vector ----------------------------------------------------------------


def _leaves(tree):
    """The arrays and numbers of a list / tuple / dict tree (a dict in its key order)."""
    if isinstance(tree, dict):
        return [leaf for key in tree for leaf in _leaves(tree[key])]
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in _leaves(item)]
    return [tree]


def _rebuild(tree, flat, start):
    """(a tree shaped like `tree` holding flat[start:...], the next start)."""
    if isinstance(tree, (dict, list, tuple)):
        keys = list(tree) if isinstance(tree, dict) else list(range(len(tree)))
        items = []
        for key in keys:
            part, start = _rebuild(tree[key], flat, start)
            items.append(part)
        if isinstance(tree, dict):
            out = {}
            for k in range(len(keys)):
                out[keys[k]] = items[k]
            return out, start
        return (items if isinstance(tree, list) else tuple(items)), start
    size = int(np.size(tree))
    part = flat[start:start + size]
    if np.ndim(tree) == 0:
        return part[0], start + size
    return np.reshape(part, np.shape(tree)), start + size


def _sorted_keys(tree):
    """`tree` with every dict's keys in sorted order (autograd's order of leaves)."""
    if isinstance(tree, dict):
        out = {}
        for key in sorted(tree):
            out[key] = _sorted_keys(tree[key])
        return out
    if isinstance(tree, (list, tuple)):
        return type(tree)(_sorted_keys(item) for item in tree)
    return tree


def flatten(tree):
    """(one vector of every number in `tree`, a function mapping such a vector back).
    Dicts in their own key order (this runs inside differentiated code, where
    `sorted` of the keys has no derivative rule); `flatten_func` sorts first."""
    flat = np.concatenate([np.ravel(leaf) for leaf in _leaves(tree)])
    return flat, lambda vec: _rebuild(tree, vec, 0)[0]


def flatten_func(fun, example):
    """(fun taking one vector instead of a tree like `example`, unflatten, the vector),
    the leaves in autograd's order (dict keys sorted)."""
    flat, unflatten = flatten(_sorted_keys(example))
    return (lambda vec, *args: fun(unflatten(vec), *args)), unflatten, flat

# -- optimisers (the examples' training loops; not run by the bench) -----------------------


def adam(grad_fn, x0, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999,
         eps=1e-8):
    """Adam on a tree of parameters (Kingma and Ba, 2015)."""
    x, unflatten = flatten(x0)
    m, v = np.zeros(len(x)), np.zeros(len(x))
    for i in range(num_iters):
        g = flatten(grad_fn(unflatten(x), i))[0]
        if callback:
            callback(unflatten(x), i, unflatten(g))
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat, vhat = m / (1 - b1 ** (i + 1)), v / (1 - b2 ** (i + 1))
        x = x - step_size * mhat / (np.sqrt(vhat) + eps)
    return unflatten(x)


def sgd(grad_fn, x0, callback=None, num_iters=200, step_size=0.1, mass=0.9):
    """Gradient descent with momentum on a tree of parameters."""
    x, unflatten = flatten(x0)
    velocity = np.zeros(len(x))
    for i in range(num_iters):
        g = flatten(grad_fn(unflatten(x), i))[0]
        if callback:
            callback(unflatten(x), i, unflatten(g))
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return unflatten(x)

# -- scipy.special and scipy.stats -------------------------------------------------------


def logsumexp(a, axis=None, keepdims=False):
    """log(sum(exp(a))) along `axis`, shifted by the maximum for range (no branch on
    the options: numpy's own keepdims rules give the result's shape)."""
    top = np.max(a, axis=axis, keepdims=True)
    peak = np.max(a, axis=axis, keepdims=keepdims)
    return np.log(np.sum(np.exp(a - top), axis=axis, keepdims=keepdims)) + peak


def expit(x):
    """The logistic function 1 / (1 + exp(-x)), through tanh (no overflow)."""
    return 0.5 * (np.tanh(0.5 * x) + 1.0)


def _norm_logpdf(x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return -0.5 * z * z - np.log(scale) - 0.5 * math.log(2.0 * math.pi)


def _norm_pdf(x, loc=0.0, scale=1.0):
    return np.exp(_norm_logpdf(x, loc, scale))


def _t_logpdf(x, df, loc=0.0, scale=1.0):
    """Student's t: log Gamma((df+1)/2) - log Gamma(df/2) - log(sqrt(pi df) scale)
    - (df+1)/2 log(1 + z^2/df)."""
    z = (x - loc) / scale
    const = math.lgamma(0.5 * (df + 1.0)) - math.lgamma(0.5 * df) - 0.5 * math.log(math.pi * df)
    return const - np.log(scale) - 0.5 * (df + 1.0) * np.log1p(z * z / df)


def _mvn_logpdf(x, mean, cov):
    """log N(x; mean, cov) of one point (1-D x) or of each row of a 2-D x."""
    dev = x - mean
    _, log_det = np.linalg.slogdet(cov)
    quad = np.sum(dev * np.linalg.solve(cov, dev.T).T, axis=-1)
    return -0.5 * (quad + log_det + np.shape(cov)[0] * math.log(2.0 * math.pi))


def _mvn_pdf(x, mean, cov):
    return np.exp(_mvn_logpdf(x, mean, cov))


norm = types.SimpleNamespace(logpdf=_norm_logpdf, pdf=_norm_pdf)
t = types.SimpleNamespace(logpdf=_t_logpdf)
multivariate_normal = types.SimpleNamespace(logpdf=_mvn_logpdf, pdf=_mvn_pdf)
