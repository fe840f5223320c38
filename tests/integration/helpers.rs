//! Saved helpers (issue 29) end to end: the codemcp binary over HTTP with
//! the real odd upstream (`tests/servers/odd_server.py`), the SQLite file
//! store on disk and `kill -9`, `redis-server` shared by two gateways, two
//! principals, and the PyPI `mcp` 2.x client answering approvals
//! (`tests/clients/approve.py`). Loopback only.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::path::Path;
use std::process::Stdio;

use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams, ResourceContents};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use support::redis::Redis;
use support::{HttpClient, Ran, Setup, bin, monty_bin, odd, python2, repo, unpack};

use tokio::process::Command;

mod runs;

const KEY: &str = "helpers-e2e-test-key-0123456789abcdefghijkl";

/// A helper over the odd server's `add_numbers`, and a snippet saving it.
const SAVE: &str = "import math\n\ndef double(x):\n    return x * 2\n\ndef add_twice(a: int, b: int) -> int:\n    \"\"\"Adds a and b, then doubles the sum.\"\"\"\n    return double(odd_add_numbers(a=a, b=b)) + math.floor(0.5)\n\nsave_helper(add_twice, description='adds then doubles')\n";

type Gateway = support::LoggedGateway;

const CLEARED: &[&str] = &[
    "CODEMCP_HTTP_TOKEN",
    "CODEMCP_SESSION_STORE",
    "CODEMCP_SESSION_KEY",
    "CODEMCP_MONTY",
    "CODEMCP_ISOLATION",
    "CODEMCP_HELPERS_SAVE",
];

async fn serve(state: &Path, env: &[(&str, &str)]) -> Gateway {
    let setup = Setup::new(json!({ "odd": odd(json!({})) }));
    support::serve_http_logged(setup, state, CLEARED, env).await
}

async fn connect(url: &str, token: Option<&str>) -> HttpClient {
    support::init_tls();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("MCP over HTTP")
}

async fn call(client: &HttpClient, code: &str) -> Ran {
    let args = json!({ "code": code }).as_object().cloned().unwrap();
    let result = client
        .call_tool(CallToolRequestParams::new("execute_python").with_arguments(args))
        .await
        .expect("tools/call execute_python");
    unpack(result)
}

#[track_caller]
fn ok(ran: &Ran) -> &Value {
    assert!(!ran.is_error, "the run failed: {}", ran.text);
    ran.result()
}

async fn stub(client: &HttpClient) -> String {
    let read = client
        .read_resource(ReadResourceRequestParams::new("codemcp://sdk.pyi"))
        .await
        .expect("resources/read codemcp://sdk.pyi");
    match &read.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

/// `mypy --strict` on the stub with a helper in it, with the mypy the real-server
/// suite pins (`.deps/servers/py/mypy`); required under `CI=true`.
fn stub_passes_mypy_strict(stub: &str) {
    let python = std::env::var("CODEMCP_TEST_SERVERS")
        .map(|dir| Path::new(&dir).join("py/mypy/bin/python"))
        .ok()
        .filter(|p| p.exists());
    let Some(python) = python else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "mypy is not installed (scripts/test-deps.sh servers)"
        );
        eprintln!("skipping mypy --strict on the stub: scripts/test-deps.sh servers installs mypy");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sdk.pyi");
    std::fs::write(&file, stub).unwrap();
    let out = std::process::Command::new(python)
        .args(["-m", "mypy", "--strict", "--no-incremental", "--cache-dir"])
        .arg(dir.path().join("cache"))
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mypy --strict on the stub with helpers:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn description(client: &HttpClient) -> String {
    let tools = client.list_all_tools().await.expect("tools/list");
    tools[0]
        .description
        .as_deref()
        .unwrap_or_default()
        .to_owned()
}

/// Saves `add_twice` as the caller of `client`; its result.
async fn save(client: &HttpClient) -> Value {
    ok(&call(client, SAVE).await).clone()
}

#[tokio::test]
async fn a_helper_saved_in_one_session_is_called_after_kill_9_and_a_restart() {
    let state = tempfile::tempdir().unwrap();
    let gateway = serve(state.path(), &[]).await;
    let client = connect(&gateway.url, None).await;
    let saved = save(&client).await;
    assert_eq!(saved["name"], "add_twice", "{saved}");
    assert_eq!(saved["version"], 1);
    drop(client);
    gateway.kill9().await;

    // A new gateway process on the same state directory (the SQLite file and key).
    let gateway = serve(state.path(), &[]).await;
    let client = connect(&gateway.url, None).await;
    // The remembered catalog serves before odd is up again: wait for it.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut ran = call(&client, "add_twice(2, 3)").await;
    while ran.text.contains("still starting") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        ran = call(&client, "add_twice(2, 3)").await;
    }
    assert_eq!(ok(&ran).as_f64(), Some(10.0), "{}", gateway.log());
    let listed = ok(&call(&client, "list_helpers()").await).clone();
    assert_eq!(listed[0]["name"], "add_twice", "{listed}");
    assert_eq!(listed[0]["signature"], "add_twice(a: int, b: int) -> int");
    let hits = ok(&call(&client, "search_tools('doubles the sum')").await).clone();
    assert_eq!(hits[0]["name"], "add_twice", "{hits}");
    let described = ok(&call(&client, "describe_tool('add_twice')").await).clone();
    assert_eq!(described["helper"], true, "{described}");
    assert!(
        described["source"]
            .as_str()
            .unwrap()
            .contains("def double(x)")
    );
    let stub = stub(&client).await;
    assert!(
        stub.contains("def add_twice(a: int, b: int) -> int:"),
        "{stub}"
    );
    assert!(stub.contains("def save_helper(fn: Any"), "{stub}");
    stub_passes_mypy_strict(&stub);
    let text = description(&client).await;
    assert!(text.contains("Saved helpers (1"), "{text}");
    assert!(text.contains("add_twice(a: int, b: int) -> int"), "{text}");

    // A second version replaces the first; the first stays retrievable.
    let v2 = SAVE.replace("+ math.floor(0.5)", "+ 1");
    let saved = ok(&call(&client, &v2).await).clone();
    assert_eq!(saved["version"], 2, "{saved}");
    assert_eq!(
        ok(&call(&client, "add_twice(2, 3)").await).as_f64(),
        Some(11.0)
    );
    let described = ok(&call(&client, "describe_tool('add_twice')").await).clone();
    assert_eq!(described["previous"]["version"], 1, "{described}");
    assert!(
        described["previous"]["source"]
            .as_str()
            .unwrap()
            .contains("math.floor")
    );
    // Deleted: gone, under the unknown-name error.
    assert_eq!(
        ok(&call(&client, "delete_helper('add_twice')").await)["deleted"],
        "add_twice"
    );
    // (A session that ran it keeps the function it defined, as a variable;
    // a new session does not get it.)
    let fresh = connect(&gateway.url, None).await;
    let gone = call(&fresh, "add_twice(2, 3)").await;
    assert!(
        gone.is_error && gone.error_type() == "NameError",
        "{}",
        gone.text
    );
}

#[tokio::test]
async fn another_principal_gets_the_same_error_as_for_an_unknown_name() {
    let state = tempfile::tempdir().unwrap();
    let gateway = serve(state.path(), &[]).await;
    let alice = connect(&gateway.url, Some("alice-token")).await;
    let mallory = connect(&gateway.url, Some("mallory-token")).await;
    save(&alice).await;
    assert_eq!(
        ok(&call(&alice, "add_twice(1, 1)").await).as_f64(),
        Some(4.0)
    );

    let theirs = call(&mallory, "add_twice(1, 1)").await;
    let unknown = call(&mallory, "add_thrice(1, 1)").await;
    assert!(theirs.is_error, "{}", theirs.text);
    assert_eq!(
        theirs.error_message().replace("add_twice", "X"),
        unknown.error_message().replace("add_thrice", "X")
    );
    assert_eq!(ok(&call(&mallory, "list_helpers()").await), &json!([]));
    for (code, other) in [
        ("delete_helper('add_twice')", "delete_helper('add_thrice')"),
        ("describe_tool('add_twice')", "describe_tool('add_thrice')"),
    ] {
        let theirs = call(&mallory, code).await;
        let unknown = call(&mallory, other).await;
        assert!(theirs.is_error, "{code}: {}", theirs.text);
        assert_eq!(
            theirs.error_message().replace("add_twice", "X"),
            unknown.error_message().replace("add_thrice", "X"),
            "{code}"
        );
    }
    let hits = ok(&call(&mallory, "search_tools('doubles')").await).clone();
    assert!(!hits.to_string().contains("add_twice"), "{hits}");
    assert!(!stub(&mallory).await.contains("add_twice"));
    // Mallory's refusal cost Alice nothing.
    assert_eq!(
        ok(&call(&alice, "add_twice(1, 1)").await).as_f64(),
        Some(4.0)
    );
}

#[tokio::test]
async fn a_helper_saved_on_one_gateway_is_called_on_another_sharing_redis() {
    let Some(redis) = Redis::start_or_skip() else {
        return;
    };
    let state = tempfile::tempdir().unwrap();
    let url = redis.url();
    let env = [
        ("CODEMCP_SESSION_STORE", url.as_str()),
        ("CODEMCP_SESSION_KEY", KEY),
    ];
    let a = serve(&state.path().join("a"), &env).await;
    let b = serve(&state.path().join("b"), &env).await;
    save(&connect(&a.url, Some("carol")).await).await;
    let on_b = connect(&b.url, Some("carol")).await;
    assert_eq!(
        ok(&call(&on_b, "add_twice(5, 5)").await).as_f64(),
        Some(20.0)
    );
    let other = connect(&b.url, Some("dave")).await;
    assert!(call(&other, "add_twice(5, 5)").await.is_error);
}

#[tokio::test]
async fn a_tampered_helpers_record_is_refused() {
    let state = tempfile::tempdir().unwrap();
    let gateway = serve(state.path(), &[]).await;
    let client = connect(&gateway.url, None).await;
    save(&client).await;
    drop(client);
    gateway.kill9().await;
    // Change one byte of the stored source in every record of the file.
    let file = state.path().join("codemcp/sessions.sqlite3");
    let db = rusqlite::Connection::open(&file).expect("open the store");
    let records: Vec<(String, Vec<u8>)> = db
        .prepare("SELECT handle, record FROM records")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut changed = 0;
    for (handle, mut record) in records {
        let Some(at) = record.windows(7).position(|w| w == b"doubles") else {
            continue;
        };
        record[at] = b'D';
        db.execute(
            "UPDATE records SET record = ?1 WHERE handle = ?2",
            rusqlite::params![record, handle],
        )
        .unwrap();
        changed += 1;
    }
    assert!(changed >= 1, "a record holds the source");
    drop(db);
    let gateway = serve(state.path(), &[]).await;
    let client = connect(&gateway.url, None).await;
    let ran = call(&client, "add_twice(1, 2)").await;
    assert!(ran.is_error, "a tampered helper ran: {}", ran.text);
    assert!(
        ran.structured.to_string().contains("tampered"),
        "{}",
        ran.structured
    );
    let listed = call(&client, "list_helpers()").await;
    assert!(
        listed.is_error && listed.text.contains("tampered"),
        "{}",
        listed.text
    );
}

#[tokio::test]
async fn a_side_effect_an_unknown_name_or_a_shadowed_tool_is_refused_at_save_time_with_a_position()
{
    let state = tempfile::tempdir().unwrap();
    let gateway = serve(state.path(), &[]).await;
    let client = connect(&gateway.url, None).await;
    let cases = [
        (
            "limit = odd_counter()\n\ndef f():\n    return limit\n\nsave_helper(f)",
            "line 1, column 1",
            "'limit' is bound by a top-level statement",
        ),
        (
            "def f():\n    return fetch_everything()\n\nsave_helper(f)",
            "line 2, column 12",
            "'fetch_everything' is not defined",
        ),
        (
            "def odd_counter():\n    return 1\n\nsave_helper(odd_counter)",
            "line 1, column 5",
            "would shadow a tool function",
        ),
    ];
    for (code, at, why) in cases {
        let ran = call(&client, code).await;
        assert!(ran.is_error, "{code}: {}", ran.text);
        let message = ran.error_message();
        assert!(
            message.contains(at) && message.contains(why),
            "{code}: {message}"
        );
    }
    assert_eq!(ok(&call(&client, "list_helpers()").await), &json!([]));
}

/// approve.py (PyPI `mcp` 2.x) against `url`: its JSON report.
async fn approve(url: &str, answers: &[&str], calls: &[&str]) -> Value {
    let output = Command::new(python2())
        .arg(repo().join("tests/clients/approve.py"))
        .arg(url)
        .args(["--mode", "legacy", "--answers", &json!(answers).to_string()])
        .args(["--calls", &json!(calls).to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), output)
        .await
        .expect("approve.py finishes")
        .expect("approve.py runs");
    serde_json::from_str(&String::from_utf8_lossy(&output.stdout))
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}", String::from_utf8_lossy(&output.stderr)))
}

#[tokio::test]
async fn saving_asks_and_a_helper_calling_an_ask_tool_asks_and_is_audited_as_the_caller() {
    let state = tempfile::tempdir().unwrap();
    let audit = state.path().join("audit.jsonl");
    let audit_text = audit.to_str().unwrap().to_owned();
    let setup_env = [
        ("CODEMCP_AUDIT_LOG", audit_text.as_str()),
        ("CODEMCP_POLICY_DEFAULT", "ask"),
    ];
    let gateway = serve(state.path(), &setup_env).await;
    // Saving asks (the client can be asked); the helper's call of an `ask`
    // tool (odd's Send_Email is not read-only: the default policy applies) asks too.
    let save = "def mail(to: str) -> str:\n    return odd_send_email(to=to, subject='hi')\n\nsave_helper(mail)";
    let report = approve(
        &gateway.url,
        &["accept", "accept"],
        &[save, "mail('a@example.com')"],
    )
    .await;
    let asked = report["asked"].as_array().cloned().unwrap_or_default();
    assert_eq!(asked.len(), 2, "{report}");
    assert!(
        asked[0]["message"]
            .as_str()
            .unwrap()
            .contains("Server: helpers"),
        "{report}"
    );
    assert!(
        asked[1]["message"].as_str().unwrap().contains("Send_Email"),
        "{report}"
    );
    let last = report["results"][1]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(last.contains("sent to a@example.com"), "{report}");
    let lines = std::fs::read_to_string(&audit).unwrap_or_default();
    assert!(
        lines.contains("\"server\":\"helpers\"") && lines.contains("\"tool\":\"save\""),
        "{lines}"
    );
    let sent = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["tool"] == "Send_Email")
        .unwrap_or_else(|| panic!("no audit line for Send_Email: {lines}"));
    assert_eq!(sent["decision"], "approved", "{sent}");
    assert_eq!(
        sent["helper"], "mail",
        "the audit line names the helper: {sent}"
    );
    // Declined: nothing is saved.
    let other = "def mail2(to: str) -> str:\n    return odd_send_email(to=to, subject='hi')\n\nsave_helper(mail2)";
    let declined = approve(&gateway.url, &["decline"], &[other]).await;
    let text = declined["results"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("denied by the user"), "{declined}");
}

#[tokio::test]
async fn measures_save_time_description_size_and_store_bytes_per_helper() {
    let state = tempfile::tempdir().unwrap();
    let gateway = serve(state.path(), &[("CODEMCP_HELPERS_SAVE", "allow")]).await;
    let client = connect(&gateway.url, None).await;
    let plain = "def f0(a: int, b: int) -> int:\n    return odd_add_numbers(a=a, b=b)\n";
    call(&client, plain).await;
    let started = Instant::now();
    for _ in 0..5 {
        ok(&call(&client, plain).await);
    }
    let without = started.elapsed() / 5;
    let mut sizes = vec![(0, description(&client).await.len())];
    let db = state.path().join("codemcp/sessions.sqlite3");
    let started = Instant::now();
    for i in 0..100 {
        let code = format!(
            "def helper_{i}(a: int, b: int) -> int:\n    \"\"\"Adds a and b for report {i}.\"\"\"\n    return odd_add_numbers(a=a, b=b)\n\nsave_helper(helper_{i})"
        );
        ok(&call(&client, &code).await);
        if i + 1 == 10 {
            sizes.push((10, description(&client).await.len()));
        }
    }
    let with = started.elapsed() / 100;
    sizes.push((100, description(&client).await.len()));
    let bytes: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT MAX(LENGTH(record)) FROM records", [], |r| r.get(0))
        .unwrap();
    println!(
        "FIGURE save_helper adds {:?} per run ({:?} with, {:?} without)",
        with.saturating_sub(without),
        with,
        without
    );
    for (n, chars) in sizes {
        println!(
            "FIGURE description with {n} helpers: {chars} chars (~{} tokens at 4 chars/token)",
            chars / 4
        );
    }
    println!(
        "FIGURE store bytes for 100 helpers: {bytes} ({} per helper)",
        bytes / 100
    );
}

/// `codemcp helpers ARGS…` on `state`'s store; its stdout.
fn helpers_cli(state: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut command = std::process::Command::new(bin());
    for var in CLEARED {
        command.env_remove(var);
    }
    let output = command
        .arg("helpers")
        .args(args)
        .env("XDG_STATE_HOME", state)
        .envs(env.iter().copied())
        .output()
        .expect("codemcp helpers");
    assert!(
        output.status.success(),
        "codemcp helpers {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn operator_helpers_reach_every_principal_and_the_cli_manages_a_principals_own() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("shared");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("greet.py"),
        "def greet(name: str) -> str:\n    \"\"\"Greets someone.\"\"\"\n    return 'hello ' + name\n",
    )
    .unwrap();
    let dir_text = dir.to_str().unwrap().to_owned();
    let env = [("CODEMCP_HELPERS_DIR", dir_text.as_str())];
    let gateway = serve(state.path(), &env).await;
    let alice = connect(&gateway.url, Some("alice")).await;
    let bob = connect(&gateway.url, Some("bob")).await;
    assert_eq!(ok(&call(&alice, "greet('a')").await), "hello a");
    assert_eq!(ok(&call(&bob, "greet('b')").await), "hello b");
    let listed = ok(&call(&bob, "list_helpers()").await).clone();
    assert_eq!(listed[0]["shared"], true, "{listed}");
    // Shared helpers are not the principal's to delete.
    assert!(call(&bob, "delete_helper('greet')").await.is_error);
    save(&alice).await;
    drop((alice, bob));
    gateway.kill9().await;

    let listed = helpers_cli(state.path(), &["list", "--token", "alice"], &env);
    assert!(
        listed.contains("add_twice") && listed.contains("greet"),
        "{listed}"
    );
    assert!(!helpers_cli(state.path(), &["list", "--token", "bob"], &env).contains("add_twice"));
    let shown = helpers_cli(
        state.path(),
        &["show", "add_twice", "--token", "alice"],
        &[],
    );
    assert!(shown.contains("def double(x)"), "{shown}");
    let exported = helpers_cli(state.path(), &["export", "--token", "alice"], &[]);
    let file = state.path().join("export.json");
    std::fs::write(&file, &exported).unwrap();
    helpers_cli(
        state.path(),
        &["remove", "add_twice", "--token", "alice"],
        &[],
    );
    assert!(!helpers_cli(state.path(), &["list", "--token", "alice"], &[]).contains("add_twice"));
    helpers_cli(
        state.path(),
        &["import", file.to_str().unwrap(), "--token", "bob"],
        &[],
    );
    assert!(helpers_cli(state.path(), &["list", "--token", "bob"], &[]).contains("add_twice"));
}

#[tokio::test]
async fn save_helper_works_on_monty_in_process_and_on_the_cpython_worker() {
    let code = "import json\n\ndef f(x: int) -> str:\n    \"\"\"Doc.\"\"\"\n    return json.dumps(x)\n\nr = save_helper(f, description='d')\n[r['version'], list_helpers()[0]['name'], f(3)]";
    for isolation in ["monty", "host_system"] {
        let state = tempfile::tempdir().unwrap();
        let setup = Setup::new(json!({}));
        let mut command = std::process::Command::new(bin());
        for var in CLEARED {
            command.env_remove(var);
        }
        let output = command
            .arg("--config")
            .arg(setup.config())
            .args(["exec", code])
            .env("XDG_STATE_HOME", state.path())
            .env("CODEMCP_ISOLATION", isolation)
            .env("CODEMCP_MONTY_BIN", monty_bin())
            .env("CODEMCP_PYTHON", support::worker_python())
            .env("CODEMCP_LOG", "error")
            .output()
            .expect("codemcp exec");
        let out = String::from_utf8_lossy(&output.stdout);
        assert!(
            out.contains(r#"result: [1,"f","3"]"#),
            "{isolation}: {out} {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[tokio::test]
async fn skills_list_and_get_serve_each_callers_helpers_with_the_rmcp_client() {
    let state = tempfile::tempdir().unwrap();
    let gateway = serve(state.path(), &[]).await;
    let alice = connect(&gateway.url, Some("alice")).await;
    save(&alice).await;
    let skills = alice.list_all_skills().await.expect("skills/list");
    assert_eq!(skills.len(), 1, "{skills:?}");
    assert_eq!(skills[0].uri, "skill://add-twice/SKILL.md");
    let got = alice
        .get_skill(rmcp::model::GetSkillRequestParams::new(
            "skill://add-twice/SKILL.md",
        ))
        .await
        .expect("skills/get");
    assert_eq!(got.skill.frontmatter.name, "add-twice");
    // The same text as a resource, for clients without the extension.
    let read = alice
        .read_resource(ReadResourceRequestParams::new("skill://add-twice/SKILL.md"))
        .await
        .expect("resources/read skill://");
    let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!("not text");
    };
    assert!(
        text.contains("add_twice(a: int, b: int) -> int") && text.contains("execute_python"),
        "{text}"
    );
    // Another principal lists none and cannot get it.
    let bob = connect(&gateway.url, Some("bob")).await;
    assert!(bob.list_all_skills().await.expect("skills/list").is_empty());
    assert!(
        bob.get_skill(rmcp::model::GetSkillRequestParams::new(
            "skill://add-twice/SKILL.md"
        ))
        .await
        .is_err()
    );
}
