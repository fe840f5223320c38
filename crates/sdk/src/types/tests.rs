//! Type hints and literals for schemas and values, including hostile ones.

use serde_json::json;

use super::*;

fn hint(schema: Value) -> String {
    TypeCtx::new(&schema).hint(&schema)
}

#[test]
fn primitive_types() {
    assert_eq!(hint(json!({"type": "string"})), "str");
    assert_eq!(hint(json!({"type": "integer"})), "int");
    assert_eq!(hint(json!({"type": "number"})), "float");
    assert_eq!(hint(json!({"type": "boolean"})), "bool");
    assert_eq!(hint(json!({"type": "null"})), "None");
    assert_eq!(hint(json!({})), "Any");
    assert_eq!(hint(json!(true)), "Any");
    assert_eq!(hint(json!("garbage")), "Any");
    assert_eq!(hint(json!({"type": "frobnicate"})), "Any");
    assert_eq!(hint(json!({"type": 7})), "Any");
}

#[test]
fn arrays() {
    assert_eq!(
        hint(json!({"type": "array", "items": {"type": "string"}})),
        "list[str]"
    );
    assert_eq!(hint(json!({"type": "array"})), "list[Any]");
    assert_eq!(
        hint(json!({"type": "array", "prefixItems": [{"type": "string"}]})),
        "list[Any]"
    );
    assert_eq!(
        hint(json!({"type": "array", "items": [{"type": "string"}]})),
        "list[Any]"
    );
    assert_eq!(
        hint(json!({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}})),
        "list[list[int]]"
    );
    assert_eq!(hint(json!({"items": {"type": "boolean"}})), "list[bool]");
}

#[test]
fn objects() {
    assert_eq!(hint(json!({"type": "object"})), "dict[str, Any]");
    assert_eq!(
        hint(json!({"type": "object", "properties": {"a": {"type": "string"}}})),
        "dict[str, Any]"
    );
    assert_eq!(
        hint(json!({"type": "object", "additionalProperties": {"type": "integer"}})),
        "dict[str, int]"
    );
    assert_eq!(
        hint(json!({"type": "object", "additionalProperties": true})),
        "dict[str, Any]"
    );
}

#[test]
fn enums_and_consts() {
    assert_eq!(
        hint(json!({"type": "string", "enum": ["a", "b"]})),
        "Literal['a', 'b']"
    );
    assert_eq!(
        hint(json!({"enum": [1, 2, true, null]})),
        "Literal[1, 2, True] | None"
    );
    assert_eq!(hint(json!({"enum": ["it's"]})), r"Literal['it\'s']");
    assert_eq!(hint(json!({"const": "x"})), "Literal['x']");
    assert_eq!(hint(json!({"const": null})), "None");
    assert_eq!(hint(json!({"const": 1.5})), "float");
    assert_eq!(hint(json!({"enum": [1.5, 2.5]})), "float");
    assert_eq!(hint(json!({"enum": []})), "Any");
    let many: Vec<String> = (0..31).map(|i| format!("v{i}")).collect();
    assert_eq!(hint(json!({"type": "string", "enum": many})), "str");
    assert_eq!(hint(json!({"enum": many})), "str");
    assert_eq!(hint(json!({"enum": ["a", "a", "b"]})), "Literal['a', 'b']");
}

#[test]
fn unions() {
    assert_eq!(hint(json!({"type": ["string", "null"]})), "str | None");
    assert_eq!(
        hint(json!({"type": ["null", "integer", "string"]})),
        "int | str | None"
    );
    assert_eq!(
        hint(json!({"anyOf": [{"type": "null"}, {"type": "string"}]})),
        "str | None"
    );
    assert_eq!(
        hint(json!({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "string"}]})),
        "str | int"
    );
    assert_eq!(hint(json!({"anyOf": [{"type": "string"}, {}]})), "Any");
    assert_eq!(
        hint(json!({"anyOf": [{"const": "a"}, {"const": "b"}, {"type": "null"}]})),
        "Literal['a', 'b'] | None"
    );
    assert_eq!(
        hint(json!({"type": "string", "nullable": true})),
        "str | None"
    );
    assert_eq!(
        hint(json!({"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "null"}]}})),
        "list[int | None]"
    );
}

#[test]
fn all_of() {
    assert_eq!(hint(json!({"allOf": [{"type": "string"}]})), "str");
    assert_eq!(
        hint(json!({"allOf": [{"type": "object"}, {"type": "object"}]})),
        "dict[str, Any]"
    );
    assert_eq!(
        hint(json!({"allOf": [{"type": "object"}, {"type": "string"}]})),
        "Any"
    );
}

#[test]
fn refs() {
    let schema = json!({
        "$defs": {"Color": {"enum": ["red", "green"]}, "Box": {"properties": {"c": {"$ref": "#/$defs/Color"}}}},
        "definitions": {"Id": {"type": "integer"}},
        "type": "array",
        "items": {"$ref": "#/$defs/Color"},
    });
    let ctx = TypeCtx::new(&schema);
    assert_eq!(ctx.hint(&schema), "list[Literal['red', 'green']]");
    assert_eq!(ctx.hint(&json!({"$ref": "#/definitions/Id"})), "int");
    assert_eq!(
        ctx.hint(&json!({"$ref": "#/$defs/Box/properties/c"})),
        "Literal['red', 'green']"
    );
    assert_eq!(ctx.hint(&json!({"$ref": "#/$defs/Missing"})), "Any");
    assert_eq!(
        ctx.hint(&json!({"$ref": "https://example.com/schema.json"})),
        "Any"
    );
    assert_eq!(ctx.hint(&json!({"$ref": 42})), "Any");
}

#[test]
fn recursive_refs_are_bounded() {
    let schema = json!({
        "$defs": {"Node": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
        "$ref": "#/$defs/Node",
    });
    assert_eq!(hint(schema), "list[list[list[list[list[list[Any]]]]]]");
    let self_ref = json!({"$ref": "#"});
    assert_eq!(hint(self_ref), "Any");
    let mutual = json!({"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"});
    assert_eq!(hint(mutual), "Any");
}

#[test]
fn fan_out_through_defs_is_bounded() {
    let mut defs = Map::new();
    for level in 0..8 {
        let next = format!("#/$defs/L{}", level + 1);
        let alts: Vec<Value> = (0..50)
            .map(|_| json!({"type": "array", "items": {"$ref": next}}))
            .collect();
        defs.insert(format!("L{level}"), json!({"anyOf": alts}));
    }
    defs.insert("L8".into(), json!({"type": "string"}));
    let schema = json!({"$defs": defs, "$ref": "#/$defs/L0"});
    let rendered = hint(schema);
    assert!(rendered.len() <= MAX_HINT_CHARS);
}

#[test]
fn deep_nesting_is_bounded() {
    let mut schema = json!({"type": "string"});
    for _ in 0..10_000 {
        let mut wrapper = Map::new();
        wrapper.insert("type".into(), json!("array"));
        wrapper.insert("items".into(), schema);
        schema = Value::Object(wrapper);
    }
    // Cut as every schema is (see `ToolDef`); the hint stops far above the cut.
    let schema = crate::tooldef::Schema::from(schema);
    let rendered = TypeCtx::new(&schema).hint(&schema);
    assert_eq!(
        rendered,
        format!("{}Any{}", "list[".repeat(17), "]".repeat(17))
    );
}

#[test]
fn literals() {
    assert_eq!(py_literal(&json!(10)).as_deref(), Some("10"));
    assert_eq!(py_literal(&json!(-2.5)).as_deref(), Some("-2.5"));
    assert_eq!(py_literal(&json!("abc")).as_deref(), Some("'abc'"));
    assert_eq!(py_literal(&json!(true)).as_deref(), Some("True"));
    assert_eq!(py_literal(&json!(null)).as_deref(), Some("None"));
    assert_eq!(
        py_literal(&json!([1, "a", null])).as_deref(),
        Some("[1, 'a', None]")
    );
    assert_eq!(
        py_literal(&json!({"k": [false]})).as_deref(),
        Some("{'k': [False]}")
    );
    assert_eq!(py_literal(&json!("x".repeat(500))), None);
    assert_eq!(py_str("a\nb\u{0}\u{2028}\\"), r"'a\nb\x00\u2028\\'");
}

#[test]
fn return_hints() {
    let out = json!({"type": "object", "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}}});
    assert_eq!(
        TypeCtx::new(&out).return_hint(&out),
        "{temperature: float, conditions: str}"
    );
    let odd = json!({"properties": {"class": {"type": "string"}, "a-b": {"type": "integer"}}});
    assert_eq!(
        TypeCtx::new(&odd).return_hint(&odd),
        "{'class': str, 'a-b': int}"
    );
    let wide: Map<String, Value> = (0..7)
        .map(|i| (format!("f{i}"), json!({"type": "string"})))
        .collect();
    let wide = json!({"type": "object", "properties": wide});
    assert_eq!(TypeCtx::new(&wide).return_hint(&wide), "dict[str, Any]");
    let list = json!({"type": "array", "items": {"type": "string"}});
    assert_eq!(TypeCtx::new(&list).return_hint(&list), "list[str]");
}

/// Every parameter of the schemas generators publish (`tests/schemas/published.json`) gets
/// the hint the fixture gives, in the signature and the stub.
#[test]
fn published_schemas_type_their_parameters() {
    let fixture: Value =
        serde_json::from_str(include_str!("../../../../tests/schemas/published.json"))
            .expect("valid JSON");
    for entry in fixture["schemas"].as_array().expect("schemas") {
        let name = entry["name"].as_str().expect("name");
        let tool = crate::tooldef::ToolDef::with_schema("pub", name, entry["schema"].clone());
        let sdk = crate::Sdk::build(&[tool]);
        let f = sdk.functions().first().expect("a function");
        assert!(!f.variadic_kwargs, "{name}");
        let stub = sdk.stub();
        for (param, expected) in entry["hints"].as_object().expect("hints") {
            let p = f
                .params
                .iter()
                .find(|p| &p.wire_name == param)
                .unwrap_or_else(|| panic!("{name}.{param}"));
            assert_eq!(
                Some(p.type_hint.as_str()),
                expected.as_str(),
                "{name}.{param}"
            );
            assert!(
                stub.contains(&format!("{}: {}", p.py_name, p.type_hint)),
                "{name}.{param}"
            );
        }
    }
}
