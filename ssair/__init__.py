"""ssair: the SSA IR of zygopy (data structures, printer, parser, verifier, passes,
and the reference interpreter)."""
from .ir import IR, Arg, Block, Branch, Const, Goto, Phi, Raise, Return, Stmt, Var
from .primitives import PRIMITIVES, Primitive, primitive, register
from .printer import format_ir
from .interpreter import Closure, interpret
from .parser import parse
from .verifier import verify, VerifyError
from . import cfg
