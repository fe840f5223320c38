//! Output as Python gives it, the same on every engine (Monty in-process,
//! Monty in the pool, CPython on the host, CPython in Docker when an engine
//! and the image are there): stderr kept apart from stdout, warnings on
//! stderr, falsy values returned in every output mode, and a value without a
//! JSON form reported in place of the result while the run succeeds.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use serde_json::{Value, json};
use support::{Client, Ran, Setup, docker_or_skip};

/// Each engine by the name its results carry, and the settings that pick it.
async fn engines() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    let mut engines = vec![
        (
            "monty",
            vec![
                ("CODEMCP_ISOLATION", "MONTY"),
                ("CODEMCP_MONTY", "inprocess"),
            ],
        ),
        (
            "monty-pool",
            vec![("CODEMCP_ISOLATION", "MONTY"), ("CODEMCP_MONTY", "pool")],
        ),
        ("cpython-host", vec![("CODEMCP_ISOLATION", "HOST_SYSTEM")]),
    ];
    if docker_or_skip().await.is_some() {
        engines.push(("cpython-docker", vec![("CODEMCP_ISOLATION", "DOCKER")]));
    }
    if support::sandbox_or_skip().is_ok() {
        engines.push(("cpython-sandbox", vec![("CODEMCP_ISOLATION", "SANDBOX")]));
    }
    engines
}

/// One gateway per engine, with `extra` settings on top.
async fn gateways(
    setup: &Setup,
    extra: &[(&'static str, &'static str)],
) -> Vec<(&'static str, Client)> {
    let mut out = Vec::new();
    for (engine, mut env) in engines().await {
        env.extend_from_slice(extra);
        out.push((engine, setup.stdio(&env).await));
    }
    out
}

fn stderr(ran: &Ran) -> &str {
    ran.structured["stderr"].as_str().unwrap_or_default()
}

fn ran_on(ran: &Ran, engine: &str) {
    assert_eq!(ran.structured["engine"], engine, "{}", ran.text);
}

#[tokio::test]
async fn stderr_is_kept_apart_on_every_engine() {
    let setup = Setup::new(json!({}));
    let code = "import sys\nprint('out')\nprint('err', 1, file=sys.stderr)\nprint('out again')\n7";
    for (engine, client) in gateways(&setup, &[]).await {
        let ran = client.exec(code).await;
        ran_on(&ran, engine);
        assert!(!ran.is_error, "{engine}: {}", ran.text);
        assert_eq!(ran.stdout(), "out\nout again\n", "{engine}: {}", ran.text);
        assert_eq!(stderr(&ran), "err 1\n", "{engine}: {}", ran.text);
        assert_eq!(ran.result(), 7, "{engine}");
        // The text shows stderr after stdout, under its own label.
        assert!(
            ran.text
                .starts_with("out\nout again\n[stderr]\nerr 1\nresult: 7\n"),
            "{engine}: {}",
            ran.text
        );
        // Output before an error is kept on both streams.
        let ran = client
            .exec("import sys\nprint('before', file=sys.stderr)\n1/0")
            .await;
        assert_eq!(
            ran.error_type(),
            "ZeroDivisionError",
            "{engine}: {}",
            ran.text
        );
        assert_eq!(stderr(&ran), "before\n", "{engine}: {}", ran.text);
        assert_eq!(ran.stdout(), "", "{engine}: {}", ran.text);
    }
}

#[tokio::test]
async fn falsy_results_survive_json_output() {
    let setup = Setup::new(json!({}));
    let cases = [
        ("False", json!(false)),
        ("0", json!(0)),
        ("''", json!("")),
        ("[]", json!([])),
        ("{}", json!({})),
        ("result = False\nprint('set')", json!(false)),
    ];
    for (engine, client) in gateways(&setup, &[("CODEMCP_OUTPUT", "json")]).await {
        for (code, want) in &cases {
            let ran = client.exec(code).await;
            ran_on(&ran, engine);
            let shown: Value = serde_json::from_str(&ran.text)
                .unwrap_or_else(|e| panic!("{engine}: {code}: not JSON ({e}): {}", ran.text));
            assert_eq!(&shown["result"], want, "{engine}: {code}: {}", ran.text);
            assert_eq!(ran.result(), want, "{engine}: {code}");
        }
    }
}

#[tokio::test]
async fn result_without_json_form_is_reported_not_an_error() {
    let setup = Setup::new(json!({}));
    let cases = [
        (
            "class Foo:\n    def __init__(self):\n        self.x = 1\nprint('made')\nFoo()",
            "made\n",
            "a 'Foo' instance has no JSON form",
        ),
        (
            "class Foo:\n    pass\nFoo",
            "",
            "the class 'Foo' has no JSON form",
        ),
        (
            "def f():\n    return 1\nprint(f())\nf",
            "1\n",
            "a value of type 'function' has no JSON form",
        ),
        (
            "a = [1]\na.append(a)\nprint(len(a))\na",
            "2\n",
            "the value contains itself (a reference cycle), which JSON cannot hold",
        ),
    ];
    for (engine, client) in gateways(&setup, &[]).await {
        for (code, stdout, reason) in cases {
            let ran = client.exec(code).await;
            ran_on(&ran, engine);
            assert!(!ran.is_error, "{engine}: {code}: {}", ran.text);
            assert_eq!(ran.stdout(), stdout, "{engine}: {code}");
            assert_eq!(ran.result(), &Value::Null, "{engine}: {code}");
            let said = ran.structured["result_unavailable"]
                .as_str()
                .unwrap_or_default();
            assert!(
                said.starts_with(&format!(
                    "the value was not returned: {reason}; return a dict"
                )),
                "{engine}: {code}: {said:?}"
            );
            assert!(
                ran.text.contains(&format!("result: {said}\n")),
                "{engine}: {code}: {}",
                ran.text
            );
        }
        // A dataclass instance is the one kind of instance that is returned.
        let ran = client
            .exec("from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\nP(3)")
            .await;
        assert_eq!(ran.result(), &json!({"x": 3}), "{engine}: {}", ran.text);
        // The session goes on as after any successful run.
        assert_eq!(client.exec("40 + 2").await.result(), 42, "{engine}");
    }
}

#[tokio::test]
async fn warnings_go_to_stderr() {
    let setup = Setup::new(json!({}));
    let warn = "import warnings\nwarnings.warn('careful')\nprint('done')";
    let shown = "<snippet>:2: UserWarning: careful\n  warnings.warn('careful')\n";
    // Monty has no `warnings` module: such a snippet moves to CPython, and
    // its warning reaches stderr there too.
    for (engine, client) in gateways(&setup, &[("CODEMCP_FALLBACK", "host")]).await {
        let ran = client.exec(warn).await;
        assert!(!ran.is_error, "{engine}: {}", ran.text);
        let ran_in = ran.structured["engine"].as_str().unwrap_or_default();
        assert!(ran_in.starts_with("cpython"), "{engine}: {}", ran.text);
        assert_eq!(ran.stdout(), "done\n", "{engine}: {}", ran.text);
        assert_eq!(stderr(&ran), shown, "{engine}: {}", ran.text);
        if !engine.starts_with("cpython") {
            continue;
        }
        // The compiler's SyntaxWarning (Monty issues none: docs/engines.md).
        let ran = client.exec("x = 1\nx is 1").await;
        assert!(!ran.is_error, "{engine}: {}", ran.text);
        assert_eq!(ran.stdout(), "", "{engine}: {}", ran.text);
        assert!(
            stderr(&ran).starts_with("<snippet>:2: SyntaxWarning: ")
                && stderr(&ran).ends_with("\n  x is 1\n"),
            "{engine}: {}",
            ran.text
        );
        // Every run shows its own warnings, as a fresh script would.
        assert_eq!(stderr(&client.exec(warn).await), shown, "{engine}");
    }
}
