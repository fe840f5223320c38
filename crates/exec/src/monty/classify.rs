//! Decides whether a Monty failure is the agent's bug, a resource verdict, or a
//! Python feature Monty lacks (the case a CPython fallback can take over).
//!
//! Error types alone do not tell: a `TypeError` may be a real bug or a dunder
//! Monty does not dispatch. So the rules look at the phase, the message and
//! reference tables of what CPython has (`codemcp_snippet::cpython_tables`).

use monty_types::{ExcType, MontyException};

use codemcp_snippet::cpython_tables::{BUILTINS, MODULE_ATTRS, TYPE_ATTRS};
pub use codemcp_snippet::imports::{ImportVerdict, classify_import};

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
        // Monty checks a literal f-string's format spec when it compiles the
        // snippet, so nothing runs; CPython raises `ValueError` when the line
        // runs, where the code may catch it.
        ExcType::SyntaxError if msg.starts_with("Invalid format specifier") => {
            Verdict::Unsupported {
                reason: format!(
                    "an f-string format specifier rejected before running ({msg}); CPython raises \
                     ValueError when that line runs"
                ),
            }
        }
        ExcType::TimeoutError if is_time_limit(msg) => Verdict::Limit,
        // In-process: "memory limit exceeded: …"; a pool worker killed by its
        // allocator: "the worker exceeded its memory limit …".
        ExcType::MemoryError if msg.contains("memory limit") => Verdict::Limit,
        ExcType::NotImplementedError if looks_like_monty_gap(msg) && !raised_by_user(exc) => {
            Verdict::Unsupported {
                reason: feature_from_message(msg),
            }
        }
        ExcType::TypeError | ExcType::ValueError | ExcType::NotImplementedError
            if refuses_an_argument(msg) && !raised_by_user(exc) =>
        {
            Verdict::Unsupported {
                reason: format!("this use of a builtin ({msg})"),
            }
        }
        ExcType::TypeError | ExcType::ValueError if monty_only_refusal(msg) => {
            Verdict::Unsupported {
                reason: format!("this use of a builtin ({msg})"),
            }
        }
        ExcType::OverflowError if msg.starts_with("Python int too large to convert") => {
            Verdict::Unsupported {
                reason: format!("integers this large here ({msg})"),
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

/// Monty's refusal of an argument or a form of a builtin it implements only
/// in part ("type() bases are not supported", "'flags' argument is not yet
/// supported"): recognised by its wording's kind, not one by one, minus the
/// few messages CPython gives in the same words.
fn refuses_an_argument(msg: &str) -> bool {
    const CPYTHON_TOO: &[&str] = &[
        "between instances of",
        "decoding str is not supported",
        "to Decimal is not supported",
    ];
    (msg.ends_with("not supported")
        || msg.contains("is not yet supported")
        || msg.contains("are not yet supported"))
        && !CPYTHON_TOO.iter().any(|p| msg.contains(p))
}

/// Refusals CPython does not make in these words: a builtin given an
/// argument CPython takes (`bytes([1, 2])`, `pow(2, -1, 7)`).
fn monty_only_refusal(msg: &str) -> bool {
    const ITERABLES: &[&str] = &[
        "list",
        "tuple",
        "range",
        "generator",
        "map",
        "filter",
        "zip",
        "set",
        "dict",
    ];
    if let Some(rest) = msg.strip_prefix("cannot convert '")
        && let Some((type_name, _)) = rest.split_once("' object to bytes")
    {
        return ITERABLES.contains(&type_name);
    }
    msg.starts_with("pow() 2nd argument cannot be negative when 3rd argument specified")
        // CPython's set methods take any number of iterables.
        || (msg.starts_with("set.") && msg.contains("takes exactly one argument"))
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
    if let Some(rest) = msg.strip_prefix("type object '") {
        return missing_class_attribute(rest);
    }
    let rest = msg.strip_prefix('\'')?;
    let (type_name, rest) = rest.split_once("' object has no attribute '")?;
    let name = rest.strip_suffix('\'')?;
    if name.starts_with("__") && BUILTINS.binary_search(&type_name).is_ok() {
        // An exception's `__cause__`, `__context__`, `__traceback__`, ...
        return Some(Verdict::Unsupported {
            reason: format!("the attribute '{type_name}.{name}'"),
        });
    }
    let attrs = TYPE_ATTRS.iter().find(|(t, _)| *t == type_name)?.1;
    (attrs.binary_search(&name).is_ok() || name.starts_with("__")).then(|| Verdict::Unsupported {
        reason: format!("the attribute '{type_name}.{name}'"),
    })
}

/// The attributes every class has in CPython (`dir(type)`, less
/// `__abstractmethods__`, which plain classes lack).
const CLASS_ATTRS: &[&str] = &[
    "__annotations__",
    "__base__",
    "__bases__",
    "__basicsize__",
    "__call__",
    "__class__",
    "__delattr__",
    "__dict__",
    "__dictoffset__",
    "__dir__",
    "__doc__",
    "__eq__",
    "__flags__",
    "__format__",
    "__ge__",
    "__getattribute__",
    "__getstate__",
    "__gt__",
    "__hash__",
    "__init__",
    "__init_subclass__",
    "__instancecheck__",
    "__itemsize__",
    "__le__",
    "__lt__",
    "__module__",
    "__mro__",
    "__name__",
    "__ne__",
    "__new__",
    "__or__",
    "__prepare__",
    "__qualname__",
    "__reduce__",
    "__reduce_ex__",
    "__repr__",
    "__ror__",
    "__setattr__",
    "__sizeof__",
    "__str__",
    "__subclasscheck__",
    "__subclasses__",
    "__subclasshook__",
    "__text_signature__",
    "__weakref__",
    "__weakrefoffset__",
];

/// `type object 'T' has no attribute 'N'`: a class (the agent's or a
/// builtin type) read for something every CPython class has, or a builtin
/// type for one of its own methods.
fn missing_class_attribute(rest: &str) -> Option<Verdict> {
    let (type_name, rest) = rest.split_once("' has no attribute '")?;
    let name = rest.strip_suffix('\'')?;
    let builtin_has = TYPE_ATTRS
        .iter()
        .find(|(t, _)| *t == type_name)
        .is_some_and(|(_, attrs)| attrs.binary_search(&name).is_ok());
    (builtin_has || CLASS_ATTRS.binary_search(&name).is_ok()).then(|| Verdict::Unsupported {
        reason: format!("the class attribute '{type_name}.{name}'"),
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
    use codemcp_snippet::cpython_tables::STDLIB_MODULES;

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
        assert!(matches!(
            classify(&exc(ExcType::SyntaxError, "Invalid format specifier '10xyz'")),
            Verdict::Unsupported { reason } if reason.contains("ValueError")
        ));
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

    #[test]
    fn refused_builtin_arguments_are_unsupported_by_kind() {
        for msg in [
            "type() bases are not supported",
            "'flags' argument is not yet supported",
            "callable replacement is not yet supported in re.sub()",
        ] {
            assert!(
                matches!(
                    classify(&exc(ExcType::TypeError, msg)),
                    Verdict::Unsupported { .. }
                ),
                "{msg}"
            );
        }
        // CPython's own words stay the agent's bug.
        assert_eq!(
            classify(&exc(ExcType::TypeError, "decoding str is not supported")),
            Verdict::Genuine
        );
        assert!(matches!(
            classify(&exc(
                ExcType::TypeError,
                "'<' not supported between instances of 'A' and 'A'"
            )),
            Verdict::Suspect { .. }
        ));
    }

    #[test]
    fn missing_class_dunders_are_unsupported() {
        for name in ["__qualname__", "__mro__", "__subclasses__", "__dict__"] {
            let msg = format!("type object 'Foo' has no attribute '{name}'");
            assert!(
                matches!(
                    classify(&exc(ExcType::AttributeError, &msg)),
                    Verdict::Unsupported { .. }
                ),
                "{msg}"
            );
        }
        for msg in [
            "cannot convert 'list' object to bytes",
            "pow() 2nd argument cannot be negative when 3rd argument specified",
        ] {
            assert!(
                matches!(
                    classify(&exc(ExcType::TypeError, msg)),
                    Verdict::Unsupported { .. }
                ),
                "{msg}"
            );
        }
        assert_eq!(
            classify(&exc(
                ExcType::TypeError,
                "cannot convert 'float' object to bytes"
            )),
            Verdict::Genuine
        );
        assert!(CLASS_ATTRS.windows(2).all(|w| w[0] < w[1]));
        assert!(matches!(
            classify(&exc(
                ExcType::AttributeError,
                "type object 'int' has no attribute 'from_bytes'"
            )),
            Verdict::Unsupported { .. }
        ));
        assert_eq!(
            classify(&exc(
                ExcType::AttributeError,
                "type object 'Foo' has no attribute 'colour'"
            )),
            Verdict::Genuine
        );
        assert!(matches!(
            classify(&exc(
                ExcType::OverflowError,
                "Python int too large to convert to C ssize_t"
            )),
            Verdict::Unsupported { .. }
        ));
    }
}
