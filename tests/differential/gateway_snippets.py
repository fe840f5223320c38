# Snippets from the gateway tests (tests/integration/gateway.rs, sessions.rs, limits.rs,
# escalation.rs, pool.rs) that need only the `odd` server, each self-contained
# here. Format: see agent_snippets.py.

# === arithmetic
1 + 1

# === big_unsigned
2**64 - 1

# === big_negative
-(2**63)

# === shift_to_str
str(1 << 64)

# === string_repeat
len('x' * 5000)

# === last_expression_after_assignment
x = 41
x + 1

# === result_variable_with_print
x = 3
result = {'n': x}
print('set')

# === name_error
x + y

# === zero_division_after_assignment
y = 5
1/0

# === syntax_error
def f(:
  pass

# === infinite_recursion
def f(n):
    return f(n + 1)
f(0)

# === recursion_error_caught
def g(n):
    return g(n + 1)
try:
    g(0)
except RecursionError:
    print('ok')

# === many_prints
for i in range(1000):
    print('line', i)
'done'

# === loop_of_tool_calls
for i in range(5):
    odd_add_numbers(a=i, b=1)

# === timed_out_tool_call_caught
try:
    odd_slow(ms=1)
except ToolError as e:
    print('timeout:', e)
odd_add_numbers(a=1, b=2)

# === awaited_call
x = await odd_slow(ms=5)
x

# === gathered_calls
import asyncio
r = await asyncio.gather(odd_slow(ms=30), odd_slow(ms=30), odd_slow(ms=30))
r

# === sleep_then_value
import time
time.sleep(0.1)
'slept'

# === json_of_function_result
import json
def inc(v):
    return v + 1
json.dumps({'v': inc(41)})

# === match_class_pattern
class P:
    def __init__(self, x):
        self.x = x
def w(p):
    match p:
        case P(x=0):
            return 'zero'
        case _:
            return 'other'
[w(P(0)), w(P(1))]

# === dict_subclass
class S(dict):
    pass
S(v=odd_add_numbers(a=2, b=3))['v']

# === statistics_import
n = odd_add_numbers(a=1, b=1)
import statistics
[n, statistics.mean([2, 4])]

# === search_tools_in_sandbox
hits = search_tools('add two numbers', limit=3)
'odd_add_numbers' in [h['name'] for h in hits]

# === describe_tool_in_sandbox
d = describe_tool('odd_add_numbers')
[d['name'], 'a' in d['input_schema']['properties']]

# === unknown_keyword
odd_add_numbers(a=1, c=2)

# === positional_arguments
odd_add_numbers(40, 2)
