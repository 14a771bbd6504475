"""Functions whose `code_adjoint` listings are golden files (tests/golden/*adjoint*);
kept in their own module so that their line numbers stay put."""


def pow(x, n):
    r = 1
    while n > 0:
        n -= 1
        r *= x
    return r


def leaky_relu(x):
    return x if x > 0 else 0.01 * x
