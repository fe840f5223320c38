//! The type stub, `codemcp://sdk.pyi`: every function with its signature, `TypedDict`s for
//! structured results, and the tool's description as the docstring.

use crate::policy::Decision;
use std::collections::BTreeSet;

use super::SdkFunction;
use super::naming::{camel_case, is_bindable_identifier};
use super::shared_types::{SharedTypes, unique};
use super::types::{TypeCtx, py_str};

/// Object output schemas with more fields get `dict[str, Any]` instead of a `TypedDict`.
const MAX_TYPED_DICT_FIELDS: usize = 100;

const STUB_HEADER: &str = r#"# codemcp SDK: the functions available inside execute_python (generated; do not edit).
# Calls are synchronous; `await asyncio.gather(f(...), g(...))` runs them concurrently.
from typing import Any, Literal, TypedDict


class ToolError(RuntimeError):
    """Raised when a tool call fails; str(e) is the upstream's message."""

    server: str
    tool: str


def search_tools(query: str, limit: int = 10) -> list[dict[str, str]]:
    """Find tools by keywords. Each hit has `name`, `signature` and `summary`."""
    ...


def describe_tool(name: str) -> dict[str, Any]:
    """Everything about one tool: signature, full description, parameters, schemas.

    `name` is a function name, `server.tool`, or a tool's own name when unique.
    """
    ...


def list_resources(server: str | None = None) -> list[dict[str, Any]]:
    """Resources of `server`, or of every server: {server, uri, name, title?, description?, mimeType?, size?}."""
    ...


def read_resource(server: str, uri: str) -> str | dict[str, str] | list[Any]:
    """A resource: text as str, binary as {"mimeType", "base64"}, several contents as a list of those."""
    ...


def list_prompts(server: str | None = None) -> list[dict[str, Any]]:
    """Prompts of `server`, or of every server: {server, name, title?, description?, arguments: [{name, required}]}."""
    ...


def get_prompt(server: str, name: str, **arguments: str) -> dict[str, Any]:
    """A prompt filled in with `arguments`: {description?, messages: [{role, content}]}; text content is a str."""
    ...
"#;

/// The full type stub. It always parses as Python, whatever the tools contain.
pub fn stub(functions: &[SdkFunction]) -> String {
    let mut out = STUB_HEADER.to_owned();
    let shared = SharedTypes::find(functions);
    let mut class_names: BTreeSet<String> = shared.names().map(str::to_owned).collect();
    let mut declared: BTreeSet<String> = BTreeSet::new();
    for f in functions {
        out.push_str("\n\n");
        let shared_name = f.return_hint.as_deref().and_then(|h| shared.name_of(h));
        let returns = match (shared_name, result_fields(f)) {
            (Some(name), Some(fields)) => {
                if declared.insert(name.to_owned()) {
                    out.push_str(&typed_dict(name, &shared_fields(functions, f, &fields)));
                    out.push_str("\n\n");
                }
                name.to_owned()
            }
            (None, Some(fields)) => {
                let name = unique_class_name(f, &mut class_names);
                out.push_str(&typed_dict(&name, &fields));
                out.push_str("\n\n");
                name
            }
            (_, None) => f.return_hint.clone().unwrap_or_else(|| "str".to_owned()),
        };
        out.push_str(&format!("def {}:\n", f.signature_returning(&returns)));
        out.push_str(&docstring(f));
        out.push_str("    ...\n");
    }
    out
}

type Fields = Vec<(String, String, bool)>;

/// The fields of an object output schema with properties, when they make a `TypedDict`.
fn result_fields(f: &SdkFunction) -> Option<Fields> {
    if f.unwrap_result {
        return None;
    }
    let output = f.output_schema.as_ref()?;
    let fields = TypeCtx::new(output).object_fields(output, MAX_TYPED_DICT_FIELDS + 1)?;
    (!fields.is_empty() && fields.len() <= MAX_TYPED_DICT_FIELDS).then_some(fields)
}

/// `fields` of a shared result, each required only when every tool sharing it requires it.
fn shared_fields(functions: &[SdkFunction], first: &SdkFunction, fields: &Fields) -> Fields {
    let sharing: Vec<Fields> = functions
        .iter()
        .filter(|g| g.return_hint == first.return_hint)
        .filter_map(result_fields)
        .collect();
    fields
        .iter()
        .map(|(name, hint, _)| {
            let required = sharing
                .iter()
                .all(|other| other.iter().any(|(n, _, r)| n == name && *r));
            (name.clone(), hint.clone(), required)
        })
        .collect()
}

fn unique_class_name(f: &SdkFunction, taken: &mut BTreeSet<String>) -> String {
    unique(format!("{}Result", camel_case(&f.py_name)), taken)
}

/// A `TypedDict` named `name` with `fields`: class syntax when every field is an
/// identifier, else the functional form.
fn typed_dict(name: &str, fields: &Fields) -> String {
    if fields
        .iter()
        .all(|(field, _, _)| is_bindable_identifier(field))
    {
        let body: Vec<String> = fields
            .iter()
            .map(|(field, hint, required)| {
                let note = if *required { "" } else { "  # may be absent" };
                format!("    {field}: {hint}{note}\n")
            })
            .collect();
        format!("class {name}(TypedDict):\n{}", body.concat())
    } else {
        let body: Vec<String> = fields
            .iter()
            .map(|(field, hint, _)| format!("{}: {hint}", py_str(field)))
            .collect();
        format!(
            "{name} = TypedDict({}, {{{}}})\n",
            py_str(name),
            body.join(", ")
        )
    }
}

fn docstring(f: &SdkFunction) -> String {
    let mut text = f.description.trim().to_owned();
    let documented: Vec<String> = f
        .params
        .iter()
        .map(|p| {
            let wire = if p.wire_name == p.py_name {
                String::new()
            } else {
                format!(" (sent as {})", py_str(&p.wire_name))
            };
            let desc = if p.description.is_empty() {
                String::new()
            } else {
                format!(": {}", p.description)
            };
            format!("    {}{wire}{desc}", p.py_name)
        })
        .collect();
    if !documented.is_empty() {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str("Args:\n");
        text.push_str(&documented.join("\n"));
    }
    let server = format!(
        "Upstream: server {}, tool {}.",
        py_str(&f.server),
        py_str(&f.tool)
    );
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str(&server);
    if f.policy == Decision::Ask {
        text.push_str(
            " Asks the user first: the call waits for their answer, and raises ToolError if they decline.",
        );
    }
    let body: Vec<String> = escape_docstring(&text)
        .lines()
        .map(|line| {
            if line.trim().is_empty() {
                String::new()
            } else {
                format!("    {line}")
            }
        })
        .collect();
    format!("    \"\"\"\n{}\n    \"\"\"\n", body.join("\n"))
}

/// Makes `text` safe inside a `"""` string: backslashes doubled, any quote that could join
/// another (or the closing quotes) escaped, control characters escaped, line ends unified.
fn escape_docstring(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' if chars.peek().is_none_or(|&n| n == '"') => out.push_str("\\\""),
            '\n' | '\t' => out.push(c),
            c if c.is_control() || (c.is_whitespace() && c != ' ') || c == '\u{feff}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docstring_escaping() {
        assert_eq!(
            escape_docstring(r#"say """hi""" \n"#),
            r#"say \"\""hi\"\"" \\n"#
        );
        assert_eq!(escape_docstring("ends with \""), "ends with \\\"");
        assert_eq!(escape_docstring("a\r\nb\rc\u{0}"), "a\nb\nc\\u0000");
    }
}
