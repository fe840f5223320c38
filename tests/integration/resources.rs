//! Upstream resources and prompts in agent code, end to end, in every
//! engine (Monty in-process, Monty in a pool worker, CPython on the host):
//! a real gateway over stdio in front of the real server-everything
//! (resources and prompts), server-memory twice (one resource; the second
//! copy's resources and prompts denied by policy) and server-filesystem
//! (neither capability).

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::path::{Path, PathBuf};

use base64::Engine as _;
use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use support::{Client, Setup, everything, filesystem, http_exec, memory, start_http};

/// Low enough for the limit snippet to reach it, above what the others call.
const MAX_TOOL_CALLS: &str = "12";

struct World {
    client: Client,
    audit: PathBuf,
    _data: tempfile::TempDir,
    _setup: Setup,
}

async fn world(engine: &[(&str, &str)]) -> World {
    let data = tempfile::tempdir().expect("tempdir");
    let mut denied = memory(&data.path().join("denied.jsonl"));
    denied["policy"] = json!({"resources/*": "deny", "prompts/*": "deny"});
    let mut asks = memory(&data.path().join("memory.jsonl"));
    asks["policy"] = json!({"resources/read": "ask"});
    let setup = Setup::new(json!({
        "everything": everything(),
        "memory": asks,
        "memory_denied": denied,
        "fs": filesystem(data.path()),
    }));
    let audit = data.path().join("audit.jsonl");
    let audit_env = audit.to_str().expect("utf-8").to_owned();
    let mut env = vec![
        ("CODEMCP_AUDIT_LOG", audit_env.as_str()),
        ("CODEMCP_MAX_TOOL_CALLS", MAX_TOOL_CALLS),
        // Resources and prompts are read-only: allowed without a rule.
        ("CODEMCP_POLICY_DEFAULT", "deny"),
    ];
    env.extend_from_slice(engine);
    let client = setup.stdio(&env).await;
    World {
        client,
        audit,
        _data: data,
        _setup: setup,
    }
}

fn audit_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

const SHAPES: &str = "\
listed = list_resources()
static = [r for r in listed if r['server'] == 'everything']
doc = read_resource('everything', static[0]['uri'])
blob = read_resource('everything', 'demo://resource/dynamic/blob/1')
prompts = list_prompts('everything')
filled = get_prompt('everything', 'args-prompt', city='Paris')
{
    'servers': sorted(set([r['server'] for r in listed])),
    'memory': [r['uri'] for r in listed if r['server'] == 'memory'],
    'static': static,
    'doc': doc,
    'blob': blob,
    'prompt_servers': sorted(set([p['server'] for p in list_prompts()])),
    'args_prompt': [p for p in prompts if p['name'] == 'args-prompt'],
    'filled': filled,
    'none': [list_resources('fs'), list_prompts('fs'), list_resources('memory_denied'), list_prompts('memory_denied')],
}
";

/// The values' shapes: text as `str`, binary as `{mimeType, base64}`,
/// lists tagged with their server; servers without the capability, or
/// denied it, list nothing.
async fn shapes(engine: &str, client: &Client) {
    let ran = client.exec(SHAPES).await;
    assert!(!ran.is_error, "{engine}: {}", ran.text);
    let r = ran.result();
    assert_eq!(r["servers"], json!(["everything", "memory"]), "{engine}");
    assert_eq!(r["memory"], json!(["memory://knowledge-graph"]), "{engine}");
    let statics = r["static"].as_array().expect("a list");
    assert!(statics.len() >= 5, "{engine}: {statics:?}");
    for item in statics {
        let uri = item["uri"].as_str().unwrap_or_default();
        assert!(uri.starts_with("demo://resource/"), "{engine}: {item}");
        assert!(item["name"].is_string(), "{engine}: {item}");
    }
    let doc = r["doc"].as_str().expect("a text resource is a str");
    assert!(
        doc.starts_with('#') && doc.len() > 100,
        "{engine}: {doc:.80}"
    );
    assert_eq!(
        r["blob"]["mimeType"], "text/plain",
        "{engine}: {}",
        r["blob"]
    );
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(r["blob"]["base64"].as_str().expect("base64 text"))
        .expect("valid base64");
    let text = String::from_utf8(bytes).expect("utf-8");
    assert!(text.starts_with("Resource 1:"), "{engine}: {text}");
    assert_eq!(r["prompt_servers"], json!(["everything"]), "{engine}");
    let args = &r["args_prompt"][0];
    assert_eq!(args["server"], "everything", "{engine}");
    let required: Vec<(&str, bool)> = args["arguments"]
        .as_array()
        .expect("arguments")
        .iter()
        .map(|a| {
            (
                a["name"].as_str().unwrap(),
                a["required"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(required, [("city", true), ("state", false)], "{engine}");
    let message = &r["filled"]["messages"][0];
    assert_eq!(message["role"], "user", "{engine}: {message}");
    let content = message["content"].as_str().expect("text content is a str");
    assert!(content.contains("Paris"), "{engine}: {content}");
    assert_eq!(r["none"], json!([[], [], [], []]), "{engine}");
}

const ERRORS: &str = "\
def attempt(f):
    try:
        f()
        return None
    except ToolError as e:
        return 'ToolError: ' + str(e)
out = [
    attempt(lambda: read_resource('everything', 'demo://nope')),
    attempt(lambda: get_prompt('everything', 'nope')),
    attempt(lambda: get_prompt('everything', 'args-prompt')),
    attempt(lambda: read_resource('fs', 'file:///x')),
    attempt(lambda: read_resource('memory_denied', 'memory://knowledge-graph')),
    attempt(lambda: get_prompt('memory', 'x')),
    attempt(lambda: list_resources('nope')),
    attempt(lambda: read_resource('memory', 'memory://knowledge-graph')),
]
try:
    read_resource('everything')
except TypeError as e:
    out.append('TypeError: ' + str(e))
try:
    get_prompt('everything', 'args-prompt', city=3.5, flag=True)
except TypeError as e:
    out.append('TypeError: ' + str(e))
out
";

/// Every failure is a `ToolError` with the upstream's own words, or a
/// `TypeError` for arguments that do not fit; a denied server reads as one
/// without the capability.
async fn errors(engine: &str, client: &Client) {
    let ran = client.exec(ERRORS).await;
    assert!(!ran.is_error, "{engine}: {}", ran.text);
    let out: Vec<String> = ran
        .result()
        .as_array()
        .expect("a list")
        .iter()
        .map(|v| v.as_str().unwrap_or("<None>").to_owned())
        .collect();
    let starts = [
        "ToolError: upstream 'everything', resources/read: ",
        "ToolError: upstream 'everything', prompts/get: ",
        "ToolError: upstream 'everything', prompts/get: ",
    ];
    let says = [
        "Resource demo://nope not found",
        "Prompt nope not found",
        "Invalid arguments for prompt args-prompt",
    ];
    for (i, (start, said)) in starts.iter().zip(says).enumerate() {
        assert!(
            out[i].starts_with(start) && out[i].contains(said),
            "{engine}: {}",
            out[i]
        );
    }
    assert_eq!(
        out[3..],
        [
            "ToolError: upstream 'fs' offers no resources",
            "ToolError: upstream 'memory_denied' offers no resources",
            "ToolError: upstream 'memory' offers no prompts",
            "ToolError: no upstream named 'nope'",
            "ToolError: memory.resources/read needs the user's approval (policy \"ask\"), and this client \
             cannot ask them (it declared no elicitation support); the operator can allow the tool with \
             \"policy\": {\"resources/read\": \"allow\"} in the server's config entry",
            "TypeError: read_resource() missing 1 required argument: 'uri'",
            "TypeError: get_prompt() argument 'flag' must be str, not bool",
        ],
        "{engine}"
    );
}

/// Calls that cannot work are found before anything runs.
async fn preflight(engine: &str, client: &Client) {
    let ran = client
        .exec("print('ran')\nread_resource('everything')\nlist_prompts('a', 'b')")
        .await;
    assert_eq!(ran.error_kind(), "preflight", "{engine}: {}", ran.text);
    assert_eq!(ran.stdout(), "", "{engine}: nothing ran");
    let message = ran.error_message();
    assert!(
        message.contains("line 2: read_resource() missing 1 required argument: 'uri'")
            && message
                .contains("line 3: list_prompts() takes 1 positional argument but 2 were given"),
        "{engine}: {message}"
    );
}

/// Each call counts against `CODEMCP_MAX_TOOL_CALLS`.
async fn call_limit(engine: &str, client: &Client) {
    let ran = client
        .exec("n = 0\nfor i in range(50):\n    list_prompts('everything')\n    n += 1\nn")
        .await;
    assert!(ran.is_error, "{engine}: {}", ran.text);
    assert!(
        ran.error_message().contains("tool call limit exceeded")
            && ran.error_message().contains("CODEMCP_MAX_TOOL_CALLS"),
        "{engine}: {}",
        ran.text
    );
}

/// Every call is audited under its method's name, denied ones too.
fn audited(engine: &str, audit: &Path) {
    let lines = audit_lines(audit);
    let find = |server: &str, tool: &str, decision: &str, outcome: &str| {
        lines.iter().find(|l| {
            l["server"] == server
                && l["tool"] == tool
                && l["decision"] == decision
                && l["outcome"] == outcome
        })
    };
    let read = find("everything", "resources/read", "allow", "ok")
        .unwrap_or_else(|| panic!("{engine}: no allowed read in {lines:#?}"));
    assert!(
        read["arguments"]["uri"]
            .as_str()
            .is_some_and(|u| u.starts_with("demo://resource/")),
        "{engine}: {read}"
    );
    assert!(
        find("memory_denied", "resources/read", "deny", "none").is_some(),
        "{engine}: no denied read in {lines:#?}"
    );
    assert!(
        find("everything", "prompts/get", "allow", "error").is_some(),
        "{engine}: no failed prompts/get in {lines:#?}"
    );
    assert!(
        find("memory", "resources/list", "allow", "ok").is_some(),
        "{engine}: list_resources() wrote a line for each server it asked: {lines:#?}"
    );
    assert!(
        find("memory", "resources/read", "denied", "none").is_some(),
        "{engine}: an `ask` read nobody could approve: {lines:#?}"
    );
}

async fn contract(engine: &str, env: &[(&str, &str)]) {
    let world = world(env).await;
    shapes(engine, &world.client).await;
    errors(engine, &world.client).await;
    preflight(engine, &world.client).await;
    call_limit(engine, &world.client).await;
    audited(engine, &world.audit);
}

#[tokio::test(flavor = "multi_thread")]
async fn resources_and_prompts_in_monty_in_process() {
    contract(
        "monty",
        &[
            ("CODEMCP_ISOLATION", "MONTY"),
            ("CODEMCP_MONTY", "inprocess"),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn resources_and_prompts_in_a_monty_pool_worker() {
    contract(
        "pool",
        &[("CODEMCP_ISOLATION", "MONTY"), ("CODEMCP_MONTY", "pool")],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn resources_and_prompts_in_cpython_on_the_host() {
    contract("cpython", &[("CODEMCP_ISOLATION", "HOST_SYSTEM")]).await;
}

/// A principal whose overrides deny a server's resources and prompts gets
/// none of them on a shared gateway, while another principal reads them.
#[tokio::test(flavor = "multi_thread")]
async fn a_principal_denied_resources_cannot_list_or_read_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens.json");
    let alice = support::token(&tokens, "add", "alice");
    let bob = support::token(&tokens, "add", "bob");
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    file["principals"]["bob"]["policy"] =
        json!({"everything": {"resources/*": "deny", "prompts/*": "deny"}});
    std::fs::write(&tokens, file.to_string()).unwrap();
    let env = [("CODEMCP_HTTP_TOKENS", tokens.to_str().unwrap())];
    let gateway = start_http(json!({"everything": everything()}), &env).await;
    let code = "\
uri = 'demo://resource/static/document/architecture.md'
try:
    text = read_resource('everything', uri)[:1]
except ToolError as e:
    text = str(e)
try:
    prompt = get_prompt('everything', 'simple-prompt')['messages'][0]['role']
except ToolError as e:
    prompt = str(e)
[len(list_resources()), len(list_prompts('everything')), text, prompt]
";
    let mut seen = Vec::new();
    for token in [&alice, &bob] {
        support::init_tls();
        let config =
            StreamableHttpClientTransportConfig::with_uri(gateway.url.clone()).auth_header(token);
        let client =
            ().serve(StreamableHttpClientTransport::from_config(config))
                .await
                .expect("MCP over HTTP");
        let ran = http_exec(&client, code).await;
        assert!(!ran.is_error, "{}", ran.text);
        seen.push(ran.result().clone());
    }
    let listed = seen[0][0].as_u64().unwrap_or_default();
    assert!(
        listed >= 5,
        "alice lists everything's resources: {}",
        seen[0]
    );
    assert_eq!(
        (&seen[0][2], &seen[0][3]),
        (&json!("#"), &json!("user")),
        "alice reads them"
    );
    assert_eq!(
        seen[1],
        json!([
            0,
            0,
            "upstream 'everything' offers no resources",
            "upstream 'everything' offers no prompts"
        ]),
        "bob sees a server without resources or prompts"
    );
}
