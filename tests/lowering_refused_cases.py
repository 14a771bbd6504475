"""Functions the lowering must refuse; `# HERE` marks the line the error names
(the try statement may be reported at its first body line)."""

REFUSED = []
G = 0


def refused(construct):
    def deco(f):
        REFUSED.append((f, construct))
        return f
    return deco


@refused("del")
def f_del_item(x):
    del x[0]  # HERE
    return x


@refused("the value of a yield expression (x = yield v)")
def f_gen(n):
    total = 0
    for i in range(n):
        total += yield i  # HERE
    return total


@refused("async")
async def f_async(x):  # HERE
    return x


@refused("del")
def f_global_del(x):
    global G
    del G  # HERE
    return x


def f_nonlocal(x):
    y = x

    def inner():
        nonlocal y
        y = 2  # HERE
    return inner


refused("nonlocal write")(f_nonlocal(1))


@refused("import")
def f_import(x):
    import os  # HERE
    return os.sep + x


@refused("generator expression (other than the iterable of a for loop or an argument "
         "of sum, any, all, min, max, list, tuple, sorted, set, frozenset, dict, enumerate "
         "or zip)")
def f_genexpr(n):
    g = (i for i in range(n))  # HERE
    return next(g)


@refused("yield from")
def f_yield_from(n):
    yield from range(n)  # HERE


@refused("starred expression in a set")
def f_starred_set(t):
    return {1.0, *t}  # HERE


@refused("starred expression in a list")
def f_starred_list(t):
    return [1.0, *t]  # HERE


@refused("match")
def f_match(x):
    match x:
        case (a, b):  # HERE
            return a + b
        case _:
            return 0


@refused("class definition")
def f_class(x):
    class C:  # HERE
        pass
    return C


@refused("attribute assignment")
def f_store_attr(o):
    o.x = 1  # HERE
    return o
