"""autograd's own example programs, read from an autograd checkout when it runs.

    python -m bench.autograd_upstream [AUTOGRAD_CHECKOUT] [--only gmm,rnn] [--json F]

AUTOGRAD_CHECKOUT is a work tree or a git directory (default: the search tools'
mirror, /work/.mirror/HIPS+autograd/repo).  Nothing of autograd is copied here.

For zygopy only the import lines of each example (and of the sibling examples it
imports: `data`, `black_box_svi`, `gaussian_process`, `rnn`) are swapped (`SWAPS`):
`autograd.numpy[...]` becomes `numpy[...]`, every other autograd name comes from
`bench.autograd_standins`.  autograd runs the files unchanged.  matplotlib is an
inert stub on both sides.  The module body runs with `__name__` set to the file's
name, so a `__main__` block (training loop, plots) does not run; a top-level
statement that fails is recorded and the rest of the body still runs.

Then `GLUE[name](module)` builds what the example's `__main__` block passes to
`grad` (or `value_and_grad`): the same calls of the example's own functions, on
seeded data of the example's shapes made smaller.  The gradient is taken w.r.t. the
first argument.  Examples that draw random numbers inside the objective get their
`RandomState` reseeded before every evaluation (`reset`).

Each system runs in its own process (`taskset -c 1` where it can, single-threaded
BLAS).  Checks, per example:
  right     zygopy's gradient (default backend) agrees with central differences
            (`bench.myia_check.fd_check`) and, where autograd ran, with autograd's
            gradient of the unchanged file to 1e-7 (relative norm);
  compiled  `backend="llvm"` gives the gradient with no `JitFallbackWarning`, on the
            first call and on the second (warm) one;
  times     the median CPU time of warm calls of `grad(objective)(*args)`, zygopy's
            stand-in against autograd's own `grad`.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import types
import warnings

import numpy as np

from bench.autograd_fixed_points import MIRROR, _can_pin
from bench.myia_check import fd_check, leaves, lookup
from bench.myia_programs import Checkout

MARK = "@@autograd_upstream "
EXAMPLES = ("rosenbrock", "tanh", "sinusoid", "logistic_regression", "neural_net",
            "neural_net_regression", "black_box_svi", "bayesian_neural_net",
            "gaussian_process", "deep_gaussian_process", "gmm", "ica", "rnn", "lstm",
            "variational_autoencoder", "mixture_variational_inference")
STANDINS = "bench.autograd_standins"
SWAPS = (   # (pattern of an import line, its replacement), the first match wins
    (r"from autograd\.numpy((?:\.\w+)*) import (.+)", r"from numpy\1 import \2"),
    (r"import autograd\.numpy((?:\.\w+)*) as (\w+)", r"import numpy\1 as \2"),
    (r"from autograd(?:\.\w+)* import (.+)", rf"from {STANDINS} import \1"),
    (r"import autograd\.(?:\w+\.)*(\w+) as (\w+)", rf"from {STANDINS} import \1 as \2"),
)
AGREE = 1e-7

# -- reading and loading the examples ---------------------------------------------------


def swap_imports(source: str) -> tuple:
    """(source with its autograd import lines swapped, how many were swapped).  An
    autograd import no rule covers is an error, never left in place."""
    lines, count = source.splitlines(), 0
    for k, line in enumerate(lines):
        text = line.strip()
        if not re.match(r"(from|import)\s+autograd\b", text):
            continue
        for pattern, replacement in SWAPS:
            if re.fullmatch(pattern, text):
                lines[k] = line[:len(line) - len(line.lstrip())] + \
                    re.sub(pattern, replacement, text)
                count += 1
                break
        else:
            raise SystemExit(f"no swap for the import line {text!r}")
    return "\n".join(lines) + "\n", count


def install_matplotlib_stub() -> None:
    """matplotlib (not needed, maybe not installed) as modules of inert callables."""
    class Inert(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return Inert(f"{self.__name__}.{name}")

        def __call__(self, *args, **kwargs):
            return Inert(self.__name__ + "()")
    for name in ("matplotlib", "matplotlib.pyplot", "matplotlib.image", "matplotlib.cm"):
        sys.modules[name] = Inert(name)


class Loader:
    """Loads examples as modules, siblings first, under their file names."""

    def __init__(self, checkout: Checkout, folder: str, swap: bool) -> None:
        self.checkout, self.folder, self.swap = checkout, folder, swap
        self.files = set(self._listing())
        self.errors: dict = {}          # module -> first failing top-level statement

    def _listing(self):
        if self.checkout.bare:
            out = subprocess.run(["git", "--git-dir", self.checkout.path, "ls-tree",
                                  "--name-only", "HEAD", "examples/"],
                                 check=True, capture_output=True, text=True).stdout
            return [os.path.basename(p)[:-3] for p in out.split() if p.endswith(".py")]
        return [f[:-3] for f in os.listdir(os.path.join(self.checkout.path, "examples"))
                if f.endswith(".py")]

    def load(self, name: str) -> types.ModuleType:
        if name in sys.modules:
            return sys.modules[name]
        source = original = self.checkout.read(f"examples/{name}.py")
        if self.swap:
            source, _ = swap_imports(source)
        tree = ast.parse(source)
        for node in tree.body:          # sibling examples it imports, first
            for sibling in _imported_names(node):
                if sibling in self.files and sibling != name:
                    self.load(sibling)
        path = os.path.join(self.folder, f"{name}.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(source)
        with open(path + ".orig", "w", encoding="utf-8") as fh:   # the file as given
            fh.write(original)
        mod = types.ModuleType(name)
        mod.__file__ = path
        sys.modules[name] = mod
        for node in tree.body:          # one statement at a time: a failure is recorded
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(ast.Module([node], []), path, "exec"), mod.__dict__)
            except Exception as exc:  # noqa: BLE001 (reported in the table)
                self.errors.setdefault(name, f"line {node.lineno}: {_one_line(exc)}")
        return mod


def _imported_names(node):
    if isinstance(node, ast.Import):
        return [a.name.split(".")[0] for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        return [node.module.split(".")[0]]
    return []


def _one_line(exc: BaseException, width: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text if len(text) <= width else text[:width - 3] + "..."

# -- per-example glue: what each example's __main__ block passes to grad -------------------


def _reseed(*states):
    """A reset that puts each RandomState back to seed 0."""
    return lambda: [s.seed(0) for s in states]


def _cell(fn, name):
    """The value `fn` closes over under `name`."""
    return fn.__closure__[fn.__code__.co_freevars.index(name)].cell_contents


def glue_rosenbrock(m):
    return m.rosenbrock, (np.array([0.3, -0.4]),), None


def glue_tanh(m):       # the example's deepest: egrad of egrad(egrad(egrad(tanh)))
    third, total = m.egrad(m.egrad(m.egrad(m.tanh))), m.np.sum
    return (lambda x: total(third(x))), (np.linspace(-3.0, 3.0, 13),), None


def glue_sinusoid(m):   # the second derivative of the Taylor series: grad(d_fun)
    return m.d_fun, (2.5,), None


def glue_logistic_regression(m):
    return m.training_loss, (np.array([0.3, -0.2, 0.5]),), None


def glue_neural_net(m):
    rs, batch_size = np.random.RandomState(1), 16
    images, labels = rs.rand(48, 20), np.eye(4)[rs.randint(0, 4, 48)]
    params = m.init_random_params(0.1, [20, 12, 8, 4])
    num_batches = int(np.ceil(len(images) / batch_size))
    log_posterior = m.log_posterior

    def batch_indices(iter):
        idx = iter % num_batches
        return slice(idx * batch_size, (idx + 1) * batch_size)

    def objective(params, iter):
        idx = batch_indices(iter)
        return -log_posterior(params, images[idx], labels[idx], 1.0)
    return objective, (params, 1), None


def glue_neural_net_regression(m):
    params = m.init_random_params(0.1, layer_sizes=[1, 4, 4, 1])
    inputs, targets = m.build_toy_dataset()
    logprob, log_gaussian = m.logprob, m.log_gaussian

    def objective(weights, t):
        return -logprob(weights, inputs, targets) - log_gaussian(weights, 10.0)
    return objective, (params, 0), None


def glue_black_box_svi(m):
    norm, exp = m.norm, m.np.exp

    def log_density(x, t):
        mu, log_sigma = x[:, 0], x[:, 1]
        return norm.logpdf(log_sigma, 0, 1.35) + norm.logpdf(mu, 0, exp(log_sigma))
    objective, _, _ = m.black_box_variational_inference(log_density, 2, num_samples=200)
    params = np.concatenate([-1 * np.ones(2), -5 * np.ones(2)])
    return objective, (params, 0), _reseed(_cell(objective, "rs"))


def glue_bayesian_neural_net(m):
    exp = m.np.exp
    rbf = lambda x: exp(-(x**2))  # noqa: E731 (as the example writes it)
    num_weights, _, logprob = m.make_nn_funs(layer_sizes=[1, 8, 8, 1], L2_reg=0.1,
                                             noise_variance=0.01, nonlinearity=rbf)
    inputs, targets = m.build_toy_dataset()
    log_posterior = lambda weights, t: logprob(weights, inputs, targets)  # noqa: E731
    objective, _, _ = m.black_box_variational_inference(log_posterior, num_weights,
                                                         num_samples=5)
    rs = np.random.RandomState(0)
    params = np.concatenate([rs.randn(num_weights), -5 * np.ones(num_weights)])
    return objective, (params, 0), _reseed(_cell(objective, "rs"))


def glue_gaussian_process(m):
    num_params, _, log_marginal_likelihood = m.make_gp_funs(m.rbf_covariance, num_cov_params=2)
    X, y = m.build_toy_dataset(D=1)
    objective = lambda params: -log_marginal_likelihood(params, X, y)  # noqa: E731
    return objective, (0.1 * np.random.RandomState(0).randn(num_params),), None


def glue_deep_gaussian_process(m):
    m.n_data = 20                   # build_deep_gp reads these globals of __main__
    m.X, m.y = m.build_step_function_dataset(D=1, n_data=20)
    total, log_marginal_likelihood, *_ = m.build_deep_gp(1, 1, m.rbf_covariance)
    objective = lambda params: -log_marginal_likelihood(params)  # noqa: E731
    return objective, (0.1 * np.random.RandomState(0).randn(total),), None


def glue_gmm(m):
    init_params = m.init_gmm_params(num_components=3, D=2, scale=0.1)
    data = m.make_pinwheel(radial_std=0.3, tangential_std=0.05, num_classes=3,
                           num_per_class=20, rate=0.4)

    gmm_log_likelihood = m.gmm_log_likelihood

    def objective(params):
        return -gmm_log_likelihood(params, data)
    flattened_obj, _, flat_params = m.flatten_func(objective, init_params)
    return flattened_obj, (np.asarray(flat_params),), None


def glue_ica(m):
    n_obs, n_lat, n_samples = 8, 2, 20
    num_weights, sample, logprob, unpack_weights = m.make_ica_funs(n_obs, n_lat)
    num_latent, reshape, exp = n_lat * n_samples, m.np.reshape, m.np.exp

    def unpack_params(params):
        weights = unpack_weights(params[:num_weights])
        latents = reshape(params[num_weights:num_weights + num_latent], (n_lat, n_samples))
        return weights, latents, exp(params[-1])
    rs = np.random.RandomState(0)
    true_weights = np.zeros((n_obs, n_lat))
    for i in range(n_lat):
        true_weights[:, i] = np.sin(np.linspace(0, 4 + i * 3.2, n_obs))
    _, data = sample(true_weights, n_samples, 1.0, rs)

    def objective(params):
        weight_matrix, latents, noise_std = unpack_params(params)
        return -logprob(weight_matrix, latents, noise_std, data) / n_samples
    return objective, (rs.randn(num_weights + num_latent + 1),), None


def _text_sequences(m):
    return m.build_dataset(m.__file__ + ".orig", sequence_length=8, alphabet_size=128,
                           max_lines=12)


def glue_rnn(m):
    inputs = _text_sequences(m)
    params = m.create_rnn_params(input_size=128, output_size=128, state_size=6,
                                 param_scale=0.01)

    rnn_log_likelihood = m.rnn_log_likelihood

    def training_loss(params, iter):
        return -rnn_log_likelihood(params, inputs, inputs)
    return training_loss, (params, 0), None


def glue_lstm(m):
    inputs = _text_sequences(m)
    params = m.init_lstm_params(input_size=128, output_size=128, state_size=6,
                                param_scale=0.01)

    lstm_log_likelihood = m.lstm_log_likelihood

    def training_loss(params, iter):
        return -lstm_log_likelihood(params, inputs, inputs)
    return training_loss, (params, 0), None


def glue_variational_autoencoder(m):
    latent_dim, data_dim, batch_size = 2, 16, 10
    images = np.where(np.random.RandomState(2).rand(30, data_dim) > 0.5, 1.0, -1.0)
    params = (m.init_net_params(0.3, [latent_dim, 8, data_dim]),
              m.init_net_params(0.3, [data_dim, 8, latent_dim * 2]))
    num_batches = int(np.ceil(len(images) / batch_size))
    seed, vae_lower_bound = np.random.RandomState(0), m.vae_lower_bound

    def batch_indices(iter):
        idx = iter % num_batches
        return slice(idx * batch_size, (idx + 1) * batch_size)

    def objective(combined_params, iter):
        data_idx = batch_indices(iter)
        gen_params, rec_params = combined_params
        return -vae_lower_bound(gen_params, rec_params, images[data_idx], seed) / data_dim
    return objective, (params, 1), _reseed(seed)


def glue_mixture_variational_inference(m):
    norm, exp, logaddexp = m.norm, m.np.exp, m.np.logaddexp

    def log_density(x, t):
        mu, log_sigma = x[:, 0], x[:, 1]
        sigma_density = norm.logpdf(log_sigma, 0, 1.35)
        mu_density = norm.logpdf(mu, -0.5, exp(log_sigma))
        sigma_density2 = norm.logpdf(log_sigma, 0.1, 1.35)
        mu_density2 = norm.logpdf(mu, 0.5, exp(log_sigma))
        return logaddexp(sigma_density + mu_density, sigma_density2 + mu_density2)
    init_var_params, elbo, _, _ = m.build_mog_bbsvi(log_density, num_samples=10, k=3)

    def objective(params, t):
        return -elbo(params, t)
    return objective, (init_var_params(2), 0), _reseed(_cell(elbo, "rs"))


GLUE = {name: globals()[f"glue_{name}"] for name in EXAMPLES}

# -- one process: one system over the examples ---------------------------------------------


def flat_gradient(g, like) -> list:
    """The numbers of gradient `g` in the leaf order of `like` (the parameters)."""
    out = []
    for path, leaf in leaves(like):
        entry = lookup(g, path)
        if entry is None:
            raise TypeError(f"no gradient entry at {path}")
        out.extend(np.ravel(np.asarray(entry, dtype=float)).tolist())
    return out


def _median_us(call, budget_s: float = 0.5, most: int = 50) -> float:
    """Median CPU time of warm calls (CPU time: steadier on a shared machine)."""
    call()
    times, stop = [], time.perf_counter() + budget_s
    while len(times) < 3 or (len(times) < most and time.perf_counter() < stop):
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1e6


def _silently(call):
    with contextlib.redirect_stdout(io.StringIO()):
        return call()


def zygopy_record(objective, args, reset) -> dict:
    """Gradient (default backend), whether llvm compiles it, CD check and time."""
    from adjoint import gradient
    from jit.pullback.backend import BACKEND, JitFallbackWarning
    again = reset or (lambda: None)
    rec: dict = {}
    BACKEND.warned.clear()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", JitFallbackWarning)
            for _ in range(2):      # a second call: the first may run a callee in
                again()             # the interpreter to learn its result type
                _silently(lambda: gradient(objective, *args, backend="llvm"))
        rec["compiled"] = True
    except Exception as exc:  # noqa: BLE001 (the reason is a table cell)
        rec["compiled"], rec["why"] = False, _one_line(exc)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            again()
            g = _silently(lambda: gradient(objective, *args))
    except Exception as exc:  # noqa: BLE001
        rec["error"] = _one_line(exc)
        return rec
    rec["grad"] = flat_gradient(g[0], args[0])

    def plain(*a):
        again()
        return objective(*a)
    checked = (True,) + (False,) * (len(args) - 1)
    rec["fd"] = _silently(lambda: fd_check(plain, args, checked, (g[0],) + (None,) * (len(args) - 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec["us"] = _median_us(lambda: _silently(lambda: gradient(objective, *args)))
    return rec


def autograd_record(objective, args, reset) -> dict:
    import autograd
    again = reset or (lambda: None)
    df = autograd.grad(objective)

    def call():
        again()
        return _silently(lambda: df(*args))
    try:
        g = call()
    except Exception as exc:  # noqa: BLE001
        return {"error": _one_line(exc)}
    return {"grad": flat_gradient(g, args[0]), "us": _median_us(call)}


def probe(system: str, checkout: str, names) -> dict:
    """Every example in `names` under `system`, in this process."""
    if system == "zygopy":
        import jit  # noqa: F401  (backend "llvm" where zygopy is not pip-installed)
    install_matplotlib_stub()
    out = {}
    with tempfile.TemporaryDirectory(prefix="autograd_upstream_") as folder:
        sys.path.insert(0, folder)      # the examples import each other by name
        loader = Loader(Checkout(checkout), folder, swap=system == "zygopy")
        for name in names:
            print(f"  {system}: {name}", file=sys.stderr, flush=True)
            rec: dict = {}
            try:
                m = loader.load(name)
                objective, args, reset = GLUE[name](m)
                record = zygopy_record if system == "zygopy" else autograd_record
                rec = record(objective, args, reset)
            except Exception as exc:  # noqa: BLE001
                rec["error"] = _one_line(exc)
            if name in loader.errors:
                rec["body_error"] = loader.errors[name]
            out[name] = rec
    return out


# -- the parent: both processes, the checks and the table ----------------------------------


def run_system(system: str, checkout: str, names) -> dict:
    pin = ["taskset", "-c", "1"] if _can_pin() else []
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    cmd = pin + [sys.executable, "-m", "bench.autograd_upstream", checkout,
                 "--probe", system, "--only", ",".join(names)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    line = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
    if line:
        return json.loads(line[-1][len(MARK):])
    why = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {name: {"error": f"{system} process: {why}"} for name in names}


def verdict(z: dict, a: dict) -> tuple:
    """(right?, why not) for one example's zygopy record against autograd's."""
    if "error" in z:
        return False, z["error"]
    if z.get("fd"):
        return False, "central differences: " + z["fd"]
    if "grad" in a:
        gz, ga = np.array(z["grad"]), np.array(a["grad"])
        if gz.shape != ga.shape:
            return False, f"{gz.size} gradient entries, autograd has {ga.size}"
        gap, size = np.linalg.norm(gz - ga), np.linalg.norm(ga)
        if not gap <= AGREE * max(size, 1e-300):
            return False, f"differs from autograd's gradient by {gap:.3g} (norm {size:.3g})"
    return True, ""


def rows_of(results: dict, names) -> list:
    rows = []
    for name in names:
        z, a = results["zygopy"].get(name, {}), results["autograd"].get(name, {})
        right, why = verdict(z, a)
        compiled = bool(z.get("compiled")) and right
        reasons = [r for r in (why, "" if z.get("compiled") else z.get("why", ""),
                               z.get("body_error") and "module body " + z["body_error"])
                   if r]
        rows.append({"example": name, "right": right, "compiled": compiled,
                     "why": "; ".join(dict.fromkeys(reasons)), "zygopy_us": z.get("us"),
                     "autograd_us": a.get("us"), "autograd_error": a.get("error")})
    return rows


def table(rows: list) -> str:
    out = ["| example | right | compiled | why not | zygopy us | autograd us | ratio |",
           "|---|---|---|---|---:|---:|---:|"]
    for r in rows:
        zu, au = r["zygopy_us"], r["autograd_us"]
        ratio = f"{au / zu:.2f}x" if zu and au else ""
        why = r["why"].replace("|", "\\|")
        out.append(f"| {r['example']} | {'yes' if r['right'] else 'NO'} | "
                   f"{'yes' if r['compiled'] else 'no'} | {why} | "
                   f"{f'{zu:.1f}' if zu else '-'} | {f'{au:.1f}' if au else '-'} | {ratio} |")
    n = len(rows)
    faster = sum(1 for r in rows if r["compiled"] and r["zygopy_us"] and r["autograd_us"]
                 and r["zygopy_us"] < r["autograd_us"])
    out.append("")
    out.append(f"right {sum(r['right'] for r in rows)}/{n}, compiled (llvm, no fallback, "
               f"right) {sum(r['compiled'] for r in rows)}/{n}, compiled and faster than "
               f"autograd {faster}/{sum(r['compiled'] for r in rows)}; ratio = autograd us / "
               f"zygopy us (median CPU time of a warm call, each system in its own pinned process)")
    for r in rows:
        if r["autograd_error"]:
            out.append(f"autograd failed on {r['example']}: {r['autograd_error']}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.autograd_upstream")
    ap.add_argument("checkout", nargs="?", default=MIRROR if os.path.isdir(MIRROR) else None,
                    help="an autograd checkout (work tree or git directory)")
    ap.add_argument("--only", help="comma-separated example names")
    ap.add_argument("--json", help="also write the records here")
    ap.add_argument("--probe", choices=("zygopy", "autograd"), help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    if opts.checkout is None:
        ap.error("give the path of an autograd checkout")
    names = opts.only.split(",") if opts.only else list(EXAMPLES)
    unknown = set(names) - set(EXAMPLES)
    if unknown:
        ap.error(f"unknown {sorted(unknown)}; known: {', '.join(EXAMPLES)}")
    if opts.probe:
        found = probe(opts.probe, opts.checkout, names)
        print("\n" + MARK + json.dumps(found))
        return 0
    results = {s: run_system(s, opts.checkout, names) for s in ("zygopy", "autograd")}
    rows = rows_of(results, names)
    print(table(rows))
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as fh:
            json.dump({"results": results, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
