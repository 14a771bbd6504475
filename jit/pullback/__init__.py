"""The compiled J transform: type rules and lowering of the tape and cotangent
primitives of adjoint IR, native calls between J-transformed functions, and the
`backend="llvm"` runner that `adjoint.pullback` uses."""
