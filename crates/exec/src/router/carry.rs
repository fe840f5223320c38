//! What a session carries from one engine to the other: the Monty state
//! CPython takes over, and the snippets that export and load it.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use codemcp_snippet::syntax;

/// A Monty session's state as CPython can take it over.
#[derive(Default)]
pub(super) struct Carried {
    /// Top-level names assigned: their JSON-able values go along.
    pub(super) names: BTreeSet<String>,
    /// Imports and side-effect-free function definitions, in order, the
    /// latest of each name only: run again in CPython first.
    pub(super) definitions: Vec<(String, String)>,
}

impl Carried {
    pub(super) fn add(&mut self, outline: &syntax::Outline) {
        self.names.extend(outline.assigned.iter().cloned());
        for (name, source) in &outline.definitions {
            let key = if name.is_empty() { source } else { name };
            self.definitions
                .retain(|(n, s)| if n.is_empty() { s != key } else { n != key });
            self.definitions.push((name.clone(), source.clone()));
        }
    }

    /// The definitions as one snippet.
    pub(super) fn prelude(&self) -> Option<String> {
        let sources: Vec<&str> = self.definitions.iter().map(|(_, s)| s.as_str()).collect();
        (!sources.is_empty()).then(|| sources.join("\n"))
    }
}

/// Monty code whose value is a dict of the variables that exist and survive
/// a JSON round trip (anything else is skipped).
pub(super) fn export_snippet(names: &BTreeSet<String>) -> String {
    let mut code = String::from("import json as __codemcp_json\n__codemcp_globals = {}\n");
    for name in names {
        code.push_str(&format!(
            "try:\n    __codemcp_globals['{name}'] = __codemcp_json.loads(__codemcp_json.dumps({name}))\nexcept Exception:\n    pass\n"
        ));
    }
    code.push_str("__codemcp_globals\n");
    code
}

/// CPython code whose value is `{"values": {...}, "pinned": [...]}`: the
/// session's variables that JSON holds exactly (exact builtin types only,
/// so a `Counter` or a tuple is not mistaken for a dict or a list), and the
/// names Monty could not hold. Modules and names imported from modules come
/// back by their imports; `functions` come back by their source; the
/// worker's own names (tools, `ToolError`, `search_tools`) are skipped.
pub(super) fn cpython_export_snippet(functions: &[String]) -> String {
    let functions = serde_json::to_string(functions).unwrap_or_else(|_| "[]".into());
    format!(
        r#"def __codemcp_export(ns, carried):
    import sys, types
    main = sys.modules.get('__main__')
    def gateway_made(v):
        outer = getattr(v, '__qualname__', '').partition('.<locals>.')
        if outer[1] and getattr(getattr(main, outer[0], None), '__qualname__', None) == outer[0]:
            return True  # made by a factory of the worker's, as search_tools is
        for obj in (v, type(v)):
            n = getattr(obj, '__name__', None)
            if isinstance(n, str) and getattr(main, n, None) is obj:
                return True
        return False
    def exact(v, depth=0):
        if depth > 100:
            return False
        t = type(v)
        if v is None or t in (bool, str):
            return True
        if t is int:
            return -(2**63) <= v < 2**63
        if t is float:
            return v == v and v not in (float('inf'), float('-inf'))
        if t is list:
            return all(exact(x, depth + 1) for x in v)
        if t is dict:
            return all(type(k) is str and exact(x, depth + 1) for k, x in v.items())
        return False
    values, pinned = {{}}, []
    for name, value in list(ns.items()):
        if name.startswith('__') or isinstance(value, types.ModuleType) or gateway_made(value):
            continue
        from_main = getattr(value, '__module__', None) == '__main__'
        if (callable(value) or isinstance(value, type)) and not from_main:
            continue
        if isinstance(value, types.FunctionType) and name in carried and value.__name__ == name:
            continue
        if exact(value):
            values[name] = value
        else:
            pinned.append(name)
    return {{'values': values, 'pinned': pinned}}
__codemcp_export(globals(), set({functions}))
"#
    )
}

/// The values of a CPython export when nothing pins the session there.
pub(super) fn holdable_values(result: Option<Value>) -> Option<Map<String, Value>> {
    let Some(Value::Object(mut report)) = result else {
        return None;
    };
    let pinned = report.get("pinned")?.as_array()?;
    if !pinned.is_empty() {
        tracing::debug!(target: "codemcp::exec", ?pinned, "session stays on CPython");
        return None;
    }
    match report.remove("values")? {
        Value::Object(values) => Some(values),
        _ => None,
    }
}

/// Monty code that sets up a session from CPython's: the imports and
/// functions, then each variable from its JSON text.
pub(super) fn monty_load_snippet(prelude: Option<&str>, values: &Map<String, Value>) -> String {
    let mut code = String::new();
    if let Some(prelude) = prelude {
        code.push_str(prelude);
        code.push('\n');
    }
    code.push_str("import json as __codemcp_json\n");
    for (name, value) in values {
        // A JSON string is a Python string literal with the same value
        // (serde_json leaves non-ASCII unescaped, so no surrogate pairs).
        let text = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
        let literal = serde_json::to_string(&text).unwrap_or_else(|_| "'null'".into());
        code.push_str(&format!("{name} = __codemcp_json.loads({literal})\n"));
    }
    code.push_str("None\n");
    code
}
