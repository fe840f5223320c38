# Methods of str, each snippet printed on every engine and compared with
# CPython (tests/integration/differential.rs). `# === name` starts a snippet; `# differs:
# KEY` marks a difference explained in docs/engines.md's limitations table.

# === str_case
s = "hello World ß"
print(s.upper(), s.lower(), s.title(), s.capitalize(), s.swapcase(), s.casefold())

# === str_strip
print(repr("  a b  ".strip()), repr("xxaxx".strip("x")), repr("  a".lstrip()), repr("a  ".rstrip()), repr("abcba".rstrip("ab")))

# === str_split
print("a,b,,c".split(","), "a b  c".split(), "a,b,c".split(",", 1), "a,b,c".rsplit(",", 1), "".split(","), "  ".split())

# === str_splitlines
print("a\nb\r\nc\rd".splitlines(), "a\nb\n".splitlines(True), "".splitlines())

# === str_join_replace
print("-".join(["a", "b", "c"]), "aaa".replace("a", "b", 2), "abc".replace("", "-"), ",".join([]))

# === str_find_index
s = "hello hello"
print(s.find("lo"), s.rfind("lo"), s.find("z"), s.index("he", 1), s.rindex("l"), s.count("l"), s.count("l", 5), s.count(""))

# === str_index_missing
"abc".index("z")

# === str_predicates
for t in ["abc", "ABC", "Abc Def", "123", "12.5", "a1", " ", "", "\u00b2", "_x1"]:
    print(repr(t), t.isalpha(), t.isupper(), t.islower(), t.istitle(), t.isdigit(), t.isdecimal(), t.isnumeric(), t.isalnum(), t.isspace(), t.isidentifier())

# === str_ascii_printable
print("abc".isascii(), "é".isascii(), "a\tb".isprintable(), "ab".isprintable())

# === str_padding
print(repr("ab".center(7, "*")), repr("ab".ljust(5)), repr("ab".rjust(5, "0")), "42".zfill(5), "-42".zfill(5), "+7".zfill(4), "abc".zfill(2))

# === str_partition
print("k=v=w".partition("="), "k=v=w".rpartition("="), "kvw".partition("="), "kvw".rpartition("="))

# === str_prefix_suffix
s = "report_2026.csv"
print(s.startswith("report"), s.endswith((".txt", ".csv")), s.startswith("port", 2), s.removeprefix("report_"), s.removesuffix(".csv"), s.removesuffix(".x"))

# === str_expandtabs
print(repr("a\tbc\td".expandtabs()), repr("a\tb".expandtabs(4)))

# === str_translate
table = str.maketrans("abc", "xyz", "d")
print("abcdd".translate(table), "hello".translate({ord("l"): None, ord("h"): "J"}))

# === str_encode
print("héllo".encode(), "abc".encode("ascii"), "é".encode("utf-8"), len("€".encode()))

# === str_slicing
s = "abcdefgh"
print(s[2:5], s[::-1], s[::2], s[-3:], s[:-3], s[10:], s[1:-1:3], s[5:2:-1])

# === str_ops
print("ab" * 3, "a" + "b", "b" in "abc", "x" not in "abc", "abc" < "abd", "Z" < "a", max("hello"), min("hello"), sorted("banana"))

# === str_ord_chr
print(ord("A"), chr(97), ord("€"), chr(0x1F600) == "\U0001F600", [ord(c) for c in "hi"])

# === str_repr_escapes
print(repr("a'b"), repr('a"b'), repr("a'\"b"), repr("\n\t\\"), repr("\x00\x7f"), repr("é"), ascii("é€"))

# === str_iteration
print(list("abc"), list(enumerate("ab")), list(reversed("abc")), "".join(sorted(set("mississippi"))))

# === str_format_method
print("{} and {}".format("a", "b"), "{1}{0}".format("x", "y"), "{name}!".format(name="hi"), "{0[1]}".format([5, 6]), "{:>5}|{:<5}|{:^5}".format("a", "b", "c"))

# === str_format_map
print("{a}-{b}".format_map({"a": 1, "b": 2}))

# === str_int_conversions
print(int("42"), int("-7"), int(" 12 "), int("ff", 16), int("0x1f", 16), int("0b101", 0), int("1_000"), str(12), str(-0.5))

# === str_int_invalid
int("12a")

# === str_immutable
s = "abc"
s[0] = "x"

# === str_multiline_dedent
text = """
    line one
    line two
"""
print([l.strip() for l in text.strip().splitlines()])

# === str_count_words
text = "the quick the lazy the end"
counts = {}
for w in text.split():
    counts[w] = counts.get(w, 0) + 1
print(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

# === str_comparisons_unicode
print(sorted(["b", "a", "B", "é", "e"]), "straße".upper(), "İ".lower() == "i̇")

# === str_concat_in_loop
out = ""
for i in range(5):
    out += str(i) * i
print(out, len(out))
