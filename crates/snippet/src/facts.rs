//! One analysis per run: what the router and the engines need to know about
//! a snippet, read from a single parse. The executor's pre-flight check makes
//! it from the tree it parsed anyway; a run that skipped the check reads it
//! on first need. Either way it travels with the run, so nothing parses the
//! snippet again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use ruff_python_ast::{ModModule, Stmt};
use ruff_python_parser::{ParseError, Parsed};

use crate::call_sites::{SnippetCalls, calls_of, may_use_async};
use crate::definitions::Definitions;
use crate::syntax::{MAX_NESTING, Outline, nests_deeper_than, outline_of};

/// Snippets parsed by this process so far (every parse in this crate): a
/// test counts them to hold "one parse per run".
static PARSES: AtomicU64 = AtomicU64::new(0);

/// How many snippets this process has parsed.
pub fn parses() -> u64 {
    PARSES.load(Ordering::Relaxed)
}

/// Parses `code` as a module, counted in [`parses`].
pub(crate) fn parse(code: &str) -> Result<Parsed<ModModule>, ParseError> {
    PARSES.fetch_add(1, Ordering::Relaxed);
    ruff_python_parser::parse_module(code)
}

/// The gateway function whose snippets get their [`Definitions`] read.
const SAVE_HELPER: &str = "save_helper";

/// What one snippet does, read from one parse.
#[derive(Debug, Default, Clone)]
pub struct Facts {
    /// Its imports, bindings and carriable definitions (the router's).
    pub outline: Outline,
    /// Which of its calls want a future (the engines').
    pub calls: Arc<SnippetCalls>,
    /// Its top level as `save_helper` reads it; only for a snippet that
    /// names `save_helper` (and only its own: none for joined facts).
    pub definitions: Option<Arc<Definitions>>,
}

impl Facts {
    /// The facts of `code` parsed as `body`.
    pub fn of_body(body: &[Stmt], code: &str) -> Self {
        let calls = if may_use_async(code) {
            calls_of(body)
        } else {
            SnippetCalls::default()
        };
        let definitions =
            (code.contains(SAVE_HELPER)).then(|| Arc::new(Definitions::of_body(body, code)));
        Self {
            outline: outline_of(body, code),
            calls: Arc::new(calls),
            definitions,
        }
    }

    /// The facts of `code`; empty when it does not parse or nests deeper
    /// than any engine runs. Recurses as deep as `code` nests (up to
    /// [`MAX_NESTING`]): see [`Facts::of_safely`].
    pub fn of(code: &str) -> Self {
        if nests_deeper_than(code, MAX_NESTING) {
            return Self::default();
        }
        let Ok(parsed) = parse(code) else {
            return Self::default();
        };
        Self::of_body(&parsed.syntax().body, code)
    }

    /// The facts of `first` then `then` as one code (`first` their text,
    /// `then` starting right after it): a snippet behind the definitions run
    /// before it (saved helpers), each read on its own, so the snippet is
    /// parsed once. `then_code` is `then`'s text, for the eager equivalent.
    pub fn joined(first_code: &str, first: &Facts, then_code: &str, then: &Facts) -> Self {
        let (a, b) = (&first.outline, &then.outline);
        let mut imports = a.imports.clone();
        imports.extend(b.imports.iter().filter(|m| !a.imports.contains(m)).cloned());
        // What Monty runs instead keeps both parts, each as it runs there.
        let eager_equivalent = match (&a.eager_equivalent, &b.eager_equivalent) {
            (None, None) => None,
            (x, y) => Some(format!(
                "{}{}",
                x.as_deref().unwrap_or(first_code),
                y.as_deref().unwrap_or(then_code)
            )),
        };
        let offset = u32::try_from(first_code.len()).unwrap_or(u32::MAX);
        Self {
            outline: Outline {
                imports,
                assigned: [a.assigned.as_slice(), &b.assigned].concat(),
                definitions: [a.definitions.as_slice(), &b.definitions].concat(),
                differs_on_monty: a.differs_on_monty.clone().or(b.differs_on_monty.clone()),
                needs_laziness: a.needs_laziness.clone().or(b.needs_laziness.clone()),
                eager_equivalent,
            },
            calls: Arc::new(SnippetCalls::joined(&first.calls, offset, &then.calls)),
            definitions: None,
        }
    }

    /// [`Facts::of`] with a big stack: the parser and the tree walks
    /// recurse as deep as the code nests, which the agent controls.
    pub async fn of_safely(code: &str) -> Self {
        let code = code.to_owned();
        codemcp_base::threads::on_big_stack_for(code.len(), move || Self::of(&code))
            .await
            .unwrap_or_default()
    }
}

/// A run's [`Facts`], read at most once: given by the pre-flight check, or
/// read on first need. Clones share them (a run handed from the router to an
/// engine keeps what either read).
#[derive(Debug, Clone, Default)]
pub struct Analysis(Arc<OnceLock<Arc<Facts>>>);

impl Analysis {
    /// An analysis already made (by the pre-flight check).
    pub fn known(facts: Facts) -> Self {
        Self(Arc::new(OnceLock::from(Arc::new(facts))))
    }

    /// The facts of `code` (the run's own code), read now if nobody has.
    pub async fn facts(&self, code: &str) -> Arc<Facts> {
        if let Some(facts) = self.0.get() {
            return facts.clone();
        }
        let read = Arc::new(Facts::of_safely(code).await);
        self.0.get_or_init(|| read).clone()
    }

    /// Which of `code`'s calls want a future: without `await` or `asyncio`
    /// none does, and nothing is parsed.
    pub async fn calls(&self, code: &str) -> Arc<SnippetCalls> {
        match self.0.get() {
            Some(facts) => facts.calls.clone(),
            None if !may_use_async(code) => Arc::default(),
            None => self.facts(code).await.calls.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_analysis_is_read_once_and_shared_by_its_clones() {
        let code = "import json\nasync def f():\n    return await g()";
        let analysis = Analysis::default();
        let carried = analysis.clone();
        let first = analysis.facts(code).await;
        let again = carried.facts(code).await;
        assert!(Arc::ptr_eq(&first, &again), "one read, shared");
        assert_eq!(first.outline.imports, ["json"]);
        assert!(Arc::ptr_eq(&first.calls, &carried.calls(code).await));
    }

    #[test]
    fn joined_facts_are_those_of_the_joined_code() {
        let first = "import json\nasync def h():\n    return await g()\n";
        let then = "import re\nx = 1\nawait asyncio.gather(h(), t())\n";
        let joined = Facts::joined(first, &Facts::of(first), then, &Facts::of(then));
        let whole = Facts::of(&format!("{first}{then}"));
        let code = format!("{first}{then}");
        assert_eq!(joined.outline.imports, whole.outline.imports);
        assert_eq!(joined.outline.assigned, whole.outline.assigned);
        assert_eq!(joined.outline.definitions, whole.outline.definitions);
        let sites = joined.calls.future_lines(&code);
        assert_eq!(sites, whole.calls.future_lines(&code));
        assert!(sites.len() >= 3, "{sites:?}");
    }

    #[test]
    fn the_eager_equivalent_of_joined_code_keeps_the_part_in_front() {
        let first = "def double(x):\n    return x * 2\n";
        let then = "xs = [1, 2]\nfirst = next(x for x in xs if x > 1)\n";
        let own = Facts::of(then).outline.eager_equivalent;
        let eager = own.expect("Monty runs next() of a generator expression eagerly");
        let joined = Facts::joined(first, &Facts::of(first), then, &Facts::of(then));
        assert_eq!(
            joined.outline.eager_equivalent,
            Some(format!("{first}{eager}"))
        );
    }

    #[tokio::test]
    async fn code_without_async_needs_no_parse_for_its_calls() {
        let analysis = Analysis::default();
        let calls = analysis.calls("x = f(1)").await;
        assert!(!calls.wants_future(4, 8));
        assert!(analysis.0.get().is_none(), "nothing was read");
    }
}
