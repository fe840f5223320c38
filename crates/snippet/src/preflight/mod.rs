//! The pre-flight check: before the first statement runs, every direct call
//! of a tool function is checked against the catalog, and all the calls
//! that cannot work are reported at once, each with its line.
//!
//! It never reports a call that could work: a call through a variable, in a
//! block that may catch its error, of a name the snippet (or, as far as this
//! gateway saw, an earlier snippet of the session) binds, or with `*args` /
//! `**kwargs` is left to run time. Code that does not parse, or nests too
//! deep, is not checked at all: the engine reports it.

mod judge;
mod memory;
mod scan;
mod schema;
mod shape;
mod values;

use std::sync::Arc;

use ruff_text_size::TextSize;

use crate::facts::Facts;
use crate::syntax::{MAX_NESTING, nests_deeper_than};
use codemcp_sdk::{BindError, ResourceArgError, Sdk};

pub use memory::EarlierNames;
pub use values::argument_problem;

/// Problems listed in one result; the rest are counted.
const MAX_LISTED: usize = 50;

/// A call that cannot work, found before running. Messages read like the
/// exception the call would raise.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    #[error("name '{name}' is not defined{}", closest_list(closest))]
    UnknownFunction { name: String, closest: Vec<String> },
    #[error(transparent)]
    Arguments(#[from] BindError),
    /// A call of `list_resources`, `read_resource`, `list_prompts` or `get_prompt`.
    #[error(transparent)]
    ResourceArguments(#[from] ResourceArgError),
    /// A literal argument the parameter's schema rules out.
    #[error("{function}() argument '{argument}'{fault}")]
    Schema {
        function: String,
        argument: String,
        fault: schema::Fault,
    },
}

fn closest_list(closest: &[String]) -> String {
    if closest.is_empty() {
        String::new()
    } else {
        format!("; closest tools: {}", closest.join(", "))
    }
}

impl Problem {
    /// The Python exception the call would raise.
    fn exc_type(&self) -> &'static str {
        match self {
            Problem::UnknownFunction { .. } => "NameError",
            Problem::Arguments(_) | Problem::ResourceArguments(_) | Problem::Schema { .. } => {
                "TypeError"
            }
        }
    }
}

/// A problem and the line of its call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct Finding {
    pub line: usize,
    pub problem: Problem,
}

/// What the check found in one snippet.
#[derive(Debug, Default)]
pub struct Checked {
    /// The first [`MAX_LISTED`] problems, in source order.
    pub findings: Vec<Finding>,
    /// How many problems there are in all.
    pub total: usize,
    /// Names the snippet binds that a later snippet could call as if they
    /// were tools (see [`EarlierNames`]).
    pub bound_tool_names: Vec<String>,
    /// What the router and the engines need to know of the snippet, read
    /// from the same parse (empty when it did not parse); none when the
    /// check could not run.
    pub facts: Option<Facts>,
}

/// Why a snippet is refused before it runs: what the caller's run error
/// carries (its kind is always "pre-flight"; the engine side converts it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The Python exception the first problem's call would raise.
    pub exc_type: &'static str,
    /// Every listed problem with its line.
    pub message: String,
    /// What the agent can do about it.
    pub hint: &'static str,
    /// The line of the first problem.
    pub line: usize,
}

impl Checked {
    /// Why a snippet with problems is refused; `None` when it may run.
    pub fn rejection(&self) -> Option<Rejection> {
        let first = self.findings.first()?;
        let mut lines: Vec<String> = self.findings.iter().map(ToString::to_string).collect();
        if self.total > self.findings.len() {
            lines.push(format!("… and {} more", self.total - self.findings.len()));
        }
        let message = match self.total {
            1 => format!("{} (found before running; nothing ran)", lines.join("")),
            n => format!(
                "{n} calls cannot work (found before running; nothing ran):\n{}",
                lines.join("\n")
            ),
        };
        Some(Rejection {
            exc_type: first.problem.exc_type(),
            message,
            hint: "fix these calls and send the whole snippet again; describe_tool('name') shows a \
                   tool's signature. A function an earlier snippet defined is not checked when \
                   called through a variable: f = name; f(...)",
            line: first.line,
        })
    }
}

/// [`check`] with a big stack: parsing, walking and dropping the
/// syntax tree recurse as deep as the code nests, which the agent controls.
/// Nothing is found if it could not run.
pub async fn check_safely(code: String, sdk: Arc<Sdk>, earlier: Vec<String>) -> Checked {
    codemcp_base::threads::on_big_stack_for(code.len(), move || check(&code, &sdk, &earlier))
        .await
        .unwrap_or_default()
}

/// Checks `code`'s calls of `sdk`'s functions; `earlier`: names earlier
/// snippets of the session bound that look like tools. Recurses as deep as
/// `code` nests: see [`check_safely`].
pub fn check(code: &str, sdk: &Sdk, earlier: &[String]) -> Checked {
    if nests_deeper_than(code, MAX_NESTING) {
        return Checked {
            facts: Some(Facts::default()),
            ..Checked::default()
        };
    }
    let Ok(parsed) = crate::facts::parse(code) else {
        return Checked {
            facts: Some(Facts::default()),
            ..Checked::default()
        };
    };
    let body = &parsed.syntax().body;
    let facts = Some(Facts::of_body(body, code));
    let scan = scan::Scan::of(body);
    if scan.too_deep {
        return Checked {
            facts,
            ..Checked::default()
        };
    }
    let mut judge = judge::Judge::new(sdk, &scan, earlier);
    let mut found: Vec<(TextSize, Problem)> = Vec::new();
    for call in &scan.calls {
        // A problem whose exception a handler around the call catches is
        // the code's to handle: at run time the call raises it (before
        // reaching the server, see `argument_problem`).
        let mut problems = Vec::new();
        judge.call(call, &mut problems);
        found.extend(
            problems
                .into_iter()
                .filter(|(_, p)| !call.caught.catches(p.exc_type(), &scan.bound)),
        );
    }
    let bound_tool_names = judge.bound_tool_names();
    let total = found.len();
    found.sort_by_key(|(at, _)| *at);
    found.truncate(MAX_LISTED);
    for (_, problem) in &mut found {
        judge.suggest(problem);
    }
    Checked {
        findings: with_lines(code, found),
        total,
        bound_tool_names,
        facts,
    }
}

/// Each problem with its 1-based line; `found` is in source order, so one
/// pass over the text finds every line.
fn with_lines(code: &str, found: Vec<(TextSize, Problem)>) -> Vec<Finding> {
    let (mut line, mut counted) = (1, 0usize);
    found
        .into_iter()
        .map(|(at, problem)| {
            let at = usize::from(at).min(code.len());
            line += code
                .as_bytes()
                .get(counted..at)
                .map_or(0, |text| text.iter().filter(|b| **b == b'\n').count());
            counted = at.max(counted);
            Finding { line, problem }
        })
        .collect()
}

#[cfg(test)]
mod tests;
