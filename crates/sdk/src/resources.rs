//! The resource and prompt functions agent code gets beside the tools:
//! `list_resources(server=None)`, `read_resource(server, uri)`,
//! `list_prompts(server=None)` and `get_prompt(server, name, **arguments)`.
//!
//! Here: their names, how a Python call's arguments bind to them (one set of
//! rules for Monty, the CPython worker and the pre-flight check), and the
//! policy name each is governed by (the MCP method it sends).

use serde_json::{Map, Value};

use super::BindError;

pub const LIST_RESOURCES: &str = "list_resources";
pub const READ_RESOURCE: &str = "read_resource";
pub const LIST_PROMPTS: &str = "list_prompts";
pub const GET_PROMPT: &str = "get_prompt";

/// The four functions, by their Python names.
pub const FUNCTIONS: &[&str] = &[LIST_RESOURCES, READ_RESOURCE, LIST_PROMPTS, GET_PROMPT];

pub use crate::policy::POLICY_NAMES;

/// One call of a resource or prompt function, its arguments bound.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceCall {
    /// `server: None` lists every connected server's.
    ListResources {
        server: Option<String>,
    },
    ReadResource {
        server: String,
        uri: String,
    },
    ListPrompts {
        server: Option<String>,
    },
    GetPrompt {
        server: String,
        name: String,
        /// Prompt arguments are strings in MCP.
        arguments: Map<String, Value>,
    },
}

/// Why a call's arguments do not fit; reads like Python's `TypeError`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceArgError {
    #[error(transparent)]
    Shape(#[from] BindError),
    #[error("{function}() argument '{argument}' must be {expected}, not {given}")]
    Type {
        function: &'static str,
        argument: String,
        expected: &'static str,
        given: &'static str,
    },
}

/// What one parameter accepts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    OptionalStr,
}

struct Signature {
    function: &'static str,
    params: &'static [(&'static str, Kind)],
    /// Takes `**arguments` (the prompt's arguments).
    variadic: bool,
}

const SIGNATURES: &[Signature] = &[
    Signature {
        function: LIST_RESOURCES,
        params: &[("server", Kind::OptionalStr)],
        variadic: false,
    },
    Signature {
        function: READ_RESOURCE,
        params: &[("server", Kind::Str), ("uri", Kind::Str)],
        variadic: false,
    },
    Signature {
        function: LIST_PROMPTS,
        params: &[("server", Kind::OptionalStr)],
        variadic: false,
    },
    Signature {
        function: GET_PROMPT,
        params: &[("server", Kind::Str), ("name", Kind::Str)],
        variadic: true,
    },
];

impl ResourceCall {
    /// Binds a Python call of `function`; `None` when `function` is not one
    /// of the four.
    pub fn bind(
        function: &str,
        positional: Vec<Value>,
        keywords: Vec<(String, Value)>,
    ) -> Option<Result<ResourceCall, ResourceArgError>> {
        let signature = SIGNATURES.iter().find(|s| s.function == function)?;
        Some(signature.bind(positional, keywords))
    }

    /// The Python function's name.
    pub fn function(&self) -> &'static str {
        match self {
            ResourceCall::ListResources { .. } => LIST_RESOURCES,
            ResourceCall::ReadResource { .. } => READ_RESOURCE,
            ResourceCall::ListPrompts { .. } => LIST_PROMPTS,
            ResourceCall::GetPrompt { .. } => GET_PROMPT,
        }
    }

    /// The MCP method it sends, which is also its policy name.
    pub fn method(&self) -> &'static str {
        match self {
            ResourceCall::ListResources { .. } => "resources/list",
            ResourceCall::ReadResource { .. } => "resources/read",
            ResourceCall::ListPrompts { .. } => "prompts/list",
            ResourceCall::GetPrompt { .. } => "prompts/get",
        }
    }

    /// The server it names; `None` for a list of every server's.
    pub fn server(&self) -> Option<&str> {
        match self {
            ResourceCall::ListResources { server } | ResourceCall::ListPrompts { server } => {
                server.as_deref()
            }
            ResourceCall::ReadResource { server, .. } | ResourceCall::GetPrompt { server, .. } => {
                Some(server)
            }
        }
    }

    /// The same call addressed to `server` (one server's part of a list of all).
    #[must_use]
    pub fn to_server(&self, server: &str) -> ResourceCall {
        let mut call = self.clone();
        match &mut call {
            ResourceCall::ListResources { server: s } | ResourceCall::ListPrompts { server: s } => {
                *s = Some(server.to_owned());
            }
            ResourceCall::ReadResource { server: s, .. }
            | ResourceCall::GetPrompt { server: s, .. } => server.clone_into(s),
        }
        call
    }

    /// Whether it lists (and so answers a list, empty where nothing is offered).
    pub fn is_list(&self) -> bool {
        matches!(
            self,
            ResourceCall::ListResources { .. } | ResourceCall::ListPrompts { .. }
        )
    }

    /// Whether it is about prompts rather than resources.
    pub fn is_prompt(&self) -> bool {
        matches!(
            self,
            ResourceCall::ListPrompts { .. } | ResourceCall::GetPrompt { .. }
        )
    }

    /// Its arguments besides the server, for the audit log and approval questions.
    pub fn shown_arguments(&self) -> Map<String, Value> {
        let mut shown = Map::new();
        match self {
            ResourceCall::ListResources { .. } | ResourceCall::ListPrompts { .. } => {}
            ResourceCall::ReadResource { uri, .. } => {
                shown.insert("uri".into(), Value::String(uri.clone()));
            }
            ResourceCall::GetPrompt {
                name, arguments, ..
            } => {
                shown.insert("name".into(), Value::String(name.clone()));
                shown.insert("arguments".into(), Value::Object(arguments.clone()));
            }
        }
        shown
    }
}

impl Signature {
    fn bind(
        &self,
        positional: Vec<Value>,
        keywords: Vec<(String, Value)>,
    ) -> Result<ResourceCall, ResourceArgError> {
        let slots = self.slots(positional, keywords)?;
        let (mut values, extra) = slots;
        for ((name, kind), value) in self.params.iter().zip(&values) {
            self.check(name, *kind, value.as_ref())?;
        }
        let mut take = |i: usize| values.get_mut(i).and_then(Option::take);
        let text = |v: Option<Value>| match v {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        let first = text(take(0));
        let second = text(take(1)).unwrap_or_default();
        Ok(match self.function {
            LIST_RESOURCES => ResourceCall::ListResources { server: first },
            LIST_PROMPTS => ResourceCall::ListPrompts { server: first },
            READ_RESOURCE => ResourceCall::ReadResource {
                server: first.unwrap_or_default(),
                uri: second,
            },
            _ => ResourceCall::GetPrompt {
                server: first.unwrap_or_default(),
                name: second,
                arguments: self.prompt_arguments(extra)?,
            },
        })
    }

    /// Python's binding: positional first, then keywords by name, the rest
    /// to `**arguments` when the function takes them.
    #[allow(clippy::type_complexity)]
    fn slots(
        &self,
        positional: Vec<Value>,
        keywords: Vec<(String, Value)>,
    ) -> Result<(Vec<Option<Value>>, Vec<(String, Value)>), BindError> {
        let function = self.function.to_owned();
        if positional.len() > self.params.len() {
            return Err(BindError::TooManyPositional {
                function,
                takes: self.params.len(),
                given: positional.len(),
            });
        }
        let mut slots: Vec<Option<Value>> = vec![None; self.params.len()];
        for (slot, value) in slots.iter_mut().zip(positional) {
            *slot = Some(value);
        }
        let mut extra: Vec<(String, Value)> = Vec::new();
        for (keyword, value) in keywords {
            match self.params.iter().position(|(name, _)| *name == keyword) {
                Some(i) if slots.get(i).is_some_and(Option::is_some) => {
                    return Err(BindError::MultipleValues {
                        function,
                        argument: keyword,
                    });
                }
                Some(i) => {
                    if let Some(slot) = slots.get_mut(i) {
                        *slot = Some(value);
                    }
                }
                None if self.variadic => extra.push((keyword, value)),
                None => {
                    return Err(BindError::UnexpectedKeyword {
                        function,
                        keyword,
                        valid: self.params.iter().map(|(n, _)| (*n).to_owned()).collect(),
                    });
                }
            }
        }
        let missing: Vec<String> = self
            .params
            .iter()
            .zip(&slots)
            .filter(|((_, kind), slot)| *kind == Kind::Str && slot.is_none())
            .map(|((name, _), _)| (*name).to_owned())
            .collect();
        if !missing.is_empty() {
            return Err(BindError::MissingRequired { function, missing });
        }
        Ok((slots, extra))
    }

    fn check(&self, name: &str, kind: Kind, value: Option<&Value>) -> Result<(), ResourceArgError> {
        let fits = matches!(
            (kind, value),
            (_, Some(Value::String(_))) | (Kind::OptionalStr, None | Some(Value::Null))
        );
        if fits {
            return Ok(());
        }
        Err(ResourceArgError::Type {
            function: self.function,
            argument: name.to_owned(),
            expected: match kind {
                Kind::Str => "str",
                Kind::OptionalStr => "str or None",
            },
            given: value.map_or("nothing", python_type),
        })
    }

    /// A prompt's arguments are strings: numbers are sent as their text,
    /// anything else is refused.
    fn prompt_arguments(
        &self,
        extra: Vec<(String, Value)>,
    ) -> Result<Map<String, Value>, ResourceArgError> {
        extra
            .into_iter()
            .map(|(key, value)| match value {
                Value::String(_) => Ok((key, value)),
                Value::Number(n) => Ok((key, Value::String(n.to_string()))),
                other => Err(ResourceArgError::Type {
                    function: self.function,
                    argument: key,
                    expected: "str",
                    given: python_type(&other),
                }),
            })
            .collect()
    }
}

/// The Python type a JSON value came from.
fn python_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn bind(function: &str, args: Value, kwargs: &[(&str, Value)]) -> Result<ResourceCall, String> {
        let positional = args.as_array().cloned().unwrap_or_default();
        let keywords = kwargs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        ResourceCall::bind(function, positional, keywords)
            .expect("a resource function")
            .map_err(|e| e.to_string())
    }

    #[test]
    fn list_functions_take_an_optional_server() {
        assert_eq!(
            bind(LIST_RESOURCES, json!([]), &[]),
            Ok(ResourceCall::ListResources { server: None })
        );
        assert_eq!(
            bind(LIST_PROMPTS, json!([null]), &[]),
            Ok(ResourceCall::ListPrompts { server: None })
        );
        assert_eq!(
            bind(LIST_RESOURCES, json!([]), &[("server", json!("fs"))]),
            Ok(ResourceCall::ListResources {
                server: Some("fs".into())
            })
        );
        assert_eq!(
            bind(LIST_RESOURCES, json!([3]), &[]),
            Err("list_resources() argument 'server' must be str or None, not int".into())
        );
    }

    #[test]
    fn read_resource_needs_a_server_and_a_uri() {
        assert_eq!(
            bind(READ_RESOURCE, json!(["s"]), &[("uri", json!("demo://x"))]),
            Ok(ResourceCall::ReadResource {
                server: "s".into(),
                uri: "demo://x".into()
            })
        );
        assert_eq!(
            bind(READ_RESOURCE, json!(["s"]), &[]),
            Err("read_resource() missing 1 required argument: 'uri'".into())
        );
        assert_eq!(
            bind(READ_RESOURCE, json!(["s", "u", "v"]), &[]),
            Err("read_resource() takes 2 positional arguments but 3 were given".into())
        );
        assert_eq!(
            bind(READ_RESOURCE, json!(["s", "u"]), &[("mime", json!("x"))]),
            Err(
                "read_resource() got an unexpected keyword argument 'mime' (valid: server, uri)"
                    .into()
            )
        );
        assert_eq!(
            bind(READ_RESOURCE, json!([null, "u"]), &[]),
            Err("read_resource() argument 'server' must be str, not NoneType".into())
        );
    }

    #[test]
    fn get_prompt_sends_its_other_keywords_as_string_arguments() {
        let call = bind(
            GET_PROMPT,
            json!(["s", "args-prompt"]),
            &[("city", json!("Paris")), ("days", json!(3))],
        );
        let expected = ResourceCall::GetPrompt {
            server: "s".into(),
            name: "args-prompt".into(),
            arguments: json!({"city": "Paris", "days": "3"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        };
        assert_eq!(call, Ok(expected));
        assert_eq!(
            bind(GET_PROMPT, json!(["s", "p"]), &[("flag", json!(true))]),
            Err("get_prompt() argument 'flag' must be str, not bool".into())
        );
        assert_eq!(
            bind(GET_PROMPT, json!(["s", "p"]), &[("name", json!("x"))]),
            Err("get_prompt() got multiple values for argument 'name'".into())
        );
    }

    #[test]
    fn other_names_are_not_resource_functions() {
        assert!(ResourceCall::bind("search_tools", vec![], vec![]).is_none());
    }

    #[test]
    fn each_call_names_its_policy_and_server() {
        let all = ResourceCall::ListPrompts { server: None };
        assert_eq!((all.method(), all.server()), ("prompts/list", None));
        let one = all.to_server("fs");
        assert_eq!(one.server(), Some("fs"));
        assert!(POLICY_NAMES.contains(&one.method()));
    }
}
