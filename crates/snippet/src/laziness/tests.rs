use super::*;

fn found(code: &str) -> Option<String> {
    let parsed = ruff_python_parser::parse_module(code).expect("parses");
    needs_laziness(&parsed.syntax().body, code)
}

#[test]
fn asking_for_an_iterator_of_an_eager_producer_is_found() {
    for code in [
        "first = next(fetch(x) for x in xs if x > 1)",
        "first = next((odd_get(o) for o in ids if o > 3), None)",
        "print(next(map(str, xs)))",
        "hit = next(filter(lambda o: o['ok'], orders), None)",
        "pairs = zip(a, b)\nprint(next(pairs))",
        "def first(xs):\n    return next(x for x in xs if check(x))",
        "rows = sorted(xs, key=lambda x: next(odd_tag(t) for t in x['tags']))",
        "[next(y for y in ys if odd_ok(y, x)) for x in xs]",
        "import asyncio\nfirst = next(x for x in xs if x > 1)",
        "def evens(xs):\n    return (x for x in xs if x % 2 == 0)\nprint(next(evens([1, 2])))",
        "def evens(xs):\n    return filter(lambda x: x % 2 == 0, xs)\ng = evens([1, 2])\nprint(next(g))",
    ] {
        assert!(found(code).is_some(), "{code}");
    }
}

#[test]
fn early_stops_over_items_with_effects_are_found() {
    for code in [
        "def check(x):\n    print(x)\n    return x > 1\nany(check(x) for x in xs)",
        "all(odd_validate(item=i) for i in items)",
        "print(any(map(check_remote, ids)))",
        "3 in (fetch(i) for i in ids)",
        "for r in (odd_get(i) for i in ids):\n    if r:\n        break",
        "for r in map(odd_get, ids):\n    print(r)",
        "list(zip((fetch(i) for i in ids), [1]))",
        "import itertools\nlist(itertools.islice((fetch(i) for i in ids), 2))",
        "from itertools import takewhile\nlist(takewhile(bool, map(fetch, ids)))",
        "gen = (fetch(i) for i in ids)",
        "def lazy():\n    return (fetch(i) for i in ids)",
        "it = iter(fetch(i) for i in ids)\nprint(next(it))",
        "[print(v) for v in (fetch(i) for i in ids)]",
        "sum(f(y) for y in (fetch(i) for i in ids))",
        "def stop(x):\n    return any(odd_check(v) for v in x)\nok = stop([1])",
        "class Repo:\n    def get(self, k):\n        return odd_v2_lookup(key=k)\nr = Repo()\nany(r.get(k) for k in ks)",
    ] {
        assert!(found(code).is_some(), "{code}");
    }
}

#[test]
fn infinite_sources_are_found() {
    for code in [
        "import itertools\nlist(itertools.islice((x * x for x in itertools.count(1)), 3))",
        "from itertools import cycle\nnext(c for c in cycle('ab'))",
        "import itertools as it\nfirst = [x for x in map(str, it.repeat(1))][:2]",
        "for i, x in enumerate(iter(input_line, '')):\n    pass",
    ] {
        assert!(found(code).is_some(), "{code}");
    }
}

#[test]
fn what_every_item_is_computed_for_anyway_stays() {
    for code in [
        "total = sum(o['total'] for o in odd_search_orders(filter={}))",
        "print(', '.join(str(x) for x in xs))",
        "best = max((len(w) for w in words), default=0)",
        "names = sorted(n.lower() for n in names)",
        "counts = dict((k, len(v)) for k, v in groups.items())",
        "print(any(x > 2 for x in xs), all(isinstance(x, int) for x in xs))",
        "ok = any(o['status'] == 'open' and o['total'] > 10 for o in orders)",
        "has = 'a' in (s.lower() for s in names)",
        "for i, o in enumerate(orders):\n    if i > 3:\n        break",
        "for a, b in zip(xs, ys):\n    print(a, b)",
        "for x in map(str.strip, lines):\n    print(x)",
        "print(list(map(lambda o: o['id'], orders)))",
        "def ok(o):\n    return o['total'] > 10 and o['status'].startswith('o')\nprint(any(ok(o) for o in orders))",
        "results = [odd_get(i) for i in ids]\nprint(any(r['ok'] for r in results))",
        "print(sum(odd_get(i)['n'] for i in ids))",
        "import itertools\nprint(list(itertools.islice(itertools.count(), 3)))",
        "import itertools\nprint(list(zip(itertools.count(), 'ab')))",
        "import re\nprint(any(re.match('a', s) for s in names))",
        "for i in range(3):\n    print(next(iter([i])))",
        "g = (x for x in range(3))",
        "first = next((o for o in orders if o['id'] == 3), None)",
        "rows = sorted(xs, key=lambda x: next(t for t in x['tags']))",
        "[next(y for y in ys if y > x) for x in xs]",
    ] {
        assert_eq!(found(code), None, "{code}");
    }
}

#[test]
fn the_finding_names_the_construct_and_its_line() {
    let what = found("x = 1\ny = next(f(v) for v in [x])").unwrap_or_default();
    assert!(
        what.starts_with("next() of a generator expression"),
        "{what}"
    );
    assert!(what.ends_with("(line 2)"), "{what}");
}

#[test]
fn hostile_nesting_is_bounded() {
    let code = format!("any({}x{} for x in xs)", "f(".repeat(150), ")".repeat(150));
    let code2 = code.clone();
    let found = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || found(&code2))
        .expect("thread")
        .join()
        .expect("no panic");
    assert!(found.is_some(), "{code}");
}

#[test]
fn montys_own_arity_checks_and_path_reads_stay() {
    for code in [
        "filter(None, 42)",
        "try:\n    map(None)\nexcept TypeError as e:\n    pass",
        "from pathlib import Path\nassert all(not p.is_absolute() for p in Path('.').iterdir())",
    ] {
        assert_eq!(found(code), None, "{code}");
    }
}
