# Classes: dunder methods, properties, inheritance (tests/integration/differential.rs).

# === class_init_repr
class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y
    def __repr__(self):
        return f"Point({self.x}, {self.y})"
p = Point(1, 2)
print(p, repr(p), [p], str(p))

# === class_eq_hash
class Key:
    def __init__(self, k):
        self.k = k
    def __eq__(self, other):
        return isinstance(other, Key) and self.k == other.k
    def __hash__(self):
        return hash(self.k)
print(Key(1) == Key(1), Key(1) == Key(2), len({Key(1), Key(1)}), Key(1) != Key(1))

# === class_attributes_shared
class Counter:
    total = 0
    def __init__(self):
        Counter.total += 1
        self.n = Counter.total
a, b = Counter(), Counter()
print(a.n, b.n, Counter.total, a.total)

# === class_methods_static
class Temp:
    scale = "C"
    def __init__(self, deg):
        self.deg = deg
    @classmethod
    def from_f(cls, f):
        return cls((f - 32) * 5 / 9)
    @staticmethod
    def valid(d):
        return d > -273.15
print(Temp.from_f(212).deg, Temp.valid(-300), Temp(5).scale)

# === class_property
class Box:
    def __init__(self, w):
        self._w = w
    @property
    def area(self):
        return self._w * self._w
b = Box(3)
print(b.area)

# === class_inheritance_super
class Animal:
    def __init__(self, name):
        self.name = name
    def speak(self):
        return f"{self.name} makes a sound"
class Dog(Animal):
    def speak(self):
        return super().speak() + " (woof)"
print(Dog("rex").speak(), isinstance(Dog("a"), Animal))

# === class_str_vs_repr
class T:
    def __str__(self):
        return "str-form"
    def __repr__(self):
        return "repr-form"
t = T()
print(t, [t], f"{t}", f"{t!r}", str(t), repr(t))

# === class_getattr_setattr
class C:
    pass
c = C()
setattr(c, "v", 5)
print(getattr(c, "v"), getattr(c, "w", "dflt"), hasattr(c, "v"), hasattr(c, "w"))

# === class_missing_attribute
class C:
    pass
C().nothing

# === class_len_bool
# differs: special methods
class Bag:
    def __init__(self, items):
        self.items = items
    def __len__(self):
        return len(self.items)
print(len(Bag([1, 2])), bool(Bag([])), bool(Bag([0])))

# === class_iter_protocol
class Countdown:
    def __init__(self, n):
        self.n = n
    def __iter__(self):
        return iter(range(self.n, 0, -1))
print(list(Countdown(3)), sum(Countdown(4)))

# === class_getitem
class Grid:
    def __getitem__(self, key):
        r, c = key
        return r * 10 + c
print(Grid()[2, 3])

# === class_operators
# differs: special methods
class V:
    def __init__(self, x):
        self.x = x
    def __add__(self, o):
        return V(self.x + o.x)
    def __mul__(self, k):
        return V(self.x * k)
    def __lt__(self, o):
        return self.x < o.x
print((V(1) + V(2)).x, (V(3) * 2).x, V(1) < V(2), sorted([V(3), V(1)])[0].x)

# === class_call
class Adder:
    def __init__(self, n):
        self.n = n
    def __call__(self, x):
        return x + self.n
add3 = Adder(3)
print(add3(4), list(map(add3, [1, 2])), callable(add3))

# === class_contains
class Evens:
    def __contains__(self, x):
        return x % 2 == 0
print(4 in Evens(), 3 in Evens())

# === class_context_manager
class Ctx:
    def __enter__(self):
        print("enter")
        return self
    def __exit__(self, *exc):
        print("exit", exc[0].__name__ if exc[0] else None)
        return True
with Ctx():
    raise ValueError("swallowed")
print("after")

# === class_type_name
class Foo:
    pass
print(type(Foo()).__name__, Foo.__name__, type(3).__name__, type(None).__name__)

# === class_print_class
# differs: `print(Foo)` of a class
class Foo:
    pass
print(Foo)

# === class_dataclass
from dataclasses import dataclass, field
@dataclass
class Item:
    name: str
    qty: int = 1
    tags: list = field(default_factory=list)
i = Item("pen")
i.tags.append("office")
print(i, i == Item("pen", 1, ["office"]), i.qty)

# === class_dataclass_order
from dataclasses import dataclass
@dataclass(order=True, frozen=True)
class Version:
    major: int
    minor: int
print(sorted([Version(1, 2), Version(1, 0)]), Version(2, 0) > Version(1, 9))

# === class_isinstance_builtin
print(isinstance(1, int), isinstance(True, int), isinstance(1.0, (int, float)), isinstance("a", str), isinstance([], list), isinstance(None, object))

# === class_instance_dict
class P:
    def __init__(self):
        self.a = 1
        self.b = 2
print(vars(P()), P().__dict__)

# === class_qualname
class Outer:
    pass
print(Outer.__qualname__)

# === class_type_with_bases
class Base:
    def hello(self):
        return "hello"
Dyn = type("Dyn", (Base,), {})
print(Dyn().hello())

# === class_mro
class A:
    pass
class B(A):
    pass
print([k.__name__ for k in B.__mro__])

# === class_slots_like_namedtuple
from collections import namedtuple
Pt = namedtuple("Pt", ["x", "y"])
p = Pt(1, y=2)
print(p, p.x + p.y, p._asdict(), p[0], tuple(p))

# === class_equality_default
class E:
    pass
a = E()
print(a == a, a == E(), a is a)
