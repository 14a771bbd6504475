"""The idiomatic JAX rewrite of each workload, as a JAX user would write it for `jit`:
`lax.fori_loop` / `lax.scan` for loops (trip counts static, so that reverse mode
applies), `jnp.where` for branches (a per-element `lax.cond` under `vmap` becomes the
same select), vectorised `jnp` where the loop is a map or a reduction.  Same
mathematics as `bench.workloads`; imported only by the JAX adapter, after
`jax_enable_x64` is on.
"""
from __future__ import annotations

import jax.numpy as jnp
from jax import lax
from jax.scipy.special import erf


def pow_loop(x, n):
    return lax.fori_loop(0, n, lambda i, r: r * x, jnp.ones_like(x))


def pow_rec(x, n):
    # JAX has no recursion under jit; the idiomatic form of x**n by recursion is a loop.
    return lax.fori_loop(0, n, lambda i, r: x * r, jnp.ones_like(x))


def leaky_sum(xs):
    return jnp.sum(jnp.where(xs > 0.0, xs, 0.01 * xs))


def horner(x, coeffs):
    r, _ = lax.scan(lambda r, c: (r * x + c, None), jnp.zeros_like(x), coeffs)
    return r


def logsumexp(xs):
    m = jnp.max(xs)
    return m + jnp.log(jnp.sum(jnp.exp(xs - m)))


def rosenbrock(xs):
    a, b = xs[:-1], xs[1:]
    return jnp.sum(100.0 * (b - a ** 2) ** 2 + (1.0 - a) ** 2)


def lotka_volterra(alpha, beta, delta, gamma, n):
    dt = 0.01

    def step(i, state):
        x, y = state
        return (x + dt * (alpha * x - beta * x * y), y + dt * (delta * x * y - gamma * y))
    x, y = lax.fori_loop(0, n, step, (jnp.asarray(10.0), jnp.asarray(5.0)))
    return x + y


def _norm_cdf(z):
    return 0.5 * (1.0 + erf(z / jnp.sqrt(2.0)))


def black_scholes(spot, strike, maturity, rate, vol):
    sd = vol * jnp.sqrt(maturity)
    d1 = (jnp.log(spot / strike) + (rate + 0.5 * vol ** 2) * maturity) / sd
    d2 = d1 - sd
    return spot * _norm_cdf(d1) - strike * jnp.exp(-rate * maturity) * _norm_cdf(d2)



# bench/numpy_programs.py: the MLP and the logistic regression are jitted as written
# (straight-line array code).  The diffusion stencil is not: with `steps` static its
# Python loop unrolls, and XLA's compile time grows faster than the loop (on the 2-core
# VM, 8 s of CPU at 20 steps, 58 s at 40, out of reach at 100); a JAX user writes the
# loop as a `fori_loop`.
def diffusion_roll(u, nu, steps):
    def step(i, u):
        return u + nu * (jnp.roll(u, 1) - 2.0 * u + jnp.roll(u, -1))
    u = lax.fori_loop(0, steps, step, u)
    return jnp.sum(u * u)
