//! One walk over a snippet's syntax tree: the names it binds anywhere, and
//! the direct calls of bare names the checker may judge.

use std::collections::HashSet;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{
    Arguments, ExceptHandler, Expr, ExprContext, Parameter, Pattern, Stmt, TypeParam,
};
use ruff_text_size::{Ranged, TextSize};

/// Deeper than this (statements and expressions together), the walk gives
/// up and the snippet is left to run time: an operator chain the text-based
/// nesting estimate cannot see may be thousands of levels deep.
const MAX_DEPTH: usize = 1_000;

/// Names whose use can bind other names out of sight of the syntax tree.
const DYNAMIC: &[&str] = &[
    "globals",
    "locals",
    "vars",
    "exec",
    "eval",
    "setattr",
    "__import__",
    "__builtins__",
];

/// A call `name(...)` outside any block that could catch its error.
pub struct Call<'a> {
    pub name: &'a str,
    pub at: TextSize,
    pub arguments: &'a Arguments,
}

#[derive(Default)]
pub struct Scan<'a> {
    /// Every name bound anywhere: assignments, definitions, parameters,
    /// imports, `except … as`, patterns, `global`, in any scope.
    pub bound: HashSet<&'a str>,
    pub calls: Vec<Call<'a>>,
    /// The snippet can bind names the tree does not show (`from m import *`,
    /// `globals()[…] = …`): no name can be said to be unknown.
    pub dynamic: bool,
    /// The tree was too deep to walk whole: nothing may be judged.
    pub too_deep: bool,
    depth: usize,
    /// Inside a `try` body with handlers or a `with` body: a failing call
    /// there may be caught, so reporting it could be a false positive.
    guarded: usize,
}

impl<'a> Scan<'a> {
    pub fn of(body: &'a [Stmt]) -> Self {
        let mut scan = Scan::default();
        scan.visit_body(body);
        scan
    }

    fn bind(&mut self, name: &'a str) {
        self.bound.insert(name);
    }

    /// Walks `body` as code whose errors may be caught.
    fn visit_guarded(&mut self, body: &'a [Stmt]) {
        self.guarded += 1;
        self.visit_body(body);
        self.guarded -= 1;
    }

    fn enter(&mut self) -> bool {
        if self.too_deep || self.depth >= MAX_DEPTH {
            self.too_deep = true;
            return false;
        }
        self.depth += 1;
        true
    }

    fn visit_statement(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Try(try_) if !try_.handlers.is_empty() => {
                self.visit_guarded(&try_.body);
                try_.handlers
                    .iter()
                    .for_each(|h| self.visit_except_handler(h));
                self.visit_body(&try_.orelse);
                self.visit_body(&try_.finalbody);
                return;
            }
            Stmt::With(with) => {
                with.items.iter().for_each(|i| self.visit_with_item(i));
                self.visit_guarded(&with.body);
                return;
            }
            Stmt::FunctionDef(def) => self.bind(def.name.as_str()),
            Stmt::ClassDef(class) => self.bind(class.name.as_str()),
            Stmt::Import(import) => {
                for alias in &import.names {
                    let name = alias.asname.as_ref().unwrap_or(&alias.name).as_str();
                    self.bind(name.split('.').next().unwrap_or(name));
                }
            }
            Stmt::ImportFrom(from) => {
                for alias in &from.names {
                    match (&alias.asname, alias.name.as_str()) {
                        (None, "*") => self.dynamic = true,
                        (Some(asname), _) => self.bind(asname.as_str()),
                        (None, name) => self.bind(name),
                    }
                }
            }
            Stmt::Global(global) => global.names.iter().for_each(|n| self.bind(n.as_str())),
            Stmt::Nonlocal(nonlocal) => nonlocal.names.iter().for_each(|n| self.bind(n.as_str())),
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expression(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(name) if name.ctx == ExprContext::Store => self.bind(name.id.as_str()),
            Expr::Name(name) if DYNAMIC.contains(&name.id.as_str()) => self.dynamic = true,
            Expr::Call(call) if self.guarded == 0 => {
                if let Expr::Name(name) = call.func.as_ref() {
                    self.calls.push(Call {
                        name: name.id.as_str(),
                        at: expr.range().start(),
                        arguments: &call.arguments,
                    });
                }
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}

impl<'a> Visitor<'a> for Scan<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if self.enter() {
            self.visit_statement(stmt);
            self.depth -= 1;
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.enter() {
            self.visit_expression(expr);
            self.depth -= 1;
        }
    }

    fn visit_parameter(&mut self, parameter: &'a Parameter) {
        self.bind(parameter.name.as_str());
        visitor::walk_parameter(self, parameter);
    }

    fn visit_except_handler(&mut self, handler: &'a ExceptHandler) {
        let ExceptHandler::ExceptHandler(inner) = handler;
        if let Some(name) = &inner.name {
            self.bind(name.as_str());
        }
        visitor::walk_except_handler(self, handler);
    }

    fn visit_pattern(&mut self, pattern: &'a Pattern) {
        let captured = match pattern {
            Pattern::MatchAs(p) => p.name.as_ref(),
            Pattern::MatchStar(p) => p.name.as_ref(),
            Pattern::MatchMapping(p) => p.rest.as_ref(),
            _ => None,
        };
        if let Some(name) = captured {
            self.bind(name.as_str());
        }
        visitor::walk_pattern(self, pattern);
    }

    fn visit_type_param(&mut self, type_param: &'a TypeParam) {
        let name = match type_param {
            TypeParam::TypeVar(t) => &t.name,
            TypeParam::ParamSpec(t) => &t.name,
            TypeParam::TypeVarTuple(t) => &t.name,
        };
        self.bind(name.as_str());
        visitor::walk_type_param(self, type_param);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanned(code: &str, check: impl FnOnce(&Scan<'_>)) {
        let parsed = ruff_python_parser::parse_module(code).expect("parses");
        check(&Scan::of(&parsed.syntax().body));
    }

    #[test]
    fn every_kind_of_binding_is_found() {
        let code = "a = 1\nb, [c, *d] = e = f()\ng += 1\nh: int\nfor i in []: pass\n\
                    with x() as j: pass\nimport k.sub, l as m\nfrom n import o, p as q\n\
                    def r(s, /, t=1, *u, v, **w): pass\nclass X: pass\nlambda y: y\n\
                    [z for z in ()]\n(aa := 1)\ntry: pass\nexcept E as bb: pass\n\
                    match 1:\n    case [cc, *dd] | {'k': _, **ee} | ff: pass\n\
                    def gg():\n    global hh\n    nonlocal ii\ntype jj[kk] = int";
        scanned(code, |scan| {
            for name in [
                "a", "b", "c", "d", "e", "g", "h", "i", "j", "k", "m", "o", "q", "r", "s", "t",
                "u", "v", "w", "X", "y", "z", "aa", "bb", "cc", "dd", "ee", "ff", "gg", "hh", "ii",
                "jj", "kk",
            ] {
                assert!(scan.bound.contains(name), "{name} is not bound");
            }
            assert!(!scan.bound.contains("f") && !scan.bound.contains("l"));
            assert!(!scan.dynamic);
        });
    }

    #[test]
    fn calls_that_an_except_or_a_with_could_catch_are_not_judged() {
        let code = "f(1)\ntry:\n    g(1)\nexcept Exception:\n    h(1)\n\
                    with cm() as c:\n    i(1)\ntry:\n    j(1)\nfinally:\n    k(1)\nobj.m(1)";
        scanned(code, |scan| {
            let names: Vec<&str> = scan.calls.iter().map(|c| c.name).collect();
            assert_eq!(names, ["f", "h", "cm", "j", "k"]);
        });
    }

    #[test]
    fn star_imports_and_globals_make_names_unknowable() {
        scanned("from m import *", |scan| assert!(scan.dynamic));
        scanned("globals()['x'] = 1", |scan| assert!(scan.dynamic));
        scanned("g = vars", |scan| assert!(scan.dynamic));
    }

    #[test]
    fn a_chain_deeper_than_the_walk_goes_is_given_up() {
        let code = format!("x = 1{}", "+1".repeat(MAX_DEPTH + 10));
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(move || scanned(&code, |scan| assert!(scan.too_deep)))
            .expect("thread")
            .join()
            .expect("no panic");
    }
}
