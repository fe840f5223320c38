//! The scripted multi-step tasks over the real peers (server-everything as `everything`,
//! server-filesystem as `fs`, server-memory as `memory`), each in two forms that must print
//! the same answer: direct tool calls (what a model would do one call per step), and one
//! `execute_python` snippet.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};

use crate::mcp::{self, Conn};

/// One direct tool call as the model sees it.
pub struct CallCost {
    /// Model turn in which the call is issued; calls of one round need no result of each
    /// other, so a client may send them together.
    pub round: usize,
    pub args_tokens: usize,
    pub result_tokens: usize,
}

/// The direct form: tool calls straight to the upstreams, recorded.
pub struct Direct<'a> {
    pub peers: &'a BTreeMap<String, Conn>,
    pub root: String,
    pub calls: Vec<CallCost>,
    round: usize,
}

impl<'a> Direct<'a> {
    pub fn new(peers: &'a BTreeMap<String, Conn>, root: &Path) -> Self {
        Direct {
            peers,
            root: root.display().to_string(),
            calls: Vec::new(),
            round: 0,
        }
    }

    /// Starts the next model turn.
    fn turn(&mut self) {
        self.round += 1;
    }

    /// Calls `server`'s `tool`; returns the text the model reads.
    async fn call(&mut self, server: &str, tool: &str, args: Value) -> String {
        let call = json!({"name": tool, "arguments": args});
        let result = mcp::call(&self.peers[server], tool, args).await;
        assert!(
            result.is_error != Some(true),
            "{tool}: {}",
            mcp::result_text(&result)
        );
        let text = mcp::result_text(&result);
        self.calls.push(CallCost {
            round: self.round.max(1),
            args_tokens: mcp::tokens(&call.to_string()),
            result_tokens: mcp::tokens(&text),
        });
        text
    }
}

pub struct Task {
    pub name: &'static str,
    pub what: &'static str,
    /// The `execute_python` code; `{root}` is replaced by the file root.
    pub snippet: &'static str,
}

pub const TASKS: &[Task] = &[
    Task {
        name: "sales-total",
        what: "list a folder, read its 3 CSVs, total a column",
        snippet: r#"d = "{root}/sales"
total = 0.0
for line in fs_list_directory(path=d)["content"].splitlines():
    if line.startswith("[FILE] ") and line.endswith(".csv"):
        rows = fs_read_text_file(path=d + "/" + line[7:])["content"].splitlines()
        col = rows[0].split(",").index("revenue")
        total += sum([float(r.split(",")[col]) for r in rows[1:] if r])
print(f"{total:.2f}")"#,
    },
    Task {
        name: "gold-balances",
        what: "search the memory graph, join with account files",
        snippet: r#"import json
total = 0.0
for e in memory_search_nodes(query="customer")["entities"]:
    if e["entityType"] == "customer" and "tier: gold" in e["observations"]:
        path = [o[len("account file: "):] for o in e["observations"] if o.startswith("account file: ")][0]
        total += json.loads(fs_read_text_file(path="{root}/" + path)["content"])["balance"]
print(f"{total:.2f}")"#,
    },
    Task {
        name: "loop-max",
        what: "call get-sum over ten items, keep the maximum",
        snippet: r#"best = max([float(everything_get_sum(a=i, b=(i * 7) % 11).split()[-1].rstrip(".")) for i in range(1, 11)])
print(int(best))"#,
    },
    Task {
        name: "log-errors",
        what: "find *.log files, read each, count ERROR lines",
        snippet: r#"counts = {}
for p in fs_search_files(path="{root}/logs", pattern="**/*.log")["content"].splitlines():
    text = fs_read_text_file(path=p)["content"]
    counts[p.split("/")[-1]] = len([l for l in text.splitlines() if "ERROR" in l])
worst = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
print(f"{worst[0]} {worst[1]} of {sum(counts.values())}")"#,
    },
    Task {
        name: "largest-doc",
        what: "list with sizes, read the first line of the largest",
        snippet: r#"d = "{root}/docs"
lines = fs_list_directory_with_sizes(path=d, sortBy="size")["content"].splitlines()
name = [l for l in lines if l.startswith("[FILE] ")][0][7:].split()[0]
print(name, fs_read_text_file(path=d + "/" + name, head=1)["content"].strip())"#,
    },
    Task {
        name: "warmest-city",
        what: "structured weather for 3 cities, pick the warmest",
        snippet: r#"w = {c: everything_get_structured_content(location=c) for c in ["New York", "Chicago", "Los Angeles"]}
c = max(w, key=lambda k: w[k]["temperature"])
print(c, w[c]["temperature"])"#,
    },
    Task {
        name: "acme-staff",
        what: "read the graph, open who works at Acme, list roles",
        snippet: r#"g = memory_read_graph()
names = sorted([r["from"] for r in g["relations"] if r["to"] == "Acme Corp" and r["relationType"] == "works_at"])
roles = {}
for e in memory_open_nodes(names=names)["entities"]:
    roles[e["name"]] = [o[6:] for o in e["observations"] if o.startswith("role: ")][0]
print(", ".join([n + ": " + roles[n] for n in names]))"#,
    },
    Task {
        name: "write-report",
        what: "read a CSV, write a per-region summary, stat it",
        snippet: r#"rows = fs_read_text_file(path="{root}/sales/q1.csv")["content"].splitlines()
by = {}
for r in rows[1:]:
    f = r.split(",")
    by[f[0]] = by.get(f[0], 0.0) + float(f[2])
report = "".join([f"{k}: {by[k]:.2f}\n" for k in sorted(by)])
fs_write_file(path="{root}/reports/q1.txt", content=report)
info = fs_get_file_info(path="{root}/reports/q1.txt")["content"]
print([l for l in info.splitlines() if l.startswith("size:")][0])"#,
    },
    Task {
        name: "import-team",
        what: "read a CSV, create entities and relations, query back",
        snippet: r#"rows = [r.split(",") for r in fs_read_text_file(path="{root}/team.csv")["content"].splitlines()[1:]]
memory_create_entities(entities=[{"name": n, "entityType": "person", "observations": ["role: " + role]} for n, role, _ in rows])
memory_create_relations(relations=[{"from": n, "to": c, "relationType": "works_at"} for n, _, c in rows])
found = memory_search_nodes(query="role: engineer")["entities"]
print(len(found), ", ".join(sorted([e["name"] for e in found])))"#,
    },
];

/// Runs `task` in the direct form and returns its answer.
pub async fn run_direct(task: &Task, d: &mut Direct<'_>) -> String {
    let root = d.root.clone();
    match task.name {
        "sales-total" => {
            d.turn();
            let listing = d
                .call(
                    "fs",
                    "list_directory",
                    json!({"path": format!("{root}/sales")}),
                )
                .await;
            d.turn();
            let mut total = 0.0;
            for name in files(&listing).filter(|n| n.ends_with(".csv")) {
                let text = d
                    .call(
                        "fs",
                        "read_text_file",
                        json!({"path": format!("{root}/sales/{name}")}),
                    )
                    .await;
                total += column_sum(&text, "revenue");
            }
            format!("{total:.2}")
        }
        "gold-balances" => {
            d.turn();
            let found: Value = parse(
                &d.call("memory", "search_nodes", json!({"query": "customer"}))
                    .await,
            );
            d.turn();
            let mut total = 0.0;
            for e in found["entities"].as_array().unwrap() {
                let obs: Vec<&str> = strings(&e["observations"]);
                if e["entityType"] != "customer" || !obs.contains(&"tier: gold") {
                    continue;
                }
                let path = obs
                    .iter()
                    .find_map(|o| o.strip_prefix("account file: "))
                    .unwrap();
                let account: Value = parse(
                    &d.call(
                        "fs",
                        "read_text_file",
                        json!({"path": format!("{root}/{path}")}),
                    )
                    .await,
                );
                total += account["balance"].as_f64().unwrap();
            }
            format!("{total:.2}")
        }
        "loop-max" => {
            d.turn();
            let mut best = f64::MIN;
            for i in 1..=10 {
                let text = d
                    .call("everything", "get-sum", json!({"a": i, "b": (i * 7) % 11}))
                    .await;
                let last = text
                    .split_whitespace()
                    .last()
                    .unwrap()
                    .trim_end_matches('.');
                best = best.max(last.parse().unwrap());
            }
            format!("{best:.0}")
        }
        "log-errors" => {
            d.turn();
            let found = d
                .call(
                    "fs",
                    "search_files",
                    json!({"path": format!("{root}/logs"), "pattern": "**/*.log"}),
                )
                .await;
            d.turn();
            let mut counts = BTreeMap::new();
            for path in found.lines() {
                let text = d.call("fs", "read_text_file", json!({"path": path})).await;
                let name = path.rsplit('/').next().unwrap().to_owned();
                counts.insert(name, text.lines().filter(|l| l.contains("ERROR")).count());
            }
            let worst = counts
                .iter()
                .min_by_key(|(name, n)| (std::cmp::Reverse(**n), (*name).clone()))
                .unwrap();
            format!(
                "{} {} of {}",
                worst.0,
                worst.1,
                counts.values().sum::<usize>()
            )
        }
        "largest-doc" => {
            d.turn();
            let listing = d
                .call(
                    "fs",
                    "list_directory_with_sizes",
                    json!({"path": format!("{root}/docs"), "sortBy": "size"}),
                )
                .await;
            let name = files(&listing)
                .next()
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
                .to_owned();
            d.turn();
            let head = d
                .call(
                    "fs",
                    "read_text_file",
                    json!({"path": format!("{root}/docs/{name}"), "head": 1}),
                )
                .await;
            format!("{name} {}", head.trim())
        }
        "warmest-city" => {
            d.turn();
            let mut best: Option<(String, f64)> = None;
            for city in ["New York", "Chicago", "Los Angeles"] {
                let w: Value = parse(
                    &d.call(
                        "everything",
                        "get-structured-content",
                        json!({"location": city}),
                    )
                    .await,
                );
                let t = w["temperature"].as_f64().unwrap();
                if best.as_ref().is_none_or(|(_, b)| t > *b) {
                    best = Some((city.to_owned(), t));
                }
            }
            let (city, t) = best.unwrap();
            format!("{city} {t}")
        }
        "acme-staff" => {
            d.turn();
            let graph: Value = parse(&d.call("memory", "read_graph", json!({})).await);
            let mut names: Vec<String> = graph["relations"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["to"] == "Acme Corp" && r["relationType"] == "works_at")
                .map(|r| r["from"].as_str().unwrap().to_owned())
                .collect();
            names.sort();
            d.turn();
            let opened: Value = parse(
                &d.call("memory", "open_nodes", json!({"names": names}))
                    .await,
            );
            let roles: BTreeMap<&str, &str> = opened["entities"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    let role = strings(&e["observations"])
                        .into_iter()
                        .find_map(|o| o.strip_prefix("role: "))
                        .unwrap();
                    (e["name"].as_str().unwrap(), role)
                })
                .collect();
            names
                .iter()
                .map(|n| format!("{n}: {}", roles[n.as_str()]))
                .collect::<Vec<_>>()
                .join(", ")
        }
        "write-report" => {
            d.turn();
            let text = d
                .call(
                    "fs",
                    "read_text_file",
                    json!({"path": format!("{root}/sales/q1.csv")}),
                )
                .await;
            let mut by: BTreeMap<&str, f64> = BTreeMap::new();
            for row in text.lines().skip(1) {
                let f: Vec<&str> = row.split(',').collect();
                *by.entry(f[0]).or_default() += f[2].parse::<f64>().unwrap();
            }
            let mut report = String::new();
            for (k, v) in &by {
                let _ = writeln!(report, "{k}: {v:.2}");
            }
            let path = format!("{root}/reports/q1.txt");
            d.turn();
            d.call("fs", "write_file", json!({"path": path, "content": report}))
                .await;
            d.turn();
            let info = d.call("fs", "get_file_info", json!({"path": path})).await;
            info.lines()
                .find(|l| l.starts_with("size:"))
                .unwrap()
                .to_owned()
        }
        "import-team" => {
            d.turn();
            let text = d
                .call(
                    "fs",
                    "read_text_file",
                    json!({"path": format!("{root}/team.csv")}),
                )
                .await;
            let rows: Vec<Vec<&str>> = text
                .lines()
                .skip(1)
                .map(|r| r.split(',').collect())
                .collect();
            let entities: Vec<Value> = rows
                .iter()
                .map(|r| json!({"name": r[0], "entityType": "person", "observations": [format!("role: {}", r[1])]}))
                .collect();
            let relations: Vec<Value> = rows
                .iter()
                .map(|r| json!({"from": r[0], "to": r[2], "relationType": "works_at"}))
                .collect();
            d.turn();
            d.call("memory", "create_entities", json!({"entities": entities}))
                .await;
            d.turn();
            d.call(
                "memory",
                "create_relations",
                json!({"relations": relations}),
            )
            .await;
            d.turn();
            let found: Value = parse(
                &d.call("memory", "search_nodes", json!({"query": "role: engineer"}))
                    .await,
            );
            let mut names: Vec<&str> = found["entities"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["name"].as_str().unwrap())
                .collect();
            names.sort_unstable();
            format!("{} {}", names.len(), names.join(", "))
        }
        other => panic!("no direct form for task {other}"),
    }
}

fn files(listing: &str) -> impl Iterator<Item = &str> {
    listing.lines().filter_map(|l| l.strip_prefix("[FILE] "))
}

fn column_sum(csv: &str, column: &str) -> f64 {
    let mut rows = csv.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == column).unwrap();
    rows.filter(|r| !r.is_empty())
        .map(|r| r.split(',').nth(col).unwrap().parse::<f64>().unwrap())
        .sum()
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The files every task works on (one copy per form, so writes do not meet).
pub fn write_fixtures(root: &Path) {
    let put = |rel: &str, text: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let regions = ["north", "south", "east", "west"];
    for q in 1..=3u32 {
        let mut csv = String::from("region,units,revenue,channel\n");
        for i in 0..12u32 {
            let units = (q * 17 + i * 29) % 40 + 3;
            let cents = (q * 7919 + i * 104_729) % 90_000 + 10_000;
            let channel = if i % 3 == 0 { "online" } else { "retail" };
            let _ = writeln!(
                csv,
                "{},{units},{}.{:02},{channel}",
                regions[(i % 4) as usize],
                cents / 100,
                cents % 100
            );
        }
        put(&format!("sales/q{q}.csv"), &csv);
    }
    put(
        "sales/README.txt",
        "Quarterly sales exports, one CSV per quarter.\n",
    );
    for (name, balance) in [
        ("acme", 12_840.5),
        ("globex", 3_120.0),
        ("initech", 7_455.25),
        ("umbrella", 990.75),
    ] {
        put(
            &format!("accounts/{name}.json"),
            &json!({"customer": name, "balance": balance, "currency": "USD", "updated": "2026-11-01"}).to_string(),
        );
    }
    for (i, name) in ["api", "worker", "billing"].iter().enumerate() {
        let mut log = String::new();
        for line in 0..40usize {
            let level = if (line * 7 + i * 3) % 9 == 0 {
                "ERROR"
            } else if line % 4 == 0 {
                "WARN"
            } else {
                "INFO"
            };
            let _ = writeln!(
                log,
                "2026-11-20T10:{:02}:{:02}Z {level} {name}: request {line} handled in {} ms",
                line % 60,
                (line * 13) % 60,
                20 + line * 3
            );
        }
        let dir = if i == 2 { "logs/archive" } else { "logs" };
        put(&format!("{dir}/{name}.log"), &log);
    }
    put("logs/notes.txt", "not a log\n");
    for (name, paragraphs) in [
        ("intro.md", 2),
        ("design.md", 9),
        ("faq.md", 4),
        ("changelog.md", 6),
    ] {
        let mut text = format!("# {name}: the first line\n");
        for p in 0..paragraphs {
            let _ = writeln!(
                text,
                "\nParagraph {p} of {name}. {}",
                "Some words about the system. ".repeat(8)
            );
        }
        put(&format!("docs/{name}"), &text);
    }
    put("reports/.keep", "");
    put(
        "team.csv",
        "name,role,company\nErin,engineer,Initech\nFrank,designer,Acme Corp\nGrace,engineer,Acme Corp\n",
    );
}

/// The memory server's starting graph (JSON lines).
pub fn memory_graph() -> String {
    let mut lines: Vec<Value> = vec![
        json!({"type": "entity", "name": "Acme Corp", "entityType": "customer", "observations": ["tier: gold", "account file: accounts/acme.json", "since 2019"]}),
        json!({"type": "entity", "name": "Globex", "entityType": "customer", "observations": ["tier: silver", "account file: accounts/globex.json"]}),
        json!({"type": "entity", "name": "Initech", "entityType": "customer", "observations": ["tier: gold", "account file: accounts/initech.json", "renewal due in March"]}),
        json!({"type": "entity", "name": "Umbrella", "entityType": "customer", "observations": ["tier: gold", "account file: accounts/umbrella.json"]}),
        json!({"type": "entity", "name": "Alice", "entityType": "person", "observations": ["role: engineer", "email: alice@acme.test", "prefers async updates"]}),
        json!({"type": "entity", "name": "Bob", "entityType": "person", "observations": ["role: sales", "email: bob@acme.test"]}),
        json!({"type": "entity", "name": "Carol", "entityType": "person", "observations": ["role: engineer", "email: carol@initech.test"]}),
        json!({"type": "entity", "name": "Dave", "entityType": "person", "observations": ["role: support", "email: dave@globex.test", "customer champion"]}),
    ];
    for i in 0..12 {
        lines.push(json!({"type": "entity", "name": format!("Project {i}"), "entityType": "project",
            "observations": [format!("status: {}", ["active", "paused", "done"][i % 3]), format!("budget: {} kUSD", 40 + i * 15), "kick-off notes are in the wiki"]}));
    }
    for (from, to, kind) in [
        ("Alice", "Acme Corp", "works_at"),
        ("Bob", "Acme Corp", "works_at"),
        ("Carol", "Initech", "works_at"),
        ("Dave", "Globex", "works_at"),
        ("Acme Corp", "Initech", "partner_of"),
        ("Alice", "Project 1", "leads"),
        ("Carol", "Project 4", "leads"),
    ] {
        lines.push(json!({"type": "relation", "from": from, "to": to, "relationType": kind}));
    }
    lines
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}
