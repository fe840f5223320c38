//! Text that a person reads and decides on (the approval question, the
//! audit log): nothing in it may be hidden, reordered or forged by the
//! strings it quotes. Control, bidi, zero-width and other format characters
//! are shown as escapes (`\n`, `\u202e`); a backslash is doubled so an
//! escape cannot be faked; long values are shortened one by one, their
//! original length shown, so one value never pushes another out of sight.

use std::fmt::Write as _;

use serde_json::{Map, Value};
use unicode_general_category::{GeneralCategory, get_general_category};

/// Whether `c` changes or hides what is around it instead of showing as
/// itself: controls, format characters (bidi overrides and isolates,
/// zero-width joiners, tags, the BOM), line and paragraph separators.
pub fn is_hidden(c: char) -> bool {
    matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::Surrogate
            | GeneralCategory::Unassigned
    )
}

/// Whether `s` holds a character [`is_hidden`] would escape.
pub fn has_hidden(s: &str) -> bool {
    s.chars().any(is_hidden)
}

/// `s` with every hidden character escaped and `\` doubled; one line.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    out
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if is_hidden(c) => {
            let code = u32::from(c);
            if code <= 0xFFFF {
                let _ = write!(out, "\\u{code:04x}");
            } else {
                let _ = write!(out, "\\U{code:08x}");
            }
        }
        c => out.push(c),
    }
}

/// [`escape`] of at most `max_chars` characters of `s`; a longer `s` is cut
/// and marked with its full length: `abc… (3000 chars)`.
pub fn shortened(s: &str, max_chars: usize) -> String {
    cut(s, max_chars, true)
}

/// The first `max_chars` characters of `s` (escaped when `escaping`), and
/// `… (N chars)` when there were more.
fn cut(s: &str, max_chars: usize, escaping: bool) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    for (shown, c) in chars.by_ref().enumerate() {
        if shown == max_chars {
            let total = shown + 1 + chars.count();
            let _ = write!(out, "… ({total} chars)");
            return out;
        }
        if escaping {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// One JSON value for a person, at most about `max_chars` characters:
/// strings quoted and [`shortened`], arrays and objects compact JSON-like
/// text cut with their full size noted.
pub fn value(v: &Value, max_chars: usize) -> String {
    match v {
        Value::String(s) => format!("\"{}\"", shortened(s, max_chars)),
        Value::Array(items) => {
            let text = compact(v);
            if text.chars().count() <= max_chars {
                text
            } else {
                format!(
                    "{} (a list of {} items)",
                    cut(&text, max_chars, false),
                    items.len()
                )
            }
        }
        Value::Object(map) => {
            let text = compact(v);
            if text.chars().count() <= max_chars {
                text
            } else {
                format!(
                    "{} (an object of {} keys)",
                    cut(&text, max_chars, false),
                    map.len()
                )
            }
        }
        other => other.to_string(),
    }
}

/// Compact JSON with hidden characters escaped as JSON does (`\u202e`),
/// so the text still reads as the JSON it is.
fn compact(v: &Value) -> String {
    json_escaped(&v.to_string())
}

/// One line per argument, `  name = value`, names and values escaped and
/// each value shortened on its own: every argument's name is always shown,
/// and the whole stays near `budget_chars` by giving each value its share.
pub fn arguments(args: &Map<String, Value>, budget_chars: usize) -> String {
    const NAME_CHARS: usize = 80;
    const MIN_VALUE_CHARS: usize = 40;
    const MAX_VALUE_CHARS: usize = 300;
    let share = (budget_chars / args.len().max(1)).clamp(MIN_VALUE_CHARS, MAX_VALUE_CHARS);
    let mut out = String::new();
    for (name, v) in args {
        let _ = writeln!(
            out,
            "  {} = {}",
            shortened(name, NAME_CHARS),
            value(v, share)
        );
    }
    out
}

/// `json` (serialized JSON text) with every hidden character that
/// serde_json left raw written as a `\uXXXX` escape: the same JSON when
/// parsed, but a terminal or editor shows it as it is. Hidden characters
/// only occur inside strings, where such escapes are valid.
pub fn json_escaped(json: &str) -> String {
    if !json.chars().any(|c| is_hidden(c) && !c.is_ascii()) {
        return json.to_owned();
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_hidden(c) && !c.is_ascii() {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hidden_characters_are_escaped() {
        assert_eq!(escape("invoice_\u{202e}gnp.exe"), "invoice_\\u202egnp.exe");
        assert_eq!(escape("a\nb\tc\\u202e"), "a\\nb\\tc\\\\u202e");
        assert_eq!(
            escape("zero\u{200b}width\u{feff}"),
            "zero\\u200bwidth\\ufeff"
        );
        assert_eq!(escape("tag\u{e0041}"), "tag\\U000e0041");
        assert_eq!(escape("isolate\u{2066}x\u{2069}"), "isolate\\u2066x\\u2069");
        assert_eq!(escape("météo 天气 🚀 ok"), "météo 天气 🚀 ok");
    }

    #[test]
    fn long_values_are_shortened_with_their_length() {
        assert_eq!(shortened(&"x".repeat(10), 3), "xxx… (10 chars)");
        assert_eq!(shortened("abc", 3), "abc");
        assert_eq!(value(&json!("é".repeat(5)), 2), "\"éé… (5 chars)\"");
        let list = value(&json!(vec![1; 100]), 10);
        assert!(list.ends_with("(a list of 100 items)"), "{list}");
    }

    #[test]
    fn every_argument_keeps_its_line() {
        let Value::Object(args) = json!({"body": "b".repeat(3000), "to": "mallory"}) else {
            unreachable!()
        };
        let text = arguments(&args, 1000);
        assert!(text.contains("(3000 chars)"), "{text}");
        assert!(text.contains("  to = \"mallory\"\n"), "{text}");
    }

    #[test]
    fn json_stays_json() {
        let v = json!({"k": "a\u{202e}b\u{e0041}"});
        let text = json_escaped(&v.to_string());
        assert!(text.is_ascii(), "{text}");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
    }
}
