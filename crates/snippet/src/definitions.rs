//! A snippet's top level as `save_helper(fn)` needs it: each function with
//! the names it reads but does not bind, what it runs when defined, its
//! signature and docstring; each import by the names it binds; and what the
//! other statements bind. Read from the run's one parse (see
//! [`crate::facts::Facts::definitions`]) so keeping a helper parses nothing.
//! Offsets are UTF-8 bytes into the snippet.

use std::collections::{BTreeSet, HashMap};

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprContext, Parameter, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};

/// One top-level function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Def {
    /// Its statement's index in the snippet's top level.
    pub index: usize,
    /// Its statement's byte range.
    pub range: (u32, u32),
    /// Where its name is written.
    pub name_at: u32,
    /// Its first decorator, which runs when it is defined.
    pub decorator_at: Option<u32>,
    /// The first call (or lambda, or await) in its signature, which runs
    /// when it is defined.
    pub signature_call_at: Option<u32>,
    /// Names it reads but does not bind, each with where it is first read.
    pub free: Vec<(String, u32)>,
    /// `name(a: int, b: str = ...) -> str`, as written.
    pub signature: String,
    /// The same, every parameter and the return typed (`Any` where the
    /// source has none), as a type stub line.
    pub stub: String,
    /// Its docstring, trimmed.
    pub doc: String,
}

/// The top level of a snippet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Definitions {
    /// Every top-level statement's byte range, in order.
    pub statements: Vec<(u32, u32)>,
    /// Functions by name (a later `def` of the name wins).
    pub defs: HashMap<String, Def>,
    /// A name bound by an import → the index of that import statement.
    pub imports: HashMap<String, usize>,
    /// A name bound by another statement → where that statement starts.
    pub others: HashMap<String, u32>,
}

/// Where a snippet that does not parse goes wrong, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unparsed {
    pub at: u32,
    pub message: String,
}

impl Definitions {
    /// Reads `code` on its own (a file of the operator's, not a run).
    /// Recurses as deep as the code nests: callers read trusted files or
    /// run it on a big stack.
    ///
    /// # Errors
    /// `code` does not parse.
    pub fn read(code: &str) -> Result<Self, Unparsed> {
        let parsed = crate::facts::parse(code).map_err(|e| Unparsed {
            at: e.location.start().to_u32(),
            message: e.error.to_string(),
        })?;
        Ok(Self::of_body(&parsed.syntax().body, code))
    }

    /// The top level of `code` parsed as `body`.
    pub fn of_body(body: &[Stmt], code: &str) -> Self {
        let mut top = Definitions::default();
        for (index, stmt) in body.iter().enumerate() {
            top.statements
                .push((stmt.start().to_u32(), stmt.end().to_u32()));
            match stmt {
                Stmt::FunctionDef(def) => {
                    top.others.remove(def.name.as_str());
                    top.defs
                        .insert(def.name.to_string(), def_of(index, def, code));
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
                    top.others
                        .insert(class.name.to_string(), stmt.start().to_u32());
                }
                other => {
                    let mut stores = Names::default();
                    stores.visit_stmt(other);
                    for (name, _) in stores.stores {
                        if !top.defs.contains_key(&name) {
                            top.others.entry(name).or_insert(other.start().to_u32());
                        }
                    }
                }
            }
        }
        top
    }
}

fn def_of(index: usize, def: &StmtFunctionDef, code: &str) -> Def {
    let mut calls = Calls::default();
    calls.visit_parameters(&def.parameters);
    if let Some(returns) = &def.returns {
        calls.visit_expr(returns);
    }
    Def {
        index,
        range: (def.start().to_u32(), def.end().to_u32()),
        name_at: def.name.start().to_u32(),
        decorator_at: def.decorator_list.first().map(|d| d.start().to_u32()),
        signature_call_at: calls.first.map(|at| at.to_u32()),
        free: free_names(def),
        signature: signature(code, def, false),
        stub: signature(code, def, true),
        doc: docstring(def),
    }
}

/// Names a function reads but does not bind, with where first read.
fn free_names(def: &StmtFunctionDef) -> Vec<(String, u32)> {
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
        .map(|(n, at)| (n.clone(), at.to_u32()))
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
