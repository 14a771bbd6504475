"""How zygopy does on the loss functions of HIPS/autograd's example programs.

Sixteen objectives that autograd's `examples/` pass to `grad`, rewritten with the same
mathematics and numpy idioms (lists of (W, b) tuples, dicts, comprehensions, closures
from `make_*` functions, axis=/keepdims= reductions, 3-D arrays, a generator, *args)
on small seeded synthetic data of the examples' shapes.  What they take from scipy
(norm.logpdf, logsumexp, multivariate_normal.logpdf, t.logpdf) is written in numpy;
random draws inside an objective are made once, outside, and passed in.

For each example and backend ("interp", "llvm"), zygopy's gradient w.r.t. the
parameters (`pullback(f, *args, backend=b)`, then `back(1.0)`) is checked against
central differences (per element up to 12 parameters, else 3 random directions) and,
when autograd is importable, against autograd's gradient of the same code (every
function here cloned with `np` bound to `autograd.numpy`).  `backend="llvm"` raises
when the JIT cannot compile: "not compiled".  Where llvm is right, the median time of
one gradient under zygopy llvm and under autograd is printed, with their ratio.
Nested derivatives (tanh's 2nd to 4th, the Taylor sine's 2nd) are a second table.

    python -m bench.autograd_examples              # all; --only tanh,gmm --markdown --json F

With autograd: `PYTHONPATH=<zygopy checkout> <venv with autograd, llvmlite,
bytecode>/bin/python -m bench.autograd_examples`.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import signal
import statistics
import sys
import time
import types

import numpy as np

try:
    import jit  # noqa: F401  (registers backend="llvm" when zygopy is not pip-installed)
    from adjoint import gradient, pullback
    ZYGOPY_ERROR = None
except Exception as exc:  # noqa: BLE001 (a broken tree: every zygopy cell says why)
    gradient = pullback = None
    ZYGOPY_ERROR = f"{type(exc).__name__}: {exc}"

# ---------------------------------------------------------------------------------
# what the examples import from scipy and autograd, ported to numpy

def logsumexp(a, axis=None, keepdims=False):
    peak = np.max(a, axis=axis, keepdims=True)
    out = peak + np.log(np.sum(np.exp(a - peak), axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)

def norm_logpdf(x, loc=0.0, scale=1.0):
    return -0.5 * ((x - loc) / scale) ** 2 - np.log(scale) - 0.5 * np.log(2 * np.pi)

def mvn_logpdf(x, mean, cov):
    """log N(x; mean, cov) of one point (1-D x) or of each row of a 2-D x."""
    dev = x - mean
    _, log_det = np.linalg.slogdet(cov)
    mahalanobis = np.sum(dev * np.linalg.solve(cov, dev.T).T, axis=-1)
    return -0.5 * (mahalanobis + log_det + len(mean) * np.log(2 * np.pi))

def t_logpdf(x, df, loc, scale):
    log_norm = math.lgamma(0.5 * (df + 1)) - math.lgamma(0.5 * df) - 0.5 * math.log(math.pi * df)
    return log_norm - np.log(scale) - 0.5 * (df + 1) * np.log1p(((x - loc) / scale) ** 2 / df)

def flatten(params):                    # autograd.misc.flatten of a list of (W, b)
    return np.concatenate([np.ravel(a) for pair in params for a in pair])

def egrad(fun):                         # autograd's elementwise_grad
    return lambda x: gradient(lambda v: np.sum(fun(v)), x)[0]

def grad(fun):
    return lambda x: gradient(fun, x)[0]

def sigmoid(z):
    return 0.5 * (np.tanh(z) + 1.0)

# ---------------------------------------------------------------------------------
# rosenbrock, tanh, sinusoid (Taylor series, loop with a break), logistic_regression

def rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2

def tanh(x):
    numerator = 1.0 - np.exp(-2 * x)
    return numerator / (1.0 + np.exp(-(2 * x)))

def tanh_sum(x):                        # its gradient is egrad(tanh)(x)
    return np.sum(tanh(x))

def taylor_sin(x):
    term = total = x
    for n in range(1000):
        term = -term * x ** 2 / ((2 * n + 2) * (2 * n + 3))
        total = total + term
        if np.abs(term) < 0.2:
            break
    return total

def lr_prob_true(weights, inputs):
    return sigmoid(np.dot(inputs, weights))

def lr_loss(weights):
    p = lr_prob_true(weights, LR_INPUTS)
    p_observed = p * LR_LABELS + (1 - p) * (1 - LR_LABELS)
    return -np.sum(np.log(p_observed))

# ---------------------------------------------------------------------------------
# neural_net (classifier on minibatches), neural_net_regression

def mlp_log_probs(params, x):
    for weights, bias in params:
        z = np.dot(x, weights) + bias
        x = np.tanh(z)
    return z - logsumexp(z, axis=1, keepdims=True)

def mlp_log_posterior(params, images, labels, l2):
    w = flatten(params)
    return np.sum(mlp_log_probs(params, images) * labels) - l2 * np.dot(w, w)

def mlp_objective(params, iter):
    start = (iter % (len(NN_IMAGES) // NN_BATCH)) * NN_BATCH
    rows = slice(start, start + NN_BATCH)
    return -mlp_log_posterior(params, NN_IMAGES[rows], NN_LABELS[rows], 1.0)

def regress(params, x, activation=np.tanh):
    for weights, bias in params:
        z = np.dot(x, weights) + bias
        x = activation(z)
    return z

def regression_objective(params, t):
    fit = np.sum(norm_logpdf(regress(params, REG_X), REG_Y, 0.1))
    return -fit - np.sum(norm_logpdf(flatten(params), 0, 10.0))

# ---------------------------------------------------------------------------------
# black_box_svi, bayesian_neural_net (BBSVI of an MLP vectorised over weight samples)

def make_bbsvi(log_density, D):
    def split(params):
        return params[:D], params[D:]

    def entropy(log_std):
        return np.sum(log_std) + 0.5 * D * (1.0 + np.log(2 * np.pi))

    def negative_elbo(params, t, noise):          # noise: (samples, D) standard normals
        mean, log_std = split(params)
        draws = noise * np.exp(log_std) + mean
        return -(np.mean(log_density(draws, t)) + entropy(log_std))
    return negative_elbo

def funnel_log_density(x, t):
    mu, log_sigma = x[:, 0], x[:, 1]
    return norm_logpdf(mu, 0, np.exp(log_sigma)) + norm_logpdf(log_sigma, 0, 1.35)

def make_sampled_mlp(layer_sizes, L2_reg, noise_variance, nonlinearity=np.tanh):
    dims = list(itertools.pairwise(layer_sizes))
    total = sum(n_out * (n_in + 1) for n_in, n_out in dims)

    def layers(w):                    # w: (samples, total) -> (W, b) per layer
        count = len(w)
        for n_in, n_out in dims:
            size = n_in * n_out
            yield (w[:, :size].reshape((count, n_in, n_out)),
                   w[:, size:size + n_out].reshape((count, 1, n_out)))
            w = w[:, size + n_out:]

    def predict(w, x):
        h = np.expand_dims(x, 0)
        for W, b in layers(w):
            z = np.einsum("snd,sdo->sno", h, W) + b
            h = nonlinearity(z)
        return z

    def log_density(w, x, y):
        sq_err = np.sum((predict(w, x) - y) ** 2, axis=1)[:, 0]
        return -L2_reg * np.sum(w ** 2, axis=1) - sq_err / noise_variance
    return total, predict, log_density

bump = lambda x: np.exp(-(x ** 2))            # the example's rbf activation

def build_bnn():
    _, _, log_density = make_sampled_mlp([1, 8, 8, 1], L2_reg=0.1, noise_variance=0.01,
                                         nonlinearity=bump)
    posterior = lambda w, t: log_density(w, BNN_X, BNN_Y)
    return make_bbsvi(posterior, BNN_D), (BNN_PARAMS, 0, BNN_NOISE)

# ---------------------------------------------------------------------------------
# gaussian_process, deep_gaussian_process

def make_gp(kernel, n_kernel_params):
    def split(params):
        return params[0], params[2:], np.exp(params[1]) + 0.0001

    def log_evidence(params, x, y):
        mean, kernel_params, noise = split(params)
        K = kernel(kernel_params, x, x) + noise * np.eye(len(y))
        return mvn_logpdf(y, mean * np.ones(len(y)), K)
    return n_kernel_params + 2, log_evidence

def rbf_kernel(kernel_params, x, xp):
    amplitude, widths = np.exp(kernel_params[0]), np.exp(kernel_params[1:])
    gaps = np.expand_dims(x / widths, 1) - np.expand_dims(xp / widths, 0)
    return amplitude * np.exp(-0.5 * np.sum(gaps ** 2, axis=2))

def build_gp():
    _, log_evidence = make_gp(rbf_kernel, n_kernel_params=2)
    return (lambda params: -log_evidence(params, GP_X, GP_Y)), (GP_PARAMS,)

def make_deep_gp(X, y, hidden_dim=1):
    n_in, evidence_in = make_gp(rbf_kernel, X.shape[1] + 1)
    n_out, evidence_out = make_gp(rbf_kernel, hidden_dim + 1)

    def log_evidence(params):
        first, second, h = params[:n_in], params[n_in:n_in + n_out], params[n_in + n_out:]
        return evidence_in(first, X, h) + evidence_out(second, np.atleast_2d(h).T, y)
    return log_evidence

def build_dgp():
    log_evidence = make_deep_gp(DGP_X, DGP_Y)
    return (lambda params: -log_evidence(params)), (DGP_PARAMS,)

# ---------------------------------------------------------------------------------
# gmm (a dict of parameters, zip(*...) over their rows), ica

def gmm_parts(params):
    logits = params["log proportions"]
    return logits - logsumexp(logits), params["means"], params["lower triangles"]

def gmm_objective(params):
    per_component = []
    for log_w, centre, root in zip(*gmm_parts(params)):
        per_component.append(log_w + mvn_logpdf(GMM_DATA, centre, np.dot(root.T, root)))
    return -np.sum(logsumexp(np.vstack(per_component), axis=0))

def make_ica(n_observed, n_latent):
    def log_density(weights, latents, noise_std, observed):
        mixed = np.dot(weights, latents).T
        return np.sum(t_logpdf(mixed, 2.4, observed, noise_std))

    def as_matrix(flat_weights):
        return np.reshape(flat_weights, (n_observed, n_latent))
    return n_observed * n_latent, log_density, as_matrix

def build_ica():
    (n_obs, n_lat), n = ICA_DIMS, len(ICA_DATA)
    n_weights, log_density, as_matrix = make_ica(n_obs, n_lat)

    def objective(params):
        latents = np.reshape(params[n_weights:n_weights + n_lat * n], (n_lat, n))
        weights, noise_std = as_matrix(params[:n_weights]), np.exp(params[-1])
        return -log_density(weights, latents, noise_std, ICA_DATA) / n
    return objective, (ICA_PARAMS,)

# ---------------------------------------------------------------------------------
# rnn, lstm (dicts of weights, a loop over the time axis of a 3-D array, *args)

def affine(weights, *parts):
    stacked = np.hstack(parts + (np.ones((parts[0].shape[0], 1)),))
    return np.dot(stacked, weights)

def rnn_outputs(params, seqs):
    def advance(x, h):
        return np.tanh(affine(params["change"], x, h))

    def readout(h):
        logits = affine(params["predict"], h)
        return logits - logsumexp(logits, axis=1, keepdims=True)

    h = np.repeat(params["init hiddens"], seqs.shape[1], axis=0)
    outs = [readout(h)]
    for x in seqs:
        h = advance(x, h)
        outs.append(readout(h))
    return outs

def lstm_outputs(params, seqs):
    def advance(x, h, c):
        candidate = np.tanh(affine(params["change"], x, h))
        keep = sigmoid(affine(params["forget"], x, h))
        write = sigmoid(affine(params["ingate"], x, h))
        show = sigmoid(affine(params["outgate"], x, h))
        c = keep * c + write * candidate
        return show * np.tanh(c), c

    def readout(h):
        logits = affine(params["predict"], h)
        return logits - logsumexp(logits, axis=1, keepdims=True)

    h = np.repeat(params["init hiddens"], seqs.shape[1], axis=0)
    c = np.repeat(params["init cells"], seqs.shape[1], axis=0)
    outs = [readout(h)]
    for x in seqs:
        h, c = advance(x, h, c)
        outs.append(readout(h))
    return outs

def mean_log_likelihood(log_probs, seqs):
    total = 0.0
    steps, count, _ = seqs.shape
    for t in range(steps):
        total += np.sum(log_probs[t] * seqs[t])
    return total / (steps * count)

def rnn_objective(params, iter):
    return -mean_log_likelihood(rnn_outputs(params, SEQS), SEQS)

def lstm_objective(params, iter):
    return -mean_log_likelihood(lstm_outputs(params, SEQS), SEQS)

# ---------------------------------------------------------------------------------
# variational_autoencoder, mixture_variational_inference

def diag_normal_logpdf(x, mean, log_std):
    return np.sum(norm_logpdf(x, mean, np.exp(log_std)), axis=-1)

def vae_net(params, x):               # batch-normalised relu layers, then a linear one
    for W, b in params[:-1]:
        z = np.dot(x, W) + b
        z = (z - np.mean(z, axis=0, keepdims=True)) / (np.std(z, axis=0, keepdims=True) + 1)
        x = np.maximum(0, z)
    W_last, b_last = params[-1]
    return np.dot(x, W_last) + b_last

def vae_elbo(decoder, encoder, images, noise):
    q = vae_net(encoder, images)
    half = np.shape(q)[-1] // 2
    q_mean, q_log_std = q[:, :half], q[:, half:]
    z = noise * np.exp(q_log_std) + q_mean
    log_lik = np.sum(-np.logaddexp(0, -vae_net(decoder, z) * images), axis=-1)
    log_prior = diag_normal_logpdf(z, 0, 0)
    return np.mean(log_prior + log_lik - diag_normal_logpdf(z, q_mean, q_log_std))

def vae_objective(both, iter, noise):
    decoder, encoder = both
    batch = VAE_DATA[iter * VAE_BATCH:(iter + 1) * VAE_BATCH]
    return -vae_elbo(decoder, encoder, batch, noise) / VAE_DATA.shape[1]

def bimodal_log_density(x, t):
    mu, log_sigma = x[:, 0], x[:, 1]
    left = norm_logpdf(mu, -0.5, np.exp(log_sigma)) + norm_logpdf(log_sigma, 0, 1.35)
    right = norm_logpdf(mu, 0.5, np.exp(log_sigma)) + norm_logpdf(log_sigma, 0.1, 1.35)
    return np.logaddexp(left, right)

def make_mixture_elbo(log_density, n_samples, k):
    def split(component):
        half = np.shape(component)[0] // 2
        return component[:half], component[half:]

    def unpack(params):
        return params[:k] - logsumexp(params[:k]), np.reshape(params[k:], (k, -1))

    def component_logpdf(component, x):
        mean, log_std = split(component)
        return diag_normal_logpdf(x, mean, log_std)

    def mixture_logpdf(params, x):
        log_w, components = unpack(params)
        each = np.vstack([component_logpdf(c, x) for c in components]).T
        return logsumexp(each + log_w, axis=1, keepdims=False)

    def elbo(params, t, noise):                    # noise: (k, samples, D)
        def component_elbo(component, eps):
            mean, log_std = split(component)
            draws = eps * np.exp(log_std) + mean
            log_p = np.reshape(log_density(draws, t), (n_samples, -1))
            log_q = np.reshape(mixture_logpdf(params, draws), (n_samples, -1))
            return np.mean(log_p - log_q)

        log_w, components = unpack(params)
        elbos = np.stack([component_elbo(c, eps) for c, eps in zip(components, noise)])
        return np.sum(np.exp(log_w) * elbos)
    return elbo

def build_mixture_vi():
    elbo = make_mixture_elbo(bimodal_log_density, MIX_NOISE.shape[1], len(MIX_NOISE))
    return (lambda params, t, noise: -elbo(params, t, noise)), (MIX_PARAMS, 0, MIX_NOISE)

# ---------------------------------------------------------------------------------
# seeded synthetic data of the examples' shapes (smaller), and the cases

def layer_params(rs, sizes, scale):
    return [(scale * rs.randn(m, n), scale * rs.randn(n)) for m, n in itertools.pairwise(sizes)]

def two_stretches(rs, n, first, second, noise):      # the examples' toy 1-D regression data
    x = np.concatenate([np.linspace(*first, n // 2), np.linspace(*second, n // 2)])
    return x, np.cos(x) + noise * rs.randn(n)

_rs = np.random.RandomState(0)
LR_INPUTS, LR_LABELS = _rs.randn(4, 3), np.array([True, True, False, True])
NN_BATCH, NN_IMAGES, NN_LABELS = 16, _rs.rand(48, 20), np.eye(4)[_rs.randint(0, 4, 48)]
NN_PARAMS = layer_params(_rs, [20, 12, 8, 4], 0.1)
_x, _y = two_stretches(_rs, 80, (0, 3), (6, 8), 0.1)
REG_X, REG_Y = ((_x - 4) / 2)[:, None], (_y / 2)[:, None]
REG_PARAMS = layer_params(_rs, [1, 4, 4, 1], 0.1)
SVI_PARAMS, SVI_NOISE = np.array([-1.0, -0.8, -2.0, -1.5]), _rs.randn(200, 2)
_x, _y = two_stretches(_rs, 40, (0, 2), (6, 8), 0.1)
BNN_X, BNN_Y, BNN_D = ((_x - 4) / 4)[:, None], _y[:, None], (1 + 1) * 8 + (8 + 1) * 8 + (8 + 1) * 1
BNN_PARAMS = np.concatenate([_rs.randn(BNN_D), -5 + 0.1 * _rs.randn(BNN_D)])
BNN_NOISE = _rs.randn(5, BNN_D)                                       # 5 weight samples
_x, _y = two_stretches(_rs, 20, (0, 3), (6, 8), 0.1)
GP_X, GP_Y, GP_PARAMS = ((_x - 4) / 2)[:, None], _y / 2, 0.1 * _rs.randn(4)
DGP_X = np.linspace(-2, 2, 20)[:, None]
DGP_Y, DGP_PARAMS = np.sign(DGP_X[:, 0]) + 0.1 * _rs.randn(20), 0.1 * _rs.randn(4 + 4 + 20)
_centres = np.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
GMM_DATA = (_centres[:, None, :] + 0.3 * _rs.randn(3, 20, 2)).reshape(60, 2)
GMM_PARAMS = {"log proportions": 0.1 * _rs.randn(3), "means": 0.1 * _rs.randn(3, 2),
              "lower triangles": np.zeros((3, 2, 2)) + np.eye(2) + 0.1 * _rs.randn(3, 2, 2)}
ICA_DIMS, _mixing = (8, 2), np.sin(np.outer(np.linspace(0, 4, 8), [1.0, 1.8]))
ICA_DATA = np.dot(_mixing, _rs.randn(2, 20)).T + _rs.randn(20, 8)     # 20 samples of 8
ICA_PARAMS = _rs.randn(8 * 2 + 2 * 20 + 1)
SEQS = np.eye(10)[_rs.randint(0, 10, (5, 4))]          # one-hot (time, sequences, alphabet)
RNN_PARAMS = {"init hiddens": 0.1 * _rs.randn(1, 6), "change": 0.1 * _rs.randn(17, 6),
              "predict": 0.1 * _rs.randn(7, 10)}
LSTM_PARAMS = {"init cells": 0.1 * _rs.randn(1, 6), "init hiddens": 0.1 * _rs.randn(1, 6),
               **{k: 0.1 * _rs.randn(17, 6) for k in ("change", "forget", "ingate", "outgate")},
               "predict": 0.1 * _rs.randn(7, 10)}
VAE_BATCH, VAE_DATA = 10, np.where(_rs.rand(30, 16) > 0.5, 1.0, -1.0)
VAE_PARAMS = (layer_params(_rs, [2, 8, 16], 0.3), layer_params(_rs, [16, 8, 4], 0.3))
VAE_NOISE = _rs.randn(10, 2)
MIX_NOISE = _rs.randn(3, 10, 2)                                       # (k, samples, D)
MIX_PARAMS = np.concatenate([np.ones(3), -1 + 0.5 * _rs.randn(3, 4).ravel()])

# name -> () -> (objective, args); the gradient is w.r.t. args[0]
CASES = {
    "rosenbrock": lambda: (rosenbrock, (np.array([0.3, -0.4]),)),
    "tanh": lambda: (tanh_sum, (np.linspace(-7, 7, 71),)),
    "sinusoid": lambda: (taylor_sin, (2.5,)),
    "logistic_regression": lambda: (lr_loss, (np.array([0.3, -0.2, 0.5]),)),
    "neural_net": lambda: (mlp_objective, (NN_PARAMS, 1)),
    "neural_net_regression": lambda: (regression_objective, (REG_PARAMS, 0)),
    "black_box_svi": lambda: (make_bbsvi(funnel_log_density, 2), (SVI_PARAMS, 0, SVI_NOISE)),
    "bayesian_neural_net": build_bnn,
    "gaussian_process": build_gp,
    "deep_gaussian_process": build_dgp,
    "gmm": lambda: (gmm_objective, (GMM_PARAMS,)),
    "ica": build_ica,
    "rnn": lambda: (rnn_objective, (RNN_PARAMS, 0)),
    "lstm": lambda: (lstm_objective, (LSTM_PARAMS, 0)),
    "variational_autoencoder": lambda: (vae_objective, (VAE_PARAMS, 1, VAE_NOISE)),
    "mixture_variational_inference": build_mixture_vi,
}

# not counted: the gradient of each is the k-th derivative (autograd: egrad(egrad(...)))
_GRID = np.linspace(-3, 3, 13)
NESTED = {
    "tanh 2nd": lambda: (lambda x: np.sum(egrad(tanh)(x)), (_GRID,)),
    "tanh 3rd": lambda: (lambda x: np.sum(egrad(egrad(tanh))(x)), (_GRID,)),
    "tanh 4th": lambda: (lambda x: np.sum(egrad(egrad(egrad(tanh)))(x)), (_GRID,)),
    "sinusoid 2nd": lambda: (grad(taylor_sin), (2.5,)),
}

# ---------------------------------------------------------------------------------
# the harness

HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep

def flat(tree):
    """The numbers of a gradient or parameter tree (dicts in sorted key order)."""
    if isinstance(tree, dict):
        return flat([tree[k] for k in sorted(tree)])
    if isinstance(tree, (list, tuple)):
        return np.concatenate([flat(t) for t in tree]) if tree else np.zeros(0)
    if tree is None:
        raise TypeError("a parameter got no gradient (None)")
    return np.ravel(np.asarray(tree, dtype=float))

def unflat(vec, like, pos=None):
    """`like`'s structure, its numbers taken in order from `vec` (the inverse of flat)."""
    pos = [0] if pos is None else pos
    if isinstance(like, dict):
        filled = {k: unflat(vec, like[k], pos) for k in sorted(like)}
        return {k: filled[k] for k in like}
    if isinstance(like, (list, tuple)):
        return type(like)(unflat(vec, item, pos) for item in like)
    part, pos[0] = vec[pos[0]:pos[0] + np.size(like)], pos[0] + np.size(like)
    return part.reshape(np.shape(like)) if isinstance(like, np.ndarray) else float(part[0])

def clone_module(npmod, overrides):
    """Every function of this module again, with `np` (and `overrides`) rebound."""
    mod = sys.modules[__name__]
    scope = dict(vars(mod), np=npmod)
    for name, fn in vars(mod).items():
        if isinstance(fn, types.FunctionType) and fn.__module__ == mod.__name__:
            scope[name] = clone(fn, scope)
    scope.update(overrides)
    return scope

def clone(fn, scope):
    def swap(default):                  # a default np.tanh becomes the clone's np.tanh
        name = getattr(default, "__name__", None)
        same = name is not None and getattr(np, name, None) is default
        return getattr(scope["np"], name) if same else default
    defaults = tuple(swap(d) for d in fn.__defaults__) if fn.__defaults__ else None
    return types.FunctionType(fn.__code__, scope, fn.__name__, defaults, fn.__closure__)

def within(seconds, call):
    def ring(signum, frame):
        raise TimeoutError(f"over the {seconds} s budget")
    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        return call()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)

def zygopy_grad(f, args, backend):
    y, back = pullback(f, *args, backend=backend)
    return y, back(1.0)[0]

def autograd_grad(f, args):
    import autograd
    return autograd.grad(f)(*args)

def check_fd(f, args, g, h=1e-6):
    """None, or where the gradient disagrees with central differences of f."""
    x, f0 = flat(args[0]), float(f(*args))
    rs = np.random.RandomState(1)
    dirs = np.eye(x.size) if x.size <= 12 else [v / np.linalg.norm(v)
                                                for v in rs.randn(3, x.size)]
    for k, v in enumerate(dirs):
        up = float(f(unflat(x + h * v, args[0]), *args[1:]))
        down = float(f(unflat(x - h * v, args[0]), *args[1:]))
        fd, gv = (up - down) / (2 * h), float(np.dot(g, v))
        if not abs(fd - gv) <= 1e-5 * (abs(fd) + 1e-3 * np.linalg.norm(g)) + 1e-8 * (1 + abs(f0)):
            return f"direction {k}: gradient gives {gv:.9g}, central difference {fd:.9g}"
    return None

def verdict(f, args, y, g, ref):
    """None when zygopy's value and gradient are right, else what is wrong."""
    want = float(f(*args))
    if not abs(float(y) - want) <= 1e-9 * max(1.0, abs(want)):
        return f"value {float(y):.12g}, CPython {want:.12g}"
    g = flat(g)
    if ref is not None and not np.linalg.norm(g - ref) <= 1e-7 * np.linalg.norm(ref):
        return (f"differs from autograd's by {np.linalg.norm(g - ref):.3g} "
                f"(norm {np.linalg.norm(ref):.3g})")
    return check_fd(f, args, g)

def first_line(exc):
    lines = str(exc).replace(HERE, "").strip().splitlines() or [""]
    return f"{type(exc).__name__}: {lines[0]}"

def median_time(call, budget=0.5, most=7):
    call()
    times, stop = [], time.perf_counter() + budget
    while len(times) < 3 or (len(times) < most and time.perf_counter() < stop):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)

def run_backend(f, args, backend, ref, budget):
    """{'status': right | wrong | error | not compiled, 'why': ..., 'first_s': ...}; any
    exception under backend="llvm" (the JIT refusing, or lowering) reads "not compiled"."""
    if ZYGOPY_ERROR:
        return {"status": "error", "why": ZYGOPY_ERROR}
    start = time.perf_counter()
    try:
        y, g = within(budget, lambda: zygopy_grad(f, args, backend))
    except Exception as exc:  # noqa: BLE001 (any failure is a finding)
        return {"status": "not compiled" if backend == "llvm" else "error",
                "why": first_line(exc)}
    first = time.perf_counter() - start
    try:
        why = within(budget, lambda: verdict(f, args, y, g, ref))
    except Exception as exc:  # noqa: BLE001 (any failure is a finding)
        why = "while checking: " + first_line(exc)
    return {"status": "wrong" if why else "right", "why": why, "first_s": first}

def run_case(name, build, ag_scope, budget, timing):
    f, args = build()
    record, ref = {"example": name, "parameters": int(flat(args[0]).size)}, None
    if ag_scope is not None:
        ag_f, ag_args = clone(build, ag_scope)()
        try:
            ref = flat(within(budget, lambda: autograd_grad(ag_f, ag_args)))
        except Exception as exc:  # noqa: BLE001 (reported; then no autograd reference)
            record["autograd_error"] = first_line(exc)
    for backend in ("interp", "llvm"):
        record[backend] = run_backend(f, args, backend, ref, budget)
    if timing and record["llvm"]["status"] == "right":
        record["llvm_s"] = median_time(lambda: zygopy_grad(f, args, "llvm"))
        if ref is not None:
            record["autograd_s"] = median_time(lambda: autograd_grad(ag_f, ag_args))
    return record

def seconds(t):
    if not t:
        return ""
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if t >= scale or unit == "ns":
            return f"{t / scale:.3g} {unit}"

def table(records, markdown):
    head = ["example", "params", "interp", "llvm", "llvm 1st call", "llvm grad",
            "autograd grad", "autograd/llvm"]
    notes, rows = [], []
    for r in records:
        row = [r["example"], str(r["parameters"])]
        for backend in ("interp", "llvm"):
            if r[backend]["why"]:
                notes.append(f"{r['example']}, {backend}: {r[backend]['why'][:120]}")
            row.append(r[backend]["status"] + (f" [{len(notes)}]" if r[backend]["why"] else ""))
        if "autograd_error" in r:
            notes.append(f"{r['example']}, autograd: {r['autograd_error'][:120]}")
        llvm, ag = r.get("llvm_s"), r.get("autograd_s")
        first = r["llvm"].get("first_s") if r["llvm"]["status"] == "right" else None
        rows.append(row + [seconds(first), seconds(llvm), seconds(ag),
                           f"{ag / llvm:.3g}x" if llvm and ag else ""])
    if markdown:
        lines = ["| " + " | ".join(c) + " |" for c in [head, ["---"] * len(head)] + rows]
    else:
        widths = [max(len(row[i]) for row in rows + [head]) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
                 for row in [head] + rows]
    end = "  " if markdown else ""              # a Markdown line break after each note
    return lines + [""] + [f"[{k}] {n}{end}" for k, n in enumerate(notes, 1)]

def report(results, markdown):
    out = []
    for title, group in (("autograd examples", "examples"),
                         ("nested derivatives (not counted)", "nested")):
        if results[group]:
            out += [f"{title}:", ""] + table(results[group], markdown) + [""]
    recs = results["examples"]
    if recs:
        right = sum(any(r[b]["status"] == "right" for b in ("interp", "llvm")) for r in recs)
        compiled = sum(r["llvm"]["status"] == "right" for r in recs)
        out.append(f"right gradient (any backend): {right}/{len(recs)}; "
                   f"runs compiled (llvm, right): {compiled}/{len(recs)}")
    return "\n".join(out)

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated names (of either table)")
    ap.add_argument("--json", metavar="FILE", help="also write every record as JSON")
    ap.add_argument("--markdown", action="store_true", help="print the tables in Markdown")
    ap.add_argument("--no-timing", action="store_true", help="check the gradients only")
    ap.add_argument("--budget", type=int, default=120, help="seconds per gradient (120)")
    opts = ap.parse_args(argv)
    wanted = set(opts.only.split(",")) if opts.only else set(CASES) | set(NESTED)
    if wanted - set(CASES) - set(NESTED):
        ap.error(f"unknown {sorted(wanted - set(CASES) - set(NESTED))}; "
                 f"known: {', '.join(list(CASES) + list(NESTED))}")
    try:
        import autograd
        import autograd.numpy as anp
        ag_scope = clone_module(anp, {"egrad": autograd.elementwise_grad, "grad": autograd.grad})
    except ImportError:
        ag_scope = None
        print("autograd is not importable: checking against central differences only\n")
    results = {"autograd": ag_scope is not None, "examples": [], "nested": []}
    for group, cases in (("examples", CASES), ("nested", NESTED)):
        for name in [n for n in cases if n in wanted]:
            print(f"  {name} ...", file=sys.stderr, flush=True)
            timing = group == "examples" and not opts.no_timing
            results[group].append(run_case(name, cases[name], ag_scope, opts.budget, timing))
    print(report(results, opts.markdown))
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
