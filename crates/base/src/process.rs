//! The few things codemcp asks of the operating system directly, through libc:
//! children that die with the gateway, the open-files limit, and whether the
//! reader of stdout is still there.

/// Children (upstream servers, CPython workers) die with the gateway even when
/// it is killed outright.
pub fn die_with_parent(cmd: &mut tokio::process::Command) {
    // SAFETY: prctl is async-signal-safe and touches only the child being set up.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// Blocks of this size and more get pages of their own (glibc `mmap`), given
/// back when freed. glibc's default threshold rises to the size of the
/// largest block freed (up to 32 MiB), after which transient multi-megabyte
/// buffers (an 8 MB tool argument and its JSON copies) come from the heap,
/// whose freed space stays resident: the gateway's RSS kept that peak.
const MMAP_THRESHOLD: usize = 1 << 20;

/// Sets the allocator up for a long-lived gateway: big blocks are given back
/// when freed (see [`MMAP_THRESHOLD`]), and a thread gives back what smaller
/// freed blocks leave behind (see [`note_freed`]).
pub fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only sets an allocator parameter; called at start.
        if unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) } == 0 {
            tracing::debug!(target: "codemcp::process", "mallopt(M_MMAP_THRESHOLD) was refused");
        }
        let trimmer = std::thread::Builder::new()
            .name("codemcp-trim".into())
            .stack_size(64 << 10)
            .spawn(trim_when_much_was_freed);
        if let Err(e) = trimmer {
            tracing::warn!(target: "codemcp::process", error = %e, "cannot start the thread that gives freed memory back");
        }
    }
}

/// Bytes freed in blocks below [`MMAP_THRESHOLD`] since the last trim, as
/// counted by [`note_freed`] (each thread adds its share once it passes
/// [`FREED_FLUSH`]).
static FREED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
const FREED_FLUSH: usize = 1 << 20;
/// Freed bytes worth a trim: a trim costs about a millisecond per 100 MiB of
/// heap, and the pages it gives back are faulted in again when reused, so
/// small frees are left to glibc.
const TRIM_AFTER: usize = 16 << 20;
/// How often the trimmer looks: a run's garbage is given back within this of
/// its end, and a run that churns memory is trimmed at most this often.
const TRIM_POLL: std::time::Duration = std::time::Duration::from_millis(200);

thread_local! {
    static FREED_HERE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Called by the global allocator for every block freed. glibc keeps freed
/// heap space resident: it only shrinks a heap from its top, and every
/// interpreter thread gets an arena (heaps) of its own, so after a run that
/// built and dropped a few hundred MiB of small objects the gateway's RSS
/// stayed there (135 MiB after the escape corpus's `memory_gradual_dict`,
/// issue 39). `malloc_trim(0)` gives the free pages of every arena back.
#[inline]
pub fn note_freed(bytes: usize) {
    if bytes >= MMAP_THRESHOLD {
        return; // its own pages, unmapped by free
    }
    // `try_with`: during thread teardown the counter may be gone; skip then.
    let _ = FREED_HERE.try_with(|here| {
        let total = here.get() + bytes;
        if total >= FREED_FLUSH {
            FREED.fetch_add(total, std::sync::atomic::Ordering::Relaxed);
            here.set(0);
        } else {
            here.set(total);
        }
    });
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_when_much_was_freed() {
    use std::sync::atomic::Ordering;
    loop {
        std::thread::sleep(TRIM_POLL);
        if FREED.load(Ordering::Relaxed) >= TRIM_AFTER {
            FREED.swap(0, Ordering::Relaxed);
            // SAFETY: malloc_trim takes each arena's lock itself; no preconditions.
            unsafe {
                libc::malloc_trim(0);
            }
        }
    }
}

/// Every HTTP session, upstream, worker and control connection holds descriptors; the
/// common soft limit of 1,024 is far below the usual hard limit, and raising the soft
/// limit up to the hard one needs no privilege.
/// Logged with the values, since the limit bounds how many HTTP connections
/// the gateway can hold (`CODEMCP_HTTP_MAX_CONNECTIONS` is capped at half of it).
pub fn raise_open_file_limit() {
    const ENOUGH: libc::rlim_t = 1 << 20;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct passed to it.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        tracing::warn!(target: "codemcp::process", "cannot read the open-files limit");
        return;
    }
    let before = limit.rlim_cur;
    let wanted = limit.rlim_max.min(ENOUGH);
    if before >= wanted {
        // Unchanged: nothing worth an info line on every command (even `--help`).
        tracing::debug!(target: "codemcp::process", soft = before, hard = limit.rlim_max, "open-files limit");
        return;
    }
    limit.rlim_cur = wanted;
    // SAFETY: setrlimit only reads the struct passed to it.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } == 0 {
        tracing::info!(target: "codemcp::process", from = before, to = wanted, hard = limit.rlim_max, "raised the open-files soft limit");
    } else {
        tracing::warn!(target: "codemcp::process", soft = before, hard = limit.rlim_max, "cannot raise the open-files soft limit");
    }
}

/// The open-files soft limit now, if it can be read.
pub fn open_file_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct passed to it.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0).then_some(limit.rlim_cur)
}

/// Whether the other end of stdout (a pipe or socket) has been closed.
pub fn stdout_reader_gone() -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: polls one valid pollfd we own, without waiting.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready > 0 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0
}
