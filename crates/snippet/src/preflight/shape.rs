//! What an argument expression surely is, as far as JSON goes: literals with
//! their values, lists and dicts with what is known of their items, and
//! `Unknown` for everything a name, call or operator could make.

use ruff_python_ast::{Expr, Number, UnaryOp};

/// Literals nested deeper than this are not looked into: the check stays
/// cheap and shallow, and what is below counts as unknown.
const MAX_DEPTH: usize = 32;

/// An argument's value, as far as the syntax tells.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape<'a> {
    /// Anything: a name, a call, an operator.
    Unknown,
    Null,
    Bool(bool),
    /// An integer, with its value when it fits in an `i64`.
    Int(Option<i64>),
    Float,
    /// A string; `None` for an f-string, whose text is not known.
    Str(Option<&'a str>),
    /// A list or tuple (both are sent as JSON arrays); `None` when its items
    /// are not all known (a comprehension, a `*starred` item).
    List {
        items: Option<Vec<Shape<'a>>>,
        tuple: bool,
    },
    /// A dict: its entries with literal string keys (the last of duplicates
    /// wins), and whether it may hold others (`**spread`, a computed key).
    Dict {
        entries: Vec<(&'a str, Shape<'a>)>,
        open: bool,
    },
}

impl<'a> Shape<'a> {
    /// The shape of `expr`.
    pub fn of(expr: &'a Expr) -> Shape<'a> {
        shape(expr, 0)
    }

    /// The Python type name, as `TypeError` messages say it.
    pub fn python_name(&self) -> &'static str {
        match self {
            Shape::Unknown => "object",
            Shape::Null => "None",
            Shape::Bool(_) => "bool",
            Shape::Int(_) => "int",
            Shape::Float => "float",
            Shape::Str(_) => "str",
            Shape::List { tuple: true, .. } => "tuple",
            Shape::List { .. } => "list",
            Shape::Dict { .. } => "dict",
        }
    }

    /// The value as Python writes it, when it is a scalar whose value is known.
    pub fn repr(&self) -> Option<String> {
        match self {
            Shape::Null => Some("None".to_owned()),
            Shape::Bool(true) => Some("True".to_owned()),
            Shape::Bool(false) => Some("False".to_owned()),
            Shape::Int(Some(n)) => Some(n.to_string()),
            Shape::Str(Some(text)) => Some(py_repr_str(text)),
            _ => None,
        }
    }
}

fn shape(expr: &Expr, depth: usize) -> Shape<'_> {
    if depth > MAX_DEPTH {
        return Shape::Unknown;
    }
    match expr {
        Expr::NoneLiteral(_) => Shape::Null,
        Expr::BooleanLiteral(b) => Shape::Bool(b.value),
        Expr::StringLiteral(s) => Shape::Str(Some(s.value.to_str())),
        Expr::FString(_) => Shape::Str(None),
        Expr::NumberLiteral(n) => number(&n.value, false),
        Expr::UnaryOp(op) if matches!(op.op, UnaryOp::USub | UnaryOp::UAdd) => {
            match op.operand.as_ref() {
                Expr::NumberLiteral(n) => number(&n.value, op.op == UnaryOp::USub),
                _ => Shape::Unknown,
            }
        }
        Expr::List(list) => sequence(&list.elts, false, depth),
        Expr::Tuple(tuple) => sequence(&tuple.elts, true, depth),
        Expr::ListComp(_) => Shape::List {
            items: None,
            tuple: false,
        },
        Expr::Dict(dict) => {
            let mut entries: Vec<(&str, Shape<'_>)> = Vec::new();
            let mut open = false;
            for item in &dict.items {
                let Some(Expr::StringLiteral(key)) = &item.key else {
                    open = true;
                    continue;
                };
                let key = key.value.to_str();
                let value = shape(&item.value, depth + 1);
                match entries.iter_mut().find(|(k, _)| *k == key) {
                    Some(entry) => entry.1 = value,
                    None => entries.push((key, value)),
                }
            }
            Shape::Dict { entries, open }
        }
        Expr::DictComp(_) => Shape::Dict {
            entries: Vec::new(),
            open: true,
        },
        _ => Shape::Unknown,
    }
}

fn number(n: &Number, negative: bool) -> Shape<'static> {
    match n {
        Number::Int(i) => Shape::Int(
            i.as_i64()
                .and_then(|v| if negative { v.checked_neg() } else { Some(v) }),
        ),
        Number::Float(_) => Shape::Float,
        Number::Complex { .. } => Shape::Unknown,
    }
}

fn sequence(items: &[Expr], tuple: bool, depth: usize) -> Shape<'_> {
    let known = !items.iter().any(|e| matches!(e, Expr::Starred(_)));
    Shape::List {
        items: known.then(|| items.iter().map(|e| shape(e, depth + 1)).collect()),
        tuple,
    }
}

/// A Python string literal in single quotes, as `repr` writes short ones.
pub fn py_repr_str(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(code: &str) -> String {
        let parsed = ruff_python_parser::parse_expression(code).expect("parses");
        format!("{:?}", Shape::of(parsed.expr()))
    }

    #[test]
    fn literals_keep_what_is_known_of_them() {
        assert_eq!(of("None"), "Null");
        assert_eq!(of("-3"), "Int(Some(-3))");
        assert_eq!(of("10**100"), "Unknown");
        assert_eq!(of("f'{x}'"), "Str(None)");
        assert_eq!(of("'a' 'b'"), "Str(Some(\"ab\"))");
        assert_eq!(of("[1, *xs]"), "List { items: None, tuple: false }");
        assert_eq!(
            of("{'a': 1, 'a': 'x', k: 2}"),
            "Dict { entries: [(\"a\", Str(Some(\"x\")))], open: true }"
        );
        assert_eq!(of("{1, 2}"), "Unknown");
    }

    #[test]
    fn nesting_past_the_bound_is_unknown() {
        let deep = format!("{}1{}", "[".repeat(40), "]".repeat(40));
        let parsed = ruff_python_parser::parse_expression(&deep).expect("parses");
        let mut shape = Shape::of(parsed.expr());
        let mut levels = 0;
        while let Shape::List {
            items: Some(mut items),
            ..
        } = shape
        {
            shape = items.pop().unwrap_or(Shape::Unknown);
            levels += 1;
        }
        assert_eq!(shape, Shape::Unknown);
        assert_eq!(levels, MAX_DEPTH + 1);
    }
}
