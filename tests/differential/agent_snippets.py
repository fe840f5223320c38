# Realistic agent snippets for tests/integration/differential.rs: each runs on every engine
# against the `odd` test server, and stdout, value and error type must agree.
# `# === name` starts a snippet; `# differs: KEY` marks a known difference that
# the README's limitations table explains in the row whose feature starts with KEY.

# === open_orders_total
orders = odd_search_orders(filter={})
total = sum(o["total"] for o in orders)
print(f"{len(orders)} open orders, {total:.2f} in total")
round(total, 2)

# === orders_by_customer
by_customer = {}
for status in ("open", "shipped", "cancelled"):
    for o in odd_search_orders(filter={}, status=status):
        by_customer.setdefault(o["customer_id"], []).append(o["id"])
{str(k): sorted(v) for k, v in sorted(by_customer.items())}

# === biggest_order
orders = odd_search_orders(filter={"min_total": 10})
best = max(orders, key=lambda o: o["total"])
best["id"], best["total"]

# === tagged_b2b
[o["id"] for o in odd_search_orders(filter={"tags": ["b2b"]})]

# === customer_domain_filter
rows = odd_search_orders(filter={"customer": {"email_domain": "corp.test"}})
print("\n".join(f"{r['id']:>10} {r['total']:>8.2f}" for r in rows))

# === date_range
rows = odd_search_orders(filter={"placed": {"start": "2026-02-01", "end": "2026-03-31"}})
[r["placed"] for r in rows]

# === profiles_loop
profiles = [odd_fetch_user_profile(userId=i, includeEmail=i % 2 == 0) for i in range(1, 6)]
[(p["id"], p.get("email")) for p in profiles]

# === profile_names_upper
names = [odd_fetch_user_profile(userId=u)["name"].upper() for u in (3, 1, 2)]
sorted(names)

# === add_numbers_chain
acc = 0.0
for x in [1.5, 2.25, 3]:
    acc = odd_add_numbers(a=acc, b=x)
acc

# === add_numbers_positional
odd_add_numbers(2, 40)

# === lookup_many
keys = ["alpha", "beta", "gamma"]
values = {k: odd_v2_lookup(key=k) for k in keys}
print(values)
len(values)

# === keyword_params
odd_class_info(class_="Widget", from_=3)

# === send_emails_summary
sent = []
for o in odd_search_orders(filter={"min_total": 50}):
    sent.append(odd_send_email(to=o["email"], subject=f"Order {o['id']}", body="thanks"))
sent

# === tool_error_caught
try:
    odd_fail(message="quota exceeded")
except ToolError as e:
    print("failed:", e)
"done"

# === tool_error_uncaught
odd_fail(message="nope")

# === tool_error_is_runtime_error
try:
    odd_fail()
except RuntimeError as e:
    result = str(e)

# === wrong_keyword
odd_add_numbers(a=1, c=2)

# === missing_argument
odd_add_numbers(a=1)

# === echo_nested
odd_echo_json(value={"a": [1, 2, {"b": None}], "c": True})

# === big_result_lines
text = odd_big_result(kb=4)
lines = text.splitlines()
len(text), len(lines), lines[0][:10]

# === counter_monotonic
a = odd_counter()
b = odd_counter()
b - a

# === gather_slow
import asyncio
r = await asyncio.gather(odd_slow(ms=20), odd_slow(ms=10))
r

# === gather_helpers_plain_calls
import asyncio
async def profile_line(uid):
    p = odd_fetch_user_profile(userId=uid)
    return f"{p['id']}: {p['name']}"
await asyncio.gather(*(profile_line(u) for u in (1, 2, 3)))

# === gather_list_of_tasks
import asyncio
tasks = [odd_add_numbers(a=i, b=i) for i in range(4)]
await asyncio.gather(*tasks)

# === awaited_single
import asyncio
x = await odd_slow(ms=1)
x.split()

# === asyncio_run_main
import asyncio
async def main():
    a, b = await asyncio.gather(odd_add_numbers(a=1, b=2), odd_add_numbers(a=3, b=4))
    return a * b
asyncio.run(main())

# === json_roundtrip
import json
orders = odd_search_orders(filter={})
blob = json.dumps([{"id": o["id"], "t": o["total"]} for o in orders], sort_keys=True)
json.loads(blob)[0]

# === json_pretty
import json
print(json.dumps({"b": 1, "a": [1, 2]}, indent=2, sort_keys=True))

# === regex_extract
import re
ids = [o["id"] for o in odd_search_orders(filter={}, status="shipped")]
[int(re.search(r"\d+", i).group()) for i in ids]

# === regex_sub_emails
import re
emails = [o["email"] for o in odd_search_orders(filter={})]
[re.sub(r"@.*", "@***", e) for e in emails]

# === datetime_parse
from datetime import date
orders = odd_search_orders(filter={})
days = [(date.fromisoformat(o["placed"]) - date(2026, 1, 1)).days for o in orders]
days

# === datetime_format
from datetime import datetime
d = datetime(2026, 3, 15, 14, 30)
d.strftime("%Y-%m-%d %H:%M"), d.isoformat()

# === collections_counter
from collections import Counter
tags = Counter()
for status in ("open", "shipped"):
    for o in odd_search_orders(filter={}, status=status):
        tags.update(o["tags"])
sorted(tags.items())

# === collections_defaultdict
from collections import defaultdict
totals = defaultdict(float)
for o in odd_search_orders(filter={}):
    totals[o["customer_id"]] += o["total"]
dict(sorted(totals.items()))

# === sorted_multi_key
orders = odd_search_orders(filter={}) + odd_search_orders(filter={}, status="shipped")
[o["id"] for o in sorted(orders, key=lambda o: (-o["total"], o["id"]))]

# === string_formatting
o = odd_search_orders(filter={})[0]
print("%s|%8.3f|%-6s|" % (o["id"], o["total"], o["status"]))
print("{:^12}|{:>5}".format(o["id"], o["customer_id"]))

# === fstring_specs
x = odd_add_numbers(a=1234.5, b=0.25)
f"{x:,.2f} {x:e} {int(x):08d} {x!r}"

# === list_slicing
ids = [o["id"] for o in odd_search_orders(filter={})]
ids[::-1], ids[1:], ids[-1]

# === dict_comprehension_filter
profiles = {u: odd_fetch_user_profile(userId=u, includeEmail=True) for u in range(1, 4)}
{u: p["email"] for u, p in profiles.items() if u != 2}

# === set_operations
a = {o["customer_id"] for o in odd_search_orders(filter={})}
b = {o["customer_id"] for o in odd_search_orders(filter={}, status="shipped")}
sorted(a - b), sorted(a & b), sorted(a | b)

# === zip_enumerate
names = [odd_fetch_user_profile(userId=i)["name"] for i in (1, 2)]
[(i, n) for i, n in enumerate(names, start=1)], list(zip(names, "ab"))

# === any_all
orders = odd_search_orders(filter={})
any(o["total"] > 1000 for o in orders), all(o["status"] == "open" for o in orders)

# === while_loop_pagination
page, seen = 0, []
while True:
    rows = odd_search_orders(filter={"min_total": page * 100})
    if not rows or page > 3:
        break
    seen.append(len(rows))
    page += 1
seen

# === function_helper
def fmt_money(x):
    return f"${x:,.2f}"
[fmt_money(o["total"]) for o in odd_search_orders(filter={})]

# === recursion_helper
def flatten(v):
    if isinstance(v, list):
        return [y for x in v for y in flatten(x)]
    return [v]
flatten([[1, [2, 3]], [[4]], 5])

# === lambda_map_filter
nums = [odd_add_numbers(a=i, b=0.5) for i in range(5)]
list(map(lambda n: n * 2, filter(lambda n: n > 1, nums)))

# === try_except_else_finally
log = []
try:
    v = odd_add_numbers(a=1, b=1)
except ToolError:
    log.append("err")
else:
    log.append(f"ok {v}")
finally:
    log.append("done")
log

# === raise_value_error
orders = odd_search_orders(filter={"min_total": 5000})
if not orders:
    raise ValueError("no orders above 5000")

# === key_error
profile = odd_fetch_user_profile(userId=1)
profile["phone"]

# === index_error
odd_search_orders(filter={}, status="cancelled")[3]

# === zero_division
total = sum(o["total"] for o in odd_search_orders(filter={"min_total": 99999}))
total / len(odd_search_orders(filter={"min_total": 99999}))

# === name_error_typo
orders = odd_search_orders(filter={})
len(order)

# === type_error_concat
"total: " + odd_add_numbers(a=1, b=2)

# === print_sep_end
for o in odd_search_orders(filter={})[:2]:
    print(o["id"], o["status"], sep=" | ", end=";\n")

# === result_variable
result = {"count": len(odd_search_orders(filter={}))}

# === none_result
x = odd_add_numbers(a=1, b=2)

# === math_module
import math
t = odd_add_numbers(a=2, b=7)
math.sqrt(t), math.floor(7.9), math.isclose(0.1 + 0.2, 0.3)

# === float_repr
odd_add_numbers(a=0.1, b=0.2), 1e21, 1.0, -0.0, 2.5e-7

# === int_ops
a = int(odd_add_numbers(a=10, b=7))
a // 3, a % 3, divmod(-a, 4), 2 ** 70, abs(-a)

# === string_methods
s = odd_fetch_user_profile(userId=42)["name"]
s.lower(), s.title(), s.replace(" ", "_"), s.split(), s.startswith("User"), s.center(12, "*")

# === bool_and_none
p = odd_fetch_user_profile(userId=1)
p.get("email") is None, bool(p), not p.get("email")

# === tuple_unpacking
first, *rest = [o["id"] for o in odd_search_orders(filter={})]
first, rest

# === nested_functions_closure
def make_adder(n):
    def add(x):
        return odd_add_numbers(a=x, b=n)
    return add
add5 = make_adder(5)
[add5(i) for i in range(3)]

# === generator_expression_sum
sum(len(odd_v2_lookup(key=k)) for k in "abc")

# === dict_get_default
counts = {}
for o in odd_search_orders(filter={}):
    counts[o["status"]] = counts.get(o["status"], 0) + 1
counts

# === search_tools_usage
hits = search_tools("orders", limit=3)
[h["name"] for h in hits][:1]

# === describe_tool_usage
d = describe_tool("odd_add_numbers")
sorted(d["input_schema"]["properties"])

# === class_dataclass
from dataclasses import dataclass
@dataclass
class Row:
    id: str
    total: float
rows = [Row(o["id"], o["total"]) for o in odd_search_orders(filter={})]
[r.id for r in rows if r.total > 50]

# === class_plain
class Acc:
    def __init__(self):
        self.n = 0
    def add(self, x):
        self.n += x
        return self
a = Acc()
for o in odd_search_orders(filter={}):
    a.add(o["total"])
a.n

# === statistics_mean
import statistics
statistics.mean(o["total"] for o in odd_search_orders(filter={}))

# === sorted_reverse_top3
top = sorted(odd_search_orders(filter={}), key=lambda o: o["total"], reverse=True)[:3]
[(o["id"], o["total"]) for o in top]

# === walrus_loop
out = []
i = 0
while (n := odd_add_numbers(a=i, b=1)) < 4:
    out.append(n)
    i += 1
out

# === isinstance_dispatch
vals = [odd_add_numbers(a=1, b=1), odd_v2_lookup(key="k"), odd_fetch_user_profile(userId=1), odd_search_orders(filter={})]
[type(v).__name__ for v in vals]
