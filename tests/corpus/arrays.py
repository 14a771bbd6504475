"""numpy array indexing: reads and writes, 1-D and 2-D, negative indices, `len`,
`a.shape[k]`, augmented element updates, swaps of elements."""
import numpy as np

from . import case

V = np.array([1.0, -2.0, 3.5, 0.25, 8.0])
M = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
IV = np.array([3, 1, 4, 1, 5, 9], dtype=np.int64)


@case((V, 0), (V, 4), (V, -1), (V, -5))
def read_elem(a, i):
    return a[i]


@case((M, 1, 2), (M, 0, -1), (M, -2, -3))
def read_2d(m, i, j):
    return m[i, j]


@case((M, 1, 0),)
def read_chained(m, i, j):
    row = m[i]
    return row[j] + m[i][j + 1]


@case((V,), (M,), (IV,))
def len_and_shape(a):
    return len(a), a.shape[0], a.ndim


@case((M,),)
def shape_2d(m):
    return m.shape[0] * 10 + m.shape[1], m.shape[-1]


@case((V,),)
def index_loop_sum(a):
    s = 0.0
    for i in range(len(a)):
        s += a[i] * i
    return s


@case((V, V), (IV, IV))
def dot_loop(a, b):
    s = 0
    for i in range(a.shape[0]):
        s = s + a[i] * b[i]
    return s


@case((M, np.array([1.0, 0.5, -1.0])),)
def matvec_loop(m, v):
    out = np.zeros(m.shape[0])
    for i in range(m.shape[0]):
        acc = 0.0
        for j in range(m.shape[1]):
            acc += m[i, j] * v[j]
        out[i] = acc
    return out


@case((V,),)
def write_input(a):
    a[0] = 100.0
    a[-1] = a[1] * 2
    return a[0] + a[-1]


@case((5,), (0,))
def build_array(n):
    a = np.zeros(n)
    for i in range(n):
        a[i] = i * 1.5
    return a


@case((3, 4),)
def build_2d(n, m):
    a = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            a[i, j] = i * 10 + j
    a[-1, -1] = -1.0
    return a


@case((V,), (IV,))
def reverse_in_place(a):
    i = 0
    j = len(a) - 1
    while i < j:
        a[i], a[j] = a[j], a[i]
        i += 1
        j -= 1
    return a


@case((IV,),)
def augmented_elements(a):
    for i in range(len(a)):
        a[i] += i
        a[i] *= 2
    return a


@case((M,),)
def augmented_2d(m):
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            m[i, j] -= 0.5 * j
    return m


@case((V,),)
def copy_then_write(a):
    b = a.copy()
    b[0] = -1.0
    return a[0], b[0]


@case((V, 2),)
def prefix_sums(a, k):
    out = np.zeros(len(a))
    s = 0.0
    for i in range(len(a)):
        s += a[i]
        out[i] = s
    return out[k], out


@case((M, 1),)
def row_view_write(m, i):
    row = m[i]
    row[0] = 42.0
    return m[i, 0]


@case((V,),)
def bubble_sort(a):
    n = len(a)
    for i in range(n):
        for j in range(n - 1 - i):
            if a[j] > a[j + 1]:
                a[j], a[j + 1] = a[j + 1], a[j]
    return a
