"""Exception handling: try/except/else/finally, with blocks (user context managers
and numpy's errstate), raise, assert and del.  CPython, the interpreter and the
optimised IR must agree on every value and every exception, including the ones a
handler re-raises or a context manager's `__exit__` suppresses."""
import math

import numpy as np

from . import case


class Recorder:
    """A context manager that logs enter/exit into a list and never suppresses."""

    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return 2.0

    def __exit__(self, kind, value, tb):
        self.log.append("exit" if kind is None else "exit " + kind.__name__)
        return False


class Suppress:
    """Suppresses the exception classes it is given."""

    def __init__(self, *kinds):
        self.kinds = kinds

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        return kind is not None and issubclass(kind, self.kinds)


@case((2.0,), (0.0,), (-1.0,))
def except_zero_division(x):
    try:
        y = 1.0 / x
    except ZeroDivisionError:
        y = 0.0
    return y


@case((2.0,), (0.0,), ("s",))
def except_tuple_and_else(x):
    try:
        y = 1.0 / x
    except (ZeroDivisionError, ValueError) as e:
        y = len(str(e)) + 0.5
    else:
        y = y + 1.0
    return y


@case((2.0,), (0.0,))
def finally_runs_on_both_paths(x):
    log = []
    y = 0.0
    try:
        y = 1.0 / x
        log.append("body")
    finally:
        log.append("finally")
    return y * len(log)


@case((2.0,), (0.0,))
def finally_overrides_local(x):
    y = 0.0
    try:
        y = 1.0 / x
    finally:
        x = 3.0
    return y + x


@case((2.0,), (0.0,), ("a",))
def handler_sees_locals_before_raise(x):
    y = 1.0
    try:
        y = 2.0
        y = y / x
        y = y + 10.0
    except ZeroDivisionError:
        y = -y
    except TypeError:
        y = 100.0
    return y


@case((1.5, 6), (0.5, 0), (2.0, 3))
def except_inside_loop_with_continue(x, n):
    s = 0.0
    for i in range(n):
        try:
            s = s + x / (i - 2)
        except ZeroDivisionError:
            s = s * 2.0
            continue
        s = s + 1.0
    return s


@case((4.0,), (0.0,))
def loop_inside_try(x):
    s = 0.0
    try:
        for i in range(5):
            s = s + x / (3 - i)
    except ZeroDivisionError:
        s = -s
    return s


@case((0.0,), (2.0,), ("x",))
def nested_try(x):
    try:
        try:
            y = 1.0 / x
        except TypeError:
            y = 5.0
    except ZeroDivisionError:
        y = -1.0
    return y


@case((0.0,), (2.0,))
def exception_in_handler_propagates(x):
    try:
        return 1.0 / x
    except ZeroDivisionError:
        return math.log(x)


@case((0.0,), (2.0,))
def bare_raise_reraises(x):
    try:
        return 1.0 / x
    except ZeroDivisionError:
        raise


@case((0.0,), (2.0,))
def raise_from(x):
    try:
        return 1.0 / x
    except ZeroDivisionError as e:
        raise ValueError("x is zero") from e


@case((0.0,), (2.0,))
def except_exception_catches_subclass(x):
    try:
        return [1.0, 2.0][int(x)]
    except Exception:
        return -1.0


@case((1.0,), (-1.0,))
def raise_class_and_instance(x):
    if x > 0:
        raise KeyError
    raise IndexError("negative")


@case((1.0,), (-1.0,))
def assert_with_message(x):
    assert x > 0, "x must be positive"
    return x


@case((3.0,), (0.0,))
def with_user_context_manager(x):
    log = []
    with Recorder(log) as c:
        y = x * c
    return y * len(log), log[-1]


@case((3.0,), (0.0,))
def with_exit_sees_exception(x):
    log = []
    y = x
    try:
        with Recorder(log):
            y = 1.0 / x
    except ZeroDivisionError:
        y = y * 2.0
    return y, log[-1]


@case((2.0,), (1.0,), (-1.0,))
def with_suppressing_exit(x):
    y = -1.0
    with Suppress(ZeroDivisionError):
        y = 3.0 * x
        y = y / (x - 1.0)
    return y


@case((np.array([1.0, 0.0, 4.0]),),)
def with_numpy_errstate(a):
    with np.errstate(divide="ignore"):
        return np.log(a)


@case((2.0,), (0.0,))
def return_inside_with_and_try(x):
    log = []
    with Recorder(log):
        try:
            return 1.0 / x + len(log)
        finally:
            log.append("finally")


@case((2.0,),)
def delete_local(x):
    y = x + 1
    del y
    return x


@case((2.0,), (-2.0,))
def delete_then_read(x):
    y = x + 1
    if x > 0:
        del y
    return y


class Logged:
    """Logs enter and exit (with the exception's class) by name; may suppress."""

    def __init__(self, log, name, suppress=False):
        self.log, self.name, self.s = log, name, suppress

    def __enter__(self):
        self.log.append("in " + self.name)
        return len(self.log)

    def __exit__(self, t, v, tb):
        self.log.append("out " + self.name + ("" if t is None else " " + t.__name__))
        return self.s
@case((5,), (1,))
def break_and_continue_inside_with(n):
    log = []
    for i in range(n):
        with Logged(log, "a") as k:
            if i == 2:
                break
            if i == 0:
                continue
            log.append(i * k)
    return log
@case((5,), (2,))
def continue_through_finally(n):
    log = []
    for i in range(n):
        try:
            if i % 2:
                continue
            log.append(1.0 / (i - 2))
        except ZeroDivisionError:
            log.append("zde")
        finally:
            log.append("f")
    return log
@case((2.0,), (0.0,))
def with_two_managers_the_inner_suppresses(x):
    log = []
    y = x
    with Logged(log, "a") as a, Logged(log, "b", True) as b:
        y = y * (a + b)
        y = 1.0 / x
    return y, log
@case((0.0,), (2.0,))
def try_inside_a_handler(x):
    try:
        y = 1.0 / x
    except ZeroDivisionError:
        try:
            y = math.log(x)
        except ValueError as e2:
            y = str(e2)
    return y
@case((0.0,), (1.0,))
def except_name_is_deleted_after_the_handler(x):
    try:
        y = 1.0 / x
    except ZeroDivisionError as e:  # noqa: F841  (CPython deletes `e` after the handler)
        y = 0.0  # noqa: F841
    return e  # noqa: F821
@case((0.0,), (2.0,))
def return_in_finally_wins(x):
    try:
        return 1.0 / x
    finally:
        if x == 0:
            return -1.0
@case((0,),)
def break_from_except_runs_finally(n):
    i, s = 0, 0.0
    while True:
        try:
            s += 1.0 / (3 - i)
        except ZeroDivisionError:
            break
        finally:
            i += 1
    return s, i
@case((1.0,), (-1.0,))
def raise_inside_with_reaches_outer_handler(x):
    log = []
    try:
        with Logged(log, "a"):
            if x > 0:
                raise KeyError("k")
            log.append("body")
    except KeyError as e:
        log.append("caught " + str(e))
    return log
