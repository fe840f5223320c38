//! What the executor and the engines know of saved helpers, which the
//! gateway keeps (its `helpers` module): the calls agent code makes of the
//! helper functions, and the hook the executor asks before each run for the
//! caller's helpers. The gateway implements [`HelperHook`]; nothing here
//! reaches up into it.

use std::any::Any;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::store::Owner;
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

/// A run's tools with helpers, the definitions its code needs first, and
/// what the caller should know (its helpers could not be read).
pub struct Wrapped {
    pub tools: Arc<dyn ToolHost>,
    pub prelude: Option<Prelude>,
    pub warning: Option<String>,
}

/// The gateway's saved helpers, as the executor uses them: before each run,
/// the run's tools with the caller's helpers and the definitions its code
/// needs first. `Any`, so the gateway can get its own type back
/// (`Executor::helpers`).
pub trait HelperHook: Any + Send + Sync {
    /// Wraps `tools` for a run of `code` by `owner`.
    fn wrap(
        self: Arc<Self>,
        owner: Owner,
        code: &str,
        tools: Arc<dyn ToolHost>,
    ) -> BoxFuture<'_, Wrapped>;
}

/// The definitions put in front of one snippet.
#[derive(Debug, Clone)]
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
