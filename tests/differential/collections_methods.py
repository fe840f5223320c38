# Methods of list, tuple, dict, set and frozenset (tests/integration/differential.rs).

# === list_mutators
a = [3, 1, 2]
a.append(4); a.extend([5, 6]); a.insert(0, 0); a.insert(-1, 9); a.insert(100, 7)
print(a, a.pop(), a.pop(0), a)
a.remove(9); a.reverse()
print(a, a.index(2), a.count(1))

# === list_sort
a = ["banana", "Apple", "cherry", "apple"]
print(sorted(a), sorted(a, key=str.lower), sorted(a, key=len, reverse=True))
b = [(2, "b"), (1, "z"), (2, "a")]
b.sort()
print(b, sorted(b, key=lambda t: t[1]))

# === list_sort_stable
rows = [("x", 2), ("y", 1), ("z", 2), ("w", 1)]
print(sorted(rows, key=lambda r: r[1]), sorted(rows, key=lambda r: -r[1]))

# === list_slices
a = list(range(10))
print(a[2:8:2], a[::-3], a[-2:], a[:0])
a[1:3] = ["a", "b", "c"]
print(a)
a[::2] = [0] * len(a[::2])
print(a)

# === list_del_slice
a = list(range(6))
del a[1:3]
print(a)

# === list_ops
print([1, 2] + [3], [0] * 3, [1, 2] == [1, 2], [1, 2] < [1, 3], [[]] * 2, 3 in [1, 2, 3], len([[], []]))

# === list_copy_alias
a = [[1], [2]]
b = a.copy()
c = a
b.append([3]); b[0].append(9); c.append("c")
print(a, b, a is c, a == b)

# === list_comprehensions
print([x * x for x in range(6) if x % 2], [(i, j) for i in range(3) for j in range(i)], [[0] * 2 for _ in range(2)])

# === list_index_error
[1, 2][5]

# === list_remove_missing
[1, 2].remove(3)

# === list_clear_and_bool
a = [1]
a.clear()
print(a, bool(a), a * 5, list(), list((1, 2)), list({"k": 1}))

# === tuple_methods
t = (1, 2, 2, 3)
print(t.count(2), t.index(3), t[1:], t + (4,), t * 2, (1,) < (1, 2), tuple("ab"), len(()), (5,))

# === tuple_unpacking
a, *rest = (1, 2, 3, 4)
*init, last = [1, 2, 3]
x, (y, z) = 1, (2, 3)
print(a, rest, init, last, x, y, z)

# === tuple_immutable
t = (1, 2)
t[0] = 5

# === dict_basics
d = {"b": 2, "a": 1}
d["c"] = 3
print(d, list(d), list(d.keys()), list(d.values()), list(d.items()), len(d), "a" in d, 2 in d)

# === dict_methods
d = {"a": 1}
print(d.get("a"), d.get("z"), d.get("z", 0), d.setdefault("b", 2), d.setdefault("a", 9), d)
d.update({"c": 3}, d=4)
d.update([("e", 5)])
print(d, d.pop("a"), d.pop("zz", None), d.popitem(), d)

# === dict_fromkeys_copy
d = dict.fromkeys(["x", "y"], 0)
e = d.copy()
e["x"] = 1
print(d, e, dict(a=1, b=2), dict([("k", "v")]), dict(zip("ab", [1, 2])))

# === dict_merge_ops
a = {"x": 1, "y": 2}
b = {"y": 3, "z": 4}
print(a | b, b | a, {**a, **b})
a |= b
print(a)

# === dict_order_preserved
d = {}
for k in ["z", "a", "m"]:
    d[k] = len(d)
del d["a"]
d["a"] = 9
print(d, list(reversed(d)))

# === dict_comprehension
words = ["apple", "bob", "cat", "apple"]
print({w: len(w) for w in words}, {i: i * i for i in range(4) if i})

# === dict_keyerror
d = {"a": 1}
d["b"]

# === dict_views
d = {"a": 1, "b": 2}
k = d.keys()
d["c"] = 3
print(len(k), sorted(k), "c" in k, sorted(d.values()), ("a", 1) in d.items())

# === dict_equality
print({"a": 1, "b": 2} == {"b": 2, "a": 1}, {1: "x"} == {1.0: "x"}, {} == dict())

# === dict_nested_json_like
data = {"users": [{"name": "a", "tags": ["x"]}, {"name": "b", "tags": []}]}
data["users"][1]["tags"].append("y")
print([u["name"] for u in data["users"] if u["tags"]], sum(len(u["tags"]) for u in data["users"]))

# === set_methods
a = {1, 2, 3}
b = {3, 4}
print(sorted(a | b), sorted(a & b), sorted(a - b), sorted(a ^ b), a.isdisjoint({9}), {1}.issubset(a), a.issuperset({1, 2}))

# === set_mutators
s = set()
s.add(1); s.add(1); s.update([2, 3], (4,)); s.discard(9); s.remove(4)
print(sorted(s), len(s), 2 in s)
s.difference_update({1}); s.intersection_update({2, 3, 5}); s.symmetric_difference_update({3, 7})
print(sorted(s))

# === set_remove_missing
s = {1}
s.remove(2)

# === set_comparisons
print({1, 2} < {1, 2, 3}, {1, 2} <= {1, 2}, {1} == {1}, set() == frozenset(), {1, 2} > {2})

# === set_dedupe_sorted
names = ["b", "a", "b", "c", "a"]
print(sorted(set(names)), len(set(names)), sorted({n.upper() for n in names}))

# === frozenset_basics
f = frozenset([3, 1, 3])
print(sorted(f), len(f), 1 in f, sorted(f | {5}), sorted(f.union([0])), hash(f) == hash(frozenset([1, 3])))

# === set_print_order
# differs: sets print in insertion order
print({3, 1, 2}, set("cab") == set("abc"))

# === set_small_int_order
print({1, 2, 3}, sorted({10, 5, 7}))

# === range_methods
r = range(2, 20, 3)
print(list(r), len(r), r[2], r[-1], 8 in r, 9 in r, r.index(11), r.count(5), list(range(5, 0, -2)), list(range(0)))

# === enumerate_zip
print(list(enumerate("ab", start=1)), list(zip([1, 2, 3], "ab")), list(zip()), dict(enumerate(["x"])))

# === map_filter
print(list(map(str, [1, 2])), list(map(lambda a, b: a + b, [1, 2], [10, 20])), list(filter(None, [0, 1, "", "a"])), list(filter(lambda x: x > 1, [1, 2, 3])))

# === reversed_sorted_builtins
print(list(reversed([1, 2, 3])), sorted({"b": 1, "a": 2}), sorted([3, 1], reverse=True), list(reversed(range(3))))

# === any_all
print(any([]), all([]), any([0, "", 1]), all([1, "a"]), any(x > 2 for x in [1, 3]), all(x > 0 for x in [1, 0]))

# === iter_next
it = iter([1, 2])
print(next(it), next(it), next(it, "done"))

# === iter_stop
it = iter([])
next(it)

# === generator_expression_once
# differs: a generator expression kept in a variable
g = (x * 2 for x in range(3))
print(list(g), list(g))

# === nested_structures_copy
import copy
a = {"k": [1, {"n": 2}]}
b = copy.deepcopy(a)
c = copy.copy(a)
b["k"][1]["n"] = 9
c["k"].append(3)
print(a, b)
