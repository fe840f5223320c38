//! Principals on a shared gateway (`CODEMCP_HTTP_TOKENS`), end to end: tokens
//! minted by `codemcp token add`, the real filesystem server, and two
//! principals whose policy overrides differ. Each test is named for what it
//! stops a token holder from doing.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams, ResourceContents};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use support::{HttpClient, HttpGateway, Ran, filesystem, start_http, unpack};

struct World {
    gateway: HttpGateway,
    root: tempfile::TempDir,
    tokens: PathBuf,
    audit: PathBuf,
    alice: String,
    bob: String,
}

/// Alice may write files; Bob may only read (every write tool is denied
/// for him, and the operator's own policy asks about writes).
async fn world() -> World {
    let root = tempfile::tempdir().expect("root");
    let tokens = root.path().join("conf/tokens.json");
    let alice = support::token(&tokens, "add", "alice");
    let bob = support::token(&tokens, "add", "bob");
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&tokens).unwrap()).unwrap();
    file["principals"]["alice"]["policy"] = json!({"fs": {"write_file": "allow"}});
    file["principals"]["bob"]["policy"] =
        json!({"fs": {"write_*": "deny", "edit_*": "deny", "move_*": "deny", "create_*": "deny"}});
    std::fs::write(&tokens, file.to_string()).unwrap();
    let mut server = filesystem(root.path());
    server["policy"] = json!({"write_file": "ask"});
    let audit = root.path().join("audit.jsonl");
    let env = [
        ("CODEMCP_HTTP_TOKENS", tokens.to_str().unwrap()),
        ("CODEMCP_AUDIT_LOG", audit.to_str().unwrap()),
    ];
    let gateway = start_http(json!({"fs": server}), &env).await;
    World {
        gateway,
        root,
        tokens,
        audit,
        alice,
        bob,
    }
}

impl World {
    async fn client(&self, token: &str) -> HttpClient {
        support::init_tls();
        let config = StreamableHttpClientTransportConfig::with_uri(self.gateway.url.clone())
            .auth_header(token);
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("MCP over HTTP with a principal's token")
    }

    fn path(&self, name: &str) -> String {
        self.root.path().join(name).to_str().unwrap().to_owned()
    }
}

async fn run(client: &HttpClient, code: &str, session: Option<&str>) -> Ran {
    let mut args = json!({ "code": code });
    if let Some(session) = session {
        args["session"] = json!(session);
    }
    let args = args.as_object().cloned().unwrap_or_default();
    let result = client
        .call_tool(CallToolRequestParams::new("execute_python").with_arguments(args))
        .await
        .expect("tools/call");
    unpack(result)
}

async fn description(client: &HttpClient) -> String {
    let tools = client.list_all_tools().await.expect("tools/list");
    tools[0]
        .description
        .as_deref()
        .unwrap_or_default()
        .to_owned()
}

async fn stub(client: &HttpClient) -> String {
    let read = client
        .read_resource(ReadResourceRequestParams::new("codemcp://sdk.pyi"))
        .await
        .expect("resources/read");
    match &read.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("the stub is text: {other:?}"),
    }
}

/// Status of an `initialize` POST presenting `token`.
async fn status_with(url: &str, token: &str) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    support::init_tls();
    reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .body(body.to_string())
        .send()
        .await
        .expect("POST")
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_principal_sees_and_calls_only_the_tools_its_policy_leaves_it() {
    let w = world().await;
    let alice = w.client(&w.alice).await;
    let bob = w.client(&w.bob).await;

    // What each sees: Bob's denied tools are nowhere.
    assert!(description(&alice).await.contains("fs_write_file"));
    let bobs = description(&bob).await;
    assert!(!bobs.contains("fs_write_file"), "{bobs}");
    assert!(
        bobs.contains("fs_read_text_file") || bobs.contains("fs_read_file"),
        "{bobs}"
    );
    assert!(stub(&alice).await.contains("def fs_write_file"));
    assert!(!stub(&bob).await.contains("fs_write_file"));
    let found = run(
        &bob,
        "[t['name'] for t in search_tools('write file', limit=50)]",
        None,
    )
    .await;
    assert!(!found.is_error, "{}", found.text);
    assert!(
        !found.result().to_string().contains("write_file"),
        "{}",
        found.text
    );

    // What each may call: Alice's override allows the write without asking.
    let mine = w.path("alice.txt");
    let wrote = run(
        &alice,
        &format!("fs_write_file(path={mine:?}, content='hi')"),
        None,
    )
    .await;
    assert!(!wrote.is_error, "{}", wrote.text);
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "hi");

    // Bob calling the tool by name is the error of an unknown function.
    let his = w.path("bob.txt");
    let denied = run(
        &bob,
        &format!("fs_write_file(path={his:?}, content='x')"),
        None,
    )
    .await;
    let unknown = run(
        &bob,
        &format!("fs_no_such_tool(path={his:?}, content='x')"),
        None,
    )
    .await;
    assert!(denied.is_error && unknown.is_error, "{}", denied.text);
    assert_eq!(denied.error_type(), unknown.error_type(), "{}", denied.text);
    // The same message, but for the name and the tools closest to it (from
    // Bob's own catalog).
    let closest = regex::Regex::new(r"; closest tools: [^(]*").unwrap();
    let shape = |message: &str, name: &str| {
        closest
            .replace(&message.replace(name, "NAME"), "")
            .into_owned()
    };
    assert_eq!(
        shape(denied.error_message(), "fs_write_file"),
        shape(unknown.error_message(), "fs_no_such_tool"),
    );
    assert!(
        !denied.error_message().contains("fs_write_file,"),
        "{}",
        denied.text
    );
    assert!(!Path::new(&his).exists(), "nothing reached the upstream");

    // The audit log names the principal of each call.
    let audit = std::fs::read_to_string(&w.audit).unwrap();
    let line = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["tool"] == "write_file")
        .expect("Alice's write is audited");
    assert_eq!(line["principal"], "principal:alice");
    assert_eq!(line["decision"], "allow");
}

#[tokio::test]
async fn a_principal_cannot_continue_another_principals_session() {
    let w = world().await;
    let alice = w.client(&w.alice).await;
    let bob = w.client(&w.bob).await;
    let ran = run(&alice, "secret = 'alice only'", None).await;
    assert!(!ran.is_error, "{}", ran.text);
    let handle = ran.structured["session"].as_str().unwrap().to_owned();

    let stolen = run(&bob, "secret", Some(&handle)).await;
    assert!(stolen.is_error, "{}", stolen.text);
    assert_eq!(stolen.error_type(), "LookupError", "{}", stolen.text);
    assert!(!stolen.text.contains("alice only"), "{}", stolen.text);
    assert_eq!(
        run(&alice, "secret", Some(&handle)).await.result(),
        "alice only"
    );
}

#[tokio::test]
async fn a_wrong_or_removed_token_is_turned_away() {
    let w = world().await;
    let url = &w.gateway.url;
    assert_eq!(status_with(url, &w.bob).await, 200);
    assert_eq!(status_with(url, "not-a-token").await, 401);
    // The digest itself is no token.
    let file = std::fs::read_to_string(&w.tokens).unwrap();
    let digest: Value = serde_json::from_str(&file).unwrap();
    let digest = digest["principals"]["bob"]["sha256"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(status_with(url, &digest).await, 401);

    // Removed while serving: refused within a couple of seconds, no restart.
    support::token(&w.tokens, "remove", "bob");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while status_with(url, &w.bob).await != 401 {
        assert!(
            std::time::Instant::now() < deadline,
            "Bob's removed token still works"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(status_with(url, &w.alice).await, 200);
    // And a token added while serving works.
    let carol = support::token(&w.tokens, "add", "carol");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while status_with(url, &carol).await != 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "Carol's new token is not accepted"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
