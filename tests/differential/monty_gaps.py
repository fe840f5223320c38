# What remains of Monty's own test programs that disagree with CPython, by
# class, as agents would meet it (tests/integration/differential.rs). Each is
# routed, escalated as a Monty gap, or a `# differs:` row of the limitations
# table in docs/engines.md.

# === fstring_invalid_spec_caught
print("before")
try:
    print(f"{1:10xyz}")
except ValueError as e:
    print("ValueError:", e)

# === fstring_invalid_spec_on_a_tool_value
total = odd_add_numbers(a=1, b=2)
try:
    line = f"{total:>8.2q}"
except ValueError:
    line = f"{total:>8.2f}"
print(line)

# === fstring_dynamic_spec_stays
spec = "zz"
try:
    print(f"{3:{spec}}")
except ValueError as e:
    print("ValueError:", e)

# === percent_format_big_ints_stay
x = 7 ** 400
print(len("%d" % x), ("%x" % (1 << 200))[:8], "%.3d" % 10**30)

# === percent_format_huge_precision
# differs: a precision near 2**31
print("%.2147482623g" % 1.0)

# === missing_method_arguments_first
# differs: arguments before a missing method
def arg():
    print("argument evaluated")
    return 1
try:
    [].push(arg())
except AttributeError as e:
    print("AttributeError:", e)

# === dunder_name_main_guard_stays
if __name__ == "__main__":
    print("main")

# === dunder_file
# differs: __file__
import os
print(os.path.basename(__file__))
