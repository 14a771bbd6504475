"""Differential check over programs that read an array (a view of it, a container
holding it, what a user function returned) and write into that memory later: the
gradient from backend="interp" and backend="llvm" against central differences, and
jvp (interp) against the same differences.  Not a test (about a minute); run as
    python tests/inplace_alias_check.py [c01 c02 ...]
A line starting with "!!" is a wrong number; "refused" is a clear error."""
import sys, copy, warnings
import numpy as np
from adjoint import gradient, jvp
warnings.simplefilter("ignore")

def g_write(x):
    x[0] = 5.0
    return 0.0

def g_view(x):
    return x[0:2]

def g_ident(x):
    return x

def g_mulsum(x, b):
    return np.sum(x * b)

def c01(a, b):
    t = a * 1.0
    t[0:2] = t[0:2] * b
    return np.sum(t)

def c02(M, v):
    t = M * 1.0
    t[1] *= v
    return np.sum(t)

def c03(a, b):
    t = a * a
    t[1:] *= np.max(b)
    return np.sum(t)

def c04(a, b):           # constant base, written through a view
    z = np.ones(3)
    y = z * a
    v = z[0:2]
    v[...] = 5.0
    return np.sum(y)

def c05(a, b):           # callee writes into the array read by a pullback
    t = a * 1.0
    y = t * a
    g_write(t)
    return np.sum(y)

def c06(a, b):           # tuple element
    t = a * 1.0
    p = (t, b)
    y = p[0][0:2] * p[1]
    t[0] = 7.0
    return np.sum(y) + np.sum(t)

def c07(a, b):           # list element
    t = a * 1.0
    L = [t, 2.0]
    y = L[0][0:2] * b
    t[0:2] = 3.0
    return np.sum(y) + np.sum(t)

def c08(a, b):           # reshape view
    t = a * 1.0
    u = t.reshape(3)
    y = u[0:2] * b
    t[:] = 0.5
    return np.sum(y)

def c09(M, v):           # .T view, matmul
    t = M * 1.0
    u = t.T
    y = u @ v
    t[0, 0] = 9.0
    return np.sum(y) + np.sum(t)

def c10(M, v):           # row views in a loop, each row then overwritten
    t = M * 1.0
    acc = 0.0
    for i in range(2):
        acc = acc + t[i] @ v
        t[i] = t[i] * 2.0
    return acc + np.sum(t)

def c11(a, b):           # loop: slice rescaled repeatedly
    t = a * 1.0
    for i in range(3):
        t[0:2] = t[0:2] * b
    return np.sum(t)

def c12(M, v):           # column view
    t = M * 1.0
    y = t[:, 0] @ v
    t[:, 0] = 0.0
    return y + np.sum(t)

def c13(a, b):           # user callee returns a view of its argument
    t = a * 1.0
    u = g_view(t)
    y = u * b
    t[0:2] = 1.0
    return np.sum(y)

def c14(a, b):           # identity callee
    t = a * 1.0
    u = g_ident(t)
    y = u * u
    t[0] = 1.0
    return np.sum(y)

def c15(a, b):           # callee reads a view, caller overwrites afterwards
    t = a * 1.0
    s = g_mulsum(t[0:2], b)
    t[0:2] = 0.0
    return s + np.sum(t)

def c16(a, b):           # dict
    t = a * 1.0
    d = {"k": t}
    y = d["k"][1:] * b
    t[1:] = 0.0
    return np.sum(y)

def c17(a, b):           # augmented slice with array rhs
    t = a * a
    t[1:] *= b
    return np.sum(t)

def c18(a, b):           # sin of view (uses operand), then written
    t = a * 1.0
    y = np.sin(t[0:2])
    t[0:2] = 0.0
    return np.sum(y * b) + np.sum(t)

def c19(a, b):           # exp result then overwritten through setitem of the result
    y = np.exp(a)
    s = np.sum(y)
    y[0] = 0.0
    return s + np.sum(y)

def c20(a, b):           # branch write
    t = a * 1.0
    y = t[0:2] * b
    if a[0] > 0:
        t[0:2] = 0.0
    return np.sum(y) + np.sum(t)

def c21(a, b):           # scalar element read, then element overwritten
    t = a * 1.0
    y = t[0] * t[1]
    t[0] = 4.0
    return y + np.sum(t)

def c22(a, b):           # whole-array augmented after read
    t = a * 1.0
    y = t * t
    t *= 3.0
    return np.sum(y) + np.sum(t)

def c23(a, b):           # view made before, read after write (stale view)
    t = a * 1.0
    u = t[0:2]
    y = u * b
    t[1] = 2.0
    return np.sum(y)

def c24(a, b):           # ravel of 1-d (view), dot
    t = a * 1.0
    u = t.ravel()
    y = np.dot(u, u)
    t[2] = 0.0
    return y + np.sum(t)

def c25(a, b):           # np.reshape function
    t = a * 1.0
    u = np.reshape(t, (3, 1))
    y = np.sum(u * u)
    t[0] = 0.0
    return y

def c26(a, b):           # in a while loop, accumulate products then overwrite
    t = a * 1.0
    s = 0.0
    i = 0
    while i < 2:
        s = s + np.sum(t[i:i + 2] * b)
        t[i] = 0.0
        i += 1
    return s

def c27(a, b):           # arg written in place at the end (argument itself)
    y = a * a
    a[0] = 0.0
    return np.sum(y)

def c28(a, b):           # element list of slices
    t = a * 1.0
    parts = [t[0:2], t[1:3]]
    y = parts[0] * parts[1]
    t[1] = 0.0
    return np.sum(y)

def c29(a, b):           # maximum (pullback reads operands)
    t = a * 1.0
    y = np.maximum(t[0:2], b)
    t[0:2] = -10.0
    return np.sum(y)

def c30(a, b):           # division
    t = a * 1.0 + 2.0
    y = b / t[0:2]
    t[0:2] = 1.0
    return np.sum(y)

def c31(a, b):           # power
    t = a * 1.0 + 2.0
    y = t[1:] ** b
    t[1:] = 1.0
    return np.sum(y)

def c32(M, v):           # 2-D: the row read in a loop, later written with a view write
    t = M * 1.0
    s = 0.0
    for i in range(2):
        r = t[i]
        s = s + np.sum(r * v)
        t[i] = v
    return s

def c33(a, b):           # unpack from a tuple-returning callee
    t = a * 1.0
    u, w = g_pair(t)
    y = u * w
    t[0] = 0.0
    return np.sum(y)

def g_pair(x):
    return x[0:2], x[1:3]

def c34(a, b):           # closure capturing a mutable array
    t = a * 1.0
    f = lambda q: q * t[0:2]
    y = f(b)
    t[0:2] = 0.0
    return np.sum(y)

def c35(a, b):           # np.copyto
    t = a * 1.0
    y = t[0:2] * b
    np.copyto(t, np.zeros(3))
    return np.sum(y)

def c36(a, b):           # out=
    t = a * 1.0
    y = t[0:2] * b
    np.multiply(t, 0.0, out=t)
    return np.sum(y)

def c37(a, b):           # list mutated with append after reading
    t = a * 1.0
    L = [t]
    y = L[0][0:2] * b
    L.append(t)
    L[0][0] = 2.0
    return np.sum(y)

def c38(a, b):           # tanh uses its result
    t = np.tanh(a)
    s = np.sum(t)
    t[0:2] = t[0:2] * b
    return s + np.sum(t)

def c39(a, b):           # mean of view
    t = a * a
    y = np.mean(t[0:2]) * b
    t[0] = 0.0
    return np.sum(y)

def c40(a, b):           # view through fancy index (copy)
    t = a * 1.0
    y = t[[0, 1]] * b
    t[0] = 0.0
    return np.sum(y) + np.sum(t)

A = np.array([0.7, -1.3, 2.1]); B = np.array([1.5, -0.4])
M = np.array([[1.1, -0.3], [0.4, 2.2]]); V = np.array([0.6, -1.7])
CASES = [(globals()[f"c{k:02d}"], (A, B)) for k in range(1, 41)]
CASES = [(f, (M, V) if f.__name__ in ("c02", "c09", "c10", "c12", "c32") else args)
         for f, args in CASES]

def fd(f, args, k, h=1e-6):
    x = np.array(args[k], dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h; xm[i] -= h
        ap = list(copy.deepcopy(args)); ap[k] = xp
        am = list(copy.deepcopy(args)); am[k] = xm
        g[i] = (f(*ap) - f(*am)) / (2 * h)
    return g

def grad(f, args, B):
    try:
        return gradient(f, *copy.deepcopy(args), backend=B)
    except Exception as e:
        return f"{type(e).__name__}: {str(e)[:100]}"

def fwd(f, args):
    out = []
    try:
        for k in range(len(args)):
            for i in np.ndindex(args[k].shape):
                ts = tuple(np.zeros_like(a) for a in args)
                ts[k][i] = 1.0
                out.append(jvp(f, copy.deepcopy(args), ts, backend="interp")[1])
    except Exception as e:
        return f"{type(e).__name__}: {str(e)[:100]}"
    return out

def main(names):
    bad = 0
    for f, args in CASES:
        if names and f.__name__ not in names:
            continue
        want = [fd(f, args, k) for k in range(len(args))]
        flat = [w[i] for w in want for i in np.ndindex(w.shape)]
        res = {}
        for B in ("interp", "llvm"):
            g = grad(f, args, B)
            if isinstance(g, str):
                res[B] = "refused" if "Typing" in g or "TypeError" in g or "NotImpl" in g else g
                res[B + "!"] = g
            else:
                res[B] = "ok" if all(np.allclose(gi, w, atol=1e-5) for gi, w in zip(g, want)) else f"WRONG {[np.round(x, 4).tolist() for x in g]} want {[np.round(w, 4).tolist() for w in want]}"
        j = fwd(f, args)
        res["jvp"] = j if isinstance(j, str) else ("ok" if np.allclose(j, flat, atol=1e-5) else f"WRONG {np.round(j,4).tolist()} want {np.round(flat,4).tolist()}")
        wrong = any(str(v).startswith("WRONG") for v in res.values())
        bad += wrong
        print(("!! " if wrong else "   ") + f.__name__, {k: v for k, v in res.items() if not k.endswith("!")})
        for k in res:
            if k.endswith("!"):
                print("        ", k, res[k][:140])
    print("wrong:", bad)

main(sys.argv[1:])
