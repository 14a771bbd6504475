"""GPU benchmark: the elementwise gradient of a loop-bearing function over 10^8
float64 elements with `jit.cuda.map_gradient`.

    python -m bench.cuda_bench [--n 100000000] [--iters 8] [--repeats 5]

Prints, side by side from one run:
  * the kernel time (median of `repeats`, device arrays in and out, no host copies);
  * the achieved bandwidth (x read, y and dy/dx written: 24 bytes per element; the
    tape's traffic is reported separately, it stays in the GPU's memory hierarchy)
    against the device's measured copy bandwidth (cuMemcpyDtoD of 1 GiB);
  * the CPU gradient (zygopy's pullback, backend "llvm" when it is available,
    otherwise the interpreter, timed on a slice and scaled) and the speedup over it;
  * PyTorch on the same GPU where it is installed with CUDA.
Without a GPU (no cuda-bindings, no driver, no device) it stops with exit status 2
and says what is missing.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np


def soft_pow(x, n):
    """A loop with a branch: every iteration records on the tape."""
    r = 1.0
    k = 0
    while k < n:
        if r > 4.0:
            r = 0.5 * r * x
        else:
            r = r * x + 0.125
        k += 1
    return r


def _median_time(fn, repeats: int) -> float:
    fn()  # compile and warm up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def copy_bandwidth(nbytes: int = 1 << 30, repeats: int = 5) -> float:
    """Bytes per second of a device-to-device copy (read + write counted)."""
    from jit.cuda.driver import DeviceBuffer, check
    src, dst = DeviceBuffer(nbytes), DeviceBuffer(nbytes)
    drv = src.dev.drv

    def copy():
        check(drv.cuMemcpyDtoD(dst.ptr, src.ptr, nbytes), "cuMemcpyDtoD")
        check(drv.cuCtxSynchronize(), "cuCtxSynchronize")
    return 2 * nbytes / _median_time(copy, repeats)


def gpu_gradient(n: int, iters: int, repeats: int) -> tuple:
    """(seconds per call, tape words per element) on device-resident data."""
    import jit
    from jit.cuda.driver import DeviceBuffer
    x = DeviceBuffer.from_host(np.random.default_rng(0).uniform(0.5, 1.5, n))
    seconds = _median_time(lambda: jit.cuda.map_gradient(soft_pow, x, iters), repeats)
    from jit.cuda.compile import operand_types
    from jit.cuda.gradient import compile_gradient
    k = compile_gradient(soft_pow, operand_types((x, iters)))
    return seconds, k.tape_cap


def cpu_gradient_per_element(iters: int, sample: int = 20_000) -> tuple:
    """(seconds per element, backend) of zygopy's CPU gradient."""
    import adjoint
    xs = np.random.default_rng(1).uniform(0.5, 1.5, sample)
    for backend in ("llvm", "interp"):
        try:
            adjoint.gradient(soft_pow, float(xs[0]), iters, backend=backend)
        except (NotImplementedError, TypeError, ValueError):
            continue
        count = sample if backend == "llvm" else sample // 20
        t0 = time.perf_counter()
        for v in xs[:count]:
            adjoint.gradient(soft_pow, float(v), iters, backend=backend)
        return (time.perf_counter() - t0) / count, backend
    raise RuntimeError("no CPU gradient backend works for soft_pow")


def torch_gradient(n: int, iters: int, repeats: int):
    """Seconds per call of the same gradient in eager PyTorch on the GPU, or None."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    x = torch.rand(n, dtype=torch.float64, device="cuda") + 0.5

    def run():
        xr = x.detach().requires_grad_(True)
        r = torch.ones_like(xr)
        for _ in range(iters):
            r = torch.where(r > 4.0, 0.5 * r * xr, r * xr + 0.125)
        r.sum().backward()
        torch.cuda.synchronize()
    return _median_time(run, repeats)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10 ** 8)
    ap.add_argument("--iters", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args(argv)
    import jit
    try:
        dev = jit.cuda.driver.device()
    except jit.cuda.CudaUnavailable as e:
        print(f"cuda_bench: needs a GPU: {e}", file=sys.stderr)
        return 2
    copy_bw = copy_bandwidth()
    seconds, words = gpu_gradient(a.n, a.iters, a.repeats)
    achieved = 24 * a.n / seconds
    cpu_per, backend = cpu_gradient_per_element(a.iters)
    rows = [("device", f"{dev.arch}, {dev.sms} SMs"),
            ("elements", f"{a.n:.3g}, {a.iters} loop iterations each"),
            ("gpu gradient", f"{seconds * 1e3:.2f} ms"),
            ("achieved bandwidth", f"{achieved / 1e9:.1f} GB/s (24 B/element)"),
            ("device copy bandwidth", f"{copy_bw / 1e9:.1f} GB/s"),
            ("ratio", f"{achieved / copy_bw:.0%} of copy (target >= 60%)"),
            ("tape", f"{words} words/element, {2 * 8 * words * a.n / seconds / 1e9:.1f} "
                     "GB/s of tape traffic on top"),
            (f"cpu gradient ({backend})", f"{cpu_per * a.n:.2f} s (scaled from a slice)"),
            ("speedup over cpu", f"{cpu_per * a.n / seconds:.0f}x")]
    t = torch_gradient(a.n, a.iters, a.repeats)
    rows.append(("pytorch eager (gpu)", "not installed with CUDA" if t is None else
                 f"{t * 1e3:.2f} ms, zygopy is {t / seconds:.1f}x faster"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
