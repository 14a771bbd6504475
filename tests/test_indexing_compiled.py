"""numpy indexing, compiled: `None` / `np.newaxis`, `...`, integers, slices with any step,
integer arrays and boolean masks in any position numpy accepts, read and written, on
both backends.

The index expressions come from tables, one per array rank.  `jit.jit` compiles every
selection of a table and must return numpy's values exactly.  For gradients a table
becomes one function `f(x, w0, w1, ...) = sum_k sum(sin(x[E_k]) * w_k)`, so that

  * the gradient in w_k is sin(x[E_k]) itself: the selection's values, element by
    element and in numpy's order (shape included);
  * the gradient in x is checked against central differences of numpy's own f.

The interpreter differentiates every table; the compiled gradient (far dearer to
compile) one table that takes each path of the compiled adjoint once.  Writes are
tables of statements on a copy of x.  `backend="llvm"` raises where the JIT cannot
compile, so every llvm case here runs compiled with no fallback.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import jit
from adjoint import gradient, value_and_grad

BACKENDS = ("interp", "llvm")
RNG = np.random.default_rng(7)

# index arrays the expressions read as globals (constants of the compiled code)
I3 = np.array([2, 0, 2, -1])       # repeated and negative entries
J2 = np.array([[1, 0], [2, 2]])     # a 2-D integer array
K2 = np.array([0, 1])
ROWS = np.array([True, False, True])
M34 = RNG.random((3, 4)) > 0.5

READS = {
    1: ["None", ":, None", "None, :", "...", "..., None", "::-1", "-2::-2", "1:4, None",
        "None, ::2, None", "I3", "I3, None", "None, I3", "..., I3", "True", "2, None"],
    2: [":, None", "None, :, :", "..., 0", "0, ...", "..., None", ":, ::-2", "None, ::-1, 1",
        "1, None, 2:0:-1", "..., None, 1", ":, True", "-1", "I3[:3]", "1:, K2",
        "K2, None, 1:", "J2", ":, J2", "ROWS", "ROWS, ::-2", "M34", "K2, K2[::-1]",
        "None, ..., None", "[0, 2]", "[[0, 1], [2, 2]]", "[2, 0], 1:"],
    3: ["..., 0", "0, ..., None", ":, None, 1:, ::-1", "0, :, K2", "K2, :, K2",
        ":, K2, K2", "None, ..., None", "..., I3", "1, ROWS", ":, ROWS, ::3",
        "..., ::-1, None, 2"],
    4: ["..., 1, :", ":, None, ..., ::-1", "1, ..., 0, None", "K2, :, :, K2",
        ":, :, K2[::-1], K2", "None, 0, None, ..., 1"],
}
SHAPES = {1: (5,), 2: (3, 4), 3: (2, 3, 4), 4: (2, 2, 3, 2)}
GLOBALS = {"np": np, "I3": I3, "J2": J2, "K2": K2, "ROWS": ROWS, "M34": M34}


def _function(name: str, params: list, body: list):
    """A function made from source lines, as a user would write it (its globals are the
    index arrays above)."""
    src = f"def {name}({', '.join(params)}):\n" + "".join(f"    {b}\n" for b in body)
    scope = dict(GLOBALS)
    exec(compile(src, f"<{name}>", "exec"), scope)  # noqa: S102  (test source, ours)
    return scope[name]


def _reader(exprs: list, linear: bool = False):
    ws = [f"w{k}" for k in range(len(exprs))]
    form = "np.sum(x[{}] * {})" if linear else "np.sum(np.sin(x[{}]) * {})"
    terms = " + ".join(form.format(e, w) for e, w in zip(exprs, ws))
    return _function("reads", ["x"] + ws, [f"return {terms}"])


def central(f, x, *rest, h=1e-6):
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = h
        g[k] = (f(x + e, *rest) - f(x - e, *rest)) / (2 * h)
    return g


def _check_reads(exprs: list, x: np.ndarray, backend: str, linear: bool = False) -> None:
    sel = [eval(f"x[{e}]", dict(GLOBALS, x=x)) for e in exprs]
    ws = [RNG.normal(size=np.shape(s)) for s in sel]
    f = _reader(exprs, linear)
    val, grads = value_and_grad(f, x, *ws, backend=backend)
    assert val == pytest.approx(f(x, *ws), rel=1e-12)
    for e, s, g in zip(exprs, sel, grads[1:]):
        assert np.shape(g) == np.shape(s), e
        want = s if linear else np.sin(s)
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14, err_msg=e)
    np.testing.assert_allclose(grads[0], central(f, x, *ws), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("rank", sorted(READS))
def test_reads_compiled_values(rank):
    """jit.jit of every selection of the table: views and numpy's copies, exact."""
    exprs = READS[rank]
    f = _function("select", ["x"], [f"return ({', '.join(f'x[{e}]' for e in exprs)},)"])
    x = RNG.normal(size=SHAPES[rank])
    for e, got, want in zip(exprs, jit.jit(f)(x), f(x)):
        assert np.shape(got) == np.shape(want), e
        np.testing.assert_array_equal(got, want, err_msg=e)


@pytest.mark.parametrize("rank", sorted(READS))
def test_reads_gradients_interp(rank):
    _check_reads(READS[rank], RNG.normal(size=SHAPES[rank]), "interp")


# one of each way the compiled adjoint handles a read (an element, views with new axes,
# `...`, reversed steps and lone booleans, numpy's copies with the advanced dimensions
# in place or first): compiling a gradient costs far more than compiling the primal
COMPILED_READS = {2: ["..., 0", "None, ::-1, 1", ":, True", "1:, K2", "M34", "[2, 0]"],
                  3: [":, None, 1:, ::-1", "0, :, K2", "..., I3"]}


@pytest.mark.parametrize("rank", sorted(COMPILED_READS))
def test_reads_gradients_compiled(rank):
    _check_reads(COMPILED_READS[rank], RNG.normal(size=SHAPES[rank]), "llvm", linear=True)


WRITES = {
    "views": (2, ["y[:, None, 1] = x[:, None, 0] * 2.0",
                  "y[..., 0] -= x[..., -1]",
                  "y[1, :] -= x[0]",
                  "y[::-1, 1::2] += x[:, :2] ** 2",
                  "y[None, 2] = 0.5",
                  "y[..., ::-3] *= x[..., 1:2]"]),
    "advanced": (2, ["y[y > 0.3] = 0.0",
                     "y[K2] += x[2] * x[2]",
                     "y[K2, 1:] = x[1:, 1:]",
                     "y[:, J2[0]] -= 3.0 * x[:, :2]",
                     "y[M34] = x[M34] ** 3",
                     "y[[0, 2], ::2] *= 2.0"]),
    "rank3": (3, ["y[1, None, :, 2] = 1.5",
                  "y[0, :, K2] = x[1, :, K2] * 2.0",
                  "y[:, ROWS] += x[:, ROWS] ** 2",
                  "y[..., ::-1] -= x[..., :] * 0.5",
                  "y[True] += 1.0",
                  "y -= x ** 2"]),
}


# one of each way compiled code stores and differentiates a store (a broadcast into a
# view, `-=` on a row, numpy's stores by a mask and by an index array)
WRITES["compiled"] = (2, ["y[:, None, 1] = x[:, None, 0] * 2.0",
                          "y[1, :] -= x[0]",
                          "y[::-1, 1::2] += x[:, :2] ** 2",
                          "y[y > 0.3] = 0.0",
                          "y[K2, 1:] = x[1:, 1:]",
                          "y[True] -= x ** 2"])


def _check_writes(table: str, backend: str) -> None:
    rank, stmts = WRITES[table]
    # (`x.copy()` of a 3-D array is not compiled in reverse mode: `x * 1.0` copies it)
    f = _function("writes", ["x", "w"], ["y = x.copy()" if rank < 3 else "y = x * 1.0"]
                  + stmts + ["return np.sum(np.sin(y) * w)"])
    x = RNG.normal(size=SHAPES[rank])
    w = RNG.normal(size=x.shape)
    val, (gx, gw) = value_and_grad(f, x, w, backend=backend)
    assert val == pytest.approx(f(x, w), rel=1e-12)
    np.testing.assert_allclose(gx, central(f, x, w), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw, central(lambda w_, x_: f(x_, w_), w, x), rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("table", sorted(WRITES))
def test_writes_interp(table):
    _check_writes(table, "interp")


def test_writes_compiled():
    _check_writes("compiled", "llvm")


def test_scatter_add_in_a_loop_stays_compiled():
    """`forces[a] += f`, `x[i, :] -= v`: in-place updates inside a loop, compiled."""
    def energy(pos, pairs):
        forces = np.zeros_like(pos)
        for k in range(pairs.shape[0]):
            a, b = pairs[k, 0], pairs[k, 1]
            d = pos[a] - pos[b]
            forces[a] += d
            forces[b, :] -= d
        return np.sum(forces ** 2)

    pos = RNG.normal(size=(5, 3))
    pairs = np.array([[0, 1], [1, 2], [3, 4], [0, 4], [2, 2]])
    for backend in BACKENDS:
        g = gradient(energy, pos, pairs, backend=backend)[0]
        np.testing.assert_allclose(g, central(energy, pos, pairs), rtol=1e-6, atol=1e-8)


# -- programs written the way people write them ------------------------------------------------
def rbf_kernel_loss(X, alpha, lengthscale):
    d = X[:, None, :] - X[None, :, :]
    K = np.exp(-0.5 * np.sum(d ** 2, axis=-1) / lengthscale ** 2)
    return alpha @ K @ alpha


def gp_negative_log_likelihood(X, y, log_ls, log_sf, log_sn):
    ls, sf2, sn2 = np.exp(log_ls), np.exp(2.0 * log_sf), np.exp(2.0 * log_sn)
    diff = (X[:, np.newaxis, :] - X[np.newaxis, :, :]) / ls
    K = sf2 * np.exp(-0.5 * np.sum(diff * diff, axis=2)) + sn2 * np.eye(X.shape[0])
    alpha = np.linalg.solve(K, y)
    _sign, logdet = np.linalg.slogdet(K)
    return 0.5 * y @ alpha + 0.5 * logdet + 0.5 * X.shape[0] * np.log(2.0 * np.pi)


def hmm_forward(log_pi, log_A, log_B, obs):
    """The forward recursion of autograd's hmm_em: `log_alpha[:, None] + log_A`."""
    log_alpha = log_pi + log_B[:, obs[0]]
    for t in range(1, obs.shape[0]):
        m = log_alpha[:, None] + log_A
        top = np.max(m, axis=0)
        log_alpha = top + np.log(np.sum(np.exp(m - top[None, :]), axis=0)) + log_B[:, obs[t]]
    top = np.max(log_alpha)
    return top + np.log(np.sum(np.exp(log_alpha - top)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_pairwise_rbf_kernel(backend):
    X, alpha = RNG.normal(size=(6, 3)), RNG.normal(size=6)
    gX, ga, gl = gradient(rbf_kernel_loss, X, alpha, 0.9, backend=backend)
    np.testing.assert_allclose(gX, central(rbf_kernel_loss, X, alpha, 0.9), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(ga, _fd_alpha(X, alpha), rtol=1e-6, atol=1e-8)
    h = 1e-6
    fd = (rbf_kernel_loss(X, alpha, 0.9 + h) - rbf_kernel_loss(X, alpha, 0.9 - h)) / (2 * h)
    assert gl == pytest.approx(fd, rel=1e-6)


def _fd_alpha(X, alpha):
    return central(lambda a, X_: rbf_kernel_loss(X_, a, 0.9), alpha, X)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gp_marginal_likelihood(backend):
    X = RNG.normal(size=(7, 2))
    y = np.sin(X[:, 0]) + 0.1 * RNG.normal(size=7)
    args = (X, y, 0.3, -0.2, -1.0)
    grads = gradient(gp_negative_log_likelihood, *args, backend=backend)
    np.testing.assert_allclose(grads[0], central(gp_negative_log_likelihood, *args),
                               rtol=1e-5, atol=1e-7)
    for k in (2, 3, 4):
        hi, lo = list(args), list(args)
        hi[k] += 1e-6
        lo[k] -= 1e-6
        fd = (gp_negative_log_likelihood(*hi) - gp_negative_log_likelihood(*lo)) / 2e-6
        assert grads[k] == pytest.approx(fd, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hmm_forward_recursion(backend):
    log_pi = np.log(np.array([0.5, 0.3, 0.2]))
    log_A = np.log(RNG.dirichlet(np.ones(3), size=3))
    log_B = np.log(RNG.dirichlet(np.ones(4), size=3))
    obs = np.array([0, 3, 1, 1, 2])
    g = gradient(hmm_forward, log_pi, log_A, log_B, obs, backend=backend)
    np.testing.assert_allclose(g[1], central(lambda a, p, b, o: hmm_forward(p, a, b, o),
                                             log_A, log_pi, log_B, obs), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g[2], central(lambda b, p, a, o: hmm_forward(p, a, b, o),
                                             log_B, log_pi, log_A, obs), rtol=1e-6, atol=1e-8)


# -- what numpy refuses is refused, naming the index ---------------------------------------------
REFUSED = [("x[1.5]", "index of type float64"),
           ("x[..., 0, ...]", "single ellipsis"),
           ("x[0, 1, 2]", "too many indices"),
           ("x[np.array([0.5])]", "integer (or boolean) type"),
           ("x[[0.5, 1.5]]", "integer (or boolean) type")]


@pytest.mark.parametrize("expr, words", REFUSED)
def test_refused_indices_name_the_index(expr, words):
    f = _function("bad", ["x"], [f"return np.sum({expr})"])
    x = RNG.normal(size=(3, 4))
    with pytest.raises(IndexError):
        f(x)
    with pytest.raises(IndexError):
        gradient(f, x, backend="interp")
    with pytest.raises(Exception, match=re.escape(words)):
        jit.jit(f)(x)
    with pytest.raises(Exception, match=re.escape(words)):
        gradient(f, x, backend="llvm")
