//! `codemcp import` and `codemcp install` on a temporary HOME holding the
//! config files of all eight clients, written as those clients write them
//! (tests/import/: comments where the format allows them, environment
//! references in each client's syntax, remote entries, a name used by three
//! clients for three different servers, a server that is codemcp itself).
//! The real binary runs with HOME pointing there; nothing connects anywhere.

#![cfg(unix)]
#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use std::path::{Path, PathBuf};
use std::process::Output;

use codemcp::config::{self, ConfigPath, ConfigSource, Transport};
use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/import");

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_codemcp"))
}

/// Where each fixture goes under HOME (the Linux locations).
const PLACES: [(&str, &str); 8] = [
    (
        "claude_desktop_config.json",
        ".config/Claude/claude_desktop_config.json",
    ),
    ("claude.json", ".claude.json"),
    ("cursor_mcp.json", ".cursor/mcp.json"),
    ("vscode_mcp.json", ".config/Code/User/mcp.json"),
    ("opencode.jsonc", ".config/opencode/opencode.jsonc"),
    ("codex_config.toml", ".codex/config.toml"),
    (
        "windsurf_mcp_config.json",
        ".codeium/windsurf/mcp_config.json",
    ),
    ("gemini_settings.json", ".gemini/settings.json"),
];

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    /// A HOME with every client's file, and a `bin/codemcp` symlink to the
    /// binary under test on PATH.
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for (fixture, place) in PLACES {
            let text = std::fs::read_to_string(Path::new(FIXTURES).join(fixture)).expect("fixture");
            let text = text.replace("@CODEMCP@", &bin().to_string_lossy());
            let path = dir.path().join(place);
            std::fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
            std::fs::write(path, text).expect("write fixture");
        }
        std::fs::create_dir(dir.path().join("bin")).expect("mkdir bin");
        std::os::unix::fs::symlink(bin(), dir.path().join("bin/codemcp")).expect("symlink");
        Self { dir }
    }

    fn path(&self, place: &str) -> PathBuf {
        self.dir.path().join(place)
    }

    fn config(&self) -> PathBuf {
        self.path(".config/codemcp/mcp.json")
    }

    fn run(&self, args: &[&str]) -> Output {
        let path = format!(
            "{}:{}",
            self.path("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        std::process::Command::new(bin())
            .args(args)
            .env("HOME", self.dir.path())
            .env("PATH", path)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("APPDATA")
            .env_remove("CODEX_HOME")
            .env_remove("CODEMCP_CONFIG")
            .env("CODEMCP_FALLBACK", "none")
            .output()
            .expect("codemcp runs")
    }

    /// Runs and expects success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "codemcp {args:?} failed\nstdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }
}

fn line_of<'a>(stdout: &'a str, needle: &str) -> &'a str {
    stdout
        .lines()
        .find(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{stdout}"))
}

#[test]
fn import_shows_what_it_would_add_from_every_client_and_writes_nothing() {
    let home = Home::new();
    let out = home.ok(&["import"]);
    for (_, place) in PLACES {
        assert!(
            out.contains(&home.path(place).display().to_string()),
            "{place} not listed:\n{out}"
        );
    }
    // Three clients, three different "github" servers: each gets its client's name.
    assert!(line_of(&out, "+ github_claude_desktop").contains("docker run"));
    assert!(line_of(&out, "+ github_cursor").contains("Authorization=Bearer ${GITHUB_TOKEN}"));
    let vscode = line_of(&out, "+ github_vscode");
    assert!(
        vscode.contains("Authorization=Bearer ${GITHUB_PAT}"),
        "{vscode}"
    );
    assert!(
        out.contains("${input:github_pat} (a VS Code prompt) becomes ${GITHUB_PAT}"),
        "{out}"
    );
    // A literal value (often a secret) is not printed.
    assert!(
        line_of(&out, "+ github_claude_desktop").contains("GITHUB_PERSONAL_ACCESS_TOKEN=<literal>")
    );
    assert!(!out.contains("ghp_literalSecretFromDesktop"), "{out}");
    // References stay references, each in codemcp's syntax.
    assert!(line_of(&out, "+ sentry").contains("Bearer ${SENTRY_TOKEN}"));
    assert!(line_of(&out, "+ context7").contains("CONTEXT7_API_KEY={env:CONTEXT7_API_KEY}"));
    assert!(line_of(&out, "+ everything").contains("(disabled)"));
    assert!(line_of(&out, "+ linear").contains("Authorization=Bearer ${LINEAR_TOKEN}"));
    assert!(line_of(&out, "+ zapier").contains("X-Zapier-Key=${ZAPIER_KEY}"));
    assert!(line_of(&out, "+ pythonTools").contains("API_KEY=${MY_API_TOKEN}"));
    assert!(line_of(&out, "+ playwright").contains("npx @playwright/mcp@latest"));
    assert!(line_of(&out, "+ docs").contains("DOCS_API_KEY=<literal>"));
    // Identical entries once; unusable ones say why; per-project ones are named.
    assert!(line_of(&out, "= filesystem").contains("same as claude-desktop's \"filesystem\""));
    assert!(line_of(&out, "! legacy").contains("SSE transport is not supported"));
    assert!(
        line_of(&out, "per-project servers are left out").contains("/home/user/shop (postgres)")
    );
    assert!(line_of(&out, "12 to add").contains("--write"), "{out}");
    assert!(!home.config().exists(), "a dry run wrote the config");
}

#[test]
fn a_server_entry_that_launches_codemcp_itself_is_skipped() {
    let home = Home::new();
    // At import: by its path (Claude Code) and as `codemcp` on PATH (Windsurf).
    let out = home.ok(&["import"]);
    assert!(
        line_of(&out, "- itself").contains("launches codemcp itself"),
        "{out}"
    );
    assert!(
        line_of(&out, "- on-path").contains("launches codemcp itself"),
        "{out}"
    );
    // At start: a config that names codemcp both ways loads with both skipped.
    let config = home.path("self.json");
    let text = serde_json::json!({"mcpServers": {
        "me": {"command": bin()},
        "me_on_path": {"command": "codemcp", "args": ["serve"]},
    }});
    std::fs::write(&config, text.to_string()).expect("write");
    let out = home.ok(&["--config", &config.to_string_lossy(), "check"]);
    assert!(
        line_of(&out, "  me   ").contains("skipped    launches codemcp itself"),
        "{out}"
    );
    assert!(
        line_of(&out, "me_on_path").contains("skipped    launches codemcp itself"),
        "{out}"
    );
}

#[test]
fn import_write_creates_a_config_that_codemcp_loads_with_references_intact() {
    let home = Home::new();
    let out = home.ok(&["import", "--write"]);
    assert!(out.contains("added 12 servers"), "{out}");
    let text = std::fs::read_to_string(home.config()).expect("written");
    let written: Value = serde_json::from_str(&text).expect("plain JSON");
    let servers = written["mcpServers"].as_object().expect("mcpServers");
    assert_eq!(servers.len(), 12, "{text}");
    // Literal values stay what they were; references are written as references.
    assert_eq!(
        servers["github_claude_desktop"]["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"],
        "ghp_literalSecretFromDesktop"
    );
    assert_eq!(
        servers["github_vscode"]["headers"]["Authorization"],
        "Bearer ${GITHUB_PAT}"
    );
    assert_eq!(servers["everything"]["disabled"], true);
    assert_eq!(servers["pythonTools"]["cwd"], "/srv/tools");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.config())
            .expect("stat")
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "a new config may hold secrets: {mode:o}");
    }
    // codemcp's own loader reads it, expanding the references only now.
    let env = |name: &str| Some(format!("<{name}>"));
    let loaded = config::parse(&text, &home.config(), &env).expect("loads");
    let names: Vec<&str> = loaded.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(loaded.servers.len(), 11, "{names:?} / {:?}", loaded.skipped);
    assert_eq!(loaded.skipped[0].reason, "disabled");
    let github = loaded
        .servers
        .iter()
        .find(|s| s.name == "github_cursor")
        .expect("github_cursor");
    let Transport::Http { headers, .. } = &github.transport else {
        panic!("github_cursor is remote: {github:?}");
    };
    assert_eq!(headers["Authorization"], "Bearer <GITHUB_TOKEN>");
    // A second import finds everything in place.
    let again = home.ok(&["import", "--write"]);
    assert!(again.contains("nothing to add"), "{again}");
    assert!(line_of(&again, "= sentry").contains("already in codemcp's config as \"sentry\""));
}

#[test]
fn comments_of_an_existing_codemcp_config_survive_import() {
    let home = Home::new();
    let original = "{\n  // my own servers, by hand\n  \"mcpServers\": {\n    /* the same as Claude Desktop's */\n    \"filesystem\": {\n      \"command\": \"npx\",\n      \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/home/user/Desktop\"]\n    },\n    \"sentry\": {\"command\": \"sentry-mcp\"}, // a different sentry\n  },\n}\n";
    std::fs::create_dir_all(home.config().parent().expect("parent")).expect("mkdir");
    std::fs::write(home.config(), original).expect("write");
    let out = home.ok(&["import", "--from", "claude-code", "--write"]);
    assert!(
        line_of(&out, "+ sentry_claude_code").contains("https://mcp.sentry.dev/mcp"),
        "{out}"
    );
    let text = std::fs::read_to_string(home.config()).expect("read");
    for kept in [
        "  // my own servers, by hand\n",
        "    /* the same as Claude Desktop's */\n",
        "    \"sentry\": {\"command\": \"sentry-mcp\"}, // a different sentry\n",
    ] {
        assert!(text.contains(kept), "lost {kept:?}:\n{text}");
    }
    let backup = home.path(".config/codemcp/mcp.json.codemcp-backup");
    assert_eq!(std::fs::read_to_string(backup).expect("backup"), original);
    let loaded = config::parse(&text, &home.config(), &|_| Some("x".into())).expect("loads");
    let names: Vec<&str> = loaded.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["filesystem", "sentry", "sentry_claude_code"]);
    // From Claude Desktop, filesystem is already there and github is new.
    let out = home.ok(&["import", "--from", "claude-desktop"]);
    assert!(
        line_of(&out, "= filesystem").contains("already in codemcp's config"),
        "{out}"
    );
    assert!(line_of(&out, "+ github ").contains("docker run"), "{out}");
}

#[test]
fn install_refuses_until_imported_and_undo_restores_every_client_byte_for_byte() {
    let home = Home::new();
    let refused = home.run(&["install", "cursor"]);
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(
        message.contains("codemcp import --from cursor --write"),
        "{message}"
    );
    assert!(message.contains("github"), "{message}");
    home.ok(&["import", "--write"]);
    // Gemini's SSE server cannot move into codemcp, so Gemini stays as it is.
    let refused = home.run(&["install", "gemini"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("legacy (codemcp cannot run it"));
    assert!(!home.path(".gemini/settings.json.codemcp-backup").exists());
    let exe = bin().canonicalize().expect("canonical");
    for (client, (_, place)) in codemcp::clients::Client::ALL.iter().zip(PLACES) {
        if *client == codemcp::clients::Client::Gemini {
            continue;
        }
        let path = home.path(place);
        let before = std::fs::read(&path).expect("read");
        let out = home.ok(&["install", client.name()]);
        assert!(out.contains("codemcp install"), "{out}");
        let text = std::fs::read_to_string(&path).expect("read");
        let listing = client.read(&text).expect("the client can still read it");
        let names: Vec<&str> = listing.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["codemcp"], "{client:?}:\n{text}");
        let server = listing.entries[0].server.clone().expect("usable");
        let Transport::Stdio { command, .. } = &server.transport else {
            panic!("{client:?}: {server:?}");
        };
        // On PATH (bin/codemcp) it is the same binary: the entry says `codemcp`.
        assert_eq!(command, "codemcp", "{client:?}");
        let again = home.run(&["install", client.name()]);
        assert!(
            !again.status.success(),
            "{client:?}: a second install would lose the backup"
        );
        home.ok(&["install", client.name(), "--undo"]);
        assert_eq!(
            std::fs::read(&path).expect("read"),
            before,
            "{client:?} not restored"
        );
        assert!(!home.path(&format!("{place}.codemcp-backup")).exists());
    }
    assert!(exe.exists());
    // Unrelated settings and comments survive the install itself.
    home.ok(&["install", "codex"]);
    let codex = std::fs::read_to_string(home.path(".codex/config.toml")).expect("read");
    assert!(
        codex.starts_with("# Codex settings\nmodel = \"gpt-5-codex\""),
        "{codex}"
    );
    // Codex passes a server only the variables it names; codemcp needs these.
    let table: toml::Table = toml::from_str(&codex).expect("TOML");
    let env_vars = table["mcp_servers"]["codemcp"]["env_vars"]
        .as_array()
        .expect("a list");
    for var in ["GITHUB_PAT", "LINEAR_TOKEN", "SENTRY_TOKEN", "ZAPIER_KEY"] {
        assert!(
            env_vars.iter().any(|v| v.as_str() == Some(var)),
            "{var}: {codex}"
        );
    }
    let undo = home.run(&["install", "cursor", "--undo"]);
    assert!(String::from_utf8_lossy(&undo.stderr).contains("nothing to undo"));
}

#[test]
fn install_names_the_config_it_was_given() {
    let home = Home::new();
    let config = home.path("elsewhere.json");
    home.ok(&[
        "--config",
        &config.to_string_lossy(),
        "import",
        "--from",
        "cursor",
        "--write",
    ]);
    home.ok(&["--config", &config.to_string_lossy(), "install", "cursor"]);
    let text = std::fs::read_to_string(home.path(".cursor/mcp.json")).expect("read");
    let value: Value = serde_json::from_str(&text).expect("json");
    let args = &value["mcpServers"]["codemcp"]["args"];
    assert_eq!(
        args,
        &serde_json::json!(["--config", config.to_string_lossy(), "serve"])
    );
    let loaded = config::load(&ConfigPath::Explicit {
        path: config,
        from: ConfigSource::Flag,
    });
    assert!(loaded.is_ok(), "{loaded:?}");
}

#[test]
fn a_broken_client_file_is_named_and_the_others_are_still_read() {
    let home = Home::new();
    std::fs::write(
        home.path(".cursor/mcp.json"),
        "{\"mcpServers\": {\"github\": ",
    )
    .expect("write");
    let out = home.ok(&["import"]);
    let line = line_of(&out, "cursor ");
    assert!(
        line.contains("skipped") && line.contains(".cursor/mcp.json"),
        "{line}"
    );
    assert!(out.contains("+ sentry"), "{out}");
    let refused = home.run(&["import", "--from", "cursor"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains(".cursor/mcp.json"));
}

#[test]
fn install_follows_a_symlinked_client_file_and_undo_leaves_the_link() {
    let home = Home::new();
    home.ok(&["import", "--write"]);
    let link = home.path(".cursor/mcp.json");
    let target = home.path("dotfiles/cursor.json");
    std::fs::create_dir(home.path("dotfiles")).expect("mkdir");
    std::fs::rename(&link, &target).expect("move");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let before = std::fs::read(&target).expect("read");
    home.ok(&["install", "cursor"]);
    assert!(
        link.symlink_metadata()
            .expect("stat")
            .file_type()
            .is_symlink()
    );
    assert_ne!(std::fs::read(&target).expect("read"), before);
    home.ok(&["install", "cursor", "--undo"]);
    assert!(
        link.symlink_metadata()
            .expect("stat")
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(&target).expect("read"), before);
}

/// Runs `codemcp import` with `args` under a 4 GB address-space limit (so a
/// file read without bound fails instead of taking the machine's memory),
/// killed after `limit`; returns the output and how long it ran.
fn run_bounded(
    home: &Home,
    args: &[&str],
    limit: std::time::Duration,
) -> (Output, std::time::Duration) {
    use std::process::Stdio;
    let started = std::time::Instant::now();
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 4000000; exec \"$0\" \"$@\"")
        .arg(bin())
        .args(args)
        .env("HOME", home.dir.path())
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEMCP_CONFIG")
        .env("CODEMCP_FALLBACK", "none")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("codemcp runs");
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut { stdout }, &mut text).map(|_| text)
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > limit {
            child.kill().expect("kill");
            break child.wait().expect("wait");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let elapsed = started.elapsed();
    let mut stderr = Vec::new();
    std::io::Read::read_to_end(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("read");
    let stdout = reader.join().expect("reader").expect("read");
    (
        Output {
            status,
            stdout,
            stderr,
        },
        elapsed,
    )
}

/// A client file of `n` stdio servers named `srvN`.
fn many_servers(n: usize) -> String {
    let servers: serde_json::Map<String, Value> = (0..n)
        .map(|i| {
            (
                format!("srv{i}"),
                serde_json::json!({"command": format!("/usr/bin/tool{i}"), "args": ["--x"]}),
            )
        })
        .collect();
    serde_json::json!({ "mcpServers": servers }).to_string()
}

#[test]
fn import_config_symlinked_to_dev_zero_is_refused() {
    let home = Home::new();
    let cursor = home.path(".cursor/mcp.json");
    std::fs::remove_file(&cursor).expect("rm");
    std::os::unix::fs::symlink("/dev/zero", &cursor).expect("symlink");
    let (out, _) = run_bounded(
        &home,
        &["import", "--from", "cursor"],
        std::time::Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("a character device, not a regular file"),
        "{stderr}"
    );
    // Without --from the other clients are still read.
    let all = home.ok(&["import"]);
    assert!(line_of(&all, "cursor").contains("skipped"), "{all}");
}

#[test]
fn import_of_40000_entries_is_linear() {
    let home = Home::new();
    std::fs::write(home.path(".claude.json"), many_servers(40_000)).expect("write");
    std::fs::create_dir_all(home.config().parent().expect("parent")).expect("mkdir");
    std::fs::write(
        home.config(),
        "{\n  // mine\n  \"mcpServers\": {\"a\": {\"command\": \"x\"}},\n}\n",
    )
    .expect("write");
    let limit = std::time::Duration::from_secs(60);
    let (out, took) = run_bounded(
        &home,
        &["import", "--from", "claude-code", "--write"],
        limit,
    );
    println!("import of 40000 entries with --write: {took:?}");
    assert!(
        out.status.success(),
        "took {took:?} (limit {limit:?}); stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(home.config()).expect("read");
    assert!(text.contains("  // mine\n"), "comment kept");
    let loaded = config::parse(&text, &home.config(), &|_| None).expect("loads");
    assert_eq!(loaded.servers.len(), 40_001);
}

#[test]
fn import_escapes_control_characters_in_entry_names() {
    let home = Home::new();
    let evil = "evil\u{1b}[2J\u{1b}[1A\nfake line\u{202e}gnp.exe";
    let file = serde_json::json!({"mcpServers": {evil: {"command": "tool\u{7}"}}});
    std::fs::write(home.path(".cursor/mcp.json"), file.to_string()).expect("write");
    let out = home.ok(&["import", "--from", "cursor"]);
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{202e}') && !out.contains('\u{7}'),
        "{out:?}"
    );
    assert!(!out.contains("\nfake line"), "{out}");
    assert!(
        out.contains("evil\\u{1b}[2J\\u{1b}[1A\\u{a}fake line\\u{202e}gnp.exe"),
        "{out}"
    );
}

/// An edit made to codemcp's config while import was running (after it read
/// the file, before it wrote) is not overwritten: import refuses.
#[test]
fn import_write_refuses_a_file_changed_since_read() {
    use std::io::BufRead;
    let home = Home::new();
    // Enough entries that what import prints fills the pipe we stop reading:
    // it then waits between reading the config and writing it.
    std::fs::write(home.path(".cursor/mcp.json"), many_servers(3_000)).expect("write");
    std::fs::create_dir_all(home.config().parent().expect("parent")).expect("mkdir");
    std::fs::write(home.config(), "{\"mcpServers\": {}}\n").expect("write");
    let mut child = std::process::Command::new(bin())
        .args(["import", "--from", "cursor", "--write"])
        .env("HOME", home.dir.path())
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEMCP_CONFIG")
        .env("CODEMCP_FALLBACK", "none")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("codemcp runs");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    while !line.starts_with("codemcp config:") {
        line.clear();
        assert!(
            stdout.read_line(&mut line).expect("read") > 0,
            "no config line"
        );
    }
    // The config was read; another program edits it now.
    let theirs = "{\"mcpServers\": {\"theirs\": {\"command\": \"their-tool\"}}}\n";
    std::fs::write(home.config(), theirs).expect("edit");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("read");
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "import wrote over the edit");
    assert!(stderr.contains("changed since import read it"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(home.config()).expect("read"),
        theirs
    );
}
