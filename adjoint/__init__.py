"""adjoint: reverse-mode AD of SSA IR by the Zygote J transform (Innes 2018).

    from adjoint import pullback, gradient
    y, back = pullback(f, x, n)
    back(1.0)            # (df/dx, None)

Modules: `rules` (+ `rule_table`, `rules_math`, `rules_numpy`) the derivative table;
`special_callees` the callees run by handlers of their own; passes
`merge_returns`, `branches`, `activity`, `instrument`, `stacks`, `reverse`;
`transform` orchestration, cache and call runtime; `caches` `clear_cache` (memory, and
the compiled backend's disk cache through `on_clear_disk`); `tape` the runtime tape and
cotangent primitives; `api` the user functions (`options`: zygopy's options apart from
the user's keywords); `transforms` JAX's spelling (`grad`, `value_and_grad(f)`,
`checkpoint`, `vmap`); `nested` second order (rules for
the tape operations, so that J applies to its own output); `forward` forward mode
(`jvp`, `jacfwd`, `hvp`, `code_tangent`: the `tangent` pass with `rules_tangent`);
`custom` the derivatives users control (`stop_gradient`, `custom_vjp`, `custom_jvp`,
`jvp_rule`).
"""
from . import tape  # noqa: F401
from .rules import Pullback as RulePullback  # noqa: F401
from .api import (code_adjoint, gradient, jacobian, pullback,  # noqa: F401
                  register_backend, rule, value_and_grad)
from .caches import clear_cache, on_clear_disk  # noqa: F401
from . import nested  # noqa: F401,E402  (nested AD: rules for the tape ops)
from .forward import code_tangent, hessian, hvp, jacfwd, jvp  # noqa: F401,E402
from .custom import custom_jvp, custom_vjp, jvp_rule, stop_gradient  # noqa: F401,E402
from . import nested_hv  # noqa: F401,E402  (nested gradient: Hessian-vector derivatives)
from .passes import nested_forward  # noqa: F401,E402  (jvp, hvp, ... in user code)
from .passes import nested_pullback  # noqa: F401,E402  (pullback and back in user code)
from .pytrees import register_pytree_node  # noqa: F401,E402
from .transforms import checkpoint, grad, vmap  # noqa: F401,E402

__all__ = ["pullback", "gradient", "value_and_grad", "jacobian", "hessian", "code_adjoint",
           "rule", "register_backend", "jvp", "jacfwd", "hvp", "code_tangent",
           "grad", "checkpoint", "vmap",
           "stop_gradient", "custom_vjp", "custom_jvp", "jvp_rule", "register_pytree_node",
           "clear_cache", "on_clear_disk"]
