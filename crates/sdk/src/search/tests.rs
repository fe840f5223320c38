//! Ranking checks on a generated catalog of about 1,000 realistic tools.

use serde_json::{Map, Value, json};

use super::*;
use crate::Sdk;
use crate::tooldef::ToolDef;

/// (server, tool, description, parameters as (name, description)).
type Spec = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

const HAND_WRITTEN: &[Spec] = &[
    (
        "gmail",
        "send_email",
        "Send an email message to one or more recipients.",
        &[
            ("to", "Recipient addresses"),
            ("subject", "Subject line"),
            ("body", "Plain text body"),
        ],
    ),
    (
        "gmail",
        "search_emails",
        "Search the mailbox using Gmail query syntax.",
        &[
            ("query", "Gmail search query"),
            ("maxResults", "Maximum messages"),
        ],
    ),
    (
        "gmail",
        "get_thread",
        "Get all messages of one email thread.",
        &[("threadId", "")],
    ),
    (
        "weather",
        "get_forecast",
        "Get the weather forecast for a city for the next days.",
        &[("city", "City name"), ("days", "Number of days")],
    ),
    (
        "weather",
        "get_current_conditions",
        "Current temperature, wind and conditions at a location.",
        &[("location", "")],
    ),
    (
        "github",
        "create_issue",
        "Create a new issue in a GitHub repository.",
        &[("owner", ""), ("repo", ""), ("title", ""), ("body", "")],
    ),
    (
        "github",
        "list_pull_requests",
        "List pull requests of a repository, filtered by state.",
        &[
            ("owner", ""),
            ("repo", ""),
            ("state", "open, closed or all"),
        ],
    ),
    (
        "github",
        "merge_pull_request",
        "Merge a pull request.",
        &[("owner", ""), ("repo", ""), ("pullNumber", "")],
    ),
    (
        "github",
        "get_file_contents",
        "Get the contents of a file or directory in a repository.",
        &[("owner", ""), ("repo", ""), ("path", "")],
    ),
    (
        "github",
        "search_code",
        "Search code across GitHub repositories.",
        &[("q", "Search query")],
    ),
    (
        "slack",
        "post_message",
        "Post a message to a Slack channel.",
        &[("channel", "Channel id"), ("text", "Message text")],
    ),
    (
        "slack",
        "list_channels",
        "List public channels in the workspace.",
        &[("limit", "")],
    ),
    (
        "slack",
        "add_reaction",
        "Add an emoji reaction to a message.",
        &[("channel", ""), ("timestamp", ""), ("name", "Emoji name")],
    ),
    (
        "postgres",
        "query",
        "Run a read-only SQL query against the database.",
        &[("sql", "SQL statement")],
    ),
    (
        "postgres",
        "list_tables",
        "List tables in the database schema.",
        &[("schema", "")],
    ),
    (
        "filesystem",
        "read_file",
        "Read the complete contents of a file from disk.",
        &[("path", "")],
    ),
    (
        "filesystem",
        "write_file",
        "Create or overwrite a file with new content.",
        &[("path", ""), ("content", "")],
    ),
    (
        "filesystem",
        "list_directory",
        "List the entries of a directory.",
        &[("path", "")],
    ),
    (
        "calendar",
        "create_event",
        "Create a calendar event such as a meeting with attendees.",
        &[("title", ""), ("start", ""), ("end", ""), ("attendees", "")],
    ),
    (
        "calendar",
        "list_events",
        "List upcoming events in a calendar.",
        &[("calendarId", ""), ("timeMin", "")],
    ),
    (
        "stripe",
        "refund_payment",
        "Refund a payment, fully or partially.",
        &[("paymentIntent", ""), ("amount", "")],
    ),
    (
        "stripe",
        "create_customer",
        "Create a customer in Stripe.",
        &[("email", ""), ("name", "")],
    ),
    (
        "translate",
        "translate_text",
        "Translate text into a target language.",
        &[("text", ""), ("targetLanguage", "e.g. fr, de")],
    ),
    (
        "maps",
        "get_directions",
        "Get driving, walking or transit directions between two places.",
        &[("origin", ""), ("destination", ""), ("mode", "")],
    ),
    (
        "maps",
        "geocode",
        "Convert an address into latitude and longitude coordinates.",
        &[("address", "")],
    ),
    (
        "spotify",
        "play_track",
        "Start playing a song on the active device.",
        &[("trackUri", "")],
    ),
    (
        "jira",
        "transition_issue",
        "Move a Jira ticket to another status.",
        &[("issueKey", ""), ("transition", "")],
    ),
    (
        "notion",
        "create_page",
        "Create a page in a Notion database or as a child of a page.",
        &[("parent", ""), ("title", "")],
    ),
    (
        "browser",
        "take_screenshot",
        "Capture a screenshot of the current web page.",
        &[("fullPage", "")],
    ),
    (
        "browser",
        "navigate",
        "Open a URL in the browser.",
        &[("url", "")],
    ),
    (
        "fx",
        "convert_currency",
        "Convert an amount between currencies at the latest exchange rate.",
        &[("from", ""), ("to", ""), ("amount", "")],
    ),
    (
        "stocks",
        "get_quote",
        "Latest stock price quote for a ticker symbol.",
        &[("symbol", "")],
    ),
    (
        "everything",
        "get-sum",
        "Returns the sum of two numbers.",
        &[("a", ""), ("b", "")],
    ),
    (
        "catalog",
        "fetchUserProfile",
        "Fetch a user's profile by id.",
        &[("userId", "")],
    ),
    (
        "k8s",
        "get_pod_logs",
        "Fetch logs of a Kubernetes pod container.",
        &[("namespace", ""), ("pod", ""), ("container", "")],
    ),
    (
        "k8s",
        "scale_deployment",
        "Scale a deployment to a number of replicas.",
        &[("namespace", ""), ("name", ""), ("replicas", "")],
    ),
];

/// (query, expected function name).
const QUERIES: &[(&str, &str)] = &[
    ("send an email to my boss", "gmail_send_email"),
    (
        "what's the weather forecast in Paris this week",
        "weather_get_forecast",
    ),
    (
        "current temperature outside",
        "weather_get_current_conditions",
    ),
    (
        "open a new github issue about the crash",
        "github_create_issue",
    ),
    ("list open pull requests", "github_list_pull_requests"),
    ("merge the PR", "github_merge_pull_request"),
    ("post a message in the slack channel", "slack_post_message"),
    ("run a SQL query on the database", "postgres_query"),
    ("read a file from disk", "filesystem_read_file"),
    (
        "schedule a meeting with Bob tomorrow",
        "calendar_create_event",
    ),
    ("refund a customer's payment", "stripe_refund_payment"),
    ("translate this text to French", "translate_translate_text"),
    (
        "driving directions from home to the airport",
        "maps_get_directions",
    ),
    ("coordinates of an address", "maps_geocode"),
    ("play a song", "spotify_play_track"),
    ("screenshot of the web page", "browser_take_screenshot"),
    (
        "convert 100 dollars to euros exchange rate",
        "fx_convert_currency",
    ),
    ("stock price of AAPL", "stocks_get_quote"),
    ("everything_get_sum", "everything_get_sum"),
    ("get-sum", "everything_get_sum"),
    ("fetchUserProfile", "catalog_fetch_user_profile"),
    ("logs of a kubernetes pod", "k8s_get_pod_logs"),
    ("scale deployment replicas", "k8s_scale_deployment"),
    ("search emails in my inbox", "gmail_search_emails"),
    ("list tables in postgres", "postgres_list_tables"),
];

const FILLER_SERVERS: &[&str] = &[
    "crm",
    "erp",
    "hr",
    "helpdesk",
    "shop",
    "warehouse",
    "billing",
    "wiki",
    "cms",
    "analytics",
    "devops",
    "lms",
];
const FILLER_NOUNS: &[&str] = &[
    "invoice",
    "customer",
    "order",
    "product",
    "shipment",
    "employee",
    "ticket",
    "contract",
    "lead",
    "opportunity",
    "campaign",
    "vendor",
    "supplier",
    "asset",
    "license",
    "course",
    "student",
    "grade",
    "article",
    "category",
    "tag",
    "comment",
    "attachment",
    "report",
    "dashboard",
    "widget",
    "pipeline",
    "build",
    "release",
    "environment",
    "secret",
    "webhook",
    "role",
    "permission",
    "team",
    "department",
    "holiday",
    "timesheet",
    "expense",
    "budget",
    "forecast",
    "quota",
    "coupon",
    "discount",
    "cart",
    "wishlist",
    "review",
    "rating",
    "survey",
    "form",
    "template",
    "workflow",
    "approval",
    "note",
    "task",
    "project",
    "milestone",
    "sprint",
    "backlog",
    "label",
    "message",
    "event",
    "file",
    "payment",
    "user",
];
const FILLER_VERBS: &[(&str, &str)] = &[
    ("list", "List {n}s, with paging and filters."),
    ("get", "Get one {n} by its id."),
    ("create", "Create a new {n} record."),
    ("update", "Update fields of an existing {n}."),
    ("delete", "Delete a {n} permanently."),
    ("search", "Search {n}s by keyword."),
    ("export", "Export {n}s as CSV."),
    (
        "archive",
        "Archive a {n} so it is hidden from default views.",
    ),
    ("count", "Count {n}s matching a filter."),
    ("import", "Import {n}s from a CSV upload."),
    ("restore", "Restore an archived {n}."),
    ("assign", "Assign a {n} to a team member."),
];

fn tool(server: &str, name: &str, description: &str, params: &[(&str, &str)]) -> ToolDef {
    let properties: Map<String, Value> = params
        .iter()
        .map(|(p, d)| ((*p).to_owned(), json!({"type": "string", "description": d})))
        .collect();
    ToolDef {
        server: server.to_owned(),
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: json!({"type": "object", "properties": properties}).into(),
        output_schema: None,
        read_only: false,
        destructive: false,
        policy: crate::policy::Decision::Allow,
    }
}

fn catalog() -> Vec<ToolDef> {
    let mut tools: Vec<ToolDef> = HAND_WRITTEN
        .iter()
        .map(|(s, t, d, p)| tool(s, t, d, p))
        .collect();
    let mut i = 0usize;
    'fill: for noun in FILLER_NOUNS {
        for (verb, template) in FILLER_VERBS {
            if tools.len() >= 1_000 {
                break 'fill;
            }
            let server = FILLER_SERVERS
                .get(i % FILLER_SERVERS.len())
                .copied()
                .unwrap_or("crm");
            i += 7;
            let description = template.replace("{n}", noun);
            tools.push(tool(
                server,
                &format!("{verb}_{noun}"),
                &description,
                &[("id", ""), ("filter", "")],
            ));
        }
        for server in FILLER_SERVERS.iter().take(3) {
            let name = format!("{noun}Stats");
            tools.push(tool(
                server,
                &name,
                &format!("Statistics about {noun}s over time."),
                &[("period", "")],
            ));
        }
    }
    tools
}

#[test]
fn generated_catalog_ranks_the_intended_tool_in_the_top_three() {
    let tools = catalog();
    assert!(tools.len() >= 900, "catalog has {} tools", tools.len());
    let sdk = Sdk::build(&tools);
    let mut misses = Vec::new();
    for (query, expected) in QUERIES {
        let hits: Vec<String> = sdk.search(query, 3).into_iter().map(|h| h.name).collect();
        if !hits.iter().any(|h| h == expected) {
            misses.push(format!("{query:?}: expected {expected}, got {hits:?}"));
        }
    }
    assert!(misses.len() <= 1, "misses:\n{}", misses.join("\n"));
}

#[test]
fn exact_name_wins_and_ties_break_by_name() {
    let sdk = Sdk::build(&catalog());
    let top = sdk.search("crm_list_invoice", 1);
    assert_eq!(
        top.first().map(|h| h.name.as_str()),
        Some("crm_list_invoice")
    );
    let hits = sdk.search("zzzzqx", 5);
    assert!(hits.is_empty());
}

#[test]
fn empty_query_lists_by_name() {
    let sdk = Sdk::build(&catalog());
    let names: Vec<String> = sdk.search("  ", 3).into_iter().map(|h| h.name).collect();
    let first: Vec<String> = sdk
        .functions()
        .iter()
        .take(3)
        .map(|f| f.py_name.clone())
        .collect();
    assert_eq!(names, first);
    assert!(sdk.search("email", 0).is_empty());
}

#[test]
fn hits_carry_signature_and_summary() {
    let sdk = Sdk::build(&catalog());
    let hit = sdk
        .search("send email", 1)
        .into_iter()
        .next()
        .expect("a hit");
    assert_eq!(hit.name, "gmail_send_email");
    assert!(
        hit.signature
            .starts_with("gmail_send_email(to: str | None = None"),
        "{}",
        hit.signature
    );
    assert_eq!(
        hit.summary,
        "Send an email message to one or more recipients."
    );
}

#[test]
fn stemming() {
    assert_eq!(stem("files"), stem("file"));
    assert_eq!(stem("created"), stem("create"));
    assert_eq!(stem("creating"), stem("create"));
    assert_eq!(stem("repositories"), stem("repository"));
    assert_eq!(stem("running"), "run");
    assert_eq!(stem("messages"), stem("message"));
    assert_eq!(stem("string"), "string");
    assert_eq!(stem("status"), "status");
}
