//! Principals on a shared gateway (`CODEMCP_HTTP_TOKENS`), end to end: tokens
//! minted by `codemcp token add`, the real filesystem server, and two
//! principals whose policy overrides differ. Each test is named for what it
//! stops a token holder from doing.

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

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

/// Another local user who may write the tokens file may add a principal of
/// their own: the gateway refuses to start on such a file, and says how to
/// fix it.
#[test]
fn world_writable_tokens_file_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().expect("root");
    let tokens = root.path().join("tokens.json");
    support::token(&tokens, "add", "alice");
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o666)).unwrap();
    let config = root.path().join("mcp.json");
    std::fs::write(&config, r#"{"mcpServers": {}}"#).unwrap();
    let mut child = std::process::Command::new(support::bin())
        .arg("--config")
        .arg(&config)
        .args(["serve", "--http", "127.0.0.1:0"])
        .env("CODEMCP_HTTP_TOKENS", &tokens)
        .env("XDG_STATE_HOME", root.path().join("state"))
        .env("CODEMCP_FALLBACK", "none")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn codemcp serve --http");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("the gateway served a tokens file that anyone may write");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success());
    assert!(
        stderr.contains("writable by group or others") && stderr.contains("chmod 600"),
        "{stderr}"
    );
}

/// `token add` run 16 times at once: every token it printed authenticates,
/// none lost to another run's write.
#[test]
fn parallel_token_adds_all_work() {
    let root = tempfile::tempdir().expect("root");
    let tokens = root.path().join("conf/tokens.json");
    let children: Vec<_> = (0..16)
        .map(|i| {
            std::process::Command::new(support::bin())
                .args(["token", "add", &format!("user{i}")])
                .env("CODEMCP_HTTP_TOKENS", &tokens)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn codemcp token add")
        })
        .collect();
    let mut printed = Vec::new();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        printed.push((i, String::from_utf8(out.stdout).unwrap().trim().to_owned()));
    }
    let principals = codemcp::authority::principals::Principals::load(&tokens).expect("loads");
    for (i, token) in &printed {
        let who = principals.authenticate(token).map(|p| p.name.clone());
        assert_eq!(
            who.as_deref(),
            Some(format!("user{i}").as_str()),
            "user{i}'s token"
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(root.path().join("conf"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "tokens.json" && name != "tokens.json.lock")
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}
