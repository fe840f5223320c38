# f-strings, format specs, str.format and % formatting (tests/integration/differential.rs).

# === fstring_basic
name, n = "ana", 3
print(f"{name} has {n} items", f"{n + 1}", f"{name!r}", f"{name=}", f"{'nested'}", f"{{literal}}")

# === fstring_align
print(f"[{'a':<5}]", f"[{'a':>5}]", f"[{'a':^5}]", f"[{'a':*^7}]", f"[{42:08}]", f"[{-42:08}]", f"[{42:+}]", f"[{42: }]")

# === fstring_numbers
x = 1234567.891
print(f"{x:.2f}", f"{x:,.2f}", f"{x:_.1f}", f"{x:e}", f"{x:.3e}", f"{x:g}", f"{0.00001234:g}", f"{x:%}", f"{0.256:.1%}")

# === fstring_ints
print(f"{255:x}", f"{255:X}", f"{255:#x}", f"{255:o}", f"{255:#o}", f"{5:b}", f"{5:#010b}", f"{1000000:,}", f"{1000000:_}", f"{65:c}")

# === fstring_width_from_var
w, p = 10, 3
print(f"[{3.14159:{w}.{p}f}]", f"[{'x':>{w}}]")

# === fstring_nested_quotes
d = {"k": "v"}
print(f"{d['k']}", f'{d["k"]}', f"{len(d)} key{'s' if len(d) != 1 else ''}")

# === fstring_expressions
items = [3, 1, 2]
print(f"{sorted(items)}", f"{sum(items) / len(items):.2f}", f"{max(items) if items else 0}", f"{', '.join(map(str, items))}")

# === fstring_conversions
print(f"{'é'!a}", f"{3!s}", f"{[1, 'a']!r}", f"{None}", f"{True}")

# === format_builtin
print(format(3.5, ".1f"), format(12, "05d"), format("s", ">3"), format(1e6, ",.0f"), format(True, "d"), format(0.5, "%"))

# === format_float_general
for v in [0.0, 1.0, 100.0, 1e16, 1.5e-7, 123456789.0, 0.1]:
    print(f"{v:g}|{v:.3g}|{v}")

# === format_table
rows = [("apple", 3, 1.5), ("kiwi", 12, 0.25)]
for name, qty, price in rows:
    print(f"{name:<8}{qty:>4}{price:>8.2f}")

# === format_invalid_spec
try:
    print(f"{1:zz}")
except ValueError:
    print("bad spec")

# === format_invalid_spec_uncaught
f"{'x':d}"

# === percent_formatting
print("%s is %d years" % ("bob", 30), "%5.1f|%-5s|%05d" % (3.14159, "ab", 42), "%x %o %e" % (255, 8, 12345.678), "%%", "%r" % "q", "%(a)s-%(b)s" % {"a": 1, "b": 2})

# === percent_single
print("%s" % [1, 2], "%d%%" % 50, "%c" % 65, "%.3s" % "abcdef", "%+d" % 5)

# === percent_errors
"%d" % "x"

# === str_format_spec_types
print("{:.2f}".format(2), "{:>6.1%}".format(0.123), "{:,}".format(-1234567), "{:=+8}".format(42), "{!r:>6}".format("a"))

# === format_date_like
y, m, d = 2026, 3, 7
print(f"{y:04d}-{m:02d}-{d:02d}", "{:02}:{:02}".format(9, 5))

# === repr_of_containers
print(repr([1, "a", None, True, 1.5, (2,), {"k": [3]}]), str({"a": (1, 2)}), repr(()), repr((1,)), repr(set()), repr({}))

# === print_options
print("a", "b", sep="-", end="!\n")
print("x", 1, None, sep="")
print()
print("multi\nline")

# === float_str_repr_roundtrip
for v in [0.1 + 0.2, 1 / 3, 2.5, 1e-10, 123.456]:
    print(repr(v), str(v), float(repr(v)) == v)
