//! House rules that nothing else checks: source files stay under the size a
//! reader can hold, and the settings page lists exactly the settings clap
//! knows (the page is what operators read; `--help` is what the binary does),
//! and the rooms of the gateway import each other in no circle.
#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 700;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`; test modules kept in their own files
/// (`tests.rs`, anything under a `tests/` folder) only `with_tests`.
fn sources(dir: &Path, with_tests: bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let test = name == "tests" || name == "tests.rs";
        if test && !with_tests {
            continue;
        }
        if path.is_dir() {
            if name != "target" {
                sources(&path, with_tests, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Test files too: a test file is read and changed as often as the code it
/// tests.
#[test]
fn no_source_file_passes_700_lines() {
    let mut files = Vec::new();
    for dir in ["src", "crates", "tests"] {
        sources(&repo().join(dir), true, &mut files);
    }
    assert!(files.len() > 50, "found the sources ({})", files.len());
    let too_long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).ok()?.lines().count();
            (lines > MAX_LINES).then(|| format!("{} ({lines} lines)", f.display()))
        })
        .collect();
    assert!(
        too_long.is_empty(),
        "split these by responsibility (limit {MAX_LINES} lines): {too_long:?}"
    );
}

/// `CODEMCP_*` names in `text`.
fn variables(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("CODEMCP_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        found.insert(tail[..end].trim_end_matches('_').to_owned());
        rest = &tail[end..];
    }
    found
}

#[test]
fn settings_page_lists_exactly_the_settings_clap_knows() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_codemcp"))
        .arg("--help")
        .output()
        .expect("codemcp --help runs");
    let help = String::from_utf8_lossy(&help.stdout);
    let in_help: BTreeSet<String> = help
        .split("[env: ")
        .skip(1)
        .filter_map(|s| s.split(['=', ']']).next())
        .map(str::to_owned)
        .collect();
    assert!(in_help.len() > 30, "clap lists the settings: {in_help:?}");
    let page = std::fs::read_to_string(repo().join("docs/settings.md")).expect("docs/settings.md");
    let rows: BTreeSet<String> = page
        .lines()
        .filter(|l| l.starts_with("| `CODEMCP_"))
        .flat_map(variables)
        .collect();
    let missing: Vec<_> = in_help.difference(&rows).collect();
    assert!(
        missing.is_empty(),
        "docs/settings.md lacks rows for {missing:?}"
    );
    // CODEMCP_LOG is read by the logger before clap runs, and CODEMCP_CONFIG
    // by the config loader (its flag is --config): neither is a clap env.
    let unknown: Vec<_> = rows
        .difference(&in_help)
        .filter(|v| *v != "CODEMCP_LOG" && *v != "CODEMCP_CONFIG")
        .collect();
    assert!(
        unknown.is_empty(),
        "docs/settings.md names settings clap does not know: {unknown:?}"
    );
}

/// Every default the settings page states is the binary's own (`--help`'s
/// `[default: …]`), so no documented number drifts from the one kept. Sizes
/// compare without spaces (`1 MiB` is clap's `1MiB`); settings whose default
/// clap does not print (derived ones) are left to their own tests.
#[test]
fn settings_page_defaults_are_the_binarys() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_codemcp"))
        .arg("--help")
        .output()
        .expect("codemcp --help runs");
    let help = String::from_utf8_lossy(&help.stdout);
    let page = std::fs::read_to_string(repo().join("docs/settings.md")).expect("docs/settings.md");
    let mut checked = 0;
    for row in page.lines().filter(|l| l.starts_with("| `CODEMCP_")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (name, stated) = (cells[1].trim_matches('`'), cells[2]);
        let Some(after) = help.split(&format!("[env: {name}=]")).nth(1) else {
            continue;
        };
        let Some(default) = after
            .trim_start()
            .strip_prefix("[default: ")
            .and_then(|d| d.split(']').next())
        else {
            continue;
        };
        let plain = |s: &str| s.replace(['`', ' '], "").to_lowercase();
        assert_eq!(
            plain(stated),
            plain(default),
            "docs/settings.md says {name} defaults to {stated}; the binary: {default}"
        );
        checked += 1;
    }
    assert!(checked > 40, "compared {checked} defaults");
}

/// The workspace's crates from the ground floor up: a crate may depend only
/// on crates of a lower layer, and none on the gateway (`codemcp`), so an
/// upward import is a compile error. A new crate gets its layer here.
const LAYERS: &[(&str, u8)] = &[
    ("codemcp-base", 0),
    ("codemcp-sdk", 1),
    ("codemcp-store", 1),
    ("codemcp-image", 1),
    ("codemcp-snippet", 2),
    ("codemcp-exec", 3),
];

fn layer(name: &str) -> Option<u8> {
    LAYERS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

#[test]
fn crates_depend_only_downwards_and_never_on_the_gateway() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for entry in std::fs::read_dir(repo().join("crates")).expect("crates/ exists") {
        let manifest = entry.expect("a crates/ entry").path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let table: toml::Table = text.parse().expect("a crate manifest parses");
        let name = table["package"]["name"].as_str().expect("a package name");
        let Some(own) = layer(name) else {
            wrong.push(format!("{name} has no layer in LAYERS"));
            continue;
        };
        checked += 1;
        for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
            let Some(deps) = table.get(section).and_then(toml::Value::as_table) else {
                continue;
            };
            for dep in deps.keys().filter(|d| d.starts_with("codemcp")) {
                match layer(dep) {
                    Some(theirs) if theirs < own => {}
                    _ => wrong.push(format!("{name} ({section}) depends on {dep}")),
                }
            }
        }
    }
    assert!(checked >= 3, "found the crates ({checked})");
    assert!(wrong.is_empty(), "imports must run downwards: {wrong:?}");
}

/// The rooms of the gateway (`src/`'s folders and files) that `file` names
/// through `crate::`: in code, not comments, and not in test modules.
fn rooms_named(file: &Path, rooms: &BTreeSet<String>) -> BTreeSet<String> {
    let text = std::fs::read_to_string(file).expect("a source file reads");
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let mut named = BTreeSet::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (at, _) in line.match_indices("crate::") {
            let after = &line[at + "crate::".len()..];
            // `crate::{a, b::c}` names every room in the braces.
            let names: Vec<&str> = match after.strip_prefix('{') {
                Some(group) => group
                    .split([',', '}'])
                    .map(|part| part.trim().split("::").next().unwrap_or_default())
                    .collect(),
                None => vec![after.split("::").next().unwrap_or_default()],
            };
            let names = names
                .into_iter()
                .map(|n| n.trim_end_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_')));
            named.extend(names.filter(|n| rooms.contains(*n)).map(str::to_owned));
        }
    }
    named
}

/// A circle in `graph`, if there is one, as the rooms it runs through.
fn circle(graph: &std::collections::BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        room: &str,
        graph: &std::collections::BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|r| r == room) {
            let mut found = path[at..].to_vec();
            found.push(room.to_owned());
            return Some(found);
        }
        if done.contains(room) {
            return None;
        }
        path.push(room.to_owned());
        for next in graph.get(room).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(room.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|room| visit(room, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_gateways_rooms_import_each_other_in_no_circle() {
    let src = repo().join("src");
    let room_of = |path: &Path| -> String {
        let first = path
            .strip_prefix(&src)
            .expect("under src/")
            .components()
            .next();
        let name = first.expect("a path").as_os_str().to_string_lossy();
        name.trim_end_matches(".rs").to_owned()
    };
    let mut files = Vec::new();
    sources(&src, false, &mut files);
    let rooms: BTreeSet<String> = files
        .iter()
        .map(|f| room_of(f))
        .filter(|r| r != "lib" && r != "main")
        .collect();
    assert!(rooms.len() > 5, "found the rooms ({rooms:?})");
    let mut graph: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for file in &files {
        let room = room_of(file);
        let named = rooms_named(file, &rooms);
        graph
            .entry(room.clone())
            .or_default()
            .extend(named.into_iter().filter(|r| *r != room));
    }
    assert!(
        circle(&graph).is_none(),
        "rooms of src/ import each other in a circle: {:?}; graph: {graph:?}",
        circle(&graph)
    );
}
