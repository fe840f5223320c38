//! What the executor and the engines know of saved helpers, which the
//! gateway keeps (its `helpers` module): the calls agent code makes of the
//! helper functions, and what the gateway assembles for each run (its
//! tools, the helpers' prelude) and hands to the executor as plain data.
//! Nothing here reaches up into the gateway.

use std::sync::{Arc, OnceLock};

use codemcp_snippet::Facts;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Execution, ToolHost};

/// The gateway functions for helpers: no helper may take one of their names.
pub const HELPER_FUNCTIONS: &[&str] = &["save_helper", "list_helpers", "delete_helper"];

/// A call of `save_helper`, `list_helpers` or `delete_helper` from agent
/// code, its arguments as JSON (a function argument as its name).
#[derive(Debug, Clone)]
pub struct HelperCall {
    pub function: String,
    pub args: Vec<Value>,
    pub kwargs: Map<String, Value>,
}

/// What the gateway assembled for one run, run or resumed alike: the
/// caller's tools (behind its policy, with its helpers), the definitions its
/// code needs first, and what the caller should know (its helpers could not
/// be read). Plain data: the executor never calls back into the gateway.
pub struct Assembly {
    pub tools: Arc<dyn ToolHost>,
    /// Defined before the snippet; `None` for a resumed run, whose prelude
    /// travels in its parked record.
    pub prelude: Option<Prelude>,
    pub warnings: Vec<String>,
    /// Filled by the executor with the analysis of the agent's own snippet
    /// (not the prelude), for `save_helper` to read instead of parsing again.
    pub snippet: SnippetFacts,
}

impl Assembly {
    /// The run's tools alone: no helpers, nothing to say.
    pub fn tools(tools: Arc<dyn ToolHost>) -> Self {
        Self {
            tools,
            prelude: None,
            warnings: Vec::new(),
            snippet: SnippetFacts::default(),
        }
    }
}

/// The agent's own snippet and its analysis, once the executor has it;
/// shared between the executor (who fills it) and the tools (who read it).
#[derive(Debug, Clone, Default)]
pub struct SnippetFacts(Arc<OnceLock<(Arc<str>, Arc<Facts>)>>);

impl SnippetFacts {
    /// Records `code`'s `facts` (the first record stays).
    pub fn fill(&self, code: &str, facts: Arc<Facts>) {
        let _ = self.0.set((Arc::from(code), facts));
    }

    /// The snippet and its facts, if the run got that far.
    pub fn get(&self) -> Option<(Arc<str>, Arc<Facts>)> {
        self.0.get().cloned()
    }
}

/// The definitions run before one snippet, in the same code: the engine
/// runs `prelude + snippet` (see `Run::prelude`), the analysis describes
/// exactly that, and the lines it reports are moved back to the snippet's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prelude {
    pub text: String,
    /// How many lines it adds before the snippet's first.
    pub lines: usize,
    /// The helpers it defines.
    pub names: Vec<String>,
}

impl Prelude {
    /// `execution`'s error as if the snippet had run alone: `line N` counts
    /// from the snippet's first line; a line inside a helper is named so.
    pub fn fix_lines(&self, execution: &mut Execution) {
        let Some(error) = execution.error.as_mut() else {
            return;
        };
        error.message = self.fix(&error.message);
        error.traceback = error.traceback.as_deref().map(|t| self.fix(t));
    }

    fn fix(&self, text: &str) -> String {
        const WORD: &str = "line ";
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(WORD) {
            let after = &rest[at + WORD.len()..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            let word_start = at == 0 || !rest[..at].ends_with(|c: char| c.is_alphanumeric());
            out.push_str(&rest[..at]);
            match after[..digits].parse::<usize>() {
                Ok(n) if word_start => {
                    if n > self.lines {
                        out.push_str(&format!("line {}", n - self.lines));
                    } else {
                        out.push_str(&format!("helper line {n}"));
                    }
                }
                _ => out.push_str(&rest[at..at + WORD.len() + digits]),
            }
            rest = &after[digits..];
        }
        out.push_str(rest);
        out
    }
}
