"""Constructs the lowering must refuse with `lowering.UnsupportedError`, naming the
construct, the function's qualified name and `file:line`.

Entries with `or_supported=True` are constructs the issue does not require to be
refused: lowering them is fine when the interpreter then gives CPython's result on
`args`; refusing them must still give a proper message."""
from . import add_refused, refuses



@refuses("generator", "yield")
def generator(n):
    total = 0
    for i in range(n):
        total += yield i      # the value sent into the generator is used
    return total


@refuses("generator", "yield")
def yield_from(n):
    yield from range(n)


@refuses("async", "coroutine")
async def coroutine(x):
    return x + 1


@refuses("async", "await", "coroutine")
async def awaiting(c):
    return await c


def _make_nonlocal_writer():
    count = 0

    def bump(k):
        nonlocal count
        count += k
        return count
    return bump


add_refused(_make_nonlocal_writer(), "nonlocal", "cell", "free variable")


@refuses("nonlocal", "cell", "free variable", "closure")
def outer_with_nonlocal(x):
    total = 0

    def add(v):
        nonlocal total
        total += v
    add(x)
    return total


@refuses("del")
def delete_item(a):
    del a[0]
    return a


@refuses("del")
def delete_attribute(obj):
    del obj.value
    return obj


@refuses("async")
async def async_with(cm):
    async with cm:
        return 1


@refuses("import")
def import_inside(x):
    import math
    return math.sin(x)


@refuses("import")
def import_from_inside(x):
    from math import cos
    return cos(x)


@refuses("comprehension", "list", "listcomp", or_supported=True, args=((3,),))
def list_comprehension(n):
    return [i * i for i in range(n)]


@refuses("generator", "genexpr", "comprehension", or_supported=True, args=((3,),))
def generator_expression(n):
    return sum(i * i for i in range(n))


@refuses("comprehension", "dict", or_supported=True, args=((3,),))
def dict_comprehension(n):
    return {i: i * i for i in range(n)}


@refuses("comprehension", "set", or_supported=True, args=((3,),))
def set_comprehension(n):
    return {i % 2 for i in range(n)}


@refuses("*args", "varargs", "star", "variadic", or_supported=True, args=((1, 2, 3),))
def star_args(*xs):
    return len(xs)


@refuses("**kwargs", "varkw", "star", "keyword", "variadic", or_supported=True,
         args=((1,),))
def star_kwargs(x, **kw):
    return x + len(kw)


@refuses("*", "star", "call_function_ex", "unpack", "ex", or_supported=True,
         args=(((1.0, 2.0),),))
def star_call(t):
    return max(*t)


@refuses("raise", or_supported=True, args=((1,), (-1,)))
def raise_statement(x):
    if x < 0:
        raise ValueError("negative")
    return x


@refuses("assert", "raise", or_supported=True, args=((1,), (-1,)))
def assert_statement(x):
    assert x > 0
    return x


@refuses("f-string", "format", "fstring", or_supported=True, args=((3,),))
def f_string(x):
    return f"x={x}"


@refuses("class", "build_class", or_supported=True, args=((3,),))
def class_inside(x):
    class Box:
        pass
    return x


@refuses("match", or_supported=True, args=((1,), (5,)))
def match_statement(x):
    match x:
        case 1:
            return "one"
        case _:
            return "other"


@refuses("dict", "set", "map", or_supported=True, args=((2,),))
def dict_literal(x):
    d = {"a": x}
    return d["a"]
