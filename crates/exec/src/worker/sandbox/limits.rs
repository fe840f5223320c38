//! What bounds a sandboxed worker. bwrap sets no limit itself, so:
//!
//! - resource limits, set between fork and exec of bwrap (they pass on to
//!   the worker and every process it starts, and nobody in the sandbox can
//!   raise them: that needs CAP_SYS_RESOURCE in the host's user namespace):
//!   address space (memory), CPU seconds, file size, open files, no core
//!   dumps;
//! - processes: RLIMIT_NPROC counts per user *and user namespace* since
//!   Linux 5.14, so set inside the sandbox's own user namespace it bounds that
//!   sandbox alone. Set on bwrap from outside it would count every process
//!   of the gateway's user (a desktop user has hundreds). So the worker sets
//!   it on itself first thing, before it connects and before any snippet
//!   (`CODEMCP_WORKER_NPROC`, see worker/PROTOCOL.md);
//! - a cgroup, where one can be made (cgroup v1 as root, or a cgroup v2
//!   subtree delegated to us with the memory and pids controllers): resident
//!   memory including the sandbox's tmpfs pages, swap, tasks and a CPU
//!   share, as Docker sets them. Without one, the limits above still hold.
//!
//! The sandbox's `/tmp` and `/dev/shm` are tmpfs with a size (`--size`), so
//! what a snippet writes there is bounded too.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The bounds of one sandboxed worker.
#[derive(Debug, Clone)]
pub struct Bounds {
    pub memory_bytes: u64,
    pub pids: u32,
    /// A CPU share in billionths of a CPU (Docker's `NanoCpus`).
    pub nano_cpus: u64,
    /// CPU time over a worker's whole life, per process (SIGXCPU, then SIGKILL).
    pub cpu_seconds: u64,
    /// The largest file a worker may write.
    pub file_bytes: u64,
    pub open_files: u64,
    /// The size of `/tmp`, and of `/dev/shm`.
    pub tmp_bytes: u64,
}

/// `(resource, limit)` pairs for `setrlimit`, soft and hard alike. With a
/// cgroup, its memory limit binds (an OOM kill of the worker, as in Docker)
/// and the address space is only a loose backstop: an address-space limit
/// can strike the worker's own loop with a MemoryError, not just the snippet.
pub(super) fn rlimits(bounds: &Bounds, cgroup: bool) -> Vec<(libc::__rlimit_resource_t, u64)> {
    let address_space = if cgroup {
        bounds.memory_bytes.saturating_mul(4).max(4 << 30)
    } else {
        bounds.memory_bytes
    };
    vec![
        (libc::RLIMIT_AS, address_space),
        (libc::RLIMIT_CPU, bounds.cpu_seconds),
        (libc::RLIMIT_FSIZE, bounds.file_bytes),
        (libc::RLIMIT_NOFILE, bounds.open_files),
        (libc::RLIMIT_CORE, 0),
    ]
}

/// Lowers every limit; runs in the forked child, so only async-signal-safe
/// calls. A limit already lower is kept (raising is refused anyway).
pub(super) fn apply(limits: &[(libc::__rlimit_resource_t, u64)]) -> io::Result<()> {
    for &(resource, wanted) in limits {
        let mut current = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit only read and write the struct given.
        unsafe {
            if libc::getrlimit(resource, &mut current) != 0 {
                return Err(io::Error::last_os_error());
            }
            let value = wanted.min(current.rlim_max);
            let lowered = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            if libc::setrlimit(resource, &lowered) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Where this gateway makes its workers' cgroups, when it can.
#[derive(Debug, Clone)]
pub enum CgroupRoot {
    /// cgroup v1: one directory per controller (memory, pids, cpu).
    V1 {
        memory: PathBuf,
        pids: PathBuf,
        cpu: Option<PathBuf>,
    },
    /// cgroup v2: one directory whose subtree has memory and pids.
    V2(PathBuf),
}

impl CgroupRoot {
    /// The place, or why there is none (for `check` and the log).
    pub fn find() -> Result<Self, String> {
        let fs = Path::new("/sys/fs/cgroup");
        if fs.join("cgroup.controllers").exists() {
            return v2_root(fs);
        }
        let memory = fs.join("memory");
        let pids = fs.join("pids");
        if !memory.join("cgroup.procs").exists() || !pids.join("cgroup.procs").exists() {
            return Err("no cgroup memory and pids controllers are mounted".into());
        }
        let parent = |c: &Path| c.join("codemcp");
        for dir in [parent(&memory), parent(&pids)] {
            match std::fs::create_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(format!("cgroup v1: cannot make {}: {e}", dir.display())),
            }
        }
        let cpu = fs.join("cpu");
        let cpu = (cpu.join("cpu.cfs_quota_us").exists()
            && std::fs::create_dir_all(parent(&cpu)).is_ok())
        .then(|| parent(&cpu));
        Ok(Self::V1 {
            memory: parent(&memory),
            pids: parent(&pids),
            cpu,
        })
    }

    pub fn describe(&self) -> String {
        match self {
            Self::V1 { memory, .. } => format!("cgroup v1 under {}", memory.display()),
            Self::V2(dir) => format!("cgroup v2 under {}", dir.display()),
        }
    }
}

/// The gateway's own cgroup v2 directory, when its subtree already has the
/// memory and pids controllers (delegated to us, e.g. a systemd unit with
/// `Delegate=yes`); enabling them ourselves would move the gateway around.
fn v2_root(fs: &Path) -> Result<CgroupRoot, String> {
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("/proc/self/cgroup: {e}"))?;
    let relative = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("no cgroup v2 entry in /proc/self/cgroup")?;
    let dir = fs.join(relative.trim_start_matches('/'));
    let control = std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
    let has = |c: &str| control.split_whitespace().any(|x| x == c);
    if !(has("memory") && has("pids")) {
        return Err(format!(
            "cgroup v2: the memory and pids controllers are not delegated to {}",
            dir.display()
        ));
    }
    let probe = dir.join(format!("codemcp-probe-{}", std::process::id()));
    std::fs::create_dir(&probe)
        .and_then(|()| std::fs::remove_dir(&probe))
        .map_err(|e| format!("cgroup v2: cannot make groups under {}: {e}", dir.display()))?;
    Ok(CgroupRoot::V2(dir))
}

/// One worker's cgroup. The child joins it between fork and exec by
/// writing "0" (itself) to descriptors opened here; dropping it removes the
/// directories once the worker's processes are gone.
pub struct Cgroup {
    dirs: Vec<PathBuf>,
    procs: Vec<std::fs::File>,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

impl Cgroup {
    pub fn new(root: &CgroupRoot, bounds: &Bounds) -> io::Result<Self> {
        let name = format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut group = Self {
            dirs: Vec::new(),
            procs: Vec::new(),
        };
        let memory = bounds.memory_bytes.to_string();
        let quota = (bounds.nano_cpus > 0).then(|| (bounds.nano_cpus / 10_000).max(1000));
        match root {
            CgroupRoot::V1 {
                memory: m,
                pids,
                cpu,
            } => {
                let dir = group.make(m, &name)?;
                write(&dir, "memory.limit_in_bytes", &memory)?;
                // Swap included, where the kernel accounts it.
                let _ = write(&dir, "memory.memsw.limit_in_bytes", &memory);
                let dir = group.make(pids, &name)?;
                write(&dir, "pids.max", &bounds.pids.to_string())?;
                if let (Some(cpu), Some(quota)) = (cpu, quota) {
                    let dir = group.make(cpu, &name)?;
                    write(&dir, "cpu.cfs_period_us", "100000")?;
                    write(&dir, "cpu.cfs_quota_us", &quota.to_string())?;
                }
            }
            CgroupRoot::V2(parent) => {
                let dir = group.make(parent, &name)?;
                write(&dir, "memory.max", &memory)?;
                let _ = write(&dir, "memory.swap.max", "0");
                write(&dir, "pids.max", &bounds.pids.to_string())?;
                if let Some(quota) = quota {
                    let _ = write(&dir, "cpu.max", &format!("{quota} 100000"));
                }
            }
        }
        Ok(group)
    }

    fn make(&mut self, parent: &Path, name: &str) -> io::Result<PathBuf> {
        let dir = parent.join(name);
        std::fs::create_dir(&dir)?;
        self.dirs.push(dir.clone());
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))?;
        self.procs.push(procs);
        Ok(dir)
    }

    /// The descriptors the child writes itself into.
    pub(super) fn procs_fds(&self) -> Vec<i32> {
        use std::os::fd::AsRawFd;
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }
}

/// Joins the groups; runs in the forked child (write is async-signal-safe).
pub(super) fn join(fds: &[i32]) -> io::Result<()> {
    for &fd in fds {
        // SAFETY: writes one byte from a static buffer to an open descriptor.
        if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn write(dir: &Path, file: &str, value: &str) -> io::Result<()> {
    std::fs::write(dir.join(file), value)
        .map_err(|e| io::Error::new(e.kind(), format!("{}/{file}: {e}", dir.display())))
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        self.procs.clear();
        let dirs = std::mem::take(&mut self.dirs);
        // The worker dies a moment after its bwrap is killed: a group can
        // only go once it is empty.
        std::thread::spawn(move || {
            for _ in 0..50 {
                let left: Vec<_> = dirs.iter().filter(|d| d.exists()).collect();
                if left.is_empty() {
                    return;
                }
                for dir in left {
                    let _ = std::fs::remove_dir(dir);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            tracing::debug!(target: "codemcp::worker", "a sandbox cgroup was still busy after 5 s");
        });
    }
}

/// Removes the empty groups gateways that are gone left behind.
pub fn reap_stale(root: &CgroupRoot) {
    let parents: Vec<&PathBuf> = match root {
        CgroupRoot::V1 { memory, pids, cpu } => [Some(memory), Some(pids), cpu.as_ref()]
            .into_iter()
            .flatten()
            .collect(),
        CgroupRoot::V2(_) => return, // ours live under our own group
    };
    for parent in parents {
        let Ok(entries) = std::fs::read_dir(parent) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name.split('-').next().and_then(|p| p.parse::<u32>().ok());
            if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
}
