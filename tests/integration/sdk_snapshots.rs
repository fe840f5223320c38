//! What the model sees of the real peers' catalogs: the `execute_python` description (at the
//! default budget and at a small one), the `sdk.pyi` stub, and a few `search_tools` answers,
//! for the peers the other tests run (server-everything, -filesystem and -memory, and our own
//! `odd_server.py` and `broken_server.py`), pinned as `insta` snapshots in `tests/snapshots/`.
//!
//! Also generated catalogs (`sdk_snapshots/synthetic.rs`: 1, 2, 5 and 36 tools, 36 servers
//! with 624 tools, 100 servers with 1,000 tools) as a client that keeps 2,048 characters
//! shows them, and what must be within those characters at every size.
//!
//! A change in what the model sees fails here and shows up in review as a diff of those files.
//! To accept an intended change: `cargo insta review` (from `cargo install cargo-insta`), or
//! rerun with `INSTA_UPDATE=always` and read `git diff tests/snapshots/`. With `CI=true` insta
//! writes nothing and a mismatch fails.
//!
//! The peers are listed as the gateway lists them (see `support::peers`).

#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use crate::support;

use std::sync::OnceLock;

use codemcp_sdk::Sdk;

/// `CODEMCP_DESCRIPTION_BUDGET`'s default.
const DEFAULT_BUDGET: usize = 2_048;
/// Small enough that the texts shrink.
const SMALL_BUDGET: usize = 1_600;
/// Enough for every peer's signature.
const LARGE_BUDGET: usize = 8_000;

/// The SDK over every peer, built once for all the tests here.
fn sdk() -> &'static Sdk {
    static SDK: OnceLock<Sdk> = OnceLock::new();
    SDK.get_or_init(|| Sdk::build(&support::peers::catalog()))
}

#[test]
fn description_at_the_default_budget() {
    insta::assert_snapshot!(sdk().description(DEFAULT_BUDGET));
}

#[test]
fn description_at_a_large_budget() {
    insta::assert_snapshot!(sdk().description(LARGE_BUDGET));
}

#[test]
fn description_at_a_small_budget() {
    insta::assert_snapshot!(sdk().description(SMALL_BUDGET));
}

#[test]
fn stub() {
    insta::assert_snapshot!(sdk().stub());
}

#[test]
fn search_answers() {
    let queries = [
        "add two numbers",
        "read a file",
        "create entities in the knowledge graph",
        "send an email",
        "long running operation with progress",
        "",
    ];
    let answers: Vec<String> = queries
        .iter()
        .map(|query| {
            let hits: Vec<String> = sdk()
                .search(query, 3)
                .into_iter()
                .map(|h| format!("  {}  # {}", h.signature, h.summary))
                .collect();
            format!("{query:?}\n{}", hits.join("\n"))
        })
        .collect();
    insta::assert_snapshot!(answers.join("\n\n"));
}

mod synthetic;

/// The generated catalogs the description is pinned at: `(label, servers, tools)`.
const SIZES: &[(&str, usize, usize)] = &[
    ("1_tool", 1, 1),
    ("2_tools", 2, 2),
    ("5_tools", 2, 5),
    ("36_tools", 5, 36),
    ("36_servers", 36, 624),
    ("1000_tools", 100, 1_000),
];

fn generated(servers: usize, tools: usize) -> synthetic::Catalog {
    if servers == 36 {
        synthetic::thirty_six_servers()
    } else {
        synthetic::catalog(servers, tools)
    }
}

/// With `CODEMCP_DUMP_DESCRIPTIONS=DIR`, writes each generated catalog's description (at
/// `CODEMCP_DESCRIPTION_BUDGET`, default the default) to `DIR/LABEL.txt`, for the token bench.
#[test]
fn dump_descriptions() {
    let Some(dir) = std::env::var_os("CODEMCP_DUMP_DESCRIPTIONS") else {
        return;
    };
    let budget = std::env::var("CODEMCP_DESCRIPTION_BUDGET")
        .ok()
        .and_then(|b| b.parse().ok())
        .unwrap_or(DEFAULT_BUDGET);
    std::fs::create_dir_all(&dir).unwrap();
    for (label, servers, tools) in SIZES {
        let c = generated(*servers, *tools);
        let sdk = c.sdk();
        let path = std::path::Path::new(&dir).join(format!("{label}.txt"));
        std::fs::write(path, sdk.description(budget)).unwrap();
    }
}

impl synthetic::Catalog {
    fn sdk(&self) -> Sdk {
        Sdk::build(&self.tools).with_about(self.about.clone())
    }
}

/// What a client that keeps 2,048 characters shows the model.
fn first_2048(text: &str) -> String {
    text.chars().take(codemcp_sdk::HEAD_CHARS).collect()
}

/// The first 2,048 characters at each generated size, at the default budget.
#[test]
fn generated_catalogs_as_a_2048_character_client_sees_them() {
    for (label, servers, tools) in SIZES {
        let sdk = generated(*servers, *tools).sdk();
        let default = sdk.description(DEFAULT_BUDGET);
        assert!(
            default.chars().count() <= DEFAULT_BUDGET,
            "{label}: {default}"
        );
        insta::assert_snapshot!(format!("first_2048_{label}"), first_2048(&default));
    }
}

/// The head holds what a model needs before anything else: every server by name, the
/// `session` rule and where the signatures are. At 36 servers (624 tools) and at 1,000
/// tools on 100 servers as much as at one tool.
#[test]
fn every_server_the_session_rule_and_search_tools_are_within_2048_characters() {
    for (label, servers, tools) in SIZES {
        let c = generated(*servers, *tools);
        let sdk = c.sdk();
        for text in [
            first_2048(&sdk.description(LARGE_BUDGET)),
            sdk.instructions(usize::MAX),
        ] {
            assert!(text.chars().count() <= codemcp_sdk::HEAD_CHARS, "{label}");
            let names: std::collections::BTreeSet<&str> =
                c.tools.iter().map(|t| t.server.as_str()).collect();
            assert_eq!(names.len(), *servers, "{label}");
            for name in names {
                assert!(
                    [" (", ",", "\n"]
                        .iter()
                        .any(|end| text.contains(&format!("{name}{end}"))),
                    "{label}: {name} is missing from\n{text}"
                );
            }
            assert!(text.contains("pass `session`"), "{label}: {text}");
            assert!(text.contains("search_tools(query"), "{label}: {text}");
            assert!(text.contains("describe_tool(name)"), "{label}: {text}");
            assert!(text.contains("codemcp://sdk.pyi"), "{label}: {text}");
        }
    }
}

/// What a server says about itself, or else what its tools share, says what it is for: not
/// counts of the words in its tool names.
#[test]
fn servers_are_described_by_what_they_are_for() {
    let sdk = generated(36, 624).sdk();
    let head = first_2048(&sdk.description(DEFAULT_BUDGET));
    assert!(
        head.contains("\npostgres (") && head.contains("): Read-only access"),
        "{head}"
    );
    assert!(head.contains("\nslack ("), "{head}");
    let slack = head.lines().find(|l| l.starts_with("slack (")).unwrap();
    let (_, purpose) = slack.split_once("): ").unwrap();
    assert!(
        purpose.contains("channel") || purpose.contains("message"),
        "{slack}"
    );
    assert!(!purpose.chars().any(|c| c.is_ascii_digit()), "{slack}");
}

/// A real gateway over real peers, at the default budget: `initialize`'s instructions and the
/// tool description each fit in 2,048 characters and name both servers, the `session` rule
/// and `search_tools`.
#[tokio::test]
async fn the_gateway_instructions_and_description_name_every_server_within_2048() {
    let root = tempfile::tempdir().unwrap();
    let setup = support::Setup::new(serde_json::json!({
        "everything": support::everything(),
        "fs": support::filesystem(root.path()),
    }));
    let client = setup.stdio(&[("CODEMCP_DESCRIPTION_BUDGET", "2048")]).await;
    let instructions = client
        .service
        .peer_info()
        .and_then(|info| info.instructions.clone())
        .unwrap_or_default();
    let description = client.description().await;
    for text in [&instructions, &description] {
        assert!(text.chars().count() <= codemcp_sdk::HEAD_CHARS, "{text}");
        // Still connecting at `initialize`, or connected with their tool counts.
        assert!(text.contains("\neverything ("), "{text}");
        assert!(text.contains("\nfs ("), "{text}");
        assert!(text.contains("pass `session`"), "{text}");
        assert!(text.contains("search_tools(query"), "{text}");
    }
    assert!(description.contains("\nSignatures ("), "{description}");
}
