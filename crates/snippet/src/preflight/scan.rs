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

/// A call `name(...)`, and what the blocks around it catch.
pub struct Call<'a> {
    pub name: &'a str,
    pub at: TextSize,
    pub arguments: &'a Arguments,
    pub caught: Caught<'a>,
}

/// What the `try` handlers (and `with` blocks) around a call catch, as far
/// as the source tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caught<'a> {
    /// Any exception may be caught: a bare `except`, `except Exception`, a
    /// handler whose class the source does not name, a `with` block (its
    /// context manager may suppress what is raised).
    Anything,
    /// The exception classes the handlers name (none: nothing is caught).
    Classes(Vec<&'a str>),
}

/// The builtin exceptions the pre-flight's problems raise at run time, with
/// the classes that catch them.
const CATCHERS: &[(&str, &[&str])] = &[
    ("TypeError", &["TypeError", "Exception", "BaseException"]),
    ("NameError", &["NameError", "Exception", "BaseException"]),
];

impl Caught<'_> {
    /// Whether an exception of the builtin class `exc_type` raised by the
    /// call would be caught; `bound`: the names the snippet binds (a
    /// handler naming one of those could name any class).
    pub fn catches(&self, exc_type: &str, bound: &HashSet<&str>) -> bool {
        match self {
            Caught::Anything => true,
            Caught::Classes(classes) => classes.iter().any(|class| {
                if bound.contains(class) || !is_builtin_exception(class) {
                    return true;
                }
                CATCHERS
                    .iter()
                    .find(|(raised, _)| *raised == exc_type)
                    .is_none_or(|(_, catchers)| catchers.contains(class))
            }),
        }
    }
}

/// An exception class every run knows by this name: CPython's builtins and
/// the gateway's `ToolError` (a `RuntimeError`).
fn is_builtin_exception(name: &str) -> bool {
    name == "ToolError"
        || (crate::cpython_tables::BUILTINS.binary_search(&name).is_ok()
            && (name.ends_with("Error")
                || name.ends_with("Exception")
                || name.ends_with("Warning")
                || matches!(
                    name,
                    "KeyboardInterrupt"
                        | "SystemExit"
                        | "GeneratorExit"
                        | "StopIteration"
                        | "StopAsyncIteration"
                )))
}

/// What one `try`'s handlers catch.
fn handlers_catch<'a>(handlers: &'a [ExceptHandler]) -> Caught<'a> {
    let mut classes = Vec::new();
    for ExceptHandler::ExceptHandler(handler) in handlers {
        let Some(kind) = &handler.type_ else {
            return Caught::Anything;
        };
        let named: Vec<&Expr> = match kind.as_ref() {
            Expr::Tuple(tuple) => tuple.elts.iter().collect(),
            one => vec![one],
        };
        for class in named {
            match class {
                Expr::Name(name) => classes.push(name.id.as_str()),
                // `mod.Error`, a computed class: it could be anything.
                _ => return Caught::Anything,
            }
        }
    }
    Caught::Classes(classes)
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
    /// What the `try` bodies with handlers and `with` bodies around the
    /// code being walked catch, innermost last; a function's body starts
    /// afresh (it runs when called, where those handlers may be gone).
    guards: Vec<Caught<'a>>,
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

    /// Walks `body` as code whose errors `guard` catches.
    fn visit_guarded(&mut self, body: &'a [Stmt], guard: Caught<'a>) {
        self.guards.push(guard);
        self.visit_body(body);
        self.guards.pop();
    }

    /// Walks a function's body (or a lambda's): the handlers around its
    /// definition do not guard its calls.
    fn visit_apart(&mut self, walk: impl FnOnce(&mut Self)) {
        let outer = std::mem::take(&mut self.guards);
        walk(self);
        self.guards = outer;
    }

    /// What the handlers around the current point catch, together.
    fn caught(&self) -> Caught<'a> {
        let mut classes = Vec::new();
        for guard in &self.guards {
            match guard {
                Caught::Anything => return Caught::Anything,
                Caught::Classes(named) => classes.extend(named.iter().copied()),
            }
        }
        Caught::Classes(classes)
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
                self.visit_guarded(&try_.body, handlers_catch(&try_.handlers));
                try_.handlers
                    .iter()
                    .for_each(|h| self.visit_except_handler(h));
                self.visit_body(&try_.orelse);
                self.visit_body(&try_.finalbody);
                return;
            }
            Stmt::With(with) => {
                with.items.iter().for_each(|i| self.visit_with_item(i));
                self.visit_guarded(&with.body, Caught::Anything);
                return;
            }
            Stmt::FunctionDef(def) => {
                self.bind(def.name.as_str());
                // Decorators, defaults and annotations run here; the body later.
                for decorator in &def.decorator_list {
                    self.visit_decorator(decorator);
                }
                if let Some(type_params) = &def.type_params {
                    self.visit_type_params(type_params);
                }
                self.visit_parameters(&def.parameters);
                if let Some(returns) = &def.returns {
                    self.visit_annotation(returns);
                }
                self.visit_apart(|scan| scan.visit_body(&def.body));
                return;
            }
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
            Expr::Call(call) => {
                if let Expr::Name(name) = call.func.as_ref() {
                    self.calls.push(Call {
                        name: name.id.as_str(),
                        at: expr.range().start(),
                        arguments: &call.arguments,
                        caught: self.caught(),
                    });
                }
            }
            Expr::Lambda(lambda) => {
                if let Some(parameters) = &lambda.parameters {
                    self.visit_parameters(parameters);
                }
                self.visit_apart(|scan| scan.visit_expr(&lambda.body));
                return;
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
    fn each_call_knows_what_the_handlers_around_it_catch() {
        let code = "f(1)\ntry:\n    g(1)\nexcept Exception:\n    h(1)\n\
                    with cm() as c:\n    i(1)\ntry:\n    j(1)\nfinally:\n    k(1)\nobj.m(1)\n\
                    try:\n    try:\n        l(1)\n    except KeyError:\n        pass\n\
                    except (ValueError, ToolError):\n    pass\n\
                    try:\n    def later():\n        m(1)\n    n(lambda: o(1))\nexcept:\n    pass";
        scanned(code, |scan| {
            let seen: Vec<(&str, Caught<'_>)> = scan
                .calls
                .iter()
                .map(|c| (c.name, c.caught.clone()))
                .collect();
            let none = Caught::Classes(Vec::new());
            assert_eq!(
                seen,
                [
                    ("f", none.clone()),
                    ("g", Caught::Classes(vec!["Exception"])),
                    ("h", none.clone()),
                    ("cm", none.clone()),
                    ("i", Caught::Anything),
                    ("j", none.clone()),
                    ("k", none.clone()),
                    (
                        "l",
                        Caught::Classes(vec!["ValueError", "ToolError", "KeyError"])
                    ),
                    ("m", none.clone()),
                    ("n", Caught::Anything),
                    ("o", none),
                ]
            );
        });
    }

    #[test]
    fn a_handler_catches_the_class_raised_and_its_bases_only() {
        let bound = HashSet::new();
        let named = |classes: &[&'static str]| Caught::Classes(classes.to_vec());
        for catcher in ["TypeError", "Exception", "BaseException"] {
            assert!(named(&["KeyError", catcher]).catches("TypeError", &bound));
        }
        for other in [
            "ValueError",
            "ToolError",
            "RuntimeError",
            "KeyError",
            "NameError",
        ] {
            assert!(!named(&[other]).catches("TypeError", &bound), "{other}");
        }
        assert!(named(&["NameError"]).catches("NameError", &bound));
        assert!(!named(&["TypeError"]).catches("NameError", &bound));
        // A class the snippet names itself could be any class.
        assert!(named(&["MyError"]).catches("TypeError", &bound));
        let aliased: HashSet<&str> = ["ValueError"].into_iter().collect();
        assert!(named(&["ValueError"]).catches("TypeError", &aliased));
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
