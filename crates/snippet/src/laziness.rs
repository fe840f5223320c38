//! Code whose meaning depends on lazy iteration. Monty evaluates generator
//! expressions, `map()`, `filter()`, `zip()`, `enumerate()` and `reversed()`
//! eagerly, into lists; CPython makes iterators that compute one item at a
//! time. Monty gives the same answer when every item is computed anyway
//! (`sum(f(x) for x in xs)`), but not when
//! - an iterator is asked for: `next(x for x in xs if p(x))`, `next(map(…))`
//!   fail on Monty (`'list' object is not an iterator`);
//! - a consumer stops early (`any`, `all`, `in`, `zip` with a shorter
//!   partner, `itertools.islice`/`takewhile`, a `for` loop that breaks) and
//!   computing an item has an effect: a call that is not a known-pure
//!   builtin (a tool, `print`, the agent's own function that does either);
//! - the items' effects interleave with the consumer's (a `for` loop's body,
//!   a comprehension that calls something, the iterator kept in a variable
//!   or returned);
//! - the source never ends (`itertools.count()`, `cycle()`, `repeat(x)`).
//!
//! Such code must not run on Monty: the router sends it to CPython, or
//! refuses it before it runs when there is no fallback.

use std::collections::{HashMap, HashSet};

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, Stmt};

use crate::syntax::MAX_NESTING;

/// Builtins whose call has no effect beyond its value (and, at worst, an
/// exception): computing them early or late gives the same answer.
#[rustfmt::skip]
const PURE_BUILTINS: &[&str] = &[
    "abs", "all", "any", "ascii", "bin", "bool", "bytes", "callable", "chr", "complex", "dict",
    "divmod", "enumerate", "filter", "float", "format", "frozenset", "getattr", "hasattr", "hash",
    "hex", "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "oct",
    "ord", "pow", "range", "repr", "reversed", "round", "set", "slice", "sorted", "str", "sum",
    "tuple", "type", "zip",
];

/// Methods of builtin values (and functions of the standard modules below)
/// that only read: `s.lower()`, `d.get(k)`, `re.match(p, s)`.
#[rustfmt::skip]
const PURE_METHODS: &[&str] = &[
    "as_integer_ratio", "as_posix", "bit_length", "capitalize", "casefold", "center", "conjugate",
    "copy", "count", "date", "decode", "encode", "end", "endswith", "exists", "find", "findall",
    "format", "fromisoformat", "fullmatch", "get", "group", "groupdict", "groups", "hex", "index",
    "is_absolute", "is_dir", "is_file", "is_integer", "isalnum", "isalpha", "isascii", "isdecimal",
    "isdigit", "isidentifier", "islower", "isnumeric", "isoformat", "isspace", "istitle", "isupper",
    "items", "join", "joinpath", "keys", "ljust", "lower", "lstrip", "match", "partition",
    "relative_to", "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust",
    "rpartition", "rsplit", "rstrip", "search", "span", "split", "splitlines", "start",
    "startswith", "strftime", "strip", "swapcase", "time", "timestamp", "title", "total_seconds",
    "upper", "values", "weekday", "with_name", "with_suffix", "zfill",
];

/// Standard modules whose functions only compute (`random` is not one: its
/// draws depend on how many came before).
#[rustfmt::skip]
const PURE_MODULES: &[&str] = &[
    "base64", "bisect", "datetime", "decimal", "fractions", "functools", "hashlib", "json", "math",
    "operator", "re", "statistics", "string", "textwrap", "unicodedata",
];

/// Consumers that take every item before anything else happens.
#[rustfmt::skip]
const FULL_CONSUMERS: &[&str] = &[
    "Counter", "OrderedDict", "defaultdict", "deque", "dict", "difference", "extend", "fromkeys",
    "frozenset", "fsum", "intersection", "join", "list", "max", "mean", "median", "min", "print",
    "prod", "set", "sorted", "sum", "symmetric_difference", "tuple", "union", "update", "writerows",
];

/// Producers Monty makes eagerly, by the builtin's name.
const PRODUCERS: &[&str] = &["map", "filter", "zip", "enumerate", "reversed"];

/// What lazy iteration means for a snippet.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Laziness {
    /// What depends on it, as a phrase with its line: must not run on Monty.
    pub needed: Option<String>,
    /// The snippet with each `next()` of a generator expression whose items
    /// call nothing with an effect written as `next(iter([...]))`, which
    /// Monty runs to the same answer; `None` when there is none (or
    /// laziness is needed anyway).
    pub eager_equivalent: Option<String>,
}

/// What in `body` (parsed from `code`) depends on lazy iteration.
pub fn laziness(body: &[Stmt], code: &str) -> Laziness {
    let mut names = Names::default();
    names.visit_body(body);
    names.settle_pure_functions(body);
    let mut finder = Finder {
        names: &names,
        handled: HashSet::new(),
        found: None,
        depth: 0,
        code,
        // Call sites in async code are found by their offsets, which a
        // rewrite would move.
        rewrites: (!crate::call_sites::may_use_async(code)).then(Vec::new),
    };
    finder.visit_body(body);
    let rewrites = finder.rewrites.take().unwrap_or_default();
    if finder.found.is_some() || rewrites.is_empty() {
        return Laziness {
            needed: finder.found,
            eager_equivalent: None,
        };
    }
    match equivalent::rewritten(code, rewrites) {
        Some(eager) => Laziness {
            needed: None,
            eager_equivalent: Some(eager),
        },
        None => Laziness {
            needed: Some(
                "next() of generator expressions nested in each other, which Monty makes lists"
                    .into(),
            ),
            eager_equivalent: None,
        },
    }
}

/// What in `body` depends on lazy iteration, as a phrase with its line
/// (`None` when nothing does or Monty runs an equivalent).
pub fn needs_laziness(body: &[Stmt], code: &str) -> Option<String> {
    laziness(body, code).needed
}

/// What the snippet binds that the judgement needs.
#[derive(Default)]
struct Names {
    /// Names of the `itertools` module (`import itertools as it`).
    itertools: HashSet<String>,
    /// Names imported from `itertools`, by local name: the original.
    from_itertools: HashMap<String, String>,
    /// Names of the pure modules as imported.
    pure_modules: HashSet<String>,
    /// Names an assignment gives a producer (`it = map(f, xs)`).
    producers: HashSet<String>,
    /// The snippet's functions whose bodies call only pure things.
    pure_functions: HashSet<String>,
    /// Every function and method name the snippet defines: `obj.get(k)`
    /// is the snippet's own `get` when it defines one.
    defined: HashSet<String>,
    /// The snippet's functions that return a producer (`return (x for …)`).
    returns_producer: HashSet<String>,
    /// Names an assignment gives the value of a call of a plain name
    /// (`g = evens(xs)`), by the function called.
    assigned_calls: HashMap<String, String>,
}

impl<'a> Visitor<'a> for Names {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Import(import) => {
                for alias in &import.names {
                    let module = alias.name.as_str();
                    let local = alias.asname.as_ref().map_or(module, |a| a.as_str());
                    if module == "itertools" {
                        self.itertools.insert(local.to_owned());
                    } else if PURE_MODULES.contains(&module) {
                        self.pure_modules.insert(local.to_owned());
                    }
                }
            }
            Stmt::ImportFrom(from) if from.module.as_deref() == Some("itertools") => {
                for alias in &from.names {
                    let name = alias.name.to_string();
                    let local = alias
                        .asname
                        .as_ref()
                        .map_or(name.clone(), |a| a.to_string());
                    self.from_itertools.insert(local, name);
                }
            }
            Stmt::Assign(assign) if producer(&assign.value).is_some() => {
                for target in &assign.targets {
                    if let Expr::Name(name) = target {
                        self.producers.insert(name.id.to_string());
                    }
                }
            }
            Stmt::Assign(assign) => {
                if let Expr::Call(call) = &*assign.value
                    && let Expr::Name(function) = &*call.func
                {
                    for target in &assign.targets {
                        if let Expr::Name(name) = target {
                            self.assigned_calls
                                .insert(name.id.to_string(), function.id.to_string());
                        }
                    }
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, _expr: &'a Expr) {}
}

impl Names {
    /// The functions (anywhere in the snippet) whose bodies call only pure
    /// things, counting each other: a few rounds until nothing changes.
    fn settle_pure_functions(&mut self, body: &[Stmt]) {
        let mut defs = Vec::new();
        collect_defs(body, &mut defs, 0);
        self.defined = defs.iter().map(|(name, _)| (*name).to_owned()).collect();
        self.returns_producer = defs
            .iter()
            .filter(|(_, body)| returns_a_producer(body, 0))
            .map(|(name, _)| (*name).to_owned())
            .collect();
        for _ in 0..4 {
            let before = self.pure_functions.len();
            for (name, body) in &defs {
                if !self.pure_functions.contains(*name) && body_is_pure(self, body) {
                    self.pure_functions.insert((*name).to_owned());
                }
            }
            if self.pure_functions.len() == before {
                break;
            }
        }
    }

    /// The itertools function a call's callee names, if it names one.
    fn itertools_function<'e>(&'e self, func: &'e Expr) -> Option<&'e str> {
        match func {
            Expr::Attribute(attr) => {
                matches!(&*attr.value, Expr::Name(n) if self.itertools.contains(n.id.as_str()))
                    .then(|| attr.attr.as_str())
            }
            Expr::Name(name) => self
                .from_itertools
                .get(name.id.as_str())
                .map(String::as_str),
            _ => None,
        }
    }

    /// Whether calling `func` has no effect beyond its value.
    fn pure_callee(&self, func: &Expr) -> bool {
        match func {
            Expr::Name(name) => {
                let name = name.id.as_str();
                PURE_BUILTINS.contains(&name)
                    || self.pure_functions.contains(name)
                    || self.from_itertools.contains_key(name)
            }
            Expr::Attribute(attr) if self.defined.contains(attr.attr.as_str()) => {
                self.pure_functions.contains(attr.attr.as_str())
            }
            Expr::Attribute(attr) => {
                PURE_METHODS.contains(&attr.attr.as_str())
                    || matches!(&*attr.value, Expr::Name(n)
                        if self.pure_modules.contains(n.id.as_str()) || self.itertools.contains(n.id.as_str()))
            }
            Expr::Lambda(lambda) => !has_effect(self, &lambda.body),
            _ => false,
        }
    }

    /// Whether `expr` is an iterator that never ends.
    fn infinite(&self, expr: &Expr) -> bool {
        let Expr::Call(call) = expr else {
            return false;
        };
        let args = call.arguments.args.len() + call.arguments.keywords.len();
        match self.itertools_function(&call.func) {
            Some("count" | "cycle") => true,
            Some("repeat") => args == 1,
            _ => matches!(&*call.func, Expr::Name(n) if n.id.as_str() == "iter") && args == 2,
        }
    }
}

/// Whether a function body returns a producer (not counting nested
/// functions' returns).
fn returns_a_producer(body: &[Stmt], depth: usize) -> bool {
    if depth > MAX_NESTING {
        return false;
    }
    body.iter().any(|stmt| match stmt {
        Stmt::Return(ret) => ret.value.as_deref().and_then(producer).is_some(),
        Stmt::If(if_) => {
            returns_a_producer(&if_.body, depth + 1)
                || if_
                    .elif_else_clauses
                    .iter()
                    .any(|c| returns_a_producer(&c.body, depth + 1))
        }
        Stmt::For(for_) => returns_a_producer(&for_.body, depth + 1),
        Stmt::While(while_) => returns_a_producer(&while_.body, depth + 1),
        Stmt::With(with) => returns_a_producer(&with.body, depth + 1),
        Stmt::Try(try_) => {
            returns_a_producer(&try_.body, depth + 1)
                || returns_a_producer(&try_.orelse, depth + 1)
                || returns_a_producer(&try_.finalbody, depth + 1)
        }
        _ => false,
    })
}

fn collect_defs<'a>(body: &'a [Stmt], defs: &mut Vec<(&'a str, &'a [Stmt])>, depth: usize) {
    if depth > MAX_NESTING {
        return;
    }
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(def) => {
                defs.push((def.name.as_str(), &def.body));
                collect_defs(&def.body, defs, depth + 1);
            }
            Stmt::ClassDef(class) => collect_defs(&class.body, defs, depth + 1),
            _ => {}
        }
    }
}

/// A function body that only computes: no call with an effect, no
/// `global`/`nonlocal`, no awaiting.
fn body_is_pure(names: &Names, body: &[Stmt]) -> bool {
    let mut effects = Effects {
        names,
        found: false,
        depth: 0,
    };
    effects.visit_body(body);
    !effects.found
}

/// Whether evaluating `expr` may have an effect beyond its value.
fn has_effect(names: &Names, expr: &Expr) -> bool {
    let mut effects = Effects {
        names,
        found: false,
        depth: 0,
    };
    effects.visit_expr(expr);
    effects.found
}

struct Effects<'n> {
    names: &'n Names,
    found: bool,
    depth: usize,
}

impl<'a> Visitor<'a> for Effects<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if self.found {
            return;
        }
        match stmt {
            Stmt::Global(_) | Stmt::Nonlocal(_) => self.found = true,
            // A nested function's body runs only when it is called.
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.found || self.depth > MAX_NESTING {
            self.found = true;
            return;
        }
        match expr {
            Expr::Call(call) if !self.names.pure_callee(&call.func) => self.found = true,
            Expr::Await(_) | Expr::Yield(_) | Expr::YieldFrom(_) => self.found = true,
            _ if self.names.infinite(expr) => self.found = true,
            _ => {}
        }
        self.depth += 1;
        visitor::walk_expr(self, expr);
        self.depth -= 1;
    }
}

/// The kind of eager producer `expr` is: a generator expression or a call
/// of one of the [`PRODUCERS`].
fn producer(expr: &Expr) -> Option<&'static str> {
    match expr {
        Expr::Generator(_) => Some("a generator expression"),
        Expr::Call(call) => match &*call.func {
            Expr::Name(name) => {
                PRODUCERS
                    .iter()
                    .find(|p| **p == name.id.as_str())
                    .map(|p| match *p {
                        "map" => "map()",
                        "filter" => "filter()",
                        "zip" => "zip()",
                        "enumerate" => "enumerate()",
                        _ => "reversed()",
                    })
            }
            _ => None,
        },
        _ => None,
    }
}

/// Whether computing the items of producer `expr` may have an effect (or
/// never ends), so when and how many are computed matters.
fn effectful(names: &Names, expr: &Expr) -> bool {
    match expr {
        Expr::Generator(generator) => {
            has_effect(names, &generator.elt)
                || generator.generators.iter().enumerate().any(|(i, comp)| {
                    // The first source is evaluated at once on both engines:
                    // only an iterator it yields lazily matters.
                    let source = if i == 0 {
                        is_lazy_source(names, &comp.iter)
                    } else {
                        has_effect(names, &comp.iter)
                    };
                    source || comp.ifs.iter().any(|c| has_effect(names, c))
                })
        }
        Expr::Call(call) => {
            let function_effect = matches!(producer(expr), Some("map()" | "filter()"))
                && call
                    .arguments
                    .args
                    .first()
                    .is_some_and(|f| !names.pure_callee(f) && !is_pure_value(f));
            function_effect
                || call
                    .arguments
                    .args
                    .iter()
                    .any(|arg| is_lazy_source(names, arg))
        }
        _ => false,
    }
}

/// A function passed by name that is a pure builtin, or `None` (`filter`'s
/// "keep what is true").
fn is_pure_value(expr: &Expr) -> bool {
    matches!(expr, Expr::NoneLiteral(_))
        || matches!(expr, Expr::Name(n) if PURE_BUILTINS.contains(&n.id.as_str()))
}

/// An iterable whose items come lazily in CPython and matter: an infinite
/// iterator or an effectful producer.
fn is_lazy_source(names: &Names, expr: &Expr) -> bool {
    names.infinite(expr) || (producer(expr).is_some() && effectful(names, expr))
}

mod equivalent;
mod finder;
use finder::Finder;

#[cfg(test)]
mod tests;
