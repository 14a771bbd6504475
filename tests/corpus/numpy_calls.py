"""numpy calls kept as calls: np.dot, np.sum, ufuncs, constructors, module attribute
chains (np.linalg.norm), keyword arguments, array arithmetic and `@`."""
import numpy as np

from . import case

V = np.array([1.0, -2.0, 3.5, 0.25])
W = np.array([0.5, 0.5, -1.0, 2.0])
M = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])


@case((V, W),)
def np_dot(a, b):
    return np.dot(a, b)


@case((V,), (M,))
def np_sum(a):
    return np.sum(a) + np.sum(a * a)


@case((0.5,), (V,))
def np_ufuncs(x):
    return np.sin(x) + np.cos(x) * np.exp(-x) + np.tanh(x)


@case((V,),)
def np_sqrt_abs(a):
    return np.sqrt(np.abs(a)) + np.maximum(a, 0.0)


@case((3,), (0,))
def np_constructors(n):
    return np.zeros(n) + np.ones(n) * 2.0 + np.arange(n)


@case((V,), (M,))
def np_linalg_norm(a):
    return np.linalg.norm(a)


@case((M,),)
def np_sum_axis(m):
    return np.sum(m, axis=0), np.sum(m, axis=1)


@case((V, W),)
def array_arith(a, b):
    return a * 2.0 + b - a / 4.0, -a, a ** 2


@case((M, np.array([1.0, -1.0])),)
def matmul_op(m, v):
    return m @ v, np.dot(m.T, m @ v)


@case((1.0,),)
def np_constants(x):
    return x * np.pi + np.e


@case((V,),)
def np_reductions(a):
    return np.mean(a), np.max(a), np.min(a), np.prod(a)


@case((V, W),)
def np_outer_cumsum(a, b):
    return np.outer(a, b), np.cumsum(a)


@case((V,),)
def np_where(a):
    return np.where(a > 0, a, 0.0)


@case((2.0,), (V,))
def np_float64(x):
    return np.float64(x) * 2, np.array(x) + 1.0


@case((V,),)
def np_in_loop(a):
    s = 0.0
    for i in range(len(a)):
        s += np.sin(a[i]) * np.exp(a[i] * 0.1)
    return s


@case((M,),)
def np_array_methods(m):
    return m.sum(), m.T.shape[0], m.reshape(2, 3)[1, 2]
