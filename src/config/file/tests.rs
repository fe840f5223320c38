//! Unit tests for the config file reader: the file as a whole, and finding
//! and loading it. Judging single entries is tested in `entries`.

use super::*;

mod entries;

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

// --- both sections ----------------------------------------------------

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
