"""What compiled code runs against: the LLVM engine and error record (`native`), the
tape (`tape`), and the native entries Python calls (`fastcall`, the pullback fast
paths)."""
