"""What myia's test files and examples import, as plain Python and numpy.

`bench.myia_programs` runs myia's own sources with only their imports changed: every
`import myia...` (and the `torch`, `torchvision` and `gym` imports of the examples)
resolves to a module built here.  Three kinds of names:

* operations with a Python meaning (`scalar_add`, `array_map`, `dot`, `softmax`, ...)
  are written here in numpy, so the programs compute what they compute under myia;
* the AD entry points (`grad`, `value_and_grad`) and the test helpers (`mt`, `bt`,
  `myia_function_test`) record which function is differentiated at which arguments
  instead of differentiating it (`Captured`, `GradCase`);
* everything else (pipelines, abstract types, backends) is an inert `Placeholder`:
  module-level code that builds them still runs, nothing uses them.
"""
from __future__ import annotations

import ast
import functools
import importlib.abc
import importlib.machinery
import operator
import sys
import types
from dataclasses import dataclass

import numpy as np

# ---------------------------------------------------------------------------------
# inert values for names with no Python meaning


class Placeholder:
    """Stands for a myia object the programs never compute with (a pipeline, an
    abstract type, a backend): calls, attribute reads and indexing all give another
    placeholder, so module-level set-up code runs unchanged."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> "Placeholder":
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Placeholder(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs) -> "Placeholder":
        return Placeholder(f"{self._name}(...)")

    def __getitem__(self, key) -> "Placeholder":
        return Placeholder(f"{self._name}[...]")

    def __mul__(self, other) -> "Placeholder":
        return self

    def __repr__(self) -> str:
        return f"<stand-in {self._name}>"


class MyiaOnly(Exception):
    """Raised by a stand-in for a myia feature that has no Python meaning."""


def myia_only(name: str):
    """A callable that refuses to run: `name` is a myia feature only."""
    def refuse(*args, **kwargs):
        raise MyiaOnly(f"{name} is a myia-only feature")
    refuse.__name__ = name
    return refuse


# ---------------------------------------------------------------------------------
# recording what is differentiated


class Captured(Exception):
    """Stops a test body or an example's driver at its first call of myia's `grad` or
    `value_and_grad`: `fn` is the function differentiated, `args` its arguments."""

    def __init__(self, fn, args: tuple, kwargs: dict) -> None:
        super().__init__(getattr(fn, "__name__", repr(fn)))
        self.fn, self.args, self.kwargs = fn, args, kwargs


def grad(fn, *wrt, **options):
    """myia's `grad(fn, ...)`: the function it returns records its call."""
    def call(*args, **kwargs):
        raise Captured(fn, args, kwargs)
    return call


value_and_grad = grad


@dataclass
class GradCase:
    """One use of myia's `gradient(...)` test helper: the arguments, and whether each
    is differentiated (`NoTestGrad` marks one that is not)."""
    args: tuple
    options: dict

    def __call__(self, fn):
        fn.__dict__.setdefault("myia_grad_cases", []).append(self)
        return fn


class NoTestGrad:
    """An argument passed to the program whose gradient is not checked."""

    def __init__(self, value) -> None:
        self.value = value


def myia_function_test(*options, **koptions):
    """myia's decorator that turns a helper into a test-case maker; the maker here
    records its cases (on the decorated function, as `myia_grad_cases`)."""
    def make(helper):
        def case(*args, **kw):
            return GradCase(args, kw)
        case.__name__ = helper.__name__
        return case
    return make


def mt(*cases, **shared):
    """myia's `mt`: several cases on one function, with shared options."""
    def apply(fn):
        for c in cases:
            if isinstance(c, GradCase):
                GradCase(c.args, {**shared, **c.options})(fn)
        return fn
    return apply


def bt(*options, **koptions):
    """myia's `bt`: a test run once per backend; left as a plain function of
    `backend`."""
    return lambda fn: fn


def myia(fn=None, **options):
    """myia's compiling decorator, in both spellings (`@myia`, `@myia(...)`): the
    function is left as it is."""
    if fn is None:
        return lambda g: g
    return fn


class ArithmeticData:
    """myia's base class for dataclasses with elementwise arithmetic; the programs
    only read fields, so it adds nothing."""


def identity(x, *args, **kwargs):
    """`to_device(model, ...)`, `tagged(x)`: the value itself."""
    return x


# ---------------------------------------------------------------------------------
# myia's operations, in numpy

def array_map(fn, *arrays):
    """Apply a scalar function elementwise; the scalar operators broadcast."""
    return fn(*arrays)


def array_reduce(fn, a, shape):
    """Reduce `a` with `fn` down to `shape`.  Only the form myia's test programs use
    is written: `array_reduce(scalar_add, a, ())`, the sum of all elements
    (`bench.myia_programs` checks every call in a program has that form before
    running it, so that this stand-in needs no run-time check)."""
    return np.sum(a)


def array_to_scalar(a):
    """The number held by a 0-d array."""
    return a.item()


def scalar_to_array(x, typ=None):
    """A 0-d array holding `x`."""
    return np.array(x)


def distribute(a, shape):
    """Broadcast `a` to `shape`."""
    return np.broadcast_to(a, shape)


def reshape(a, shape):
    return np.reshape(a, shape)


def transpose(a, perm):
    return np.transpose(a, perm)


def dot(a, b):
    return np.dot(a, b)


def scalar_cast(x, typ):
    """`x` converted to the Python type `typ` stands for."""
    return typ(x)


def array_exp(a):
    return np.exp(a)


def array_pow(a, p):
    return a ** p


def standin_sum(x, dim=None, keepdim=False):
    """torch-style `sum(x, dim, keepdim)`."""
    return np.sum(x, axis=dim, keepdims=keepdim)


def standin_mean(x, dim=None, keepdim=False):
    """torch-style `mean(x, dim, keepdim)`."""
    return np.mean(x, axis=dim, keepdims=keepdim)


def standin_std(x, dim=None, unbiased=True, keepdim=False):
    """torch-style standard deviation (unbiased by default, as torch's)."""
    return np.std(x, axis=dim, ddof=1 if unbiased else 0, keepdims=keepdim)


def softmax(x, dim=None):
    """exp(x) / sum(exp(x)) along `dim`, shifted by the maximum for range."""
    shifted = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return shifted / np.sum(shifted, axis=dim, keepdims=True)


def relu(x):
    return np.maximum(x, 0.0)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


SCALAR_OPS = {
    "scalar_add": operator.add, "scalar_sub": operator.sub,
    "scalar_mul": operator.mul, "scalar_div": operator.truediv,
    "scalar_pow": operator.pow, "scalar_uadd": operator.pos,
    "scalar_usub": operator.neg, "scalar_mod": operator.mod,
    "gadd": operator.add,
}

OPERATIONS = {
    **SCALAR_OPS,
    "array_map": array_map, "array_reduce": array_reduce,
    "array_to_scalar": array_to_scalar, "scalar_to_array": scalar_to_array,
    "distribute": distribute, "reshape": reshape, "transpose": transpose, "dot": dot,
    "scalar_cast": scalar_cast, "array_exp": array_exp, "array_pow": array_pow,
    "grad": grad, "value_and_grad": value_and_grad, "partial": functools.partial,
    "tagged": identity,
    "random_initialize": myia_only("random_initialize"),
    "random_uint32": myia_only("random_uint32"),
    "array_cast": myia_only("array_cast"),
    "J": myia_only("J"),
}


# ---------------------------------------------------------------------------------
# myia.testing.common: its fixed test matrices are read from the checkout


class FixedMatrices:
    """myia's `MA(r, c)`: the top-left r x c block of a fixed table of numbers (the
    tables are read from the checkout's myia/testing/common.py)."""

    def __init__(self, table: np.ndarray) -> None:
        self.table = table

    def __call__(self, rows: int, cols: int, dtype: str = "float64") -> np.ndarray:
        return self.table[:rows, :cols].astype(dtype)

    def __mul__(self, factor: float) -> "FixedMatrices":
        return FixedMatrices(self.table * factor)


def fixed_matrices(common_source: str) -> dict:
    """The `NAME = FixedMatrix([[...], ...])` tables of myia/testing/common.py."""
    out = {}
    for node in ast.parse(common_source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call) and node.value.args
                and getattr(node.value.func, "id", "") == "FixedMatrix"):
            table = ast.literal_eval(node.value.args[0])
            out[node.targets[0].id] = FixedMatrices(np.array(table, dtype=float))
    return out


@dataclass(frozen=True)
class Point3D(ArithmeticData):
    """myia's three-field test dataclass."""
    x: object
    y: object
    z: object


@dataclass(frozen=True)
class Pair(ArithmeticData):
    """myia's two-field test dataclass (a tree node)."""
    left: object
    right: object


# ---------------------------------------------------------------------------------
# the modules


def _exception_class(name: str) -> type:
    return type(name, (Exception,), {})


NAMED = {
    "myia": {"myia": myia, "ArithmeticData": ArithmeticData, "grad": grad,
             "value_and_grad": value_and_grad},
    "myia.api": {"myia": myia, "to_device": identity},
    "myia.operations": OPERATIONS,
    "myia.operations.primitives": OPERATIONS,
    "myia.lib": OPERATIONS,
    "myia.testing.common": {"Point3D": Point3D, "Pair": Pair, "u64": int, "i64": int,
                            "f64": float, "f32": float},
    "myia.testing.multitest": {"mt": mt, "bt": bt,
                               "myia_function_test": myia_function_test},
    "myia.debug.finite_diff": {"NoTestGrad": NoTestGrad},
    "myia.public_api": {"_sum": standin_sum, "mean": standin_mean, "std": standin_std,
                        "softmax": softmax, "relu": relu, "sigmoid": sigmoid,
                        "reshape": reshape, "uniform": myia_only("uniform"),
                        "binary_cross_entropy": myia_only("binary_cross_entropy")},
    "myia.frontends": {"activate_frontend": identity},
}

ROOTS = ("myia", "torch", "torchvision", "gym")


class StandinModule(types.ModuleType):
    """A module whose listed names are the stand-ins above and whose other names are
    placeholders (exception classes for names ending in Error)."""

    def __init__(self, name: str, extra: dict) -> None:
        super().__init__(name)
        self.__path__ = []      # a package: submodules import too
        self.__dict__.update(NAMED.get(name, {}))
        self.__dict__.update(extra.get(name, {}))
        if name == "myia.operations":
            self.primitives = _module("myia.operations.primitives", extra)

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        value = _exception_class(attr) if attr.endswith("Error") else \
            Placeholder(f"{self.__name__}.{attr}")
        setattr(self, attr, value)
        return value


def _module(name: str, extra: dict) -> StandinModule:
    mod = sys.modules.get(name)
    if not isinstance(mod, StandinModule):
        mod = StandinModule(name, extra)
        sys.modules[name] = mod
    return mod


class StandinFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers every import of myia (and of torch, torchvision, gym) with a
    `StandinModule`; `extra` adds names per module (the fixed test matrices)."""

    def __init__(self, extra: dict) -> None:
        self.extra = extra

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in ROOTS:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return _module(spec.name, self.extra)

    def exec_module(self, module):
        pass


def install(common_source: str | None) -> None:
    """Route myia's imports to the stand-ins (the real packages, if any, are hidden)."""
    extra = {"myia.testing.common": fixed_matrices(common_source or "")}
    for name in list(sys.modules):
        if name.split(".")[0] in ROOTS:
            del sys.modules[name]
    sys.meta_path.insert(0, StandinFinder(extra))
