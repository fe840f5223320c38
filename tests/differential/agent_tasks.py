# Agent tasks as models write them against the `odd` test server, one snippet
# per turn (tests/integration/differential.rs compares every engine; the same
# file measures how many stay on Monty in fresh sessions and in one session).

# === find_first_big_order
orders = odd_search_orders(filter={})
big = next((o for o in orders if o["total"] > 40), None)
print(big["id"] if big else "none")

# === check_any_customer_on_corp
orders = odd_search_orders(filter={})
print(any(o["email"].endswith("@corp.test") for o in orders))

# === report_per_status
report = {}
for status in ["open", "shipped", "cancelled"]:
    rows = odd_search_orders(filter={}, status=status)
    report[status] = {"count": len(rows), "total": round(sum(r["total"] for r in rows), 2)}
report

# === top_two_by_total
orders = odd_search_orders(filter={})
top = sorted(orders, key=lambda o: o["total"], reverse=True)[:2]
[(o["id"], o["total"]) for o in top]

# === email_domains_counter
from collections import Counter
orders = odd_search_orders(filter={})
Counter(o["email"].split("@")[1] for o in orders).most_common()

# === profiles_with_email_table
rows = []
for uid in range(1, 4):
    p = odd_fetch_user_profile(userId=uid, includeEmail=True)
    rows.append(f"{p['id']:>3} | {p['name']:<8} | {p['email']}")
print("\n".join(rows))

# === stop_at_first_missing_key
keys = ["alpha", "beta", "gamma"]
found = {}
for k in keys:
    v = odd_v2_lookup(key=k)
    if not v:
        break
    found[k] = v
print(len(found))

# === retry_on_tool_error
attempts = 0
result = None
while attempts < 3:
    attempts += 1
    try:
        result = odd_fail(message=f"try {attempts}")
    except ToolError as e:
        last = str(e)
print(attempts, result, "try 3" in last)

# === json_payload_roundtrip
import json
payload = {"ids": [1, 2, 3], "meta": {"source": "agent"}}
echoed = odd_echo_json(value=payload)
print(json.dumps(echoed, sort_keys=True))

# === group_orders_by_month
from collections import defaultdict
by_month = defaultdict(list)
for o in odd_search_orders(filter={}):
    by_month[o["placed"][:7]].append(o["id"])
dict(sorted(by_month.items()))

# === validate_all_ids_positive
orders = odd_search_orders(filter={})
ok = all(isinstance(o["id"], int) and o["id"] > 0 for o in orders)
print("valid" if ok else "invalid")

# === sum_with_tool
total = 0.0
for a, b in [(1, 2), (3.5, 4), (10, -2)]:
    total = odd_add_numbers(a=total, b=odd_add_numbers(a=a, b=b))
total

# === regex_order_ids
import re
orders = odd_search_orders(filter={})
text = " ".join(f"#{o['id']}" for o in orders)
sorted(int(m) for m in re.findall(r"#(\d+)", text))

# === dates_between
from datetime import date
orders = odd_search_orders(filter={})
days = [(date.fromisoformat(o["placed"]) - date(2026, 1, 1)).days for o in orders]
min(days), max(days)

# === helper_function_reused
def money(x):
    return f"${x:,.2f}"
orders = odd_search_orders(filter={})
[money(o["total"]) for o in orders[:3]]

# === first_profile_with_email
first = next(p for p in (odd_fetch_user_profile(userId=i, includeEmail=True) for i in range(1, 5)) if p.get("email"))
print(first["id"])

# === any_expensive_check_stops
checked = []
def has_email(uid):
    checked.append(uid)
    return odd_fetch_user_profile(userId=uid, includeEmail=uid % 2 == 0).get("email") is not None
print(any(has_email(u) for u in [1, 2, 3, 4]), checked)

# === describe_then_call
info = describe_tool("odd_add_numbers")
print(info["name"])
odd_add_numbers(a=2, b=3)

# === search_tools_then_call
hits = search_tools("add two numbers")
name = hits[0]["name"]
print(name)

# === dataclass_summary
from dataclasses import dataclass
@dataclass
class Line:
    id: int
    total: float
lines = [Line(o["id"], o["total"]) for o in odd_search_orders(filter={})]
print(len(lines), round(sum(l.total for l in lines), 2))

# === dedupe_customers
seen = set()
unique = []
for o in odd_search_orders(filter={}):
    if o["customer_id"] not in seen:
        seen.add(o["customer_id"])
        unique.append(o["customer_id"])
unique

# === enumerate_numbered_list
orders = odd_search_orders(filter={})
for i, o in enumerate(orders[:3], start=1):
    print(f"{i}. order {o['id']} ({o['status']})")

# === zip_pairs_compare
a = [o["total"] for o in odd_search_orders(filter={})]
b = sorted(a)
print(sum(1 for x, y in zip(a, b) if x == y))

# === pagination_like_loop
page, collected = 0, []
while True:
    chunk = odd_search_orders(filter={})[page * 2:(page + 1) * 2]
    if not chunk:
        break
    collected.extend(o["id"] for o in chunk)
    page += 1
len(collected), page
