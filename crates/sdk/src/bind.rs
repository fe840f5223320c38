//! Python call semantics (positional and keyword arguments) mapped to an upstream's arguments.

use serde_json::{Map, Value};

use super::SdkFunction;

/// Why a call's arguments do not fit a function's signature. Messages read like Python's
/// `TypeError`, because the agent sees them as such.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    #[error("{function}() takes {takes} positional argument{} but {given} {} given", plural(*takes), was_were(*given))]
    TooManyPositional {
        function: String,
        takes: usize,
        given: usize,
    },
    #[error(
        "{function}() got an unexpected keyword argument '{keyword}' ({})",
        valid_names(valid)
    )]
    UnexpectedKeyword {
        function: String,
        keyword: String,
        valid: Vec<String>,
    },
    #[error("{function}() got multiple values for argument '{argument}'")]
    MultipleValues { function: String, argument: String },
    #[error("{function}() missing {} required argument{}: {}", missing.len(), plural(missing.len()), quoted_list(missing))]
    MissingRequired {
        function: String,
        missing: Vec<String>,
    },
    #[error(
        "{function}() takes keyword arguments only (its parameters are not known), but {given} positional argument{} {} given",
        plural(*given),
        was_were(*given)
    )]
    KeywordsOnly { function: String, given: usize },
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn was_were(n: usize) -> &'static str {
    if n == 1 { "was" } else { "were" }
}

fn valid_names(valid: &[String]) -> String {
    if valid.is_empty() {
        "it takes no arguments".to_owned()
    } else {
        format!("valid: {}", valid.join(", "))
    }
}

/// Python's way of listing missing arguments: `'a'`, `'a' and 'b'`, `'a', 'b', and 'c'`.
fn quoted_list(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [first, second] => format!("{first} and {second}"),
        [init @ .., last] => format!("{}, and {last}", init.join(", ")),
    }
}

impl SdkFunction {
    /// Binds a Python call's arguments to the upstream's argument object (keyed by wire names,
    /// in signature order). Values are not type-checked: the upstream validates them.
    pub fn bind_args(
        &self,
        positional: Vec<Value>,
        keywords: Vec<(String, Value)>,
    ) -> Result<Map<String, Value>, BindError> {
        if self.variadic_kwargs {
            return self.bind_variadic(&positional, keywords);
        }
        if positional.len() > self.params.len() {
            return Err(BindError::TooManyPositional {
                function: self.py_name.clone(),
                takes: self.params.len(),
                given: positional.len(),
            });
        }
        let mut slots: Vec<Option<Value>> = vec![None; self.params.len()];
        for (slot, value) in slots.iter_mut().zip(positional) {
            *slot = Some(value);
        }
        for (keyword, value) in keywords {
            let index = self
                .param_index(&keyword)
                .ok_or_else(|| BindError::UnexpectedKeyword {
                    function: self.py_name.clone(),
                    keyword: keyword.clone(),
                    valid: self.params.iter().map(|p| p.py_name.clone()).collect(),
                })?;
            let (Some(slot), Some(param)) = (slots.get_mut(index), self.params.get(index)) else {
                continue;
            };
            if slot.is_some() {
                return Err(BindError::MultipleValues {
                    function: self.py_name.clone(),
                    argument: param.py_name.clone(),
                });
            }
            *slot = Some(value);
        }
        let missing: Vec<String> = self
            .params
            .iter()
            .zip(&slots)
            .filter(|(p, slot)| p.required && slot.is_none())
            .map(|(p, _)| p.py_name.clone())
            .collect();
        if !missing.is_empty() {
            return Err(BindError::MissingRequired {
                function: self.py_name.clone(),
                missing,
            });
        }
        Ok(self
            .params
            .iter()
            .zip(slots)
            .filter_map(|(p, slot)| match slot {
                Some(Value::Null) if !p.required => None,
                Some(value) => Some((p.wire_name.clone(), value)),
                None => None,
            })
            .collect())
    }

    /// A keyword names a parameter by its Python name first, else by its wire name.
    pub fn param_index(&self, keyword: &str) -> Option<usize> {
        self.params
            .iter()
            .position(|p| p.py_name == keyword)
            .or_else(|| self.params.iter().position(|p| p.wire_name == keyword))
    }

    fn bind_variadic(
        &self,
        positional: &[Value],
        keywords: Vec<(String, Value)>,
    ) -> Result<Map<String, Value>, BindError> {
        if !positional.is_empty() {
            return Err(BindError::KeywordsOnly {
                function: self.py_name.clone(),
                given: positional.len(),
            });
        }
        let mut args = Map::new();
        for (keyword, value) in keywords {
            if args.contains_key(&keyword) {
                return Err(BindError::MultipleValues {
                    function: self.py_name.clone(),
                    argument: keyword,
                });
            }
            args.insert(keyword, value);
        }
        Ok(args)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Sdk;
    use crate::tooldef::ToolDef;

    use super::*;

    fn tool(name: &str, input_schema: Value) -> ToolDef {
        ToolDef::with_schema("everything", name, input_schema)
    }

    fn function(name: &str, schema: Value) -> SdkFunction {
        let sdk = Sdk::build(&[tool(name, schema)]);
        sdk.functions().first().cloned().expect("one function")
    }

    fn get_sum() -> SdkFunction {
        function(
            "get-sum",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        )
    }

    fn kw(pairs: &[(&str, Value)]) -> Vec<(String, Value)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn positional_and_keyword_arguments() {
        let f = get_sum();
        let args = f.bind_args(vec![json!(1)], kw(&[("b", json!(2))])).unwrap();
        assert_eq!(Value::Object(args), json!({"a": 1, "b": 2}));
        let args = f
            .bind_args(vec![], kw(&[("b", json!(2)), ("a", json!(1))]))
            .unwrap();
        assert_eq!(serde_json::to_string(&args).unwrap(), r#"{"a":1,"b":2}"#);
    }

    #[test]
    fn too_many_positional() {
        let err = get_sum()
            .bind_args(vec![json!(1), json!(2), json!(3)], vec![])
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "everything_get_sum() takes 2 positional arguments but 3 were given"
        );
        let none = function("ping", json!({"type": "object"}));
        let err = none.bind_args(vec![json!(1)], vec![]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "everything_ping() takes 0 positional arguments but 1 was given"
        );
    }

    #[test]
    fn unexpected_keyword() {
        let err = get_sum()
            .bind_args(vec![], kw(&[("c", json!(1))]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "everything_get_sum() got an unexpected keyword argument 'c' (valid: a, b)"
        );
    }

    #[test]
    fn multiple_values() {
        let err = get_sum()
            .bind_args(vec![json!(1)], kw(&[("a", json!(2))]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "everything_get_sum() got multiple values for argument 'a'"
        );
        let err = get_sum()
            .bind_args(vec![], kw(&[("b", json!(2)), ("b", json!(3))]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "everything_get_sum() got multiple values for argument 'b'"
        );
    }

    #[test]
    fn missing_required() {
        let err = get_sum().bind_args(vec![json!(1)], vec![]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "everything_get_sum() missing 1 required argument: 'b'"
        );
        let err = get_sum().bind_args(vec![], vec![]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "everything_get_sum() missing 2 required arguments: 'a' and 'b'"
        );
    }

    #[test]
    fn wire_names_and_keywords_map_back() {
        let f = function(
            "query",
            json!({"properties": {"from": {"type": "string"}, "user-id": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["from"]}),
        );
        let args = f
            .bind_args(
                vec![json!("x")],
                kw(&[("user_id", json!("u")), ("limit", Value::Null)]),
            )
            .unwrap();
        assert_eq!(Value::Object(args), json!({"from": "x", "user-id": "u"}));
        let args = f
            .bind_args(vec![], kw(&[("from", json!("x")), ("user-id", json!("u"))]))
            .unwrap();
        assert_eq!(Value::Object(args), json!({"from": "x", "user-id": "u"}));
        let err = f
            .bind_args(vec![], kw(&[("from_", json!(1)), ("from", json!(2))]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "everything_query() got multiple values for argument 'from_'"
        );
    }

    #[test]
    fn required_none_is_passed_through() {
        let args = get_sum()
            .bind_args(vec![Value::Null, json!(2)], vec![])
            .unwrap();
        assert_eq!(Value::Object(args), json!({"a": null, "b": 2}));
    }

    #[test]
    fn variadic_functions_take_keywords_only() {
        let f = function("raw", json!("not a schema"));
        assert!(f.variadic_kwargs);
        let args = f
            .bind_args(vec![], kw(&[("anything", json!([1])), ("n", Value::Null)]))
            .unwrap();
        assert_eq!(Value::Object(args), json!({"anything": [1], "n": null}));
        let err = f.bind_args(vec![json!(1), json!(2)], vec![]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "everything_raw() takes keyword arguments only (its parameters are not known), but 2 positional arguments were given"
        );
    }
}
