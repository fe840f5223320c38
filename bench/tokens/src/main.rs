//! Token benchmark: what the model sees with direct MCP versus with codemcp.
//!
//! `bench/tokens/run.sh` builds codemcp and runs this; see bench/tokens/README.md.

mod mcp;
mod tasks;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use mcp::{Conn, tokens};

struct Opts {
    codemcp: PathBuf,
    python: PathBuf,
    node_modules: PathBuf,
    sizes: Vec<usize>,
}

fn opts() -> Opts {
    let mut args = std::env::args().skip(1);
    let env = |k: &str| std::env::var_os(k).map(PathBuf::from);
    let mut o = Opts {
        codemcp: env("CODEMCP_BIN").unwrap_or_else(|| "codemcp".into()),
        python: env("CODEMCP_TEST_PY2").unwrap_or_else(|| "python3".into()),
        node_modules: env("CODEMCP_TEST_NODE_MODULES").unwrap_or_default(),
        sizes: vec![10, 100, 1000],
    };
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--codemcp" => o.codemcp = value().into(),
            "--python" => o.python = value().into(),
            "--node-modules" => o.node_modules = value().into(),
            "--count" => {
                // Tokens of stdin, for tuning texts by hand.
                let text = std::io::read_to_string(std::io::stdin()).unwrap();
                println!("{}", tokens(&text));
                std::process::exit(0);
            }
            "--sizes" => {
                o.sizes = value()
                    .split(',')
                    .map(|s| s.parse().expect("size"))
                    .collect()
            }
            other => panic!(
                "unknown option {other} (--codemcp, --python, --node-modules, --sizes, --count)"
            ),
        }
    }
    o
}

fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Peers {
    everything: Value,
    fs: Value,
    memory: Value,
}

fn peers(nm: &Path, root: &Path, memory_file: &Path) -> Peers {
    let js = |pkg: &str| nm.join(format!("@modelcontextprotocol/{pkg}/dist/index.js"));
    Peers {
        everything: json!({"command": "node", "args": [js("server-everything"), "stdio"]}),
        fs: json!({"command": "node", "args": [js("server-filesystem"), root]}),
        memory: json!({"command": "node", "args": [js("server-memory")], "env": {"MEMORY_FILE_PATH": memory_file}}),
    }
}

/// codemcp over stdio with `servers` (a JSON object, in the order given) as its config.
async fn gateway(o: &Opts, dir: &Path, label: &str, servers: Value) -> Conn {
    gateway_env(o, dir, label, servers, json!({})).await
}

async fn gateway_env(o: &Opts, dir: &Path, label: &str, servers: Value, env: Value) -> Conn {
    let config = dir.join(format!("{label}.json"));
    std::fs::write(&config, json!({"mcpServers": servers}).to_string()).unwrap();
    let mut env = env;
    env["CODEMCP_LOG"] = json!("warn");
    mcp::connect(&json!({"command": o.codemcp, "args": ["--config", config], "env": env})).await
}

/// The `execute_python` description and its tools/list tokens.
async fn gateway_tool(conn: &Conn) -> (String, usize) {
    let tools = mcp::list(conn).await;
    assert_eq!(tools.len(), 1, "codemcp lists one tool");
    (
        tools[0]
            .description
            .as_deref()
            .unwrap_or_default()
            .to_owned(),
        mcp::tools_tokens(&tools),
    )
}

struct FixedRow {
    label: String,
    tools: usize,
    direct: usize,
    codemcp: usize,
    mode: &'static str,
}

fn mode_of(description: &str) -> &'static str {
    if description.contains("\nFunctions (") {
        "signatures"
    } else if description.contains("\nSignatures (") {
        "some signatures"
    } else {
        "servers only"
    }
}

#[tokio::main]
async fn main() {
    let o = opts();
    let work = tempfile::tempdir().unwrap();
    let mut fixed = Vec::new();
    let mut stability: Vec<(String, bool)> = Vec::new();
    let catalog_server = here().join("catalog_server.py");

    for &n in &o.sizes {
        let spec = json!({"command": o.python, "args": [catalog_server], "env": {"ODD_TOOLS": n.to_string(), "ODD_LOG_LEVEL": "WARNING"}});
        let direct = mcp::connect(&spec).await;
        let tools = mcp::list(&direct).await;
        let _ = direct.cancel().await;
        let gw = gateway(
            &o,
            work.path(),
            &format!("catalog{n}"),
            json!({"catalog": spec}),
        )
        .await;
        let (description, codemcp_tokens) = gateway_tool(&gw).await;
        let _ = gw.cancel().await;
        if n == *o.sizes.iter().max().unwrap() {
            let again = gateway(
                &o,
                work.path(),
                &format!("catalog{n}b"),
                json!({"catalog": spec}),
            )
            .await;
            let (second, _) = gateway_tool(&again).await;
            let _ = again.cancel().await;
            stability.push((
                format!("{n}-tool catalog ({} mode): restart", mode_of(&description)),
                second == description,
            ));
        }
        eprintln!(
            "catalog {n}: direct {} tokens, codemcp {codemcp_tokens}",
            mcp::tools_tokens(&tools)
        );
        fixed.push(FixedRow {
            label: format!("generated catalog, {n} tools"),
            tools: tools.len(),
            direct: mcp::tools_tokens(&tools),
            codemcp: codemcp_tokens,
            mode: mode_of(&description),
        });
    }

    // The real peers: one copy of the fixtures for each form.
    let mut roots = BTreeMap::new();
    for form in ["direct", "code"] {
        let root = work.path().join(form);
        tasks::write_fixtures(&root.join("files"));
        std::fs::write(root.join("memory.jsonl"), tasks::memory_graph()).unwrap();
        roots.insert(form, root);
    }
    let direct_peers = peers(
        &o.node_modules,
        &roots["direct"].join("files"),
        &roots["direct"].join("memory.jsonl"),
    );
    let code_peers = peers(
        &o.node_modules,
        &roots["code"].join("files"),
        &roots["code"].join("memory.jsonl"),
    );
    let mut direct: BTreeMap<String, Conn> = BTreeMap::new();
    for (name, spec) in [
        ("everything", &direct_peers.everything),
        ("fs", &direct_peers.fs),
        ("memory", &direct_peers.memory),
    ] {
        direct.insert(name.to_owned(), mcp::connect(spec).await);
    }
    let mut all_tools = Vec::new();
    for conn in direct.values() {
        all_tools.extend(mcp::list(conn).await);
    }
    let direct_fixed = mcp::tools_tokens(&all_tools);
    let servers = json!({"everything": code_peers.everything, "fs": code_peers.fs, "memory": code_peers.memory});
    let gw = gateway(&o, work.path(), "peers", servers.clone()).await;
    let (description, code_fixed) = gateway_tool(&gw).await;
    fixed.push(FixedRow {
        label: "real peers: everything + filesystem + memory".into(),
        tools: all_tools.len(),
        direct: direct_fixed,
        codemcp: code_fixed,
        mode: mode_of(&description),
    });

    // Index mode for the same peers, and what one discovery call costs there: the numbers
    // behind the default description budget.
    let indexed = gateway_env(
        &o,
        work.path(),
        "peers-index",
        servers.clone(),
        json!({"CODEMCP_DESCRIPTION_BUDGET": (description.chars().count() - 1).to_string()}),
    )
    .await;
    let (index_description, index_fixed) = gateway_tool(&indexed).await;
    let discovery_code = r##"for q in ["read a text file", "list a directory with sizes"]:
    for hit in search_tools(q, 3):
        print(hit["signature"], "#", hit["summary"])"##;
    let found = mcp::call(&indexed, "execute_python", json!({"code": discovery_code})).await;
    let discovery = tokens(
        &json!({"name": "execute_python", "arguments": {"code": discovery_code}}).to_string(),
    ) + tokens(&mcp::result_text(&found));
    let _ = indexed.cancel().await;
    fixed.push(FixedRow {
        label: "real peers, index mode (budget one character short)".into(),
        tools: all_tools.len(),
        direct: direct_fixed,
        codemcp: index_fixed,
        mode: mode_of(&index_description),
    });
    let tuning = Tuning {
        signatures: code_fixed,
        signatures_chars: description.chars().count(),
        index: index_fixed,
        discovery,
    };

    // Per task.
    let mut rows = Vec::new();
    for task in tasks::TASKS {
        let mut d = tasks::Direct::new(&direct, &roots["direct"].join("files"));
        let direct_answer = tasks::run_direct(task, &mut d).await;
        let rounds = d.calls.iter().map(|c| c.round).max().unwrap_or(0);
        let direct_tokens = rounds * direct_fixed
            + d.calls
                .iter()
                .map(|c| c.args_tokens + c.result_tokens)
                .sum::<usize>();
        let code = task
            .snippet
            .replace("{root}", &roots["code"].join("files").display().to_string());
        let result = mcp::call(&gw, "execute_python", json!({"code": code})).await;
        let text = mcp::result_text(&result);
        let snippet_tokens =
            tokens(&json!({"name": "execute_python", "arguments": {"code": code}}).to_string());
        let code_tokens = code_fixed + snippet_tokens + tokens(&text);
        let agree = text.trim() == direct_answer.trim() && result.is_error != Some(true);
        if !agree {
            eprintln!(
                "{}: answers differ\n  direct: {direct_answer}\n  code:   {text}",
                task.name
            );
        }
        let sequential = direct_tokens + (d.calls.len() - rounds) * direct_fixed;
        rows.push((
            task,
            d.calls.len(),
            rounds,
            direct_tokens,
            code_tokens,
            agree,
            sequential,
        ));
    }

    // Stability of the description.
    let (after_tasks, _) = gateway_tool(&gw).await;
    stability.push((
        "real peers: same session after running every task".into(),
        after_tasks == description,
    ));
    let _ = gw.cancel().await;
    for conn in direct.into_values() {
        let _ = conn.cancel().await;
    }
    let restarted = gateway(&o, work.path(), "peers2", servers).await;
    let (second, _) = gateway_tool(&restarted).await;
    let _ = restarted.cancel().await;
    stability.push(("real peers: restart".into(), second == description));
    // Reversed config order, and `everything` answers its handshake last.
    let mut slow_everything = code_peers.everything.clone();
    let cmd = format!(
        "sleep 1.5; exec node {}",
        shell_quote(slow_everything["args"][0].as_str().unwrap())
    );
    slow_everything = json!({"command": "sh", "args": ["-c", format!("{cmd} stdio")]});
    let reordered =
        json!({"memory": code_peers.memory, "fs": code_peers.fs, "everything": slow_everything});
    let gw = gateway(&o, work.path(), "peers3", reordered).await;
    let (third, _) = gateway_tool(&gw).await;
    let _ = gw.cancel().await;
    stability.push((
        "real peers: reversed config order, everything connects last".into(),
        third == description,
    ));

    report(&fixed, &rows, &stability, &description);
    tuning.report();
}

/// When is listing every signature cheaper than an index plus a discovery turn?
struct Tuning {
    signatures: usize,
    signatures_chars: usize,
    index: usize,
    discovery: usize,
}

impl Tuning {
    /// A task takes two model turns (the snippet, then the answer), each carrying the fixed
    /// cost; in index mode it takes one more turn to discover the functions.
    fn report(&self) {
        const TURNS: usize = 2;
        let break_even = ((TURNS + 1) * self.index + self.discovery) / TURNS;
        let chars_per_token = self.signatures_chars as f64 / self.signatures as f64;
        println!(
            "\nBudget: index mode costs {} tokens plus a discovery turn of {} tokens; over a {TURNS}-turn task, \
             listing signatures pays off up to about {break_even} tokens of description \
             (≈ {:.0} characters at this catalog's {chars_per_token:.1} characters per token).",
            self.index,
            self.discovery,
            break_even as f64 * chars_per_token,
        );
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// (task, calls, rounds, direct, codemcp, answers agree, direct with one call per turn)
type TaskRow<'a> = (&'a tasks::Task, usize, usize, usize, usize, bool, usize);

fn pct(part: usize, whole: usize) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

fn report(
    fixed: &[FixedRow],
    rows: &[TaskRow<'_>],
    stability: &[(String, bool)],
    description: &str,
) {
    println!("## Fixed cost: tool definitions in context (cl100k_base tokens)\n");
    println!("| catalog | tools | direct MCP | codemcp | codemcp / direct | description |");
    println!("|---|---:|---:|---:|---:|---|");
    for r in fixed {
        println!(
            "| {} | {} | {} | {} | {:.1} % | {} |",
            r.label,
            r.tools,
            r.direct,
            r.codemcp,
            pct(r.codemcp, r.direct),
            r.mode
        );
    }
    println!("\n## Per task over the real peers (model-visible tokens)\n");
    println!(
        "| task | what | calls | rounds | direct | codemcp | saved | saved vs 1 call/turn | answers agree |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---|");
    for (task, calls, rounds, direct, code, agree, sequential) in rows {
        println!(
            "| {} | {} | {calls} | {rounds} | {direct} | {code} | {:.1} % | {:.1} % | {} |",
            task.name,
            task.what,
            100.0 - pct(*code, *direct),
            100.0 - pct(*code, *sequential),
            if *agree { "yes" } else { "NO" }
        );
    }
    println!("\n## Stability of the execute_python description\n");
    for (what, same) in stability {
        println!(
            "- {what}: {}",
            if *same { "byte-identical" } else { "CHANGED" }
        );
    }
    let direct_sum: usize = rows.iter().map(|r| r.3).sum();
    let code_sum: usize = rows.iter().map(|r| r.4).sum();
    let dependent: Vec<f64> = rows
        .iter()
        .filter(|r| r.2 >= 3)
        .map(|r| 100.0 - pct(r.4, r.3))
        .collect();
    let largest = fixed.iter().max_by_key(|r| r.tools).unwrap();
    let smallest = fixed.iter().min_by_key(|r| r.tools).unwrap();
    println!(
        "\nSummary: fixed cost {:.0} % of direct at {} tools and {} tokens ({:.1} %) at {} tools; \
         tasks {code_sum} vs {direct_sum} tokens ({:.1} % saved; ≥ 3 dependent rounds: min {:.1} % saved); \
         answers agree {}/{}; description stable: {}; description {} chars.",
        pct(smallest.codemcp, smallest.direct),
        smallest.tools,
        largest.codemcp,
        pct(largest.codemcp, largest.direct),
        largest.tools,
        100.0 - pct(code_sum, direct_sum),
        dependent.iter().copied().fold(f64::INFINITY, f64::min),
        rows.iter().filter(|r| r.5).count(),
        rows.len(),
        if stability.iter().all(|s| s.1) {
            "yes"
        } else {
            "NO"
        },
        description.chars().count(),
    );
}
