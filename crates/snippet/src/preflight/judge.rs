//! Whether a call can work, judged against the catalog.

use std::collections::HashMap;

use ruff_python_ast::{Arguments, Expr};
use ruff_text_size::TextSize;
use serde_json::Value;

use super::Problem;
use super::scan::{Call, Scan};
use super::schema::Checker;
use super::shape::Shape;
use crate::cpython_tables::BUILTINS;
use codemcp_sdk::resources::FUNCTIONS as RESOURCE_FUNCTIONS;
use codemcp_sdk::{Param, RESERVED_NAMES, ResourceCall, Sdk, SdkFunction};

/// Distinct names compared with every tool's name by edit distance in one
/// check; past it a name counts as not close (which can only leave a typo
/// unreported), so thousands of names against thousands of tools stay cheap.
const MAX_DISTANCE_CHECKS: usize = 256;
/// A name this many edits from a tool's reads as a typo of it…
const TYPO_DISTANCE: usize = 2;
/// …when it is this long at least: short names are that close by chance.
const MIN_TYPO_LEN: usize = 6;
/// Tools an unknown name's message suggests.
const CLOSEST: usize = 3;

pub struct Judge<'a> {
    sdk: &'a Sdk,
    scan: &'a Scan<'a>,
    earlier: &'a [String],
    /// `<server>_`, the start of every tool function name of that server.
    prefixes: &'a [String],
    /// Whether a name reads like a tool's, per name asked.
    tool_like: HashMap<&'a str, bool>,
    distance_checks: usize,
}

impl<'a> Judge<'a> {
    pub fn new(sdk: &'a Sdk, scan: &'a Scan<'a>, earlier: &'a [String]) -> Self {
        Self {
            sdk,
            scan,
            earlier,
            prefixes: sdk.server_prefixes(),
            tool_like: HashMap::new(),
            distance_checks: 0,
        }
    }

    /// Adds the problems of `call` to `found`.
    pub fn call(&mut self, call: &Call<'a>, found: &mut Vec<(TextSize, Problem)>) {
        if self.scan.bound.contains(call.name) || self.earlier.iter().any(|n| n == call.name) {
            return;
        }
        match self.sdk.get(call.name) {
            Some(function) => {
                arguments(function, call.arguments, &mut |p| found.push((call.at, p)))
            }
            None if RESOURCE_FUNCTIONS.contains(&call.name) => {
                if let Some(problem) = resource_arguments(call.name, call.arguments) {
                    found.push((call.at, problem));
                }
            }
            None if self.unknown(call.name) => found.push((
                call.at,
                Problem::UnknownFunction {
                    name: call.name.to_owned(),
                    closest: Vec::new(),
                },
            )),
            None => {}
        }
    }

    /// Whether calling `name`, which no tool has and the snippet does not
    /// bind, is surely a mistake: it reads like a tool's name, so it is no
    /// helper of an earlier snippet either (as far as one can tell).
    fn unknown(&mut self, name: &'a str) -> bool {
        !self.scan.dynamic
            && !BUILTINS.contains(&name)
            && !RESERVED_NAMES.contains(&name)
            && self.sdk.connecting_for(name).is_none()
            && self.reads_like_tool(name)
    }

    /// A tool's name, one starting with a server's prefix, or a typo of a tool's.
    fn reads_like_tool(&mut self, name: &'a str) -> bool {
        if let Some(&known) = self.tool_like.get(name) {
            return known;
        }
        let verdict = self.sdk.get(name).is_some()
            || self.prefixes.iter().any(|p| name.starts_with(p.as_str()))
            || self.typo_of_a_tool(name);
        self.tool_like.insert(name, verdict);
        verdict
    }

    fn typo_of_a_tool(&mut self, name: &str) -> bool {
        if name.len() < MIN_TYPO_LEN || self.distance_checks >= MAX_DISTANCE_CHECKS {
            return false;
        }
        self.distance_checks += 1;
        self.sdk.functions().iter().any(|f| {
            f.py_name.len().abs_diff(name.len()) <= TYPO_DISTANCE
                && strsim::levenshtein(name, &f.py_name) <= TYPO_DISTANCE
        })
    }

    /// The names the snippet binds that read like tools' names, sorted.
    pub fn bound_tool_names(&mut self) -> Vec<String> {
        let scan = self.scan;
        let mut names: Vec<String> = scan
            .bound
            .iter()
            .filter(|name| self.reads_like_tool(name))
            .map(|name| (*name).to_owned())
            .collect();
        names.sort_unstable();
        names
    }

    /// Fills in the tools closest to an unknown name.
    pub fn suggest(&self, problem: &mut Problem) {
        if let Problem::UnknownFunction { name, closest } = problem {
            let mut ranked: Vec<(f64, &str)> = self
                .sdk
                .functions()
                .iter()
                .map(|f| (strsim::jaro_winkler(name, &f.py_name), f.py_name.as_str()))
                .collect();
            ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
            *closest = ranked
                .into_iter()
                .take(CLOSEST)
                .map(|(_, n)| n.to_owned())
                .collect();
        }
    }
}

/// The argument problems of a call of `function`: binding as at run time,
/// then literal types. With `*args` or `**kwargs` the call's shape is not
/// known, so nothing is said.
fn arguments(function: &SdkFunction, args: &Arguments, found: &mut dyn FnMut(Problem)) {
    let unpacked = args.args.iter().any(|a| matches!(a, Expr::Starred(_)))
        || args.keywords.iter().any(|k| k.arg.is_none());
    if unpacked {
        return;
    }
    let keywords: Vec<(&str, &Expr)> = args
        .keywords
        .iter()
        .filter_map(|k| Some((k.arg.as_ref()?.as_str(), &k.value)))
        .collect();
    // The runtime's own binding, with placeholders for the values: its
    // errors are the ones the call would raise.
    let bound = function.bind_args(
        vec![Value::Null; args.args.len()],
        keywords
            .iter()
            .map(|(k, _)| ((*k).to_owned(), Value::Null))
            .collect(),
    );
    if let Err(error) = bound {
        return found(error.into());
    }
    let by_position = function.params.iter().zip(args.args.iter());
    let by_keyword = keywords.iter().filter_map(|(keyword, value)| {
        let param = function.params.get(function.param_index(keyword)?)?;
        Some((param, *value))
    });
    for (param, value) in by_position.chain(by_keyword) {
        if let Some(problem) = literal_problem(function, param, value) {
            found(problem);
        }
    }
}

/// The problem of a call of a resource or prompt function, if it has one:
/// bound as at run time, each argument a placeholder of its literal's type
/// (a `str` when not a literal, which fits every parameter).
fn resource_arguments(name: &str, args: &Arguments) -> Option<Problem> {
    let unpacked = args.args.iter().any(|a| matches!(a, Expr::Starred(_)))
        || args.keywords.iter().any(|k| k.arg.is_none());
    if unpacked {
        return None;
    }
    let positional = args.args.iter().map(placeholder).collect();
    let keywords = args
        .keywords
        .iter()
        .filter_map(|k| Some((k.arg.as_ref()?.as_str().to_owned(), placeholder(&k.value))))
        .collect();
    ResourceCall::bind(name, positional, keywords)?
        .err()
        .map(Problem::from)
}

/// A value with the JSON type `expr` surely has, else a string.
fn placeholder(expr: &Expr) -> Value {
    match Shape::of(expr) {
        Shape::Null => Value::Null,
        Shape::Int(_) => Value::from(0),
        Shape::Float => Value::from(0.5),
        Shape::Bool(_) => Value::Bool(true),
        Shape::List { .. } => Value::Array(Vec::new()),
        Shape::Dict { .. } => Value::Object(serde_json::Map::new()),
        Shape::Str(_) | Shape::Unknown => Value::String(String::new()),
    }
}

/// The problem of a literal argument the parameter's schema rules out. An
/// optional parameter's `None` is never sent (see `bind_args`), so it fits.
fn literal_problem(function: &SdkFunction, param: &Param, value: &Expr) -> Option<Problem> {
    let shape = Shape::of(value);
    if matches!(shape, Shape::Unknown) || (!param.required && shape == Shape::Null) {
        return None;
    }
    let checker = Checker::new(&function.input_schema);
    let schema = checker.property(&param.wire_name)?;
    let fault = checker.fault(schema, &shape)?;
    Some(Problem::Schema {
        function: function.py_name.clone(),
        argument: param.py_name.clone(),
        fault,
    })
}
