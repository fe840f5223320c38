//! Interpreter threads, kept for reuse: starting a thread with a big stack for
//! every run costs more than a small snippet. A run takes an idle thread or
//! starts one (there is no cap: a run blocks its thread while it waits for
//! tools, and runs must not wait for each other); a thread idle for a minute ends.

use parking_lot::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::Duration;

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
