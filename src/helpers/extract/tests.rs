use std::collections::BTreeSet;

use super::*;

fn sdk() -> Sdk {
    let schema = serde_json::json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]});
    Sdk::build(&[codemcp_sdk::tooldef::ToolDef::with_schema(
        "shop", "lookup", schema,
    )])
}

fn save(code: &str, name: &str) -> Result<Extracted, Refusal> {
    extract(code, name, Some(&sdk()), &BTreeSet::new(), 4096)
}

#[test]
fn carries_the_functions_and_imports_it_uses_and_nothing_else() {
    let code = "import json\nimport re\n\ndef inner(x):\n    return json.dumps(x)\n\ndef other():\n    return 1\n\ndef outer(a: int, b: str = 'x') -> str:\n    \"\"\"Joins.\n\n    More.\"\"\"\n    return inner(a) + b\n\nsave_helper(outer)\n";
    let got = save(code, "outer").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        got.source,
        "import json\n\ndef inner(x):\n    return json.dumps(x)\n\ndef outer(a: int, b: str = 'x') -> str:\n    \"\"\"Joins.\n\n    More.\"\"\"\n    return inner(a) + b\n"
    );
    assert_eq!(got.signature, "outer(a: int, b: str = 'x') -> str");
    assert_eq!(got.stub, "def outer(a: int, b: str = ...) -> str: ...");
    assert!(got.doc.starts_with("Joins."));
}

#[test]
fn a_syntax_error_is_refused_with_its_position() {
    let err = save("def f(:\n    pass\n", "f").unwrap_err();
    assert!(
        matches!(
            err,
            Refusal::Syntax {
                at: Position { line: 1, .. },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_top_level_side_effect_it_needs_is_refused_with_its_line() {
    let code = "x = shop_lookup(key='a')\n\ndef f():\n    return x\n";
    let err = save(code, "f").unwrap_err();
    assert!(
        matches!(
            err,
            Refusal::TopLevel {
                at: Position { line: 1, column: 1 },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn an_unknown_tool_is_refused_with_its_position() {
    let err = save("def f():\n    return shop_lokup(key='a')\n", "f").unwrap_err();
    assert_eq!(
        err,
        Refusal::Unknown {
            at: Position {
                line: 2,
                column: 12
            },
            name: "shop_lokup".into()
        }
    );
}

#[test]
fn a_tool_name_is_not_a_helper_name() {
    let err = save("def shop_lookup(key):\n    return key\n", "shop_lookup").unwrap_err();
    assert!(
        matches!(
            err,
            Refusal::Shadows {
                at: Position { line: 1, column: 5 },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_decorator_is_a_side_effect() {
    let err = save(
        "import functools\n@functools.cache\ndef f():\n    return 1\n",
        "f",
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Refusal::SideEffect {
                at: Position { line: 2, .. },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn tools_helpers_locals_and_builtins_are_known() {
    let code = "def f(items):\n    total = 0\n    for i in items:\n        total += len(shop_lookup(key=str(i)))\n    return weekly(total)\n";
    let helpers: BTreeSet<String> = ["weekly".to_owned()].into();
    let got = extract(code, "f", Some(&sdk()), &helpers, 4096).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got.uses_helpers, vec!["weekly".to_owned()]);
}

#[test]
fn a_helper_over_the_size_bound_is_refused() {
    let code = format!("def f():\n    return '{}'\n", "x".repeat(200));
    let err = extract(&code, "f", Some(&sdk()), &BTreeSet::new(), 100).unwrap_err();
    assert!(matches!(err, Refusal::TooLarge { max: 100, .. }), "{err}");
}
