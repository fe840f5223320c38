//! The few things codemcp asks of the operating system directly, through libc:
//! children that die with the gateway, the open-files limit, and whether the
//! reader of stdout is still there.

/// Children (upstream servers, CPython workers) die with the gateway even when
/// it is killed outright.
pub(crate) fn die_with_parent(cmd: &mut tokio::process::Command) {
    // SAFETY: prctl is async-signal-safe and touches only the child being set up.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// Every HTTP session, upstream, worker and control connection holds descriptors; the
/// common soft limit of 1,024 is far below the usual hard limit, and raising the soft
/// limit up to the hard one needs no privilege.
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

pub fn raise_open_file_limit() {
    const ENOUGH: libc::rlim_t = 1 << 20;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed to them.
    let raised = unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0
            && limit.rlim_cur < limit.rlim_max.min(ENOUGH)
            && {
                limit.rlim_cur = limit.rlim_max.min(ENOUGH);
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0
            }
    };
    if raised {
        tracing::debug!(
            open_files = limit.rlim_cur,
            "raised the open-files soft limit"
        );
    }
}

/// Whether the other end of stdout (a pipe or socket) has been closed.
pub(crate) fn stdout_reader_gone() -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: polls one valid pollfd we own, without waiting.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready > 0 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0
}
