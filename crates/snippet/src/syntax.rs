//! What a snippet does, read from its syntax tree (`ruff_python_parser`, the
//! parser Monty itself compiles in) rather than from its lines: the modules
//! it imports anywhere, the names it binds at the top level, and the
//! definitions a session can carry to another engine by running them again.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{ExceptHandler, Expr, Stmt};
use ruff_text_size::Ranged;

/// A snippet's imports, top-level bindings and carriable definitions.
#[derive(Debug, Default, Clone)]
pub struct Outline {
    /// The top module of every absolute import, in functions too.
    pub imports: Vec<String>,
    /// Names bound at the top level by assignment, `for` or `with … as`
    /// (also inside top-level `if`/`for`/`while`/`try`/`with` blocks).
    pub assigned: Vec<String>,
    /// Top-level imports and function definitions whose running has no
    /// side effect (no decorators, no call in the signature), as
    /// `(name, source)`; imports have an empty name.
    pub definitions: Vec<(String, String)>,
    /// Code whose answer Monty gives differently without failing (see
    /// [`silent_difference`]): the router sends it to CPython first.
    pub differs_on_monty: Option<String>,
    /// Code whose meaning depends on lazy iteration, which Monty does not
    /// have (see [`crate::laziness`]): it must never run on Monty.
    pub needs_laziness: Option<String>,
    /// The code as Monty runs it to CPython's answer, when that differs
    /// from the code as written (see [`crate::laziness::Laziness`]).
    pub eager_equivalent: Option<String>,
}

/// The outline of `code` parsed as `body` (see `crate::facts::Facts`, which
/// reads it once per run).
pub fn outline_of(body: &[Stmt], code: &str) -> Outline {
    let mut imports = Imports::default();
    imports.visit_body(body);
    let mut silent = SilentDifferences::default();
    silent.visit_body(body);
    let mut outline = Outline {
        imports: imports.modules,
        differs_on_monty: silent.found,
        ..Outline::default()
    };
    let laziness = crate::laziness::laziness(body, code);
    outline.needs_laziness = laziness.needed;
    outline.eager_equivalent = laziness.eager_equivalent;
    top_level(body, code, &mut outline);
    outline
}

/// Monty refuses code nested deeper than CPython's ~200 levels before it
/// runs; such code needs no outline, and parsing it would only grow the
/// thread's stack (and the gateway's memory) for nothing.
pub(crate) const MAX_NESTING: usize = 200;

/// A cheap over-estimate from the text: bracket depth and indentation width
/// (brackets inside strings count too, which can only skip an outline).
pub(crate) fn nests_deeper_than(code: &str, limit: usize) -> bool {
    let mut depth = 0usize;
    for line in code.lines() {
        let indent = line.len() - line.trim_start().len();
        if indent > limit {
            return true;
        }
        for byte in line.bytes() {
            match byte {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            if depth > limit {
                return true;
            }
        }
    }
    false
}

#[derive(Default)]
struct Imports {
    modules: Vec<String>,
}

impl<'a> Visitor<'a> for Imports {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Import(import) => {
                for alias in &import.names {
                    self.add(alias.name.as_str());
                }
            }
            Stmt::ImportFrom(from) if from.level == 0 => {
                if let Some(module) = &from.module {
                    self.add(module.as_str());
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    // Imports are statements: no need to go down expressions, however deep.
    fn visit_expr(&mut self, _expr: &'a Expr) {}
}

impl Imports {
    fn add(&mut self, dotted: &str) {
        let top = dotted.split('.').next().unwrap_or_default().to_owned();
        if !top.is_empty() && !self.modules.contains(&top) {
            self.modules.push(top);
        }
    }
}

/// Constructs Monty runs to a different answer than CPython, seen in the
/// source: a generator expression kept in a variable (Monty's can be
/// iterated again), `id()` (distinct objects can share one),
/// `sys.platform` (`"monty"`) and `__file__` (`"/main.py"`; CPython's
/// worker runs code that is in no file).
#[derive(Default)]
struct SilentDifferences {
    found: Option<String>,
}

impl<'a> Visitor<'a> for SilentDifferences {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if self.found.is_some() {
            return;
        }
        if let Stmt::Assign(assign) = stmt
            && matches!(*assign.value, Expr::Generator(_))
        {
            self.found = Some("a generator expression kept in a variable".into());
            return;
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.found.is_some() {
            return;
        }
        match expr {
            Expr::Call(call) if matches!(&*call.func, Expr::Name(n) if n.id.as_str() == "id") => {
                self.found = Some("id()".into());
            }
            Expr::Name(name) if name.id.as_str() == "__file__" => {
                self.found = Some("__file__".into());
            }
            Expr::Attribute(attr)
                if attr.attr.as_str() == "platform"
                    && matches!(&*attr.value, Expr::Name(n) if n.id.as_str() == "sys") =>
            {
                self.found = Some("sys.platform".into());
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}

/// Walks module-level statements, into blocks but not into functions or classes.
fn top_level(body: &[Stmt], code: &str, out: &mut Outline) {
    for stmt in body {
        match stmt {
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    bound(target, &mut out.assigned);
                }
            }
            Stmt::AnnAssign(assign) if assign.value.is_some() => {
                bound(&assign.target, &mut out.assigned);
            }
            Stmt::AugAssign(assign) => bound(&assign.target, &mut out.assigned),
            Stmt::For(for_) => {
                bound(&for_.target, &mut out.assigned);
                top_level(&for_.body, code, out);
                top_level(&for_.orelse, code, out);
            }
            Stmt::While(while_) => {
                top_level(&while_.body, code, out);
                top_level(&while_.orelse, code, out);
            }
            Stmt::If(if_) => {
                top_level(&if_.body, code, out);
                for clause in &if_.elif_else_clauses {
                    top_level(&clause.body, code, out);
                }
            }
            Stmt::With(with) => {
                for item in &with.items {
                    if let Some(vars) = &item.optional_vars {
                        bound(vars, &mut out.assigned);
                    }
                }
                top_level(&with.body, code, out);
            }
            Stmt::Try(try_) => {
                top_level(&try_.body, code, out);
                for ExceptHandler::ExceptHandler(handler) in &try_.handlers {
                    top_level(&handler.body, code, out);
                }
                top_level(&try_.orelse, code, out);
                top_level(&try_.finalbody, code, out);
            }
            Stmt::Import(_) | Stmt::ImportFrom(_) => {
                out.definitions
                    .push((String::new(), code[stmt.range()].to_owned()));
            }
            Stmt::FunctionDef(def) if def.decorator_list.is_empty() && !signature_calls(def) => {
                out.definitions
                    .push((def.name.to_string(), code[stmt.range()].to_owned()));
            }
            _ => {}
        }
    }
}

/// The names an assignment target binds: `x`, `a, b`, `[a, *rest]`.
fn bound(target: &Expr, names: &mut Vec<String>) {
    match target {
        Expr::Name(name) => {
            let name = name.id.to_string();
            if !names.contains(&name) {
                names.push(name);
            }
        }
        Expr::Tuple(tuple) => tuple.elts.iter().for_each(|e| bound(e, names)),
        Expr::List(list) => list.elts.iter().for_each(|e| bound(e, names)),
        Expr::Starred(starred) => bound(&starred.value, names),
        _ => {}
    }
}

/// Whether running the `def` would evaluate a call (in a default value or
/// an annotation), which could have a side effect.
fn signature_calls(def: &ruff_python_ast::StmtFunctionDef) -> bool {
    let mut calls = Calls::default();
    calls.visit_parameters(&def.parameters);
    if let Some(returns) = &def.returns {
        calls.visit_expr(returns);
    }
    calls.found
}

#[derive(Default)]
struct Calls {
    found: bool,
    depth: usize,
}

impl<'a> Visitor<'a> for Calls {
    fn visit_expr(&mut self, expr: &'a Expr) {
        // Too deep to look through (a long operator chain): assume a call.
        if self.found || self.depth > MAX_NESTING {
            self.found = true;
            return;
        }
        if matches!(expr, Expr::Call(_) | Expr::Await(_) | Expr::Named(_)) {
            self.found = true;
        }
        self.depth += 1;
        visitor::walk_expr(self, expr);
        self.depth -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outline(code: &str) -> Outline {
        crate::facts::Facts::of(code).outline
    }

    #[test]
    fn silent_differences_are_seen_in_the_source() {
        for code in [
            "g = (x for x in range(3))\nlist(g)",
            "def f():\n    return id([])\nf()",
            "import sys\nprint(sys.platform)",
            "from pathlib import Path\nprint(Path(__file__).name)",
        ] {
            assert!(outline(code).differs_on_monty.is_some(), "{code}");
        }
        for code in [
            "sum(x for x in range(3))",
            "ident = 1\nident",
            "platform = 'x'",
        ] {
            assert_eq!(outline(code).differs_on_monty, None, "{code}");
        }
    }

    #[test]
    fn imports_are_found_in_every_form() {
        let code = "import json, statistics\nfrom collections import (OrderedDict,\n    defaultdict)\n\
                    def f():\n    import enum.auto as e\n    return e\nfrom . import local\n\
                    s = '''\nimport fake\n'''";
        assert_eq!(
            outline(code).imports,
            ["json", "statistics", "collections", "enum"]
        );
    }

    #[test]
    fn top_level_bindings_are_found_in_every_form() {
        let code = "x = y = 1\na, (b, *c) = 1, (2, 3)\nn: int = 4\nm: int\ntotal += 5\n\
                    for k, v in {}.items():\n    inner = k\nwith open('f') as fh:\n    pass\n\
                    if x == 1:\n    z = 6\ntry:\n    t = 1\nexcept Exception:\n    u = 2\n\
                    def f():\n    hidden = 1\nprint(x == 2)\ns = '''\nfake = 1\n'''";
        assert_eq!(
            outline(code).assigned,
            [
                "x", "y", "a", "b", "c", "n", "total", "k", "v", "inner", "fh", "z", "t", "u", "s"
            ]
        );
    }

    #[test]
    fn only_definitions_without_side_effects_are_carried() {
        let code = "import json\ndef double(x, k=2):\n    return x * k\n\
                    @cache\ndef decorated():\n    pass\ndef loud(x=print('hi')):\n    pass\n\
                    class C:\n    pass\nfrom math import pi";
        let names: Vec<String> = outline(code)
            .definitions
            .into_iter()
            .map(|(name, source)| format!("{name}|{source}"))
            .collect();
        assert_eq!(
            names,
            [
                "|import json",
                "double|def double(x, k=2):\n    return x * k",
                "|from math import pi"
            ]
        );
    }

    #[tokio::test]
    async fn code_nested_as_deep_as_the_source_allows_does_not_overflow_the_stack() {
        // Deeper than Monty runs: no outline (Monty refuses it before running).
        let lists = format!("x = {}{}", "[".repeat(5000), "]".repeat(5000));
        assert!(outline(&lists).assigned.is_empty());
        let shallow = format!("x = {}{}", "[".repeat(150), "]".repeat(150));
        assert_eq!(outline(&shallow).assigned, ["x"]);
        let chain = format!("y = 1{}", "+1".repeat(200_000));
        assert_eq!(
            crate::facts::Facts::of_safely(&chain)
                .await
                .outline
                .assigned,
            ["y"]
        );
        let blocks: String = (0..300)
            .map(|i| format!("{}if True:\n", " ".repeat(i)))
            .collect();
        let _ = crate::facts::Facts::of_safely(&format!("{blocks}{}z = 1", " ".repeat(300))).await;
    }

    #[test]
    fn code_that_does_not_parse_has_an_empty_outline() {
        let outline = outline("def (:\n  import statistics");
        assert!(outline.imports.is_empty() && outline.assigned.is_empty());
    }
}
