//! The SDK built from example catalogs; `properties` builds it from arbitrary ones.

use serde_json::json;

use super::*;

mod properties;

use properties::python_parse_failures;

fn tool(server: &str, name: &str, input_schema: Value) -> ToolDef {
    ToolDef::with_schema(server, name, input_schema)
}

fn names(sdk: &Sdk) -> Vec<&str> {
    sdk.functions().iter().map(|f| f.py_name.as_str()).collect()
}

fn search_issues() -> ToolDef {
    ToolDef {
        server: "github".into(),
        name: "searchIssues".into(),
        description: "Search issues and pull requests across repositories.\n\nUses GitHub's \"\"\"search\"\"\" syntax, e.g. `is:open label:bug`. Paths like C:\\temp are fine.".into(),
        input_schema: json!({
            "type": "object",
            "$defs": {"Order": {"type": "string", "enum": ["asc", "desc"], "description": "Sort order"}},
            "properties": {
                "q": {"type": "string", "description": "Search query"},
                "sort": {"enum": ["comments", "created", "updated"], "description": "Sort field"},
                "order": {"$ref": "#/$defs/Order", "default": "desc"},
                "per_page": {"type": "integer", "default": 30, "description": "Results per page\n(max 100)"},
                "labels": {"type": ["array", "null"], "items": {"type": "string"}},
                "from": {"type": "string", "format": "date"},
                "repo-owner": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "filters": {"type": "object", "additionalProperties": {"type": "boolean"}, "default": {"archived": false}},
                "owner": {"type": "string"}
            },
            "required": ["q", "owner"]
        })
        .into(),
        output_schema: Some(
            json!({
            "type": "object",
            "properties": {"total_count": {"type": "integer"}, "items": {"type": "array", "items": {"type": "object"}}},
            "required": ["total_count"]
        })
            .into(),
        ),
        read_only: true,
        destructive: false,
        policy: crate::policy::Decision::Allow,
    }
}

#[test]
fn design_naming_examples() {
    let sdk = Sdk::build(&[
        tool("everything", "get-sum", json!({})),
        tool("catalog", "fetchUserProfile", json!({})),
        tool("catalog", "v2.lookup", json!({})),
        tool("catalog", "Send_Email", json!({})),
    ]);
    assert_eq!(
        names(&sdk),
        [
            "catalog_fetch_user_profile",
            "catalog_send_email",
            "catalog_v2_lookup",
            "everything_get_sum"
        ]
    );
}

#[test]
fn collisions_are_assigned_in_server_tool_order() {
    let tools = [
        tool("srv", "get_sum", json!({})),
        tool("srv", "get-sum", json!({})),
        tool("srv", "getSum", json!({})),
        tool("search", "tools", json!({})),
        tool("describe", "tool", json!({})),
    ];
    let sdk = Sdk::build(&tools);
    assert_eq!(
        names(&sdk),
        [
            "describe_tool_2",
            "search_tools_2",
            "srv_get_sum",
            "srv_get_sum_2",
            "srv_get_sum_3"
        ]
    );
    assert_eq!(
        sdk.get("srv_get_sum").map(|f| f.tool.as_str()),
        Some("get-sum")
    );
    assert_eq!(
        sdk.get("srv_get_sum_2").map(|f| f.tool.as_str()),
        Some("getSum")
    );
    assert_eq!(
        sdk.get("srv_get_sum_3").map(|f| f.tool.as_str()),
        Some("get_sum")
    );
    let mut reversed = tools.to_vec();
    reversed.reverse();
    assert_eq!(Sdk::build(&reversed).functions(), sdk.functions());
}

#[test]
fn realistic_signature_snapshot() {
    let sdk = Sdk::build(&[search_issues()]);
    let f = sdk.get("github_search_issues").expect("function");
    assert_eq!(
        f.signature(),
        "github_search_issues(q: str, owner: str, sort: Literal['comments', 'created', 'updated'] | None = None, \
         order: Literal['asc', 'desc'] = 'desc', per_page: int = 30, labels: list[str] | None = None, \
         from_: str | None = None, repo_owner: str | None = None, \
         filters: dict[str, bool] = {'archived': False}) -> {total_count: int, items: list[dict[str, Any]]}"
    );
    assert_eq!(
        f.summary,
        "Search issues and pull requests across repositories."
    );
    let order = f
        .params
        .iter()
        .find(|p| p.py_name == "order")
        .expect("order");
    assert_eq!(order.description, "Sort order");
    let owner = f
        .params
        .iter()
        .find(|p| p.wire_name == "repo-owner")
        .expect("repo-owner");
    assert_eq!(owner.py_name, "repo_owner");
}

#[test]
fn untypable_schemas_take_kwargs() {
    for schema in [
        json!("garbage"),
        json!(null),
        json!([1, 2]),
        json!({"type": "string"}),
        json!({"type": "object", "properties": [1]}),
        json!({"anyOf": [{"type": "object"}]}),
        json!({"type": "object", "additionalProperties": true}),
    ] {
        let sdk = Sdk::build(&[tool("s", "t", schema.clone())]);
        let f = sdk.get("s_t").expect("function");
        assert!(f.variadic_kwargs, "{schema}");
        assert_eq!(f.signature(), "s_t(**kwargs: Any) -> str");
    }
    let typed = Sdk::build(&[tool("s", "t", json!({"type": "object"}))]);
    assert_eq!(
        typed.get("s_t").map(SdkFunction::signature).as_deref(),
        Some("s_t() -> str")
    );
    let via_ref = json!({"$ref": "#/$defs/Args", "$defs": {"Args": {"properties": {"x": {"type": "integer"}}, "required": ["x"]}}});
    let sdk = Sdk::build(&[tool("s", "t", via_ref)]);
    assert_eq!(
        sdk.get("s_t").map(SdkFunction::signature).as_deref(),
        Some("s_t(x: int) -> str")
    );
}

#[test]
fn describe_by_any_name() {
    let mut other = tool("gitlab", "searchIssues", json!({}));
    other.description = "GitLab".into();
    let sdk = Sdk::build(&[search_issues(), other, tool("fs", "read_file", json!({}))]);
    let d = sdk.describe("github_search_issues").expect("by py_name");
    assert_eq!(d["server"], "github");
    assert_eq!(d["tool"], "searchIssues");
    assert_eq!(d["read_only"], true);
    assert_eq!(
        d["parameters"][0],
        json!({"name": "q", "type": "str", "required": true, "default": null, "description": "Search query"})
    );
    assert_eq!(d["parameters"][3]["default"], json!("desc"));
    assert!(
        d["description"]
            .as_str()
            .is_some_and(|s| s.contains("C:\\temp"))
    );
    assert_eq!(d["output_schema"]["required"], json!(["total_count"]));
    assert_eq!(
        sdk.describe("gitlab.searchIssues")
            .map(|d| d["name"].clone()),
        Some(json!("gitlab_search_issues"))
    );
    assert_eq!(
        sdk.describe("read_file").map(|d| d["name"].clone()),
        Some(json!("fs_read_file"))
    );
    assert_eq!(
        sdk.describe("fs_read_file")
            .map(|d| d["output_schema"].clone()),
        Some(Value::Null)
    );
    assert!(sdk.describe("searchIssues").is_none(), "ambiguous raw name");
    assert!(sdk.describe("nope").is_none());
}

fn catalog(n: usize) -> Vec<ToolDef> {
    (0..n)
        .map(|i| {
            let mut t = tool(
                &format!("server{}", i % 7),
                &format!("doThing{i}"),
                json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}),
            );
            t.description = format!("Does thing number {i}. More details here.");
            t
        })
        .collect()
}

#[test]
fn description_is_identical_for_any_input_order() {
    let tools = catalog(40);
    let mut shuffled = tools.clone();
    shuffled.reverse();
    shuffled.rotate_left(13);
    let (a, b) = (Sdk::build(&tools), Sdk::build(&shuffled));
    for budget in [usize::MAX, 2_000, 900, 0] {
        assert_eq!(a.description(budget), b.description(budget));
    }
    assert_eq!(a.stub(), b.stub());
}

#[test]
fn description_lists_signatures_when_they_fit() {
    let sdk = Sdk::build(&catalog(3));
    let text = sdk.description(100_000);
    assert!(text.contains("ToolError"), "{text}");
    assert!(text.contains("search_tools(query, limit=10)"), "{text}");
    assert!(
        text.contains("server0_do_thing0(x: int)  # Does thing number 0.\n"),
        "{text}"
    );
    assert!(text.lines().count() <= 16, "{text}");
}

#[test]
fn over_budget_the_head_keeps_every_server_and_signatures_fill_the_rest() {
    let sdk = Sdk::build(&catalog(40));
    let full = sdk.description(usize::MAX);
    assert!(full.contains("\nFunctions (40):\n"), "{full}");
    let cut = sdk.description(full.chars().count() - 1);
    let head: String = cut.chars().take(HEAD_CHARS).collect();
    for server in 0..7 {
        assert!(head.contains(&format!("\nserver{server} (")), "{head}");
    }
    assert!(head.contains("describe_tool(name)"), "{head}");
    assert!(
        cut.contains("\n\nSignatures (") && cut.contains(" of 40, most useful first):"),
        "{cut}"
    );
    assert!(cut.chars().count() < full.chars().count(), "{cut}");

    let tight = sdk.description(1_600);
    assert!(
        tight.chars().count() <= 1_600,
        "{} chars:\n{tight}",
        tight.chars().count()
    );
    assert!(tight.contains("7 servers, 40 tools."), "{tight}");
    assert!(tight.contains("search_tools("), "{tight}");
}

#[test]
fn a_thousand_tools_on_three_servers_fit_the_head() {
    let tools: Vec<ToolDef> = (0..1_000)
        .map(|i| {
            let verb = ["get", "list", "refund", "archive"][i % 4];
            let entity = ["invoice", "invoices", "order", "shipment", "ticket"][i % 5];
            tool(
                &format!("srv{}", i % 3),
                &format!("{verb}_{entity}_{i}"),
                json!({}),
            )
        })
        .collect();
    let text = Sdk::build(&tools).description(HEAD_CHARS);
    assert!(
        text.chars().count() <= HEAD_CHARS,
        "{} chars:\n{text}",
        text.chars().count()
    );
    assert!(text.contains("3 servers, 1000 tools."), "{text}");
    // What a server is for comes from its tools' shared terms, plurals folded, no counts;
    // generic verbs are no purpose.
    assert!(text.contains("\nsrv0 (334): invoice, "), "{text}");
    assert!(!text.contains("get, "), "{text}");
}

#[test]
fn a_server_that_says_what_it_is_for_is_described_in_its_words() {
    let sdk = Sdk::build(&catalog(14)).with_about(
        [(
            "server3".to_owned(),
            "Tracks parcels across carriers. Call track() first.".to_owned(),
        )]
        .into(),
    );
    let text = sdk.description(HEAD_CHARS);
    assert!(
        text.contains("\nserver3 (2): Tracks parcels across carriers\n"),
        "{text}"
    );
    let instructions = sdk.instructions(HEAD_CHARS);
    assert!(
        instructions.contains("\nserver3 (2): Tracks parcels across carriers\n"),
        "{instructions}"
    );
    assert!(instructions.contains("`session`"), "{instructions}");
}

#[test]
fn instructions_and_description_do_not_change_while_servers_connect() {
    let starting = |reason: Option<&str>, remembered: usize| Connecting {
        server: "server1".into(),
        since: std::time::Instant::now(),
        reason: reason.map(str::to_owned),
        remembered,
    };
    let texts = |sdk: Sdk| (sdk.instructions(usize::MAX), sdk.description(8_000));
    // Issue 37: whether a server is connecting, failing or up is timing, not
    // catalog; a change there would cost every client its prompt cache.
    let live = texts(Sdk::build(&catalog(3)));
    for state in [starting(None, 2), starting(Some("handshake failed"), 2)] {
        let remembered = Sdk::build(&catalog(3)).with_connecting(vec![state]);
        assert_eq!(texts(remembered), live);
    }
    // A server whose tools are not known is named the same way whatever it does.
    let unknown = |reason| {
        let mut state = starting(reason, 0);
        state.server = "late".into();
        texts(Sdk::build(&catalog(3)).with_connecting(vec![state]))
    };
    let (instructions, description) = unknown(None);
    assert_eq!(
        unknown(Some("exited")),
        (instructions.clone(), description.clone())
    );
    for text in [&instructions, &description] {
        assert!(text.contains("\nlate (not listed yet)"), "{text}");
        assert!(
            !text.contains("connecting") && !text.contains("exited"),
            "{text}"
        );
    }
    assert!(instructions.chars().count() <= HEAD_CHARS, "{instructions}");
}

#[test]
fn description_without_tools() {
    let text = Sdk::build(&[]).description(10_000);
    assert!(text.contains("No upstream tools are connected"), "{text}");
    assert!(Sdk::build(&[]).stub().contains("def describe_tool("));
}

#[test]
fn stub_has_typed_dicts_and_docstrings() {
    let sdk = Sdk::build(&[search_issues()]);
    let stub = sdk.stub();
    assert!(
        stub.contains("from typing import Any, Literal, TypedDict\n"),
        "{stub}"
    );
    assert!(
        stub.contains("class GithubSearchIssuesResult(TypedDict):\n    total_count: int\n"),
        "{stub}"
    );
    assert!(stub.contains(") -> GithubSearchIssuesResult:\n"), "{stub}");
    assert!(
        stub.contains(r#"Uses GitHub's \"\""search\"\"" syntax"#),
        "{stub}"
    );
    assert!(stub.contains(r"C:\\temp"), "{stub}");
    assert!(stub.contains("        from_ (sent as 'from')\n"), "{stub}");
    assert!(
        stub.contains("        per_page: Results per page (max 100)\n"),
        "{stub}"
    );
}

#[test]
fn shared_result_shapes_are_written_once() {
    let returning = |name: &str, output: Value| ToolDef {
        output_schema: Some(output.into()),
        ..tool(
            "files",
            name,
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        )
    };
    let content = json!({"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]});
    let content_maybe = json!({"type": "object", "properties": {"content": {"type": "string"}}});
    let sdk = Sdk::build(&[
        returning("read", content.clone()),
        returning("stat", content.clone()),
        returning("write", content_maybe),
        returning(
            "weather",
            json!({"type": "object", "properties": {"t": {"type": "number"}}}),
        ),
    ]);
    let text = sdk.description(100_000);
    assert!(
        text.contains("Result types (dicts): Content = {content: str}\n"),
        "{text}"
    );
    assert_eq!(text.matches("{content: str}").count(), 1, "{text}");
    assert!(
        text.contains("files_read(path: str | None = None) -> Content"),
        "{text}"
    );
    assert!(
        text.contains("files_write(path: str | None = None) -> Content"),
        "{text}"
    );
    // Used once: named nowhere, written in place.
    assert!(text.contains("-> {t: float}"), "{text}");
    let stub = sdk.stub();
    assert_eq!(
        stub.matches("class Content(TypedDict):").count(),
        1,
        "{stub}"
    );
    // One tool may leave the field out, so the shared class says so.
    assert!(
        stub.contains("    content: str  # may be absent\n"),
        "{stub}"
    );
    assert!(
        stub.contains("def files_stat(path: str | None = None) -> Content:"),
        "{stub}"
    );
    assert!(
        stub.contains("class FilesWeatherResult(TypedDict):"),
        "{stub}"
    );
    if let Some(failures) = python_parse_failures(&[stub]) {
        assert!(failures.is_empty(), "{failures:?}");
    }
}

/// Any caller in-process can build a schema this deep (JSON text that deep never parses). It is
/// cut where it becomes a `ToolDef`; from there on, plain recursion is safe.
#[test]
fn ten_thousand_levels_do_not_overflow() {
    fn object(pairs: Vec<(&str, Value)>) -> Value {
        Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }
    fn deep() -> Value {
        let mut deep = json!({"type": "string"});
        for i in 0..10_000 {
            deep = if i % 2 == 0 {
                object(vec![("type", json!("array")), ("items", deep)])
            } else {
                let default = object(vec![("a", Value::Array(vec![json!(i)]))]);
                object(vec![
                    ("type", json!("object")),
                    ("properties", object(vec![("p", deep)])),
                    ("default", default),
                ])
            };
        }
        deep
    }
    let deep_default = object(vec![("default", deep())]);
    let properties = object(vec![("deep", deep()), ("with_default", deep_default)]);
    let input = object(vec![("type", json!("object")), ("properties", properties)]);
    let t = ToolDef {
        output_schema: Some(deep().into()),
        ..tool("s", "t", input)
    };
    let sdk = Sdk::build(std::slice::from_ref(&t));
    assert!(sdk.stub().contains("def s_t("));
    let described = sdk.describe("s_t").expect("described");
    assert!(!sdk.search("deep", 5).is_empty());
    // Cloned and dropped by the derived impls: a small stack is enough.
    let small_stack = || std::thread::Builder::new().stack_size(256 * 1024);
    std::thread::scope(|scope| {
        let cloned = small_stack().spawn_scoped(scope, || drop(sdk.clone()));
        assert!(cloned.expect("spawn").join().is_ok());
    });
    let dropped = small_stack().spawn(move || drop((sdk, described, t)));
    assert!(dropped.expect("spawn").join().is_ok());
}

mod fastmcp_wrappers {
    use super::*;

    fn tool(output: Value) -> ToolDef {
        ToolDef {
            server: "odd".into(),
            name: "slow".into(),
            description: String::new(),
            input_schema: json!({"type": "object", "properties": {}}).into(),
            output_schema: Some(output.into()),
            read_only: true,
            destructive: false,
            policy: crate::policy::Decision::Allow,
        }
    }

    #[test]
    fn fastmcp_result_wrappers_are_unwrapped() {
        let wrapped = json!({"type": "object", "title": "slowOutput", "properties": {"result": {"type": "string"}}, "required": ["result"]});
        let sdk = Sdk::build(&[tool(wrapped)]);
        let f = sdk.get("odd_slow").expect("function");
        assert!(f.unwrap_result);
        assert_eq!(f.signature(), "odd_slow() -> str");
        assert!(!sdk.stub().contains("OddSlowResult"));
    }

    #[test]
    fn a_real_result_field_is_kept() {
        let plain = json!({"type": "object", "title": "Report", "properties": {"result": {"type": "string"}}, "required": ["result"]});
        let sdk = Sdk::build(&[tool(plain)]);
        assert!(!sdk.get("odd_slow").expect("function").unwrap_result);
    }
}

#[test]
fn servers_still_connecting_explain_their_names_not_in_the_description() {
    let tools = [tool("files", "read", json!({"type": "object"}))];
    let plain = Sdk::build(&tools);
    let connecting = Sdk::build(&tools).with_connecting(vec![Connecting {
        server: "GitHub".into(),
        since: std::time::Instant::now(),
        reason: None,
        remembered: 0,
    }]);
    assert!(
        connecting
            .description(4000)
            .contains("\nGitHub (not listed yet)"),
        "{}",
        connecting.description(4000)
    );
    assert_eq!(plain.stub(), connecting.stub());
    let hits = connecting.search("", 10);
    assert_eq!(hits.last().map(|h| h.name.as_str()), Some("git_hub_*"));
    let owner = |name: &str| connecting.connecting_for(name).map(|c| c.server.as_str());
    assert_eq!(owner("git_hub_search_issues"), Some("GitHub"));
    assert_eq!(owner("GitHub.searchIssues"), Some("GitHub"));
    assert_eq!(
        owner("files_read"),
        None,
        "a connected tool is not affected"
    );
    assert_eq!(owner("git_hubx"), None);
    assert_eq!(owner("other"), None);
    let message = connecting
        .connecting_for("git_hub_x")
        .map(Connecting::message)
        .unwrap_or_default();
    assert!(
        message.starts_with("server 'GitHub' is still starting: connecting (started ")
            && message.ends_with(" ms ago); try again shortly"),
        "{message}"
    );
}
