"""zygopy's benchmark suite: plain-Python workloads (`bench.workloads`), adapters for
zygopy and its peers (`bench.systems`, `bench.peers`), one worker subprocess per
system (`bench.worker`) and the runner that prints the tables (`python -m bench.run`).
See bench/README.md."""
