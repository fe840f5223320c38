//! Threads with big stacks, for work whose nesting agent code controls: the
//! interpreter threads (kept for reuse: starting a thread with a big stack for
//! every run costs more than a small snippet; a run takes an idle thread or
//! starts one, with no cap, since a run blocks its thread while it waits for
//! tools and runs must not wait for each other; a thread idle for a minute
//! ends), and parsing or walking a snippet on a stack deep enough for it.

use parking_lot::Mutex;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::Duration;

/// Interpreter threads get a big stack: deep (but legal) recursion must end in
/// `RecursionError`, never in a native stack overflow.
pub const INTERPRETER_STACK: usize = 256 << 20;

pub static INTERPRETER_THREADS: ThreadCache = ThreadCache::new(INTERPRETER_STACK);

/// Agent code up to this size is parsed (and its tree walked) on the calling
/// thread: a hop to an interpreter thread and back costs 50-90 µs, more than
/// parsing a snippet this size. Bigger code hops, so a long parse never
/// holds up an async worker thread.
const PARSE_HERE_MAX: usize = 8 << 10;

/// The stack of the async runtime's threads: room to parse most snippets on
/// it as they are (see [`on_big_stack_for`]). Only the pages used are
/// committed.
pub const RUNTIME_STACK: usize = 64 << 20;

/// Stack a parse and walk of agent code needs per byte of it, at most: the
/// deepest syntax (`((((x))))`, `----x`) nests one level per byte or two,
/// and ruff's parser took up to 0.94 KiB per byte (release build); the
/// walks and the tree's drop nest as deep. Four times that, to be safe.
const STACK_PER_CODE_BYTE: usize = 4 << 10;
/// Stack the parse needs whatever the code, with the frames above it.
const STACK_BASE: usize = 256 << 10;

/// Runs `job`, work on agent code `code_len` bytes long whose nesting the
/// agent controls (parsing it, walking its syntax tree, dropping the tree),
/// where no code that long can overflow the stack: on the current stack
/// when what is left of it is enough (the common case, costing nothing),
/// else on a stack as big as an interpreter thread's. `None` if it panicked
/// or no thread could run it.
pub async fn on_big_stack_for<T: Send + 'static>(
    code_len: usize,
    job: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    if code_len <= PARSE_HERE_MAX {
        let needs = code_len
            .saturating_mul(STACK_PER_CODE_BYTE)
            .saturating_add(STACK_BASE);
        let job = || stacker::maybe_grow(needs, INTERPRETER_STACK, job);
        return catch_unwind(AssertUnwindSafe(job)).ok();
    }
    on_big_stack(job).await
}

/// Runs `job` on an interpreter thread: work on agent code whose nesting
/// the agent controls (parsing it, walking its syntax tree, dropping the
/// tree) needs the big stack too. `None` if no thread could run it or it
/// panicked.
pub async fn on_big_stack<T: Send + 'static>(
    job: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let task = Box::new(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(job)).ok());
    });
    INTERPRETER_THREADS.run(task).ok()?;
    rx.await.ok().flatten()
}

type Task = Box<dyn FnOnce() + Send>;

/// How long an idle thread waits for its next run before it ends.
const IDLE: Duration = Duration::from_secs(60);

thread_local! {
    /// Set by a task whose thread must not be reused (an abandoned run).
    static RETIRING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Ends the current cache thread once its task returns instead of reusing it.
pub fn retire_current_thread() {
    RETIRING.with(|r| r.set(true));
}

fn retiring() -> bool {
    RETIRING.with(std::cell::Cell::get)
}

pub struct ThreadCache {
    stack_size: usize,
    idle: Mutex<Vec<(u64, Sender<Task>)>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl ThreadCache {
    pub const fn new(stack_size: usize) -> Self {
        Self {
            stack_size,
            idle: Mutex::new(Vec::new()),
            next_id: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn idle(&self) -> parking_lot::MutexGuard<'_, Vec<(u64, Sender<Task>)>> {
        self.idle.lock()
    }

    /// Runs `task` on an idle thread, or on a new one.
    pub fn run(&'static self, task: Task) -> std::io::Result<()> {
        let task = match self.idle().pop() {
            Some((_, thread)) => match thread.send(task) {
                Ok(()) => return Ok(()),
                Err(returned) => returned.0,
            },
            None => task,
        };
        let (tx, rx) = channel();
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        std::thread::Builder::new()
            .name("monty-run".into())
            .stack_size(self.stack_size)
            .spawn(move || self.serve(id, tx, rx, task))
            .map(drop)
    }

    fn serve(&self, id: u64, tx: Sender<Task>, rx: Receiver<Task>, first: Task) {
        first();
        loop {
            if retiring() {
                return;
            }
            self.idle().push((id, tx.clone()));
            match rx.recv_timeout(IDLE) {
                Ok(task) => task(),
                Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {
                    let mut idle = self.idle();
                    if let Some(at) = idle.iter().position(|(i, _)| *i == id) {
                        idle.remove(at);
                        return;
                    }
                    // A run took this thread just now: its task is on the way.
                    drop(idle);
                    match rx.recv() {
                        Ok(task) => task(),
                        Err(_) => return,
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static CACHE: ThreadCache = ThreadCache::new(1 << 20);

    #[test]
    fn threads_are_reused_and_every_task_runs() {
        let (tx, rx) = channel();
        for i in 0..20 {
            let tx = tx.clone();
            CACHE
                .run(Box::new(move || {
                    let _ = tx.send((i, std::thread::current().id()));
                }))
                .expect("run");
            // Let the thread park itself as idle before the next task.
            std::thread::sleep(Duration::from_millis(2));
        }
        let got: Vec<_> = (0..20)
            .map(|_| rx.recv_timeout(Duration::from_secs(5)).expect("task ran"))
            .collect();
        let threads: std::collections::HashSet<_> = got.iter().map(|(_, t)| *t).collect();
        assert!(
            threads.len() < 20,
            "{} threads for 20 sequential tasks",
            threads.len()
        );
    }
}
