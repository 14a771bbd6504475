"""LLVM code generation for typed IR: functions, blocks and calls (`function`), the
scalar primitives (`scalar`), tuples and arrays (`arrays`), and the C-ABI entry of a
compiled signature (`entry`)."""
