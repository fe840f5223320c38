//! The check against schemas as generators publish them (the fixture in
//! `tests/schemas/published.json`), and against hostile ones.

use serde_json::{Value, json};

use super::*;

const PUBLISHED: &str = include_str!("../../../../../tests/schemas/published.json");

/// What the check says of `code` passed as `param` of a tool with `root`.
fn verdict(root: &Value, param: &str, code: &str) -> Option<String> {
    let parsed = ruff_python_parser::parse_expression(code).expect("parses");
    let checker = Checker::new(root);
    let schema = checker.property(param).expect("a parameter of the schema");
    checker
        .fault(schema, &Shape::of(parsed.expr()))
        .map(|f| f.to_string())
}

#[test]
fn published_schemas_refuse_only_what_they_rule_out() {
    let fixture: Value = serde_json::from_str(PUBLISHED).expect("valid JSON");
    let mut checked = 0;
    for entry in fixture["schemas"].as_array().expect("schemas") {
        let root = &entry["schema"];
        for case in entry["cases"].as_array().expect("cases") {
            let (param, code) = (
                case[0].as_str().expect("param"),
                case[1].as_str().expect("code"),
            );
            let expected = case[2].as_str().map(str::to_owned);
            assert_eq!(
                verdict(root, param, code),
                expected,
                "{}: {param}={code}",
                entry["name"]
            );
            checked += 1;
        }
    }
    assert!(checked >= 60, "{checked}");
}

#[test]
fn only_mismatches_no_validator_accepts_are_flagged() {
    let flagged = |code: &str, ty: &str| {
        let parsed = ruff_python_parser::parse_expression(code).expect("parses");
        mismatched(&Shape::of(parsed.expr()), ty)
    };
    assert!(flagged("'abc'", "integer") && flagged("'abc'", "number"));
    assert!(!flagged("' 5 '", "integer") && !flagged("'1e3'", "number"));
    assert!(flagged("'maybe'", "boolean") && !flagged("'Yes'", "boolean"));
    assert!(!flagged("f'{n}'", "integer") && flagged("f'{n}'", "array"));
    assert!(flagged("5", "string") && !flagged("5", "boolean") && !flagged("5", "number"));
    assert!(
        !flagged("2.5", "integer"),
        "a validator may round or reject: not sure"
    );
    assert!(!flagged("True", "integer") && flagged("True", "string"));
    assert!(flagged("[1]", "object") && !flagged("(1,)", "array"));
    assert!(flagged("{}", "array") && !flagged("{}", "object"));
    assert!(flagged("'x'", "null") && !flagged("'x'", "string"));
    assert!(flagged("None", "string") && !flagged("None", "null"));
    assert!(!flagged("x", "null") && !flagged("'x'", "any"));
}

#[test]
fn unknown_keywords_and_types_never_refuse() {
    let root = json!({"properties": {
        "a": {"type": "file"},
        "b": {"type": ["string", "file"]},
        "c": {"not": {"type": "string"}},
        "d": {"$ref": "https://example.com/s.json"},
        "e": {"type": "object", "patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": false},
        "f": true,
        "g": {"anyOf": []},
    }});
    for param in ["a", "b", "c", "d", "e", "f", "g"] {
        assert_eq!(verdict(&root, param, "{'y': 1}"), None, "{param}");
    }
}

#[test]
fn percent_encoded_refs_are_followed() {
    let root = json!({"$defs": {"A b": {"type": "integer"}}, "properties": {"n": {"$ref": "#/$defs/A%20b"}}});
    assert_eq!(
        verdict(&root, "n", "'x'").as_deref(),
        Some(" must be int, not str")
    );
}

#[test]
fn fan_out_through_defs_is_bounded() {
    let mut defs = Map::new();
    for level in 0..12 {
        let next = format!("#/$defs/L{}", level + 1);
        let alts: Vec<Value> = (0..40).map(|_| json!({"$ref": next})).collect();
        defs.insert(format!("L{level}"), json!({"anyOf": alts}));
    }
    defs.insert("L12".into(), json!({"type": "integer"}));
    let root = json!({"$defs": defs, "properties": {"x": {"$ref": "#/$defs/L0"}}});
    let started = std::time::Instant::now();
    assert_eq!(
        verdict(&root, "x", "'not a number'"),
        None,
        "too much work: let through"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}
