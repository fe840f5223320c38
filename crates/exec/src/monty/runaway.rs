//! Runs that overrun in-process. Monty cannot be interrupted inside one of its
//! builtins (a regex substitution, a big-integer power) and a thread cannot be
//! killed, so the gateway answers at the deadline without the thread and then
//! *freezes* it: a signal parks the thread for good at a point where it holds
//! no lock (never inside the system allocator), so it burns no more CPU. Its
//! memory stays held, which is why the engine stops taking in-process runs
//! after a few frozen threads (see `MontyEngine::retired`).
//!
//! The hand-over between the interpreter thread and its supervisor is one
//! atomic state, so a thread is only ever signalled while it is still inside
//! the run it was started for, never after it has moved on.

use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};
use std::time::Duration;

use super::memory;

const RUNNING: u8 = 0;
const DONE: u8 = 1;
/// The supervisor gave up on the run and is about to signal the thread.
const ABANDONING: u8 = 2;
/// The signal was sent; the thread may now leave the run.
const SIGNALLED: u8 = 3;

/// The signal that freezes an abandoned interpreter thread: a real-time signal
/// nothing else in the process uses.
fn freeze_signal() -> libc::c_int {
    libc::SIGRTMIN() + 4
}

/// Installs the freeze handler once per process.
pub fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // SAFETY: a zeroed sigaction is valid; the handler only touches
        // const-initialised thread-locals and async-signal-safe calls.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_freeze_signal as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(freeze_signal(), &action, std::ptr::null_mut()) != 0 {
                tracing::warn!(target: "codemcp::exec", "cannot install the runaway-freeze handler; overrunning runs will keep their thread busy");
            }
        }
    });
}

extern "C" fn on_freeze_signal(_: libc::c_int) {
    // Inside Monty but not inside the system allocator: nothing is locked, stop
    // here. Anywhere else (our driver, the allocator), stop at the next safe point.
    if memory::executing_monty_outside_allocator() {
        memory::freeze_current_thread();
    }
    memory::request_freeze();
}

/// One in-process run as its supervisor sees it.
pub struct RunWatch {
    state: AtomicU8,
    thread: AtomicU64,
    /// Bytes written off when the run was abandoned.
    written_off: AtomicUsize,
}

impl Default for RunWatch {
    fn default() -> Self {
        Self {
            state: AtomicU8::new(RUNNING),
            thread: AtomicU64::new(0),
            written_off: AtomicUsize::new(0),
        }
    }
}

impl RunWatch {
    /// Called by the interpreter thread before it runs the snippet: `false`
    /// when the run was given up before the thread got to it.
    pub fn begin(&self) -> bool {
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() };
        self.thread.store(me as u64, Ordering::SeqCst);
        self.state.load(Ordering::SeqCst) == RUNNING
    }

    /// Called by the interpreter thread after the run. `false` when the
    /// supervisor has abandoned it: the thread must then drop its results with
    /// the freeze signal blocked and end (see [`leave_abandoned_run`]).
    pub fn finish(&self) -> bool {
        self.state
            .compare_exchange(RUNNING, DONE, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Called by the supervisor at the deadline: `true` when the thread was
    /// still inside this run and has now been told to freeze; its slot's bytes
    /// are then written off (see [`memory::write_off`]).
    pub fn abandon(&self, slot: memory::SessionSlot) -> bool {
        if self
            .state
            .compare_exchange(RUNNING, ABANDONING, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return false;
        }
        self.written_off
            .store(memory::write_off(slot), Ordering::SeqCst);
        let thread = self.thread.load(Ordering::SeqCst);
        // 0: the thread has not begun, and will see the state and skip the run.
        if thread != 0 {
            // SAFETY: the thread cannot end before it sees SIGNALLED, so
            // `thread` still names it.
            unsafe {
                libc::pthread_kill(thread as libc::pthread_t, freeze_signal());
            }
        }
        self.state.store(SIGNALLED, Ordering::SeqCst);
        true
    }
}

/// The interpreter thread came back from a run its supervisor abandoned (it was
/// outside Monty when the signal came). Waits until the signal has been sent,
/// blocks it, and drops the run's leftovers, so the thread can end cleanly.
pub fn leave_abandoned_run<T>(watch: &RunWatch, slot: memory::SessionSlot, leftovers: T) {
    while watch.state.load(Ordering::SeqCst) != SIGNALLED {
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: plain signal-mask calls on the current thread.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, freeze_signal());
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    memory::cancel_freeze_request();
    drop(leftovers);
    let written_off = watch.written_off.load(Ordering::SeqCst);
    memory::take_back_write_off(written_off.saturating_sub(slot.live_bytes()));
}

/// How many frozen threads the in-process engine tolerates: each keeps the
/// memory it held, so after this many it stops taking runs.
pub const MAX_FROZEN_THREADS: u32 = 3;

/// Why a run was abandoned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overrun {
    /// Still inside one builtin at the deadline.
    Time,
    /// Frozen at the hard memory ceiling.
    Memory,
}

/// The frozen threads of one in-process engine, and whether it still takes runs.
#[derive(Default)]
pub struct Runaways {
    frozen: AtomicU32,
    frozen_bytes: AtomicUsize,
    retired: OnceLock<String>,
}

impl Runaways {
    /// Counts a frozen thread holding `bytes`; retires the engine when there are
    /// too many or they hold more than half the budget (a run frozen at the
    /// memory ceiling usually does).
    pub fn record(&self, overrun: Overrun, bytes: usize, budget: usize) {
        let frozen = self.frozen.fetch_add(1, Ordering::SeqCst) + 1;
        let held = self.frozen_bytes.fetch_add(bytes, Ordering::SeqCst) + bytes;
        tracing::warn!(target: "codemcp::exec", ?overrun, frozen, held_bytes = held,
            "an in-process run overran inside one Monty builtin; its thread was frozen (no CPU) and its memory stays held");
        let reason = if frozen >= MAX_FROZEN_THREADS {
            Some(format!(
                "{frozen} runs overran inside one builtin (the limit is {MAX_FROZEN_THREADS})"
            ))
        } else if held > budget / 2 {
            Some(format!(
                "frozen runs hold {} MiB that cannot be freed ({overrun:?} overrun; the budget is {} MiB)",
                held >> 20,
                budget >> 20
            ))
        } else {
            None
        };
        if let Some(reason) = reason
            && self.retired.set(reason.clone()).is_ok()
        {
            tracing::error!(target: "codemcp::exec", %reason,
                "the in-process Monty engine stops taking runs; restart the gateway, or use CODEMCP_MONTY=pool");
        }
    }

    /// Why the engine no longer takes runs, once it does not.
    pub fn retired(&self) -> Option<&str> {
        self.retired.get().map(String::as_str)
    }

    pub fn frozen_threads(&self) -> u32 {
        self.frozen.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_engine_retires_after_too_many_frozen_threads_or_bytes() {
        let runaways = Runaways::default();
        runaways.record(Overrun::Time, 1 << 20, 256 << 20);
        runaways.record(Overrun::Time, 1 << 20, 256 << 20);
        assert!(runaways.retired().is_none());
        runaways.record(Overrun::Time, 1 << 20, 256 << 20);
        assert!(runaways.retired().is_some_and(|r| r.contains("3 runs")));
        let runaways = Runaways::default();
        runaways.record(Overrun::Memory, 1 << 20, 256 << 20);
        assert!(runaways.retired().is_none(), "a small leak is tolerated");
        runaways.record(Overrun::Memory, 300 << 20, 256 << 20);
        assert!(
            runaways
                .retired()
                .is_some_and(|r| r.contains("cannot be freed"))
        );
    }

    #[test]
    fn a_run_given_up_before_its_thread_began_is_skipped() {
        let watch = RunWatch::default();
        assert!(watch.abandon(memory::SessionSlot::allocate()));
        assert!(!watch.begin());
        assert!(!watch.finish());
    }

    #[test]
    fn a_finished_run_cannot_be_abandoned() {
        let watch = RunWatch::default();
        assert!(watch.begin());
        assert!(watch.finish());
        assert!(!watch.abandon(memory::SessionSlot::allocate()));
    }

    #[test]
    fn an_abandoned_thread_outside_monty_leaves_cleanly() {
        install();
        let watch = Arc::new(RunWatch::default());
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let thread_watch = watch.clone();
        let thread = std::thread::spawn(move || {
            assert!(thread_watch.begin());
            let _ = started_tx.send(());
            let _ = go_rx.recv();
            let finished = thread_watch.finish();
            if !finished {
                leave_abandoned_run(
                    &thread_watch,
                    memory::SessionSlot::allocate(),
                    vec![1u8; 1024],
                );
            }
            finished
        });
        started_rx.recv().expect("thread started");
        assert!(watch.abandon(memory::SessionSlot::allocate()));
        let _ = go_tx.send(());
        assert!(!thread.join().expect("thread ends instead of freezing"));
    }
}
