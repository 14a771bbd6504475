"""The library the JIT compiles: one registry (`registry`) of every callable and
operator, each declared once with its type rule, native code, derivative and GPU
mapping, in one file per family.  `python -m jit.library` prints it."""
