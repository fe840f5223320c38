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

/// Allocations of 1 MiB and more get pages of their own (glibc `mmap`), given
/// back when freed. glibc's default threshold rises to the size of the
/// largest block freed (up to 32 MiB), after which transient multi-megabyte
/// buffers (an 8 MB tool argument and its JSON copies) come from the heap,
/// whose freed space stays resident: the gateway's RSS kept that peak.
pub fn return_big_blocks_when_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const THRESHOLD: libc::c_int = 1 << 20;
        // SAFETY: mallopt only sets an allocator parameter; called at start.
        if unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, THRESHOLD) } == 0 {
            tracing::debug!(target: "codemcp::process", "mallopt(M_MMAP_THRESHOLD) was refused");
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
