# Known differences of Monty that the gateway catches in the source (with a
# fallback such code goes to CPython first) or lists in docs/engines.md.

# === genexp_iterated_twice
# differs: a generator expression kept in a variable
g = (x * 2 for x in range(3))
print(list(g), list(g))

# === genexp_passed_directly
print(sum(x * x for x in range(4)), max((len(w) for w in ["a", "bcd"]), default=0), sorted(c for c in "cab"))

# === id_of_distinct_objects
# differs: `id()`
a, b = [1], [1]
print(id(a) == id(b), id(a) == id(a))

# === is_identity_of_lists
a = [1]
b = a
print(a is b, [1] is [1] if False else a is not [1])

# === future_annotations
from __future__ import annotations
def f(x: Later) -> int:
    return 1
print(f(0))

# === print_instance_default_repr_shape
class Foo:
    pass
print(repr(Foo()).startswith("<"), type(Foo()).__name__)
