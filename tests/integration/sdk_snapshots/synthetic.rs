//! Generated catalogs shaped like real ones: servers named like popular MCP servers, tools
//! named `verb_entity` with one-sentence descriptions and a few typed parameters, and about
//! half of the servers saying what they are for (as `instructions` or `serverInfo.description`).
//! Deterministic: the same arguments give the same catalog.

use std::collections::BTreeMap;

use codemcp_sdk::tooldef::ToolDef;
use serde_json::json;

/// `(name, what its tools act on, what the server says it is for)`.
const SERVERS: &[(&str, &[&str], Option<&str>)] = &[
    (
        "github",
        &["issue", "pull_request", "repository", "branch", "commit"],
        Some(
            "GitHub's official MCP Server: issues, pull requests, code search and repository management. Use the tools to read and change GitHub data.",
        ),
    ),
    (
        "slack",
        &["channel", "message", "thread", "user", "reaction"],
        None,
    ),
    (
        "postgres",
        &["table", "query", "schema", "row"],
        Some("Read-only access to a PostgreSQL database: inspect schemas and run SQL queries."),
    ),
    ("filesystem", &["file", "directory", "path"], None),
    (
        "brave-search",
        &["web_result", "news_result", "image_result"],
        Some("Web and local search using the Brave Search API."),
    ),
    (
        "playwright",
        &["page", "element", "screenshot", "tab"],
        Some(
            "Browser automation with Playwright: navigate pages, click, type and take screenshots.",
        ),
    ),
    ("notion", &["page", "database", "block", "comment"], None),
    (
        "linear",
        &["issue", "project", "cycle", "team"],
        Some("Linear issue tracking: issues, projects, cycles and teams."),
    ),
    ("jira", &["issue", "sprint", "board", "worklog"], None),
    ("confluence", &["page", "space", "attachment"], None),
    (
        "google-drive",
        &["file", "folder", "permission"],
        Some("Search, read and share files in Google Drive."),
    ),
    ("gmail", &["email", "draft", "label", "attachment"], None),
    (
        "google-calendar",
        &["event", "calendar", "attendee"],
        Some("Create and manage Google Calendar events."),
    ),
    (
        "sentry",
        &["issue", "event", "release", "project"],
        Some("Sentry error monitoring: look up issues, stack traces and releases."),
    ),
    (
        "stripe",
        &[
            "customer",
            "invoice",
            "payment_intent",
            "refund",
            "subscription",
        ],
        None,
    ),
    (
        "supabase",
        &["project", "table", "migration", "edge_function"],
        Some("Manage Supabase projects, databases and edge functions."),
    ),
    ("redis", &["key", "hash", "stream", "list"], None),
    ("sqlite", &["table", "query", "insight"], None),
    (
        "mongodb",
        &["collection", "document", "index"],
        Some("Query and administer MongoDB databases and Atlas clusters."),
    ),
    ("docker", &["container", "image", "volume", "network"], None),
    (
        "kubernetes",
        &["pod", "deployment", "service", "namespace", "log"],
        Some("Inspect and operate Kubernetes clusters with kubectl-like tools."),
    ),
    (
        "aws-docs",
        &["documentation_page", "recommendation"],
        Some("Search and read AWS documentation."),
    ),
    (
        "cloudflare",
        &["worker", "kv_namespace", "r2_bucket", "d1_database"],
        None,
    ),
    (
        "figma",
        &["file", "node", "component", "image"],
        Some("Read Figma designs: files, frames, components and images."),
    ),
    ("excel", &["workbook", "worksheet", "range", "chart"], None),
    ("word", &["document", "paragraph", "table", "comment"], None),
    (
        "powerpoint",
        &["presentation", "slide", "shape"],
        Some("Create and edit PowerPoint presentations."),
    ),
    ("memory", &["entity", "relation", "observation"], None),
    (
        "fetch",
        &["url", "markdown"],
        Some("Fetches a URL from the internet and extracts its contents as markdown."),
    ),
    ("time", &["time", "timezone"], None),
    (
        "git",
        &["commit", "branch", "diff", "log"],
        Some("Read, search and manipulate Git repositories."),
    ),
    (
        "everything",
        &["resource", "prompt", "sample", "notification"],
        Some("Test server that exercises all the features of the MCP protocol."),
    ),
    ("sequential-thinking", &["thought", "step"], None),
    (
        "context7",
        &["library_doc", "library_id"],
        Some("Up-to-date code documentation for any library, for LLMs and AI code editors."),
    ),
    ("todoist", &["task", "project", "label"], None),
    (
        "hubspot",
        &["contact", "company", "deal", "ticket"],
        Some("HubSpot CRM: contacts, companies, deals and tickets."),
    ),
];

const VERBS: &[(&str, &str)] = &[
    ("list", "Lists the {e}s"),
    ("get", "Gets one {e} by its id"),
    ("search", "Searches {e}s matching a query"),
    ("create", "Creates a new {e}"),
    ("update", "Updates the fields of a {e}"),
    ("delete", "Deletes a {e}"),
    ("export", "Exports a {e} as JSON"),
    ("archive", "Archives a {e}"),
];

/// Extra words for servers past the named ones: `acme-billing`, `north-crm`, …
const PREFIXES: &[&str] = &[
    "acme", "north", "blue", "orbit", "delta", "maple", "zen", "atlas",
];
const DOMAINS: &[(&str, &[&str])] = &[
    ("billing", &["invoice", "payment", "credit_note"]),
    ("crm", &["lead", "account", "opportunity"]),
    ("support", &["ticket", "macro", "agent"]),
    ("inventory", &["sku", "warehouse", "stock_level"]),
    ("analytics", &["report", "dashboard", "metric"]),
    ("hr", &["employee", "leave_request", "payslip"]),
    ("shipping", &["shipment", "label", "carrier"]),
    ("wiki", &["article", "category", "revision"]),
];

/// One generated catalog: its tools, and per server what it says it is for.
pub struct Catalog {
    pub tools: Vec<ToolDef>,
    pub about: BTreeMap<String, String>,
}

fn server(i: usize) -> (String, Vec<String>, Option<String>) {
    if let Some((name, entities, about)) = SERVERS.get(i) {
        return (
            (*name).to_owned(),
            entities.iter().map(|e| (*e).to_owned()).collect(),
            about.map(str::to_owned),
        );
    }
    let k = i - SERVERS.len();
    let (domain, entities) = DOMAINS[k % DOMAINS.len()];
    let prefix = PREFIXES[(k / DOMAINS.len()) % PREFIXES.len()];
    let about = k
        .is_multiple_of(2)
        .then(|| format!("The {prefix} {domain} system's API."));
    (
        format!("{prefix}-{domain}"),
        entities.iter().map(|e| (*e).to_owned()).collect(),
        about,
    )
}

fn tool(server: &str, entities: &[String], j: usize) -> ToolDef {
    let entity = &entities[j % entities.len()];
    let (verb, sentence) = VERBS[(j / entities.len()) % VERBS.len()];
    let round = j / (entities.len() * VERBS.len());
    let name = if round == 0 {
        format!("{verb}_{entity}")
    } else {
        format!("{verb}_{entity}_v{}", round + 1)
    };
    let spaced = entity.replace('_', " ");
    let required = match verb {
        "list" => json!([]),
        "search" => json!(["query"]),
        _ => json!(["id"]),
    };
    let mut t = ToolDef::with_schema(
        server,
        &name,
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": format!("The {spaced}'s id")},
                "query": {"type": "string"},
                "limit": {"type": "integer", "default": 20},
                "fields": {"type": "object", "additionalProperties": true}
            },
            "required": required
        }),
    );
    t.description = format!(
        "{}. Returns the result as JSON; see the {server} docs for the fields.",
        sentence.replace("{e}", &spaced)
    );
    t.read_only = matches!(verb, "list" | "get" | "search" | "export");
    if verb == "get" {
        t.output_schema = Some(
            json!({"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}, "required": ["id"]})
                .into(),
        );
    }
    t
}

/// `tools` tools spread over `servers` servers (the first ones get the remainder).
pub fn catalog(servers: usize, tools: usize) -> Catalog {
    let mut out = Catalog {
        tools: Vec::with_capacity(tools),
        about: BTreeMap::new(),
    };
    for i in 0..servers {
        let (name, entities, about) = server(i);
        let count = tools / servers + usize::from(i < tools % servers);
        out.tools
            .extend((0..count).map(|j| tool(&name, &entities, j)));
        if let Some(about) = about {
            out.about.insert(name, about);
        }
    }
    out
}

/// 624 tools on the 36 named servers, spread unevenly as in real sets (3 to 40 per server).
pub fn thirty_six_servers() -> Catalog {
    let mut out = Catalog {
        tools: Vec::new(),
        about: BTreeMap::new(),
    };
    let mut left = 624usize;
    for i in 0..36 {
        let (name, entities, about) = server(i);
        let count = if i == 35 { left } else { 3 + (i * 11) % 30 };
        left -= count;
        out.tools
            .extend((0..count).map(|j| tool(&name, &entities, j)));
        if let Some(about) = about {
            out.about.insert(name, about);
        }
    }
    out
}
