//! The pre-flight check end to end: through a real gateway in front of
//! server-everything, a snippet whose calls cannot work is refused before
//! its first line runs; and over every corpus in the repo, the checker
//! refuses no snippet that is meant to run.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

use codemcp_sdk::Sdk;
use codemcp_sdk::policy::Decision;
use codemcp_sdk::tooldef::ToolDef;
use codemcp_snippet::preflight;
use serde_json::json;
use support::{Setup, everything, odd};

#[tokio::test]
async fn a_typo_on_line_5_stops_the_snippet_before_line_1_runs() {
    let setup = Setup::new(json!({"everything": everything()}));
    let client = setup.stdio(&[]).await;
    let code = "marker = 1\nprint('side effect')\ntotal = 0\n\n\
                total += everything_get_summ(a=1, b=2)";
    let ran = client.exec(code).await;
    assert!(ran.is_error, "{}", ran.text);
    assert_eq!(ran.error_kind(), "preflight", "{}", ran.text);
    assert_eq!(ran.error_type(), "NameError", "{}", ran.text);
    assert!(
        ran.error_message().starts_with(
            "line 5: name 'everything_get_summ' is not defined; closest tools: everything_get_sum"
        ),
        "{}",
        ran.text
    );
    assert_eq!(ran.stdout(), "", "nothing ran");
    assert_eq!(ran.structured["tool_calls"], 0);
    assert!(ran.structured["session"].is_string(), "{}", ran.text);
    // The session is as it was: the first line's variable does not exist.
    let after = client.exec("marker").await;
    assert_eq!(after.error_type(), "NameError", "{}", after.text);
}

#[tokio::test]
async fn every_problem_is_reported_at_once_with_its_line() {
    let setup = Setup::new(json!({"everything": everything()}));
    let client = setup.stdio(&[]).await;
    let code = "everything_echo(message='hi')\neverything_get_sum(a=1, c=2)\n\
                def report(x):\n    return everything_echo(x, 'again')\neverything_get_sum('one', 2)";
    let ran = client.exec(code).await;
    assert_eq!(ran.error_kind(), "preflight", "{}", ran.text);
    assert_eq!(ran.error_type(), "TypeError", "{}", ran.text);
    let message = ran.error_message();
    assert!(
        message.starts_with("3 calls cannot work (found before running; nothing ran):\n"),
        "{message}"
    );
    for line in [
        "line 2: everything_get_sum() got an unexpected keyword argument 'c' (valid: a, b)",
        "line 4: everything_echo() takes 1 positional argument but 2 were given",
        "line 5: everything_get_sum() argument 'a' must be float, not str",
    ] {
        assert!(message.contains(line), "{line} is not in:\n{message}");
    }
    assert_eq!(ran.structured["tool_calls"], 0, "line 1 did not run");
}

#[tokio::test]
async fn a_call_through_a_variable_is_left_to_run_time() {
    let setup = Setup::new(json!({"everything": everything()}));
    let client = setup.stdio(&[]).await;
    let ran = client
        .exec("print('ran')\nf = everything_get_sum\nf(a=1, c=2)")
        .await;
    assert_eq!(ran.error_kind(), "python", "{}", ran.text);
    assert_eq!(ran.error_type(), "TypeError", "{}", ran.text);
    assert_eq!(ran.stdout(), "ran\n");
    // A helper an earlier snippet defined, named like a tool, is no typo.
    let defined = client
        .exec("def everything_twice(x):\n    return 2 * x")
        .await;
    assert!(!defined.is_error, "{}", defined.text);
    let ran = client.exec("everything_twice(21)").await;
    assert_eq!(ran.result(), &json!(42), "{}", ran.text);
}

#[tokio::test]
async fn optional_list_refuses_a_bare_string_before_the_server() {
    let setup = Setup::new(json!({"odd": odd(json!({"ODD_SCHEMAS": "1"}))}));
    let client = setup.stdio(&[]).await;
    let ran = client
        .exec("print('ran')\nodd_describe_regions(regions='us-east-1')")
        .await;
    assert_eq!(ran.error_kind(), "preflight", "{}", ran.text);
    assert_eq!(ran.error_type(), "TypeError", "{}", ran.text);
    assert_eq!(
        ran.error_message(),
        "line 2: odd_describe_regions() argument 'regions' must be list or None, not str \
         (found before running; nothing ran)"
    );
    assert_eq!(ran.structured["tool_calls"], 0, "the server saw nothing");
    let ran = client
        .exec("[odd_describe_regions(regions=['us-east-1']), odd_describe_regions(regions=None), \
               odd_draw(shape={'kind': 'square', 'side': 2}), odd_count_nodes(tree={'name': 'a', 'children': [{'name': 'b'}]}), \
               odd_tune(mode='slow', value=3)]")
        .await;
    assert_eq!(
        ran.result(),
        &json!(["[\"us-east-1\"]", "null", 4.0, 2, "slow:3"]),
        "{}",
        ran.text
    );
    let ran = client
        .exec("odd_draw(shape={'kind': 'hexagon', 'side': 2})\nodd_count_nodes(tree={'name': 'a', 'children': [{'name': 1}]})\nodd_tune(mode='medium')")
        .await;
    assert_eq!(ran.error_kind(), "preflight", "{}", ran.text);
    for line in [
        "line 1: odd_draw() argument 'shape' at ['kind'] must be 'circle' or 'square', not 'hexagon'",
        "line 2: odd_count_nodes() argument 'tree' at ['children'][0]['name'] must be str, not int",
        "line 3: odd_tune() argument 'mode' must be 'fast' or 'slow', not 'medium'",
    ] {
        assert!(
            ran.error_message().contains(line),
            "{line} is not in {}",
            ran.text
        );
    }
}

/// A handler around a call that cannot work: (code, whether it catches the
/// call's `TypeError`). What CPython prints for those it catches (its
/// handler's line), checked on CPython itself.
const HANDLED: &[(&str, bool)] = &[
    (
        "try:\n    odd_tune(mode='medium')\nexcept Exception as e:\n    print('caught', type(e).__name__, e)",
        true,
    ),
    (
        "try:\n    odd_tune(mode='medium')\nexcept:\n    print('caught')",
        true,
    ),
    (
        "try:\n    odd_tune(mode='medium')\nexcept (KeyError, TypeError) as e:\n    print('caught', type(e).__name__, e)",
        true,
    ),
    (
        "m = 'medium'\ntry:\n    odd_tune(mode=m)\nexcept TypeError as e:\n    print('caught', type(e).__name__, e)",
        true,
    ),
    (
        "try:\n    odd_tune(mode='medium')\nexcept ValueError:\n    print('caught')",
        false,
    ),
    (
        "try:\n    odd_tune(mode='medium')\nexcept ToolError:\n    print('caught')",
        false,
    ),
    (
        "try:\n    odd_tune(mode='medium')\nfinally:\n    print('done')",
        false,
    ),
    (
        "try:\n    def tune():\n        return odd_tune(mode='medium')\nexcept TypeError:\n    pass\ntune()",
        false,
    ),
];

#[tokio::test]
async fn a_handled_invalid_call_raises_at_run_time_before_the_server() {
    let setup = Setup::new(json!({"odd": odd(json!({"ODD_SCHEMAS": "1"}))}));
    let monty = setup.stdio(&[]).await;
    let cpython = setup.stdio(&[("CODEMCP_ISOLATION", "HOST_SYSTEM")]).await;
    for (code, handled) in HANDLED {
        let code = format!("print('first line')\n{code}");
        let on_monty = monty.exec(&code).await;
        let on_cpython = cpython.exec(&code).await;
        for ran in [&on_monty, &on_cpython] {
            assert_eq!(
                ran.structured["tool_calls"], 0,
                "the server saw nothing: {}",
                ran.text
            );
            if *handled {
                assert!(!ran.is_error, "{code}: {}", ran.text);
                assert!(
                    ran.stdout().starts_with("first line\ncaught"),
                    "{code}: {}",
                    ran.text
                );
            } else {
                assert_eq!(ran.error_kind(), "preflight", "{code}: {}", ran.text);
                assert_eq!(ran.stdout(), "", "nothing ran: {}", ran.text);
            }
        }
        assert_eq!(on_monty.stdout(), on_cpython.stdout(), "{code}");
    }
    // The same message the check gives, as the exception the handler sees.
    let ran = monty.exec(HANDLED[0].0).await;
    assert_eq!(
        ran.stdout(),
        "caught TypeError odd_tune() argument 'mode' must be 'fast' or 'slow', not 'medium'\n"
    );
}

#[tokio::test]
async fn unknown_schema_stays_callable_with_a_plain_signature() {
    // zod-to-json-schema's output for a top-level `z.union([...])`: no
    // properties to make parameters of.
    let union = json!({"anyOf": [
        {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": false},
        {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"], "additionalProperties": false},
    ], "$schema": "http://json-schema.org/draft-07/schema#"});
    let sdk = Sdk::build(&[ToolDef::with_schema("crm", "find_contact", union)]);
    let function = sdk
        .get("crm_find_contact")
        .expect("a function all the same");
    assert_eq!(
        function.signature(),
        "crm_find_contact(**kwargs: Any) -> str"
    );
    let described = sdk.describe("crm_find_contact").expect("described");
    let note = described["note"].as_str().expect("a note");
    assert!(
        note.starts_with("the gateway cannot read this input schema ("),
        "{note}"
    );
    assert!(
        sdk.stub()
            .contains("def crm_find_contact(**kwargs: Any) -> str:")
    );
    let args = function
        .bind_args(Vec::new(), vec![("email".to_owned(), json!("a@b.c"))])
        .expect("keywords bind");
    assert_eq!(serde_json::Value::Object(args), json!({"email": "a@b.c"}));
    let checked = preflight::check("crm_find_contact(email='a@b.c', id=3)", &sdk, &[]);
    assert!(
        checked.findings.is_empty(),
        "nothing is refused that the gateway cannot read"
    );
    // A schema the gateway reads has no note.
    let typed = Sdk::build(&[ToolDef::with_schema(
        "crm",
        "get",
        json!({"type": "object"}),
    )]);
    assert!(
        typed
            .describe("crm_get")
            .expect("described")
            .get("note")
            .is_none()
    );
}

/// The catalogs the corpora are written against: the real peers, under the
/// names the tests and benches give them, with the tool a test adds at run
/// time (`odd_add_tool(name='late_tool')`).
fn catalog() -> &'static Sdk {
    static SDK: OnceLock<Sdk> = OnceLock::new();
    SDK.get_or_init(|| {
        let mut tools = support::peers::catalog();
        tools.push(ToolDef {
            server: "odd".into(),
            name: "late_tool".into(),
            description: String::new(),
            input_schema: json!({"type": "object"}).into(),
            output_schema: None,
            read_only: true,
            destructive: false,
            policy: Decision::Allow,
        });
        Sdk::build(&tools)
    })
}

/// Corpus snippets that fail on purpose with a call the checker sees, so
/// refusing them early is right: `(where, the first problem's message)`.
const MEANT_TO_FAIL: &[(&str, &str)] = &[
    (
        "tests/integration/gateway.rs",
        "line 1: everything_get_sum() got an unexpected keyword argument 'c' (valid: a, b)",
    ),
    (
        "tests/integration/resources.rs",
        "line 2: read_resource() missing 1 required argument: 'uri'",
    ),
];

#[test]
fn no_snippet_of_the_corpora_is_refused() {
    let mut refused = Vec::new();
    let mut checked = 0;
    for (place, snippet) in corpora() {
        checked += 1;
        let found = preflight::check(&snippet, catalog(), &[]);
        let Some(first) = found.findings.first() else {
            continue;
        };
        let first = first.to_string();
        if !MEANT_TO_FAIL.contains(&(place.as_str(), first.as_str())) {
            refused.push(format!("{place}: {first}\n--- snippet:\n{snippet}\n"));
        }
    }
    assert!(checked > 300, "only {checked} snippets found");
    assert!(
        refused.is_empty(),
        "false positives:\n{}",
        refused.join("\n")
    );
    eprintln!("{checked} corpus snippets checked, none refused");
}

/// Every snippet in the repo: the escape corpus (each step of a case), the
/// token bench's tasks, and every string literal of the integration tests
/// (but this file's, whose snippets fail on purpose) and of the Python
/// benches and clients (most are no Python at all, which the checker skips).
fn corpora() -> Vec<(String, String)> {
    let repo = support::repo();
    let mut snippets = Vec::new();
    for path in files(&repo.join("sandbox-tests"), "py") {
        let text = std::fs::read_to_string(&path).unwrap();
        for step in text.split("# --- session") {
            snippets.push((relative(&repo, &path), placeholders(step)));
        }
    }
    let mut sources = Vec::new();
    for dir in [
        "tests/integration",
        "tests/integration/support",
        "tests/integration/sessions",
        "tests/support",
        "tests/docker",
        "tests/real_peers",
        "tests/real_peers/client_matrix",
        "tests/sandbox_corpus",
    ] {
        sources.extend(files(&repo.join(dir), "rs"));
    }
    sources.extend(files(&repo.join("bench/tokens/src"), "rs"));
    sources.extend(files(&repo.join("bench"), "py"));
    sources.extend(files(&repo.join("tests/clients"), "py"));
    let own = Path::new(file!()).file_name().unwrap();
    for path in sources.into_iter().filter(|p| p.file_name() != Some(own)) {
        let text = std::fs::read_to_string(&path).unwrap();
        for literal in string_literals(&text) {
            snippets.push((relative(&repo, &path), placeholders(&literal)));
        }
    }
    snippets
}

fn files(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    paths.sort();
    paths
}

fn relative(repo: &Path, path: &Path) -> String {
    path.strip_prefix(repo).unwrap().display().to_string()
}

/// `{{ROOT}}` (escape corpus) and `{root}` (token bench) as a path.
fn placeholders(code: &str) -> String {
    let pattern = regex::Regex::new(r"\{\{[A-Z_]+\}\}|\{root\}").unwrap();
    pattern.replace_all(code, "/tmp/x").into_owned()
}

/// The text of every double-quoted and raw (`r#"…"#`) string literal, with
/// the escapes Rust and Python share undone.
fn string_literals(source: &str) -> Vec<String> {
    let raw = regex::Regex::new(r##"(?s)r#"(.*?)"#"##).unwrap();
    let quoted = regex::Regex::new(r#""((?:[^"\\\n]|\\(?s:.))*)""#).unwrap();
    let mut literals: Vec<String> = raw.captures_iter(source).map(|c| c[1].to_owned()).collect();
    let rest = raw.replace_all(source, "");
    literals.extend(quoted.captures_iter(&rest).map(|c| unescape(&c[1])));
    literals
}

fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            // A line continuation: the newline and the next line's indentation go.
            Some('\n') => {
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// The check's median cost on a 30-line snippet against the peers'
/// catalog (36 tools without `odd` and `broken`), next to the run itself in
/// `bench/run.sh`. Goal: at most 0.2 ms.
#[test]
#[ignore = "a measurement: bench/run.sh runs it in release mode"]
fn cost_on_a_30_line_snippet_with_36_tools() {
    let tools: Vec<_> = support::peers::catalog()
        .into_iter()
        .filter(|t| ["everything", "fs", "memory"].contains(&t.server.as_str()))
        .collect();
    let sdk = Sdk::build(&tools);
    let code = thirty_lines();
    assert_eq!(code.lines().count(), 30);
    assert!(preflight::check(&code, &sdk, &[]).findings.is_empty());
    let median = median_ms(|| {
        std::hint::black_box(preflight::check(&code, &sdk, &[]));
    });
    // As the executor runs it: on an interpreter thread, for its big stack.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let sdk = std::sync::Arc::new(sdk);
    let hopped = median_ms(|| {
        let check = preflight::check_safely(code.clone(), sdk.clone(), Vec::new());
        std::hint::black_box(runtime.block_on(check));
    });
    let verdict = if hopped <= 0.2 { "PASS" } else { "MISS" };
    println!(
        "PREFLIGHT median {hopped:.3} ms ({median:.3} ms without the thread hop) on a 30-line snippet, \
         {} tools (goal <= 0.2 ms) {verdict}",
        sdk.functions().len()
    );
}

fn median_ms(mut job: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..2_000)
        .map(|_| {
            let started = Instant::now();
            job();
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn thirty_lines() -> String {
    "import json\n\
     root = '/tmp/x'\n\
     listing = fs_list_directory(path=root)\n\
     names = [line.split()[-1] for line in listing.splitlines() if line.startswith('[FILE]')]\n\
     sizes = {}\n\
     for name in names:\n\
     \x20   info = fs_get_file_info(path=f'{root}/{name}')\n\
     \x20   sizes[name] = info\n\
     total = 0\n\
     for i in range(5):\n\
     \x20   total += int(everything_get_sum(a=i, b=2).split()[-1].rstrip('.'))\n\
     echo = everything_echo(message=json.dumps(sizes))\n\
     graph = memory_read_graph()\n\
     people = [e for e in graph['entities'] if e['entityType'] == 'person']\n\
     def summary(entity):\n\
     \x20   return f\"{entity['name']}: {len(entity['observations'])}\"\n\
     lines = [summary(p) for p in people]\n\
     found = memory_search_nodes(query='engineer')\n\
     memory_add_observations(observations=[{'entityName': 'x', 'contents': ['y']}])\n\
     text = fs_read_text_file(path=root + '/a.txt', head=10)\n\
     words = len(text.split())\n\
     result = {\n\
     \x20   'total': total,\n\
     \x20   'people': lines,\n\
     \x20   'found': len(found['entities']),\n\
     \x20   'words': words,\n\
     }\n\
     if total > 10:\n\
     \x20   print(echo)\n\
     result"
        .to_owned()
}
