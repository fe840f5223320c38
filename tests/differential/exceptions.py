# Raising, catching and chaining exceptions (tests/integration/differential.rs).

# === except_basic
try:
    1 / 0
except ZeroDivisionError as e:
    print("caught", type(e).__name__)

# === except_tuple_order
def f(k):
    try:
        return {"a": 1}[k]
    except (KeyError, IndexError) as e:
        return f"missing {e}"
    finally:
        print("finally", k)
print(f("a"), f("b"))

# === except_else_finally
for x in [1, 0]:
    try:
        r = 10 / x
    except ZeroDivisionError:
        print("zero")
    else:
        print("ok", r)
    finally:
        print("done", x)

# === raise_custom_message
try:
    raise ValueError("bad value: 3")
except ValueError as e:
    print(str(e), repr(e), e.args)

# === raise_uncaught_type
raise KeyError("nope")

# === raise_from
try:
    try:
        {}["k"]
    except KeyError as e:
        raise ValueError("wrapped") from e
except ValueError as e:
    print(type(e.__cause__).__name__, e.__cause__ is not None, str(e))

# === exception_context
try:
    try:
        1 / 0
    except ZeroDivisionError:
        raise RuntimeError("during")
except RuntimeError as e:
    print(type(e.__context__).__name__)

# === raise_from_none
try:
    try:
        int("x")
    except ValueError:
        raise KeyError("k") from None
except KeyError as e:
    print(e.__cause__, e.__suppress_context__)

# === exception_hierarchy
print(issubclass(KeyError, LookupError), issubclass(ZeroDivisionError, ArithmeticError), issubclass(ValueError, Exception), isinstance(KeyError("x"), Exception))

# === except_base_class_catches
try:
    [][1]
except LookupError as e:
    print("lookup", type(e).__name__)

# === reraise_bare
def g():
    try:
        1 / 0
    except ZeroDivisionError:
        print("logging")
        raise
try:
    g()
except ZeroDivisionError:
    print("reraised")

# === assert_uncaught
assert False

# === keyerror_str
try:
    {}["missing"]
except KeyError as e:
    print(str(e), repr(e.args[0]))

# === exception_args
e = ValueError("a", 1)
print(e.args, len(e.args), str(ValueError()), repr(ValueError()))

# === nameerror_type
undefined_name + 1

# === typeerror_add
"a" + 1

# === attributeerror_builtin
(1).nope

# === try_in_loop_continue
out = []
for v in ["1", "x", "3"]:
    try:
        out.append(int(v))
    except ValueError:
        continue
print(out)

# === finally_return_override
def h():
    try:
        return "try"
    finally:
        print("cleanup")
print(h())

# === exception_group_star
try:
    raise ExceptionGroup("many", [ValueError("v"), TypeError("t")])
except* ValueError as eg:
    print("values", len(eg.exceptions))
except* TypeError as eg:
    print("types", len(eg.exceptions))

# === custom_exception_class
class AppError(Exception):
    pass
try:
    raise AppError("boom")
except AppError as e:
    print("app", e)

# === stopiteration_from_next
it = iter([1])
next(it)
try:
    next(it)
except StopIteration:
    print("exhausted")

# === recursion_error
def down(n):
    return down(n + 1)
try:
    down(0)
except RecursionError:
    print("too deep")

# === unbound_local
def u():
    print(x_local)
    x_local = 1
try:
    u()
except UnboundLocalError:
    print("unbound")

# === exception_in_comprehension
try:
    [1 / x for x in [1, 0]]
except ZeroDivisionError:
    print("in comprehension")

# === overflow_float
try:
    2.0 ** 10000
except OverflowError:
    print("overflow")
