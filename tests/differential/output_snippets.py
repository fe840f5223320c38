# Output as Python gives it, for tests/integration/differential.rs: stdout and stderr kept
# apart, falsy values returned, and one rule for values without a JSON form
# (the run succeeds, `result_unavailable` names the type) on every engine.
# `# === name` starts a snippet; `# differs: KEY` marks a known difference that
# the limitations table in docs/engines.md explains in a row mentioning KEY.

# === stderr_apart
import sys
print("to stdout")
print("to stderr", file=sys.stderr)
print("more", "stdout", sep="-")
print("more stderr", end="!\n", file=sys.stderr)

# === stderr_only
import sys
print("only stderr", file=sys.stderr)
42

# === stderr_then_error
import sys
print("about to fail", file=sys.stderr)
1 / 0

# === falsy_false
False

# === falsy_zero
0

# === falsy_empty_str
""

# === falsy_empty_list
[]

# === falsy_empty_dict
{}

# === falsy_zero_float
0.0

# === falsy_result_variable
result = False
print("set")

# === instance_is_not_returned
class Foo:
    def __init__(self):
        self.x = 1
print("made a Foo")
Foo()

# === instance_in_a_list
class Bar:
    pass
[1, Bar()]

# === dataclass_is_returned
from dataclasses import dataclass
@dataclass
class Point:
    x: int
    y: int
Point(1, 2)

# === class_is_not_returned
class Baz:
    pass
Baz

# === builtin_class_is_not_returned
int

# === function_is_not_returned
def f():
    return 1
print(f())
f

# === lambda_is_not_returned
lambda x: x

# === builtin_function_is_not_returned
len

# === cycle_is_not_returned
a = [1, 2]
a.append(a)
print(len(a))
a

# === dict_cycle_is_not_returned
d = {"k": 1}
d["self"] = d
d

# === shared_list_is_returned
x = [1]
[x, x]

# === exception_is_not_returned
ValueError("bad")

# === bytes_is_not_returned
b"abc"

# === complex_is_not_returned
1 + 2j

# === nan_is_not_returned
float("nan")

# === infinity_is_not_returned
-float("inf")

# === big_int_is_not_returned
2 ** 70

# === module_is_not_returned
import math
math

# === iterator_is_not_returned
iter([1, 2])

# === range_is_not_returned
range(3)

# === tuple_key_is_not_returned
{(1, 2): "pair"}

# === instance_as_result_variable
class Qux:
    pass
result = Qux()
