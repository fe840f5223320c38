//! Literal arguments whose type the parameter's schema rules out for sure.
//!
//! Only a plain `"type"` is trusted, and only mismatches no common validator
//! lets through: lax validators (pydantic) turn `"5"` into 5 and `1` into
//! `True`, so those pass, as does anything that is not a literal.

use ruff_python_ast::{Expr, Number, UnaryOp};
use serde_json::Value;

use crate::sdk::SdkFunction;

/// What a literal argument is, as far as its JSON type goes.
#[derive(Debug, Clone, Copy)]
pub enum Literal<'a> {
    /// A string; `None` for an f-string, whose text is not known.
    Str(Option<&'a str>),
    Int,
    Float,
    Bool,
    List,
    Tuple,
    Dict,
}

impl Literal<'_> {
    /// The Python type name, as `TypeError` messages say it.
    pub fn python_name(self) -> &'static str {
        match self {
            Literal::Str(_) => "str",
            Literal::Int => "int",
            Literal::Float => "float",
            Literal::Bool => "bool",
            Literal::List => "list",
            Literal::Tuple => "tuple",
            Literal::Dict => "dict",
        }
    }
}

/// The literal `expr` is, if it is one whose JSON type is certain.
pub fn literal(expr: &Expr) -> Option<Literal<'_>> {
    Some(match expr {
        Expr::StringLiteral(s) => Literal::Str(Some(s.value.to_str())),
        Expr::FString(_) => Literal::Str(None),
        Expr::NumberLiteral(n) => number(&n.value)?,
        Expr::UnaryOp(op) if matches!(op.op, UnaryOp::USub | UnaryOp::UAdd) => {
            match op.operand.as_ref() {
                Expr::NumberLiteral(n) => number(&n.value)?,
                _ => return None,
            }
        }
        Expr::BooleanLiteral(_) => Literal::Bool,
        Expr::List(_) | Expr::ListComp(_) => Literal::List,
        Expr::Tuple(_) => Literal::Tuple,
        Expr::Dict(_) | Expr::DictComp(_) => Literal::Dict,
        _ => return None,
    })
}

fn number(n: &Number) -> Option<Literal<'static>> {
    match n {
        Number::Int(_) => Some(Literal::Int),
        Number::Float(_) => Some(Literal::Float),
        Number::Complex { .. } => None,
    }
}

/// The JSON type `function`'s parameter `wire` must have, when its schema
/// says so plainly (one `type`, nothing that could widen it).
pub fn certain_type<'f>(function: &'f SdkFunction, wire: &str) -> Option<&'f str> {
    const WIDENING: &[&str] = &["anyOf", "oneOf", "allOf", "$ref", "not", "if"];
    let property = function
        .input_schema
        .get("properties")?
        .get(wire)?
        .as_object()?;
    if WIDENING.iter().any(|key| property.contains_key(*key)) {
        return None;
    }
    property.get("type").and_then(Value::as_str)
}

/// Whether no validator accepts `literal` for JSON type `expected`.
pub fn mismatched(literal: Literal<'_>, expected: &str) -> bool {
    match (literal, expected) {
        (Literal::Str(Some(text)), "integer" | "number") => text.trim().parse::<f64>().is_err(),
        (Literal::Str(Some(text)), "boolean") => !BOOLEAN_WORDS
            .iter()
            .any(|w| w.eq_ignore_ascii_case(text.trim())),
        (Literal::Str(_), "array" | "object")
        | (Literal::Int | Literal::Float | Literal::Bool, "string" | "array" | "object")
        | (
            Literal::List | Literal::Tuple,
            "string" | "integer" | "number" | "boolean" | "object",
        )
        | (Literal::Dict, "string" | "integer" | "number" | "boolean" | "array") => true,
        _ => false,
    }
}

/// Strings lax validators read as booleans.
const BOOLEAN_WORDS: &[&str] = &[
    "true", "false", "yes", "no", "on", "off", "1", "0", "t", "f", "y", "n",
];

/// The Python name of JSON type `json`, as the signatures show it.
pub fn python_type(json: &str) -> &str {
    match json {
        "integer" => "int",
        "number" => "float",
        "string" => "str",
        "boolean" => "bool",
        "array" => "list",
        "object" => "dict",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(code: &str) -> Option<&'static str> {
        let parsed = ruff_python_parser::parse_expression(code).expect("parses");
        literal(parsed.expr()).map(Literal::python_name)
    }

    #[test]
    fn literals_are_told_by_their_json_type() {
        assert_eq!(lit("'a' 'b'"), Some("str"));
        assert_eq!(lit("f'{x}'"), Some("str"));
        assert_eq!(lit("-1"), Some("int"));
        assert_eq!(lit("2.5"), Some("float"));
        assert_eq!(lit("1j"), None);
        assert_eq!(lit("True"), Some("bool"));
        assert_eq!(lit("[x for x in y]"), Some("list"));
        assert_eq!(lit("(1, 2)"), Some("tuple"));
        assert_eq!(lit("{}"), Some("dict"));
        assert_eq!(lit("{1}"), None);
        assert_eq!(lit("None"), None);
        assert_eq!(lit("x"), None);
        assert_eq!(lit("-x"), None);
    }

    #[test]
    fn only_mismatches_no_validator_accepts_are_flagged() {
        let flagged = |code: &str, ty: &str| {
            let parsed = ruff_python_parser::parse_expression(code).expect("parses");
            mismatched(literal(parsed.expr()).expect("a literal"), ty)
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
        assert!(!flagged("'x'", "null") && !flagged("'x'", "string"));
    }
}
