"""while loops: break, continue, while/else, for/else, nested loops, loop-carried
swaps (parallel phi semantics)."""
from . import case


@case((2.0, 3), (1.5, 0), (-2, 5), (3, 10))
def pow_loop(x, n):
    r = 1
    while n > 0:
        n -= 1
        r *= x
    return r


@case((0,), (1,), (10,), (50,))
def fib_swap(n):
    a, b = 0, 1
    i = 0
    while i < n:
        a, b = b, a + b
        i += 1
    return a


@case((27,), (1,), (6,))
def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@case((48, 18), (17, 5), (0, 7), (7, 0))
def gcd_loop(a, b):
    while b:
        a, b = b, a % b
    return a


@case((100,), (7,))
def while_true_break(n):
    k = 0
    while True:
        k += 1
        if k * k > n:
            break
    return k


@case((20,), (0,))
def continue_odd(n):
    s = 0
    i = 0
    while i < n:
        i += 1
        if i % 2 == 1:
            continue
        s += i
    return s


@case((10, 3), (10, 11), (0, 1))
def while_else(n, target):
    i = 0
    while i < n:
        if i == target:
            found = True
            break
        i += 1
    else:
        found = False
    return found, i


@case((12,), (13,), (2,), (1,))
def for_else_prime(n):
    if n < 2:
        return False
    for d in range(2, n):
        if d * d > n:
            break
        if n % d == 0:
            return False
    else:
        return True
    return True


@case((5, 4), (3, 0))
def nested_break(n, m):
    count = 0
    i = 0
    while i < n:
        j = 0
        while True:
            if j >= m or j > i:
                break
            count += i * j
            j += 1
        i += 1
    return count


@case((1.0, 2.0, 3.0, 5), (0.5, -1.0, 4.0, 0))
def rotate_three(a, b, c, n):
    for _ in range(n):
        a, b, c = c, a, b
    return a, b, c


@case((6,), (1,))
def swap_with_update(n):
    x, y = 1, 0
    for i in range(n):
        x, y = y + i, x * 2
    return x, y


@case((5,), (0,))
def defined_in_loop(n):
    last = -1
    for i in range(n):
        sq = i * i
        last = sq
    return last


@case((10,), (3,))
def break_continue_mix(n):
    total = 0
    for i in range(n):
        if i == 2:
            continue
        if i == 7:
            break
        if i % 3 == 0:
            total += 10
            continue
        total += i
    return total


@case((4,), (0,))
def triple_nested(n):
    acc = 0
    for i in range(n):
        for j in range(i):
            k = 0
            while k < j:
                acc += i * j - k
                k += 1
    return acc


@case((1.0, 1e-10), (2.0, 1e-12))
def newton_sqrt(a, tol):
    x = a
    while abs(x * x - a) > tol:
        x = 0.5 * (x + a / x)
    return x


@case((3,), (0,))
def while_else_no_break(n):
    s = 0
    while n > 0:
        s += n
        n -= 1
    else:  # noqa: PLW0120 - else without break on purpose
        s = -s
    return s
