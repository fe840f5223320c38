//! The walk that finds what depends on lazy iteration: `next()` of a
//! producer, early-stopping consumers over items with effects, infinite
//! sources. What counts as an effect or a producer is the parent's to say.

use std::collections::HashSet;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{CmpOp, Comprehension, Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};

use super::equivalent::Generator;
use super::{FULL_CONSUMERS, Names, PRODUCERS, effectful, has_effect, producer};
use crate::syntax::MAX_NESTING;

pub(super) struct Finder<'n> {
    pub(super) names: &'n Names,
    /// Producers whose consumer was judged already.
    pub(super) handled: HashSet<TextRange>,
    pub(super) found: Option<String>,
    pub(super) depth: usize,
    pub(super) code: &'n str,
    /// Generator expressions given to `next()` that Monty runs as
    /// `next(iter([...]))` (none: every such `next()` is flagged).
    pub(super) rewrites: Option<Vec<Generator>>,
}

impl Finder<'_> {
    fn flag(&mut self, at: TextRange, what: String) {
        if self.found.is_none() {
            let line = self.code[..usize::from(at.start()).min(self.code.len())]
                .matches('\n')
                .count()
                + 1;
            self.found = Some(format!("{what} (line {line})"));
        }
    }

    /// `expr` is consumed in full, before anything else: fine unless its
    /// source never ends (judged where the producer is seen).
    fn consumed_fully(&mut self, expr: &Expr) {
        self.handled.insert(expr.range());
    }

    /// `expr` may be consumed in part, or interleaved with other effects.
    fn consumed_lazily(&mut self, expr: &Expr, how: &str) {
        self.handled.insert(expr.range());
        if let Some(kind) = producer(expr)
            && effectful(self.names, expr)
        {
            self.flag(
                expr.range(),
                format!("{kind} whose items have effects or never end, {how}"),
            );
        }
    }

    fn call(&mut self, call: &ExprCall) {
        let args = &call.arguments.args;
        let callee = match &*call.func {
            Expr::Name(name) => Some(name.id.as_str()),
            Expr::Attribute(attr) => Some(attr.attr.as_str()),
            _ => None,
        };
        let itertools = self.names.itertools_function(&call.func);
        for arg in args
            .iter()
            .chain(call.arguments.keywords.iter().map(|k| &k.value))
        {
            if let Expr::Starred(starred) = arg {
                // `f(*items)` takes every item before the call.
                self.consumed_fully(&starred.value);
            }
        }
        match (callee, itertools) {
            (Some("next"), None) if matches!(&*call.func, Expr::Name(_)) => {
                if let Some(first) = args.first() {
                    self.handled.insert(first.range());
                    if let Expr::Generator(generator) = first
                        && let Some(rewrites) = self.rewrites.as_mut()
                        && !effectful(self.names, first)
                    {
                        rewrites.push(Generator {
                            range: generator.range(),
                            parenthesized: generator.parenthesized,
                        });
                    } else if let Some(kind) = producer(first) {
                        self.flag(
                            call.range(),
                            format!("next() of {kind}, which Monty makes a list, not an iterator"),
                        );
                    } else if let Expr::Call(inner) = first
                        && let Expr::Name(function) = &*inner.func
                        && self.names.returns_producer.contains(function.id.as_str())
                    {
                        self.flag(
                            call.range(),
                            format!(
                                "next() of {}(), which returns what Monty makes a list",
                                function.id
                            ),
                        );
                    } else if let Expr::Name(name) = first
                        && (self.names.producers.contains(name.id.as_str())
                            || self
                                .names
                                .assigned_calls
                                .get(name.id.as_str())
                                .is_some_and(|f| self.names.returns_producer.contains(f)))
                    {
                        self.flag(
                            call.range(),
                            format!("next({}) of an iterator Monty makes a list", name.id),
                        );
                    }
                }
            }
            (Some(name @ ("any" | "all")), None) => {
                for arg in args {
                    self.consumed_lazily(arg, &format!("given to {name}(), which stops early"));
                }
            }
            (Some("zip"), None) if args.len() > 1 => {
                for arg in args {
                    self.consumed_lazily(arg, "zipped with a partner that may be shorter");
                }
            }
            (_, Some(function)) => {
                for arg in args {
                    self.consumed_lazily(
                        arg,
                        &format!("given to itertools.{function}(), which may stop early"),
                    );
                }
            }
            (Some(name), None) if FULL_CONSUMERS.contains(&name) => {
                args.iter().for_each(|arg| self.consumed_fully(arg));
            }
            // A wrapper is a producer itself, judged by its own consumer.
            (Some(name), None)
                if PRODUCERS.contains(&name) && matches!(&*call.func, Expr::Name(_)) =>
            {
                args.iter().for_each(|arg| self.consumed_fully(arg));
            }
            _ => {
                for arg in args {
                    self.consumed_lazily(arg, "given to a function that may not take every item");
                }
            }
        }
    }

    fn comprehension_sources(&mut self, elt_effect: bool, generators: &[Comprehension]) {
        for comp in generators {
            if elt_effect || comp.ifs.iter().any(|c| has_effect(self.names, c)) {
                self.consumed_lazily(
                    &comp.iter,
                    "iterated by a comprehension whose own calls interleave with them",
                );
            } else {
                self.consumed_fully(&comp.iter);
            }
        }
    }
}

impl<'a> Visitor<'a> for Finder<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if self.found.is_some() {
            return;
        }
        match stmt {
            Stmt::For(for_) => self.consumed_lazily(
                &for_.iter,
                "iterated by a for loop whose body runs between its items",
            ),
            Stmt::Assign(assign) => {
                self.consumed_lazily(&assign.value, "kept in a variable");
            }
            Stmt::Return(ret) => {
                if let Some(value) = &ret.value {
                    self.consumed_lazily(value, "returned");
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.found.is_some() || self.depth > MAX_NESTING {
            return;
        }
        match expr {
            Expr::Call(call) => self.call(call),
            Expr::Compare(compare) => {
                for (op, right) in compare.ops.iter().zip(compare.operands.iter().skip(1)) {
                    if matches!(op, CmpOp::In | CmpOp::NotIn) {
                        self.consumed_lazily(right, "searched with `in`, which stops at a match");
                    }
                }
            }
            Expr::ListComp(comp) => {
                let effect = has_effect(self.names, &comp.elt);
                self.comprehension_sources(effect, &comp.generators);
            }
            Expr::SetComp(comp) => {
                let effect = has_effect(self.names, &comp.elt);
                self.comprehension_sources(effect, &comp.generators);
            }
            Expr::DictComp(comp) => {
                let effect = comp
                    .key
                    .as_deref()
                    .is_some_and(|k| has_effect(self.names, k))
                    || has_effect(self.names, &comp.value);
                self.comprehension_sources(effect, &comp.generators);
            }
            Expr::Generator(generator) => {
                let effect = has_effect(self.names, &generator.elt);
                self.comprehension_sources(effect, &generator.generators);
            }
            _ => {}
        }
        if producer(expr).is_some() {
            if !self.handled.contains(&expr.range()) {
                self.consumed_lazily(expr, "used where it may not be consumed at once");
            }
            let sources: Vec<&Expr> = match expr {
                Expr::Generator(g) => g.generators.iter().map(|c| &c.iter).collect(),
                Expr::Call(call) => call.arguments.args.iter().collect(),
                _ => Vec::new(),
            };
            // Monty's own zip() stops at its shortest argument.
            let zipped = matches!(producer(expr), Some("zip()"));
            if !zipped && sources.iter().any(|s| self.names.infinite(s)) {
                self.flag(
                    expr.range(),
                    "an infinite iterator (itertools.count, cycle, repeat) fed to a generator \
                     expression or map/filter/enumerate, which Monty would compute in full"
                        .to_owned(),
                );
            }
        }
        self.depth += 1;
        visitor::walk_expr(self, expr);
        self.depth -= 1;
    }
}
