//! Which imports agent code may make, decided before any engine runs the
//! snippet: modules that would reach the OS are refused, standard modules
//! Monty lacks go to CPython, anything else is simply not there. Shared by
//! the router (before a run) and the Monty engines (at an import).

use crate::cpython_tables::STDLIB_MODULES;

/// Modules that would give agent code OS access; importing them is refused
/// outright rather than treated as a missing feature. Modules that only
/// compute (`gc`, `inspect`, `pickle`, `io`'s in-memory streams, ...) are
/// not here: Monty lacks them, so they go to CPython, whose session
/// container has nothing they could reach (see [`ESCALATES_THOUGH_ONCE_DENIED`]).
pub const DENIED_MODULES: &[&str] = &[
    "socket",
    "subprocess",
    "ctypes",
    "multiprocessing",
    "threading",
    "_thread",
    "signal",
    "pty",
    "fcntl",
    "resource",
    "shutil",
    "tempfile",
    "posix",
    "select",
    "selectors",
    "ssl",
    "http",
    "urllib",
    "ftplib",
    "smtplib",
    "imaplib",
    "poplib",
    "telnetlib",
    "socketserver",
    "xmlrpc",
    "webbrowser",
    "pdb",
    "mmap",
    "sqlite3",
    "dbm",
    "shelve",
    "glob",
    "zipimport",
    "runpy",
    "sysconfig",
    "site",
    "platform",
    "pwd",
    "grp",
    "termios",
    "tty",
    "asyncore",
    "asynchat",
];

/// Modules once refused in every engine that reach nothing outside the
/// interpreter: Monty hands them to CPython like any other module it lacks.
pub const ESCALATES_THOUGH_ONCE_DENIED: &[&str] = &[
    "builtins",
    "code",
    "codeop",
    "fnmatch",
    "gc",
    "importlib",
    "inspect",
    "io",
    "marshal",
    "pickle",
];

/// How an `import m` that Monty could not resolve should be answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportVerdict {
    /// A module that would reach the OS: refuse with `PermissionError`.
    Denied,
    /// In CPython's standard library but not in Monty.
    Unsupported { reason: String },
    /// Not a standard module at all: a normal `ModuleNotFoundError`.
    NotFound,
}

pub fn classify_import(module: &str) -> ImportVerdict {
    let top = module.split('.').next().unwrap_or(module);
    if DENIED_MODULES.contains(&top) {
        ImportVerdict::Denied
    } else if STDLIB_MODULES.binary_search(&top).is_ok() {
        ImportVerdict::Unsupported {
            reason: format!("the standard-library module '{module}'"),
        }
    } else {
        ImportVerdict::NotFound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_split_into_denied_unsupported_and_missing() {
        assert_eq!(classify_import("subprocess"), ImportVerdict::Denied);
        assert_eq!(classify_import("urllib.request"), ImportVerdict::Denied);
        assert!(matches!(
            classify_import("statistics"),
            ImportVerdict::Unsupported { .. }
        ));
        assert!(matches!(
            classify_import("enum"),
            ImportVerdict::Unsupported { .. }
        ));
        assert_eq!(classify_import("pandas"), ImportVerdict::NotFound);
    }

    #[test]
    fn harmless_modules_are_not_denied_but_go_to_cpython() {
        for module in ESCALATES_THOUGH_ONCE_DENIED {
            assert!(!DENIED_MODULES.contains(module), "{module}");
            assert!(
                matches!(classify_import(module), ImportVerdict::Unsupported { .. }),
                "{module}"
            );
        }
        assert!(matches!(
            classify_import("gc.collect"),
            ImportVerdict::Unsupported { .. }
        ));
    }
}
