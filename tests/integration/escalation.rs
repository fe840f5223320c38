//! Escalation to CPython when Monty lacks a feature (host workers here:
//! `CODEMCP_FALLBACK=host`), the side-effect gate, and the CPython engine on its
//! own (`CODEMCP_ISOLATION=HOST_SYSTEM`): worker exits and overruns.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{Setup, everything, odd};

const HOST_FALLBACK: &[(&str, &str)] = &[("CODEMCP_FALLBACK", "host")];
const HOST_ONLY: &[(&str, &str)] = &[("CODEMCP_ISOLATION", "HOST_SYSTEM")];

#[tokio::test]
async fn code_monty_cannot_run_gets_cpythons_answer() {
    let client = Setup::new(json!({"everything": everything()}))
        .stdio(HOST_FALLBACK)
        .await;
    let cases = [
        (
            "class A:\n    def f(self):\n        return 'a'\nclass B(A):\n    pass\nB().f()",
            json!("a"),
        ),
        ("def gen():\n    yield 1\n    yield 2\nsum(gen())", json!(3)),
        (
            "from collections import Counter\nCounter('abca').most_common(1)",
            json!([["a", 2]]),
        ),
        (
            "import statistics\nstatistics.mean([1, 2, 3, 4])",
            json!(2.5),
        ),
        (
            "import enum\nclass C(enum.Enum):\n    RED = 1\nC.RED.name",
            json!("RED"),
        ),
        (
            "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\n@dataclass\nclass Q(P):\n    y: int = 2\nQ(1).x + Q(1).y",
            json!(3),
        ),
        (
            "import textwrap\ntextwrap.shorten('hello world again', width=12)",
            json!("hello [...]"),
        ),
        (
            "class MyError(Exception):\n    pass\ntry:\n    raise MyError('x')\nexcept MyError as e:\n    r = str(e)\nr",
            json!("x"),
        ),
        ("x = [1, 2]\ndel x[0]\nx", json!([2])),
        (
            "import re\nlen(re.findall(r'\\d+  # digits', 'a12b345', re.VERBOSE))",
            json!(2),
        ),
    ];
    for (code, expected) in cases {
        let ran = client.exec(code).await;
        assert!(!ran.is_error, "{code}: {}", ran.text);
        assert_eq!(ran.result(), &expected, "{code}: {}", ran.text);
        assert_eq!(ran.structured["engine"], "cpython-host", "{code}");
        assert!(
            ran.structured["escalated"]
                .as_str()
                .is_some_and(|r| !r.is_empty()),
            "{code}: {}",
            ran.structured
        );
    }
    // `match` with class patterns gives CPython's answer, whichever engine runs it.
    let ran = client
        .exec("class P:\n    def __init__(self, x):\n        self.x = x\ndef w(p):\n    match p:\n        case P(x=0):\n            return 'zero'\n        case _:\n            return 'other'\n[w(P(0)), w(P(1))]")
        .await;
    assert_eq!(ran.result(), &json!(["zero", "other"]), "{}", ran.text);
    // Tools work the same in CPython, in a session that moved there.
    let ran = client
        .exec("class S(dict):\n    pass\nS(v=everything_get_sum(a=2, b=3))['v']")
        .await;
    assert_eq!(ran.result(), "The sum of 2 and 3 is 5.", "{}", ran.text);
}

#[tokio::test]
async fn genuine_errors_stay_in_monty() {
    let client = Setup::new(json!({})).stdio(HOST_FALLBACK).await;
    for (code, exc) in [
        ("1/0", "ZeroDivisionError"),
        ("{}['k']", "KeyError"),
        ("nme + 1", "NameError"),
    ] {
        let ran = client.exec(code).await;
        assert_eq!(ran.error_type(), exc, "{code}: {}", ran.text);
        assert_eq!(ran.structured["engine"], "monty", "{code}");
    }
}

#[tokio::test]
async fn side_effects_before_the_unsupported_line_block_escalation() {
    let client = Setup::new(json!({"odd": odd(json!({}))}))
        .stdio(HOST_FALLBACK)
        .await;
    let ran = client
        .exec(
            // A gap found only when the line runs, after the email went out.
            "odd_send_email(to='a@b.c', subject='hi')\nimport re\nre.VERBOSE",
        )
        .await;
    assert!(ran.is_error, "{}", ran.text);
    assert_eq!(ran.error_kind(), "unsupported", "{}", ran.text);
    assert!(ran.text.contains("side effects"), "{}", ran.text);
    // A read-only call first does not block it.
    let client = Setup::new(json!({"odd": odd(json!({}))}))
        .stdio(HOST_FALLBACK)
        .await;
    let ran = client
        .exec(
            "n = odd_add_numbers(a=1, b=2)\nimport re\nn + len(re.findall('a', 'aa', re.VERBOSE))",
        )
        .await;
    assert_eq!(ran.result(), 5.0, "{}", ran.text);
    assert_eq!(ran.structured["engine"], "cpython-host");
}

#[tokio::test]
async fn imports_monty_lacks_escalate_before_anything_runs() {
    let client = Setup::new(json!({"odd": odd(json!({}))}))
        .stdio(HOST_FALLBACK)
        .await;
    // The counter has side effects, but the pre-scan moves the snippet before it runs.
    let ran = client
        .exec("n = odd_counter()\nimport statistics\n[n, statistics.mean([2, 4])]")
        .await;
    assert_eq!(ran.structured["engine"], "cpython-host", "{}", ran.text);
    assert_eq!(
        ran.result(),
        &json!([1, 3]),
        "the counter ran once: {}",
        ran.text
    );
}

#[tokio::test]
async fn without_a_fallback_the_error_says_how_to_enable_one() {
    // `auto` means Docker when an engine answers, else the bubblewrap
    // sandbox when one works: point it at neither.
    for fallback in ["none", "auto"] {
        let env = [
            ("CODEMCP_FALLBACK", fallback),
            ("DOCKER_HOST", "unix:///nonexistent/docker.sock"),
            ("CODEMCP_BWRAP", "/nonexistent/bwrap"),
        ];
        let client = Setup::new(json!({})).stdio(&env).await;
        let ran = client.exec("import statistics").await;
        assert_eq!(ran.error_kind(), "unsupported");
        assert!(
            ran.text.contains("CODEMCP_FALLBACK"),
            "{fallback}: {}",
            ran.text
        );
    }
}

#[tokio::test]
async fn host_workers_survive_exits_and_overruns() {
    let client = Setup::new(json!({})).stdio(HOST_ONLY).await;
    assert_eq!(client.exec("x = 41\nx + 1").await.result(), 42);
    let ran = client.exec("import sys\nsys.exit(3)").await;
    assert_eq!(ran.error_type(), "SystemExit", "{}", ran.text);
    assert_eq!(
        client.exec("x").await.result(),
        41,
        "sys.exit keeps the worker"
    );
    let ran = client.exec("import os\nos._exit(1)").await;
    assert!(
        ran.error_message().contains("state was lost"),
        "{}",
        ran.text
    );
    assert_eq!(client.exec("'back'").await.result(), "back");
    let started = Instant::now();
    let ran = client
        .exec_args(json!({"code": "while True:\n    pass", "timeout_ms": 1000}))
        .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(ran.error_type(), "TimeoutError", "{}", ran.text);
    assert!(
        ran.error_message().contains("state was lost"),
        "{}",
        ran.text
    );
    assert_eq!(client.exec("1 + 1").await.result(), 2);
}

#[tokio::test]
async fn a_session_takes_its_variables_along_when_it_escalates() {
    let client = Setup::new(json!({})).stdio(HOST_FALLBACK).await;
    let ran = client
        .exec("x = 41\nitems = [1, 2]\nnames = {'a': 'b'}\ndef f():\n    return 1")
        .await;
    assert_eq!(ran.structured["engine"], "monty", "{}", ran.text);
    let ran = client
        .exec("class A(dict):\n    pass\nA(n=names['a']), x + len(items)")
        .await;
    assert_eq!(ran.structured["engine"], "cpython-host", "{}", ran.text);
    assert_eq!(ran.result(), &json!([{"n": "b"}, 43]), "{}", ran.text);
}

#[tokio::test]
async fn a_session_takes_its_functions_and_imports_along_when_it_escalates() {
    let client = Setup::new(json!({"everything": everything()}))
        .stdio(HOST_FALLBACK)
        .await;
    // `tally` counts the calls of `bump`: `noisy`'s default calls it once, in
    // Monty. `noisy` is not carried (its signature calls), so it stays at 1.
    let ran = client
        .exec(
            "import json\ntally = 0\ndef scale(x, k=3):\n    return x * k\n\
             def scale(x, k=2):\n    return x * k\n\
             def add(a, b):\n    return everything_get_sum(a=a, b=b)\n\
             def bump():\n    global tally\n    tally += 1\n    return 1\n\
             def noisy(x=bump()):\n    return x\n\
             if tally == 1:\n    flag = True\nfor i, word in enumerate(['a']):\n    pass",
        )
        .await;
    assert_eq!(ran.structured["engine"], "monty", "{}", ran.text);
    assert!(ran.structured["error"].is_null(), "{}", ran.text);
    // A feature Monty lacks (inheritance): the run moves to CPython, where
    // the functions, the import and the variables are all there.
    let ran = client
        .exec(
            "class A(dict):\n    pass\n[scale(21), add(1, 2), json.dumps(A(w=word)), flag, i, tally]",
        )
        .await;
    assert_eq!(ran.structured["engine"], "cpython-host", "{}", ran.text);
    assert_eq!(
        ran.result(),
        &json!([42, "The sum of 1 and 2 is 3.", "{\"w\": \"a\"}", true, 0, 1]),
        "{}",
        ran.text
    );
    assert!(ran.structured["warnings"].is_null(), "{}", ran.text);
}

#[tokio::test]
async fn idle_workers_stop_with_their_session_state() {
    let client = Setup::new(json!({}))
        .stdio(&[
            ("CODEMCP_ISOLATION", "HOST_SYSTEM"),
            ("CODEMCP_WORKER_IDLE_SECS", "1"),
        ])
        .await;
    assert_eq!(client.exec("kept = 7\nkept").await.result(), 7);
    tokio::time::sleep(Duration::from_secs(7)).await;
    let ran = client.exec("kept").await;
    assert_eq!(
        ran.error_type(),
        "NameError",
        "the idle worker was stopped: {}",
        ran.text
    );
    assert_eq!(client.exec("1 + 1").await.result(), 2);
}

/// A snippet that lowers the recursion limit gets that many frames of its own;
/// the worker's frames (event loop, run thread) no longer count against it, so
/// the worker does not die ("exit code 1") as it did.
#[tokio::test]
async fn low_recursion_limit_does_not_kill_the_worker() {
    let client = Setup::new(json!({})).stdio(HOST_ONLY).await;
    let ran = client
        .exec(
            "import sys\nsys.setrecursionlimit(10)\ndef f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\n\
             deep = None\ntry:\n    f(50)\nexcept RecursionError:\n    deep = 'RecursionError'\n\
             [sys.getrecursionlimit(), f(5), deep]",
        )
        .await;
    assert_eq!(
        ran.result(),
        &json!([10, 5, "RecursionError"]),
        "{}",
        ran.text
    );
    // The limit stays the session's, as in one CPython, and the worker lives on.
    let ran = client.exec("import sys\nsys.getrecursionlimit()").await;
    assert_eq!(ran.result(), 10, "{}", ran.text);
    let ran = client
        .exec("import sys\nsys.setrecursionlimit(1000)\nimport json\njson.dumps([[1]])")
        .await;
    assert_eq!(ran.result(), "[[1]]", "{}", ran.text);
}

/// A segfault of the interpreter is said to be a crash, with its signal, not a
/// generic exit code; the next run gets a fresh worker.
#[tokio::test]
async fn interpreter_crash_is_reported_as_a_crash() {
    let client = Setup::new(json!({})).stdio(HOST_ONLY).await;
    let ran = client.exec("import os\nos.kill(os.getpid(), 11)").await;
    let message = ran.error_message();
    assert!(
        message.contains("crashed (signal 11, SIGSEGV)") && message.contains("state was lost"),
        "{}",
        ran.text
    );
    assert_eq!(client.exec("'back'").await.result(), "back");
}

/// `codemcp check` prints the CPython version Monty follows and the host
/// workers' own, so a mismatch is seen before it changes an answer.
#[test]
fn check_prints_montys_cpython_and_the_workers() {
    let setup = Setup::new(json!({}));
    let python = support::worker_python();
    let output = std::process::Command::new(support::bin())
        .arg("--config")
        .arg(setup.config())
        .arg("check")
        .env("CODEMCP_PYTHON", &python)
        .env("CODEMCP_LOG", "warn")
        .output()
        .expect("run codemcp check");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("python: Monty follows CPython 3.14"),
        "{text}"
    );
    let version = std::process::Command::new(&python)
        .args(["-c", "import sys; print(sys.version.split()[0])"])
        .output()
        .expect("run the worker python");
    let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
    assert!(
        text.contains(&format!(
            "host worker python: {} (CPython {version}",
            python.display()
        )),
        "{text}"
    );
}

#[tokio::test]
async fn type_with_bases_escalates() {
    let client = Setup::new(json!({})).stdio(HOST_FALLBACK).await;
    let ran = client
        .exec("class P:\n    def hi(self):\n        return 'hi'\nC = type('C', (P,), {})\nC().hi()")
        .await;
    assert!(!ran.is_error, "{}", ran.text);
    assert_eq!(ran.result(), "hi", "{}", ran.text);
    assert_eq!(ran.structured["engine"], "cpython-host", "{}", ran.text);
}

#[tokio::test]
async fn missing_class_dunder_escalates() {
    for (code, expected) in [
        ("class Foo:\n    pass\nFoo.__qualname__", json!("Foo")),
        (
            "class Foo:\n    pass\n[c.__name__ for c in Foo.__mro__]",
            json!(["Foo", "object"]),
        ),
        ("def f():\n    pass\nf.__qualname__", json!("f")),
        ("len(range(2**64, 2**64 + 2))", json!(2)),
    ] {
        let client = Setup::new(json!({})).stdio(HOST_FALLBACK).await;
        let ran = client.exec(code).await;
        assert_eq!(ran.result(), &expected, "{code}: {}", ran.text);
        assert_eq!(ran.structured["engine"], "cpython-host", "{code}");
    }
}

#[tokio::test]
async fn import_gc_escalates_instead_of_permission_error() {
    let client = Setup::new(json!({})).stdio(HOST_FALLBACK).await;
    let ran = client.exec("import gc\ngc.collect() >= 0").await;
    assert_eq!(ran.result(), true, "{}", ran.text);
    assert_eq!(ran.structured["engine"], "cpython-host", "{}", ran.text);
    // Modules that reach the OS stay refused.
    let client = Setup::new(json!({})).stdio(HOST_FALLBACK).await;
    let ran = client.exec("import subprocess").await;
    assert_eq!(ran.error_type(), "PermissionError", "{}", ran.text);
    // Without a fallback: named as unsupported, not as a sandbox escape.
    let client = Setup::new(json!({}))
        .stdio(&[("CODEMCP_FALLBACK", "none")])
        .await;
    let ran = client.exec("import gc").await;
    assert_eq!(ran.error_kind(), "unsupported", "{}", ran.text);
}

#[tokio::test]
async fn future_annotations_stays_on_monty() {
    let client = Setup::new(json!({})).stdio(HOST_FALLBACK).await;
    let ran = client
        .exec("from __future__ import annotations\ndef f(x: int) -> Later:\n    return x + 1\nf(1)")
        .await;
    assert_eq!(ran.result(), 2, "{}", ran.text);
    assert_eq!(ran.structured["engine"], "monty", "{}", ran.text);
}

#[tokio::test]
async fn escalated_session_returns_to_monty() {
    let client = Setup::new(json!({"everything": everything()}))
        .stdio(HOST_FALLBACK)
        .await;
    // `del` needs CPython; what the session holds afterwards Monty can hold.
    let ran = client
        .exec("x = [1, 2, 3]\ndel x[0]\nnames = {'a': 'é'}\ndef double(v):\n    return v * 2\nx")
        .await;
    assert_eq!(ran.structured["engine"], "cpython-host", "{}", ran.text);
    assert_eq!(ran.result(), &json!([2, 3]), "{}", ran.text);
    let ran = client.exec("[double(len(x)), x, names['a']]").await;
    assert_eq!(ran.structured["engine"], "monty", "{}", ran.text);
    assert_eq!(ran.result(), &json!([4, [2, 3], "é"]), "{}", ran.text);
    // A class instance cannot live in Monty: that session stays on CPython,
    // with its state.
    let ran = client
        .exec("class A:\n    pass\nclass B(A):\n    pass\nb = B()\nb.v = 7\nb.v")
        .await;
    assert_eq!(ran.structured["engine"], "cpython-host", "{}", ran.text);
    let ran = client.exec("b.v + double(1)").await;
    assert_eq!(ran.structured["engine"], "cpython-host", "{}", ran.text);
    assert_eq!(ran.result(), 9, "{}", ran.text);
}

/// Idioms whose answer depends on lazy iteration, with what CPython prints.
const LAZY_IDIOMS: &[(&str, &str)] = &[
    (
        "calls = []\ndef check(x):\n    calls.append(x)\n    return x > 1\nprint(any(check(x) for x in [1, 2, 3, 4]), calls)",
        "True [1, 2]\n",
    ),
    (
        "print(next(filter(lambda n: n % 2 == 0, [1, 3, 4, 6]), None))",
        "4\n",
    ),
    (
        "import itertools\nprint(list(itertools.islice((x * x for x in itertools.count(1)), 3)))",
        "[1, 4, 9]\n",
    ),
    (
        "seen = []\nfor v in map(lambda x: seen.append(x) or x, [1, 2, 3]):\n    if v == 2:\n        break\nprint(seen)",
        "[1, 2]\n",
    ),
    (
        "def first_big(xs):\n    return next(x for x in xs if odd_add_numbers(a=x, b=0) > 10)\nprint(sorted([[30, 1], [5, 20]], key=first_big))",
        "[[5, 20], [30, 1]]\n",
    ),
    (
        "pairs = zip('ab', [1, 2])\nprint(next(pairs), list(pairs))",
        "('a', 1) [('b', 2)]\n",
    ),
];

#[tokio::test]
async fn an_early_stop_over_side_effects_is_never_computed_eagerly() {
    for (code, printed) in LAZY_IDIOMS {
        // A fresh session each: an escalated session stays on CPython a while.
        let client = Setup::new(json!({"odd": odd(json!({}))}))
            .stdio(HOST_FALLBACK)
            .await;
        // The counter has side effects: only CPython's run may make it count.
        let ran = client.exec(&format!("n = odd_counter()\n{code}\nn")).await;
        assert_eq!(ran.stdout(), *printed, "{code}: {}", ran.text);
        assert_eq!(ran.result(), &json!(1), "counted once: {}", ran.text);
        assert_eq!(ran.structured["engine"], "cpython-host", "{code}");
        assert!(
            ran.structured["escalated"]
                .as_str()
                .is_some_and(|r| r.contains("lazy iteration")),
            "{code}: {}",
            ran.structured
        );
    }
}

#[tokio::test]
async fn without_a_fallback_lazy_idioms_are_refused_before_anything_runs() {
    let client = Setup::new(json!({"odd": odd(json!({}))})).stdio(&[]).await;
    for (code, _) in LAZY_IDIOMS {
        let ran = client
            .exec(&format!("n = odd_counter()\nprint('ran')\n{code}"))
            .await;
        assert_eq!(ran.error_kind(), "unsupported", "{code}: {}", ran.text);
        assert!(
            ran.error_message().contains("lazy iteration"),
            "{}",
            ran.text
        );
        assert!(
            ran.text.contains("break"),
            "the hint shows the rewrite: {}",
            ran.text
        );
        assert_eq!(ran.stdout(), "", "nothing ran: {}", ran.text);
        assert_eq!(ran.structured["tool_calls"], 0, "{}", ran.text);
    }
    let ran = client.exec("odd_counter()").await;
    assert_eq!(
        ran.result(),
        &json!(1),
        "the counter never ran: {}",
        ran.text
    );
}

#[tokio::test]
async fn generators_consumed_in_full_stay_on_monty() {
    let client = Setup::new(json!({"odd": odd(json!({}))}))
        .stdio(HOST_FALLBACK)
        .await;
    for (code, expected) in [
        (
            "orders = odd_search_orders(filter={})\nround(sum(o['total'] for o in orders), 2) > 0",
            json!(true),
        ),
        ("', '.join(str(x) for x in range(3))", json!("0, 1, 2")),
        ("max((len(w) for w in ['a', 'bcd']), default=0)", json!(3)),
        (
            "orders = odd_search_orders(filter={})\n[any(o['total'] > 10**6 for o in orders), all(o['id'] for o in orders)]",
            json!([false, true]),
        ),
        (
            "out = []\nfor i, (a, b) in enumerate(zip('xy', reversed('xy'))):\n    out.append(a + b)\nout",
            json!(["xy", "yx"]),
        ),
        (
            "import itertools\nlist(itertools.islice(itertools.count(), 3))",
            json!([0, 1, 2]),
        ),
        // A first match over items that call nothing: Monty runs it as
        // next(iter([...])), to the same answer.
        (
            "orders = [{'id': 1, 'ok': False}, {'id': 2, 'ok': True}]\n[next((o['id'] for o in orders if o['ok']), None), next((o for o in orders if o['id'] > 5), None)]",
            json!([2, null]),
        ),
        (
            "def first_big(xs):\n    return next(x for x in xs if x > 10)\nsorted([[30, 1], [5, 20]], key=first_big)",
            json!([[5, 20], [30, 1]]),
        ),
        (
            "sorted((p['name'] for p in [odd_fetch_user_profile(userId=i) for i in (2, 1)]))",
            json!(["User 1", "User 2"]),
        ),
    ] {
        let ran = client.exec(code).await;
        assert_eq!(ran.result(), &expected, "{code}: {}", ran.text);
        assert_eq!(ran.structured["engine"], "monty", "{code}");
        assert!(
            ran.structured["escalated"].is_null(),
            "{code}: {}",
            ran.text
        );
    }
}
