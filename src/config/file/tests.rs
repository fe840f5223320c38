//! Unit tests for the config file reader.

use super::*;

const ORIGIN: &str = "/home/u/.config/codemcp/mcp.json";

fn env(name: &str) -> Option<String> {
    match name {
        "HOME" => Some("/home/u".to_owned()),
        "GITHUB_TOKEN" => Some("ghp_x".to_owned()),
        "API_HOST" => Some("api.example.com".to_owned()),
        _ => None,
    }
}

fn parse_ok(text: &str) -> UpstreamConfig {
    match parse(text, Path::new(ORIGIN), &env) {
        Ok(config) => config,
        Err(err) => panic!("{text}\nshould parse, got: {err}"),
    }
}

fn parse_err(text: &str) -> String {
    match parse(text, Path::new(ORIGIN), &env) {
        Ok(config) => panic!("{text}\nshould fail, got: {config:?}"),
        Err(err) => err.to_string(),
    }
}

fn only_server(text: &str) -> ServerConfig {
    let config = parse_ok(text);
    assert_eq!(config.skipped, [], "nothing should be skipped");
    let [server] = <[ServerConfig; 1]>::try_from(config.servers)
        .unwrap_or_else(|servers| panic!("expected one server, got {servers:?}"));
    server
}

fn only_skip_reason(text: &str) -> String {
    let config = parse_ok(text);
    assert_eq!(config.servers, [], "nothing should be usable");
    let [skipped] = <[SkippedServer; 1]>::try_from(config.skipped)
        .unwrap_or_else(|skipped| panic!("expected one skipped, got {skipped:?}"));
    skipped.reason
}

fn stdio(command: &str, args: &[&str]) -> Transport {
    Transport::Stdio {
        command: command.to_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: BTreeMap::new(),
        cwd: None,
    }
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

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

#[test]
fn both_sections_merge_sorted() {
    let config = parse_ok(
        r#"{"mcpServers": {"zeta": {"command": "z"}, "alpha": {"command": "a"}},
            "mcp": {"mid": {"type": "remote", "url": "http://m"}}}"#,
    );
    let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["alpha", "mid", "zeta"]);
    assert_eq!(config.path.as_deref(), Some(Path::new(ORIGIN)));
}

#[test]
fn duplicate_name_across_sections_is_an_error() {
    let err = parse_err(
        "{\"mcpServers\": {\"gh\": {\"command\": \"a\"}},\n \"mcp\": {\"gh\": {\"command\": [\"b\"]}}}",
    );
    assert_eq!(err, format!("{ORIGIN}:2:13: duplicate server name \"gh\""));
}

#[test]
fn duplicate_name_within_a_section_is_an_error() {
    let err = parse_err(r#"{"mcpServers": {"gh": {"command": "a"}, "gh": {"command": "b"}}}"#);
    assert!(err.contains("duplicate server name \"gh\""), "{err}");
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

// --- whole-file errors -------------------------------------------------

#[test]
fn syntax_error_names_file_line_and_column() {
    let text = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n    \"b\": {}\n  }\n}";
    let err = parse_err(text);
    assert_eq!(err, format!("{ORIGIN}:4:5: expected `,` or `}}`"));
}

#[test]
fn positions_count_the_comments_that_were_blanked() {
    let text = "// header\n/* block\n   comment */ {\"mcpServers\": {\"a\": {\"command\": x}}}";
    let err = parse_err(text);
    assert_eq!(err, format!("{ORIGIN}:3:48: expected value"));
}

#[test]
fn comments_and_trailing_commas_are_accepted() {
    let server = only_server(
        r#"{
            // opencode writes JSONC
            "mcp": {
                /* the file server */
                "fs": {"type": "local", "command": ["srv", "--root=/tmp",],},
            },
        }"#,
    );
    assert_eq!(server.transport, stdio("srv", &["--root=/tmp"]));
}

#[test]
fn top_level_must_be_an_object() {
    let err = parse_err("[1, 2]");
    assert_eq!(
        err,
        format!(
            "{ORIGIN}:1:1: invalid type: sequence, expected a JSON object with an \"mcpServers\" or \"mcp\" key"
        )
    );
}

#[test]
fn sections_must_be_objects() {
    let err = parse_err(r#"{"mcp": ["fs"]}"#);
    assert!(
        err.contains("expected \"mcp\" to be an object mapping server names"),
        "{err}"
    );
    assert!(err.starts_with(&format!("{ORIGIN}:1:")), "{err}");
}

#[test]
fn object_without_either_key_is_an_error() {
    let err = parse_err(r#"{"servers": {"a": {"command": "x"}}}"#);
    assert!(err.contains("found neither \"mcpServers\""), "{err}");
}

#[test]
fn empty_object_and_empty_sections_are_fine() {
    assert_eq!(parse_ok("{}").servers, []);
    assert_eq!(parse_ok(r#"{"mcpServers": {}, "mcp": {}}"#).servers, []);
}

#[test]
fn empty_file_is_an_error() {
    let err = parse_err("  // nothing here\n");
    assert_eq!(
        err,
        format!("{ORIGIN}: the file is empty; expected {{\"mcpServers\": {{...}}}}")
    );
}

#[test]
fn trailing_garbage_is_an_error() {
    let err = parse_err("{} {}");
    assert_eq!(err, format!("{ORIGIN}:1:4: trailing characters"));
}

#[test]
fn debug_output_hides_secrets() {
    let server = only_server(
        r#"{"mcpServers": {"a": {"url": "https://x", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}}}"#,
    );
    let shown = format!("{server:?}");
    assert!(!shown.contains("ghp_x"), "{shown}");
    assert!(shown.contains("Authorization"), "{shown}");
}

// --- locating and loading the file ----------------------------------------

fn lookup<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<PathBuf> + 'a {
    move |name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| PathBuf::from(v))
    }
}

#[test]
fn path_resolution_order() {
    let all = [
        ("CODEMCP_CONFIG", "/env/mcp.json"),
        ("XDG_CONFIG_HOME", "/xdg"),
        ("HOME", "/home/u"),
    ];
    let flag = resolve_path_with(Some(Path::new("cli.json")), &lookup(&all));
    assert_eq!(
        flag,
        ConfigPath::Explicit {
            path: PathBuf::from("cli.json"),
            from: ConfigSource::Flag
        }
    );
    let env_var = resolve_path_with(None, &lookup(&all));
    assert_eq!(
        env_var,
        ConfigPath::Explicit {
            path: PathBuf::from("/env/mcp.json"),
            from: ConfigSource::Env
        }
    );
    let xdg = resolve_path_with(None, &lookup(&all[1..]));
    assert_eq!(
        xdg,
        ConfigPath::Default(PathBuf::from("/xdg/codemcp/mcp.json"))
    );
    let home = resolve_path_with(None, &lookup(&all[2..]));
    assert_eq!(
        home,
        ConfigPath::Default(PathBuf::from("/home/u/.config/codemcp/mcp.json"))
    );
    assert!(!home.is_explicit());
    assert_eq!(
        resolve_path_with(None, &lookup(&[])),
        ConfigPath::Unavailable
    );
}

#[test]
fn empty_or_relative_variables_are_ignored() {
    let vars = [
        ("CODEMCP_CONFIG", ""),
        ("XDG_CONFIG_HOME", "relative/dir"),
        ("HOME", "/home/u"),
    ];
    assert_eq!(
        resolve_path_with(None, &lookup(&vars)),
        ConfigPath::Default(PathBuf::from("/home/u/.config/codemcp/mcp.json"))
    );
}

#[test]
fn missing_default_file_is_an_empty_config() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = ConfigPath::Default(dir.path().join("mcp.json"));
    let config = load(&path).expect("a missing default file is fine");
    assert_eq!(config, UpstreamConfig::default());
    assert_eq!(
        load(&ConfigPath::Unavailable).ok(),
        Some(UpstreamConfig::default())
    );
}

#[test]
fn missing_explicit_file_is_an_error() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let missing = dir.path().join("nope.json");
    let path = ConfigPath::Explicit {
        path: missing.clone(),
        from: ConfigSource::Flag,
    };
    let err = load(&path).expect_err("an explicit file must exist");
    assert_eq!(
        err.to_string(),
        format!(
            "config file {} does not exist (named by --config)",
            missing.display()
        )
    );
}

#[test]
fn load_reads_the_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("mcp.json");
    std::fs::write(&file, r#"{"mcpServers": {"a": {"command": "x"}}}"#)
        .expect("writing the fixture");
    let config = load(&ConfigPath::Default(file.clone())).expect("a valid file");
    assert_eq!(config.path, Some(file));
    assert_eq!(config.servers.len(), 1);
}

#[test]
fn a_directory_fifo_or_huge_file_is_refused_unread() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let err = load(&ConfigPath::Default(dir.path().to_owned())).expect_err("not a file");
    assert!(err.to_string().contains("not a regular file"), "{err}");
    // A FIFO with no writer would block a plain read forever.
    let fifo = dir.path().join("fifo.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let err = load(&ConfigPath::Default(fifo)).expect_err("a FIFO");
    assert!(err.to_string().contains("not a regular file"), "{err}");
    let huge = dir.path().join("huge.json");
    let file = std::fs::File::create(&huge).expect("create");
    file.set_len(super::super::CONFIG_FILE.max_bytes + 1)
        .expect("set_len");
    let err = load(&ConfigPath::Default(huge)).expect_err("too large");
    assert!(err.to_string().contains("more than the"), "{err}");
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
