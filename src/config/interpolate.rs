//! Environment references inside config strings.
//!
//! Understood forms, as the clients whose config files we read write them:
//! - `{env:VAR}` (opencode)
//! - `${VAR}` (Claude Code)
//! - `${VAR:-default}`: `default` when `VAR` is unset or empty, as in POSIX
//!   shells. The default is taken literally up to the first `}`; references
//!   do not nest.
//!
//! `VAR` must look like a shell variable name (`[A-Za-z_][A-Za-z0-9_]*`).
//! Anything else is kept as written: `$$`, a lone `$`, `$VAR` without braces,
//! `${}`, an unclosed `${VAR`, `{file:...}`. `$$` is kept as both characters
//! and stops the second `$` from starting a reference, so `$${VAR}` stays
//! `$${VAR}`. Substituted values are never scanned again.

use std::fmt;

/// A reference to an environment variable that is not set and has no default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsetVariable {
    pub name: String,
}

impl fmt::Display for UnsetVariable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "environment variable {} is not set", self.name)
    }
}

impl std::error::Error for UnsetVariable {}

/// Replaces every environment reference in `input` using `lookup`.
///
/// # Errors
/// The first variable that is referred to without a default and is unset.
pub fn interpolate(
    input: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, UnsetVariable> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find(['$', '{']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$$") {
            out.push_str("$$");
            rest = after;
        } else if let Some((reference, len)) = Reference::parse(tail) {
            out.push_str(&reference.resolve(lookup)?);
            rest = &tail[len..];
        } else {
            // `$` and `{` are one byte each.
            out.push_str(&tail[..1]);
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Replaces a leading `~` (alone or followed by `/`) with `$HOME`.
/// `~user` is kept as written.
///
/// # Errors
/// When the path starts with `~` and `HOME` is unset or empty.
pub fn expand_home(
    path: String,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, UnsetVariable> {
    let Some(after) = path.strip_prefix('~') else {
        return Ok(path);
    };
    if !(after.is_empty() || after.starts_with('/')) {
        return Ok(path);
    }
    match lookup("HOME").filter(|home| !home.is_empty()) {
        Some(home) => Ok(format!("{}{after}", home.trim_end_matches('/'))),
        None => Err(UnsetVariable {
            name: "HOME".to_owned(),
        }),
    }
}

struct Reference<'a> {
    name: &'a str,
    default: Option<&'a str>,
}

impl<'a> Reference<'a> {
    /// Parses a reference at the start of `text`; returns it and its length.
    fn parse(text: &'a str) -> Option<(Self, usize)> {
        if let Some(body) = text.strip_prefix("${") {
            let name = variable_name(body)?;
            let after = &body[name.len()..];
            if after.starts_with('}') {
                return Some((
                    Reference {
                        name,
                        default: None,
                    },
                    2 + name.len() + 1,
                ));
            }
            let default_text = after.strip_prefix(":-")?;
            let close = default_text.find('}')?;
            let default = Some(&default_text[..close]);
            let len = 2 + name.len() + 2 + close + 1;
            return Some((Reference { name, default }, len));
        }
        let body = text.strip_prefix("{env:")?;
        let name = variable_name(body)?;
        body[name.len()..].starts_with('}').then_some((
            Reference {
                name,
                default: None,
            },
            5 + name.len() + 1,
        ))
    }

    fn resolve(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, UnsetVariable> {
        match (lookup(self.name), self.default) {
            (Some(value), Some(default)) if value.is_empty() => Ok(default.to_owned()),
            (Some(value), _) => Ok(value),
            (None, Some(default)) => Ok(default.to_owned()),
            (None, None) => Err(UnsetVariable {
                name: self.name.to_owned(),
            }),
        }
    }
}

/// The longest shell-style variable name at the start of `text`.
fn variable_name(text: &str) -> Option<&str> {
    let len = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    let name = &text[..len];
    let first = name.chars().next()?;
    (!first.is_ascii_digit()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".to_owned()),
            "HOME" => Some("/home/u".to_owned()),
            "EMPTY" => Some(String::new()),
            "DOLLAR" => Some("${TOKEN}".to_owned()),
            _ => None,
        }
    }

    fn expand(text: &str) -> Result<String, UnsetVariable> {
        interpolate(text, &env)
    }

    fn ok(text: &str) -> String {
        expand(text).expect("every variable used here is set")
    }

    #[test]
    fn opencode_form() {
        assert_eq!(ok("Bearer {env:TOKEN}"), "Bearer s3cret");
    }

    #[test]
    fn claude_code_form() {
        assert_eq!(ok("${HOME}/bin:${TOKEN}"), "/home/u/bin:s3cret");
    }

    #[test]
    fn default_applies_when_unset_or_empty() {
        assert_eq!(ok("${NOPE:-fallback}"), "fallback");
        assert_eq!(ok("${EMPTY:-fallback}"), "fallback");
        assert_eq!(ok("${TOKEN:-fallback}"), "s3cret");
        assert_eq!(ok("${NOPE:-}"), "");
        assert_eq!(ok("${NOPE:-http://x:8080/a}"), "http://x:8080/a");
    }

    #[test]
    fn set_but_empty_without_default_is_empty() {
        assert_eq!(ok("a${EMPTY}b{env:EMPTY}c"), "abc");
    }

    #[test]
    fn missing_variable_is_named() {
        let err = expand("x ${NOPE} y").expect_err("NOPE is unset");
        assert_eq!(err.to_string(), "environment variable NOPE is not set");
        let err = expand("{env:ALSO_NOPE}").expect_err("ALSO_NOPE is unset");
        assert_eq!(err.name, "ALSO_NOPE");
    }

    #[test]
    fn things_that_are_not_references_stay() {
        for text in [
            "$",
            "cost: 5$",
            "$$",
            "$${TOKEN}",
            "$TOKEN",
            "${}",
            "${TOKEN",
            "${1X}",
            "${TOKEN:+x}",
            "${NOPE:-unclosed",
            "{env:}",
            "{env:TOKEN",
            "{file:~/.secret}",
            "{\"json\": 1}",
            "{}",
        ] {
            assert_eq!(ok(text), text, "{text:?} should be kept as written");
        }
    }

    #[test]
    fn substituted_values_are_not_rescanned() {
        assert_eq!(ok("${DOLLAR}"), "${TOKEN}");
    }

    #[test]
    fn non_ascii_text_survives() {
        assert_eq!(ok("é{env:TOKEN}ü$"), "és3cretü$");
    }

    #[test]
    fn home_expansion() {
        let home = |p: &str| expand_home(p.to_owned(), &env);
        assert_eq!(home("~"), Ok("/home/u".to_owned()));
        assert_eq!(home("~/src"), Ok("/home/u/src".to_owned()));
        assert_eq!(home("~bob/src"), Ok("~bob/src".to_owned()));
        assert_eq!(home("/a/~"), Ok("/a/~".to_owned()));
        let no_home = expand_home("~/x".to_owned(), &|_| None).expect_err("HOME is unset");
        assert_eq!(no_home.name, "HOME");
    }

    proptest! {
        #[test]
        fn text_without_markers_is_unchanged(text in "[^${]{0,40}") {
            prop_assert_eq!(ok(&text), text);
        }

        #[test]
        fn never_panics(text in "[${}:\\-a-zA-Z_0-9é]{0,40}") {
            let _ = expand(&text);
        }
    }
}
