//! `save_helper(fn)`: the function `fn` of a snippet, cut out with exactly
//! what it needs (the snippet's other functions and imports it uses), or why
//! it cannot be kept: a saved helper is defined again at the start of every
//! later run, so defining it must have no effect but the definitions.

use std::collections::{BTreeSet, HashMap};

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprContext, Parameter, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};

use crate::exec::helpers::HELPER_FUNCTIONS;
use crate::sdk::{RESERVED_NAMES, Sdk};

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

/// Cuts helper `name` out of `code`. `sdk`: the caller's tools, against
/// which every name and call is checked (`None`: the operator's files, not
/// checked); `helpers`: the names of the helpers the caller already has
/// (they may be called); `max_bytes`: the size bound.
pub fn extract(
    code: &str,
    name: &str,
    sdk: Option<&Sdk>,
    helpers: &BTreeSet<String>,
    max_bytes: usize,
) -> Result<Extracted, Refusal> {
    let parsed = ruff_python_parser::parse_module(code).map_err(|e| Refusal::Syntax {
        at: position(code, e.location.start()),
        message: e.error.to_string(),
    })?;
    let body = &parsed.syntax().body;
    let top = TopLevel::of(body);
    if !top.defs.contains_key(name) {
        return Err(Refusal::NotDefined {
            name: name.to_owned(),
        });
    }
    let mut needed = Needed::default();
    let mut queue = vec![name.to_owned()];
    while let Some(def_name) = queue.pop() {
        if !needed.defs.insert(def_name.clone()) {
            continue;
        }
        let Some(&def) = top.defs.get(&def_name) else {
            continue;
        };
        check_definition(code, def, sdk)?;
        for (free, at) in free_names(def) {
            if top.defs.contains_key(&free) {
                queue.push(free);
            } else if let Some(&index) = top.imports.get(&free) {
                needed.imports.insert(index);
            } else if let Some(&stmt_at) = top.others.get(&free) {
                return Err(Refusal::TopLevel {
                    at: position(code, stmt_at),
                    name: free,
                });
            } else if helpers.contains(&free) {
                needed.helpers.insert(free);
            } else if !known_elsewhere(&free, sdk) {
                return Err(Refusal::Unknown {
                    at: position(code, at),
                    name: free,
                });
            }
        }
    }
    if let Some(sdk) = sdk {
        preflight(code, sdk, helpers, &top, &needed)?;
    }
    let source = needed.source(code, body);
    if source.len() > max_bytes {
        return Err(Refusal::TooLarge {
            size: source.len(),
            max: max_bytes,
        });
    }
    let def = top.defs[name];
    Ok(Extracted {
        name: name.to_owned(),
        signature: signature(code, def, false),
        stub: signature(code, def, true),
        doc: docstring(def),
        uses_helpers: needed.helpers.into_iter().collect(),
        source,
    })
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

/// The snippet's top level: functions, imports (by the name they bind) and
/// what other statements bind.
#[derive(Default)]
struct TopLevel<'a> {
    defs: HashMap<String, &'a StmtFunctionDef>,
    /// Bound name → index of its import statement in the body.
    imports: HashMap<String, usize>,
    /// Bound name → start of the statement that binds it.
    others: HashMap<String, TextSize>,
}

impl<'a> TopLevel<'a> {
    fn of(body: &'a [Stmt]) -> Self {
        let mut top = TopLevel::default();
        for (index, stmt) in body.iter().enumerate() {
            match stmt {
                Stmt::FunctionDef(def) => {
                    top.defs.insert(def.name.to_string(), def);
                    top.others.remove(def.name.as_str());
                }
                Stmt::Import(import) => {
                    for alias in &import.names {
                        let bound = alias.asname.as_ref().map_or_else(
                            || alias.name.split('.').next().unwrap_or_default().to_owned(),
                            ToString::to_string,
                        );
                        top.imports.insert(bound, index);
                    }
                }
                Stmt::ImportFrom(from) => {
                    for alias in &from.names {
                        let bound = alias.asname.as_ref().unwrap_or(&alias.name).to_string();
                        top.imports.insert(bound, index);
                    }
                }
                Stmt::ClassDef(class) => {
                    top.others.insert(class.name.to_string(), stmt.start());
                }
                other => {
                    let mut stores = Names::default();
                    stores.visit_stmt(other);
                    for (name, _) in stores.stores {
                        if !top.defs.contains_key(&name) {
                            top.others.entry(name).or_insert(other.start());
                        }
                    }
                }
            }
        }
        top
    }
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
    fn source(&self, code: &str, body: &[Stmt]) -> String {
        let mut parts: Vec<&str> = Vec::new();
        for index in &self.imports {
            if let Some(stmt) = body.get(*index) {
                parts.push(&code[stmt.range()]);
            }
        }
        for stmt in body {
            if let Stmt::FunctionDef(def) = stmt
                && self.defs.contains(def.name.as_str())
            {
                parts.push(&code[stmt.range()]);
            }
        }
        let mut source = parts.join("\n\n");
        source.push('\n');
        source
    }
}

/// Decorators, and calls in defaults or annotations, run at definition;
/// a name of a tool or gateway function would be shadowed.
fn check_definition(code: &str, def: &StmtFunctionDef, sdk: Option<&Sdk>) -> Result<(), Refusal> {
    let name = def.name.as_str();
    let at = position(code, def.name.start());
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
    if let Some(decorator) = def.decorator_list.first() {
        return Err(Refusal::SideEffect {
            at: position(code, decorator.start()),
            what: "a decorator",
        });
    }
    let mut calls = Calls::default();
    calls.visit_parameters(&def.parameters);
    if let Some(returns) = &def.returns {
        calls.visit_expr(returns);
    }
    match calls.first {
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
    top: &TopLevel<'_>,
    needed: &Needed,
) -> Result<(), Refusal> {
    let earlier: Vec<String> = helpers.iter().cloned().collect();
    let checked = crate::exec::preflight::check(code, sdk, &earlier);
    for finding in checked.findings {
        let inside = needed
            .defs
            .iter()
            .filter_map(|d| top.defs.get(d))
            .any(|def| {
                let first = position(code, def.start()).line;
                let last = position(code, def.end()).line;
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

/// Names a function reads but does not bind itself, with where first read.
fn free_names(def: &StmtFunctionDef) -> Vec<(String, TextSize)> {
    let mut names = Names::default();
    // Its own name is bound by the def; recursion needs nothing more.
    names.stores.push((def.name.to_string(), def.start()));
    for decorator in &def.decorator_list {
        names.visit_expr(&decorator.expression);
    }
    names.visit_parameters(&def.parameters);
    if let Some(returns) = &def.returns {
        names.visit_expr(returns);
    }
    for stmt in &def.body {
        names.visit_stmt(stmt);
    }
    let bound: BTreeSet<&str> = names.stores.iter().map(|(n, _)| n.as_str()).collect();
    let mut seen = BTreeSet::new();
    names
        .loads
        .iter()
        .filter(|(n, _)| !bound.contains(n.as_str()) && seen.insert(n.clone()))
        .cloned()
        .collect()
}

#[derive(Default)]
struct Names {
    loads: Vec<(String, TextSize)>,
    stores: Vec<(String, TextSize)>,
}

impl<'a> Visitor<'a> for Names {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => self.stores.push((def.name.to_string(), def.start())),
            Stmt::ClassDef(class) => self.stores.push((class.name.to_string(), class.start())),
            Stmt::Import(import) => {
                for alias in &import.names {
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                    let first = bound.split('.').next().unwrap_or_default().to_owned();
                    self.stores.push((first, stmt.start()));
                }
            }
            Stmt::ImportFrom(from) => {
                for alias in &from.names {
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                    self.stores.push((bound.to_string(), stmt.start()));
                }
            }
            Stmt::Global(global) => {
                for name in &global.names {
                    self.stores.push((name.to_string(), stmt.start()));
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Name(name) = expr {
            let entry = (name.id.to_string(), name.start());
            match name.ctx {
                ExprContext::Load => self.loads.push(entry),
                _ => self.stores.push(entry),
            }
        }
        visitor::walk_expr(self, expr);
    }

    fn visit_parameter(&mut self, parameter: &'a Parameter) {
        self.stores
            .push((parameter.name.to_string(), parameter.start()));
        visitor::walk_parameter(self, parameter);
    }

    fn visit_except_handler(&mut self, handler: &'a ruff_python_ast::ExceptHandler) {
        let ruff_python_ast::ExceptHandler::ExceptHandler(h) = handler;
        if let Some(name) = &h.name {
            self.stores.push((name.to_string(), h.start()));
        }
        visitor::walk_except_handler(self, handler);
    }
}

/// The first call in what it visits.
#[derive(Default)]
struct Calls {
    first: Option<TextSize>,
}

impl<'a> Visitor<'a> for Calls {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if matches!(expr, Expr::Call(_) | Expr::Lambda(_) | Expr::Await(_)) {
            self.first.get_or_insert(expr.start());
            return;
        }
        visitor::walk_expr(self, expr);
    }
}

/// `name(params) -> returns` as written; with `typed`, every parameter and
/// the return annotated (`Any` where the source is not) and every default
/// `...`, as a type stub wants.
fn signature(code: &str, def: &StmtFunctionDef, typed: bool) -> String {
    let returns = def.returns.as_ref().map(|r| &code[r.range()]);
    if !typed {
        let params = &code[def.parameters.range()];
        return match returns {
            Some(r) => format!("{}{params} -> {r}", def.name),
            None => format!("{}{params}", def.name),
        };
    }
    let p = &def.parameters;
    let annotated = |param: &Parameter| -> String {
        let ann = param
            .annotation
            .as_ref()
            .map_or("Any", |a| &code[a.range()]);
        format!("{}: {ann}", param.name)
    };
    let mut parts: Vec<String> = Vec::new();
    let with_default = |pd: &ruff_python_ast::ParameterWithDefault| {
        let mut text = annotated(&pd.parameter);
        if pd.default.is_some() {
            text.push_str(" = ...");
        }
        text
    };
    parts.extend(p.posonlyargs.iter().map(with_default));
    if !p.posonlyargs.is_empty() {
        parts.push("/".to_owned());
    }
    parts.extend(p.args.iter().map(with_default));
    match &p.vararg {
        Some(v) => parts.push(format!("*{}", annotated(v))),
        None if !p.kwonlyargs.is_empty() => parts.push("*".to_owned()),
        None => {}
    }
    parts.extend(p.kwonlyargs.iter().map(with_default));
    if let Some(k) = &p.kwarg {
        parts.push(format!("**{}", annotated(k)));
    }
    let prefix = if def.is_async { "async def" } else { "def" };
    format!(
        "{prefix} {}({}) -> {}: ...",
        def.name,
        parts.join(", "),
        returns.unwrap_or("Any")
    )
}

/// The function's docstring, if its body starts with one.
fn docstring(def: &StmtFunctionDef) -> String {
    match def.body.first() {
        Some(Stmt::Expr(expr)) => match expr.value.as_ref() {
            Expr::StringLiteral(s) => s.value.to_str().trim().to_owned(),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

/// 1-based line and column (in characters) of `offset` in `code`.
pub fn position(code: &str, offset: TextSize) -> Position {
    let at = usize::from(offset).min(code.len());
    let before = code.get(..at).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    Position { line, column }
}

#[cfg(test)]
mod tests;
