//! Properties of SDKs built from arbitrary tools: unique valid names, order independence, no
//! panics, and stubs that always parse as Python.

use std::io::Write as _;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};

use super::{catalog, search_issues, tool};
use crate::tooldef::ToolDef;
use crate::{RESERVED_NAMES, Sdk, naming};

const NAME_POOL: &[&str] = &[
    "get-sum",
    "getSum",
    "get_sum",
    "search",
    "tools",
    "describe",
    "tool",
    "ToolError",
    "",
    "123",
    "class",
    "None",
    "from",
    "__debug__",
    "_",
    "é",
    "天气",
    "HTTPServer",
    "a b",
    "search_tools",
];

fn arb_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(NAME_POOL).prop_map(String::from),
        any::<String>(),
        "[A-Za-z0-9_.-]{0,12}"
    ]
}

proptest! {
    #[test]
    fn function_names_are_unique_valid_identifiers(
        pairs in prop::collection::vec((arb_name(), arb_name()), 0..40),
        rotate in 0usize..40,
    ) {
        let tools: Vec<ToolDef> = pairs.iter().map(|(s, t)| tool(s, t, json!({}))).collect();
        let sdk = Sdk::build(&tools);
        let mut seen = std::collections::HashSet::new();
        for f in sdk.functions() {
            prop_assert!(naming::is_bindable_identifier(&f.py_name), "{}", f.py_name);
            prop_assert!(!RESERVED_NAMES.contains(&f.py_name.as_str()), "{}", f.py_name);
            prop_assert!(seen.insert(f.py_name.clone()), "duplicate {}", f.py_name);
        }
        let mut rotated = tools.clone();
        if !rotated.is_empty() {
            let len = rotated.len();
            rotated.rotate_left(rotate % len);
        }
        let other = Sdk::build(&rotated);
        prop_assert_eq!(other.functions(), sdk.functions());
        prop_assert_eq!(other.description(500), sdk.description(500));
    }

    #[test]
    fn parameter_names_are_unique_valid_identifiers(wires in prop::collection::vec(arb_name(), 0..20)) {
        let props: Map<String, Value> = wires.iter().map(|w| (w.clone(), json!({"type": "string"}))).collect();
        let sdk = Sdk::build(&[tool("s", "t", json!({"properties": props, "required": wires}))]);
        let f = sdk.get("s_t").expect("function");
        let mut seen = std::collections::HashSet::new();
        for p in &f.params {
            prop_assert!(naming::is_bindable_identifier(&p.py_name), "{}", p.py_name);
            prop_assert!(seen.insert(p.py_name.clone()), "duplicate {}", p.py_name);
            if naming::is_bindable_identifier(&p.wire_name) {
                prop_assert_eq!(&p.py_name, &p.wire_name);
            }
        }
    }
}

const SCHEMA_WORDS: &[&str] = &[
    "type",
    "properties",
    "items",
    "$ref",
    "anyOf",
    "oneOf",
    "allOf",
    "enum",
    "const",
    "required",
    "default",
    "description",
    "additionalProperties",
    "prefixItems",
    "nullable",
    "$defs",
    "definitions",
    "x",
    "class",
    "a-b",
    "object",
    "string",
    "integer",
    "number",
    "boolean",
    "null",
    "array",
    "#",
    "#/$defs/x",
    "#/definitions/x",
    "#/properties/x",
    "#/$defs/x/items",
    "\"\"\"",
    "\\",
    "'",
    "\n",
    "\u{0}",
    "\u{2028}",
];

fn arb_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(prop::sample::select(SCHEMA_WORDS), 0..12).prop_map(|w| w.concat()),
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        arb_text().prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((arb_text(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Object schemas with arbitrary properties: the common shape, so most cases reach typing.
fn arb_object_schema() -> impl Strategy<Value = Value> {
    (prop::collection::vec((arb_text(), arb_json()), 0..6), arb_json(), arb_json()).prop_map(|(props, required, defs)| {
        json!({"type": "object", "properties": Map::from_iter(props), "required": required, "$defs": {"x": defs}})
    })
}

fn arb_tool() -> impl Strategy<Value = ToolDef> {
    let schema = || prop_oneof![arb_json(), arb_object_schema()];
    (
        arb_name(),
        arb_name(),
        arb_text(),
        schema(),
        prop::option::of(schema()),
        any::<bool>(),
    )
        .prop_map(
            |(server, name, description, input_schema, output_schema, read_only)| ToolDef {
                server,
                name,
                description,
                input_schema: input_schema.into(),
                output_schema: output_schema.map(Value::into),
                read_only,
                destructive: false,
                policy: crate::policy::Decision::Allow,
            },
        )
}

/// Parses every stub with Python's `ast.parse` in one interpreter; the failures, if any.
pub(super) fn python_parse_failures(stubs: &[String]) -> Option<Vec<String>> {
    let script = "import ast, json, sys\n\
        bad = []\n\
        for i, src in enumerate(json.load(sys.stdin)):\n\
        \x20   try:\n\
        \x20       ast.parse(src)\n\
        \x20   except SyntaxError as e:\n\
        \x20       bad.append(f'stub {i}: {e}: {src.splitlines()[e.lineno - 1] if e.lineno else \"\"}')\n\
        print(json.dumps(bad))\n";
    let mut child = match Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            println!("python3 not available ({e}); skipping the ast.parse check");
            return None;
        }
    };
    let input = serde_json::to_vec(stubs).expect("serialize stubs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("write stubs");
    let output = child.wait_with_output().expect("python3 runs");
    assert!(
        output.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(serde_json::from_slice(&output.stdout).expect("python3 prints a JSON list"))
}

#[test]
fn arbitrary_tools_never_panic_and_stubs_always_parse() {
    let stubs = std::cell::RefCell::new(vec![
        Sdk::build(&[search_issues()]).stub(),
        Sdk::build(&catalog(5)).stub(),
    ]);
    let mut runner = TestRunner::new(Config {
        cases: 300,
        ..Config::default()
    });
    let strategy = prop::collection::vec(arb_tool(), 1..4);
    let result = runner.run(&strategy, |tools| {
        let sdk = Sdk::build(&tools);
        let _ = sdk.description(usize::MAX);
        let _ = sdk.description(300);
        for f in sdk.functions() {
            let _ = sdk.describe(&f.py_name);
            let _ = sdk.search(&f.description, 3);
            let _ = f.bind_args(vec![json!(1)], vec![("x".into(), json!(2))]);
        }
        stubs.borrow_mut().push(sdk.stub());
        Ok(())
    });
    assert!(result.is_ok(), "{result:?}");
    let mut stubs = stubs.into_inner();
    // A known-broken stub last proves the checker really parses.
    stubs.push("def broken(:\n    ...\n".to_owned());
    if let Some(failures) = python_parse_failures(&stubs) {
        let broken = format!("stub {}:", stubs.len() - 1);
        let unexpected: Vec<&String> = failures
            .iter()
            .filter(|f| !f.starts_with(&broken))
            .collect();
        assert!(
            unexpected.is_empty(),
            "{} of {} stubs do not parse:\n{unexpected:#?}",
            unexpected.len(),
            stubs.len()
        );
        assert_eq!(failures.len(), 1, "the broken stub was not reported");
    }
}
