# Lazy iteration, as agents write it (tests/integration/differential.rs). Monty
# evaluates generator expressions, map(), filter(), zip(), enumerate() and
# reversed() eagerly: where the answer depends on laziness the gateway sees it
# in the source and sends the snippet to CPython (or refuses it without a
# fallback), so these must give CPython's answer or escalate; where every item
# is computed anyway they stay on Monty and must agree.

# === first_match_next
orders = odd_search_orders(filter={})
first_big = next((o["id"] for o in orders if o["total"] > 50), None)
print(first_big)

# === first_match_next_no_default
orders = odd_search_orders(filter={})
print(next(o["id"] for o in orders if o["status"] == "open"))

# === first_match_filter
orders = odd_search_orders(filter={})
hit = next(filter(lambda o: o["customer_id"] == 2, orders), None)
print(hit["id"] if hit else None)

# === any_with_tool_calls_stops_early
checked = []
def is_vip(user_id):
    checked.append(user_id)
    return odd_fetch_user_profile(userId=user_id)["name"].endswith("2")
print(any(is_vip(u) for u in [1, 2, 3, 4]), checked)

# === all_with_side_effect_stops_early
seen = []
def positive(x):
    seen.append(x)
    return x > 0
print(all(positive(x) for x in [3, -1, 5, 7]), seen)

# === in_over_calls
looked = []
def key_of(k):
    looked.append(k)
    return odd_v2_lookup(key=k)
print("beta" in (key_of(k) for k in ["alpha", "beta", "gamma"]), len(looked))

# === for_break_over_map
fetched = []
def fetch(i):
    fetched.append(i)
    return odd_fetch_user_profile(userId=i)
for p in map(fetch, [1, 2, 3]):
    if p["id"] == 2:
        break
print(fetched)

# === zip_shorter_partner
made = []
def make(i):
    made.append(i)
    return i * 10
print(list(zip((make(i) for i in range(5)), "ab")), made)

# === islice_over_count
import itertools
squares = (n * n for n in itertools.count(1))
print(list(itertools.islice(squares, 4)))

# === takewhile_over_calls
from itertools import takewhile
calls = []
def total(i):
    calls.append(i)
    return i * 3
print(list(takewhile(lambda t: t < 7, (total(i) for i in range(10)))), calls)

# === first_match_in_sorted_key
tags = {"a": ["x", "urgent"], "b": ["urgent"], "c": ["y", "z"]}
def first_tag(name):
    return next((t for t in tags[name] if t != "x"), "")
print(sorted(tags, key=first_tag))

# === first_match_in_comprehension
rows = [[1, 5, 9], [2, 3], [8]]
print([next((v for v in r if v > 2), None) for r in rows])

# === returned_generator
log = []
def numbers():
    return (log.append(i) or i for i in range(3))
it = numbers()
print(log)
print(list(it), log)

# === next_of_zip_and_enumerate
pairs = zip(["a", "b"], [1, 2])
print(next(pairs))
print(next(enumerate("xy")))

# === sum_of_tool_values_stays
orders = odd_search_orders(filter={})
print(round(sum(o["total"] for o in orders), 2))

# === join_of_generator_stays
profiles = [odd_fetch_user_profile(userId=i) for i in (1, 2, 3)]
print(", ".join(p["name"] for p in profiles))

# === any_pure_stays
orders = odd_search_orders(filter={})
print(any(o["total"] > 100 for o in orders), all(o["id"] > 0 for o in orders))

# === max_min_default_stays
orders = odd_search_orders(filter={})
print(max((o["total"] for o in orders), default=0), min((o["id"] for o in orders), default=None))

# === sorted_generator_key_stays
words = ["pear", "Fig", "apple"]
print(sorted(w.lower() for w in words if len(w) > 2))

# === dict_from_generator_stays
orders = odd_search_orders(filter={})
print(dict((o["id"], o["status"]) for o in orders))

# === enumerate_and_zip_in_loops_stay
names = ["a", "b", "c"]
for i, (n, m) in enumerate(zip(names, reversed(names))):
    if i == 2:
        break
    print(i, n, m)

# === map_filter_consumed_stay
print(list(map(lambda s: s.upper(), filter(None, ["a", "", "b"]))))

# === count_in_plain_loop_stays
import itertools
for n in itertools.count(5):
    if n * n > 50:
        break
print(n)

# === iter_then_next_stays
it = iter([3, 4, 5])
print(next(it), list(it))

# === any_raises_after_the_stop
# differs: an exception from an item after an early stop
print(any(10 / x > 1 for x in [1, 0]))

# === next_of_a_function_returning_a_generator
def evens(xs):
    return (x for x in xs if x % 2 == 0)
print(next(evens([1, 3, 4, 6])), next(evens([1]), "none"))
