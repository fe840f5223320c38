use serde_json::{Value, json};

use super::*;
use codemcp_sdk::tooldef::ToolDef;

fn tool(name: &str, input_schema: Value) -> ToolDef {
    ToolDef::with_schema("everything", name, input_schema)
}

fn sdk() -> Sdk {
    Sdk::build(&[
        tool(
            "get-sum",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        ),
        tool(
            "echo",
            json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        ),
        tool(
            "list-items",
            json!({"type": "object", "properties": {"depth": {"type": "integer"}, "tags": {"type": "array"}, "flag": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}),
        ),
        tool("raw", json!("not a schema")),
    ])
}

/// The findings of `code`, as the agent reads them.
fn found(code: &str) -> Vec<String> {
    found_after(code, &[])
}

fn found_after(code: &str, earlier: &[&str]) -> Vec<String> {
    let earlier: Vec<String> = earlier.iter().map(|n| (*n).to_owned()).collect();
    check(code, &sdk(), &earlier)
        .findings
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn calls_that_fit_the_catalog_pass() {
    let code = "x = everything_get_sum(1, b=2)\neverything_echo(message=f'{x}')\n\
                everything_list_items()\neverything_list_items(depth=' 3 ', tags=[1], flag='2')\n\
                everything_raw(anything=1)\nprint(len(search_tools('sum')))\ndescribe_tool('x')";
    assert_eq!(found(code), Vec::<String>::new());
}

#[test]
fn an_unknown_tool_is_reported_with_the_closest_names() {
    assert_eq!(
        found("x = 1\neverything_get_summ(a=1, b=2)"),
        [
            "line 2: name 'everything_get_summ' is not defined; closest tools: \
          everything_get_sum, everything_list_items, everything_echo"
        ]
    );
    // Not a server's prefix but a typo of a tool's name.
    assert_eq!(found("everthing_echo(message='hi')").len(), 1);
}

#[test]
fn argument_errors_read_as_the_runtime_raises_them() {
    let runtime = |positional: usize, keywords: &[&str]| {
        let keywords = keywords
            .iter()
            .map(|k| ((*k).to_owned(), Value::Null))
            .collect();
        let sdk = sdk();
        let get_sum = sdk.get("everything_get_sum").expect("in the catalog");
        let error = get_sum.bind_args(vec![Value::Null; positional], keywords);
        format!("line 1: {}", error.expect_err("does not bind"))
    };
    assert_eq!(
        found("everything_get_sum(a=1, c=2)"),
        [runtime(0, &["a", "c"])]
    );
    assert_eq!(found("everything_get_sum(1, 2, 3)"), [runtime(3, &[])]);
    assert_eq!(found("everything_get_sum(1)"), [runtime(1, &[])]);
    assert_eq!(found("everything_get_sum(1, a=2)"), [runtime(1, &["a"])]);
    assert_eq!(
        found("everything_raw(1)"),
        [
            "line 1: everything_raw() takes keyword arguments only (its parameters are not known), \
          but 1 positional argument was given"
        ]
    );
}

#[test]
fn literals_of_a_type_the_schema_rules_out_are_reported() {
    assert_eq!(
        found(
            "everything_get_sum('one', b=[2])\neverything_list_items(depth='deep', tags='a', flag=[2])"
        ),
        [
            "line 1: everything_get_sum() argument 'a' must be float, not str",
            "line 1: everything_get_sum() argument 'b' must be float, not list",
            "line 2: everything_list_items() argument 'depth' must be int, not str",
            "line 2: everything_list_items() argument 'tags' must be list, not str",
            "line 2: everything_list_items() argument 'flag' must be str or int, not list",
        ]
    );
}

#[test]
fn every_problem_is_reported_at_once_in_source_order() {
    let code = "def f():\n    return everything_echo(msg='x')\n\
                print(everthing_get_sum(1, 2))\n\n\neverything_get_sum(everything_echo(), 2)";
    let checked = check(code, &sdk(), &[]);
    let lines: Vec<usize> = checked.findings.iter().map(|f| f.line).collect();
    assert_eq!(lines, [2, 3, 6]);
    let error = checked.rejection().expect("an error");
    assert_eq!(error.line, 2);
    assert_eq!(error.exc_type, "TypeError", "the first problem's");
    assert!(
        error
            .message
            .starts_with("3 calls cannot work (found before running; nothing ran):\nline 2: "),
        "{}",
        error.message
    );
}

#[test]
fn calls_the_checker_cannot_see_are_left_to_run_time() {
    for code in [
        "f = everything_get_sum\nf(c=1)",
        "getattr(tools, 'everything_get_summ')()",
        "{'s': everything_get_sum}['s'](1)",
        "args = [1, 2, 3]\neverything_get_sum(*args)",
        "everything_get_sum(1, **{'c': 2})",
        "try:\n    everything_get_summ()\nexcept NameError:\n    pass",
        "with suppress(TypeError):\n    everything_get_sum(1)",
        "obj.everything_get_summ()",
        "frobnicate(1)",
        "print(max(1, 2))",
    ] {
        assert_eq!(found(code), Vec::<String>::new(), "{code}");
    }
}

#[test]
fn names_the_session_binds_are_not_tools() {
    for code in [
        "def everything_get_sum(x):\n    return x\neverything_get_sum(1)",
        "everything_total(1)\ndef everything_total(x):\n    return x",
        "from helpers import everything_total\neverything_total()",
        "def g(everything_echo):\n    return everything_echo(1, 2)",
        "from helpers import *\neverything_total()",
        "globals()['everything_total'] = print\neverything_total()",
    ] {
        assert_eq!(found(code), Vec::<String>::new(), "{code}");
    }
    assert_eq!(
        found_after(
            "everything_total()\neverything_get_sum(1)",
            &["everything_total", "everything_get_sum"]
        ),
        Vec::<String>::new()
    );
}

#[test]
fn bound_names_that_read_like_tools_are_handed_on() {
    let checked = check(
        "def everything_total():\n    pass\neverything_echo = 1\nhelper = 2\nevrything_echo = 3",
        &sdk(),
        &[],
    );
    assert_eq!(
        checked.bound_tool_names,
        ["everything_echo", "everything_total", "evrything_echo"]
    );
}

#[test]
fn code_that_does_not_parse_or_nests_too_deep_is_not_checked() {
    assert!(found("everything_get_summ(\nx = (").is_empty());
    let deep = format!(
        "everything_get_summ({}{})",
        "[".repeat(300),
        "]".repeat(300)
    );
    assert!(found(&deep).is_empty());
}

#[tokio::test]
async fn ten_thousand_bad_calls_are_checked_in_bounded_time_and_listed_in_part() {
    let code: String = (0..10_000)
        .map(|i| format!("everything_get_sum(c={i})\neverything_tool_{i}()\n"))
        .collect();
    let started = std::time::Instant::now();
    let checked = check_safely(code, Arc::new(sdk()), Vec::new()).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(checked.total, 20_000);
    assert_eq!(checked.findings.len(), MAX_LISTED);
    let error = checked.rejection().expect("an error");
    assert!(
        error.message.contains("… and 19950 more"),
        "{}",
        error.message
    );
    assert_eq!(checked.findings.last().map(|f| f.line), Some(MAX_LISTED));
}

#[tokio::test]
async fn a_long_operator_chain_is_not_checked_and_does_not_overflow() {
    let code = format!("x = 1{}\neverything_get_summ()", "+1".repeat(200_000));
    assert_eq!(
        check_safely(code, Arc::new(sdk()), Vec::new()).await.total,
        0
    );
}

#[test]
fn one_problem_is_one_line() {
    let error = check("everything_echo()", &sdk(), &[])
        .rejection()
        .expect("an error");
    assert_eq!(
        error.message,
        "line 1: everything_echo() missing 1 required argument: 'message' (found before running; nothing ran)"
    );
    assert!(
        check("everything_echo('hi')", &sdk(), &[])
            .rejection()
            .is_none()
    );
}

#[test]
fn resource_and_prompt_calls_are_checked_like_tool_calls() {
    let fine = "uri = 'demo://x'\nlist_resources()\nlist_prompts(server=None)\n\
                read_resource('everything', uri)\nget_prompt('everything', 'p', city='Paris', days=3)\n\
                f = read_resource\nf('everything')\ntry:\n    read_resource('everything')\nexcept TypeError:\n    pass";
    assert_eq!(found(fine), Vec::<String>::new());
    assert_eq!(
        found(
            "read_resource('everything')\nlist_prompts('a', 'b')\nget_prompt('s', 'p', flag=True)\n\
             list_resources(server=3)\nread_resource(uri='u', server='s', mime='x')"
        ),
        [
            "line 1: read_resource() missing 1 required argument: 'uri'",
            "line 2: list_prompts() takes 1 positional argument but 2 were given",
            "line 3: get_prompt() argument 'flag' must be str, not bool",
            "line 4: list_resources() argument 'server' must be str or None, not int",
            "line 5: read_resource() got an unexpected keyword argument 'mime' (valid: server, uri)",
        ]
    );
    let error = check("read_resource()", &sdk(), &[])
        .rejection()
        .expect("an error");
    assert_eq!(error.exc_type, "TypeError");
}

/// Tools with schemas as generators publish them (see `tests/schemas/published.json`).
fn published() -> Sdk {
    let fixture: Value =
        serde_json::from_str(include_str!("../../../../tests/schemas/published.json"))
            .expect("valid JSON");
    let tools: Vec<ToolDef> = fixture["schemas"]
        .as_array()
        .expect("schemas")
        .iter()
        .map(|entry| {
            let name = entry["name"].as_str().expect("name");
            ToolDef::with_schema("pub", name, entry["schema"].clone())
        })
        .collect();
    Sdk::build(&tools)
}

fn found_in_published(code: &str) -> Vec<String> {
    check(code, &published(), &[])
        .findings
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn union_accepts_each_member() {
    let code = "pub_pydantic_union(value=3)\npub_pydantic_union(value='three')\n\
                pub_pydantic_union(value=[3], when='2026-01-01')\npub_pydantic_union(3, None)\n\
                pub_hand_written_type_lists(value=True, timeout=None)\n\
                pub_hand_written_type_lists(value=1.5, timeout=30)\npub_hand_written_type_lists('s')";
    assert_eq!(found_in_published(code), Vec::<String>::new());
    assert_eq!(
        found_in_published("pub_pydantic_union(value={'a': 1})\npub_pydantic_union(value=['x'])"),
        [
            "line 1: pub_pydantic_union() argument 'value' must be int, str or list, not dict",
            "line 2: pub_pydantic_union() argument 'value' at [0] must be int, not str",
        ]
    );
}

#[test]
fn an_optional_list_refuses_a_bare_string() {
    assert_eq!(
        found_in_published(
            "pub_pydantic_optional_list(regions='us-east-1')\n\
             pub_pydantic_optional_list(regions=['us-east-1'])\npub_pydantic_optional_list(regions=None)"
        ),
        ["line 1: pub_pydantic_optional_list() argument 'regions' must be list or None, not str"]
    );
}

#[test]
fn discriminated_union_checks_the_const() {
    let fine = "pub_pydantic_discriminated_union(shape={'kind': 'circle', 'radius': 2})\n\
                pub_pydantic_discriminated_union(shape={'kind': 'square', 'side': 1})\n\
                pub_zod_to_json_schema(path='a', edits=[], target={'type': 'text', 'text': 'x'})";
    assert_eq!(found_in_published(fine), Vec::<String>::new());
    assert_eq!(
        found_in_published(
            "pub_pydantic_discriminated_union(shape={'kind': 'triangle', 'side': 1})\n\
             pub_pydantic_discriminated_union(shape={'kind': 'circle', 'radius': 'big'})\n\
             pub_zod_to_json_schema(path='a', edits=[], target={'type': 'url', 'uri': 'x'})"
        ),
        [
            "line 1: pub_pydantic_discriminated_union() argument 'shape' at ['kind'] must be 'circle' or 'square', not 'triangle'",
            "line 2: pub_pydantic_discriminated_union() argument 'shape' at ['radius'] must be float, not str",
            "line 3: pub_zod_to_json_schema() argument 'target' at ['type'] must be 'text' or 'file', not 'url'",
        ]
    );
}

#[test]
fn ref_cycle_does_not_hang() {
    let cycles = Sdk::build(&[
        tool(
            "loop",
            json!({"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"anyOf": [{"$ref": "#/$defs/A"}, {"allOf": [{"$ref": "#/$defs/B"}]}]}},
                   "properties": {"x": {"$ref": "#/$defs/A"}, "me": {"$ref": "#"}}}),
        ),
        tool(
            "legacy",
            json!({"definitions": {"Node": {"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#/definitions/Node"}, {"type": "null"}]}, "v": {"type": "integer"}}}},
                   "properties": {"head": {"$ref": "#/definitions/Node"}}}),
        ),
    ]);
    let deep = format!(
        "everything_legacy(head={}{{'v': 'x'}}{})",
        "{'next': ".repeat(25),
        "}".repeat(25)
    );
    let started = std::time::Instant::now();
    let code = format!(
        "everything_loop(x='a', me={{'x': 1, 'me': {{}}}})\n{deep}\neverything_legacy(head={{'next': {{'v': 'y'}}}})"
    );
    let found: Vec<String> = check(&code, &cycles, &[])
        .findings
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let at = "['next']".repeat(25);
    assert_eq!(
        found,
        [
            format!(
                "line 2: everything_legacy() argument 'head' at {at}['v'] must be int, not str"
            ),
            "line 3: everything_legacy() argument 'head' at ['next']['v'] must be int, not str"
                .to_owned(),
        ]
    );
}

#[test]
fn a_required_none_is_refused_where_the_schema_rules_out_null() {
    assert_eq!(
        found("everything_get_sum(None, b=2)\neverything_list_items(depth=None)"),
        ["line 1: everything_get_sum() argument 'a' must be float, not None"]
    );
}

#[test]
fn a_call_whose_error_a_handler_catches_is_left_to_run_time() {
    for code in [
        "try:\n    everything_get_sum(a='x', b=1)\nexcept TypeError as e:\n    print(e)",
        "try:\n    everything_get_sum(a='x', b=1)\nexcept Exception:\n    pass",
        "try:\n    everything_get_sum(a='x', b=1)\nexcept:\n    pass",
        "try:\n    everything_get_sum(a='x', b=1)\nexcept (KeyError, TypeError):\n    pass",
        "try:\n    everything_get_sum(c=1)\nexcept BaseException:\n    pass",
        "try:\n    everything_get_summ()\nexcept NameError:\n    pass",
        "try:\n    try:\n        everything_get_sum(c=1)\n    finally:\n        pass\nexcept TypeError:\n    pass",
        "Oops = TypeError\ntry:\n    everything_get_sum(c=1)\nexcept Oops:\n    pass",
        "try:\n    everything_get_sum(c=1)\nexcept errors.Bad:\n    pass",
    ] {
        assert_eq!(found(code), Vec::<String>::new(), "{code}");
    }
}

#[test]
fn a_call_no_handler_catches_is_still_refused() {
    for code in [
        "try:\n    everything_get_sum(a='x', b=1)\nexcept ValueError:\n    pass",
        "try:\n    everything_get_sum(a='x', b=1)\nexcept ToolError:\n    pass",
        "try:\n    everything_get_sum(a='x', b=1)\nexcept (KeyError, RuntimeError):\n    pass",
        "try:\n    everything_get_sum(a='x', b=1)\nfinally:\n    print('done')",
        "try:\n    everything_get_summ()\nexcept TypeError:\n    pass",
        "try:\n    def later():\n        return everything_get_sum(c=1)\nexcept TypeError:\n    pass\nlater()",
        "try:\n    f = lambda: everything_get_sum(c=1)\nexcept Exception:\n    pass",
    ] {
        assert_eq!(found(code).len(), 1, "{code}");
    }
}
