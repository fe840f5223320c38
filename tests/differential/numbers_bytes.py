# Methods and operators of int, float, bool and bytes (tests/integration/differential.rs).

# === int_arithmetic
print(7 // 2, -7 // 2, 7 % 3, -7 % 3, 7 % -3, 2 ** 10, 2 ** -1, divmod(17, 5), divmod(-17, 5), abs(-3), -(-3))

# === int_bits
print(5 & 3, 5 | 3, 5 ^ 3, ~5, 1 << 10, 1024 >> 3, -16 >> 2, bin(10), oct(8), hex(255), bin(-5))

# === int_methods
print((255).bit_length(), (7).bit_count(), (10).to_bytes(2, "big"), int.from_bytes(b"\x01\x00", "big"), (6).as_integer_ratio(), (5).conjugate())

# === int_big
n = 2 ** 100
print(n, n % 97, n // 3 ** 20, len(str(n)), -n, n * n == 2 ** 200, n.bit_length())

# === int_round_builtin
print(round(2.5), round(3.5), round(-2.5), round(1234, -2), round(1250, -2), round(7))

# === float_round_not_exact
# differs: `round()` of a float
print(round(2.675, 2), round(1.005, 2))

# === int_compare_chain
x = 5
print(1 < x < 10, 1 < x > 10, x == 5.0, x is not None, 3 < 4 <= 4 != 5)

# === int_parse_bases
print(int("z", 36), int("777", 8), int("-0x10", 16), int("  -12  "), int(3.99), int(-3.99), int(True))

# === float_arith
print(0.1 + 0.2, 1 / 3, 2 / 2, 7.0 // 2, -7.5 % 2, 2.0 ** 0.5, 1e308 * 10, -1e308 * 10, 5e-324 / 2)

# === float_repr
print(1.0, 1e16, 1e-5, 123456789.123, 1.5e300, 0.1, 100.0, 1e22, 12345678901234567890.0, -0.0)

# === float_methods
print((2.5).is_integer(), (3.0).is_integer(), (0.5).as_integer_ratio(), float("1e3"), float(" -2.5 "), float("inf"), float("-inf"), (3.75).hex())

# === float_nan
nan = float("nan")
print(nan == nan, nan != nan, nan is nan, [nan] == [nan], str(nan), abs(float("-inf")))

# === float_int_mix
print(3 + 0.5, 3 * 1.0, 10 / 4, 10 // 4.0, 2 ** 0.0, int(1e6), float(2 ** 53) == 2 ** 53, 1 == 1.0, hash(1) == hash(1.0))

# === float_round
print(round(3.14159, 2), round(2.5, 0), round(-0.5), round(1e20, -19), round(0.125, 2), round(0.375, 2))

# === float_division_by_zero
1.0 / 0

# === int_modulo_by_zero
5 % 0

# === bool_ops
print(True + True, True * 3, not 0, bool(""), bool("0"), bool([]), bool([0]), bool(None), True & False, True | False, True ^ True, int(False))

# === bool_and_or
print(0 or "x", "" and 1, [] or [] or "last", 1 and 2 and 3, None or 0, not not "a")

# === bytes_basics
b = b"hello world"
print(b[0], b[:5], b.upper(), b.split(), b.replace(b"o", b"0"), len(b), b.count(b"o"), b.find(b"w"), b"wor" in b)

# === bytes_hex_decode
b = bytes([0, 15, 255])
print(b.hex(), bytes.fromhex("00ff10"), b"caf\xc3\xa9".decode(), b"abc".decode("ascii"), list(b), b.hex(":"))

# === bytes_construct
print(bytes(3), bytes([65, 66]), bytes("é", "utf-8"), b"a" * 3, b"ab" + b"cd", bytes(range(3)))

# === bytes_repr
print(repr(b"a'b"), repr(b"\x00\n\x7f\x80"), str(b"x"), b"AbC".lower(), b"  x ".strip(), b"a,b".split(b","))

# === bytes_predicates
print(b"abc".isalpha(), b"123".isdigit(), b"a1".isalnum(), b" ".isspace(), b"ABC".isupper(), b"Ab".istitle(), b"abc".startswith(b"ab"), b"abc".endswith(b"bc"))

# === bytes_decode_error
b"\xff".decode("utf-8")

# === bytearray_ops
ba = bytearray(b"abc")
ba.append(100)
ba[0] = 65
ba.extend(b"ef")
print(ba, len(ba), bytes(ba), ba.pop(), ba)

# === numeric_builtins
print(sum([1, 2, 3]), sum([0.5] * 4), sum([[1], [2]], []), min(3, 1, 2), max([1, 5, 3]), max([], default=0), min("b", "a"), pow(2, 10), pow(3, 4, 5), pow(2, -1, 7))

# === numeric_abs_types
print(type(abs(-2)).__name__, type(abs(-2.0)).__name__, type(7 // 2).__name__, type(7 / 7).__name__, type(True + 1).__name__)

# === int_str_roundtrip
for n in [0, -1, 10 ** 18, 2 ** 63 - 1, -(2 ** 63)]:
    print(n, int(str(n)) == n, f"{n:,}")
