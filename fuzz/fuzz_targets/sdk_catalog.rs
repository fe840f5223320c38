//! Arbitrary tool catalogs (names, JSON Schemas incl. recursive `$ref`, huge
//! enums, unicode) through SDK generation. Must never panic.
#![no_main]

use arbitrary::Arbitrary;
use codemcp_sdk::Sdk;
use codemcp_sdk::tooldef::ToolDef;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

#[derive(Arbitrary, Debug)]
enum Schema {
    Type(u8),
    Enum(Vec<String>),
    Ref(String),
    Object(Vec<(String, Schema, bool)>),
    Array(Box<Schema>),
    AnyOf(Vec<Schema>),
    Nullable(Box<Schema>),
    Defs(Vec<(String, Schema)>, Box<Schema>),
    Raw(String),
}

fn to_json(schema: &Schema, depth: usize) -> Value {
    if depth > 40 {
        return json!({});
    }
    match schema {
        Schema::Type(t) => {
            let types = ["string", "integer", "number", "boolean", "null", "object", "array", "bogus"];
            json!({"type": types[usize::from(*t) % types.len()]})
        }
        Schema::Enum(values) => json!({"enum": values}),
        Schema::Ref(name) => json!({"$ref": format!("#/$defs/{name}")}),
        Schema::Object(props) => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for (name, schema, req) in props {
                properties.insert(name.clone(), to_json(schema, depth + 1));
                if *req {
                    required.push(Value::String(name.clone()));
                }
            }
            json!({"type": "object", "properties": properties, "required": required})
        }
        Schema::Array(items) => json!({"type": "array", "items": to_json(items, depth + 1)}),
        Schema::AnyOf(options) => json!({"anyOf": options.iter().map(|o| to_json(o, depth + 1)).collect::<Vec<_>>()}),
        Schema::Nullable(inner) => json!({"anyOf": [to_json(inner, depth + 1), {"type": "null"}]}),
        Schema::Defs(defs, root) => {
            let mut map = match to_json(root, depth + 1) {
                Value::Object(map) => map,
                other => Map::from_iter([("items".to_owned(), other)]),
            };
            let defs: Map<String, Value> = defs.iter().map(|(n, s)| (n.clone(), to_json(s, depth + 1))).collect();
            map.insert("$defs".into(), Value::Object(defs));
            Value::Object(map)
        }
        Schema::Raw(text) => serde_json::from_str(text).unwrap_or(Value::String(text.clone())),
    }
}

#[derive(Arbitrary, Debug)]
struct Tool {
    server: String,
    name: String,
    description: String,
    input: Schema,
    output: Option<Schema>,
    read_only: bool,
}

fuzz_target!(|tools: Vec<Tool>| {
    let defs: Vec<ToolDef> = tools
        .iter()
        .map(|t| ToolDef {
            server: t.server.clone(),
            name: t.name.clone(),
            description: t.description.clone(),
            input_schema: to_json(&t.input, 0).into(),
            output_schema: t.output.as_ref().map(|o| to_json(o, 0).into()),
            read_only: t.read_only,
            destructive: false,
            policy: codemcp_sdk::policy::Decision::Allow,
        })
        .collect();
    let sdk = Sdk::build(&defs);
    let _ = sdk.description(24_000);
    let _ = sdk.description(500);
    let _ = sdk.stub();
    let _ = sdk.search("list the files", 10);
    for f in sdk.functions() {
        let _ = sdk.describe(&f.py_name);
        let _ = f.bind_args(vec![json!(1)], vec![("x".into(), json!(null))]);
    }
});
