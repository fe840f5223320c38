//! Unit tests for judging one server entry: both forms, timeouts,
//! interpolation, policies, OAuth settings, and the reasons a server is skipped.

use super::*;
use crate::config::file::judge::SSE_REASON;

// --- the common form -------------------------------------------------

#[test]
fn common_stdio_server() {
    let server = only_server(
        r#"{"mcpServers": {"fs": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
            "env": {"DEBUG": "1"},
            "cwd": "/srv"
        }}}"#,
    );
    assert_eq!(server.name, "fs");
    assert_eq!(server.handshake_timeout, DEFAULT_HANDSHAKE_TIMEOUT);
    assert_eq!(
        server.transport,
        Transport::Stdio {
            command: "npx".to_owned(),
            args: vec![
                "-y".to_owned(),
                "@modelcontextprotocol/server-filesystem".to_owned(),
                "/tmp".to_owned()
            ],
            env: map(&[("DEBUG", "1")]),
            cwd: Some(PathBuf::from("/srv")),
        }
    );
}

#[test]
fn common_http_server() {
    let server = only_server(
        r#"{"mcpServers": {"gh": {"url": "https://api.githubcopilot.com/mcp/",
            "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}}}"#,
    );
    assert_eq!(
        server.transport,
        Transport::Http {
            url: "https://api.githubcopilot.com/mcp/".to_owned(),
            headers: map(&[("Authorization", "Bearer ghp_x")]),
        }
    );
}

#[test]
fn common_type_spellings() {
    for t in ["http", "streamable-http", "streamableHttp", "HTTP"] {
        let text = format!(r#"{{"mcpServers": {{"a": {{"type": "{t}", "url": "http://x"}}}}}}"#);
        assert!(
            matches!(only_server(&text).transport, Transport::Http { .. }),
            "{t}"
        );
    }
    let server = only_server(r#"{"mcpServers": {"a": {"type": "stdio", "command": "x"}}}"#);
    assert_eq!(server.transport, stdio("x", &[]));
}

#[test]
fn sse_is_skipped() {
    let reason = only_skip_reason(
        r#"{"mcpServers": {"old": {"type": "sse", "url": "http://localhost:3000/sse"}}}"#,
    );
    assert_eq!(reason, SSE_REASON);
}

#[test]
fn disabled_is_skipped() {
    let reason = only_skip_reason(r#"{"mcpServers": {"a": {"command": "x", "disabled": true}}}"#);
    assert_eq!(reason, "disabled");
    only_server(r#"{"mcpServers": {"a": {"command": "x", "disabled": false}}}"#);
}

#[test]
fn unknown_fields_are_ignored() {
    let server = only_server(
        r#"{"$schema": "x", "theme": "dark",
            "mcpServers": {"a": {"command": "x", "alwaysAllow": ["t"], "autoApprove": []}}}"#,
    );
    assert_eq!(server.transport, stdio("x", &[]));
}

#[test]
fn type_and_fields_must_agree() {
    for (entry, reason) in [
        (
            r#"{"type": "stdio", "url": "http://x"}"#,
            r#""type" is "stdio" but there is no "command""#,
        ),
        (
            r#"{"type": "http", "command": "x"}"#,
            r#""type" is "http" but there is no "url""#,
        ),
        (
            r#"{"type": "websocket", "url": "ws://x"}"#,
            r#"unknown "type" "websocket"; expected "stdio" or "http""#,
        ),
    ] {
        let text = format!(r#"{{"mcpServers": {{"a": {entry}}}}}"#);
        assert_eq!(only_skip_reason(&text), reason, "{entry}");
    }
}

// --- the opencode form -----------------------------------------------

#[test]
fn opencode_local_server() {
    let server = only_server(
        r#"{"mcp": {"fs": {"type": "local", "command": ["npx", "-y", "server-fs"],
            "environment": {"TOKEN": "{env:GITHUB_TOKEN}"}, "enabled": true}}}"#,
    );
    assert_eq!(
        server.transport,
        Transport::Stdio {
            command: "npx".to_owned(),
            args: vec!["-y".to_owned(), "server-fs".to_owned()],
            env: map(&[("TOKEN", "ghp_x")]),
            cwd: None,
        }
    );
}

#[test]
fn opencode_remote_server() {
    let server = only_server(
        r#"{"mcp": {"ctx": {"type": "remote", "url": "https://{env:API_HOST}/mcp",
            "headers": {"X-Key": "k"}, "oauth": false}}}"#,
    );
    assert_eq!(
        server.transport,
        Transport::Http {
            url: "https://api.example.com/mcp".to_owned(),
            headers: map(&[("X-Key", "k")]),
        }
    );
    assert!(server.oauth.disabled, "opencode's \"oauth\": false");
}

#[test]
fn opencode_disabled_and_bad_command() {
    let reason = only_skip_reason(
        r#"{"mcp": {"a": {"type": "local", "command": ["x"], "enabled": false}}}"#,
    );
    assert_eq!(reason, "disabled");
    let reason = only_skip_reason(r#"{"mcp": {"a": {"type": "local", "command": []}}}"#);
    assert_eq!(reason, r#""command" is an empty list"#);
    let reason = only_skip_reason(r#"{"mcp": {"a": {"type": "local", "command": ["x", 1]}}}"#);
    assert_eq!(reason, r#""command"[1] must be a string, found a number"#);
    let reason = only_skip_reason(r#"{"mcp": {"a": {"type": "stdio", "command": ["x"]}}}"#);
    assert_eq!(
        reason,
        r#"unknown "type" "stdio"; expected "local" or "remote""#
    );
}

#[test]
fn opencode_command_as_plain_string() {
    let server = only_server(r#"{"mcp": {"a": {"type": "local", "command": "server"}}}"#);
    assert_eq!(server.transport, stdio("server", &[]));
}

// --- timeouts ----------------------------------------------------------

#[test]
fn timeout_heuristic() {
    for (value, expected) in [
        ("5", Duration::from_secs(5)),
        ("0.5", Duration::from_millis(500)),
        ("999", Duration::from_secs(999)),
        ("1000", Duration::from_secs(1)),
        ("5000", Duration::from_secs(5)),
        ("120000", Duration::from_secs(120)),
    ] {
        for text in [
            format!(r#"{{"mcp": {{"a": {{"command": ["x"], "timeout": {value}}}}}}}"#),
            format!(r#"{{"mcpServers": {{"a": {{"command": "x", "timeout": {value}}}}}}}"#),
        ] {
            assert_eq!(only_server(&text).handshake_timeout, expected, "{text}");
        }
    }
}

#[test]
fn bad_timeouts_skip_the_server() {
    for (value, reason) in [
        ("0", r#""timeout" must be greater than zero"#),
        ("-3", r#""timeout" must be greater than zero"#),
        (r#""30s""#, r#""timeout" must be a number, found a string"#),
        ("1e300", r#""timeout" is too large"#),
    ] {
        let text = format!(r#"{{"mcp": {{"a": {{"command": ["x"], "timeout": {value}}}}}}}"#);
        assert_eq!(only_skip_reason(&text), reason, "{value}");
    }
}

// --- interpolation -----------------------------------------------------

#[test]
fn every_string_is_interpolated() {
    let server = only_server(
        r#"{"mcpServers": {"a": {
            "command": "${HOME}/bin/{env:API_HOST}",
            "args": ["--host=${API_HOST}", "${PORT:-8080}", "$$", "50$"],
            "env": {"T": "{env:GITHUB_TOKEN}"},
            "cwd": "${WORKDIR:-~/work}"
        }}}"#,
    );
    assert_eq!(
        server.transport,
        Transport::Stdio {
            command: "/home/u/bin/api.example.com".to_owned(),
            args: vec![
                "--host=api.example.com".to_owned(),
                "8080".to_owned(),
                "$$".to_owned(),
                "50$".to_owned()
            ],
            env: map(&[("T", "ghp_x")]),
            cwd: Some(PathBuf::from("/home/u/work")),
        }
    );
}

#[test]
fn tilde_expands_in_command_and_cwd_only() {
    let server = only_server(
        r#"{"mcpServers": {"a": {"command": "~/bin/srv", "args": ["~/x"], "cwd": "~"}}}"#,
    );
    assert_eq!(
        server.transport,
        Transport::Stdio {
            command: "/home/u/bin/srv".to_owned(),
            args: vec!["~/x".to_owned()],
            env: BTreeMap::new(),
            cwd: Some(PathBuf::from("/home/u")),
        }
    );
}

#[test]
fn missing_variable_skips_only_that_server() {
    let config = parse_ok(
        r#"{"mcpServers": {
            "gh": {"url": "https://x", "headers": {"Authorization": "Bearer ${GH_PAT}"}},
            "ok": {"command": "x"},
            "oc": {"command": "x", "env": {"K": "{env:OPENAI_KEY}"}}
        }}"#,
    );
    assert_eq!(config.servers.len(), 1);
    assert_eq!(
        config.skipped,
        [
            SkippedServer {
                name: "gh".to_owned(),
                reason: "environment variable GH_PAT is not set".to_owned()
            },
            SkippedServer {
                name: "oc".to_owned(),
                reason: "environment variable OPENAI_KEY is not set".to_owned()
            },
        ]
    );
}

// --- bad entries -------------------------------------------------------

#[test]
fn bad_entries_are_skipped_with_a_reason() {
    for (entry, reason) in [
        (r#""npx""#, "the entry must be an object, found a string"),
        ("{}", r#"has neither "command" nor "url""#),
        (
            r#"{"command": "x", "url": "http://x"}"#,
            r#"has both "command" and "url"; a server is either a local command or a URL"#,
        ),
        (
            r#"{"command": "x", "args": "-y"}"#,
            r#""args" must be a list of strings, found a string"#,
        ),
        (
            r#"{"command": "x", "args": ["-y", 3]}"#,
            r#""args"[1] must be a string, found a number"#,
        ),
        (
            r#"{"command": "x", "env": {"PORT": 80}}"#,
            r#""env"."PORT" must be a string, found a number"#,
        ),
        (
            r#"{"command": "x", "env": []}"#,
            r#""env" must be an object of strings, found a list"#,
        ),
        (
            r#"{"command": 1}"#,
            r#""command" must be a string, found a number"#,
        ),
        (r#"{"command": ""}"#, r#""command" is empty"#),
        (
            r#"{"command": "x", "cwd": false}"#,
            r#""cwd" must be a string, found a boolean"#,
        ),
        (
            r#"{"command": "x", "disabled": "yes"}"#,
            r#""disabled" must be true or false, found a string"#,
        ),
        (
            r#"{"url": "localhost:3000"}"#,
            r#""url" must start with http:// or https://, found "localhost:3000""#,
        ),
        (
            r#"{"url": "http://x", "headers": {"A": null}}"#,
            r#""headers"."A" must be a string, found null"#,
        ),
    ] {
        let text = format!(r#"{{"mcpServers": {{"a": {entry}}}}}"#);
        assert_eq!(only_skip_reason(&text), reason, "{entry}");
    }
}

#[test]
fn one_bad_entry_does_not_block_the_others() {
    let config =
        parse_ok(r#"{"mcpServers": {"bad": [], "good": {"command": "x"}, "": {"command": "y"}}}"#);
    assert_eq!(config.servers.len(), 1);
    assert_eq!(config.servers[0].name, "good");
    let reasons: Vec<_> = config.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "the server name is empty",
            "the entry must be an object, found a list"
        ]
    );
}

#[test]
fn a_policy_is_read_in_both_formats() {
    use codemcp_sdk::policy::Decision;
    let common = only_server(
        r#"{"mcpServers": {"fs": {"command": "x", "policy": {"write_*": "ask", "delete": "deny"}}}}"#,
    );
    assert_eq!(common.policy.decide("write_file"), Some(Decision::Ask));
    assert_eq!(common.policy.decide("delete"), Some(Decision::Deny));
    assert_eq!(common.policy.decide("read"), None);
    let opencode = only_server(
        r#"{"mcp": {"fs": {"type": "local", "command": ["x"], "policy": {"*": "allow"}}}}"#,
    );
    assert_eq!(opencode.policy.decide("anything"), Some(Decision::Allow));
    assert!(
        only_server(r#"{"mcpServers": {"fs": {"command": "x"}}}"#)
            .policy
            .is_empty()
    );
}

#[test]
fn a_malformed_policy_is_an_error_naming_its_position() {
    let text = "{\"mcpServers\": {\"fs\": {\n  \"command\": \"x\",\n  \"policy\": {\"write_file\": \"maybe\"}\n}}}";
    let err = parse_err(text);
    assert!(err.contains(":3:"), "{err}");
    assert!(
        err.contains("expected \"allow\", \"ask\" or \"deny\""),
        "{err}"
    );
    let err = parse_err(r#"{"mcpServers": {"fs": {"command": "x", "policy": ["write_file"]}}}"#);
    assert!(err.contains("policy"), "{err}");
    // Even a disabled server's policy must be well-formed: a typo never passes silently.
    let err = parse_err(
        r#"{"mcpServers": {"fs": {"command": "x", "disabled": true, "policy": {"x": "alow"}}}}"#,
    );
    assert!(err.contains("unknown policy \"alow\""), "{err}");
}

#[test]
fn http_server_oauth_settings() {
    let server = only_server(
        r#"{"mcpServers": {"r": {"url": "https://mcp.example.com/mcp", "oauth": {
            "clientId": "id-1", "clientSecret": "${GITHUB_TOKEN}", "scopes": ["a"], "scope": "b c",
            "clientMetadataUrl": "https://me.example/client.json", "grant": "client_credentials"}}}}"#,
    );
    let oauth = server.oauth;
    assert_eq!(oauth.client_id.as_deref(), Some("id-1"));
    assert_eq!(oauth.client_secret.as_deref(), Some("ghp_x"), "expanded");
    assert_eq!(oauth.scopes, ["a", "b", "c"]);
    assert_eq!(oauth.grant, Grant::ClientCredentials);
    assert!(
        !format!("{oauth:?}").contains("ghp_x"),
        "Debug hides the secret"
    );
}

#[test]
fn bad_oauth_settings_skip_the_server() {
    for (oauth, reason) in [
        (r#""yes""#, "\"oauth\" must be an object or false"),
        (r#"{"grant": "password"}"#, "unknown \"grant\""),
        (
            r#"{"grant": "client_credentials", "clientId": "x"}"#,
            "needs \"clientId\" and \"clientSecret\"",
        ),
        (
            r#"{"clientSecret": "s"}"#,
            "\"clientSecret\" needs \"clientId\"",
        ),
    ] {
        let text =
            format!(r#"{{"mcpServers": {{"r": {{"url": "http://x/mcp", "oauth": {oauth}}}}}}}"#);
        let skipped = only_skip_reason(&text);
        assert!(skipped.contains(reason), "{oauth}: {skipped}");
    }
}
