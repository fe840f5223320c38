//! Decides whether a Monty failure is the agent's bug, a resource verdict, or a
//! Python feature Monty lacks (the case a CPython fallback can take over).
//!
//! Error types alone do not tell: a `TypeError` may be a real bug or a dunder
//! Monty does not dispatch. So the rules look at the phase, the message and
//! reference tables of what CPython has (`exec/cpython_tables.rs`).

use monty_types::{ExcType, MontyException};

use crate::exec::cpython_tables::{BUILTINS, MODULE_ATTRS, TYPE_ATTRS};
pub use crate::exec::imports::{ImportVerdict, classify_import};

/// What a failure means for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A genuine Python error: report it as is.
    Genuine,
    /// A limit fired (time, memory, output, tool calls): report, never escalate.
    Limit,
    /// Valid Python that Monty cannot run; `reason` names the missing feature.
    Unsupported { reason: String },
    /// Probably a Monty gap but CPython might raise the same: report with a hint.
    Suspect { reason: String },
}

/// A name the agent called or read that is neither defined nor a tool.
pub fn classify_missing_name(name: &str) -> Option<String> {
    BUILTINS
        .binary_search(&name)
        .is_ok()
        .then(|| format!("the builtin '{name}'"))
}

/// How Monty words a failure of its own (a case its interpreter does not handle).
pub const MONTY_INTERNAL: &str = "Internal error in monty: ";

/// Any error from compiling or running a snippet.
pub fn classify(exc: &MontyException) -> Verdict {
    let msg = exc.message().unwrap_or_default();
    if let Some(what) = msg.strip_prefix(MONTY_INTERNAL) {
        return Verdict::Unsupported {
            reason: internal_gap(what),
        };
    }
    match exc.exc_type() {
        ExcType::SyntaxError if msg.contains("too deeply nested") => Verdict::Unsupported {
            reason: "source nested this deeply".into(),
        },
        ExcType::TimeoutError if is_time_limit(msg) => Verdict::Limit,
        // In-process: "memory limit exceeded: …"; a pool worker killed by its
        // allocator: "the worker exceeded its memory limit …".
        ExcType::MemoryError if msg.contains("memory limit") => Verdict::Limit,
        ExcType::NotImplementedError if looks_like_monty_gap(msg) && !raised_by_user(exc) => {
            Verdict::Unsupported {
                reason: feature_from_message(msg),
            }
        }
        ExcType::ImportError => missing_module_member(msg).unwrap_or(Verdict::Genuine),
        ExcType::AttributeError => missing_attribute(msg).unwrap_or(Verdict::Genuine),
        ExcType::TypeError if looks_like_protocol_gap(msg) => Verdict::Suspect {
            reason: format!(
                "'{msg}' may come from a special method (such as __len__ or __lt__) that Monty does not dispatch"
            ),
        },
        _ => Verdict::Genuine,
    }
}

/// The feature behind one of Monty's internal errors, in the agent's terms.
fn internal_gap(what: &str) -> String {
    if what.starts_with("exceptions can only be called with zero or one string argument") {
        "exceptions made from anything but one string (such as ValueError(err) or \
         ValueError('x', 1)); pass one string, e.g. ValueError(str(err))"
            .into()
    } else {
        format!("this construct ({what})")
    }
}

fn is_time_limit(msg: &str) -> bool {
    msg.contains("time limit exceeded")
}

fn looks_like_monty_gap(msg: &str) -> bool {
    [
        "does not yet support",
        "not supported",
        "not implemented with standard execution",
        "cannot suspend",
        "is not yet supported",
    ]
    .iter()
    .any(|p| msg.contains(p))
}

fn raised_by_user(exc: &MontyException) -> bool {
    exc.traceback()
        .last()
        .and_then(|f| f.preview_line.as_deref())
        .is_some_and(|line| line.trim_start().starts_with("raise"))
}

fn looks_like_protocol_gap(msg: &str) -> bool {
    (msg.starts_with("object of type '") && msg.ends_with("' has no len()"))
        || msg.contains("not supported between instances of")
        || msg.starts_with("cannot create '")
}

/// `cannot import name 'N' from 'M' (unknown location)` for a module Monty ships
/// partially while CPython has the name.
fn missing_module_member(msg: &str) -> Option<Verdict> {
    let rest = msg.strip_prefix("cannot import name '")?;
    let (name, rest) = rest.split_once("' from '")?;
    let (module, _) = rest.split_once('\'')?;
    module_has(module, name).then(|| Verdict::Unsupported {
        reason: format!("'{module}.{name}'"),
    })
}

/// `module 'M' has no attribute 'N'` or `'T' object has no attribute 'N'` where
/// CPython has it.
fn missing_attribute(msg: &str) -> Option<Verdict> {
    if let Some(rest) = msg.strip_prefix("module '") {
        let (module, rest) = rest.split_once("' has no attribute '")?;
        let name = rest.strip_suffix('\'')?;
        return module_has(module, name).then(|| Verdict::Unsupported {
            reason: format!("'{module}.{name}'"),
        });
    }
    let rest = msg.strip_prefix('\'')?;
    let (type_name, rest) = rest.split_once("' object has no attribute '")?;
    let name = rest.strip_suffix('\'')?;
    let attrs = TYPE_ATTRS.iter().find(|(t, _)| *t == type_name)?.1;
    (attrs.binary_search(&name).is_ok() || name.starts_with("__")).then(|| Verdict::Unsupported {
        reason: format!("the attribute '{type_name}.{name}'"),
    })
}

fn module_has(module: &str, name: &str) -> bool {
    MODULE_ATTRS
        .iter()
        .find(|(m, _)| *m == module)
        .is_some_and(|(_, attrs)| attrs.binary_search(&name).is_ok())
}

/// Turns Monty's "The monty syntax parser does not yet support X" into "X".
fn feature_from_message(msg: &str) -> String {
    msg.split_once("does not yet support ")
        .map(|(_, feature)| feature.trim().trim_end_matches('.'))
        .filter(|feature| !feature.is_empty())
        .unwrap_or(msg)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::cpython_tables::STDLIB_MODULES;

    fn exc(t: ExcType, msg: &str) -> MontyException {
        MontyException::new(t, Some(msg.into()))
    }

    #[test]
    fn tables_are_sorted_for_binary_search() {
        assert!(STDLIB_MODULES.windows(2).all(|w| w[0] <= w[1]));
        assert!(BUILTINS.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn monty_internal_errors_are_unsupported_features_not_internal_faults() {
        let v = classify(&exc(
            ExcType::RuntimeError,
            "Internal error in monty: exceptions can only be called with zero or one string argument",
        ));
        assert!(
            matches!(&v, Verdict::Unsupported { reason } if reason.contains("ValueError(str(err))")),
            "{v:?}"
        );
        let v = classify(&exc(
            ExcType::RuntimeError,
            "Internal error in monty: something new",
        ));
        assert!(matches!(&v, Verdict::Unsupported { reason } if reason.contains("something new")));
        // A user's own RuntimeError stays theirs.
        assert_eq!(
            classify(&exc(ExcType::RuntimeError, "Internal error")),
            Verdict::Genuine
        );
    }

    #[test]
    fn compile_time_not_implemented_is_unsupported() {
        let v = classify(&exc(
            ExcType::NotImplementedError,
            "The monty syntax parser does not yet support class inheritance",
        ));
        assert_eq!(
            v,
            Verdict::Unsupported {
                reason: "class inheritance".into()
            }
        );
        assert_eq!(
            classify(&exc(ExcType::SyntaxError, "invalid syntax")),
            Verdict::Genuine
        );
    }

    #[test]
    fn limits_and_genuine_errors_are_told_apart() {
        assert_eq!(
            classify(&exc(
                ExcType::TimeoutError,
                "feed time limit exceeded: 1s > 1s"
            )),
            Verdict::Limit
        );
        assert_eq!(
            classify(&exc(
                ExcType::MemoryError,
                "memory limit exceeded: 5 bytes > 4 bytes"
            )),
            Verdict::Limit
        );
        assert_eq!(
            classify(&exc(ExcType::ZeroDivisionError, "division by zero")),
            Verdict::Genuine
        );
        assert_eq!(classify(&exc(ExcType::KeyError, "'k'")), Verdict::Genuine);
    }

    #[test]
    fn missing_cpython_names_are_unsupported() {
        assert!(matches!(
            classify(&exc(
                ExcType::AttributeError,
                "module 're' has no attribute 'VERBOSE'"
            )),
            Verdict::Unsupported { .. }
        ));
        assert!(matches!(
            classify(&exc(
                ExcType::ImportError,
                "cannot import name 'OrderedDict' from 'collections' (unknown location)"
            )),
            Verdict::Unsupported { .. }
        ));
        assert_eq!(
            classify(&exc(
                ExcType::AttributeError,
                "module 're' has no attribute 'NOPE'"
            )),
            Verdict::Genuine
        );
        assert!(matches!(
            classify(&exc(
                ExcType::AttributeError,
                "'str' object has no attribute 'format_map'"
            )),
            Verdict::Unsupported { .. }
        ));
        assert_eq!(
            classify_missing_name("super").as_deref(),
            Some("the builtin 'super'")
        );
        assert_eq!(classify_missing_name("my_var"), None);
    }
}
