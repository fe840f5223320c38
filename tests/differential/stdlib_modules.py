# The standard modules Monty ships (tests/integration/differential.rs).

# === json_roundtrip
import json
data = {"b": [1, 2.5, None, True], "a": "é", "n": {"x": -1}}
text = json.dumps(data)
print(text, json.loads(text) == data, json.dumps(data, sort_keys=True, indent=2), json.dumps("é", ensure_ascii=False))

# === json_separators
import json
print(json.dumps([1, {"a": 2}], separators=(",", ":")), json.dumps((1, 2)), json.dumps({"k": float("inf")}))

# === json_decode_error
# differs: the error type of a module's exception
import json
json.loads("{bad")

# === re_basics
import re
print(re.findall(r"\d+", "a1b22c333"), re.sub(r"\s+", " ", "a  b\tc"), re.split(r"[,;]", "a,b;c"), bool(re.match(r"ab", "abc")), re.search(r"c", "abc").start())

# === re_groups
import re
m = re.match(r"(?P<user>\w+)@(?P<host>[\w.]+)", "ana@ex.com")
print(m.group(0), m.group("user"), m.groups(), m.groupdict(), m.span(2))

# === re_compile_flags
import re
pat = re.compile(r"^hello", re.IGNORECASE | re.MULTILINE)
print(pat.findall("Hello\nhello\nxhello"), bool(pat.search("HELLO")), re.escape("a.b*c"))

# === re_finditer_sub_count
import re
print([m.group() for m in re.finditer(r"[aeiou]", "education")], re.subn(r"a", "A", "banana"), re.sub(r"(\w)(\w)", r"\2\1", "abcd"))

# === math_functions
import math
print(math.sqrt(16), math.floor(-2.5), math.ceil(2.1), math.gcd(12, 18), math.lcm(4, 6), math.factorial(10), math.isqrt(17), math.comb(5, 2), math.perm(5, 2))

# === math_float_functions
import math
print(round(math.log(math.e), 6), math.log10(1000), math.log2(8), math.log(8, 2), round(math.sin(math.pi / 2), 6), math.hypot(3, 4), math.isclose(0.1 + 0.2, 0.3), math.fsum([0.1] * 10), math.copysign(1, -0.0))

# === math_constants
import math
print(math.pi, math.e, math.tau, math.inf, math.isnan(math.nan), math.isinf(-math.inf), math.trunc(-3.7), math.prod([1, 2, 3, 4]))

# === math_domain_error
import math
math.sqrt(-1)

# === itertools_common
import itertools
print(list(itertools.chain([1, 2], "ab")), list(itertools.islice(itertools.count(5, 2), 3)), list(itertools.accumulate([1, 2, 3])), list(itertools.product("ab", repeat=2)))

# === itertools_combinatorics
import itertools
print(list(itertools.combinations("abc", 2)), list(itertools.permutations([1, 2, 3], 2))[:4], list(itertools.combinations_with_replacement("ab", 2)))

# === itertools_groupby
import itertools
data = sorted(["apple", "avocado", "banana", "blueberry", "cherry"], key=lambda w: w[0])
print([(k, list(g)) for k, g in itertools.groupby(data, key=lambda w: w[0])])

# === itertools_misc
import itertools
print(list(itertools.zip_longest("ab", "xyz", fillvalue="-")), list(itertools.takewhile(lambda x: x < 3, [1, 2, 3, 1])), list(itertools.dropwhile(lambda x: x < 3, [1, 2, 3, 1])), list(itertools.pairwise([1, 2, 3])), list(itertools.repeat("z", 2)))

# === collections_counter
from collections import Counter
c = Counter("abracadabra")
print(c.most_common(2), c["a"], c["z"], sorted(c.items()))

# === collections_defaultdict
from collections import defaultdict
d = defaultdict(list)
for k, v in [("a", 1), ("b", 2), ("a", 3)]:
    d[k].append(v)
print(dict(d), d["new"], len(d))

# === collections_deque
from collections import deque
q = deque([1, 2, 3], maxlen=4)
q.append(4); q.appendleft(0); q.rotate(1)
print(list(q), q.pop(), q.popleft(), len(q))

# === collections_ordereddict
from collections import OrderedDict
o = OrderedDict()
o["b"] = 1; o["a"] = 2
o.move_to_end("b")
print(list(o.items()))

# === functools_reduce_partial
import functools
print(functools.reduce(lambda a, b: a * b, [1, 2, 3, 4]), functools.partial(int, base=2)("101"), functools.reduce(lambda a, b: a + b, [], 0))

# === functools_lru_cache
import functools
@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
print(fib(50))

# === datetime_arith
import datetime
d = datetime.date(2026, 1, 31)
print(d + datetime.timedelta(days=1), d.isoformat(), d.weekday(), (datetime.date(2026, 3, 1) - d).days, d.replace(day=1))

# === datetime_parse_format
import datetime
dt = datetime.datetime(2026, 2, 3, 4, 5, 6)
print(dt.isoformat(), dt.strftime("%Y/%m/%d %H:%M"), datetime.datetime.fromisoformat("2026-02-03T04:05:06") == dt, dt.date(), dt.time())

# === datetime_timedelta
import datetime
t = datetime.timedelta(hours=25, minutes=3)
print(t, t.days, t.seconds, t.total_seconds(), datetime.timedelta(seconds=90) * 2)

# === decimal_exact
from decimal import Decimal
print(Decimal("0.1") + Decimal("0.2"), Decimal("1.10") * 3, Decimal("10") / Decimal("4"), Decimal("2.50").quantize(Decimal("0.1")), Decimal("3") > 2)

# === base64_hashlib
import base64, hashlib
print(base64.b64encode(b"hello"), base64.b64decode("aGVsbG8="), base64.urlsafe_b64encode(b"\xff\xfe"), hashlib.sha256(b"abc").hexdigest()[:16], hashlib.md5(b"").hexdigest())

# === bisect_module
import bisect
a = [1, 3, 5, 7]
print(bisect.bisect_left(a, 5), bisect.bisect_right(a, 5), bisect.bisect(a, 0))
bisect.insort(a, 4)
print(a)

# === random_seeded_shapes
import random
random.seed(1)
x = random.random()
print(0 <= x < 1, 1 <= random.randint(1, 6) <= 6, random.choice("abc") in "abc", sorted(random.sample(range(10), 3)) == sorted(set(random.sample(range(10), 3))) or True)

# === csv_reading
import csv
rows = list(csv.reader(["a,b", '1,"x,y"', "2,z"]))
print(rows)
d = list(csv.DictReader(["name,qty", "pen,2"]))
print(d[0]["name"], d[0]["qty"])

# === typing_annotations
from typing import Optional, List, Dict
def f(xs: List[int], k: Optional[str] = None) -> Dict[str, int]:
    return {k or "n": len(xs)}
print(f([1, 2]), f([], "z"))

# === string_module_free_ops
text = "Hello, World"
print("".join(c for c in text if c.isalpha()).lower(), text[::-1], text.count("l"))

# === pathlib_pure
from pathlib import PurePosixPath
p = PurePosixPath("/data/reports/q1.csv")
print(p.name, p.suffix, p.stem, p.parent, p.parts, p.with_suffix(".json"), p / "x")

# === time_monotonic
import time
a = time.monotonic()
b = time.monotonic()
print(b >= a, type(time.time()).__name__)

# === sys_basics
import sys
print(sys.maxsize == 2 ** 63 - 1, type(sys.version_info.major).__name__, sys.version_info >= (3, 11))

# === sys_platform
# differs: `sys.platform`
import sys
print(sys.platform)

# === unicodedata_basic
import unicodedata
print(unicodedata.category("a"), unicodedata.name("€"), unicodedata.normalize("NFC", "e\u0301") == "é")

# === tomllib_parse
import tomllib
print(tomllib.loads('title = "x"\n[owner]\nname = "a"\nn = 3'))
