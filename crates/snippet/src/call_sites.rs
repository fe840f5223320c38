//! Which calls in async code want a future, decided per call site from the
//! syntax tree. A tool function is synchronous, as an ordinary function is in
//! CPython, except where the code hands its result to the event loop:
//! `await f()`, `asyncio.gather(f(), g())`, `asyncio.create_task(f())`, and a
//! name that holds such calls (`tasks = [f(c) for c in cs]`) and is later
//! awaited or gathered. Everything else (`f()["x"]` inside `async def`) gets
//! the value.
//!
//! Engines report a tool call with the source range of its call expression
//! (file name plus byte offsets), so the decision is a set lookup.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

use crate::syntax::{MAX_NESTING, nests_deeper_than};

/// A call expression's byte range in its snippet.
type Span = (u32, u32);

/// One snippet's call expressions, and those whose value goes to the event loop.
#[derive(Debug, Default)]
pub struct SnippetCalls {
    all: HashSet<Span>,
    future: HashSet<Span>,
}

impl SnippetCalls {
    pub fn is_call(&self, start: u32, end: u32) -> bool {
        self.all.contains(&(start, end))
    }

    pub fn wants_future(&self, start: u32, end: u32) -> bool {
        self.future.contains(&(start, end))
    }

    /// The calls of `first` followed by those of `then`, whose text starts
    /// `offset` bytes into the joined code: one snippet's calls behind the
    /// definitions run before it (saved helpers).
    pub fn joined(first: &SnippetCalls, offset: u32, then: &SnippetCalls) -> SnippetCalls {
        let shift = |&(start, end): &Span| (start + offset, end + offset);
        SnippetCalls {
            all: first
                .all
                .iter()
                .copied()
                .chain(then.all.iter().map(shift))
                .collect(),
            future: (first.future.iter().copied())
                .chain(then.future.iter().map(shift))
                .collect(),
        }
    }

    /// The future call sites as `(line, column)`: 1-based line, 0-based
    /// UTF-8 byte column, as CPython's `ast` and code positions count them.
    pub fn future_lines(&self, code: &str) -> Vec<(u32, u32)> {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(code.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let mut sites: Vec<(u32, u32)> = self
            .future
            .iter()
            .map(|&(start, _)| {
                let line = starts.partition_point(|&s| s <= start as usize);
                let column = start as usize - starts[line - 1];
                (line as u32, column as u32)
            })
            .collect();
        sites.sort_unstable();
        sites
    }
}

/// Whether `code` can hand a call to the event loop at all: without
/// `await` or `asyncio` no call site wants a future, and no parse is needed.
pub fn may_use_async(code: &str) -> bool {
    code.contains("await") || code.contains("asyncio")
}

/// The calls of a snippet parsed as `body`, for a caller that has the tree.
pub fn calls_of(body: &[Stmt]) -> SnippetCalls {
    let mut awaited = AwaitedNames::default();
    awaited.visit_body(body);
    let mut marker = FutureMarker {
        awaited: awaited.settle(),
        calls: SnippetCalls::default(),
        depth: 0,
    };
    marker.visit_body(body);
    marker.calls
}

/// Calls that consume awaitables, by the name or attribute called.
fn consumes_awaitables(func: &Expr) -> bool {
    const ANY_RECEIVER: [&str; 4] = [
        "gather",
        "create_task",
        "ensure_future",
        "run_until_complete",
    ];
    const ASYNCIO_ONLY: [&str; 5] = ["wait_for", "shield", "wait", "as_completed", "run"];
    match func {
        Expr::Name(name) => ANY_RECEIVER.contains(&name.id.as_str()),
        Expr::Attribute(attr) => {
            let called = attr.attr.as_str();
            ANY_RECEIVER.contains(&called)
                || (ASYNCIO_ONLY.contains(&called)
                    && matches!(&*attr.value, Expr::Name(n) if n.id.as_str() == "asyncio"))
        }
        _ => false,
    }
}

/// The variable an expression reads as a whole: `t`, `tasks[i]`,
/// `tasks.values()`.
fn held_name(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(name) => Some(name.id.as_str()),
        Expr::Subscript(sub) => held_name(&sub.value),
        Expr::Starred(starred) => held_name(&starred.value),
        Expr::Call(call) if call.arguments.args.is_empty() => match &*call.func {
            Expr::Attribute(attr) if matches!(attr.attr.as_str(), "values" | "items") => {
                held_name(&attr.value)
            }
            _ => None,
        },
        _ => None,
    }
}

/// Names whose values are awaited or given to a consumer of awaitables,
/// directly or as the iterable of a loop whose variable is.
#[derive(Default)]
struct AwaitedNames {
    names: HashSet<String>,
    /// `for target in iter`: if `target` is awaited, so is what `iter` holds.
    loops: Vec<(String, String)>,
    depth: usize,
}

impl AwaitedNames {
    fn add(&mut self, expr: &Expr) {
        if let Some(name) = held_name(expr) {
            self.names.insert(name.to_owned());
        }
    }

    fn link(&mut self, target: &Expr, iter: &Expr) {
        if let (Expr::Name(t), Some(i)) = (target, held_name(iter)) {
            self.loops.push((t.id.to_string(), i.to_owned()));
        }
    }

    fn settle(mut self) -> HashSet<String> {
        let mut changed = true;
        while changed {
            changed = false;
            for (target, iter) in &self.loops {
                if self.names.contains(target) && self.names.insert(iter.clone()) {
                    changed = true;
                }
            }
        }
        self.names
    }
}

impl<'a> Visitor<'a> for AwaitedNames {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::For(for_) = stmt {
            self.link(&for_.target, &for_.iter);
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.depth > MAX_NESTING {
            return;
        }
        match expr {
            Expr::Await(await_) => self.add(&await_.value),
            Expr::Call(call) if consumes_awaitables(&call.func) => {
                call.arguments.args.iter().for_each(|arg| self.add(arg));
            }
            _ => {}
        }
        self.depth += 1;
        visitor::walk_expr(self, expr);
        self.depth -= 1;
    }

    fn visit_comprehension(&mut self, comprehension: &'a ruff_python_ast::Comprehension) {
        self.link(&comprehension.target, &comprehension.iter);
        visitor::walk_comprehension(self, comprehension);
    }
}

/// Marks the calls whose value reaches `await`, a consumer of awaitables or
/// an awaited name.
struct FutureMarker {
    awaited: HashSet<String>,
    calls: SnippetCalls,
    depth: usize,
}

impl FutureMarker {
    /// Marks the calls `expr` yields as its value: the call itself, or the
    /// elements of a collection or comprehension built of calls.
    fn mark(&mut self, expr: &Expr) {
        match expr {
            // A consumer's own call (`await asyncio.gather(...)`) is no tool.
            Expr::Call(call) if !consumes_awaitables(&call.func) => {
                self.calls.future.insert(span(call.range()));
            }
            Expr::List(list) => list.elts.iter().for_each(|e| self.mark(e)),
            Expr::Tuple(tuple) => tuple.elts.iter().for_each(|e| self.mark(e)),
            Expr::Set(set) => set.elts.iter().for_each(|e| self.mark(e)),
            Expr::Starred(starred) => self.mark(&starred.value),
            Expr::ListComp(comp) => self.mark(&comp.elt),
            Expr::SetComp(comp) => self.mark(&comp.elt),
            Expr::Generator(comp) => self.mark(&comp.elt),
            Expr::DictComp(comp) => self.mark(&comp.value),
            Expr::Dict(dict) => dict.items.iter().for_each(|item| self.mark(&item.value)),
            Expr::If(if_) => {
                self.mark(&if_.body);
                self.mark(&if_.orelse);
            }
            _ => {}
        }
    }

    fn holds_awaited(&self, target: &Expr) -> bool {
        held_name(target).is_some_and(|name| self.awaited.contains(name))
    }

    /// `tasks.append(f(x))` and the like, on an awaited name.
    fn stores_into_awaited(&self, func: &Expr) -> bool {
        matches!(func, Expr::Attribute(attr)
            if matches!(attr.attr.as_str(), "append" | "add" | "extend" | "insert" | "setdefault")
                && self.holds_awaited(&attr.value))
    }
}

impl<'a> Visitor<'a> for FutureMarker {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Assign(assign) if assign.targets.iter().any(|t| self.holds_awaited(t)) => {
                self.mark(&assign.value);
            }
            Stmt::AnnAssign(assign) if self.holds_awaited(&assign.target) => {
                if let Some(value) = &assign.value {
                    self.mark(value);
                }
            }
            Stmt::AugAssign(assign) if self.holds_awaited(&assign.target) => {
                self.mark(&assign.value);
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.depth > MAX_NESTING {
            return;
        }
        match expr {
            Expr::Await(await_) => self.mark(&await_.value),
            Expr::Call(call) => {
                self.calls.all.insert(span(call.range()));
                if consumes_awaitables(&call.func) || self.stores_into_awaited(&call.func) {
                    call.arguments.args.iter().for_each(|arg| self.mark(arg));
                }
            }
            _ => {}
        }
        self.depth += 1;
        visitor::walk_expr(self, expr);
        self.depth -= 1;
    }
}

/// The file name Monty gives a REPL's `n`th snippet.
fn input_file(n: u64) -> String {
    format!("<python-input-{n}>")
}

fn input_number(file: &str) -> Option<u64> {
    file.strip_prefix("<python-input-")?
        .strip_suffix('>')?
        .parse()
        .ok()
}

fn span(range: TextRange) -> Span {
    (range.start().to_u32(), range.end().to_u32())
}

/// The snippets one session has run on this gateway, by the file name the
/// engine gives each (`<python-input-N>`), so a call inside a function an
/// earlier snippet defined is decided by that snippet's code.
#[derive(Debug, Default)]
pub struct SessionCalls {
    files: HashMap<String, Arc<SnippetCalls>>,
    order: VecDeque<String>,
    /// The number in the file name the engine gives the next snippet, when
    /// known (an engine that cannot tell it ahead: counted here).
    next_input: Option<u64>,
}

/// Snippets remembered per session; older ones fall back to the coarse rule.
const REMEMBERED_SNIPPETS: usize = 256;

impl SessionCalls {
    /// Forgets every snippet: the engine's state was replaced (restored,
    /// reset), and its file names will be given out again.
    pub fn clear(&mut self) {
        self.files.clear();
        self.order.clear();
        self.next_input = None;
    }

    /// Forgets every snippet, for an engine whose next snippet is
    /// `<python-input-{first}>` (a fresh one).
    pub fn restart_at(&mut self, first: u64) {
        self.clear();
        self.next_input = Some(first);
    }

    fn remember(&mut self, file: String, calls: Arc<SnippetCalls>) {
        if self.files.insert(file.clone(), calls).is_none() {
            self.order.push_back(file);
        }
        while self.order.len() > REMEMBERED_SNIPPETS {
            if let Some(old) = self.order.pop_front() {
                self.files.remove(&old);
            }
        }
    }
}

/// The decisions of one run: its own snippet's calls, and the session's.
pub struct RunCalls {
    session: Arc<Mutex<SessionCalls>>,
    current: Arc<SnippetCalls>,
    /// The snippet's file name, once known.
    current_file: Option<String>,
    /// The coarse rule, for calls in code this gateway did not analyse (a
    /// session restored from the store): every call in async code is a future.
    coarse_async: bool,
}

impl RunCalls {
    /// A run of `code`, analysed as `current`.
    pub fn new(session: Arc<Mutex<SessionCalls>>, code: &str, current: Arc<SnippetCalls>) -> Self {
        Self {
            session,
            current,
            current_file: None,
            coarse_async: may_use_async(code),
        }
    }

    /// For an engine that numbers its snippets but cannot tell the number
    /// ahead (a pool worker): the next number counted, if known. A snippet
    /// Monty refuses before numbering it (empty, too deeply nested) would
    /// put the count off by one, so those leave it unknown.
    pub fn runs_next(&mut self, code: &str) {
        let next = self.session.lock().next_input.take();
        if code.is_empty() || nests_deeper_than(code, MAX_NESTING) {
            return;
        }
        if let Some(n) = next {
            self.session.lock().next_input = Some(n + 1);
            self.runs_as(input_file(n));
        }
    }

    /// The file name the engine gives this run's snippet, when it can tell
    /// ahead (the in-process REPL can).
    pub fn runs_as(&mut self, file: String) {
        self.session
            .lock()
            .remember(file.clone(), self.current.clone());
        self.current_file = Some(file);
    }

    /// Whether the code can wait on several calls at once (then a run is
    /// not parked at a call: other calls may be in flight).
    pub fn may_overlap(&self) -> bool {
        self.coarse_async
    }

    /// Whether the call at `file`, `start..end` gets a future.
    pub fn wants_future(&mut self, file: &str, start: u32, end: u32) -> bool {
        if self.current_file.as_deref() == Some(file) {
            return self.current.wants_future(start, end);
        }
        if let Some(calls) = self.session.lock().files.get(file) {
            return calls.wants_future(start, end);
        }
        if self.current_file.is_none() && self.current.is_call(start, end) {
            // The first call seen at one of this snippet's call expressions
            // names its file (an engine that cannot tell it ahead).
            self.current_file = Some(file.to_owned());
            let mut session = self.session.lock();
            session.remember(file.to_owned(), self.current.clone());
            session.next_input = input_number(file).map(|n| n + 1);
            return self.current.wants_future(start, end);
        }
        self.coarse_async
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calls of `code` as a run reads them.
    fn snippet_calls(code: &str) -> SnippetCalls {
        let calls = crate::facts::Facts::of(code).calls;
        std::sync::Arc::try_unwrap(calls).unwrap_or_default()
    }

    /// The source text of each call of a plain name that wants a future.
    fn futures(code: &str) -> Vec<&str> {
        let calls = snippet_calls(code);
        let mut found: Vec<(u32, u32)> = calls.future.iter().copied().collect();
        found.sort_unstable();
        found
            .into_iter()
            .map(|(s, e)| &code[s as usize..e as usize])
            .filter(|call| !call.split('(').next().unwrap_or_default().contains('.'))
            .collect()
    }

    #[test]
    fn a_plain_call_in_async_code_gets_its_value() {
        let code = "import asyncio\nasync def get(city):\n    return city, weather(location=city)['t']\n\
                    await asyncio.gather(get('a'), get('b'))";
        assert_eq!(futures(code), ["get('a')", "get('b')"]);
    }

    #[test]
    fn awaited_gathered_and_scheduled_calls_get_futures() {
        let code = "import asyncio\nx = await f(1)\nys = await asyncio.gather(g(2), *[h(c) for c in cs])\n\
                    t = asyncio.create_task(k(3))\nplain = m(4)\nawait t";
        assert_eq!(futures(code), ["f(1)", "g(2)", "h(c)", "k(3)"]);
    }

    #[test]
    fn a_name_that_is_later_awaited_holds_futures() {
        let code = "import asyncio\ntasks = [f(c) for c in cities]\nmore = []\nfor c in cities:\n    more.append(g(c))\n\
                    single = h(1)\nby = {c: k(c) for c in cities}\ncities = list_cities()\n\
                    await asyncio.gather(*tasks, *more, *by.values())\nprint(await single)";
        assert_eq!(futures(code), ["f(c)", "g(c)", "h(1)", "k(c)"]);
    }

    #[test]
    fn a_loop_over_awaited_items_makes_its_iterable_awaited() {
        let code = "pending = [f(1), f(2)]\nfor p in pending:\n    print(await p)\nother = g(3)";
        assert_eq!(futures(code), ["f(1)", "f(2)"]);
    }

    #[test]
    fn code_without_async_is_not_parsed_and_has_no_futures() {
        let calls = snippet_calls("x = f(1)\nprint(x)");
        assert!(calls.all.is_empty() && calls.future.is_empty());
    }

    #[test]
    fn future_sites_are_reported_as_lines_and_byte_columns() {
        let code = "import asyncio\nx = 'é'; y = await f(1)";
        let calls = snippet_calls(code);
        assert_eq!(calls.future_lines(code), [(2, 20)]);
    }

    #[test]
    fn a_run_learns_its_file_from_its_first_call_and_falls_back_for_unknown_files() {
        let session = Arc::new(Mutex::new(SessionCalls::default()));
        let code = "import asyncio\nv = f(1)\nw = await g(2)";
        let mut run = RunCalls::new(session.clone(), code, snippet_calls(code).into());
        assert!(!run.wants_future("<python-input-3>", 19, 23));
        assert!(run.wants_future("<python-input-3>", 34, 38));
        // A file nobody analysed: the coarse rule (this snippet uses async).
        assert!(run.wants_future("<python-input-1>", 0, 4));
        let mut later = RunCalls::new(session, "print(1)", Arc::default());
        assert!(!later.wants_future("<python-input-3>", 19, 23));
        assert!(later.wants_future("<python-input-3>", 34, 38));
    }

    #[test]
    fn a_counted_engine_names_snippets_that_made_no_call() {
        let session = Arc::new(Mutex::new(SessionCalls::default()));
        session.lock().restart_at(1);
        let define =
            "async def plain():\n    return f(1)['x']\nasync def waits():\n    return await f(2)";
        let mut run = RunCalls::new(session.clone(), define, snippet_calls(define).into());
        run.runs_next(define);
        let code = "import asyncio\nawait asyncio.gather(plain(), waits())";
        let mut run = RunCalls::new(session.clone(), code, snippet_calls(code).into());
        run.runs_next(code);
        let at = |call: &str| define.find(call).expect("in the snippet") as u32;
        let (plain, waits) = (at("f(1)"), at("f(2)"));
        assert!(!run.wants_future("<python-input-1>", plain, plain + 4));
        assert!(run.wants_future("<python-input-1>", waits, waits + 4));
        assert_eq!(session.lock().next_input, Some(3));
        // An empty snippet is not numbered: the count is given up.
        RunCalls::new(session.clone(), "", Arc::default()).runs_next("");
        assert_eq!(session.lock().next_input, None);
    }

    #[test]
    fn hostile_nesting_and_long_chains_are_bounded() {
        let deep = format!("await f({}{})", "[".repeat(5000), "]".repeat(5000));
        assert!(snippet_calls(&deep).future.is_empty());
        let chain = format!("await f(1{})", "+1".repeat(50_000));
        let code = chain.clone();
        let calls = std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(move || snippet_calls(&code))
            .expect("thread")
            .join()
            .expect("no panic");
        assert_eq!(calls.future.len(), 1);
    }
}
