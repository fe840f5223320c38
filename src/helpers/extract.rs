//! `save_helper(fn)`: the function `fn` of a snippet, cut out with exactly
//! what it needs (the snippet's other functions and imports it uses), or why
//! it cannot be kept: a saved helper is defined again at the start of every
//! later run, so defining it must have no effect but the definitions.

use std::collections::BTreeSet;

use codemcp_snippet::definitions::{Def, Definitions};

use codemcp_exec::helpers::HELPER_FUNCTIONS;
use codemcp_sdk::{RESERVED_NAMES, Sdk};

/// A helper cut out of a snippet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    pub name: String,
    /// Its imports and functions, each as written in the snippet.
    pub source: String,
    /// `name(a: int, b: str = ...) -> str`, as written.
    pub signature: String,
    /// The same, every parameter and the return typed (`Any` where the
    /// source has no annotation), for the type stub.
    pub stub: String,
    pub doc: String,
    /// The other helpers it calls (defined by their own records).
    pub uses_helpers: Vec<String>,
}

/// Where in the snippet a refusal points, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// Why a function cannot be saved as a helper.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("SyntaxError at {at}: {message}")]
    Syntax { at: Position, message: String },
    #[error(
        "no function named '{name}' is defined at the top level of this snippet (a helper is saved from the snippet that defines it)"
    )]
    NotDefined { name: String },
    #[error(
        "{at}: '{name}' is bound by a top-level statement that is not a def or an import; a helper carries only functions and imports, so move it into the function"
    )]
    TopLevel { at: Position, name: String },
    #[error(
        "{at}: {what} runs code when the helper is defined; a helper carries only side-effect-free definitions"
    )]
    SideEffect { at: Position, what: &'static str },
    #[error(
        "{at}: '{name}' is not defined: it is neither a tool function, a helper, a builtin nor a function or import of this snippet"
    )]
    Unknown { at: Position, name: String },
    #[error("{at}: '{name}' would shadow {what}; choose another name")]
    Shadows {
        at: Position,
        name: String,
        what: &'static str,
    },
    #[error("{at}: {problem}")]
    Preflight { at: Position, problem: String },
    #[error(
        "the helper's source is {size} bytes; the limit is {max} bytes (CODEMCP_HELPERS_MAX_BYTES)"
    )]
    TooLarge { size: usize, max: usize },
}

/// Cuts helper `name` out of `code`, read here (the operator's files, and
/// a run whose own analysis is not at hand). `sdk`: the caller's tools,
/// against which every name and call is checked (`None`: the operator's
/// files, not checked); `helpers`: the names of the helpers the caller
/// already has (they may be called); `max_bytes`: the size bound.
pub fn extract(
    code: &str,
    name: &str,
    sdk: Option<&Sdk>,
    helpers: &BTreeSet<String>,
    max_bytes: usize,
) -> Result<Extracted, Refusal> {
    let top = Definitions::read(code).map_err(|e| Refusal::Syntax {
        at: position(code, e.at),
        message: e.message,
    })?;
    let cut = Cut {
        code,
        top: &top,
        sdk,
        helpers,
        max_bytes,
        checked: false,
    };
    cut.extract(name)
}

/// What a helper is cut from, and against what.
pub struct Cut<'a> {
    pub code: &'a str,
    /// `code`'s top level (from the run's analysis: `Facts::definitions`).
    pub top: &'a Definitions,
    pub sdk: Option<&'a Sdk>,
    pub helpers: &'a BTreeSet<String>,
    pub max_bytes: usize,
    /// `code` passed the pre-flight check of the run that saves (it ran):
    /// its calls need no second check.
    pub checked: bool,
}

impl Cut<'_> {
    /// Cuts helper `name` out of the code.
    pub fn extract(&self, name: &str) -> Result<Extracted, Refusal> {
        let (code, top, sdk) = (self.code, self.top, self.sdk);
        let Some(def) = top.defs.get(name) else {
            return Err(Refusal::NotDefined {
                name: name.to_owned(),
            });
        };
        let mut needed = Needed::default();
        let mut queue = vec![name.to_owned()];
        while let Some(def_name) = queue.pop() {
            if !needed.defs.insert(def_name.clone()) {
                continue;
            }
            let Some(def) = top.defs.get(&def_name) else {
                continue;
            };
            check_definition(code, &def_name, def, sdk)?;
            for (free, at) in &def.free {
                if top.defs.contains_key(free) {
                    queue.push(free.clone());
                } else if let Some(&index) = top.imports.get(free) {
                    needed.imports.insert(index);
                } else if let Some(&stmt_at) = top.others.get(free) {
                    return Err(Refusal::TopLevel {
                        at: position(code, stmt_at),
                        name: free.clone(),
                    });
                } else if self.helpers.contains(free) {
                    needed.helpers.insert(free.clone());
                } else if !known_elsewhere(free, sdk) {
                    return Err(Refusal::Unknown {
                        at: position(code, *at),
                        name: free.clone(),
                    });
                }
            }
        }
        if let Some(sdk) = sdk.filter(|_| !self.checked) {
            preflight(code, sdk, self.helpers, top, &needed)?;
        }
        let source = needed.source(code, top);
        if source.len() > self.max_bytes {
            return Err(Refusal::TooLarge {
                size: source.len(),
                max: self.max_bytes,
            });
        }
        Ok(Extracted {
            name: name.to_owned(),
            signature: def.signature.clone(),
            stub: def.stub.clone(),
            doc: def.doc.clone(),
            uses_helpers: needed.helpers.into_iter().collect(),
            source,
        })
    }
}

/// A name the helper may use without carrying it: a builtin, a tool
/// function or one of the gateway's own.
fn known_elsewhere(name: &str, sdk: Option<&Sdk>) -> bool {
    let Some(sdk) = sdk else {
        return true;
    };
    ruff_python_stdlib::builtins::is_python_builtin(name, 14, false)
        || sdk.get(name).is_some()
        || RESERVED_NAMES.contains(&name)
        || HELPER_FUNCTIONS.contains(&name)
}

/// What the helper carries.
#[derive(Default)]
struct Needed {
    defs: BTreeSet<String>,
    imports: BTreeSet<usize>,
    helpers: BTreeSet<String>,
}

impl Needed {
    /// Imports first, then functions, each in snippet order.
    fn source(&self, code: &str, top: &Definitions) -> String {
        let text = |index: &usize| {
            let (start, end) = top.statements.get(*index).copied().unwrap_or_default();
            code.get(start as usize..end as usize).unwrap_or_default()
        };
        let mut defs: Vec<usize> = (self.defs.iter())
            .filter_map(|name| top.defs.get(name).map(|d| d.index))
            .collect();
        defs.sort_unstable();
        let parts: Vec<&str> = self.imports.iter().chain(&defs).map(text).collect();
        let mut source = parts.join("\n\n");
        source.push('\n');
        source
    }
}

/// Decorators, and calls in defaults or annotations, run at definition;
/// a name of a tool or gateway function would be shadowed.
fn check_definition(code: &str, name: &str, def: &Def, sdk: Option<&Sdk>) -> Result<(), Refusal> {
    let at = position(code, def.name_at);
    let shadowed = if sdk.is_some_and(|sdk| sdk.get(name).is_some()) {
        Some("a tool function")
    } else if RESERVED_NAMES.contains(&name) || HELPER_FUNCTIONS.contains(&name) {
        Some("a gateway function")
    } else if ruff_python_stdlib::builtins::is_python_builtin(name, 14, false) {
        Some("a builtin")
    } else {
        None
    };
    if let Some(what) = shadowed {
        return Err(Refusal::Shadows {
            at,
            name: name.to_owned(),
            what,
        });
    }
    if let Some(decorator) = def.decorator_at {
        return Err(Refusal::SideEffect {
            at: position(code, decorator),
            what: "a decorator",
        });
    }
    match def.signature_call_at {
        Some(at) => Err(Refusal::SideEffect {
            at: position(code, at),
            what: "a call in the signature",
        }),
        None => Ok(()),
    }
}

/// The calls the pre-flight check finds wrong in the carried functions
/// (arguments a tool refuses), pointing into the snippet.
fn preflight(
    code: &str,
    sdk: &Sdk,
    helpers: &BTreeSet<String>,
    top: &Definitions,
    needed: &Needed,
) -> Result<(), Refusal> {
    let earlier: Vec<String> = helpers.iter().cloned().collect();
    let checked = codemcp_snippet::preflight::check(code, sdk, &earlier);
    for finding in checked.findings {
        let inside = needed
            .defs
            .iter()
            .filter_map(|d| top.defs.get(d))
            .any(|def| {
                let first = position(code, def.range.0).line;
                let last = position(code, def.range.1).line;
                (first..=last).contains(&finding.line)
            });
        if inside {
            return Err(Refusal::Preflight {
                at: Position {
                    line: finding.line,
                    column: 1,
                },
                problem: finding.problem.to_string(),
            });
        }
    }
    Ok(())
}

/// 1-based line and column (in characters) of `offset` in `code`.
pub fn position(code: &str, offset: u32) -> Position {
    let at = (offset as usize).min(code.len());
    let before = code.get(..at).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    Position { line, column }
}

#[cfg(test)]
mod tests;
